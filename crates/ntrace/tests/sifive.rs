//! SiFive's dialect (issue 30 item 2; the facts and their sources are in the crate README,
//! "SiFive dialect"): streams of our encoder rewritten the way SiFive's encoders send the same
//! execution (RCODE 8/9 branch runs, In-Circuit Trace between messages, XOR timestamps), and
//! hand-built messages; the decoded PCs must be the run's.

use rvtrace_flow::{EventKind, FlowElement};
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::codec::message::raw_from_bytes;
use rvtrace_ntrace::codec::{rcode, Addr, Body, CodecConfig, Dialect, Message};

use crate::common::messages::{bodies, bytes_of};
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, Mode};
use rvtrace_testkit::{run_program, ProgramRun};
use std::path::Path;

fn program(name: &str) -> ProgramRun {
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/elf/{name}.elf"));
    run_program(&elf, name, 4)
}

fn cfg(run: &ProgramRun, dialect: Dialect) -> DecoderConfig {
    let mut c = DecoderConfig::new(IsaConfig::new(run.image.files()[0].xlen));
    c.codec.dialect = dialect;
    c
}

/// (elements, PCs, loss texts) of a decode.
fn run_decode(
    run: &ProgramRun,
    dialect: Dialect,
    bytes: &[u8],
) -> (Vec<FlowElement>, Vec<u64>, Vec<String>) {
    let mut el: Vec<FlowElement> = Vec::new();
    decode(&run.image, cfg(run, dialect), bytes, &mut el);
    let (pcs, losses) = crate::common::pcs_and_losses(&run.image, &el);
    (el, pcs, losses)
}

fn htm_stream(run: &ProgramRun) -> Vec<Body> {
    let (bytes, _) = encode(
        EncoderConfig {
            mode: Mode::Htm,
            ..EncoderConfig::new(run.image.files()[0].xlen)
        },
        &run.records,
    );
    bodies(&bytes, &CodecConfig::default())
}

/// The HIST field of a message, if it has one, for rewriting.
fn hist_of(b: &mut Body) -> Option<&mut u64> {
    match b {
        Body::IndirectBranchHist { hist, .. }
        | Body::IndirectBranchHistSync { hist, .. }
        | Body::ResourceFull {
            rcode: rcode::HIST,
            rdata0: hist,
            ..
        } => Some(hist),
        Body::ProgTraceCorrelation { hist: Some(h), .. } => Some(h),
        _ => None,
    }
}

/// B.1: ResourceFull RCODE 8 (9) = the next RDATA direct conditional branches not taken
/// (taken), queued in order with the HIST of RCODE 1/2 and before the next message's HIST. Every
/// HIST of an HTM stream is moved into runs of RCODE 8/9 in front of its message (the message
/// keeps the stop-bit alone; a ResourceFull RCODE 1 is replaced by the runs): the same branches.
#[test]
fn rcode_8_9_runs_are_branch_outcomes() {
    let run = program("fnptr-rv64gc");
    let msgs = htm_stream(&run);
    let mut out = Vec::new();
    let mut runs = 0;
    for mut m in msgs.iter().copied() {
        let is_rf = matches!(m, Body::ResourceFull { .. });
        if let Some(h) = hist_of(&mut m) {
            let n = 63 - h.leading_zeros();
            // Most significant bit after the stop-bit first (8.2): run lengths of equal bits.
            let mut k = n;
            while k > 0 {
                let bit = (*h >> (k - 1)) & 1;
                let mut len = 0;
                while k > 0 && (*h >> (k - 1)) & 1 == bit {
                    len += 1;
                    k -= 1;
                }
                out.push(Body::ResourceFull {
                    rcode: if bit == 1 {
                        rcode::SIFIVE_TAKEN
                    } else {
                        rcode::SIFIVE_NOT_TAKEN
                    },
                    rdata0: len,
                    rdata1: None,
                });
                runs += 1;
            }
            *h = 1;
            if is_rf {
                continue;
            }
        }
        out.push(m);
    }
    assert!(runs > 10, "the program has branches");
    let (_, pcs, losses) = run_decode(&run, Dialect::Sifive, &bytes_of(&out));
    assert!(losses.is_empty(), "{losses:?}");
    assert_eq!(pcs, run.pcs);
    // Without the dialect, RCODE 8/9 are vendor codes stepped over: the branches are missing.
    let (_, pcs, _) = run_decode(&run, Dialect::Standard, &bytes_of(&out));
    assert_ne!(pcs, run.pcs);
    // A run of 0 branches is damage (B.1: LNX rejects it), not a panic.
    let mut bad = out.clone();
    let at = bad
        .iter()
        .position(|b| matches!(b, Body::ResourceFull { rcode: 8 | 9, .. }))
        .unwrap();
    bad[at] = Body::ResourceFull {
        rcode: rcode::SIFIVE_TAKEN,
        rdata0: 0,
        rdata1: None,
    };
    let (_, _, losses) = run_decode(&run, Dialect::Sifive, &bytes_of(&bad));
    assert!(
        losses[0].contains("RCODE 9 with a count of 0"),
        "{losses:?}"
    );
}

