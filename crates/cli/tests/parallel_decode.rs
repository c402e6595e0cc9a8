//! `rvtrace decode ntrace|etrace --jobs N`: the same PC list, flow text, counts, warnings and
//! exit status as with one thread, on a whole trace and on one with a damaged byte.

use crate::common;
use common::{etrace_packets, interleave, ntrace_messages, rvtrace, s, stderr, tmpdir, TmpDir};

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

/// How each protocol names a multi-hart trace's source field.
struct Harts {
    /// `ntrace` or `etrace`.
    proto: &'static str,
    /// The source field's width option, and the option choosing one source.
    bits: &'static str,
    one: &'static str,
    /// The encoder's option for a short sync period (so that `--jobs 2` has chunks).
    sync: [&'static str; 2],
    /// What the counts line of each hart starts with, and the option that asks for it.
    count_line: &'static str,
    counts: &'static [&'static str],
    /// The trace cut into messages (N-Trace) or packets (E-Trace), for interleaving.
    split: fn(&[u8]) -> Vec<&[u8]>,
}

const NTRACE_HARTS: Harts = Harts {
    proto: "ntrace",
    bits: "--src-bits",
    one: "--src-id",
    sync: ["--sync-period", "16"],
    count_line: "SRC ",
    counts: &["--stats"],
    split: ntrace_messages,
};

// One vocabulary (issue 28): the same option names as N-Trace's.
const ETRACE_HARTS: Harts = Harts {
    proto: "etrace",
    bits: "--src-bits",
    one: "--src-id",
    sync: ["--sync-period", "16"],
    count_line: "srcID ",
    counts: &["--stats"],
    split: etrace_packets,
};

/// The outputs that keep state across flow elements, and their files' extensions.
const STATEFUL: [(&str, &str); 3] = [
    ("--brstack", "brstack"),
    ("--text", "txt"),
    ("--call-trace", "calls"),
];

/// `p` with `{hart}` replaced by `id`.
fn harts_path(p: &std::path::Path, id: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(s(p).replace("{hart}", id))
}

