//! `rvtrace decode ntrace|etrace --jobs N`: the same PC list, flow text, counts, warnings and
//! exit status as with one thread, on a whole trace and on one with a damaged byte.

mod common;
use common::{etrace_packets, interleave, ntrace_messages, rvtrace, tmpdir};

fn rvtrace_chunked(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(args)
        .env("RVTRACE_CHUNK_BYTES", "64")
        .output()
        .expect("run rvtrace")
}

/// Decode `trace` with `--jobs 1` and `--jobs 2` (chunks of 64 bytes, cut at the syncs of the
/// small sync period) and compare everything: every output `--jobs` takes (the PC list in both
/// formats, flow text, branch stacks, instruction and call traces), stderr, exit status.
fn same_with_jobs(proto: &str, trace: &std::path::Path, elf: &str, dir: &std::path::Path) {
    let outputs = [
        ("--pcs", "pcs.txt"),
        ("--flow", "flow.txt"),
        ("--text", "text.txt"),
        ("--call-trace", "calls.txt"),
        ("--brstack", "brstack.txt"),
    ];
    let mut outs = Vec::new();
    for (jobs, format) in [("1", "text"), ("2", "text"), ("1", "bin"), ("2", "bin")] {
        let paths: Vec<_> = outputs
            .iter()
            .map(|(_, f)| dir.join(format!("{format}-{f}")))
            .collect();
        let mut args = vec![
            "decode",
            proto,
            trace.to_str().unwrap(),
            "--elf",
            elf,
            "--stats",
            "--jobs",
            jobs,
            "--pcs-format",
            format,
            "--brstack-every",
            "50",
        ];
        for ((opt, _), p) in outputs.iter().zip(&paths) {
            args.extend([*opt, p.to_str().unwrap()]);
        }
        let o = rvtrace_chunked(&args);
        let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
        outs.push((o.status.code(), String::from_utf8(o.stderr).unwrap(), files));
    }
    for (one, two) in [(&outs[0], &outs[1]), (&outs[2], &outs[3])] {
        assert!(one.2.iter().all(|f| !f.is_empty()), "{proto}: {}", one.1);
        assert_eq!(one.0, two.0, "{proto}: exit status");
        assert_eq!(one.1, two.1, "{proto}: stderr");
        for ((opt, _), (a, b)) in outputs.iter().zip(one.2.iter().zip(&two.2)) {
            assert!(a == b, "{proto}: {opt} differs with --jobs 2");
        }
    }
    // The binary PC list is the text one in 8 bytes per address.
    let text: Vec<u64> = String::from_utf8(outs[0].2[0].clone())
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.trim_start_matches("0x"), 16).unwrap())
        .collect();
    let bin = &outs[3].2[0];
    assert_eq!(&bin[..8], b"RVTRPC64");
    let bin: Vec<u64> = bin[8..]
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(text, bin, "{proto}: binary and text PC lists");
}

