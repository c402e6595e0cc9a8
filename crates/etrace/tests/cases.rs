//! The hand-written E-Trace decoder cases: every `tests/cases/*.case` of protocol `etrace`
//! (format: `crates/ntrace/tests/cases/README.md`), its `te_inst` packets encoded and framed with
//! the crate's own codec (`tests/common/case.rs`) and decoded by the E-Trace decoder. A failure
//! names the file and line.

#[path = "common/case.rs"]
mod common;

use rvtrace_etrace::config::TraceConfig;
use rvtrace_etrace::decoder::{Decoder, DecoderOptions};
use rvtrace_flow::{decode_all, FlowElement};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_testkit::case::{run_all, Case, CaseError, CaseFile};
use std::path::Path;

/// The decoder for a trace made with `cfg` of a hart with `xlen` (the one place the decoder's
/// construction is named).
fn decoder<'a>(image: &'a Image, cfg: &TraceConfig, xlen: Xlen) -> Decoder<'a> {
    Decoder::with_options(image, DecoderOptions::from_config(cfg, IsaConfig::new(xlen)))
}

/// The case's trace as bytes, decoded; the decoder's count of losses must be the flow's.
fn run(f: &CaseFile, c: &Case, image: &Image) -> Result<Vec<FlowElement>, CaseError> {
    let cfg = common::config(f, c)?;
    let (_, bytes) = common::trace(f, c, &cfg)?;
    let mut el = Vec::new();
    let st = decode_all(&mut decoder(image, &cfg, f.xlen), &bytes, &mut el);
    f.check_loss_count(c, st.losses, &el)?;
    Ok(el)
}

#[test]
fn every_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    println!("{} E-Trace cases", run_all(&dir, "etrace", run));
}