/// The address a message gives (F-ADDR, or U-ADDR XOR the reference), the new reference.
fn message_addr(b: &Body, reference: u64) -> Option<u64> {
    match b {
        Body::ProgTraceSync { faddr, .. }
        | Body::DirectBranchSync { faddr, .. }
        | Body::IndirectBranchSync { faddr, .. }
        | Body::IndirectBranchHistSync { faddr, .. } => Some(faddr.field << 1),
        Body::IndirectBranch { uaddr, .. } | Body::IndirectBranchHist { uaddr, .. } => {
            Some(reference ^ (uaddr.field << 1))
        }
        _ => None,
    }
}

/// B.2: a TCODE 34 In-Circuit Trace's CKDATA0 is XOR-compressed like U-ADDR and becomes the
/// reference address, so the next U-ADDR is relative to it. A PC sample (CKSRC 15) and a
/// watchpoint (CKSRC 14, CKDF 1: CKDATA1 the trigger ID) are put after every IndirectBranch, the
/// next U-ADDR re-encoded against the sample: the flow is the run's, the events come with their
/// addresses. The standard decoder steps over TCODE 34 and follows the wrong address.
#[test]
fn in_circuit_trace_updates_the_reference_address() {
    let run = program("fnptr-rv64gc");
    let msgs = htm_stream(&run);
    let mut out = Vec::new();
    let mut reference = 0u64;
    let mut samples = Vec::new();
    // The stream's address as the decoder sees it (after any ICT) vs the encoder's.
    let mut decoder_ref = 0u64;
    for m in msgs.iter().copied() {
        let mut m = m;
        if let Some(a) = message_addr(&m, reference) {
            // Re-encode a U-ADDR against the decoder's reference.
            if let Body::IndirectBranch { uaddr, .. } | Body::IndirectBranchHist { uaddr, .. } =
                &mut m
            {
                *uaddr = Addr::plain((a ^ decoder_ref) >> 1);
            }
            reference = a;
            decoder_ref = a;
        }
        out.push(m);
        if matches!(m, Body::IndirectBranchHist { .. }) && samples.len() < 20 {
            let sample = reference.wrapping_add(0x40 * samples.len() as u64) & !1;
            out.push(Body::Ict {
                sync: false,
                cksrc: 15,
                ckdf: 0,
                ckdata0: Addr::plain((decoder_ref ^ sample) >> 1),
                ckdata1: None,
            });
            out.push(Body::Ict {
                sync: false,
                cksrc: 14,
                ckdf: 1,
                ckdata0: Addr::plain(0),
                ckdata1: Some(3),
            });
            decoder_ref = sample;
            samples.push(sample);
        }
    }
    assert!(samples.len() > 3);
    let (el, pcs, losses) = run_decode(&run, Dialect::Sifive, &bytes_of(&out));
    assert!(losses.is_empty(), "{losses:?}");
    assert_eq!(pcs, run.pcs);
    let events: Vec<(EventKind, Option<u64>, Option<u64>)> = el
        .iter()
        .filter_map(|e| match e {
            FlowElement::Event {
                kind, addr, value, ..
            } => Some((*kind, *addr, *value)),
            _ => None,
        })
        .collect();
    let want: Vec<_> = samples
        .iter()
        .flat_map(|&s| {
            [
                (EventKind::PcSample, Some(s), None),
                (EventKind::Watchpoint, Some(s), Some(3)),
            ]
        })
        .collect();
    assert_eq!(events, want);
    let (_, _, losses) = run_decode(&run, Dialect::Standard, &bytes_of(&out));
    assert!(
        !losses.is_empty(),
        "the standard decoder loses the reference"
    );
}

