//! The worked examples of the N-Trace specification, run through our encoder and decoder with
//! their exact code, messages and values (rc7 8.3, 8.4.1, 8.4.2, 8.4.4 = 1.0 8.2, 8.3.1, 8.3.2,
//! and rc7's 8.4.4 example; the ratified "Examples of I-CNT Field Full Generation", 1.0 8.3.3;
//! 9.3), and the I-CNT of a trap taken by `ecall`/`ebreak` under each text. The examples'
//! hand-written message streams (8.3.1's I-CNT values, 9.3's two HREPEAT forms, the ratified
//! I-CNT full example in HTM) are decoder cases: `tests/cases/spec-*.case`.
//!
//! In each example the hart enters Debug Mode at a `c.ebreak`, which never retires and is not in
//! I-CNT (both texts). The 1.0 decoder reports it as the last instruction, as it reports every
//! `ecall`/`ebreak` that takes a trap (README, "N-Trace 1.0 and 1.0.0-rc7"); rc7's does not.

use rvtrace_flow::{for_each_pc, FlowElement};
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::codec::{Addr, Body, CodecConfig};

use crate::common::messages;
use messages::bodies;
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, Mode, Spec};
use rvtrace_testkit::minimal_elf;

// Encodings (RISC-V unprivileged ISA): c.add a0, a1; add a0, a0, a1; c.ebreak;
// beq a0, a1, 0x200 at 0x102 and beq a0, a1, 0x300 at 0x10A.
const C_ADD: u16 = 0x952E;
const ADD: u32 = 0x00b5_0533;
const C_EBREAK: u16 = 0x9002;
const BEQ_TO_200: u32 = 0x0eb5_0f63;
const BEQ_TO_300: u32 = 0x1eb5_0b63;

/// A program image with instructions at given addresses (the rest zero), at 0x100.
fn image(code: &[(u64, u32, u8)]) -> Image {
    let mut bytes = vec![0u8; 0x220 + 0x100];
    for &(addr, bits, len) in code {
        let o = (addr - 0x100) as usize;
        bytes[o..o + len as usize].copy_from_slice(&bits.to_le_bytes()[..len as usize]);
    }
    let mut img = Image::new();
    img.load_bytes("example", &minimal_elf(true, 0x100, &bytes))
        .unwrap();
    img
}

/// The code of N-Trace 8.3.1 (also used by 8.3.2).
fn icnt_example() -> Image {
    image(&[
        (0x100, C_ADD as u32, 2),
        (0x102, BEQ_TO_200, 4),
        (0x106, ADD, 4),
        (0x10A, BEQ_TO_300, 4),
        (0x10E, C_ADD as u32, 2),
        (0x110, ADD, 4),
        (0x114, C_EBREAK as u32, 2),
        (0x200, C_ADD as u32, 2),
        (0x202, C_EBREAK as u32, 2),
        (0x300, ADD, 4),
        (0x304, C_EBREAK as u32, 2),
    ])
}

/// One ingress record per retired instruction: (address, length, itype).
fn records(insns: &[(u64, u32, Itype)]) -> Vec<Record> {
    insns
        .iter()
        .map(|&(iaddr, len, itype)| Record {
            iaddr,
            iretire: len / 2,
            ilastsize: (len == 4) as u8,
            itype,
            priv_: 3,
            ..Record::default()
        })
        .collect()
}

/// Decode a stream with each text's rules: rc7's gives the executed PCs; 1.0's gives those and,
/// when the hart stopped at a `c.ebreak` (Debug Mode), that one (`stop`). The PCs (rc7's) and
/// any losses.
fn run_decoder(img: &Image, bytes: &[u8], stop: Option<u64>) -> (Vec<u64>, Vec<String>) {
    let (mut pcs, losses) = decode_as(img, bytes, Spec::Rc7);
    let (v1, l1) = decode_as(img, bytes, Spec::V1_0);
    pcs.extend(stop);
    assert_eq!((&v1, &l1), (&pcs, &losses));
    pcs.truncate(pcs.len() - stop.is_some() as usize);
    (pcs, losses)
}

/// The `c.ebreak` after the last of `insns` (a run that does not end with a taken branch).
fn stop_after<T>(insns: &[(u64, u32, T)]) -> Option<u64> {
    insns.last().map(|&(pc, len, _)| pc + u64::from(len))
}

