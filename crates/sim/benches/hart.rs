//! Hart model speed in retired instructions per second, on the benchmark workload
//! (`programs/bench/workload.c`), with no observer, with the ingress recorder feeding the binary
//! ingress writer (to memory; one record per instruction, and one per block with
//! `--ingress-blocks`'s block records), and with a PC list; and with the counters counting every event
//! (the instrumented loop) with the micro-architecture model off, with its default predictor,
//! and with predictor, 32 KiB L1I/L1D and timing. Run: `cargo bench -p rvtrace-sim --bench hart`.
//! Prints figures; asserts only that the program ran to its successful exit.
//!
//! For callgrind (exact host-instruction counts on a shared machine): `HART_BENCH_MAX=N` stops
//! each run after N instructions, `HART_BENCH_ONLY=text` runs only the measurements whose workload
//! name and label ("workload-rv64gc no observer") contain it, `HART_BENCH_BLOCKS=0` turns pre-decoded blocks off.
//!
//! Spike side by side: the workload on HTIF (`workload-htif-rv64gc.elf`, which Spike runs) on the
//! hart with no observer and on Spike (`rvtrace_testkit::spike()`; skipped with a note when absent),
//! Spike's figure from its process wall time less its start-up (the best of 3 runs of each, the
//! start-up being a run of `programs/htif/htif-exit0-rv64gc.elf`), over the instructions the hart
//! retires on the same ELF (the hart's figure is its best of 3 runs too). Both lines also say the
//! CPU time (Spike's from the shell's `times`, to 10 ms), which the machine's load disturbs less.
//! QEMU's `virt` machine has no HTIF, so QEMU 7.2 TCG runs the semihosting workload instead
//! (`qemu.rv64gc.plain`, measured the same way; skipped with a note when QEMU is absent).

use rvtrace_image::Image;
use rvtrace_ingress::{IngressHeader, IngressWriter, WriterSink};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::uarch::UarchConfig;
use rvtrace_sim::{Config, Hart, Observer, Stop};
use rvtrace_testkit::bench::figure;
use std::process::{Command, Stdio};
use std::time::Instant;

fn hart(image: &Image, name: &str, uarch: &UarchConfig, all_events: bool) -> Hart {
    let xlen = image.files()[0].xlen;
    let mut cfg = Config::virt(xlen);
    cfg.uarch = uarch.clone();
    let mut h = Hart::new(&cfg);
    h.counters.set_count_all(all_events);
    h.set_blocks(std::env::var("HART_BENCH_BLOCKS").map_or(true, |v| v != "0"));
    h.load(image).unwrap();
    // Keep the program's output off the terminal.
    rvtrace_testkit::quiet_semihost(&mut h, image, name);
    h
}

fn measure<O: Observer>(label: &str, image: &Image, name: &str, obs: &mut O) -> f64 {
    measure_with(label, image, name, obs, &UarchConfig::default(), false)
}

/// With the counters counting every event (`run --counters`) and a micro-architecture model.
fn measure_with<O: Observer>(
    label: &str,
    image: &Image,
    name: &str,
    obs: &mut O,
    uarch: &UarchConfig,
    all_events: bool,
) -> f64 {
    if std::env::var("HART_BENCH_ONLY").is_ok_and(|o| !format!("{name} {label}").contains(&o)) {
        return 0.0;
    }
    let max = std::env::var("HART_BENCH_MAX").map_or(u64::MAX, |m| m.parse().unwrap());
    let mut h = hart(image, name, uarch, all_events);
    let t = Instant::now();
    let stop = h.run(obs, max);
    let s = t.elapsed().as_secs_f64();
    if max == u64::MAX {
        assert_eq!(stop, Stop::Exit(0), "{name}");
    }
    let mips = h.instret as f64 / s / 1e6;
    println!(
        "{name:24} {label:28} {:>11} instructions {:>7.3} s {:>8.1} MIPS",
        h.instret, s, mips
    );
    mips
}

struct Count(u64);
impl Observer for Count {
    #[inline(always)]
    fn retire(&mut self, _ev: &rvtrace_sim::Retired) {
        self.0 += 1;
    }
}

/// Whether `HART_BENCH_ONLY` lets the measurement `what` run.
fn selected(what: &str) -> bool {
    std::env::var("HART_BENCH_ONLY").map_or(true, |o| what.contains(&o))
}