/// Hand-built messages (bytes with the fields they carry). SRC 0 bits; MDO bits LSB first.
#[test]
fn hand_built_messages() {
    let sifive = CodecConfig {
        src_bits: 0,
        dialect: Dialect::Sifive,
    };
    let parse = |b: &[u8], c: &CodecConfig| {
        rvtrace_ntrace::codec::parse(&raw_from_bytes(b).unwrap(), c).map(|m| (m.body, m.tstamp))
    };
    // TCODE 34 = 100010, MSEO 00 | CKSRC 0 (control), CKDF 1: 01_0000 | CKDATA0 0x9F in two
    // bytes (0x1F, 0x02, end of field) | CKDATA1 2 "trace on", end of message (B.2). From
    // sifive/trace-decoder-tests dv-uaddr1.rtd, bytes 0x10-0x14.
    let ict = [0x88, 0x40, 0x7C, 0x09, 0x0B];
    assert_eq!(
        parse(&ict, &sifive).unwrap(),
        (
            Body::Ict {
                sync: false,
                cksrc: 0,
                ckdf: 1,
                ckdata0: Addr {
                    field: 0x9F,
                    bits: 12
                },
                ckdata1: Some(2)
            },
            None
        )
    );
    // Standard N-Trace: a reserved TCODE.
    assert_eq!(
        parse(&ict, &CodecConfig::default()).unwrap().0,
        Body::Other { tcode: 34 }
    );
    // CKDF 2 is invalid (B.2: "0 means 1", DQR errors for > 1): 10_0000.
    let bad = [0x88, 0x80, 0x7F];
    assert!(parse(&bad, &sifive)
        .unwrap_err()
        .to_string()
        .contains("CKDF=2 is reserved"));
    // TCODE 35 = 100011 | CKSRC 15 (PC sample), CKDF 0: 00_1111 | CKDATA0 0x20 | TSTAMP 5 (B.2:
    // TSTAMP optional, the last field).
    let ws = [0x8C, 0x3C, 0x81, 0x17];
    assert_eq!(
        parse(&ws, &sifive).unwrap(),
        (
            Body::Ict {
                sync: true,
                cksrc: 15,
                ckdf: 0,
                ckdata0: Addr {
                    field: 0x20,
                    bits: 6
                },
                ckdata1: None
            },
            Some(5)
        )
    );
    // TCODE 7 = 000111 | IDTAG 0x3E (channel 15, 16-bit store) | DQDATA 0x2A (B.3).
    let da = [0x1C, 0xF9, 0xAB];
    assert_eq!(
        parse(&da, &sifive).unwrap(),
        (
            Body::DataAcquisition {
                idtag: 0x3E,
                dqdata: 0x2A
            },
            None
        )
    );
    // ResourceFull TCODE 27 | RCODE 9 and RDATA 5's low bits 01: 01_1001 | RDATA's high bit 1, end
    // of message: no TSTAMP (B.1: one variable field).
    let rf = [0x6C, 0x64, 0x07];
    assert_eq!(
        parse(&rf, &sifive).unwrap().0,
        Body::ResourceFull {
            rcode: 9,
            rdata0: 5,
            rdata1: None
        }
    );
    // Each re-encodes to its bytes.
    for b in [&ict[..], &ws, &da, &rf] {
        let (body, tstamp) = parse(b, &sifive).unwrap();
        let m = Message {
            src: 0,
            body,
            tstamp,
        };
        assert_eq!(m.encode(&sifive).as_slice(), b);
    }
}

