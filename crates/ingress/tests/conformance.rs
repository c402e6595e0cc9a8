//! The ingress formats against the real conformance vectors (`shared/conformance`, see its README).

use crate::common;

use std::time::Instant;

use common::{encoder_input, pcseq, read_vector, Rng, ETRACE_CONFIGS};
use rvtrace_ingress::binary::{from_slice, to_vec};
use rvtrace_ingress::etrace_csv::{CsvColumns, EtraceCsvReader, EtraceCsvWriter};
use rvtrace_ingress::pcseq::{PcseqReader, PcseqWriter};
use rvtrace_ingress::text::TextReader;
use rvtrace_ingress::{
    dump, privilege, IngressError, IngressHeader, IngressReader, IngressWriter, Itype, Record, Xlen,
};
use rvtrace_testkit::PROGRAMS;

fn read_csv(bytes: &[u8]) -> Vec<Record> {
    let r = EtraceCsvReader::new(bytes).unwrap();
    assert_eq!(r.columns(), CsvColumns::default());
    r.collect::<Result<_, _>>().unwrap()
}

fn write_csv(recs: &[Record]) -> Vec<u8> {
    let mut w = EtraceCsvWriter::new(Vec::new(), CsvColumns::default()).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
    w.finish().unwrap()
}

fn header_for(prog: &str, cfg: &str) -> IngressHeader {
    let xlen = if prog.contains("rv32") {
        Xlen::Rv32
    } else {
        Xlen::Rv64
    };
    let width = if cfg.starts_with("itype3") { 3 } else { 4 };
    let mut h = IngressHeader::new(
        xlen,
        width,
        format!("conformance {prog} {cfg} encoder_input"),
    );
    h.has_context = true;
    h
}

/// Every `encoder_input`: full read, record count (= `wc -l` minus the header line), CSV -> Record ->
/// CSV byte-identical, CSV -> binary -> Record equal.
#[test]
fn etrace_csv_all_files_round_trip() {
    if !common::have_vectors() {
        return;
    }
    for (prog, n) in PROGRAMS {
        for cfg in ETRACE_CONFIGS {
            let rel = encoder_input(prog, cfg);
            let bytes = read_vector(&rel);
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            let recs = read_csv(&bytes);
            assert_eq!(recs.len(), lines - 1, "{rel}");
            assert_eq!(recs.len(), n, "{rel}");
            assert!(write_csv(&recs) == bytes, "{rel}: CSV round trip differs");
            let bin = to_vec(&header_for(prog, cfg), &recs).unwrap();
            let (h, back) = from_slice(&bin).unwrap();
            assert_eq!(h, header_for(prog, cfg));
            assert!(back == recs, "{rel}: binary round trip differs");
            // Single retirement: every row retires one instruction; 16-bit iff ilastsize 0.
            assert!(recs.iter().all(|r| r.is_single_instruction()), "{rel}");
            eprintln!(
                "{rel}: {} records, binary {} bytes = {:.3} bytes/instruction",
                recs.len(),
                bin.len(),
                bin.len() as f64 / recs.len() as f64
            );
        }
    }
}

