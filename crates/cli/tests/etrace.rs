//! `rvtrace dump|encode|decode etrace` on the E-Trace conformance vectors.

use rvtrace_testkit::{conformance_dir, parse_pcs, read_vector};

use crate::common;
use common::{rvtrace, stderr, stdout, tmpdir};

/// A vector file as a path, decompressed into `tmp` when it is stored as `.gz`.
fn vector_file(dir: &std::path::Path, rel: &str, tmp: &std::path::Path) -> String {
    let plain = dir.join(rel);
    if plain.is_file() {
        return plain.display().to_string();
    }
    let out = tmp.join(rel.replace('/', "_"));
    std::fs::write(&out, read_vector(dir, rel)).unwrap();
    out.display().to_string()
}

#[test]
fn dump_csv_equals_the_reference_deserialiser() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    let base = "etrace/matrix-rv32imac/itype4_debug";
    let raw = dir.join(format!("{base}/matrix-rv32imac.te_inst_raw"));
    let scf = dir.join(format!("{base}/hardware_32.scf"));
    let o = rvtrace(&[
        "dump",
        "etrace",
        raw.to_str().unwrap(),
        "--scf",
        scf.to_str().unwrap(),
        "--csv",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = read_vector(&dir, &format!("{base}/matrix-rv32imac.te_inst"));
    assert!(o.stdout == want, "CSV differs from the reference te_inst");
    // The field-by-field listing names every packet.
    // Without --scf: the reference template's parameters (itype4_basic uses them).
    let basic = dir.join("etrace/matrix-rv32imac/itype4_basic/matrix-rv32imac.te_inst_raw");
    let o = rvtrace(&["dump", "etrace", basic.to_str().unwrap(), "--xlen", "32"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let first: Vec<&str> = text.lines().take(2).collect();
    assert_eq!(
        first,
        [
            "00000000  F3S3  format=3 subformat=3 ienable=1 encoder_mode=0 qual_status=no_change ioptions=0x0 denable=0 dloss=0 doptions=0x0  [none]",
            "00000002  F3S0  format=3 subformat=0 branch=1 privilege=3 context=0 address=0x40000000  -> 0x80000000",
        ]
    );
}

#[test]
fn decode_rebuilds_the_pc_list() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    let tmp = tmpdir("decode");
    for prog in ["matrix-rv64gc", "crc-rv32imac"] {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        for cfg in ["itype3_basic", "itype4_debug"] {
            let base = format!("etrace/{prog}/{cfg}");
            let raw = vector_file(&dir, &format!("{base}/{prog}.te_inst_raw"), &tmp);
            let scf = dir.join(format!("{base}/hardware_{bits}.scf"));
            let elf = dir.join(format!("etrace/{prog}/{prog}.elf"));
            let pcs = tmp.join(format!("{prog}-{cfg}.pcs"));
            let o = rvtrace(&[
                "decode",
                "etrace",
                &raw,
                "--elf",
                elf.to_str().unwrap(),
                "--scf",
                scf.to_str().unwrap(),
                "--pcs",
                pcs.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let got = parse_pcs(&std::fs::read(&pcs).unwrap());
            let want = parse_pcs(&read_vector(&dir, &format!("etrace/{prog}/{prog}.pcs.txt")));
            assert!(got == want, "{base}: decoded PCs differ");
        }
    }
}

#[test]
fn bad_input_is_one_line_and_status_125() {
    let tmp = tmpdir("bad");
    let missing = tmp.join("missing.bin");
    let o = rvtrace(&["dump", "etrace", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    // Garbage decodes to errors, never a crash.
    let junk = tmp.join("junk.bin");
    let mut bytes = vec![0u8; 4096];
    rvtrace_testkit::Rng(1).fill(&mut bytes);
    std::fs::write(&junk, bytes).unwrap();
    let o = rvtrace(&["dump", "etrace", junk.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)));
}

#[test]
fn encode_reference_preset_is_byte_identical() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    let tmp = tmpdir("encode");
    let base = "etrace/parser-rv32imac/itype4_debug";
    let input = vector_file(&dir, &format!("{base}/parser-rv32imac.encoder_input"), &tmp);
    let out = tmp.join("parser.te_inst_raw");
    let o = rvtrace(&[
        "encode",
        "etrace",
        &input,
        "-o",
        out.to_str().unwrap(),
        "--preset",
        "reference",
        "--scf",
        dir.join(format!("{base}/hardware_32.scf"))
            .to_str()
            .unwrap(),
        "--ucf",
        dir.join(format!("{base}/parser-rv32imac.encoder.ucf"))
            .to_str()
            .unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = read_vector(&dir, &format!("{base}/parser-rv32imac.te_inst_raw"));
    assert!(std::fs::read(&out).unwrap() == want);
}

/// `run --ingress`, `encode`, `decode --pcs` give `run --pcs`, with one set of option flags for
/// both ends.
#[test]
fn run_encode_decode_round_trip() {
    let elf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../programs/elf/recurse-rv64gc.elf");
    let tmp = tmpdir("roundtrip");
    let ingress = tmp.join("r.ingress");
    let pcs = tmp.join("r.pcs");
    let o = rvtrace(&[
        "run",
        elf.to_str().unwrap(),
        "--ingress",
        ingress.to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    for opts in [
        &[][..],
        &["--full-address"][..],
        &["--implicit-return", "--return-stack", "8"][..],
    ] {
        let trace = tmp.join("r.etrace");
        let mut args = vec![
            "encode",
            "etrace",
            ingress.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
        ];
        args.extend_from_slice(opts);
        let o = rvtrace(&args);
        assert!(
            o.status.success(),
            "{opts:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = tmp.join("d.pcs");
        let mut args = vec![
            "decode",
            "etrace",
            trace.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            "--pcs",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(opts);
        let o = rvtrace(&args);
        assert!(
            o.status.success(),
            "{opts:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&pcs).unwrap(),
            "{opts:?}"
        );
    }
}

/// The reference flow's decoder configuration names the program (`object-files`): the same
/// files as `decoder_model.py` takes decode without --elf.
#[test]
fn decode_with_the_reference_configuration_files() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    let tmp = tmpdir("ucf");
    let base = dir.join("etrace/matrix-rv64gc/itype4_debug");
    let pcs = tmp.join("m.pcs");
    let o = rvtrace(&[
        "decode",
        "etrace",
        base.join("matrix-rv64gc.te_inst_raw").to_str().unwrap(),
        "--scf",
        base.join("hardware_64.scf").to_str().unwrap(),
        "--ucf",
        base.join("matrix-rv64gc.decoder.ucf").to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = read_vector(&dir, "etrace/matrix-rv64gc/matrix-rv64gc.pcs.txt");
    assert!(std::fs::read(&pcs).unwrap() == want);
}

/// Vectors the reference flow (encoder_model.py) made from rvtrace's test programs
/// (`crates/etrace/tests/vectors/README.md`): `decode` rebuilds the run's instructions, and
/// `encode --preset reference` (from rvtrace's own ingress, with `--elf`) is byte-identical.
/// csrs-rv32imac has trap returns (`mret`, reported by the reference flow); mixed-rv64gc has a
/// `c.jr t0` jump table in implicit return mode (reported by the reference flow, not a return).
#[test]
fn reference_flow_vectors_of_test_programs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let vectors = root.join("crates/etrace/tests/vectors");
    let tmp = tmpdir("refvec");
    for (prog, cfg, bits) in [
        ("csrs-rv32imac", "itype4_basic", 32),
        ("mixed-rv64gc", "itype4_ir", 64),
        ("mixed-rv64gc", "itype4_call_stack", 64),
    ] {
        let dir = vectors.join(format!("{prog}/{cfg}"));
        let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
        let elf = s(&root.join(format!("programs/elf/{prog}.elf")));
        let scf = s(&dir.join(format!("hardware_{bits}.scf")));
        let ucf = s(&dir.join(format!("{prog}.encoder.ucf")));
        let raw = s(&dir.join(format!("{prog}.te_inst_raw")));
        // The run the vector was made from: kept beside it when the hart has changed since
        // (csrs-rv32imac: made while `misa` showed H, which changes what the program prints),
        // else run again. The vectors were made with the command line "<prog>.elf" (it changes
        // the instruction stream: picolibc's start-up scans it).
        let stored = dir.join(format!("{prog}.ingress"));
        let ingress = if stored.is_file() {
            s(&stored)
        } else {
            let ingress = s(&tmp.join(format!("{prog}-{cfg}.ingress")));
            let o = rvtrace(&[
                "run",
                &elf,
                "--cmdline",
                &format!("{prog}.elf"),
                "--itype-width",
                "4",
                "--ingress",
                &ingress,
            ]);
            assert!(o.status.success(), "{prog}: run failed");
            ingress
        };
        // Decoded instructions = the run's, as `rvtrace text` lists them (one line each).
        let insns = |text: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(text)
                .lines()
                .filter(|l| l.starts_with("0x"))
                .map(str::to_string)
                .collect()
        };
        let o = rvtrace(&["text", &ingress, "--elf", &elf]);
        assert!(o.status.success(), "{prog}: text failed");
        let want = insns(&o.stdout);
        let out = s(&tmp.join(format!("{prog}-{cfg}.decoded")));
        let o = rvtrace(&[
            "decode", "etrace", &raw, "--elf", &elf, "--scf", &scf, "--text", &out,
        ]);
        assert!(
            o.status.success(),
            "{prog} {cfg}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got = insns(&std::fs::read(&out).unwrap());
        assert!(!want.is_empty());
        assert!(got == want, "{prog} {cfg}: decoded instructions differ");
        let enc = s(&tmp.join(format!("{prog}-{cfg}.te_inst_raw")));
        let o = rvtrace(&[
            "encode",
            "etrace",
            &ingress,
            "-o",
            &enc,
            "--preset",
            "reference",
            "--scf",
            &scf,
            "--ucf",
            &ucf,
            "--elf",
            &elf,
        ]);
        assert!(
            o.status.success(),
            "{prog} {cfg}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&enc).unwrap() == std::fs::read(&raw).unwrap(),
            "{prog} {cfg}: encode --preset reference differs from the reference encoder"
        );
    }
}

/// A program run: its ELF, ingress and PC list in `tmp`.
struct Run {
    elf: String,
    ingress: String,
    pcs: String,
}

fn run(tmp: &std::path::Path, prog: &str) -> Run {
    let elf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../programs/elf/{prog}.elf"))
        .display()
        .to_string();
    let ingress = tmp.join(format!("{prog}.ingress")).display().to_string();
    let pcs = tmp.join(format!("{prog}.pcs")).display().to_string();
    let o = rvtrace(&["run", &elf, "--ingress", &ingress, "--pcs", &pcs]);
    assert!(o.status.success(), "{}", stderr(&o));
    Run { elf, ingress, pcs }
}

fn encode(r: &Run, out: &str, opts: &[&str]) {
    let mut args = vec!["encode", "etrace", &r.ingress, "-o", out];
    args.extend_from_slice(opts);
    let o = rvtrace(&args);
    assert!(o.status.success(), "{opts:?}: {}", stderr(&o));
}

/// `decode etrace TRACE --elf ELF --pcs OUT [opts]`: the output and the decoded PCs.
fn decode(r: &Run, trace: &str, opts: &[&str]) -> (std::process::Output, Vec<u8>) {
    let out = format!("{trace}.decoded");
    let _ = std::fs::remove_file(&out);
    let mut args = vec![
        "decode", "etrace", trace, "--elf", &r.elf, "--pcs", &out, "--stats",
    ];
    args.extend_from_slice(opts);
    let o = rvtrace(&args);
    (o, std::fs::read(&out).unwrap_or_default())
}

/// Issue 9 item 1: encapsulation widths without `--format` give an encapsulated trace (they
/// used to be ignored: plain te_inst that the matching decode could not read); with
/// `--format raw` they are a usage error.
#[test]
fn encapsulation_widths_imply_encap() {
    let tmp = tmpdir("encapwidths");
    let r = run(&tmp, "recurse-rv64gc");
    let t = tmp.join("w.etrace").display().to_string();
    let w = [
        "--srcid-bits",
        "4",
        "--timestamp-bytes",
        "2",
        "--type-bits",
        "2",
    ];
    encode(&r, &t, &w);
    let want = std::fs::read(&r.pcs).unwrap();
    // The same options on both ends, without the sidecar.
    let mut opts = w.to_vec();
    opts.push("--no-meta");
    let (o, got) = decode(&r, &t, &opts);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(got == want);
    // The widths are in the stream: the framing differs from plain te_inst.
    let plain = tmp.join("p.etrace").display().to_string();
    encode(&r, &plain, &[]);
    assert_ne!(std::fs::read(&plain).unwrap(), std::fs::read(&t).unwrap());
    let o = rvtrace(&[
        "encode",
        "etrace",
        &r.ingress,
        "-o",
        &t,
        "--format",
        "raw",
        "--srcid-bits",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--format encap"), "{}", stderr(&o));
}

/// Issue 9 item 5: `encode` writes `OUT.meta`; `decode` and `dump` read it by default, the
/// command line wins with a warning, and without it a failing decode names the likely option.
#[test]
fn the_sidecar_carries_the_settings() {
    let tmp = tmpdir("sidecar");
    let r = run(&tmp, "recurse-rv64gc");
    let t = tmp.join("s.etrace").display().to_string();
    let opts = [
        "--branch-prediction",
        "64",
        "--jump-target-cache",
        "16",
        "--implicit-return",
        "--return-stack",
        "8",
        "--srcid-bits",
        "2",
    ];
    encode(&r, &t, &opts);
    let meta = std::fs::read_to_string(format!("{t}.meta")).unwrap();
    assert!(meta.starts_with("# "), "{meta}");
    let keys: Vec<&str> = meta
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(" = ").next().unwrap())
        .collect();
    assert_eq!(keys[0], "protocol");
    assert!(meta.contains("\nprotocol = etrace\n"));
    assert!(meta.contains("\nbranch-prediction = 64\n"), "{meta}");
    assert!(meta.contains("\nreturn-stack = 8\n"), "{meta}");
    assert!(meta.contains("\nsrcid-bits = 2\n"), "{meta}");
    let want = std::fs::read(&r.pcs).unwrap();
    // No options: the sidecar's.
    let (o, got) = decode(&r, &t, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(got == want);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    // A contradicting option wins, with a warning naming the sidecar.
    let (o, _) = decode(&r, &t, &["--srcid-bits", "3"]);
    let e = stderr(&o);
    assert!(
        e.contains("--src-bits 3 contradicts") && e.contains(".meta"),
        "{e}"
    );
    assert_eq!(o.status.code(), Some(1), "{e}");
    // Without the sidecar the stream's framing is unknown: a loss, and a hint at the options.
    let (o, _) = decode(&r, &t, &["--no-meta"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("note: no sidecar") && e.contains("--src-bits"),
        "{e}"
    );
    // The sidecar's framing also serves dump, which then needs no --xlen.
    let o = rvtrace(&["dump", "etrace", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// Issue 30 item 5: the PULP rv_tracer's support-packet layout (`--options-layout pulp`) and the
/// ESP32-C6 framing (`--format esp32`) go into the sidecar, so decode and dump need no option;
/// decoded with the other layout, the trace is refused or loses; the ESP32 header takes no
/// encapsulation widths. (Both are checked against `riscv-etrace` in the etrace crate's
/// `cross_check`.)
#[test]
fn pulp_layout_and_esp32_framing_through_the_sidecar() {
    let tmp = tmpdir("pulp-esp32");
    let r = run(&tmp, "recurse-rv64gc");
    let want = std::fs::read(&r.pcs).unwrap();
    for (stem, opts, key) in [
        (
            "pulp",
            &["--options-layout", "pulp", "--full-address"][..],
            "options-layout = pulp",
        ),
        ("esp32", &["--format", "esp32"][..], "format = esp32"),
    ] {
        let t = tmp.join(format!("{stem}.etrace")).display().to_string();
        encode(&r, &t, opts);
        let meta = std::fs::read_to_string(format!("{t}.meta")).unwrap();
        assert!(meta.contains(&format!("\n{key}\n")), "{meta}");
        let (o, got) = decode(&r, &t, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(got == want, "{stem}");
        let o = rvtrace(&["dump", "etrace", &t]);
        assert!(o.status.success(), "{}", stderr(&o));
        if stem == "pulp" {
            // The first support packet's options, read in PULP's bit order.
            assert!(stdout(&o).contains("[full-address]"), "{}", stdout(&o));
            // Read as rvtrace's layout, bit 6 (delta address) is not an option and bit 5
            // (PULP's full address) would be sijump: the decoder is told otherwise, warns, and
            // the flow is not the run's.
            let (o, got) = decode(&r, &t, &["--options-layout", "rvtrace"]);
            assert!(
                stderr(&o).contains("--options-layout rvtrace contradicts"),
                "{}",
                stderr(&o)
            );
            assert!(got != want);
        } else {
            let (o, _) = decode(&r, &t, &["--no-meta"]);
            assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        }
    }
    let o = rvtrace(&[
        "encode",
        "etrace",
        &r.ingress,
        "-o",
        &tmp.join("x").display().to_string(),
        "--format",
        "esp32",
        "--src-bits",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--format esp32"), "{}", stderr(&o));
    let o = rvtrace(&[
        "encode",
        "etrace",
        &r.ingress,
        "-o",
        "x",
        "--options-layout",
        "nexus",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Issue 9 item 3: a trace without its start or its end, or without any synchronisation, is a
/// loss (an error in the summary and exit status 1), and the summary's count is the warnings'.
#[test]
fn lost_start_or_end_is_an_error() {
    let tmp = tmpdir("lost");
    let r = run(&tmp, "loops-rv32imac");
    let t = tmp.join("l.etrace").display().to_string();
    encode(&r, &t, &[]);
    let good = std::fs::read(&t).unwrap();
    let (o, got) = decode(&r, &t, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(" 0 errors"), "{}", stderr(&o));
    assert!(got == std::fs::read(&r.pcs).unwrap());
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "truncated",
            good[..good.len() / 2].to_vec(),
            "truncated packet",
        ),
        (
            "wrapped",
            good[good.len() / 3..].to_vec(),
            "the start of the trace is lost",
        ),
        ("no end marker", good[..good.len() - 2].to_vec(), "lost"),
        ("empty", vec![], "no te_inst packet"),
    ];
    for (what, bytes, msg) in cases {
        let f = tmp.join(format!("{what}.etrace")).display().to_string();
        std::fs::write(&f, &bytes).unwrap();
        std::fs::copy(format!("{t}.meta"), format!("{f}.meta")).unwrap();
        let (o, _) = decode(&r, &f, &[]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {e}");
        assert!(e.contains(msg), "{what}: {e}");
        let warnings = e
            .lines()
            .filter(|l| l.starts_with("rvtrace: warning:"))
            .count();
        assert!(e.contains(&format!(" {warnings} errors")), "{what}: {e}");
    }
}

/// Issue 9 item 8: losses are printed as they happen, at most `--max-warnings`, the rest
/// counted; a run of garbage is one loss saying how many bytes it skipped.
#[test]
fn warnings_are_capped() {
    let tmp = tmpdir("capped");
    let r = run(&tmp, "loops-rv32imac");
    let t = tmp.join("l.etrace").display().to_string();
    encode(&r, &t, &[]);
    // The trace's first packet (its support packet; `dump` shows where the next starts) and a
    // byte that is no packet (0xff: extend set in a stream without timestamps), 20000 times.
    let good = std::fs::read(&t).unwrap();
    let o = rvtrace(&["dump", "etrace", &t]);
    let text = stdout(&o);
    assert!(text.lines().next().unwrap().contains("F3S3"), "{text}");
    let n = usize::from_str_radix(&text.lines().nth(1).unwrap()[..8], 16).unwrap();
    let mut bad = Vec::new();
    for _ in 0..20000 {
        bad.extend_from_slice(&good[..n]);
        bad.push(0xff);
    }
    let f = tmp.join("bad.etrace").display().to_string();
    std::fs::write(&f, &bad).unwrap();
    let (o, _) = decode(&r, &f, &["--max-warnings", "5"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let shown = e
        .lines()
        .filter(|l| l.starts_with("rvtrace: warning:") && l.contains(": byte 0x"))
        .count();
    assert_eq!(shown, 5, "{e}");
    assert!(e.contains(" 20000 errors"), "{e}");
    assert!(
        e.contains("19995 more warnings not shown (--max-warnings 5)"),
        "{e}"
    );
    // 1 MB of 0xff: one loss.
    let f = tmp.join("ff.etrace").display().to_string();
    std::fs::write(&f, vec![0xffu8; 1 << 20]).unwrap();
    let (o, _) = decode(&r, &f, &[]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("1048575 more errors: 1048576 bytes skipped"),
        "{e}"
    );
    assert!(e.contains(" 1 errors"), "{e}");
}

/// Issue 9 item 13: `decode --help` lists what the decoder uses only; `dump` says when it
/// guesses the XLEN, resolves differential addresses, names options, and recognises files of
/// the wrong kind.
#[test]
fn help_and_dump() {
    let o = rvtrace(&["decode", "etrace", "--help"]);
    let h = stdout(&o);
    assert!(
        !h.contains("--resync") && !h.contains("--itype-width"),
        "{h}"
    );
    assert!(
        h.contains("--max-warnings") && h.contains("--branch-prediction"),
        "{h}"
    );
    let h = stdout(&rvtrace(&["encode", "etrace", "--help"]));
    assert!(
        h.contains("--sync-period") && h.contains("--itype-width"),
        "{h}"
    );

    let tmp = tmpdir("dump");
    let r = run(&tmp, "loops-rv32imac");
    let t = tmp.join("d.etrace").display().to_string();
    encode(&r, &t, &["--implicit-return"]);
    let o = rvtrace(&["dump", "etrace", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let first: Vec<&str> = text.lines().take(2).collect();
    assert!(first[0].ends_with("  [implicit-return]"), "{}", first[0]);
    // The program starts at 0x80000000 (programs/src/link.ld).
    assert!(
        first[1].contains("address=0x40000000  -> 0x80000000"),
        "{}",
        first[1]
    );
    // Differential addresses resolved: every address packet shows an absolute address.
    assert!(
        text.lines()
            .any(|l| l.contains(" F2 ") && l.contains("-> 0x8000")),
        "{text}"
    );
    // Without the sidecar the address width is a guess.
    let o = rvtrace(&["dump", "etrace", &t, "--no-meta"]);
    assert!(stderr(&o).contains("assuming 64 bits"), "{}", stderr(&o));
    let o = rvtrace(&["dump", "etrace", &t, "--no-meta", "--elf", &r.elf]);
    assert!(!stderr(&o).contains("assuming"), "{}", stderr(&o));
    let nt = tmp.join("n.ntrace").display().to_string();
    let o = rvtrace(&["encode", "ntrace", &r.ingress, "-o", &nt]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (file, what) in [
        (&nt, "N-Trace"),
        (&r.ingress, "binary ingress file"),
        (&r.elf, "an ELF file"),
        (&r.pcs, "a text file"),
    ] {
        let o = rvtrace(&["dump", "etrace", file]);
        assert_eq!(o.status.code(), Some(125));
        assert!(stderr(&o).contains(what), "{}", stderr(&o));
        let o = rvtrace(&["decode", "etrace", file, "--elf", &r.elf]);
        assert!(stderr(&o).contains(what), "{}", stderr(&o));
    }
}

/// `dump --elf` (issue 28): every resolved address of either protocol's dump carries the
/// function it falls in, `<sym+0xoff>`, which must be `riscv64-unknown-elf-nm`'s: the nearest
/// function symbol at or below the address (an alias at the same address is as good). Without
/// `--elf` the lines are the same less the names (and, for N-Trace, less the `--lastip`
/// addresses `--elf` implies).
#[test]
fn dump_elf_names_addresses_as_nm_does() {
    let tmp = tmpdir("dumpelf");
    let r = run(&tmp, "fnptr-rv64gc");
    let et = tmp.join("d.etrace").display().to_string();
    encode(&r, &et, &[]);
    let nt = tmp.join("d.ntrace").display().to_string();
    let o = rvtrace(&["encode", "ntrace", &r.ingress, "-o", &nt]);
    assert!(o.status.success(), "{}", stderr(&o));
    let Some(nm) = common::NmFunctions::of(r.elf.as_ref()) else {
        return;
    };
    // objdump's form: `<sym>` at its start, `<sym+0xoff>` inside.
    let names = |a: u64| -> Vec<String> {
        let (names, off) = nm.names_at(a).unwrap();
        names
            .iter()
            .map(|n| match off {
                0 => format!("<{n}>"),
                off => format!("<{n}+{off:#x}>"),
            })
            .collect()
    };
    for (trace, arrow, lastip) in [(&et, "  -> ", None), (&nt, " => ", Some("--lastip"))] {
        let with = rvtrace(&["dump", trace, "--elf", &r.elf]);
        assert!(with.status.success(), "{}", stderr(&with));
        let mut args = vec!["dump", trace.as_str()];
        args.extend(lastip);
        let without = rvtrace(&args);
        assert!(without.status.success(), "{}", stderr(&without));
        let (with, without) = (stdout(&with), stdout(&without));
        assert_eq!(with.lines().count(), without.lines().count());
        let mut named = 0;
        for (w, p) in with.lines().zip(without.lines()) {
            let Some(at) = w.find(arrow) else {
                assert_eq!(w, p);
                continue;
            };
            let mut rest = w[at + arrow.len()..].split(' ');
            let (addr, name) = (rest.next().unwrap(), rest.next().unwrap_or(""));
            let a = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
            assert!(
                names(a).iter().any(|n| n == name),
                "{w}: nm says {:?}",
                names(a)
            );
            // The same line without the name.
            assert_eq!(w.replacen(&format!(" {name}"), "", 1), p);
            named += 1;
        }
        assert!(named > 10, "{trace}: {named} addresses named\n{with}");
    }
    // NexRv's text has no room for names.
    let o = rvtrace(&["dump", &nt, "--nexrv", "--elf", &r.elf]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
