//! Encoder options whose effect is more than "the PC list comes back": trace filters (trace
//! start/stop, Table 26), a bounded output queue (Error + SYNC=7, 7.4), several harts in one
//! stream (SRC, 11.2), timestamps (8.5) and Ownership (7.1).

use rvtrace_flow::LossReason;
use rvtrace_flow::{for_each_pc, FlowElement, SyncReason};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::codec::{Body, CodecConfig, Frame, Frames};

use crate::common::messages;
use messages::bodies;
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, Fifo, Mode, SyncUnit, TraceFilter};
use rvtrace_testkit::{assert_pcs_eq, ProgramRun};

fn run(name: &str) -> ProgramRun {
    rvtrace_testkit::run_test_program(name, 4)
}

fn decoder_config(cfg: &EncoderConfig) -> DecoderConfig {
    let mut d = DecoderConfig::new(IsaConfig::new(cfg.xlen));
    d.codec = cfg.codec;
    d.src = (cfg.codec.src_bits > 0).then_some(cfg.src_id);
    d.extend_addr_msb = cfg.extend_addr_msb;
    d.spec = cfg.spec;
    d
}

fn elements(image: &Image, cfg: DecoderConfig, bytes: &[u8]) -> Vec<FlowElement> {
    let mut v = Vec::new();
    decode(image, cfg, bytes, &mut v);
    v
}

fn pcs_of(image: &Image, elements: &[FlowElement]) -> Vec<u64> {
    let mut pcs = Vec::new();
    for e in elements {
        if let FlowElement::Range { start, count, .. } = e {
            for_each_pc(image, *start, *count, |pc| pcs.push(pc)).unwrap();
        }
    }
    pcs
}

/// Tracing only U and S mode of a program that switches privileges: ProgTraceCorrelation
/// EVCODE=4 when trace stops, ProgTraceSync SYNC=5 when it restarts, and the decoded PCs are
/// exactly the traced instructions.
#[test]
fn privilege_filter_starts_and_stops_trace() {
    for prog in ["sdeleg-rv64gc", "traps-rv32imac"] {
        let run = run(prog);
        let xlen = run.image.files()[0].xlen;
        let filter = TraceFilter {
            privileges: 0b011, // U, S
            range: None,
        };
        for mode in [Mode::Htm, Mode::Btm] {
            let cfg = EncoderConfig {
                mode,
                filter: Some(filter),
                ..EncoderConfig::new(xlen)
            };
            let (bytes, _) = encode(cfg, &run.records);
            let b = bodies(&bytes, &cfg.codec);
            // The program starts in M mode: trace starts disabled.
            assert!(matches!(
                b[0],
                Body::ProgTraceCorrelation {
                    evcode: 4,
                    icnt: 0,
                    ..
                }
            ));
            assert!(matches!(
                b[1],
                Body::ProgTraceSync {
                    sync: 5,
                    icnt: 0,
                    ..
                }
            ));
            assert!(b
                .iter()
                .any(|m| matches!(m, Body::ProgTraceCorrelation { evcode: 4, .. })));
            // It ends in M mode, with trace disabled: EVCODE=0, I-CNT=0.
            assert!(matches!(
                b.last(),
                Some(Body::ProgTraceCorrelation {
                    evcode: 0,
                    icnt: 0,
                    ..
                })
            ));
            let e = elements(&run.image, decoder_config(&cfg), &bytes);
            assert!(!e.iter().any(|x| matches!(x, FlowElement::Loss { .. })));
            let want: Vec<u64> = run
                .records
                .iter()
                .filter(|r| r.iretire > 0 && filter.passes(r.iaddr, r.priv_))
                .map(|r| r.iaddr)
                .collect();
            assert!(!want.is_empty() && want.len() < run.pcs.len());
            assert_pcs_eq(prog, "decoded", &pcs_of(&run.image, &e), "traced", &want);
        }
    }
}

