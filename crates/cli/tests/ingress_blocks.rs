//! `rvtrace run --ingress-blocks` (one ingress record per block of instructions) and the tools
//! that read the ingress stream: the encoders make the same trace from block records as from
//! the per-instruction stream, and it decodes to `run --pcs`; profiles, the text form and the
//! dump read them.
//!
//! - `encode etrace` gives each block's instructions (from `--elf`) to the encoder: the same
//!   bytes, every option set (E-Trace exampleAlgorithm.adoc "Multiple retirement
//!   considerations": the packets must be those of one instruction at a time).
//! - `encode ntrace` encodes a block as one record (I-CNT counts half-words, N-Trace 8.4.4):
//!   the same bytes for the default and the compression options. With `--timestamps` (a
//!   block's time is its last instruction's) and `--sync-period` (a periodic sync comes at a
//!   record) the bytes may legitimately differ; the PCs decoded are the same. With `--elf` the
//!   blocks are expanded and the bytes are the same for every option, `--icnt-bits`,
//!   `--trace-range` and `--fifo-bytes` included (without `--elf` those are refused).

use crate::common;
use common::{ok, program, rvtrace, s, stderr, stdout, tmpdir};
use std::path::Path;

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `records=N` of `ingress dump`'s summary.
fn dump_records(p: &Path) -> u64 {
    let o = rvtrace(&["ingress", "dump", s(p)]);
    ok(&o, "ingress dump");
    let out = stdout(&o);
    let last = out.lines().last().unwrap();
    let n = last
        .split_whitespace()
        .find_map(|f| f.strip_prefix("records="));
    n.unwrap_or_else(|| panic!("{last}")).parse().unwrap()
}

#[test]
fn encoders_make_the_same_trace_from_block_records() {
    for name in [
        "mixed-rv64gc",
        "fnptr-rv32imac",
        "kernel-rv64gc",
        "recurse-rv32imac",
    ] {
        let t = tmpdir(name);
        let elf = program(name);
        let (per, blk, pcs, txt) = (
            t.join("per.ing"),
            t.join("blk.ing"),
            t.join("run.pcs"),
            t.join("blk.txt"),
        );
        ok(
            &rvtrace(&["run", s(&elf), "--ingress", s(&per), "--pcs", s(&pcs)]),
            "run",
        );
        let o = rvtrace(&[
            "run",
            s(&elf),
            "--ingress",
            s(&blk),
            "--ingress-text",
            s(&txt),
            "--ingress-blocks",
        ]);
        ok(&o, "run --ingress-blocks");
        let (np, nb) = (dump_records(&per), dump_records(&blk));
        assert!(nb * 2 < np, "{name}: {nb} block records, {np} records");
        // The text form holds the same header and records as the binary file: it is the dump
        // without the dump's summary line.
        let o = rvtrace(&["ingress", "dump", s(&blk)]);
        let dumped = stdout(&o);
        let summary = dumped.trim_end().rfind('\n').unwrap() + 1;
        let text = String::from_utf8(read(&txt)).unwrap();
        assert_eq!(text, dumped[..summary], "{name}");
        assert!(dumped.contains("multi-retire"), "{name}");
        let want_pcs = read(&pcs);

        let decode = |proto: &str, trace: &Path, what: &str| {
            let out = t.join(format!("{proto}.pcs"));
            let o = rvtrace(&[
                "decode",
                proto,
                s(trace),
                "--elf",
                s(&elf),
                "--pcs",
                s(&out),
            ]);
            ok(&o, what);
            assert!(read(&out) == want_pcs, "{what}: PCs differ from run --pcs");
        };
        let encode = |proto: &str, input: &Path, out: &Path, opts: &[&str], with_elf: bool| {
            let mut args = vec!["encode", proto, s(input), "-o", s(out)];
            args.extend(opts);
            if with_elf {
                args.extend(["--elf", s(&elf)]);
            }
            let o = rvtrace(&args);
            ok(&o, &format!("{args:?}"));
        };

        let ets: [&[&str]; 3] = [
            &[],
            &[
                "--implicit-return",
                "--return-stack",
                "16",
                "--branch-prediction",
                "64",
                "--sijump",
            ],
            &["--preset", "reference"],
        ];
        for opts in ets {
            let (a, b) = (t.join("per.te"), t.join("blk.te"));
            encode("etrace", &per, &a, opts, false);
            encode("etrace", &blk, &b, opts, true);
            assert!(read(&a) == read(&b), "{name} etrace {opts:?}: bytes differ");
            decode("etrace", &b, &format!("{name} etrace {opts:?}"));
        }

        // Native: the same bytes.
        let same: [&[&str]; 3] = [
            &[],
            &["--mode", "htm", "--call-stack", "8", "--repeat-history"],
            &["--sequential-jumps", "--all-jumps", "--ownership"],
        ];
        for opts in same {
            let (a, b) = (t.join("per.nt"), t.join("blk.nt"));
            encode("ntrace", &per, &a, opts, false);
            encode("ntrace", &blk, &b, opts, false);
            assert!(read(&a) == read(&b), "{name} ntrace {opts:?}: bytes differ");
            decode("ntrace", &b, &format!("{name} ntrace {opts:?}"));
        }
        // Native, time and sync points at records: the same PCs.
        let opts = ["--timestamps", "--sync-period", "40"];
        let b = t.join("blk.nt");
        encode("ntrace", &blk, &b, &opts, false);
        decode("ntrace", &b, &format!("{name} ntrace {opts:?}"));
        // Expanded with --elf: the same bytes, whatever the options.
        let expanded: [&[&str]; 3] = [
            &["--timestamps", "--sync-period", "40"],
            &["--icnt-bits", "6", "--mode", "htm"],
            &[
                "--fifo-bytes",
                "48",
                "--fifo-drain",
                "1",
                "--sync-mode",
                "halfwords",
                "--sync-period",
                "300",
            ],
        ];
        for opts in expanded {
            let (a, b) = (t.join("per.nt"), t.join("blk.nt"));
            encode("ntrace", &per, &a, opts, false);
            encode("ntrace", &blk, &b, opts, true);
            assert!(
                read(&a) == read(&b),
                "{name} ntrace --elf {opts:?}: bytes differ"
            );
        }
        let opts = [
            "--trace-range",
            "0x80000000:0x80000400",
            "--trace-priv",
            "m",
        ];
        let (a, b) = (t.join("per.nt"), t.join("blk.nt"));
        encode("ntrace", &per, &a, &opts, false);
        encode("ntrace", &blk, &b, &opts, true);
        assert!(
            read(&a) == read(&b),
            "{name} ntrace --elf {opts:?}: bytes differ"
        );

        // The same profile (instructions and time per function) from both streams.
        let pa = rvtrace(&["profile", s(&per), "--elf", s(&elf)]);
        let pb = rvtrace(&["profile", s(&blk), "--elf", s(&elf)]);
        ok(&pa, "profile");
        ok(&pb, "profile of block records");
        assert_eq!(stdout(&pa), stdout(&pb), "{name}: profile");
    }
}

