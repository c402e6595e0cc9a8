//! Tandem checker: any bytes, checked against a small program (`tandem_program.rs`) with options
//! chosen by the first byte, must never panic, and a summary that passes must be consistent
//! (no mismatch, a whole trace).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_sim::{Config, Hart};
use rvtrace_tandem::checker::{CheckOptions, Checker, RunEnd, TraceEnd};
use rvtrace_tandem::{Elements, Params};

#[path = "tandem_program.rs"]
mod tandem_program;

const ABSENT: [&str; 8] = [
    "",
    "",
    "gpr,mem",
    "csr,eaddr",
    "init",
    "pc,priv",
    "insn,mtime",
    "fpr,csr,priv",
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, trace)) = data.split_first() else {
        return;
    };
    let img = tandem_program::image();
    let mut cfg = Config::virt(rvtrace_isa::Xlen::Rv64, "");
    cfg.semihosting_cmdline = None;
    cfg.ram_size = 1 << 20;
    let mut hart = Hart::new(&cfg);
    hart.load(&img).expect("loads");
    let mut opts = CheckOptions::new(
        Params::RV64,
        Elements::parse(ABSENT[sel as usize & 7]).expect("known"),
    );
    if sel & 8 != 0 {
        opts.run_end = RunEnd::Stopped;
    }
    let mut c = Checker::new(hart, &img, opts);
    let mut reported = 0u64;
    if let Ok(s) = c.check(trace, &mut |_| reported += 1) {
        assert_eq!(s.mismatches, reported);
        if s.passed() {
            assert!(matches!(s.end, TraceEnd::Exit(_) | TraceEnd::Stopped));
            assert!(s.bytes as usize == trace.len());
        }
    }
});