/// An address-range filter around one function.
#[test]
fn address_filter() {
    let run = run("recurse-rv64gc");
    let sym = run.image.symbol_by_name("main").unwrap().clone();
    let filter = TraceFilter {
        privileges: 0xFF,
        range: Some((sym.addr, sym.addr + sym.size)),
    };
    let cfg = EncoderConfig {
        filter: Some(filter),
        ..EncoderConfig::new(run.image.files()[0].xlen)
    };
    let (bytes, _) = encode(cfg, &run.records);
    let e = elements(&run.image, decoder_config(&cfg), &bytes);
    let want: Vec<u64> = run
        .records
        .iter()
        .filter(|r| r.iretire > 0 && filter.passes(r.iaddr, r.priv_))
        .map(|r| r.iaddr)
        .collect();
    assert!(want.len() > 10);
    assert_pcs_eq(
        "main only",
        "decoded",
        &pcs_of(&run.image, &e),
        "traced",
        &want,
    );
    // Every restart is a synchronization the decoder starts from (reason Start, not Recovery).
    assert!(e
        .iter()
        .filter_map(|x| match x {
            FlowElement::Sync { reason, .. } => Some(*reason),
            _ => None,
        })
        .all(|r| r == SyncReason::Start));
}

/// A small output queue: messages are lost, an Error message is sent before a SYNC=7
/// synchronization, the decoder reports the loss and resumes; every decoded stretch of PCs is a
/// stretch of the real PC list, in order.
#[test]
fn fifo_overflow_error_and_restart() {
    let run = run("stdio-rv64gc");
    for mode in [Mode::Btm, Mode::Htm] {
        let cfg = EncoderConfig {
            mode,
            fifo: Some(Fifo {
                bytes: 48,
                drain_per_record_256: 32, // 1/8 byte per instruction
            }),
            timestamps: true,
            ..EncoderConfig::new(run.image.files()[0].xlen)
        };
        let (bytes, st) = encode(cfg, &run.records);
        assert!(st.lost_messages > 0);
        let b = bodies(&bytes, &cfg.codec);
        let errors = b
            .iter()
            .filter(|m| matches!(m, Body::Error { etype: 0, .. }))
            .count();
        assert!(errors > 0);
        // Each Error is followed by ProgTraceSync SYNC=7 (or is the last message).
        for (k, m) in b.iter().enumerate() {
            if let Body::Error { ecode, .. } = m {
                assert_ne!(ecode & 4, 0, "program trace lost");
                match b.get(k + 1) {
                    None => {}
                    Some(Body::ProgTraceSync {
                        sync: 7, icnt: 0, ..
                    }) => {}
                    Some(x) => panic!("after Error: {x:?}"),
                }
            }
        }
        let e = elements(&run.image, decoder_config(&cfg), &bytes);
        let losses = e
            .iter()
            .filter(|x| matches!(x, FlowElement::Loss { .. }))
            .count();
        assert_eq!(losses, errors);
        // The encoder said it lost them: overflows, not damage.
        assert!(e.iter().all(|x| match x {
            FlowElement::Loss { reason, .. } => matches!(reason, LossReason::Overflow(_)),
            _ => true,
        }));
        // Stretches between losses are contiguous pieces of the real PC list, in order.
        let mut pos = 0usize;
        let mut stretch: Vec<u64> = Vec::new();
        let check = |stretch: &mut Vec<u64>, pos: &mut usize| {
            if stretch.is_empty() {
                return;
            }
            let at = (*pos..run.pcs.len())
                .find(|&i| run.pcs[i..].starts_with(stretch))
                .unwrap_or_else(|| panic!("stretch at {:#x} not found", stretch[0]));
            *pos = at + stretch.len();
            stretch.clear();
        };
        for x in &e {
            match x {
                FlowElement::Range { start, count, .. } => {
                    for_each_pc(&run.image, *start, *count, |pc| stretch.push(pc)).unwrap()
                }
                FlowElement::Loss { .. } => check(&mut stretch, &mut pos),
                _ => {}
            }
        }
        check(&mut stretch, &mut pos);
    }
}

