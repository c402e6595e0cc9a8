//! NexRv-made streams of our own test programs (`tests/vectors/nexrv`, made as its README says):
//! `--preset nexrv` reproduces each byte for byte from the same PCSEQ, and our decoder decodes
//! each to exactly the PCSEQ's PC list. The programs exercise what the conformance set does not:
//! NexRv's 28/30-branch HIST patterns with `-rpt 2` (fnptr, recurse), its call-stack ring after
//! more than 8 nested calls (every `-cs 8` stream: picolibc's `jal t0` millicode calls push
//! without a matching pop), returns that do not go back to their calls (setjmp), NexRv's end of
//! trace after a taken branch, a full HIST, a return and an indirect jump (cut traces), and an
//! I-CNT beyond 22 bits (a synthetic PCSEQ). The vectors are committed, so nothing here is skipped.

use rvtrace_flow::{FlowElement, PcWriter};
use rvtrace_image::Image;
use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode};
use rvtrace_testkit::{assert_pcs_eq, parse_pcs, read_maybe_gz};
use std::path::PathBuf;

/// The five NexRv configurations: name, mode, `-rpt 2`, `-cs 8`.
const CONFIGS: [(&str, Mode, bool, bool); 5] = [
    ("btm", Mode::Btm, false, false),
    ("htm", Mode::Htm, false, false),
    ("htm-rpt2", Mode::Htm, true, false),
    ("htm-cs8", Mode::Htm, false, true),
    ("htm-cs8-rpt2", Mode::Htm, true, true),
];

/// Programs and the configurations kept for each.
const PROGRAMS: [(&str, &[&str]); 3] = [
    (
        "fnptr-rv64gc",
        &["btm", "htm", "htm-rpt2", "htm-cs8", "htm-cs8-rpt2"],
    ),
    (
        "setjmp-rv64gc",
        &["btm", "htm", "htm-rpt2", "htm-cs8", "htm-cs8-rpt2"],
    ),
    ("recurse-rv32imac", &["htm-rpt2", "htm-cs8", "htm-cs8-rpt2"]),
];

/// Where fnptr-rv64gc's PCSEQ is cut for the end-of-trace vectors: after a taken branch, a branch
/// that fills HIST, a return, an indirect jump.
const CUTS: [usize; 4] = [3003, 4067, 6468, 6484];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/nexrv")
}

fn read(name: &str) -> Vec<u8> {
    read_maybe_gz(&dir().join(name))
}

fn xlen(prog: &str) -> Xlen {
    if prog.contains("rv32") {
        Xlen::Rv32
    } else {
        Xlen::Rv64
    }
}

fn config(xlen: Xlen, cfg: &str) -> EncoderConfig {
    let &(_, mode, rpt, cs) = CONFIGS.iter().find(|c| c.0 == cfg).unwrap();
    let mut c = EncoderConfig::new(xlen).nexrv();
    c.mode = mode;
    c.repeat_history = rpt;
    if cs {
        c.call_stack = CallStack::Full { depth: 8 };
    }
    c
}

fn pcseq(prog: &str) -> Vec<Record> {
    PcseqReader::new(&read(&format!("{prog}-PCSEQ.txt.gz"))[..])
        .collect::<Result<_, _>>()
        .unwrap()
}

fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

fn check_bytes(name: &str, got: &[u8], want: &[u8], failures: &mut Vec<String>) {
    if let Some(i) = first_diff(got, want) {
        failures.push(format!(
            "{name}: {} bytes, NexRv {}; first difference at byte {i}",
            got.len(),
            want.len()
        ));
    }
}

#[test]
fn preset_reproduces_nexrv_streams_of_test_programs() {
    let mut failures = Vec::new();
    let mut n = 0;
    for (prog, cfgs) in PROGRAMS {
        let recs = pcseq(prog);
        for &cfg in cfgs {
            let (got, _) = encode(config(xlen(prog), cfg), &recs);
            check_bytes(
                &format!("{prog}-{cfg}"),
                &got,
                &read(&format!("{prog}-{cfg}.bin")),
                &mut failures,
            );
            n += 1;
        }
    }
    assert_eq!(n, 13);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn preset_ends_traces_as_nexrv_does() {
    let prog = "fnptr-rv64gc";
    let recs = pcseq(prog);
    let mut failures = Vec::new();
    for k in CUTS {
        for (cfg, ..) in CONFIGS {
            let (got, _) = encode(config(xlen(prog), cfg), &recs[..k]);
            check_bytes(
                &format!("{prog}-cut{k}-{cfg}"),
                &got,
                &read(&format!("{prog}-cut{k}-{cfg}.bin")),
                &mut failures,
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// NexRv's I-CNT is an `unsigned int` it never checks: 4,400,004 half-words in one message, no
/// ResourceFull RCODE 0 (N-Trace's 22-bit NTRACE_MAX_ICNT is not applied).
#[test]
fn preset_icnt_has_no_limit() {
    let rec = |iaddr: u64, itype: Itype, ilastsize: u8| Record {
        iaddr,
        iretire: 1 << ilastsize,
        ilastsize,
        itype,
        ..Record::default()
    };
    let mut recs: Vec<Record> = (0..2_200_000u64)
        .map(|i| rec(0x8000_0000 + 4 * i, Itype::None, 1))
        .collect();
    recs.push(rec(0x8000_0000 + 4 * 2_200_000, Itype::TakenBranch, 1));
    recs.push(rec(0x8000_0000, Itype::UninferableJump, 1));
    recs.push(rec(0x8000_0000, Itype::None, 0));
    let mut failures = Vec::new();
    for cfg in ["btm", "htm"] {
        let (got, _) = encode(config(Xlen::Rv64, cfg), &recs);
        check_bytes(
            &format!("long-{cfg}"),
            &got,
            &read(&format!("long-{cfg}.bin")),
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn nexrv_streams_of_test_programs_decode() {
    for (prog, cfgs) in PROGRAMS {
        let want: Vec<u64> = pcseq(prog).iter().map(|r| r.iaddr).collect();
        let mut image = Image::new();
        let xlen = image
            .load_file(&dir().join(format!("{prog}.elf")))
            .unwrap()
            .xlen;
        for &cfg in cfgs {
            let name = format!("{prog}-{cfg}.bin");
            let dcfg = DecoderConfig::new(IsaConfig::new(xlen));
            let mut elements: Vec<FlowElement> = Vec::new();
            let st = decode(&image, dcfg, &read(&name), &mut elements);
            let losses: Vec<_> = elements
                .iter()
                .filter(|e| matches!(e, FlowElement::Loss { .. }))
                .collect();
            assert!(losses.is_empty(), "{name}: {losses:?}");
            assert_eq!(st.errors, 0, "{name}");
            let mut w = PcWriter::new(&image, Vec::new());
            for e in &elements {
                rvtrace_flow::FlowSink::element(&mut w, e);
            }
            let got = parse_pcs(&w.finish().unwrap());
            assert_pcs_eq(&name, "decoded", &got, "PCSEQ", &want);
        }
    }
}
