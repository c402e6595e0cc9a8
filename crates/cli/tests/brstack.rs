//! Branch stacks: CTR samples of `run --ctr-sample` agree with the same synthesised from the
//! decoded E-Trace and N-Trace of that run (`decode ... --brstack-every`), and the options'
//! usage errors.
//!
//! A trace has no branch predictor and no cycle counts, so the decoders write `-` and 0 there;
//! the run side leaves them out with `--brstack-no-flags --brstack-no-cycles` (perf's `-j
//! no_flags,no_cycles`), and a run with them differs from that in those two columns only.

use crate::common;

use common::{program, rvtrace, s, stderr, tmpdir, NmFunctions};
use std::path::Path;

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(o));
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Run `prog` with CTR sampled at `every` (`mctrctl` = `config` when given) writing ingress;
/// the samples file.
fn run_side(dir: &Path, prog: &str, every: &str, config: Option<&str>, extra: &[&str]) -> String {
    let elf = program(prog);
    let (a, ing) = (dir.join("a.txt"), dir.join("p.ing"));
    let mut args = vec![
        "run",
        s(&elf),
        "--ctr",
        "1.0",
        "--ctr-sample",
        every,
        "--brstack",
        s(&a),
        "--ingress",
        s(&ing),
    ];
    if let Some(c) = config {
        args.extend(["--ctr-config", c]);
    }
    args.extend(extra);
    ok(&rvtrace(&args));
    read(&a)
}

/// Encode the run's ingress with `protocol` (and `enc` options) and decode it with the
/// branch-stack options; the samples file.
fn trace_side(
    dir: &Path,
    prog: &str,
    protocol: &str,
    enc: &[&str],
    every: &str,
    config: Option<&str>,
) -> String {
    let elf = program(prog);
    let (t, b) = (dir.join(format!("p.{protocol}")), dir.join("b.txt"));
    let ing = dir.join("p.ing");
    let mut args = vec!["encode", protocol, s(&ing), "-o", s(&t)];
    args.extend(enc);
    ok(&rvtrace(&args));
    let mut args = vec![
        "decode",
        protocol,
        s(&t),
        "--elf",
        s(&elf),
        "--brstack",
        s(&b),
        "--brstack-every",
        every,
    ];
    if let Some(c) = config {
        args.extend(["--ctr-config", c]);
    }
    let o = rvtrace(&args);
    ok(&o);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    read(&b)
}

fn agree(prog: &str, every: &str, config: Option<&str>, protocols: &[(&str, &[&str])]) -> String {
    let dir = tmpdir(&format!("agree-{prog}-{every}"));
    let a = run_side(
        &dir,
        prog,
        every,
        config,
        &["--brstack-no-flags", "--brstack-no-cycles"],
    );
    assert!(
        a.lines().count() >= 4,
        "{prog}: {} samples",
        a.lines().count()
    );
    for (protocol, enc) in protocols {
        let b = trace_side(&dir, prog, protocol, enc, every, config);
        if a != b {
            let k = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            panic!(
                "{prog} {protocol}: {} run samples, {} trace samples; first difference at sample {k:?}:\n{:?}\n{:?}",
                a.lines().count(),
                b.lines().count(),
                k.and_then(|k| a.lines().nth(k)),
                k.and_then(|k| b.lines().nth(k))
            );
        }
    }
    a
}

const BOTH: &[(&str, &[&str])] = &[("etrace", &[]), ("ntrace", &[])];

/// Encoder options that change how the flow is carried, not what it says.
const VARIANTS: &[(&str, &[&str])] = &[
    ("etrace", &["--implicit-exception", "--implicit-return"]),
    ("etrace", &["--full-address", "--sijump"]),
    ("ntrace", &["--mode", "btm", "--call-stack", "8"]),
    ("ntrace", &["--repeat-branch", "--sync-period", "5"]),
];

