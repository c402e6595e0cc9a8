//! The worked examples of the N-Trace specification, run through our encoder and decoder with
//! their exact code, messages and values (8.3, 8.4.1, 8.4.2, 8.4.4 and the ratified "Examples of
//! I-CNT Field Full Generation", 9.3). The examples' hand-written message streams (8.4.1's
//! I-CNT values, 9.3's two HREPEAT forms, the ratified I-CNT full example in HTM) are decoder
//! cases: `tests/cases/spec-*.case`.

use rvtrace_flow::{for_each_pc, FlowElement};
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::codec::{Addr, Body, CodecConfig};

use crate::common::messages;
use messages::bodies;
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, Mode};
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

/// The code of N-Trace 8.4.1 (also used by 8.4.2).
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

/// Decode, returning the executed PCs and any losses.
fn run_decoder(img: &Image, bytes: &[u8]) -> (Vec<u64>, Vec<String>) {
    let mut elements: Vec<FlowElement> = Vec::new();
    decode(
        img,
        DecoderConfig::new(IsaConfig::rv64()),
        bytes,
        &mut elements,
    );
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

/// The three runs of 8.4.1/8.4.2 (instructions retired before the `c.ebreak` that enters debug
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

/// N-Trace 8.4.1: BTM. Run 1: DirectBranch I-CNT=3, then ProgTraceCorrelation I-CNT=1; run 2:
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
        let (pcs, losses) = run_decoder(&img, &bytes);
        assert!(losses.is_empty(), "{losses:?}");
        assert_eq!(pcs, run.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

/// N-Trace 8.4.2: HTM, the same runs: I-CNT=4 HIST=0b1_1; I-CNT=9 HIST=0b1_01; I-CNT=10
/// HIST=0b1_00 (8.3: "101 = two branches, not-taken and taken").
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
        let (pcs, losses) = run_decoder(&img, &bytes);
        assert!(losses.is_empty(), "{losses:?}");
        assert_eq!(pcs, run.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

/// N-Trace 8.4.4 (rc7): a 4-bit I-CNT (MSB = overflow flag) in HTM, the branch at 0x102 not
/// taken: ProgTraceSync (SYNC=3, I-CNT=0, F-ADDR=0x80), IndirectBranchHistSync (SYNC=4, I-CNT=8,
/// HIST=0x2, F-ADDR=0x88), ProgTraceCorrelation (EVCODE=0, CDF=1, I-CNT=6, HIST=0x1).
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
    let (pcs, losses) = run_decoder(&img, &bytes);
    assert!(losses.is_empty(), "{losses:?}");
    assert_eq!(pcs, run.iter().map(|r| r.0).collect::<Vec<_>>());
}

/// The ratified text's version ("Examples of I-CNT Field Full Generation"): code with 32-bit
/// instructions from 0x106; ResourceFull RCODE=0 RDATA[0]=9 at 0x112, then ProgTraceCorrelation
/// I-CNT=5 (HTM: HIST=0x2). Our BTM encoder produces exactly that (without HIST), and the
/// decoder rebuilds the whole <0x100..0x11C) range from it (from the HTM messages:
/// `tests/cases/spec-icnt-full.case`).
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
    assert_eq!(run_decoder(&img, &bytes), (pcs, vec![]));
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
    assert_eq!(run_decoder(&img, &bytes), (pcs, vec![]));
}
