//! `rvtrace dump|encode|decode etrace` on the E-Trace conformance vectors.

use rvtrace_testkit::{conformance_dir, parse_pcs, read_vector};

mod common;
use common::{rvtrace, tmpdir};

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
            "00000000  F3S3  format=3 subformat=3 ienable=1 encoder_mode=0 qual_status=no_change ioptions=0x0 denable=0 dloss=0 doptions=0x0",
            "00000002  F3S0  format=3 subformat=0 branch=1 privilege=3 context=0 address=0x40000000",
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
    std::fs::write(
        &junk,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761u32) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
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
/// (`crates/etrace/tests/vectors/README.md`): `decode` rebuilds `run --pcs`, and
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
        let ingress = s(&tmp.join(format!("{prog}-{cfg}.ingress")));
        let pcs = s(&tmp.join(format!("{prog}-{cfg}.pcs")));
        // The vectors were made with the command line "<prog>.elf" (it changes the instruction
        // stream: picolibc's start-up scans it).
        let o = rvtrace(&[
            "run",
            &elf,
            "--cmdline",
            &format!("{prog}.elf"),
            "--itype-width",
            "4",
            "--ingress",
            &ingress,
            "--pcs",
            &pcs,
        ]);
        assert!(o.status.success(), "{prog}: run failed");
        let out = s(&tmp.join(format!("{prog}-{cfg}.decoded")));
        let o = rvtrace(&[
            "decode", "etrace", &raw, "--elf", &elf, "--scf", &scf, "--pcs", &out,
        ]);
        assert!(
            o.status.success(),
            "{prog} {cfg}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&pcs).unwrap(),
            "{prog} {cfg}: decoded PCs differ"
        );
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