/// Three harts (three runs of one program, cut at different lengths, encoded with the source
/// 1, 2 and 5 in a 3-bit field), their messages interleaved unevenly into one trace:
/// `--all-harts` writes each hart's PC list, flow, branch stacks, text and call trace, equal to a decode of
/// that source alone
/// and the PC list equal to the decode of the hart's own trace; on 1 thread and on 2 alike.
/// Returns the directory, the merged trace and each hart's own trace.
fn all_harts_case(h: &Harts) -> (TmpDir, std::path::PathBuf, Vec<Vec<u8>>) {
    let d = tmpdir(&format!("{}-all-harts", h.proto));
    let elf = "../../programs/elf/heap-rv64gc.elf";
    let harts = [(1u16, "3000"), (2, "100000000"), (5, "7000")];
    let mut traces = Vec::new();
    for (src, max) in harts {
        let ing = d.join(format!("h{src}.ing"));
        // A run cut by --max-insns ends with status 124; its ingress is whole up to there.
        let o = rvtrace(&["run", elf, "--ingress", s(&ing), "--max-insns", max]);
        assert!(matches!(o.status.code(), Some(0 | 124)), "{}", stderr(&o));
        let t = d.join(format!("h{src}.trace"));
        let id = src.to_string();
        let o = rvtrace(&[
            "encode",
            h.proto,
            s(&ing),
            "-o",
            s(&t),
            h.bits,
            "3",
            h.one,
            &id,
            h.sync[0],
            h.sync[1],
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        traces.push(std::fs::read(&t).unwrap());
    }
    let merged = interleave(traces.iter().map(|t| (h.split)(t)).collect());
    let all = d.join("all.trace");
    std::fs::write(&all, &merged).unwrap();
    let decode = |extra: &[&str]| {
        let mut a = vec!["decode", h.proto, s(&all), "--elf", elf, h.bits, "3"];
        a.extend_from_slice(extra);
        rvtrace(&a)
    };
    for jobs in ["1", "2"] {
        let pcs = d.join(format!("j{jobs}-{{hart}}.pcs"));
        let flow = d.join(format!("j{jobs}-{{hart}}.flow"));
        // The outputs with state across elements: one per hart too.
        let stateful =
            |stem: &str| STATEFUL.map(|(opt, ext)| (opt, d.join(format!("{stem}.{ext}"))));
        let st = stateful(&format!("j{jobs}-{{hart}}"));
        let mut a = vec![
            "--all-harts",
            "--jobs",
            jobs,
            "--pcs",
            s(&pcs),
            "--flow",
            s(&flow),
            "--brstack-every",
            "500",
        ];
        for (opt, p) in &st {
            a.extend([*opt, s(p)]);
        }
        a.extend_from_slice(h.counts);
        let o = decode(&a);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with(h.count_line)).count(),
            3,
            "{err}"
        );
        for (src, _) in harts {
            let id = src.to_string();
            let (p1, f1) = (
                d.join(format!("one{id}.pcs")),
                d.join(format!("one{id}.flow")),
            );
            let one = stateful(&format!("one{id}"));
            let mut a = vec![h.one, &id, "--pcs", s(&p1), "--flow", s(&f1)];
            a.extend(["--brstack-every", "500"]);
            for (opt, p) in &one {
                a.extend([*opt, s(p)]);
            }
            let o = decode(&a);
            assert!(o.status.success(), "{}", stderr(&o));
            for ((opt, p1), (_, p)) in one.iter().zip(&st) {
                let got = std::fs::read(harts_path(p, &id)).unwrap();
                assert!(!got.is_empty(), "{opt}");
                assert!(got == std::fs::read(p1).unwrap(), "{} {id}: {opt}", h.proto);
            }
            let own = d.join(format!("own{id}.pcs"));
            let own_trace = d.join(format!("h{id}.trace"));
            let o = rvtrace(&[
                "decode",
                h.proto,
                s(&own_trace),
                "--elf",
                elf,
                "--pcs",
                s(&own),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let got = std::fs::read(d.join(format!("j{jobs}-{id}.pcs"))).unwrap();
            assert!(!got.is_empty());
            assert!(
                got == std::fs::read(&p1).unwrap(),
                "{} {id}: PC list",
                h.proto
            );
            assert!(
                got == std::fs::read(&own).unwrap(),
                "{} {id}: PC list of its own trace",
                h.proto
            );
            let got = std::fs::read(d.join(format!("j{jobs}-{id}.flow"))).unwrap();
            assert!(got == std::fs::read(&f1).unwrap(), "{} {id}: flow", h.proto);
        }
    }
    // Without {hart} in an output path: a usage error, nothing written.
    let x = d.join("x.pcs");
    let o = decode(&["--all-harts", "--pcs", s(&x)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!x.exists());
    (d, all, traces)
}

/// N-Trace: the SRC field (`--src-bits`).
#[test]
fn all_harts_are_split_and_decoded() {
    all_harts_case(&NTRACE_HARTS);
}

/// E-Trace: the encapsulation's srcID; also every packet carries its hart's srcID, the harts
/// decoded as one make losses, and the usage errors.
#[test]
fn etrace_all_harts_are_split_and_decoded() {
    let (d, all, traces) = all_harts_case(&ETRACE_HARTS);
    let (elf, all_s) = ("../../programs/elf/heap-rv64gc.elf", s(&all));
    for (b, src) in traces.iter().zip([1u8, 2, 5]) {
        // The srcID: the 3 bits after the header byte.
        assert!(etrace_packets(b)
            .iter()
            .all(|p| p.len() > 1 && p[1] & 7 == src));
    }
    // Without the filter the harts' packets make one wrong flow: losses, exit status 1.
    let o = rvtrace(&["decode", "etrace", all_s, "--elf", elf, "--srcid-bits", "3"]);
    assert_eq!(o.status.code(), Some(1));
    // Usage errors, nothing written: no srcID width; a srcID wider than the field.
    let x = d.join("x.pcs");
    for args in [
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