/// Decode with the rules of `spec`, returning the executed PCs and any losses.
fn decode_as(img: &Image, bytes: &[u8], spec: Spec) -> (Vec<u64>, Vec<String>) {
    let mut elements: Vec<FlowElement> = Vec::new();
    let cfg = DecoderConfig {
        spec,
        ..DecoderConfig::new(IsaConfig::rv64())
    };
    decode(img, cfg, bytes, &mut elements);
    let mut pcs = Vec::new();
    let mut losses = Vec::new();
    for e in &elements {
        match e {
            FlowElement::Range { start, count, .. } => {
                for_each_pc(img, *start, *count, |pc| pcs.push(pc)).unwrap()
            }
            FlowElement::Loss { reason, .. } => losses.push(reason.to_string()),
            _ => {}
        }
    }
    (pcs, losses)
}

fn pts(icnt: u64, faddr: u64) -> Body {
    Body::ProgTraceSync {
        sync: 3,
        icnt,
        faddr: Addr::plain(faddr),
    }
}

fn ptc(icnt: u64, hist: Option<u64>) -> Body {
    Body::ProgTraceCorrelation {
        evcode: 0,
        cdf: hist.is_some() as u8,
        icnt,
        hist,
    }
}

const NT: Itype = Itype::NonTakenBranch;
const T: Itype = Itype::TakenBranch;
const N: Itype = Itype::None;

/// The three runs of 8.3.1/8.3.2 (instructions retired before the `c.ebreak` that enters debug
/// mode, which does not retire).
fn runs() -> [Vec<(u64, u32, Itype)>; 3] {
    [
        vec![(0x100, 2, N), (0x102, 4, T), (0x200, 2, N)],
        vec![
            (0x100, 2, N),
            (0x102, 4, NT),
            (0x106, 4, N),
            (0x10A, 4, T),
            (0x300, 4, N),
        ],
        vec![
            (0x100, 2, N),
            (0x102, 4, NT),
            (0x106, 4, N),
            (0x10A, 4, NT),
            (0x10E, 2, N),
            (0x110, 4, N),
        ],
    ]
}