/// What needs the program or another option is refused before anything is written.
#[test]
fn block_records_usage_errors() {
    let t = tmpdir("usage");
    let elf = program("mixed-rv64gc");
    let blk = t.join("blk.ing");
    let o = rvtrace(&["run", s(&elf), "--ingress-blocks"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--ingress"), "{}", stderr(&o));
    ok(
        &rvtrace(&["run", s(&elf), "--ingress", s(&blk), "--ingress-blocks"]),
        "run",
    );
    let out = t.join("x.te");
    let o = rvtrace(&["encode", "etrace", s(&blk), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--elf"), "{}", stderr(&o));
    assert!(!out.exists());
    for opt in [
        ["--icnt-bits", "8"],
        ["--trace-range", "0x80000000:0x80001000"],
        ["--fifo-bytes", "64"],
    ] {
        let out = t.join("x.nt");
        let mut args = vec!["encode", "ntrace", s(&blk), "-o", s(&out)];
        args.extend(opt);
        let o = rvtrace(&args);
        assert_eq!(o.status.code(), Some(2), "{opt:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(opt[0]), "{}", stderr(&o));
        assert!(!out.exists());
    }
    // --stats of block records counts records, not instructions, unless --elf is given.
    let out = t.join("x.nt");
    let o = rvtrace(&["encode", "ntrace", s(&blk), "-o", s(&out), "--stats"]);
    ok(&o, "encode ntrace --stats");
    assert!(stderr(&o).contains("block records"), "{}", stderr(&o));
    let o = rvtrace(&[
        "encode",
        "ntrace",
        s(&blk),
        "-o",
        s(&out),
        "--stats",
        "--elf",
        s(&elf),
    ]);
    ok(&o, "encode ntrace --stats --elf");
    assert!(stderr(&o).contains(" instructions,"), "{}", stderr(&o));
}