/// B.4: relative TSTAMPs are XORed into the time (absolute in synchronization messages), B.6:
/// any Ownership PROCESS is a message (V=1 with PRV 3 shown raw), B.3: DataAcquisition is an
/// event whether synchronized or not, and an hcontext of 0 after the scontext keeps it.
#[test]
fn timestamps_ownership_and_writes() {
    let run = program("fnptr-rv64gc");
    let msgs = htm_stream(&run);
    let sifive = CodecConfig {
        src_bits: 0,
        dialect: Dialect::Sifive,
    };
    let mut bytes = Vec::new();
    let mut put = |body: Body, tstamp: Option<u64>| {
        bytes.extend_from_slice(
            Message {
                src: 0,
                body,
                tstamp,
            }
            .encode(&sifive)
            .as_slice(),
        )
    };
    put(
        Body::DataAcquisition {
            idtag: 0,
            dqdata: 0x6948,
        },
        None,
    );
    put(msgs[0], Some(0x1000));
    // Ownership: scontext 0x2e1 in U-mode, hcontext 0 (SiFive's order), then V=1 PRV=3.
    put(
        Body::Ownership {
            process: 0x2e1 << 5 | 2,
        },
        Some(0x0011),
    );
    put(Body::Ownership { process: 3 }, None);
    put(Body::Ownership { process: 0x1c }, Some(0x0100));
    for m in &msgs[1..] {
        put(*m, None);
    }
    let (el, pcs, losses) = run_decode(&run, Dialect::Sifive, &bytes);
    assert!(losses.is_empty(), "{losses:?}");
    assert_eq!(pcs, run.pcs);
    let rest: Vec<String> = el
        .iter()
        .filter(|e| !matches!(e, FlowElement::Range { .. }))
        .take(7)
        .map(|e| format!("{e:?}"))
        .collect();
    let want = [
        "Event { offset: 0, kind: Write { tag: 0 }, addr: None, value: Some(26952) }".to_string(),
        format!("{:?}", el[1]),
        "Time { time: 4096 }".into(),
        "Context { privilege: Some(0), context: Some(737) }".into(),
        // 0x1000 ^ 0x11 (XOR, not 0x1011 + ...).
        "Time { time: 4113 }".into(),
        "Context { privilege: Some(0), context: None }".into(),
        "Event { offset: 24, kind: Process, addr: None, value: Some(28) }".into(),
    ];
    assert!(matches!(el[1], FlowElement::Sync { .. }));
    assert_eq!(rest[..6], want[..6]);
    assert!(rest[6].contains("kind: Process") && rest[6].contains("value: Some(28)"));
    // The time after the V=1 PRV=3 Ownership: 0x1011 ^ 0x100.
    assert!(el.contains(&FlowElement::Time { time: 0x1111 }));
}

/// B.10 / README "A branch past the HIST in HTM": a message whose I-CNT covers a conditional
/// branch after its HIST is used up. Every retired branch adds a HIST bit in HTM, so the
/// branch's outcome is not in the trace: the walk stops before it and the rest is a loss (in
/// both dialects), where walking on would guess "not taken".
#[test]
fn htm_branch_past_the_hist_is_unknown() {
    let run = program("fnptr-rv64gc");
    let mut msgs = htm_stream(&run);
    let (_, truth, _) = run_decode(&run, Dialect::Standard, &bytes_of(&msgs));
    assert_eq!(truth, run.pcs);
    // The first IndirectBranchHist with branches loses its HIST bits.
    let h = msgs
        .iter_mut()
        .find_map(|m| match m {
            Body::IndirectBranchHist { hist, .. } if *hist > 1 => Some(hist),
            _ => None,
        })
        .expect("the program has branches");
    *h = 1;
    for d in [Dialect::Standard, Dialect::Sifive] {
        let (_, pcs, losses) = run_decode(&run, d, &bytes_of(&msgs));
        assert!(losses[0].contains("no HIST bit left"), "{d:?}: {losses:?}");
        assert!(pcs.len() < truth.len() && truth.starts_with(&pcs));
    }
}

/// B.4 with `--tstamp-bits` (SiFive's `tsSize`): the counter wraps. A relative TSTAMP is XORed
/// into the time and an absolute one replaces its low bits; a time that goes back has wrapped
/// (SiFive's decoder, `processTS`).
#[test]
fn timestamp_counter_wraps() {
    let run = program("fnptr-rv64gc");
    let msgs = htm_stream(&run);
    let Body::ProgTraceSync { faddr, .. } = msgs[0] else {
        panic!("the stream starts with ProgTraceSync")
    };
    let sifive = CodecConfig {
        src_bits: 0,
        dialect: Dialect::Sifive,
    };
    let mut bytes = Vec::new();
    let mut put = |body: Body, tstamp: u64| {
        let m = Message {
            src: 0,
            body,
            tstamp: Some(tstamp),
        };
        bytes.extend_from_slice(m.encode(&sifive).as_slice())
    };
    let own = Body::Ownership { process: 0xC };
    put(msgs[0], 0xF0);
    put(own, 0x0F); // 0xF0 ^ 0x0F = 0xFF
    put(own, 0xF0); // 0xFF ^ 0xF0 = 0x0F: back, so wrapped: 0x10F
    let again = Body::ProgTraceSync {
        sync: 2,
        icnt: 0,
        faddr,
    };
    put(again, 0x05); // 0x100 | 0x05 = 0x105 < 0x10F: wrapped: 0x205
    let mut c = cfg(&run, Dialect::Sifive);
    c.tstamp_bits = Some(8);
    let mut el: Vec<FlowElement> = Vec::new();
    decode(&run.image, c, &bytes, &mut el);
    assert_eq!(crate::common::times(&el), [0xF0, 0xFF, 0x10F, 0x205]);
}
