//! Producer and checker speed in instructions per second, on the benchmark workload
//! (`programs/bench/workload.c`): the producer writes the tandem trace of its first
//! `RVTRACE_TANDEM_BENCH_INSNS` (default 20 million) instructions to `io::sink()` (best of 3:
//! the producer's own speed), then to memory, and the checker verifies that trace against a
//! fresh hart. Run: `cargo bench -p rvtrace-tandem`. `RVTRACE_PRODUCE_ROUNDS=0` leaves out the
//! producer's own timing (to profile the checker alone). Does nothing unless
//! `--bench` is among the arguments (so `cargo test` skips it).

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart};
use rvtrace_tandem::checker::{CheckOptions, Checker};
use rvtrace_tandem::producer::{default_params, Producer, ProducerOptions};
use rvtrace_tandem::Elements;
use rvtrace_testkit::bench::figure;
use std::path::Path;
use std::time::Instant;

/// A hart at the start of `elf`, with the image.
fn hart(elf: &str) -> (Hart, Image) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../programs/bench")
        .join(elf);
    let mut image = Image::new();
    let xlen = image.load_file(&path).unwrap().xlen;
    let mut h = Hart::new(&Config::virt(xlen));
    h.load(&image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut h, &image, elf);
    (h, image)
}

fn bench(elf: &str, insns: u64) {
    let (mut h, image) = hart(elf);
    let xlen = h.xlen;
    let params = default_params(&h);
    let opts = ProducerOptions {
        params,
        absent: Elements::NONE,
    };
    // The producer's speed: the run writing its trace to `io::sink()` (the figure is the
    // producer's, not the memory's or the disk's; `rvtrace run --tandem /dev/null` alike).
    // Best of 3 runs (`RVTRACE_PRODUCE_ROUNDS`).
    let mut produce_s = f64::MAX;
    let rounds = std::env::var("RVTRACE_PRODUCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for _ in 0..rounds {
        let (mut h, image) = hart(elf);
        let t = Instant::now();
        let mut p = Producer::new(&h, &image, opts, std::io::sink());
        h.run(&mut p, insns);
        p.finish().unwrap();
        produce_s = produce_s.min(t.elapsed().as_secs_f64());
    }
    // The trace the checker verifies, in memory.
    let mut p = Producer::new(&h, &image, opts, Vec::with_capacity(1 << 30));
    h.run(&mut p, insns);
    let trace = p.finish().unwrap();
    let produced = h.instret;

    let cfg = Config::virt(xlen);
    let mut r = Hart::new(&cfg);
    r.load(&image).unwrap();
    let mut c = Checker::new(r, &image, CheckOptions::new(params, Elements::NONE));
    let t = Instant::now();
    let mut mismatches = 0;
    let s = c.check(&trace[..], &mut |_| mismatches += 1).unwrap();
    let check_s = t.elapsed().as_secs_f64();
    assert_eq!(s.mismatches, 0, "{elf}");
    // The run was cut at `insns`: the trace ends where it was stopped.
    assert!(
        matches!(s.end, rvtrace_tandem::checker::TraceEnd::Unfinished { .. }),
        "{elf}: {s}"
    );
    println!(
        "{elf}: {} instructions, trace {:.1} MB ({:.1} bytes/instruction); producer {:.1} M/s; \
         checker {:.2} s = {:.1} M instructions/s",
        produced,
        trace.len() as f64 / 1e6,
        trace.len() as f64 / produced as f64,
        produced as f64 / produce_s / 1e6,
        check_s,
        s.checked as f64 / check_s / 1e6
    );
    let arch = elf.trim_start_matches("workload-").trim_end_matches(".elf");
    if rounds > 0 {
        figure(
            &format!("tandem.{arch}.produce"),
            produced as f64 / produce_s / 1e6,
            "Minsn/s",
        );
    }
    figure(
        &format!("tandem.{arch}.check"),
        s.checked as f64 / check_s / 1e6,
        "Minsn/s",
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = std::env::var("RVTRACE_TANDEM_BENCH_INSNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000_000);
    bench("workload-rv64gc.elf", n);
    bench("workload-rv32imac.elf", n);
}
