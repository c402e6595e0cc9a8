//! The hand-written E-Trace decoder cases: every `tests/cases/*.case` of protocol `etrace`
//! (format: `crates/ntrace/tests/cases/README.md`), its `te_inst` packets encoded and framed with
//! the crate's own codec (`tests/common/case.rs`) and decoded by the E-Trace decoder. A failure
//! names the file and line.

use crate::common::case as common;

use rvtrace_etrace::config::TraceConfig;
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_flow::FlowElement;
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_testkit::case::{run_all, Case, CaseError, CaseFile};
use std::path::Path;

/// The decoder for a trace made with `cfg` of a hart with `xlen` (the one place the decoder's
/// construction is named).
fn decoder<'a>(image: &'a Image, cfg: &TraceConfig, xlen: Xlen) -> Decoder<'a> {
    Decoder::new(image, DecoderConfig::from_config(cfg, IsaConfig::new(xlen)))
}

/// The case's trace as bytes, decoded; the decoder's counts must be the flow's.
fn run(f: &CaseFile, c: &Case, image: &Image) -> Result<Vec<FlowElement>, CaseError> {
    let cfg = common::config(f, c)?;
    let (_, bytes) = common::trace(f, c, &cfg)?;
    f.decode(c, &mut decoder(image, &cfg, f.xlen), &bytes)
}

#[test]
fn every_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    println!("{} E-Trace cases", run_all(&dir, "etrace", run));
}

/// The harness itself: an unknown field or option, a packet that contradicts its fields, and a
/// wrong expectation fail naming the line.
#[test]
fn a_bad_case_names_its_line() {
    let text = "protocol etrace
0x80000000: 00000013  nop
0x80000004: 00000013  nop
case unknown field
te_inst format=2 address=0x2 branches=1
pcs 0x80000000
case an address where there is none
te_inst format=1 branches=0 branch_map=0 address=0x2
pcs 0x80000000
case qual_status by an unknown name
te_inst format=3 subformat=3 qual_status=ended
pcs 0x80000000
case unknown option
option return-stacks=4
pcs 0x80000000
case a field too wide for the parameters
te_inst format=3 subformat=0 branch=1 privilege=4 address=0x40000000
pcs 0x80000000
case wrong PCs
te_inst format=3 subformat=3 ienable=1
te_inst format=3 subformat=0 branch=1 privilege=3 address=0x40000000
te_inst format=2 address=0x2
te_inst format=3 subformat=3 qual_status=ended_rep
pcs 0x80000000 0x80000004 0x80000004
";
    let f = CaseFile::parse("t.case", text).unwrap();
    let image = f.image().unwrap();
    let err = |k: usize| run(&f, &f.cases[k], &image).unwrap_err().to_string();
    assert_eq!(
        err(0),
        "t.case:5: te_inst has no field branches (it has format, subformat, src, tstamp, address, notify, updiscon, irreport, irdepth)"
    );
    assert_eq!(err(1), "t.case:8: address: this packet has no address");
    assert_eq!(
        err(2),
        "t.case:11: qual_status=ended: not a number or one of no_change, ended_rep, trace_lost, ended_ntr"
    );
    assert_eq!(err(3), "t.case:14: no E-Trace option return-stacks");
    assert_eq!(
        err(4),
        "t.case:17: F3S0: value 0x4 does not fit field privilege"
    );
    let c = &f.cases[5];
    let e = f
        .check(c, &image, &run(&f, c, &image).unwrap())
        .unwrap_err();
    assert_eq!(e.line, 24, "{e}");
    assert!(
        e.msg
            .starts_with("PC 2: expected 0x80000004, decoded nothing (3 PCs expected, 2 decoded)"),
        "{e}"
    );
}