/// Two harts' traces in one stream, told apart by a 3-bit SRC: each decodes to its own PC list.
#[test]
fn two_harts_one_stream() {
    let a = run("recurse-rv64gc");
    let b = run("loops-rv32imac");
    let cfg_a = EncoderConfig {
        codec: CodecConfig::new(3),
        src_id: 2,
        timestamps: true,
        ..EncoderConfig::new(a.image.files()[0].xlen)
    };
    let cfg_b = EncoderConfig {
        src_id: 5,
        mode: Mode::Btm,
        ..EncoderConfig {
            xlen: b.image.files()[0].xlen,
            ..cfg_a
        }
    };
    let (bytes_a, _) = encode(cfg_a, &a.records);
    let (bytes_b, _) = encode(cfg_b, &b.records);
    // Interleave message by message, with idle bytes between some of them.
    let split = |bytes: &[u8]| -> Vec<Vec<u8>> {
        Frames::new(bytes)
            .map(|f| match f {
                Frame::Message(raw) => {
                    bytes[raw.offset as usize..(raw.offset + raw.len) as usize].to_vec()
                }
                Frame::Error(e) => panic!("{e}"),
            })
            .collect()
    };
    let (ma, mb) = (split(&bytes_a), split(&bytes_b));
    let mut stream = Vec::new();
    for k in 0..ma.len().max(mb.len()) {
        if let Some(m) = ma.get(k) {
            stream.extend_from_slice(m);
        }
        if k % 3 == 0 {
            stream.extend_from_slice(&[0xFF; 3]);
        }
        if let Some(m) = mb.get(k) {
            stream.extend_from_slice(m);
        }
    }
    // The scan finds both harts, read whole or in pieces of a few bytes (messages cut across
    // reads); no SRC field, no hart.
    let sources = |r| rvtrace_ntrace::scan::sources(r, 3).unwrap();
    assert_eq!(sources(&stream[..]), [2, 5]);
    let pieces = rvtrace_testkit::ChunkedReader {
        data: &stream,
        seed: 11,
        max: 9,
    };
    assert_eq!(rvtrace_ntrace::scan::sources(pieces, 3).unwrap(), [2, 5]);
    assert!(rvtrace_ntrace::scan::sources(&stream[..], 0)
        .unwrap()
        .is_empty());
    for (r, cfg) in [(&a, &cfg_a), (&b, &cfg_b)] {
        let e = elements(&r.image, decoder_config(cfg), &stream);
        assert!(!e.iter().any(|x| matches!(x, FlowElement::Loss { .. })));
        assert_pcs_eq("hart", "decoded", &pcs_of(&r.image, &e), "run", &r.pcs);
    }
}

/// Timestamps: the decoder rebuilds absolute times from absolute (sync) and relative values; they
/// are the ingress times of the records the messages were made for, in order, from the first
/// record's to the last one's.
#[test]
fn timestamps_are_rebuilt() {
    let run = run("timer-rv64gc");
    for period in [None, Some((SyncUnit::Messages, 7))] {
        let cfg = EncoderConfig {
            timestamps: true,
            sync_period: period,
            ..EncoderConfig::new(run.image.files()[0].xlen)
        };
        let (bytes, _) = encode(cfg, &run.records);
        let e = elements(&run.image, decoder_config(&cfg), &bytes);
        let times: Vec<u64> = e
            .iter()
            .filter_map(|x| match x {
                FlowElement::Time { time } => Some(*time),
                _ => None,
            })
            .collect();
        assert!(times.len() > 10);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let record_times: std::collections::HashSet<u64> =
            run.records.iter().map(|r| r.time).collect();
        assert!(times.iter().all(|t| record_times.contains(t)));
        assert_eq!(times[0], run.records[0].time);
        assert_eq!(*times.last().unwrap(), run.records.last().unwrap().time);
        assert!(times.last().unwrap() > &times[0]);
    }
}

/// Ownership: after every synchronization and on every privilege change, so the privilege the
/// decoder reports for each instruction is the one it ran in.
#[test]
fn ownership_reports_privilege() {
    for prog in ["sdeleg-rv32imac", "traps-rv64gc", "timer-rv32imac"] {
        let run = run(prog);
        let cfg = EncoderConfig {
            ownership: true,
            sync_period: Some((SyncUnit::Halfwords, 5000)),
            ..EncoderConfig::new(run.image.files()[0].xlen)
        };
        let (bytes, _) = encode(cfg, &run.records);
        let e = elements(&run.image, decoder_config(&cfg), &bytes);
        let mut privs = Vec::new();
        let mut cur = None;
        for x in &e {
            match x {
                FlowElement::Context { privilege, .. } => cur = *privilege,
                FlowElement::Range { start, count, .. } => {
                    for_each_pc(&run.image, *start, *count, |_| privs.push(cur.unwrap())).unwrap()
                }
                _ => {}
            }
        }
        let want: Vec<u8> = run
            .records
            .iter()
            .filter(|r| r.iretire > 0)
            .map(|r| r.priv_)
            .collect();
        assert_eq!(privs.len(), want.len(), "{prog}");
        let diff = privs.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(
            diff, None,
            "{prog}: privilege differs at instruction {diff:?}"
        );
        assert!(want.iter().any(|&p| p != 3), "{prog} leaves M mode");
    }
}

