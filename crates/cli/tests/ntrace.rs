//! `rvtrace dump|encode|decode ntrace` end to end.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rvtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(args)
        .output()
        .expect("run rvtrace")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rvtrace-ntrace-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

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
