//! Speed of the micro-architecture model (`rvtrace_sim::uarch`), and what it costs the hart.
//!
//! 1. Calls per second of `Uarch::branch` replaying the control transfers of the benchmark
//!    workload (`programs/bench/workload.c`, RV64GC) and of `Uarch::data` replaying its loads and
//!    stores, then of `data` on synthetic strided sweeps.
//! 2. The hart running the workload with the model driven from an observer (fetch, branch, data,
//!    mul/div on every retired instruction), part by part, in M instructions per second.
//!
//! Run: `cargo bench -p rvtrace-sim --bench uarch [-- branch|data|hart]`. Prints figures (and the model's miss rates);
//! asserts only that the program ran to its successful exit.

use rvtrace_image::Image;
use rvtrace_sim::uarch::{BranchKind, LongOp, Uarch, UarchConfig};
use rvtrace_sim::{Config, Hart, MemAccess, MemKind, Observer, Retired, Stop};
use std::hint::black_box;
use std::time::Instant;

/// Most records kept for the replays.
const KEEP: usize = 4 << 20;

fn hart(image: &Image, name: &str) -> Hart {
    let xlen = image.files()[0].xlen;
    let mut h = Hart::new(&Config::virt(xlen));
    h.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut h, image, name);
    h
}

#[derive(Clone, Copy)]
struct Transfer {
    pc: u64,
    target: u64,
    kind: BranchKind,
    len: u8,
}

/// Records the first [`KEEP`] control transfers and data accesses.
#[derive(Default)]
struct Recorder {
    transfers: Vec<Transfer>,
    data: Vec<(u64, u8, bool)>,
}

impl Observer for Recorder {
    fn retire(&mut self, ev: &Retired) {
        if let Some(kind) = BranchKind::from_class(ev.class) {
            if self.transfers.len() < KEEP {
                self.transfers.push(Transfer {
                    pc: ev.pc,
                    target: ev.next_pc,
                    kind,
                    len: ev.len,
                });
            }
        }
    }
    fn mem_access(&mut self, acc: &MemAccess) {
        if self.data.len() < KEEP {
            self.data
                .push((acc.addr, acc.size, acc.kind == MemKind::Store));
        }
    }
}

/// Drives the model as the hart will: every retired instruction is fetched, every control
/// transfer predicted, every data access looked up.
struct Drive(Uarch);

impl Observer for Drive {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        let u = &mut self.0;
        u.fetch(ev.pc, ev.len);
        if let Some(kind) = BranchKind::from_class(ev.class) {
            let fall = ev.pc.wrapping_add(ev.len.into());
            u.branch(ev.pc, kind, ev.next_pc != fall, ev.next_pc, fall);
        }
        // OP / OP-32 with funct7 = 1: the M extension (funct3 < 4 multiply, else divide).
        let op = ev.insn & 0x7f;
        if (op == 0x33 || op == 0x3b) && ev.insn >> 25 == 1 {
            u.long_op(if (ev.insn >> 12) & 7 < 4 {
                LongOp::Mul
            } else {
                LongOp::Div
            });
        }
        u.take_stalls();
    }
    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.0.data(acc.addr, acc.size, acc.kind == MemKind::Store);
    }
}

fn config(bpred: &str, caches: &[&str], timing: &str) -> UarchConfig {
    let mut c = UarchConfig::default();
    c.set_bpred(bpred).unwrap();
    for s in caches {
        c.set_cache(s).unwrap();
    }
    c.set_timing(timing).unwrap();
    c
}

/// Runs `f` (`n` calls) `reps` times; M calls per second of the fastest run (the machine is
/// shared: the best run is the least disturbed).
fn rate(n: usize, reps: u32, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    n as f64 / best / 1e6
}

fn replay_branches(rec: &Recorder) {
    for spec in ["gshare:4096:12,btb:512,ras:16", "bimodal:2048", "none"] {
        let mut u = Uarch::new(&config(spec, &[], "off"));
        let mut misses = 0u64;
        let r = rate(rec.transfers.len(), 9, || {
            u.reset(); // each run from cold, so the rates below are of one pass
            for t in &rec.transfers {
                let fall = t.pc + u64::from(t.len);
                misses += u.branch(t.pc, t.kind, t.target != fall, t.target, fall) as u64;
            }
        });
        let s = u.stats();
        println!(
            "branch()  {spec:32} {:>6.1} M calls/s   cond mispredict {:5.2}%  jump mispredict {:5.2}%  ({} transfers)",
            r,
            100.0 * s.cond_mispredicts as f64 / s.cond_branches.max(1) as f64,
            100.0 * s.jump_mispredicts as f64 / s.jumps.max(1) as f64,
            rec.transfers.len()
        );
        black_box(misses);
    }
}

