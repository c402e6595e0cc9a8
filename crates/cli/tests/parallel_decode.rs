//! `rvtrace decode ntrace|etrace --jobs N`: the same PC list, flow text, counts, warnings and
//! exit status as with one thread, on a whole trace and on one with a damaged byte.

mod common;
use common::{rvtrace, tmpdir};

fn rvtrace_chunked(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(args)
        .env("RVTRACE_CHUNK_BYTES", "64")
        .output()
        .expect("run rvtrace")
}

/// Decode `trace` with `--jobs 1` and `--jobs 2` (chunks of 64 bytes, cut at the syncs of the
/// small sync period) and compare everything.
fn same_with_jobs(proto: &str, trace: &std::path::Path, elf: &str, dir: &std::path::Path) {
    let mut outs = Vec::new();
    for jobs in ["1", "2"] {
        let pcs = dir.join(format!("pcs{jobs}.txt"));
        let flow = dir.join(format!("flow{jobs}.txt"));
        let o = rvtrace_chunked(&[
            "decode",
            proto,
            trace.to_str().unwrap(),
            "--elf",
            elf,
            "--pcs",
            pcs.to_str().unwrap(),
            "--flow",
            flow.to_str().unwrap(),
            "--stats",
            "--jobs",
            jobs,
        ]);
        outs.push((
            o.status.code(),
            String::from_utf8(o.stderr).unwrap(),
            std::fs::read(&pcs).unwrap(),
            std::fs::read(&flow).unwrap(),
        ));
    }
    assert!(!outs[0].2.is_empty(), "{proto}: {}", outs[0].1);
    assert_eq!(outs[0].0, outs[1].0, "{proto}: exit status");
    assert_eq!(outs[0].1, outs[1].1, "{proto}: stderr");
    assert!(outs[0].2 == outs[1].2, "{proto}: PC lists differ");
    assert!(outs[0].3 == outs[1].3, "{proto}: flows differ");
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
