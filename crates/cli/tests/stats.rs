//! `rvtrace stats`: the figures of a trace encoded from a run agree with the run and the file
//! (the protocol crates' tests check them against NexRv's and the reference flow's own
//! figures); JSON; sync spacing adds up; a damaged trace has losses (exit 1).

use crate::common;

use common::{ok, program, rvtrace, s, stderr, stdout, tmpdir};

/// The number after `"key":` in flat JSON text (the first occurrence).
fn num(json: &str, key: &str) -> f64 {
    let at = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("{key}: {json}"));
    let rest = &json[at + key.len() + 3..];
    let end = rest.find([',', '}']).unwrap();
    rest[..end].parse().unwrap()
}

#[test]
fn stats_of_both_protocols() {
    let t = tmpdir("stats");
    let elf = program("loops-rv64gc");
    let (ing, pcs) = (t.join("t.ing"), t.join("t.pcs"));
    ok(
        &rvtrace(&["run", s(&elf), "--ingress", s(&ing), "--pcs", s(&pcs)]),
        "run",
    );
    let n_instr = std::fs::read_to_string(&pcs).unwrap().lines().count() as f64;
    let (nex, te) = (t.join("t.nex"), t.join("t.te"));
    ok(
        &rvtrace(&[
            "encode",
            "ntrace",
            s(&ing),
            "-o",
            s(&nex),
            "--sync-period",
            "20",
        ]),
        "encode",
    );
    ok(
        &rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te), "--resync", "20"]),
        "encode",
    );
    for (trace, proto) in [(&nex, "ntrace"), (&te, "etrace")] {
        let o = rvtrace(&[
            "stats",
            s(trace),
            "--trace",
            proto,
            "--elf",
            s(&elf),
            "--json",
        ]);
        ok(&o, "stats");
        let j = stdout(&o);
        assert_eq!(num(&j, "instructions"), n_instr, "{j}");
        assert_eq!(
            num(&j, "bytes"),
            std::fs::metadata(trace).unwrap().len() as f64
        );
        assert_eq!(num(&j, "losses"), 0.0);
        let syncs = num(&j, "syncs");
        assert!(syncs > 10.0, "{j}");
        // Spacings between consecutive syncs: one fewer than the syncs, within the trace.
        let at = j.find("\"sync_instructions\":").unwrap();
        let si = &j[at..];
        assert_eq!(num(si, "count"), syncs - 1.0, "{j}");
        assert!(num(si, "mean") * (syncs - 1.0) <= n_instr + 0.5, "{j}");
        assert!(num(&j, "bits_per_instruction") > num(&j, "payload_bits_per_instruction"));
        let text = rvtrace(&["stats", s(trace), "--trace", proto, "--elf", s(&elf)]);
        ok(&text, "stats text");
        assert!(
            stdout(&text).contains("bits/instruction"),
            "{}",
            stdout(&text)
        );
    }
    // A damaged trace: losses, exit 1.
    let mut bad = std::fs::read(&nex).unwrap();
    let mid = bad.len() / 2;
    bad[mid..mid + 16].fill(0xa5);
    let bad_nex = t.join("bad.nex");
    std::fs::write(&bad_nex, &bad).unwrap();
    let o = rvtrace(&[
        "stats",
        s(&bad_nex),
        "--trace",
        "ntrace",
        "--elf",
        s(&elf),
        "--json",
        "--src-bits",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(num(&stdout(&o), "losses") >= 1.0);
}

/// A trace of two harts (two runs encoded with SRC / srcID 1 and 2, their messages or packets
/// interleaved): the figures of one hart (`--src-id` / `--srcid`) are those of its own trace,
/// bytes and sync spacing in bytes included; the other hart's messages or packets are counted
/// apart.
#[test]
fn one_hart_of_two() {
    let t = tmpdir("stats-harts");
    let elfs = [program("loops-rv64gc"), program("recurse-rv64gc")];
    let ings = [t.join("a.ing"), t.join("b.ing")];
    for (elf, ing) in elfs.iter().zip(&ings) {
        ok(&rvtrace(&["run", s(elf), "--ingress", s(ing)]), "run");
    }
    // (N-Trace with periodic syncs: the programs' traps are no sync messages there.)
    let cases = [
        (
            "ntrace",
            "nex",
            ["--src-bits", "2"],
            "--src-id",
            "other SRCs' messages",
            &["--sync-period", "16"][..],
        ),
        (
            "etrace",
            "te",
            ["--srcid-bits", "2"],
            "--srcid",
            "other packets",
            &[][..],
        ),
    ];
    for (proto, ext, width, id, other, sync) in cases {
        let mut traces = Vec::new();
        let mut own = Vec::new();
        for (k, ing) in ings.iter().enumerate() {
            let out = t.join(format!("{k}.{ext}"));
            let k = (k + 1).to_string();
            let mut args = vec!["encode", proto, s(ing), "-o", s(&out)];
            args.extend([width[0], width[1], id, &k]);
            args.extend(sync);
            ok(&rvtrace(&args), "encode");
            traces.push(std::fs::read(&out).unwrap());
            own.push(out);
        }
        // The harts' messages or packets interleaved: the sync spacing in bytes of one hart
        // counts its own bytes only.
        let split = match proto {
            "ntrace" => common::ntrace_messages,
            _ => common::etrace_packets,
        };
        let both = common::interleave(traces.iter().map(|b| split(b)).collect());
        let mixed = t.join(format!("both.{ext}"));
        std::fs::write(&mixed, &both).unwrap();
        for (k, own) in own.iter().enumerate() {
            let k = (k + 1).to_string();
            let stats = |trace: &std::path::Path| {
                let mut args = vec!["stats", s(trace), "--trace", proto, "--elf"];
                args.extend([s(&elfs[k.parse::<usize>().unwrap() - 1]), "--no-meta"]);
                args.extend([width[0], width[1], id, &k]);
                let o = rvtrace(&args);
                ok(&o, "stats");
                stdout(&o)
            };
            let (got, want) = (stats(&mixed), stats(own));
            let drop_other = |text: &str| -> Vec<String> {
                text.lines()
                    .filter(|l| !l.starts_with(other))
                    .map(String::from)
                    .collect()
            };
            assert_eq!(drop_other(&got), drop_other(&want), "{proto} hart {k}");
            assert!(
                got.contains("bytes: min"),
                "{proto} hart {k}: sync spacing\n{got}"
            );
            assert!(
                got.lines()
                    .any(|l| l.starts_with(other) && !l.ends_with(" 0")),
                "{got}"
            );
            assert!(got.contains("instructions"), "{got}");
        }
    }
}