/// Known lines of `crc-rv64gc/itype4_basic` (line numbers as in `zcat | sed -n`).
#[test]
fn etrace_csv_spot_checks() {
    if !common::have_vectors() {
        return;
    }
    let recs = read_csv(&read_vector(&encoder_input("crc-rv64gc", "itype4_basic")));
    let line = |n: usize| recs[n - 2]; // line 1 is the header
    let m = privilege::M;
    // 0,0,0,3,80000000,0,0,1,1
    assert_eq!(
        line(2),
        Record {
            iaddr: 0x8000_0000,
            iretire: 2,
            ilastsize: 1,
            priv_: m,
            ..Record::default()
        }
    );
    // 0,0,0,3,80000014,0,0,1,0 (16-bit: one instruction = 1 half-word)
    assert_eq!(
        line(7),
        Record {
            iaddr: 0x8000_0014,
            iretire: 1,
            ilastsize: 0,
            priv_: m,
            ..Record::default()
        }
    );
    // 11,0,0,3,80000032,0,0,1,1 then 9,0,0,3,80000038,0,0,1,1 then 0,...,800003a2
    assert_eq!(line(15).itype, Itype::InferableJump);
    assert_eq!(line(16).itype, Itype::InferableCall);
    assert_eq!(line(17).iaddr, 0x8000_03a2);
    // 13,0,0,3,800003a8,0,0,1,0 (return)
    assert_eq!(
        (line(20).itype, line(20).iaddr),
        (Itype::Return, 0x8000_03a8)
    );
    // Trap convention: the semihosting ebreak retires and traps (1,3,0,3,80001914,0,0,1,1);
    // the next row is the instruction at ebreak+4.
    let trap = line(18763);
    assert_eq!(
        trap,
        Record {
            iaddr: 0x8000_1914,
            iretire: 2,
            ilastsize: 1,
            itype: Itype::Exception,
            cause: 3,
            priv_: m,
            ..Record::default()
        }
    );
    assert_eq!(line(18764).iaddr, trap.next_iaddr());
    assert_eq!(recs.iter().filter(|r| r.is_trap()).count(), 27);
    // Last line: 0,0,0,3,80001914,0,0,1,1 (the final SYS_EXIT ebreak is a plain row).
    assert_eq!(recs.last().unwrap().iaddr, 0x8000_1914);
    assert_eq!(recs.last().unwrap().itype, Itype::None);
}

/// Every PCSEQ: full read, count, byte-identical write-back, branch semantics, and the same PC
/// sequence and instruction sizes as the E-Trace `encoder_input` of the same program.
#[test]
fn pcseq_all_files() {
    if !common::have_vectors() {
        return;
    }
    for (prog, n) in PROGRAMS {
        let rel = pcseq(prog);
        let bytes = read_vector(&rel);
        let recs: Vec<Record> = PcseqReader::new(&bytes[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), n, "{rel}");
        let mut w = PcseqWriter::new(Vec::new());
        for r in &recs {
            w.write(r).unwrap();
        }
        assert!(
            w.finish().unwrap() == bytes,
            "{rel}: PCSEQ round trip differs"
        );
        for pair in recs.windows(2) {
            let sequential = pair[1].iaddr == pair[0].next_iaddr();
            match pair[0].itype {
                Itype::TakenBranch => assert!(!sequential, "{rel}: B at {:#x}", pair[0].iaddr),
                Itype::NonTakenBranch => assert!(sequential, "{rel}: BN at {:#x}", pair[0].iaddr),
                _ => {}
            }
        }
        let et = read_csv(&read_vector(&encoder_input(prog, "itype4_basic")));
        assert_eq!(et.len(), recs.len());
        for (i, (a, b)) in recs.iter().zip(&et).enumerate() {
            assert_eq!(
                (a.iaddr, a.iretire, a.ilastsize, a.priv_),
                (b.iaddr, b.iretire, b.ilastsize, b.priv_),
                "{prog} record {i}"
            );
            // Branch outcomes are unambiguous, so both tools agree on them.
            let is_branch =
                |r: &Record| matches!(r.itype, Itype::TakenBranch | Itype::NonTakenBranch);
            if is_branch(a) || is_branch(b) {
                assert_eq!(a.itype, b.itype, "{prog} record {i} at {:#x}", a.iaddr);
            }
        }
        // A PCSEQ through the binary format.
        let h = IngressHeader::new(Xlen::Rv64, 4, rel.clone());
        assert!(from_slice(&to_vec(&h, &recs).unwrap()).unwrap().1 == recs);
    }
}

/// `dump` of a real trace: summary counts and text that parses back to the same records.
#[test]
fn dump_real_trace() {
    if !common::have_vectors() {
        return;
    }
    let recs = read_csv(&read_vector(&encoder_input("crc-rv64gc", "itype4_basic")));
    let bin = to_vec(&header_for("crc-rv64gc", "itype4_basic"), &recs).unwrap();
    let mut out = Vec::new();
    let sum = dump(&bin[..], &mut out).unwrap();
    assert_eq!(
        (sum.records, sum.instructions, sum.traps),
        (398_964, 398_964, 27)
    );
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "# rvtrace ingress v1: xlen=64 itype_width=4 signals=context"
    );
    assert!(text.contains("\n0x80000000 +4 priv=M\n0x80000004 +4 priv=M\n"));
    assert!(
        text.contains("\n0x80001914 +4 itype=1 cause=3 tval=0x0 priv=M\n0x80001918 +4 priv=M\n")
    );
    let back: Vec<Record> = TextReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(back == recs);
}