/// Traps are reported as flow elements (B-TYPE 2/3), with their handler address.
#[test]
fn traps_and_interrupts_are_reported() {
    let run = run("timer-rv64gc");
    let cfg = EncoderConfig::new(run.image.files()[0].xlen);
    let (bytes, _) = encode(cfg, &run.records);
    let e = elements(&run.image, decoder_config(&cfg), &bytes);
    let traps: Vec<(bool, Option<u64>)> = e
        .iter()
        .filter_map(|x| match x {
            FlowElement::Trap {
                interrupt, handler, ..
            } => Some((*interrupt, *handler)),
            _ => None,
        })
        .collect();
    let want: Vec<bool> = run
        .records
        .iter()
        .filter(|r| r.is_trap())
        .map(|r| r.itype == rvtrace_ingress::Itype::Interrupt)
        .collect();
    assert_eq!(traps.iter().map(|t| t.0).collect::<Vec<_>>(), want);
    assert!(want.iter().any(|&i| i), "timer interrupts");
    assert!(traps.iter().all(|t| t.1.is_some()));
}

/// Decoding can start anywhere: from a cut in the middle of a message, the decoder waits for the
/// next synchronization message (periodic SYNC=2 here) and from there rebuilds exactly the end of
/// the PC list.
#[test]
fn decoding_starts_anywhere() {
    let run = run("heap-rv64gc");
    let cfg = EncoderConfig {
        call_stack: rvtrace_ntrace::options::CallStack::Full { depth: 8 },
        repeat_history: true,
        sync_period: Some((SyncUnit::Messages, 20)),
        ..EncoderConfig::new(run.image.files()[0].xlen)
    };
    let (bytes, _) = encode(cfg, &run.records);
    for cut in [
        1,
        77,
        bytes.len() / 3,
        bytes.len() / 2 + 5,
        bytes.len() - 40,
    ] {
        let e = elements(&run.image, decoder_config(&cfg), &bytes[cut..]);
        let losses: Vec<_> = e
            .iter()
            .filter(|x| matches!(x, FlowElement::Loss { .. }))
            .collect();
        assert_eq!(losses.len(), 1, "cut {cut}: {losses:?}");
        assert!(
            matches!(losses[0], FlowElement::Loss { offset: 0, skipped: Some(s), .. } if *s > 0)
        );
        let pcs = pcs_of(&run.image, &e);
        assert!(!pcs.is_empty() || cut + 40 >= bytes.len());
        let tail = &run.pcs[run.pcs.len() - pcs.len()..];
        assert_pcs_eq("tail", "decoded", &pcs, "run", tail);
    }
}

/// Corrupted trace never makes the decoder panic or hang: random bytes, and valid streams with
/// bytes flipped, truncated or zeroed, all decode to some flow with losses reported.
#[test]
fn corrupted_traces_are_survived() {
    let run = run("fnptr-rv32imac");
    let cfg = EncoderConfig {
        call_stack: rvtrace_ntrace::options::CallStack::Full { depth: 8 },
        sync_period: Some((SyncUnit::Messages, 30)),
        timestamps: true,
        ..EncoderConfig::new(run.image.files()[0].xlen)
    };
    let (good, _) = encode(cfg, &run.records);
    let mut rng = rvtrace_testkit::Rng(0x9e37_79b9_7f4a_7c15);
    let mut rnd = move || rng.next_u64();
    for round in 0..40 {
        let mut bytes = good.clone();
        match round % 4 {
            0 => {
                for _ in 0..(1 + rnd() % 8) {
                    let i = (rnd() as usize) % bytes.len();
                    bytes[i] ^= 1 << (rnd() % 8);
                }
            }
            1 => bytes.truncate((rnd() as usize) % bytes.len()),
            2 => {
                let i = (rnd() as usize) % bytes.len();
                let n = (rnd() as usize % 200).min(bytes.len() - i);
                bytes[i..i + n].fill(0);
            }
            _ => bytes.iter_mut().for_each(|b| *b = rnd() as u8),
        }
        for dcfg in [decoder_config(&cfg), {
            let mut d = decoder_config(&cfg);
            d.extend_addr_msb = true;
            d.codec.src_bits = 5;
            d
        }] {
            let e = elements(&run.image, dcfg, &bytes);
            assert!(matches!(e.last(), Some(FlowElement::End { .. })));
        }
    }
}
