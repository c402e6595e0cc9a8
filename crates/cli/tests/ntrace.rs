//! `rvtrace dump|encode|decode ntrace` end to end.

use std::path::PathBuf;
mod common;
use common::{rvtrace, tmpdir};

/// N-Trace 3.5 Table 6, dumped field by field as the table shows it.
#[test]
fn dump_table6() {
    let d = tmpdir("dump");
    let f = d.join("t6.bin");
    std::fs::write(&f, [0xFF, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF]).unwrap();
    let o = rvtrace(&["dump", "ntrace", f.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("0x70 011100_00: TCODE[6]=28 (MSG #0) - IndirectBranchHist\n"));
    assert!(text.contains("0x1D 000111_01: ICNT[10]=0x7D\n"));
    assert!(text.contains("0xFF 111111_11: HIST[12]=0xFFE\n"));
}

#[test]
fn dump_missing_file() {
    let o = rvtrace(&["dump", "ntrace", "/nonexistent/x.bin"]);
    assert_eq!(o.status.code(), Some(125));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}

/// A NexRv-made HTM stream decodes to the conformance PC list through the CLI.
#[test]
fn decode_nexrv_vector() {
    let Some(dir) = rvtrace_testkit::conformance_dir() else {
        return;
    };
    let d = tmpdir("decode");
    let v = dir.join("ntrace/matrix-rv32imac");
    let pcs = d.join("pcs.txt");
    let flow = d.join("flow.txt");
    let o = rvtrace(&[
        "decode",
        "ntrace",
        v.join("matrix-rv32imac-htm-rpt2.bin").to_str().unwrap(),
        "--elf",
        v.join("matrix-rv32imac.elf").to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
        "--flow",
        flow.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = rvtrace_testkit::read_vector(&dir, "ntrace/matrix-rv32imac/matrix-rv32imac.pcs.txt");
    assert!(std::fs::read(&pcs).unwrap() == want);
    let flow = std::fs::read_to_string(&flow).unwrap();
    assert!(flow.starts_with("sync 0x80000000 Start\nrange 0x80000000 "));
    // The ProgTraceCorrelation message (3 bytes) ends the trace.
    assert!(flow.ends_with("end at byte 2377\n"), "{flow}");
}

/// A corrupted stream: losses are reported with byte offsets, decoding resumes, exit status 1.
#[test]
fn decode_reports_loss() {
    let Some(dir) = rvtrace_testkit::conformance_dir() else {
        return;
    };
    let d = tmpdir("loss");
    let v = dir.join("ntrace/crc-rv64gc");
    let mut data = std::fs::read(v.join("crc-rv64gc-htm.bin")).unwrap();
    data[100] = 0x02; // reserved MSEO
    let bad = d.join("bad.bin");
    std::fs::write(&bad, &data).unwrap();
    let o = rvtrace(&[
        "decode",
        "ntrace",
        bad.to_str().unwrap(),
        "--elf",
        v.join("crc-rv64gc.elf").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("byte 100: reserved MSEO=10"), "{e}");
}

fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf")
}

/// `rvtrace run` -> `encode ntrace` -> `decode ntrace` gives the run's PC list, for a program
/// with traps and interrupts, in the judged configurations.
#[test]
fn encode_decode_round_trip() {
    let d = tmpdir("rt");
    for prog in ["timer-rv64gc", "traps-rv32imac", "setjmp-rv64gc"] {
        let elf = programs_dir().join(format!("{prog}.elf"));
        let ing = d.join(format!("{prog}.ing"));
        let pcs = d.join(format!("{prog}.pcs"));
        let o = rvtrace(&[
            "run",
            elf.to_str().unwrap(),
            "--ingress",
            ing.to_str().unwrap(),
            "--pcs",
            pcs.to_str().unwrap(),
        ]);
        assert!(o.status.code().is_some(), "{prog}");
        let want = std::fs::read(&pcs).unwrap();
        for opts in [
            &["--mode", "btm"][..],
            &["--mode", "htm"],
            &["--repeat-history"],
            &["--call-stack", "8"],
            &["--call-stack", "8", "--repeat-history"],
            &["--mode", "btm", "--repeat-branch"],
            &["--sync-period", "10", "--timestamps"],
            &["--preset", "nexrv"],
            &[
                "--extend-addr-msb",
                "--src-bits",
                "3",
                "--src-id",
                "5",
                "--ownership",
                "--call-stack",
                "4",
                "--call-stack-partial",
                "16",
            ],
        ] {
            let bin = d.join(format!("{prog}.bin"));
            let out = d.join(format!("{prog}.out"));
            let mut args = vec![
                "encode",
                "ntrace",
                ing.to_str().unwrap(),
                "-o",
                bin.to_str().unwrap(),
                "--stats",
            ];
            args.extend_from_slice(opts);
            let o = rvtrace(&args);
            assert!(
                o.status.success(),
                "{prog} {opts:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(String::from_utf8_lossy(&o.stderr).contains("bits/instruction"));
            let mut args = vec![
                "decode",
                "ntrace",
                bin.to_str().unwrap(),
                "--elf",
                elf.to_str().unwrap(),
                "--pcs",
                out.to_str().unwrap(),
            ];
            // The decoder takes the same options (it needs only some of them).
            args.extend(
                opts.iter()
                    .filter(|o| !["--mode", "btm", "htm", "--preset", "nexrv"].contains(o)),
            );
            let o = rvtrace(&args);
            assert!(
                o.status.success(),
                "{prog} {opts:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(std::fs::read(&out).unwrap() == want, "{prog} {opts:?}");
        }
    }
}

/// PCSEQ input with the NexRv preset gives NexRv's bytes.
#[test]
fn encode_pcseq_nexrv() {
    let Some(dir) = rvtrace_testkit::conformance_dir() else {
        return;
    };
    let d = tmpdir("pcseq");
    let v = dir.join("ntrace/matrix-rv64gc");
    let bin = d.join("m.bin");
    let o = rvtrace(&[
        "encode",
        "ntrace",
        v.join("matrix-rv64gc-PCSEQ.txt").to_str().unwrap(),
        "--input-format",
        "pcseq",
        "--preset",
        "nexrv",
        "--mode",
        "btm",
        "-o",
        bin.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read(&bin).unwrap() == std::fs::read(v.join("matrix-rv64gc-btm.bin")).unwrap()
    );
}