/// N-Trace 8.3.1: BTM. Run 1: DirectBranch I-CNT=3, then ProgTraceCorrelation I-CNT=1; run 2:
/// DirectBranch I-CNT=7, ProgTraceCorrelation I-CNT=2; run 3: ProgTraceCorrelation I-CNT=10.
/// ProgTraceSync at the start has I-CNT=0 and F-ADDR encoding 0x100.
#[test]
fn icnt_btm_8_4_1() {
    let img = icnt_example();
    let expected = [
        vec![pts(0, 0x80), Body::DirectBranch { icnt: 3 }, ptc(1, None)],
        vec![pts(0, 0x80), Body::DirectBranch { icnt: 7 }, ptc(2, None)],
        vec![pts(0, 0x80), ptc(10, None)],
    ];
    for (run, want) in runs().iter().zip(expected) {
        let cfg = EncoderConfig {
            mode: Mode::Btm,
            ..EncoderConfig::new(Xlen::Rv64)
        };
        let (bytes, _) = encode(cfg, &records(run));
        assert_eq!(bodies(&bytes, &CodecConfig::default()), want);
        let (pcs, losses) = run_decoder(&img, &bytes, stop_after(run));
        assert!(losses.is_empty(), "{losses:?}");
        assert_eq!(pcs, run.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

/// N-Trace 8.3.2: HTM, the same runs: I-CNT=4 HIST=0b1_1; I-CNT=9 HIST=0b1_01; I-CNT=10
/// HIST=0b1_00 (8.2: "101 = two branches, not-taken and taken").
#[test]
fn icnt_htm_8_4_2() {
    let img = icnt_example();
    let expected = [(4, 0b11), (9, 0b101), (10, 0b100)];
    for (run, (icnt, hist)) in runs().iter().zip(expected) {
        let (bytes, _) = encode(EncoderConfig::new(Xlen::Rv64), &records(run));
        assert_eq!(
            bodies(&bytes, &CodecConfig::default()),
            vec![pts(0, 0x80), ptc(icnt, Some(hist))]
        );
        let (pcs, losses) = run_decoder(&img, &bytes, stop_after(run));
        assert!(losses.is_empty(), "{losses:?}");
        assert_eq!(pcs, run.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

/// N-Trace rc7 8.4.4: a 4-bit I-CNT (MSB = overflow flag) in HTM, the branch at 0x102 not
/// taken: ProgTraceSync (SYNC=3, I-CNT=0, F-ADDR=0x80), IndirectBranchHistSync (SYNC=4, I-CNT=8,
/// HIST=0x2, F-ADDR=0x88), ProgTraceCorrelation (EVCODE=0, CDF=1, I-CNT=6, HIST=0x1). 1.0 8.3
/// allows SYNC=4 in BTM only: there the same run gives ResourceFull RCODE=0 RDATA[0]=8 and
/// ProgTraceCorrelation I-CNT=6 with the HIST still pending (0x2).
#[test]
fn icnt_overflow_htm_8_4_4() {
    let img = image(&[
        (0x100, C_ADD as u32, 2),
        (0x102, BEQ_TO_200, 4),
        (0x106, C_ADD as u32, 2),
        (0x108, ADD, 4),
        (0x10C, ADD, 4),
        (0x110, ADD, 4),
        (0x114, ADD, 4),
        (0x118, ADD, 4),
        (0x11C, C_EBREAK as u32, 2),
    ]);
    let run = [
        (0x100, 2, N),
        (0x102, 4, NT),
        (0x106, 2, N),
        (0x108, 4, N),
        (0x10C, 4, N),
        (0x110, 4, N),
        (0x114, 4, N),
        (0x118, 4, N),
    ];
    let cfg = EncoderConfig {
        icnt_bits: 4,
        spec: Spec::Rc7,
        ..EncoderConfig::new(Xlen::Rv64)
    };
    let (bytes, _) = encode(cfg, &records(&run));
    assert_eq!(
        bodies(&bytes, &CodecConfig::default()),
        vec![
            pts(0, 0x80),
            Body::IndirectBranchHistSync {
                sync: 4,
                btype: 0,
                icnt: 8,
                faddr: Addr::plain(0x88),
                hist: 0x2
            },
            ptc(6, Some(0x1)),
        ]
    );
    let want: Vec<u64> = run.iter().map(|r| r.0).collect();
    assert_eq!(
        run_decoder(&img, &bytes, stop_after(&run)),
        (want.clone(), vec![])
    );
    let (bytes, _) = encode(
        EncoderConfig {
            spec: Spec::V1_0,
            ..cfg
        },
        &records(&run),
    );
    let rf = Body::ResourceFull {
        rcode: 0,
        rdata0: 8,
        rdata1: None,
    };
    assert_eq!(
        bodies(&bytes, &CodecConfig::default()),
        vec![pts(0, 0x80), rf, ptc(6, Some(0x2))]
    );
    assert_eq!(run_decoder(&img, &bytes, stop_after(&run)), (want, vec![]));
}

/// The ratified text's version (1.0 8.3.3, "Examples of I-CNT Field Full Generation"): code with
/// 32-bit instructions from 0x106; ResourceFull RCODE=0 RDATA[0]=9 at 0x112, then
/// ProgTraceCorrelation I-CNT=5 (HTM: HIST=0x2). Our encoder produces exactly that in BTM
/// (without HIST) and, under 1.0, in HTM (rc7: SYNC=4 instead), and the decoder rebuilds the
/// whole <0x100..0x11C) range from it (`tests/cases/spec-icnt-full.case` too).
#[test]
fn icnt_full_ratified_example() {
    let img = image(&[
        (0x100, C_ADD as u32, 2),
        (0x102, BEQ_TO_200, 4),
        (0x106, ADD, 4),
        (0x10A, ADD, 4),
        (0x10E, ADD, 4),
        (0x112, ADD, 4),
        (0x116, ADD, 4),
        (0x11A, C_ADD as u32, 2),
        (0x11C, C_EBREAK as u32, 2),
    ]);
    let run = [
        (0x100, 2, N),
        (0x102, 4, NT),
        (0x106, 4, N),
        (0x10A, 4, N),
        (0x10E, 4, N),
        (0x112, 4, N),
        (0x116, 4, N),
        (0x11A, 2, N),
    ];
    let pcs: Vec<u64> = run.iter().map(|r| r.0).collect();
    let rf = Body::ResourceFull {
        rcode: 0,
        rdata0: 9,
        rdata1: None,
    };
    let cfg = EncoderConfig {
        mode: Mode::Btm,
        icnt_bits: 4,
        ..EncoderConfig::new(Xlen::Rv64)
    };
    let (bytes, _) = encode(cfg, &records(&run));
    assert_eq!(
        bodies(&bytes, &CodecConfig::default()),
        vec![pts(0, 0x80), rf, ptc(5, None)]
    );
    assert_eq!(
        run_decoder(&img, &bytes, stop_after(&run)),
        (pcs.clone(), vec![])
    );
    let htm = EncoderConfig {
        mode: Mode::Htm,
        ..cfg
    };
    let (bytes, _) = encode(htm, &records(&run));
    assert_eq!(
        bodies(&bytes, &CodecConfig::default()),
        vec![pts(0, 0x80), rf, ptc(5, Some(0x2))]
    );
    assert_eq!(run_decoder(&img, &bytes, stop_after(&run)), (pcs, vec![]));
}

/// I-CNT of a trap taken by `ecall` and by `c.ebreak`, and of the `c.ebreak` the trace ends at:
/// 1.0 leaves the instruction out ("These instructions do not retire", 1.0 chapter 2 table
/// "Generating itype"; 8.3: "Instructions that either raise exceptions or are interrupted prior
/// to retirement do not increment the I-CNT"), rc7 counts it (rc7 Table 2: "ecall is reported
/// after retirement"; 8.4: "An exception or interrupt after retirement of an instruction MUST
/// update the I-CNT"). The ingress counts it in `iretire` either way (as the hart model and
/// the E-Trace reference flow do). Both streams decode to the run's PCs, the trapping
/// instructions included (each the EPC of its trap).
///
/// 0x100 c.add; 0x102 ecall -> handler 0x200: c.add; mret -> 0x106 c.ebreak -> handler 0x300:
/// c.add; mret -> 0x108 add; 0x10c c.ebreak (the trace ends: the hart stops).
#[test]
fn ecall_ebreak_icnt() {
    const ECALL: u32 = 0x0000_0073;
    const MRET: u32 = 0x3020_0073;
    let img = image(&[
        (0x100, C_ADD as u32, 2),
        (0x102, ECALL, 4),
        (0x106, C_EBREAK as u32, 2),
        (0x108, ADD, 4),
        (0x10C, C_EBREAK as u32, 2),
        (0x200, C_ADD as u32, 2),
        (0x202, MRET, 4),
        (0x300, C_ADD as u32, 2),
        (0x302, MRET, 4),
    ]);
    const EXC: Itype = Itype::Exception;
    const RET: Itype = Itype::TrapReturn;
    let run: [(u64, u32, Itype, u64); 9] = [
        (0x100, 2, N, 0),
        (0x102, 4, EXC, 11), // ecall from M-mode
        (0x200, 2, N, 0),
        (0x202, 4, RET, 0),
        (0x106, 2, EXC, 3), // breakpoint
        (0x300, 2, N, 0),
        (0x302, 4, RET, 0),
        (0x108, 4, N, 0),
        (0x10C, 2, EXC, 3),
    ];
    let recs: Vec<Record> = run
        .iter()
        .map(|&(pc, len, itype, cause)| Record {
            cause,
            ..records(&[(pc, len, itype)])[0]
        })
        .collect();
    let pcs: Vec<u64> = run.iter().map(|r| r.0).collect();
    let ib = |btype, icnt, from: u64, to: u64| Body::IndirectBranch {
        btype,
        icnt,
        uaddr: Addr::plain((from ^ to) >> 1),
    };
    // (spec, I-CNT of: the ecall's trap, the c.ebreak's trap, the end at the c.ebreak)
    for (spec, e, b, end) in [(Spec::V1_0, 1, 0, 2), (Spec::Rc7, 3, 1, 3)] {
        let cfg = EncoderConfig {
            mode: Mode::Btm,
            spec,
            ..EncoderConfig::new(Xlen::Rv64)
        };
        let (bytes, _) = encode(cfg, &recs);
        assert_eq!(
            bodies(&bytes, &CodecConfig::default()),
            vec![
                pts(0, 0x80),
                ib(2, e, 0x100, 0x200),
                ib(0, 3, 0x200, 0x106),
                ib(2, b, 0x106, 0x300),
                ib(0, 3, 0x300, 0x108),
                ptc(end, None),
            ],
            "{spec}"
        );
        let (got, losses) = decode_as(&img, &bytes, spec);
        assert_eq!((got, losses), (pcs.clone(), vec![]), "{spec}");
    }
}

/// N-Trace 9.3: RDATA=0x55555555 (the stop-bit and "01" 15 times) with HREPEAT=10, and RDATA=0x5
/// (the stop-bit and "01") with HREPEAT=150, give the same 300 history bits (both decoded:
/// `tests/cases/spec-9.3-hrepeat.case`); our encoder sends such a loop as one RCODE 2 message
/// and the decoder follows it.
#[test]
fn hrepeat_9_3() {
    // A loop: 0x100 c.add; 0x102 beq -> 0x100 (taken) ... alternating with a not-taken bne.
    // 0x100: c.add; 0x102: bne a0, a1, 0x10A (not taken: "0"); 0x106: beq a0, a0, 0x100 ("1").
    const BNE_TO_10A: u32 = 0x00b5_1463; // bne a0, a1, +8
    const BEQ_BACK: u32 = 0xfea5_0de3; // beq a0, a0, -6
    let img = image(&[
        (0x100, C_ADD as u32, 2),
        (0x102, BNE_TO_10A, 4),
        (0x106, BEQ_BACK, 4),
        (0x10A, C_EBREAK as u32, 2),
    ]);
    let mut run = Vec::new();
    for _ in 0..150 {
        run.extend([(0x100, 2, N), (0x102, 4, NT), (0x106, 4, T)]);
    }
    let pcs: Vec<u64> = run.iter().map(|r| r.0).collect();
    // Our encoder: with a 32-bit register (31 bits, odd) the pattern would shift by one bit per
    // register; a 5-bit register holds 4 bits, "0101", which repeat exactly: 75 registers.
    let cfg = EncoderConfig {
        hist_bits: 5,
        repeat_history: true,
        ..EncoderConfig::new(Xlen::Rv64)
    };
    let (bytes, _) = encode(cfg, &records(&run));
    assert_eq!(
        bodies(&bytes, &CodecConfig::default()),
        vec![
            pts(0, 0x80),
            Body::ResourceFull {
                rcode: 2,
                rdata0: 0b1_0101,
                rdata1: Some(75)
            },
            ptc(750, Some(1)),
        ]
    );
    assert_eq!(run_decoder(&img, &bytes, None), (pcs, vec![]));
}

/// A periodic sync that falls on an indirect jump (BTM, or HTM with an empty HIST) is the jump's
/// IndirectBranchSync in 1.0 (8.4.1 note 3: "Next available ...Branch... message upgraded to
/// ...Branch...Sync counterpart"; B-TYPE 0 is an indirect jump), where rc7 (no such rule) gives
/// ProgTraceSync whose I-CNT ends at the jump. ProgTraceSync stays for syncs in linear code.
/// fnptr (calls through function pointers, returns) with a sync due every 64 half-words: in the
/// decoded flow, the periodic syncs right after an uninferable jump are exactly the
/// IndirectBranchSync messages in 1.0, and none is in rc7 (there they are ProgTraceSync); both
/// streams decode to the run's PCs.
#[test]
fn periodic_sync_at_an_indirect_jump() {
    use rvtrace_flow::SyncReason;
    use rvtrace_ntrace::options::SyncUnit;
    let run = rvtrace_testkit::run_test_program("fnptr-rv64gc", 4);
    // (periodic syncs after an uninferable jump, IndirectBranchSync B-TYPE 0 with SYNC=2)
    let count = |spec: Spec| {
        let cfg = EncoderConfig {
            mode: Mode::Btm,
            sync_period: Some((SyncUnit::Halfwords, 64)),
            spec,
            ..EncoderConfig::new(Xlen::Rv64)
        };
        let (bytes, _) = encode(cfg, &run.records);
        let mut elements: Vec<FlowElement> = Vec::new();
        let dcfg = DecoderConfig {
            spec,
            ..DecoderConfig::new(IsaConfig::rv64())
        };
        decode(&run.image, dcfg, &bytes, &mut elements);
        let mut pcs = Vec::new();
        let mut at_jumps = 0;
        for (k, e) in elements.iter().enumerate() {
            assert!(!matches!(e, FlowElement::Loss { .. }), "{spec}: {e:?}");
            match e {
                FlowElement::Range { start, count, .. } => {
                    for_each_pc(&run.image, *start, *count, |pc| pcs.push(pc)).unwrap()
                }
                FlowElement::Sync {
                    reason: SyncReason::Periodic,
                    ..
                } => {
                    if let Some(FlowElement::Range { class, .. }) = elements.get(k.wrapping_sub(1))
                    {
                        at_jumps += class.is_uninferable_discon() as usize;
                    }
                }
                _ => {}
            }
        }
        assert!(pcs == run.pcs, "{spec}: PC lists differ");
        let ibs = bodies(&bytes, &CodecConfig::default())
            .iter()
            .filter(|b| {
                matches!(
                    b,
                    Body::IndirectBranchSync {
                        sync: 2,
                        btype: 0,
                        ..
                    }
                )
            })
            .count();
        (at_jumps, ibs)
    };
    let (jumps_rc7, ibs_rc7) = count(Spec::Rc7);
    let (jumps_v1, ibs_v1) = count(Spec::V1_0);
    assert!(jumps_rc7 > 10 && ibs_rc7 == 0, "{jumps_rc7} {ibs_rc7}");
    assert_eq!(ibs_v1, jumps_v1);
    println!(
        "periodic syncs at jumps: rc7 {jumps_rc7} ProgTraceSync, 1.0 {jumps_v1} IndirectBranchSync"
    );
}