/// One run of `cmd` (a shell command; `$0` is the first of `args`) to its successful exit: its
/// wall time and its CPU time (user + system, from the shell's `times`, in clock ticks) in seconds.
fn host_run(cmd: &str, args: &[&std::ffi::OsStr]) -> (f64, f64) {
    let t = Instant::now();
    let o = Command::new("sh")
        .args(["-c", &format!("{cmd} </dev/null >/dev/null || exit; times")])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let s = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{cmd} {args:?}: {:?}", o.status);
    // `times`: the shell's user and system time, then its children's ("0m0.300000s 0m0.020000s").
    let text = String::from_utf8_lossy(&o.stdout);
    let cpu = text
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .map(|t| {
            let (m, sec) = t.trim_end_matches('s').split_once('m').unwrap();
            m.parse::<f64>().unwrap() * 60.0 + sec.parse::<f64>().unwrap()
        })
        .sum();
    (s, cpu)
}

/// The best of 3 runs of the program `elf` and of the trivial program `trivial` under `cmd`
/// (`host_run`; `$1` is the program): the difference is the program's time without the host's
/// start-up. Prints it as `label` and returns the Minsn/s for `instret` instructions.
fn host_figure(
    label: &str,
    cmd: &str,
    host: &[&std::ffi::OsStr],
    elf: &str,
    trivial: &str,
    instret: u64,
) -> f64 {
    let best = |elf: &str| {
        (0..3)
            .map(|_| {
                let mut args = host.to_vec();
                args.push(elf.as_ref());
                host_run(cmd, &args)
            })
            .fold((f64::INFINITY, f64::INFINITY), |a, b| {
                (a.0.min(b.0), a.1.min(b.1))
            })
    };
    let (start, start_cpu) = best(trivial);
    let (total, total_cpu) = best(elf);
    let (s, cpu) = (total - start, total_cpu - start_cpu);
    let mips = instret as f64 / s / 1e6;
    println!(
        "{label:53} {instret:>11} instructions {s:>7.3} s {mips:>8.1} MIPS (process {total:.3} s less start-up {start:.3} s; CPU time {cpu:.2} s: {:.1} MIPS)",
        instret as f64 / cpu / 1e6
    );
    mips
}

/// CPU time of this thread so far in seconds (`/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// The HTIF workload on the hart (no observer) and on Spike: `hart.rv64gc.plain_htif` and
/// `spike.rv64gc.plain`.
fn htif_vs_spike(dir: &str) {
    let name = "workload-htif-rv64gc";
    let elf = format!("{dir}/{name}.elf");
    let mut image = Image::new();
    image.load_file(elf.as_ref()).unwrap();
    let mut instret = 0;
    if selected(&format!("{name} no observer")) {
        let max = std::env::var("HART_BENCH_MAX").map_or(u64::MAX, |m| m.parse().unwrap());
        // The best of 3 runs, as for Spike (the start-up is not timed here).
        let (mut s, mut cpu) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            let mut h = hart(&image, name, &UarchConfig::default(), false);
            h.bus.console = Box::new(std::io::sink());
            let (t, c) = (Instant::now(), thread_cpu());
            let stop = h.run(&mut (), max);
            s = s.min(t.elapsed().as_secs_f64());
            cpu = cpu.min(thread_cpu() - c);
            if max == u64::MAX {
                assert_eq!(stop, Stop::Exit(0), "{name}");
            }
            instret = h.instret;
        }
        let mips = instret as f64 / s / 1e6;
        println!(
            "{name:24} {:28} {instret:>11} instructions {s:>7.3} s {mips:>8.1} MIPS (CPU time {cpu:.3} s: {:.1} MIPS)",
            "no observer",
            instret as f64 / cpu / 1e6
        );
        figure("hart.rv64gc.plain_htif", mips, "Minsn/s");
    }
    if !selected(&format!("{name} spike")) || std::env::var("HART_BENCH_MAX").is_ok() {
        return;
    }
    let spike = match rvtrace_testkit::spike() {
        Ok(p) => p,
        Err(e) => {
            println!("note: {e}; no Spike figure");
            return;
        }
    };
    if instret == 0 {
        let mut h = hart(&image, name, &UarchConfig::default(), false);
        h.bus.console = Box::new(std::io::sink());
        assert_eq!(h.run(&mut (), u64::MAX), Stop::Exit(0), "{name}");
        instret = h.instret;
    }
    let trivial = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../programs/htif/htif-exit0-rv64gc.elf"
    );
    let mips = host_figure(
        &format!("{name:24} spike"),
        "\"$0\" --isa=rv64gc \"$1\"",
        &[spike.as_os_str()],
        &elf,
        trivial,
        instret,
    );
    figure("spike.rv64gc.plain", mips, "Minsn/s");
}