fn replay_data(rec: &Recorder) {
    for spec in ["l1d:32k:8:64", "l1d:4k:1:32", "l1d:64k:64:64"] {
        let mut u = Uarch::new(&config("off", &[spec], "off"));
        let r = rate(rec.data.len(), 9, || {
            u.reset();
            for &(a, s, w) in &rec.data {
                black_box(u.data(a, s, w));
            }
        });
        let s = u.stats();
        let (acc, miss) = (
            s.l1d_reads + s.l1d_writes,
            s.l1d_read_misses + s.l1d_write_misses,
        );
        println!(
            "data()    {spec:32} {r:>6.1} M calls/s   miss {:5.2}%  ({} accesses, workload)",
            100.0 * miss as f64 / acc as f64,
            rec.data.len()
        );
    }
    for stride in [8u64, 64, 4096] {
        let spec = "l1d:32k:8:64";
        let mut u = Uarch::new(&config("off", &[spec], "off"));
        let n = 1usize << 22;
        // Over 1 MiB, so the 4 KiB stride keeps missing and the 8-byte one mostly hits.
        let r = rate(n, 9, || {
            u.reset();
            for i in 0..n as u64 {
                black_box(u.data(0x8000_0000 + (i * stride) % (1 << 20), 8, i & 3 == 0));
            }
        });
        let s = u.stats();
        let (acc, miss) = (
            s.l1d_reads + s.l1d_writes,
            s.l1d_read_misses + s.l1d_write_misses,
        );
        println!(
            "data()    {spec:32} {r:>6.1} M calls/s   miss {:5.2}%  (stride {stride})",
            100.0 * miss as f64 / acc as f64
        );
    }
}

fn hart_speed(image: &Image, name: &str) {
    // Best of two runs each (the machine is shared).
    let run = |label: &str, obs: &mut dyn FnMut(&mut Hart) -> Stop| {
        let mut best = f64::MAX;
        for _ in 0..2 {
            let mut h = hart(image, name);
            let t = Instant::now();
            let stop = obs(&mut h);
            let s = t.elapsed().as_secs_f64();
            assert_eq!(stop, Stop::Exit(0), "{name}");
            best = best.min(s / h.instret as f64);
        }
        println!("hart      {name:18} {label:44} {:>6.1} MIPS", 1e-6 / best);
    };
    run("no observer", &mut |h| h.run(&mut (), u64::MAX));
    let l1 = ["l1i:32k:8:64", "l1d:32k:8:64"];
    for (label, c) in [
        ("model all off", config("off", &[], "off")),
        ("bpred (default)", UarchConfig::default()),
        (
            "bpred + L1I + L1D 32k:8:64",
            config("gshare:4096:12,btb:512,ras:16", &l1, "off"),
        ),
        (
            "bpred + L1I + L1D + timing",
            config("gshare:4096:12,btb:512,ras:16", &l1, "on"),
        ),
    ] {
        let mut d = Drive(Uarch::new(&c));
        run(label, &mut |h| {
            d.0.reset();
            h.run(&mut d, u64::MAX)
        });
        let s = d.0.stats();
        println!(
            "          {:64} cond mispredict {}/{}, jump mispredict {}/{}, L1I miss {}/{}, L1D miss {}/{}, stalls {}+{}",
            "",
            s.cond_mispredicts,
            s.cond_branches,
            s.jump_mispredicts,
            s.jumps,
            s.l1i_misses,
            s.l1i_accesses,
            s.l1d_read_misses + s.l1d_write_misses,
            s.l1d_reads + s.l1d_writes,
            s.stalls.frontend,
            s.stalls.backend
        );
    }
}

fn main() {
    // `cargo test --all-targets` runs this too (without `--bench`): nothing to measure then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../programs/bench");
    let name = "workload-rv64gc";
    let mut image = Image::new();
    image
        .load_file(format!("{dir}/{name}.elf").as_ref())
        .unwrap();
    // `-- branch`, `-- data`, `-- hart`: only those parts.
    let parts = ["branch", "data", "hart"];
    let chosen: Vec<String> = std::env::args().filter(|a| parts.contains(&&**a)).collect();
    let run = |p: &str| chosen.is_empty() || chosen.iter().any(|c| c == p);
    if run("branch") || run("data") {
        let mut rec = Recorder::default();
        let mut h = hart(&image, name);
        assert_eq!(h.run(&mut rec, u64::MAX), Stop::Exit(0));
        if run("branch") {
            replay_branches(&rec);
        }
        if run("data") {
            replay_data(&rec);
        }
    }
    if run("hart") {
        hart_speed(&image, name);
    }
}
