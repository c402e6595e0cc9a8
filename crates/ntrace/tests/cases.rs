//! The hand-written N-Trace decoder cases: every `tests/cases/*.case` of protocol `ntrace`
//! (format: `tests/cases/README.md`), its messages encoded with the crate's own codec
//! (`Message::encode`) and decoded by the N-Trace decoder. A failure names the file and line.

use rvtrace_flow::FlowElement;
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::codec::{Addr, Body, Message};
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::options::Spec;
use rvtrace_testkit::case::{run_all, Case, CaseError, CaseFile, Fields, TraceLine};
use std::path::Path;

/// The decoder settings of the case's `option` lines (the file's, then its own).
fn config(f: &CaseFile, c: &Case) -> Result<DecoderConfig, CaseError> {
    let mut cfg = DecoderConfig::new(IsaConfig::new(f.xlen));
    for o in f.options_of(c) {
        if o.name == "spec" {
            let bad = || f.error(o.line, format!("option spec={}: not 1.0 or rc7", o.value));
            cfg.spec = Spec::from_name(&o.value).ok_or_else(bad)?;
            continue;
        }
        let v = o.number(f)?;
        match o.name.as_str() {
            "src-bits" => cfg.codec.src_bits = v as u8,
            "src" => cfg.src = Some(v as u16),
            "max-icnt" => cfg.max_icnt = v,
            "max-repeat" => cfg.max_repeat = v,
            "all-jumps" => cfg.all_jumps = v != 0,
            "extend-addr-msb" => cfg.extend_addr_msb = v != 0,
            name => return Err(f.error(o.line, format!("no N-Trace option {name}"))),
        }
    }
    cfg.validate().map_err(|e| f.error(0, e.to_string()))?;
    Ok(cfg)
}

/// The message of a trace line `NAME field=value ...` (N-Trace 7: the message types and their
/// fields, named as in the specification without the hyphen: I-CNT is `icnt`, U-ADDR `uaddr`);
/// every message also takes `src` and `tstamp`.
fn message(
    f: &CaseFile,
    line: usize,
    name: &str,
    w: &[(String, String)],
) -> Result<Message, CaseError> {
    let known: &[&str] = match name {
        "Ownership" => &["process"],
        "DirectBranch" => &["icnt"],
        "IndirectBranch" => &["btype", "icnt", "uaddr"],
        "Error" => &["etype", "ecode"],
        "ProgTraceSync" | "DirectBranchSync" => &["sync", "icnt", "faddr"],
        "IndirectBranchSync" => &["sync", "btype", "icnt", "faddr"],
        "ResourceFull" => &["rcode", "rdata0", "rdata1"],
        "IndirectBranchHist" => &["btype", "icnt", "uaddr", "hist"],
        "IndirectBranchHistSync" => &["sync", "btype", "icnt", "faddr", "hist"],
        "RepeatBranch" => &["bcnt"],
        "ProgTraceCorrelation" => &["evcode", "cdf", "icnt", "hist"],
        "Other" => &["tcode"],
        _ => return Err(f.error(line, format!("{name}: not an N-Trace message"))),
    };
    let mut all = known.to_vec();
    all.extend(["src", "tstamp"]);
    let x = Fields::new(f, line, name, w, &all, &[])?;
    let addr = |k| Addr::plain(x.get(k));
    let body = match name {
        "Ownership" => Body::Ownership {
            process: x.get("process"),
        },
        "DirectBranch" => Body::DirectBranch {
            icnt: x.get("icnt"),
        },
        "IndirectBranch" => Body::IndirectBranch {
            btype: x.bits("btype", 2)? as u8,
            icnt: x.get("icnt"),
            uaddr: addr("uaddr"),
        },
        "Error" => Body::Error {
            etype: x.bits("etype", 4)? as u8,
            ecode: x.get("ecode"),
        },
        "ProgTraceSync" => Body::ProgTraceSync {
            sync: x.bits("sync", 4)? as u8,
            icnt: x.get("icnt"),
            faddr: addr("faddr"),
        },
        "DirectBranchSync" => Body::DirectBranchSync {
            sync: x.bits("sync", 4)? as u8,
            icnt: x.get("icnt"),
            faddr: addr("faddr"),
        },
        "IndirectBranchSync" => Body::IndirectBranchSync {
            sync: x.bits("sync", 4)? as u8,
            btype: x.bits("btype", 2)? as u8,
            icnt: x.get("icnt"),
            faddr: addr("faddr"),
        },
        "ResourceFull" => Body::ResourceFull {
            rcode: x.bits("rcode", 4)? as u8,
            rdata0: x.get("rdata0"),
            rdata1: x.opt("rdata1"),
        },
        "IndirectBranchHist" => Body::IndirectBranchHist {
            btype: x.bits("btype", 2)? as u8,
            icnt: x.get("icnt"),
            uaddr: addr("uaddr"),
            hist: x.get("hist"),
        },
        "IndirectBranchHistSync" => Body::IndirectBranchHistSync {
            sync: x.bits("sync", 4)? as u8,
            btype: x.bits("btype", 2)? as u8,
            icnt: x.get("icnt"),
            faddr: addr("faddr"),
            hist: x.get("hist"),
        },
        "RepeatBranch" => Body::RepeatBranch {
            bcnt: x.get("bcnt"),
        },
        "ProgTraceCorrelation" => Body::ProgTraceCorrelation {
            evcode: x.bits("evcode", 4)? as u8,
            cdf: x.bits("cdf", 2)? as u8,
            icnt: x.get("icnt"),
            hist: x.opt("hist"),
        },
        _ => Body::Other {
            tcode: x.bits("tcode", 6)? as u8,
        },
    };
    Ok(Message {
        src: x.get("src") as u16,
        body,
        tstamp: x.opt("tstamp"),
    })
}

/// The case's trace as bytes, decoded; the decoder's counts must be the flow's.
fn run(f: &CaseFile, c: &Case, image: &Image) -> Result<Vec<FlowElement>, CaseError> {
    let cfg = config(f, c)?;
    let mut bytes = Vec::new();
    for t in &c.trace {
        match t {
            TraceLine::Record { line, name, fields } => {
                bytes.extend_from_slice(&message(f, *line, name, fields)?.encode(&cfg.codec))
            }
            TraceLine::Bytes { bytes: b, .. } => bytes.extend_from_slice(b),
        }
    }
    f.decode(c, &mut Decoder::new(image, cfg), &bytes)
}

#[test]
fn every_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    println!("{} N-Trace cases", run_all(&dir, "ntrace", run));
}

/// The harness itself: an unknown message or field, and a wrong expectation, fail naming the
/// line.
#[test]
fn a_bad_case_names_its_line() {
    let text = "protocol ntrace
0x100: 0000006f  j 100
case unknown field
ProgTraceSync sync=3 faddr=0x80 hist=1
pcs 0x100
case wrong PCs
ProgTraceSync sync=3 faddr=0x80
ProgTraceCorrelation evcode=0 cdf=0 icnt=4
pcs 0x100 0x100 0x100
";
    let f = CaseFile::parse("t.case", text).unwrap();
    let image = f.image().unwrap();
    let e = run(&f, &f.cases[0], &image).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.case:4: ProgTraceSync has no field hist (it has sync, icnt, faddr, src, tstamp)"
    );
    let c = &f.cases[1];
    let e = f
        .check(c, &image, &run(&f, c, &image).unwrap())
        .unwrap_err();
    assert_eq!(e.line, 9, "{e}");
    assert!(
        e.msg
            .starts_with("PC 2: expected 0x100, decoded nothing (3 PCs expected, 2 decoded)"),
        "{e}"
    );
}