/// QEMU 7.2 TCG (`qemu-system-riscv64` on the `PATH`) on the semihosting workload: its `virt`
/// machine has no HTIF, so not the ELF Spike runs, but the same computation (82.93 M instructions
/// against 82.92 M; the start-up is a run of `programs/elf/fnptr-rv64gc.elf`, 39 k instructions).
/// `qemu.rv64gc.plain`, over the hart's instruction count on that ELF.
fn qemu(dir: &str) {
    let name = "workload-rv64gc";
    if !selected(&format!("{name} qemu")) || std::env::var("HART_BENCH_MAX").is_ok() {
        return;
    }
    let qemu = "qemu-system-riscv64";
    if Command::new(qemu).arg("--version").output().is_err() {
        println!("note: {qemu} not found; no QEMU figure");
        return;
    }
    let elf = format!("{dir}/{name}.elf");
    let mut image = Image::new();
    image.load_file(elf.as_ref()).unwrap();
    let mut h = hart(&image, name, &UarchConfig::default(), false);
    assert_eq!(h.run(&mut (), u64::MAX), Stop::Exit(0), "{name}");
    let trivial = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../programs/elf/fnptr-rv64gc.elf"
    );
    let mips = host_figure(
        &format!("{name:24} qemu 7.2 (semihosting ELF)"),
        "\"$0\" -M virt -cpu rv64,h=false -bios none -nographic -semihosting-config enable=on,target=native -kernel \"$1\"",
        &[qemu.as_ref()],
        &elf,
        trivial,
        h.instret,
    );
    figure("qemu.rv64gc.plain", mips, "Minsn/s");
}

fn main() {
    // `cargo test --all-targets` runs this too (without `--bench`): nothing to measure then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../programs/bench");
    htif_vs_spike(dir);
    qemu(dir);
    for name in ["workload-rv64gc", "workload-rv32imac"] {
        let mut image = Image::new();
        image
            .load_file(format!("{dir}/{name}.elf").as_ref())
            .unwrap();
        let xlen = image.files()[0].xlen;
        let arch = name.trim_start_matches("workload-");
        let mips = measure("no observer", &image, name, &mut ());
        figure(&format!("hart.{arch}.plain"), mips, "Minsn/s");
        measure("retire counter", &image, name, &mut Count(0));
        let mut u = UarchConfig::default();
        u.set_bpred("off").unwrap();
        measure_with("counters, model off", &image, name, &mut (), &u, true);
        let u = UarchConfig::default();
        measure_with("counters + predictor", &image, name, &mut (), &u, true);
        let mut u = UarchConfig::default();
        u.set_cache("l1i:32k:8:64").unwrap();
        u.set_cache("l1d:32k:8:64").unwrap();
        u.set_timing("on").unwrap();
        measure_with(
            "counters + pred/caches/timing",
            &image,
            name,
            &mut (),
            &u,
            true,
        );
        let mut bytes = 0usize;
        let mut block_bytes = 0usize;
        for blocks in [false, true] {
            let mut header = IngressHeader::new(xlen, 4, "bench");
            header.multi_retire = blocks;
            let mut w = IngressWriter::new(Vec::with_capacity(256 << 20), &header).unwrap();
            let isa = IsaConfig::new(xlen);
            // The writer as `rvtrace run --ingress` drives it.
            let mut err = None;
            let sink = WriterSink {
                w: &mut w,
                err: &mut err,
            };
            let mut rec = IngressRecorder::new(isa, 4, sink).block_records(blocks);
            let (label, key) = if blocks {
                ("ingress blocks (to memory)", "ingress_blocks")
            } else {
                ("ingress (binary, to memory)", "ingress")
            };
            let mips = measure(label, &image, name, &mut rec);
            figure(&format!("hart.{arch}.{key}"), mips, "Minsn/s");
            rec.finish();
            assert!(err.is_none(), "{err:?}");
            let n = w.finish().unwrap().len();
            if blocks {
                block_bytes += n;
            } else {
                bytes += n;
            }
        }
        println!("{name:24} ingress size {bytes} bytes, with block records {block_bytes} bytes");
    }
}
