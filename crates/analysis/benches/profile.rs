//! Decoding into a profile (`rvtrace profile`'s work without the report): the benchmark workload
//! (`programs/bench/workload.c`, run on the hart model) encoded as N-Trace (HTM, default options)
//! and E-Trace (default options), each decoded into a [`Profiler`] and its profile built, in
//! instructions per second, best of 5; and `rvtrace text`'s work (a line per instruction) from
//! that N-Trace and from the hart's ingress records with their time (issue 29: the two must be
//! alike). Does nothing unless run with `--bench` (`cargo bench -p rvtrace-analysis --bench
//! profile`). Asserts that the profile counts every instruction the hart retired.

use rvtrace_analysis::profile::Profiler;
use rvtrace_analysis::symbols::Symbols;
use rvtrace_analysis::text::TextTrace;
use rvtrace_etrace::code::Code;
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::{Encoder as TeEncoder, FrameWriter};
use rvtrace_flow::FlowSink;
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

    // The text trace, from the N-Trace and from the ingress records (with a time element per
    // range, as `run --ingress` files have).
    let text = |feed: &dyn Fn(&mut dyn FlowSink)| {
        best_of(3, || {
            let mut t = TextTrace::new(&run.image, &syms, isa, std::io::BufWriter::new(Counter(0)));
            feed(&mut t);
            t.finish().unwrap().into_inner().unwrap().0
        })
    };
    let (s_nex, bytes) = text(&|sink| {
        let mut dec = Decoder::new(&run.image, dcfg);
        dec.push(&nex, sink);
        dec.finish(sink);
    });
    assert!(
        bytes > 20 * n,
        "N-Trace text: {bytes} bytes for {n} instructions"
    );
    let (s_ing, bytes) = text(&|sink| {
        let mut a = rvtrace_decode::ingress::IngressFlow::new(&run.image, isa, true);
        for r in &run.records {
            a.push(r, sink).unwrap();
        }
        a.finish(sink);
        assert_eq!(a.stats.instructions, n);
    });
    assert!(
        bytes > 20 * n,
        "ingress text: {bytes} bytes for {n} instructions"
    );
    for (what, key, s) in [
        ("N-Trace", "ntrace.rv64gc.text", s_nex),
        ("ingress", "ingress.rv64gc.text", s_ing),
    ] {
        println!(
            "workload-rv64gc {what} into the text trace {:>7.1} M instr/s",
            n as f64 / s / 1e6
        );
        figure(key, n as f64 / s / 1e6, "Minsn/s");
    }

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

/// A writer that counts the bytes written to it.
#[derive(Debug)]
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