#[test]
fn jobs_change_nothing_but_speed() {
    let d = tmpdir("parallel-decode");
    let elf = "../../programs/elf/heap-rv64gc.elf";
    let ing = d.join("p.ing");
    let o = rvtrace(&["run", elf, "--ingress", ing.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (proto, sync) in [("ntrace", "--sync-period"), ("etrace", "--resync")] {
        let t = d.join(format!("p.{proto}"));
        let o = rvtrace(&[
            "encode",
            proto,
            ing.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
            sync,
            "8",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        same_with_jobs(proto, &t, elf, &d);
        // A damaged byte in the middle: losses, warnings and exit status 1 alike.
        let mut b = std::fs::read(&t).unwrap();
        let n = b.len();
        b[n / 2] ^= 0x55;
        let bad = d.join(format!("bad.{proto}"));
        std::fs::write(&bad, &b).unwrap();
        std::fs::copy(
            d.join(format!("p.{proto}.meta")),
            d.join(format!("bad.{proto}.meta")),
        )
        .unwrap();
        same_with_jobs(proto, &bad, elf, &d);
    }
}

/// Three harts (three runs of one program, cut at different lengths, encoded with SRC 1, 2
/// and 5), their messages interleaved into one trace: `--all-harts` writes each hart's PC list
/// and flow, equal to a decode of that SRC alone (`--src-id`) and the PC list equal to the
/// decode of the hart's own trace; on 1 thread and on 2 alike.
#[test]
fn all_harts_are_split_and_decoded() {
    let d = tmpdir("all-harts");
    let elf = "../../programs/elf/heap-rv64gc.elf";
    let harts = [(1u16, "3000"), (2, "100000000"), (5, "7000")];
    let mut traces = Vec::new();
    for (src, max) in harts {
        let ing = d.join(format!("h{src}.ing"));
        // A run cut by --max-insns ends with status 124; its ingress is whole up to there.
        let o = rvtrace(&[
            "run",
            elf,
            "--ingress",
            ing.to_str().unwrap(),
            "--max-insns",
            max,
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 124)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let t = d.join(format!("h{src}.nt"));
        let s = src.to_string();
        let o = rvtrace(&[
            "encode",
            "ntrace",
            ing.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
            "--src-bits",
            "3",
            "--src-id",
            &s,
            "--sync-period",
            "16",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        traces.push(std::fs::read(&t).unwrap());
    }
    let merged = interleave(traces.iter().map(|t| ntrace_messages(t)).collect());
    let all = d.join("all.nt");
    std::fs::write(&all, &merged).unwrap();
    let all_s = all.to_str().unwrap();
    for jobs in ["1", "2"] {
        let pcs = d.join(format!("j{jobs}-{{hart}}.pcs"));
        let flow = d.join(format!("j{jobs}-{{hart}}.flow"));
        let o = rvtrace(&[
            "decode",
            "ntrace",
            all_s,
            "--elf",
            elf,
            "--src-bits",
            "3",
            "--all-harts",
            "--jobs",
            jobs,
            "--stats",
            "--pcs",
            pcs.to_str().unwrap(),
            "--flow",
            flow.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with("SRC ")).count(),
            3,
            "{err}"
        );
        for (src, _) in harts {
            let s = src.to_string();
            let (p1, f1) = (
                d.join(format!("one{s}.pcs")),
                d.join(format!("one{s}.flow")),
            );
            let o = rvtrace(&[
                "decode",
                "ntrace",
                all_s,
                "--elf",
                elf,
                "--src-bits",
                "3",
                "--src-id",
                &s,
                "--pcs",
                p1.to_str().unwrap(),
                "--flow",
                f1.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let own = d.join(format!("own{s}.pcs"));
            let o = rvtrace(&[
                "decode",
                "ntrace",
                d.join(format!("h{s}.nt")).to_str().unwrap(),
                "--elf",
                elf,
                "--pcs",
                own.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let got = std::fs::read(d.join(format!("j{jobs}-{s}.pcs"))).unwrap();
            assert!(!got.is_empty());
            assert!(got == std::fs::read(&p1).unwrap(), "SRC {s}: PC list");
            assert!(
                got == std::fs::read(&own).unwrap(),
                "SRC {s}: PC list of its own trace"
            );
            let got = std::fs::read(d.join(format!("j{jobs}-{s}.flow"))).unwrap();
            assert!(got == std::fs::read(&f1).unwrap(), "SRC {s}: flow");
        }
    }
    // Without {hart} in an output path: a usage error, nothing written.
    let o = rvtrace(&[
        "decode",
        "ntrace",
        all_s,
        "--elf",
        elf,
        "--src-bits",
        "3",
        "--all-harts",
        "--pcs",
        d.join("x.pcs").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.join("x.pcs").exists());
}

/// E-Trace: three harts (three runs of one program, cut at different lengths, encoded with the
/// encapsulation's srcID 1, 2 and 5), their packets interleaved into one trace: `--all-harts`
/// writes each hart's PC list and flow, equal to a decode of that srcID alone (`--srcid`) and
/// the PC list equal to the decode of the hart's own trace; on 1 thread and on 2 alike.
#[test]
fn etrace_all_harts_are_split_and_decoded() {
    let d = tmpdir("etrace-all-harts");
    let elf = "../../programs/elf/heap-rv64gc.elf";
    let harts = [(1u16, "3000"), (2, "100000000"), (5, "7000")];
    let mut traces = Vec::new();
    for (src, max) in harts {
        let ing = d.join(format!("h{src}.ing"));
        let o = rvtrace(&[
            "run",
            elf,
            "--ingress",
            ing.to_str().unwrap(),
            "--max-insns",
            max,
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 124)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let t = d.join(format!("h{src}.te"));
        let s = src.to_string();
        let o = rvtrace(&[
            "encode",
            "etrace",
            ing.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
            "--srcid-bits",
            "3",
            "--srcid",
            &s,
            "--resync",
            "16",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let b = std::fs::read(&t).unwrap();
        // Every packet carries the hart's srcID (the 3 bits after the header byte).
        assert!(etrace_packets(&b)
            .iter()
            .all(|p| p.len() > 1 && p[1] & 7 == src as u8));
        traces.push(b);
    }
    let merged = interleave(traces.iter().map(|t| etrace_packets(t)).collect());
    let all = d.join("all.te");
    std::fs::write(&all, &merged).unwrap();
    let all_s = all.to_str().unwrap();
    for jobs in ["1", "2"] {
        let pcs = d.join(format!("j{jobs}-{{hart}}.pcs"));
        let flow = d.join(format!("j{jobs}-{{hart}}.flow"));
        let o = rvtrace(&[
            "decode",
            "etrace",
            all_s,
            "--elf",
            elf,
            "--srcid-bits",
            "3",
            "--all-harts",
            "--jobs",
            jobs,
            "--pcs",
            pcs.to_str().unwrap(),
            "--flow",
            flow.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.lines()
                .filter(|l| l.starts_with("srcID ") && l.ends_with(" 0 errors"))
                .count(),
            3,
            "{err}"
        );
        for (src, _) in harts {
            let s = src.to_string();
            let (p1, f1) = (
                d.join(format!("one{s}.pcs")),
                d.join(format!("one{s}.flow")),
            );
            let o = rvtrace(&[
                "decode",
                "etrace",
                all_s,
                "--elf",
                elf,
                "--srcid-bits",
                "3",
                "--srcid",
                &s,
                "--pcs",
                p1.to_str().unwrap(),
                "--flow",
                f1.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let own = d.join(format!("own{s}.pcs"));
            let o = rvtrace(&[
                "decode",
                "etrace",
                d.join(format!("h{s}.te")).to_str().unwrap(),
                "--elf",
                elf,
                "--pcs",
                own.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let got = std::fs::read(d.join(format!("j{jobs}-{s}.pcs"))).unwrap();
            assert!(!got.is_empty());
            assert!(got == std::fs::read(&p1).unwrap(), "srcID {s}: PC list");
            assert!(
                got == std::fs::read(&own).unwrap(),
                "srcID {s}: PC list of its own trace"
            );
            let got = std::fs::read(d.join(format!("j{jobs}-{s}.flow"))).unwrap();
            assert!(got == std::fs::read(&f1).unwrap(), "srcID {s}: flow");
        }
    }
    // Without the filter the harts' packets make one wrong flow: losses, exit status 1.
    let o = rvtrace(&["decode", "etrace", all_s, "--elf", elf, "--srcid-bits", "3"]);
    assert_eq!(o.status.code(), Some(1));
    // Usage errors, nothing written: no {hart} in an output path; no srcID width; a srcID
    // wider than the field.
    let x = d.join("x.pcs");
    for args in [
        &[
            "--srcid-bits",
            "3",
            "--all-harts",
            "--pcs",
            x.to_str().unwrap(),
        ][..],
        &[
            "--all-harts",
            "--pcs",
            d.join("x-{hart}.pcs").to_str().unwrap(),
        ][..],
        &[
            "--srcid-bits",
            "3",
            "--srcid",
            "8",
            "--pcs",
            x.to_str().unwrap(),
        ][..],
    ] {
        let mut a = vec!["decode", "etrace", all_s, "--elf", elf];
        a.extend_from_slice(args);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!x.exists() && !d.join("x-1.pcs").exists());
    }
}