/// Every truncation of a real binary file (the first 50000 records of matrix-rv32imac, one block:
/// cuts past a first block re-decode it each time, which `roundtrip.rs` covers with sampled cuts) is a
/// `Truncated` error with an offset inside the prefix, and flipped bytes are always detected.
#[test]
fn real_file_every_truncation_and_byte_flips() {
    if !common::have_vectors() {
        return;
    }
    let mut recs = read_csv(&read_vector(&encoder_input(
        "matrix-rv32imac",
        "itype4_basic",
    )));
    recs.truncate(50_000);
    let bin = to_vec(&header_for("matrix-rv32imac", "itype4_basic"), &recs).unwrap();
    assert!(bin.len() < 65536, "want one block: {}", bin.len());
    let mut out = Vec::new();
    for cut in 0..bin.len() {
        let res = IngressReader::new(&bin[..cut]).and_then(|mut r| {
            out.clear();
            while r.read_batch(&mut out, 1 << 20)? > 0 {}
            Ok(())
        });
        match res {
            Err(e @ IngressError::Truncated { .. }) => {
                assert!(e.offset().unwrap() <= cut as u64, "cut {cut}: {e}")
            }
            other => panic!("cut {cut}: expected Truncated, got {other:?}"),
        }
    }
    let mut rng = Rng(2024);
    let mut data = bin.clone();
    for _ in 0..500 {
        let pos = rng.below(bin.len() as u64) as usize;
        let flip = 1 + rng.below(255) as u8;
        data[pos] ^= flip;
        let res = IngressReader::new(&data[..]).and_then(|mut r| r.read_to_end());
        let e = res.expect_err("corruption not detected");
        if let Some(off) = e.offset() {
            assert!(off <= bin.len() as u64);
        }
        data[pos] ^= flip;
    }
}

/// Rough read/write speed on a real trace (release mode: `cargo test --release -p rvtrace-ingress
/// --test integration -- --ignored --nocapture speed`). Prints numbers; asserts nothing about time.
#[test]
#[ignore]
fn speed() {
    if !common::have_vectors() {
        return;
    }
    let recs = read_csv(&read_vector(&encoder_input("crc-rv64gc", "itype4_basic")));
    let h = header_for("crc-rv64gc", "itype4_basic");
    let reps = 25;
    let t = Instant::now();
    let mut bin = Vec::new();
    for _ in 0..reps {
        let mut w = IngressWriter::new(Vec::with_capacity(1 << 20), &h).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        bin = w.finish().unwrap();
    }
    let n = (recs.len() * reps) as f64;
    eprintln!(
        "write:       {:.1} M records/s",
        n / t.elapsed().as_secs_f64() / 1e6
    );
    let t = Instant::now();
    let mut total = 0;
    let mut v = Vec::with_capacity(1 << 16);
    for _ in 0..reps {
        let mut r = IngressReader::new(&bin[..]).unwrap();
        loop {
            v.clear();
            let k = r.read_batch(&mut v, 1 << 16).unwrap();
            if k == 0 {
                break;
            }
            total += k;
        }
    }
    assert_eq!(total, recs.len() * reps);
    eprintln!(
        "read_batch:  {:.1} M records/s",
        n / t.elapsed().as_secs_f64() / 1e6
    );
    let t = Instant::now();
    let mut sum = 0u64;
    for _ in 0..reps {
        let mut r = IngressReader::new(&bin[..]).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            sum = sum.wrapping_add(rec.iaddr);
        }
    }
    eprintln!(
        "next_record: {:.1} M records/s ({sum:x})",
        n / t.elapsed().as_secs_f64() / 1e6
    );
    eprintln!(
        "size: {} bytes for {} records = {:.3} bytes/instruction",
        bin.len(),
        recs.len(),
        bin.len() as f64 / recs.len() as f64
    );
}
