//! Decoding into a profile (`rvtrace profile`'s work without the report): the benchmark workload
//! (`programs/bench/workload.c`, run on the hart model) encoded as N-Trace (HTM, default options)
//! and E-Trace (default options), each decoded into a [`Profiler`] and its profile built, in
//! instructions per second, best of 5. Does nothing unless run with `--bench`
//! (`cargo bench -p rvtrace-analysis --bench profile`). Asserts that the profile counts every
//! instruction the hart retired.

use rvtrace_analysis::profile::Profiler;
use rvtrace_analysis::symbols::Symbols;
use rvtrace_etrace::code::Code;
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::{Encoder as TeEncoder, FrameWriter};
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::options::EncoderConfig;
use rvtrace_testkit::bench::{best_of, figure};
use std::path::Path;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let elf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/bench/workload-rv64gc.elf");
    let run = rvtrace_testkit::run_program(&elf, "bench/workload-rv64gc.elf", 4);
    let syms = Symbols::load(&elf).unwrap();
    let xlen = run.image.files()[0].xlen;
    let isa = IsaConfig::new(xlen);
    let n = run.pcs.len() as u64;

    // N-Trace, HTM with the default options.
    let cfg = EncoderConfig::new(xlen);
    let mut nex = Vec::with_capacity(1 << 22);
    let mut enc = Encoder::new(cfg);
    for r in &run.records {
        enc.push(r, &mut nex);
    }
    enc.finish(&mut nex);
    let mut dcfg = DecoderConfig::new(isa);
    dcfg.codec = cfg.codec;
    let (s, insns) = best_of(5, || {
        let mut p = Profiler::new(&run.image, &syms, isa);
        let mut dec = Decoder::new(&run.image, dcfg);
        dec.push(&nex, &mut p);
        dec.finish(&mut p);
        p.profile().total().insns
    });
    assert_eq!(insns, n, "N-Trace profile");
    println!(
        "workload-rv64gc N-Trace decode into a profile {:>7.1} M instr/s",
        n as f64 / s / 1e6
    );
    figure(
        "ntrace.rv64gc.decode_profile",
        n as f64 / s / 1e6,
        "Minsn/s",
    );

    // E-Trace with the default options.
    let tcfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        ..ConfigInputs::default()
    })
    .unwrap();
    let mut enc =
        TeEncoder::new(&tcfg, FrameWriter::new(Vec::with_capacity(1 << 20), &tcfg)).unwrap();
    for r in &run.records {
        enc.push(r).unwrap();
    }
    let te = enc.finish().unwrap().into_inner();
    let code = Code::new(&run.image, isa);
    let (s, insns) = best_of(5, || {
        let mut p = Profiler::new(&run.image, &syms, isa);
        let o = rvtrace_etrace::decoder::DecoderConfig::from_config(&tcfg, isa);
        let mut dec = rvtrace_etrace::decoder::Decoder::with_code(&run.image, o, code.clone());
        rvtrace_flow::decode_all(&mut dec, &te, &mut p);
        p.profile().total().insns
    });
    assert_eq!(insns, n, "E-Trace profile");
    println!(
        "workload-rv64gc E-Trace decode into a profile {:>7.1} M instr/s",
        n as f64 / s / 1e6
    );
    figure(
        "etrace.rv64gc.decode_profile",
        n as f64 / s / 1e6,
        "Minsn/s",
    );
}