/// The default configuration (U, S and M, every type): samples every N instructions agree, on
/// programs with calls, returns, jump tables, ecalls from three modes, faults, breakpoints,
/// interrupts and delegation to S-mode; the types the driver maps all appear.
#[test]
fn every_n_instructions_agree_with_both_traces() {
    let mut all = String::new();
    for (prog, n) in [
        ("traps-rv64gc", "97"),
        ("timer-rv64gc", "61"),
        ("switch-rv32imac", "251"),
        ("sdeleg-rv64gc", "89"),
    ] {
        all += &agree(prog, n, None, BOTH);
    }
    agree("traps-rv64gc", "37", None, VARIANTS);
    for t in [
        "/COND/",
        "/CALL/",
        "/IND_CALL/",
        "/RET/",
        "/UNCOND/",
        "/IND/",
        "/SYSCALL/",
        "/ERET/",
        "/IRQ/",
    ] {
        assert!(all.contains(t), "no {t} entry");
    }
    // Serviced semihosting calls are no traps: never recorded (the traces show them as
    // exceptions whose handler is the next instruction).
    assert!(all.lines().all(|l| l
        .split(' ')
        .all(|e| !e.ends_with("/SYSCALL/-") || !e.contains("sys_semihost"))));
}

/// With some modes disabled the privilege of every transfer matters (sources and xRET targets
/// recorded as 0, external traps with STE/MTE): N-Trace with ownership messages gives it.
/// Not-taken branches (NTBREN) and inhibits too.
#[test]
fn filters_and_privileges_agree() {
    let a = agree(
        "traps-rv64gc",
        "31",
        Some("0x301"),
        &[("ntrace", &["--ownership"])],
    );
    assert!(
        a.contains("/0x0/"),
        "an external trap from U to M has target 0"
    );
    let a = agree(
        "sdeleg-rv64gc",
        "53",
        Some("0x6"),
        &[("ntrace", &["--ownership"])],
    );
    assert!(a.contains(" 0x0/"), "a trap from U (disabled) has source 0");
    // U, S, M and TKBRINH (bit 37 = 32 + type 5, the v1.0 `mctrctl` diagram).
    let a = agree("timer-rv64gc", "47", Some("0x2000000007"), BOTH);
    assert!(
        !a.contains("/COND/"),
        "taken branches inhibited, not-taken not enabled"
    );
    // U, S, M and NTBREN (bit 36 = 32 + type 4).
    let a = agree("recurse-rv64gc", "499", Some("0x1000000007"), BOTH);
    let nt = a.split(' ').filter(|e| e.ends_with("/COND/-")).any(|e| {
        let (f, t) = e.split_once('/').unwrap();
        let t = t.split('/').next().unwrap();
        let (f, t) = (
            u64::from_str_radix(&f[2..], 16).unwrap(),
            u64::from_str_radix(&t[2..], 16).unwrap(),
        );
        t == f + 2 || t == f + 4
    });
    assert!(
        nt,
        "NTBREN: not-taken branches to the next instruction are recorded"
    );
}

/// Sampling at counter-overflow interrupts (the program programs Sscofpmf counters; LCOFIFRZ by
/// default): the E-Trace side finds the same LCOFIs (N-Trace reports no trap causes).
#[test]
fn overflow_samples_agree_with_etrace() {
    for prog in ["pmu_overflow-rv64gc", "pmu_overflow-rv32imac"] {
        let a = agree(prog, "overflow", None, &[("etrace", &[])]);
        // Frozen at the LCOFI: it is never in the stack (LCOFIFRZ).
        assert!(!a.contains("/IRQ/"), "{prog}");
    }
}

/// Flags and cycles are the only columns `--brstack-no-flags --brstack-no-cycles` changes; with
/// them CTR gives P (no mispredict without a predictor model) and cycle counts.
#[test]
fn flags_and_cycles_only_differ_in_their_columns() {
    let dir = tmpdir("flags");
    let masked = run_side(
        &dir,
        "recurse-rv64gc",
        "997",
        None,
        &["--brstack-no-flags", "--brstack-no-cycles"],
    );
    let full = run_side(&dir, "recurse-rv64gc", "997", None, &[]);
    let mask = |text: &str| -> String {
        text.split(' ')
            .map(|e| {
                let f: Vec<&str> = e.split('/').collect();
                if f.len() == 8 {
                    format!("{}/{}/-/{}/{}/0/{}/{}", f[0], f[1], f[3], f[4], f[6], f[7])
                } else {
                    e.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(mask(&full), masked);
    assert!(
        full.contains("/P/-/-/1/"),
        "one-cycle transfers with the timing model off"
    );
    assert!(!masked.contains("/P/"));
}

/// `--brstack-sym`: each address as `sym+0xoff` of the ELF's symbols; checked against the
/// brstack text of the same run and `riscv64-unknown-elf-nm`'s symbol table.
#[test]
fn brstacksym_names_addresses_as_nm_does() {
    let dir = tmpdir("sym");
    let plain = run_side(&dir, "fnptr-rv64gc", "401", None, &[]);
    let sym = run_side(&dir, "fnptr-rv64gc", "401", None, &["--brstack-sym"]);
    let Some(nm) = NmFunctions::of(&program("fnptr-rv64gc")) else {
        return;
    };
    // Every name of the function `a` is in, with the offset.
    let names = |a: u64| -> Vec<String> {
        let (names, off) = nm.names_at(a).unwrap();
        names.iter().map(|n| format!("{n}+{off:#x}")).collect()
    };
    let mut checked = 0;
    for (p, q) in plain.lines().zip(sym.lines()) {
        // The ip is the same; perf prints the first symbolic entry right after it.
        assert_eq!(p[..17], q[..17]);
        let pe: Vec<&str> = p[17..].split_whitespace().collect();
        let qe: Vec<&str> = q[17..].split_whitespace().collect();
        assert_eq!(pe.len(), qe.len());
        for (x, y) in pe.iter().zip(&qe) {
            let xf: Vec<&str> = x.split('/').collect();
            let yf: Vec<&str> = y.split('/').collect();
            assert_eq!(xf[2..], yf[2..], "same flags");
            for k in 0..2 {
                let a = u64::from_str_radix(&xf[k][2..], 16).unwrap();
                if a != 0 && nm.names_at(a).is_some() {
                    assert!(
                        names(a).iter().any(|n| n == yf[k]),
                        "{x} vs {y}: nm {:?}",
                        names(a)
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked} addresses checked");
}

fn cat<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

fn usage_error(args: &[&str], what: &str) {
    let o = rvtrace(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(
        e.starts_with("rvtrace: error: ") && e.contains(what),
        "{args:?}: {e}"
    );
}

#[test]
fn bad_combinations_are_usage_errors() {
    let dir = tmpdir("errors");
    let elf = program("recurse-rv64gc");
    let (e, out) = (s(&elf), dir.join("o.txt"));
    let o = s(&out);
    usage_error(
        &cat(&["run", e], &["--ctr-sample", "10", "--brstack", o]),
        "--brstack needs --ctr 1.0",
    );
    usage_error(
        &cat(
            &["run", e],
            &["--ctr", "1.0", "--ctr-sample", "0", "--brstack", o],
        ),
        "--ctr-sample 0",
    );
    usage_error(
        &cat(
            &["run", e],
            &["--ctr", "1.0", "--ctr-sample", "often", "--brstack", o],
        ),
        "overflow",
    );
    usage_error(
        &cat(&["run", e], &["--ctr", "1.0", "--brstack", o]),
        "--brstack needs --ctr-sample",
    );
    usage_error(
        &cat(&["run", e], &["--ctr", "1.0", "--ctr-sample", "5"]),
        "--ctr-sample needs --brstack",
    );
    usage_error(
        &cat(&["run", e], &["--ctr", "1.0", "--brstack-sym"]),
        "--brstack-sym needs --brstack",
    );
    usage_error(
        &cat(
            &["run", e],
            &[
                "--ctr",
                "1.0",
                "--ctr-sample",
                "5",
                "--brstack",
                o,
                "--ctr-config",
                "zz",
            ],
        ),
        "hex",
    );
    usage_error(
        &cat(
            &["run", e],
            &[
                "--ctr",
                "1.0",
                "--ctr-sample",
                "5",
                "--brstack",
                o,
                "--ctr-config",
                "0x8",
            ],
        ),
        "bits 0x8",
    );
    usage_error(
        &cat(
            &["run", e],
            &[
                "--ctr",
                "1.0",
                "--ctr-sample",
                "5",
                "--brstack",
                o,
                "--ctr-depth",
                "20",
            ],
        ),
        "--ctr-depth 20",
    );
    usage_error(
        &cat(&["run", e], &["--ctr-config", "0x7"]),
        "--ctr-config needs --ctr 1.0",
    );
    usage_error(
        &cat(
            &["run", e],
            &["--ctr", "0.1.4", "--ctr-sample", "5", "--brstack", o],
        ),
        "--brstack needs --ctr 1.0",
    );
    assert!(!out.exists(), "no output created by a usage error");
    usage_error(
        &cat(
            &["run", e],
            &["--ctr", "1.0", "--ctr-sample", "5", "--brstack", e],
        ),
        "--brstack",
    );
    let rv32 = program("recurse-rv32imac");
    usage_error(
        &[
            "run",
            s(&rv32),
            "--ctr",
            "1.0",
            "--ctr-sample",
            "5",
            "--brstack",
            o,
            "--ctr-config",
            "0x800000007",
        ],
        "RV32",
    );
    for p in ["etrace", "ntrace"] {
        usage_error(
            &cat(&["decode", p, e, "--elf", e], &["--brstack", o]),
            "--brstack needs --brstack-every",
        );
        usage_error(
            &cat(&["decode", p, e, "--elf", e], &["--brstack-every", "3"]),
            "--brstack-every needs --brstack",
        );
        usage_error(
            &cat(
                &["decode", p, e, "--elf", e],
                &["--brstack", o, "--brstack-every", "0"],
            ),
            "--brstack-every 0",
        );
        usage_error(
            &cat(&["decode", p, e, "--elf", e], &["--ctr-config", "7"]),
            "--ctr-config needs --brstack",
        );
    }
}

/// A filtered trace (N-Trace `--trace-priv m`) stops and restarts: the instructions in between
/// are not in it, so the count is unknown after the first stop: samples end there, with a
/// warning, and those before it equal the run's.
#[test]
fn a_filtered_trace_ends_the_samples() {
    let dir = tmpdir("filtered");
    let a = run_side(
        &dir,
        "traps-rv64gc",
        "100",
        None,
        &["--brstack-no-flags", "--brstack-no-cycles"],
    );
    let (elf, t, b) = (program("traps-rv64gc"), dir.join("f.nt"), dir.join("b.txt"));
    ok(&rvtrace(&[
        "encode",
        "ntrace",
        s(&dir.join("p.ing")),
        "-o",
        s(&t),
        "--trace-priv",
        "m",
    ]));
    let o = rvtrace(&[
        "decode",
        "ntrace",
        s(&t),
        "--elf",
        s(&elf),
        "--brstack",
        s(&b),
        "--brstack-every",
        "100",
    ]);
    ok(&o);
    assert!(
        stderr(&o).contains("stopped and started again"),
        "{}",
        stderr(&o)
    );
    let b = read(&b);
    assert!(b.lines().count() > 10 && b.lines().count() < a.lines().count());
    assert!(a.starts_with(&b));
}

/// An S-mode payload under the built-in SBI (`run --sbi`): its SBI calls are serviced by the
/// hart (no trap, nothing recorded), shown as exceptions whose handler is the next instruction
/// in the trace; the samples still agree.
#[test]
fn sbi_payload_agrees() {
    let dir = tmpdir("sbi");
    let elf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/sbi/elf/pmu_stat-rv64gc.elf");
    let (a, ing) = (dir.join("a.txt"), dir.join("p.ing"));
    ok(&rvtrace(&[
        "run",
        "--sbi",
        s(&elf),
        "--ctr",
        "1.0",
        "--ctr-sample",
        "997",
        "--brstack",
        s(&a),
        "--brstack-no-flags",
        "--brstack-no-cycles",
        "--ingress",
        s(&ing),
    ]));
    let a = read(&a);
    assert!(a.lines().count() > 100);
    assert!(a.contains("/ERET/") || a.contains("/SYSCALL/") || a.contains("/CALL/"));
    for p in ["etrace", "ntrace"] {
        let (t, b) = (dir.join(format!("p.{p}")), dir.join("b.txt"));
        ok(&rvtrace(&["encode", p, s(&ing), "-o", s(&t)]));
        ok(&rvtrace(&[
            "decode",
            p,
            s(&t),
            "--elf",
            s(&elf),
            "--brstack",
            s(&b),
            "--brstack-every",
            "997",
        ]));
        assert!(read(&b) == a, "{p}");
    }
}
