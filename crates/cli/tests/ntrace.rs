//! `rvtrace dump|encode|decode ntrace` end to end.

use crate::common;
use common::{ntrace_messages, ok, program, rvtrace, stdout, tmpdir};
// This file's `s` is a command's output as text; a path as an argument is `arg`.
use common::s as arg;
use std::path::PathBuf;

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
    // Symbols as riscv64-unknown-elf-nm lists them: _start 0x80000000, _cstart 0x80000024.
    // `_start` ends with `j _cstart` (objdump: 0x80000020), a jump to the next instruction,
    // which ends a range all the same (the flow's rule).
    assert!(
        flow.starts_with(
            "sync 0x80000000 <_start> start\n\
             range 0x80000000 <_start> .. 0x80000020 <_start+0x20> (9 instructions)\n\
             range 0x80000024 <_cstart> .. 0x80000024 <_cstart> (1 instruction)\n"
        ),
        "{flow}"
    );
    // The ProgTraceCorrelation message (3 bytes) ends the trace (2377 bytes).
    assert!(flow.ends_with("end at byte 0x949\n"), "{flow}");
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
    assert!(e.contains("byte 0x64: reserved MSEO=10"), "{e}");
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
            &["--call-stack", "8", "--hist-patterns", "--repeat-branch"],
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
            // The decoder needs no option: what it must share with the encoder (SRC, MSB
            // extension) is in the sidecar `X.bin.meta`.
            let meta = std::fs::read_to_string(d.join(format!("{prog}.bin.meta"))).unwrap();
            assert!(meta.lines().find(|l| !l.starts_with('#')) == Some("protocol = ntrace"));
            let args = vec![
                "decode",
                "ntrace",
                bin.to_str().unwrap(),
                "--elf",
                elf.to_str().unwrap(),
                "--pcs",
                out.to_str().unwrap(),
            ];
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

fn s(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A program's run, encoded with `opts`: (ELF, trace) paths.
fn encoded(d: &std::path::Path, prog: &str, opts: &[&str]) -> (PathBuf, PathBuf) {
    let elf = programs_dir().join(format!("{prog}.elf"));
    let ing = d.join(format!("{prog}.ing"));
    let o = rvtrace(&[
        "run",
        elf.to_str().unwrap(),
        "--ingress",
        ing.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some());
    let bin = d.join(format!("{prog}.bin"));
    let mut args = vec![
        "encode",
        "ntrace",
        ing.to_str().unwrap(),
        "-o",
        bin.to_str().unwrap(),
    ];
    args.extend_from_slice(opts);
    let o = rvtrace(&args);
    assert!(o.status.success(), "{}", s(&o).1);
    (elf, bin)
}

/// Item 13: `decode ntrace --help` lists only what the decoder uses.
#[test]
fn decode_help_lists_decoder_options_only() {
    let (help, _) = s(&rvtrace(&["decode", "ntrace", "--help"]));
    for opt in [
        "--src-bits",
        "--src-id",
        "--extend-addr-msb",
        "--all-jumps",
        "--link-registers",
        "--elf",
        "--image",
        "--pcs",
        "--flow",
        "--stats",
        "--max-warnings",
    ] {
        assert!(help.contains(opt), "{opt} missing:\n{help}");
    }
    // (`decode` is one command for both protocols: E-Trace's decoder options, `--preset` and
    // `--timestamps` among them, are listed under their own heading.)
    assert!(help.contains("E-Trace decoder options"), "{help}");
    for opt in [
        "--mode",
        "--repeat-history",
        "--call-stack",
        "--sync-period",
        "--fifo-bytes",
        "--trace-priv",
        "--icnt-bits",
        "--ownership",
    ] {
        assert!(!help.contains(opt), "{opt} listed:\n{help}");
    }
    // An encoder-only option is a usage error for the decoder.
    let o = rvtrace(&[
        "decode",
        "ntrace",
        "x.bin",
        "--elf",
        "x.elf",
        "--repeat-history",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Item 5: the sidecar carries the settings the decoder needs; the command line wins over it
/// with a warning; without it a mismatch is named as the likely cause.
#[test]
fn sidecar_and_mismatch_hints() {
    let d = tmpdir("sidecar");
    let (elf, bin) = encoded(
        &d,
        "fnptr-rv64gc",
        &["--src-bits", "3", "--src-id", "5", "--extend-addr-msb"],
    );
    let meta_path = d.join("fnptr-rv64gc.bin.meta");
    let meta = std::fs::read_to_string(&meta_path).unwrap();
    for line in [
        "protocol = ntrace",
        "src-bits = 3",
        "src-id = 5",
        "extend-addr-msb = true",
        "all-jumps = false",
        "link-registers = spec",
        "mode = htm",
    ] {
        assert!(meta.lines().any(|l| l == line), "{line}:\n{meta}");
    }
    let dec = |extra: &[&str]| {
        let mut a = vec![
            "decode",
            "ntrace",
            bin.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        rvtrace(&a)
    };
    let o = dec(&[]);
    assert!(o.status.success(), "{}", s(&o).1);
    // No output option: the summary only (no warning).
    let err = s(&o).1;
    assert!(
        err.lines().count() == 1 && err.contains(" instructions, 0 errors"),
        "{err}"
    );
    // The command line wins, and the contradiction is said.
    let o = dec(&["--src-bits", "0"]);
    assert_eq!(o.status.code(), Some(1));
    let e = s(&o).1;
    assert!(
        e.contains("--src-bits 0 contradicts the sidecar (src-bits = 3); using 0"),
        "{e}"
    );
    assert!(
        e.contains("with --src-bits 3: the encoder's setting is the likely cause"),
        "{e}"
    );
    // Without the sidecar: the decode fails and names the option. (This program's addresses
    // read the same with and without the MSB extension: RV64 addresses below 2^31.)
    std::fs::remove_file(&meta_path).unwrap();
    let o = dec(&[]);
    assert_eq!(o.status.code(), Some(1));
    let e = s(&o).1;
    assert!(
        e.contains("with --src-bits 3: the encoder's setting is the likely cause"),
        "{e}"
    );
    let o = dec(&["--src-bits", "3", "--src-id", "5", "--extend-addr-msb"]);
    assert!(o.status.success(), "{}", s(&o).1);
    // Another hart's SRC.
    let o = dec(&["--src-bits", "3", "--src-id", "4"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        s(&o).1.contains("no message with SRC 4")
            && s(&o)
                .1
                .contains("messages of other SRCs: is the SRC ID right?)"),
        "{}",
        s(&o).1
    );
    // A broken sidecar is reported and not used.
    std::fs::write(&meta_path, "protocol = tandem-trace-protocol-2018-11-20\n").unwrap();
    let o = dec(&["--src-bits", "3", "--src-id", "5", "--extend-addr-msb"]);
    assert!(o.status.success());
    assert!(s(&o).1.contains("not N-Trace; not used"), "{}", s(&o).1);
}

/// Item 3: no synchronization, a lost head, a lost end: exit 1, counted in the summary.
#[test]
fn unsynchronized_and_cut_traces_are_losses() {
    let d = tmpdir("cut");
    let (elf, bin) = encoded(&d, "fnptr-rv64gc", &[]);
    let data = std::fs::read(&bin).unwrap();
    let check = |name: &str, bytes: &[u8], want: &str| {
        let f = d.join(name);
        std::fs::write(&f, bytes).unwrap();
        let o = rvtrace(&[
            "decode",
            "ntrace",
            f.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            "--stats",
        ]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let e = s(&o).1;
        assert!(e.contains(want), "{name}: {e}");
        assert!(e.contains(" 1 errors"), "{name}: {e}");
    };
    check("empty.bin", &[], "the trace is empty");
    check("idle.bin", &[0xFF; 64], "no message in the trace");
    check(
        "head.bin",
        &data[40..],
        "no synchronization message in the trace",
    );
    // A wrapped circular buffer: a tail, then a whole trace (which starts with a synchronization).
    check(
        "wrap.bin",
        &[&data[40..], &data[..]].concat(),
        "trace starts without a synchronization message",
    );
    // Cut exactly before the last message (ProgTraceCorrelation).
    let last = data[..data.len() - 1]
        .iter()
        .rposition(|b| b & 3 == 3)
        .unwrap()
        + 1;
    check(
        "cut.bin",
        &data[..last],
        "the trace ends without ProgTraceCorrelation",
    );
}

/// Item 8: losses are streamed and capped by --max-warnings; the rest is counted.
#[test]
fn max_warnings_caps_loss_lines() {
    let d = tmpdir("maxw");
    let (elf, bin) = encoded(&d, "fnptr-rv64gc", &[]);
    let first: Vec<u8> = std::fs::read(&bin).unwrap();
    let sync_len = first.iter().position(|b| b & 3 == 3).unwrap() + 1;
    // A synchronization message then a byte with the reserved MSEO 10 and an idle byte, 50
    // times: 50 losses.
    let bad: Vec<u8> = [&first[..sync_len], &[0xFE, 0xFF][..]].concat().repeat(50);
    let f = d.join("bad.bin");
    std::fs::write(&f, bad).unwrap();
    let o = rvtrace(&[
        "decode",
        "ntrace",
        f.to_str().unwrap(),
        "--elf",
        elf.to_str().unwrap(),
        "--max-warnings",
        "3",
        "--link-registers",
        "spec",
        "--stats",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = s(&o).1;
    assert_eq!(e.matches("reserved MSEO=10").count(), 3, "{e}");
    assert!(
        e.contains("47 more warnings not shown (--max-warnings 3)"),
        "{e}"
    );
    assert!(e.contains(" 50 errors"), "{e}");
}

/// Item 13: `dump ntrace` on a file of another kind says what it is.
#[test]
fn dump_says_what_a_foreign_file_is() {
    let d = tmpdir("kind");
    let elf = programs_dir().join("fnptr-rv64gc.elf");
    let ing = d.join("p.ing");
    let tdm = d.join("p.tandem");
    let o = rvtrace(&[
        "run",
        elf.to_str().unwrap(),
        "--ingress",
        ing.to_str().unwrap(),
        "--tandem",
        tdm.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some());
    let txt = d.join("p.txt");
    std::fs::write(&txt, "0x80000000\n0x80000004\n0x80000008\n").unwrap();
    for (f, want) in [
        (&ing, "this is a binary ingress file"),
        (&elf, "this is an ELF file"),
        (&tdm, "this is a tandem verification trace"),
        (&txt, "this is a text file"),
    ] {
        for cmd in [
            &["dump", "ntrace", f.to_str().unwrap()][..],
            &[
                "decode",
                "ntrace",
                f.to_str().unwrap(),
                "--elf",
                elf.to_str().unwrap(),
            ],
        ] {
            let o = rvtrace(cmd);
            assert_eq!(o.status.code(), Some(125), "{cmd:?}");
            let (out, e) = s(&o);
            assert!(out.is_empty(), "{cmd:?}: {out}");
            assert!(
                e.contains(want) && e.contains("not an N-Trace trace"),
                "{cmd:?}: {e}"
            );
        }
    }
}

/// Item 13: `dump ntrace --lastip` adds the absolute addresses; without it the text is unchanged.
#[test]
fn dump_lastip() {
    let d = tmpdir("lastip");
    let f = d.join("t.bin");
    // ProgTraceSync SYNC=3 I-CNT=0 F-ADDR=0x40000000 (0x80000000 >> 1), then IndirectBranch
    // B-TYPE 0 I-CNT=2 U-ADDR=0x8 (XOR: 0x80000010).
    let msgs = [
        rvtrace_ntrace::codec::Body::ProgTraceSync {
            sync: 3,
            icnt: 0,
            faddr: rvtrace_ntrace::codec::Addr::plain(0x4000_0000),
        },
        rvtrace_ntrace::codec::Body::IndirectBranch {
            btype: 0,
            icnt: 2,
            uaddr: rvtrace_ntrace::codec::Addr::plain(0x8),
        },
    ];
    let bytes: Vec<u8> = msgs
        .iter()
        .flat_map(|b| {
            rvtrace_ntrace::codec::Message::new(*b)
                .encode(&Default::default())
                .to_vec()
        })
        .collect();
    std::fs::write(&f, bytes).unwrap();
    let (plain, _) = s(&rvtrace(&["dump", "ntrace", f.to_str().unwrap()]));
    let (last, _) = s(&rvtrace(&[
        "dump",
        "ntrace",
        f.to_str().unwrap(),
        "--lastip",
    ]));
    assert!(!plain.contains("=>"));
    assert!(
        last.contains("FADDR[36]=0x40000000 => 0x80000000"),
        "{last}"
    );
    assert!(last.contains("UADDR[6]=0x8 => 0x80000010"), "{last}");
    let strip: String = last
        .lines()
        .map(|l| l.split(" => ").next().unwrap().to_string() + "\n")
        .collect();
    assert_eq!(strip, plain);
}

/// Item 5: a flag given against the sidecar is used, said, and named as the likely cause of the
/// losses it brings.
#[test]
fn contradicting_flag_is_named() {
    let d = tmpdir("flag");
    let (elf, bin) = encoded(&d, "fnptr-rv64gc", &[]);
    let (t, e) = (bin.to_str().unwrap(), elf.to_str().unwrap());
    // `--extend-addr-msb` before the trace: it takes no value unless given with `=`.
    let o = rvtrace(&["decode", "ntrace", "--extend-addr-msb", t, "--elf", e]);
    assert_eq!(o.status.code(), Some(1));
    let err = s(&o).1;
    assert!(
        err.contains("--extend-addr-msb true contradicts the sidecar (extend-addr-msb = false)"),
        "{err}"
    );
    assert!(
        err.contains("with --extend-addr-msb=false: the encoder's setting is the likely cause"),
        "{err}"
    );
    let o = rvtrace(&["decode", "ntrace", "--extend-addr-msb=false", t, "--elf", e]);
    assert!(o.status.success());
    // No output option: the summary only.
    let err = s(&o).1;
    assert!(
        err.lines().count() == 1 && err.contains(" instructions, 0 errors"),
        "{err}"
    );
}

/// Issue 29 item 7: `encode ntrace` synchronizes periodically by default, every 2^19 messages
/// (trTeInstSyncMax = 15, the longest interval the Trace Control Interface sets: "Generate
/// synchronization when count reaches 2^(trTeInstSyncMax+4)"), as its sidecar says; `--sync-period
/// 0` and the NexRv preset (whose encoder has no periodic sync) have none. A period the run
/// reaches puts SYNC=2 messages in the trace (the mechanism, at any period, is
/// crates/ntrace/tests/options.rs's).
#[test]
fn periodic_sync_by_default() {
    let d = tmpdir("default-sync");
    let sync2 = |bin: &std::path::Path| {
        let o = rvtrace(&["dump", "ntrace", bin.to_str().unwrap()]);
        s(&o).0.matches("SYNC[4]=0x2 ").count()
    };
    let meta =
        |bin: &std::path::Path| std::fs::read_to_string(format!("{}.meta", bin.display())).unwrap();
    let (_, bin) = encoded(&d, "recurse-rv64gc", &[]);
    assert!(
        meta(&bin).contains("sync-period = 524288\nsync-mode = messages\n"),
        "{}",
        meta(&bin)
    );
    // recurse-rv64gc makes about 6,300 messages: none is periodic at the default.
    assert_eq!(sync2(&bin), 0);
    for off in [&["--sync-period", "0"][..], &["--preset", "nexrv"]] {
        let (_, bin) = encoded(&d, "recurse-rv64gc", off);
        assert!(
            !meta(&bin).contains("sync-period"),
            "{off:?}: {}",
            meta(&bin)
        );
    }
    let (_, bin) = encoded(&d, "recurse-rv64gc", &["--sync-period", "1000"]);
    let n = sync2(&bin);
    assert!(
        (5..=7).contains(&n),
        "every 1000 of about 6,300 messages: {n}"
    );
}

/// traps-rv32imac run in `d` and encoded with the defaults: (ELF, the run's PCs, the trace).
fn traps_run_encoded(d: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let elf = program("traps-rv32imac");
    let (ing, pcs, bin) = (d.join("t.ing"), d.join("run.pcs"), d.join("t.bin"));
    let o = rvtrace(&["run", arg(&elf), "--ingress", arg(&ing), "--pcs", arg(&pcs)]);
    assert!(o.status.code().is_some());
    ok(
        &rvtrace(&["encode", "ntrace", arg(&ing), "-o", arg(&bin)]),
        "encode",
    );
    (elf, pcs, bin)
}

/// N-Trace 6.1: reserved and vendor-defined messages are stepped over, not losses. A real
/// trace with such messages spliced in after whole messages (an encoder's byte ends a message
/// when its MSEO is 11) decodes to the same PCs, exit 0; the first of each kind is a warning, a
/// note sums them up, and `--list-ignored` lists each in the flow.
#[test]
fn decode_steps_over_reserved_messages() {
    let d = tmpdir("reserved");
    let (elf, pcs, bin) = traps_run_encoded(&d);
    let trace = std::fs::read(&bin).unwrap();
    let messages = ntrace_messages(&trace);
    assert!(messages.len() > 51, "{} messages", messages.len());
    // After the 1st, 50th and 51st message: TCODE 34 (reserved) with one field, TCODE 56
    // (vendor-defined) with two, and ResourceFull with the vendor RCODE 9 and one field.
    let spliced: [(usize, &[u8]); 3] = [
        (1, &[0x88, 0x17]),
        (50, &[0xe0, 0x05, 0x0b]),
        (51, &[0x6c, 0x67]),
    ];
    let mut out = Vec::new();
    for (k, m) in messages.iter().enumerate() {
        out.extend_from_slice(m);
        if let Some((_, extra)) = spliced.iter().find(|(after, _)| *after == k + 1) {
            out.extend_from_slice(extra);
        }
    }
    let with = d.join("with.bin");
    std::fs::write(&with, &out).unwrap();
    std::fs::copy(d.join("t.bin.meta"), d.join("with.bin.meta")).unwrap();
    let decode = |outputs: &[&str]| {
        let mut args = vec!["decode", "ntrace", arg(&with), "--elf", arg(&elf)];
        args.extend_from_slice(outputs);
        rvtrace(&args)
    };
    let (got, flow) = (d.join("got.pcs"), d.join("flow.txt"));
    let o = decode(&["--pcs", arg(&got), "--flow", arg(&flow), "--list-ignored"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read(&got).unwrap(), std::fs::read(&pcs).unwrap());
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 3, "{err}");
    assert!(
        warnings[0].ends_with(
            "stepped over a message the decoder does not interpret: reserved TCODE 34 \
             (later ones of the kind are counted)"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "messages stepped over: 1 x ResourceFull with the vendor-defined RCODE 9, \
             1 x reserved TCODE 34, 1 x vendor-defined TCODE 56"
        ),
        "{err}"
    );
    let flow = std::fs::read_to_string(&flow).unwrap();
    let listed: Vec<&str> = flow.lines().filter(|l| l.starts_with("ignored")).collect();
    assert_eq!(listed.len(), 3, "{flow}");
    assert!(
        listed[2].ends_with(
            "ResourceFull with the vendor-defined RCODE 9: TCODE=0x1b RCODE=0x9 RDATA=0x1"
        ),
        "{flow}"
    );
    // Without the option the flow does not list them (its ranges end at them all the same: a
    // range ends before every other element).
    assert!(!stdout(&decode(&["--flow", "-"])).contains("ignored"));
}

/// Issue 30 item 2 and 3: a trace in SiFive's dialect (crates/ntrace/README.md, "SiFive
/// dialect"): an encoded run with, after its first message, an In-Circuit Trace PC sample and
/// two DataAcquisition (ITC) writes spliced in. `--dialect sifive` decodes them as events (the
/// PCs unchanged), `--itc-print` writes the prints, `--itc-channel`, `--hw` and
/// `--sifive-settings` set what they name, `profile` counts the sample, `dump` names the fields.
#[test]
fn sifive_dialect_options() {
    let d = tmpdir("sifive");
    let (elf, pcs, bin) = traps_run_encoded(&d);
    let trace = std::fs::read(&bin).unwrap();
    let messages = ntrace_messages(&trace);
    // TCODE 34 = 100010 | CKSRC 15 (PC sample), CKDF 0: 00_1111 | CKDATA0 0, end of message: the
    // sample is the reference address (B.2).
    let sample: &[u8] = &[0x88, 0x3C, 0x03];
    // TCODE 7 = 000111 | IDTAG 0 (channel 0, 32-bit store), end of field | DQDATA 0x000A6948
    // ("Hi\n" then NUL, least significant byte first) in 6-bit MDO records 0x08, 0x25, 0x26,
    // 0x02, end of message (B.3).
    let text: &[u8] = &[0x1C, 0x01, 0x20, 0x94, 0x98, 0x0B];
    // TCODE 7 | IDTAG 12 (channel 3, 32-bit store) | DQDATA 0x2A ('*').
    let raw: &[u8] = &[0x1C, 0x31, 0xAB];
    let mut out = messages[0].to_vec();
    for m in [sample, text, raw] {
        out.extend_from_slice(m);
    }
    for m in &messages[1..] {
        out.extend_from_slice(m);
    }
    let with = d.join("with.bin");
    std::fs::write(&with, &out).unwrap();
    std::fs::copy(d.join("t.bin.meta"), d.join("with.bin.meta")).unwrap();
    let decode = |opts: &[&str]| {
        let mut args = vec!["decode", "ntrace", arg(&with), "--elf", arg(&elf)];
        args.extend_from_slice(opts);
        rvtrace(&args)
    };
    let (got, flow, itc) = (d.join("got.pcs"), d.join("flow.txt"), d.join("itc.txt"));
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    let o = decode(&[
        "--dialect",
        "sifive",
        "--pcs",
        arg(&got),
        "--flow",
        arg(&flow),
        "--itc-print",
        arg(&itc),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(read(&got), read(&pcs));
    let f = read(&flow);
    let events: Vec<&str> = f.lines().filter(|l| l.starts_with("event")).collect();
    assert_eq!(events.len(), 3, "{f}");
    assert!(events[0].starts_with("event pc-sample addr=0x"), "{f}");
    assert!(
        events[1].starts_with("event write tag=0x0 value=0xa6948 at byte"),
        "{f}"
    );
    assert_eq!(read(&itc), "Hi\nchannel 3 value 0x2a\n");
    // The standard dialect steps over them (reserved TCODEs), the PCs the same.
    let o = decode(&["--pcs", arg(&got)]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("reserved TCODE 7"));
    assert_eq!(read(&got), read(&pcs));
    // --itc-channel 3: channel 3 is the text channel, channel 0 a raw write.
    ok(
        &decode(&[
            "--dialect",
            "sifive",
            "--itc-print",
            arg(&itc),
            "--itc-channel",
            "3",
        ]),
        "itc-channel",
    );
    assert_eq!(read(&itc), "channel 0 value 0xa6948\n*\n");
    // A SiFive settings file: the dialect, the print channel; `pids`, which is no filter here, is
    // reported.
    let settings = d.join("opts.settings");
    std::fs::write(
        &settings,
        "# dqr -sf\nsrcbits = 0\ntrace.config.int.itc.print.channel = 3\npids = 737\n",
    )
    .unwrap();
    let o = decode(&[
        "--sifive-settings",
        arg(&settings),
        "--itc-print",
        arg(&itc),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("pids: rvtrace decodes every process"), "{err}");
    assert_eq!(read(&itc), "channel 0 value 0xa6948\n*\n");
    // Its `elf` is the program when --elf is not given.
    let with_elf = d.join("elf.settings");
    std::fs::write(&with_elf, format!("elf = {}\n", arg(&elf))).unwrap();
    let o = rvtrace(&[
        "decode",
        arg(&with),
        "--sifive-settings",
        arg(&with_elf),
        "--pcs",
        arg(&got),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o).1);
    assert_eq!(read(&got), read(&pcs));
    // A flag wins over the file.
    ok(
        &decode(&[
            "--sifive-settings",
            arg(&settings),
            "--itc-print",
            arg(&itc),
            "--itc-channel",
            "0",
        ]),
        "settings and flag",
    );
    assert_eq!(read(&itc), "Hi\nchannel 3 value 0x2a\n");
    // --hw: e31 (no SRC, the dialect); p550x4's 2 SRC bits overridden by --src-bits 0.
    for hw in [&["--hw", "e31"][..], &["--hw", "p550x4", "--src-bits", "0"]] {
        let mut opts = vec!["--pcs", arg(&got), "--flow", arg(&flow)];
        opts.extend_from_slice(hw);
        let o = decode(&opts);
        assert_eq!(o.status.code(), Some(0), "{hw:?}: {}", s(&o).1);
        assert_eq!(read(&got), read(&pcs), "{hw:?}");
        assert!(read(&flow).contains("event pc-sample"), "{hw:?}");
    }
    // p550x4 alone reads 2 SRC bits the trace does not have.
    assert_ne!(decode(&["--hw", "p550x4"]).status.code(), Some(0));
    assert!(stdout(&rvtrace(&["decode", "--help"])).contains("libnexus-rv"));
    // profile counts the sample beside the flow.
    let o = rvtrace(&[
        "profile",
        arg(&with),
        "--elf",
        arg(&elf),
        "--protocol",
        "ntrace",
        "--dialect",
        "sifive",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", s(&o).1);
    let (p_out, p_err) = s(&o);
    assert!(
        format!("{p_out}{p_err}").contains("PC samples in the trace: 1"),
        "{p_out}{p_err}"
    );
    // dump names the fields.
    let o = rvtrace(&[
        "dump",
        arg(&with),
        "--protocol",
        "ntrace",
        "--dialect",
        "sifive",
    ]);
    let dump = stdout(&o);
    assert!(dump.contains("- InCircuitTrace"), "{dump}");
    assert!(dump.contains("CKSRC[4]=0xF CKDF[2]=0x0"), "{dump}");
    assert!(dump.contains("- DataAcquisition"), "{dump}");
    assert!(dump.contains("DQDATA[24]=0xA6948"), "{dump}");
}

/// `encode ntrace --dialect sifive` (issue 30 item 4): the sidecar says the dialect, so `decode`
/// needs no option and gives the run's PCs; `--hw p550x4` sets the part's SRC width and
/// simple-counting implicit return; what SiFive's decoder cannot read is a usage error.
#[test]
fn encode_sifive_dialect() {
    let d = tmpdir("sifive-enc");
    for (prog, opts) in [
        ("timer-rv64gc", &["--dialect", "sifive", "--timestamps"][..]),
        ("traps-rv32imac", &["--dialect", "sifive", "--mode", "btm"]),
        ("recurse-rv64gc", &["--hw", "p550x4", "--timestamps"]),
    ] {
        let elf = programs_dir().join(format!("{prog}.elf"));
        let (ing, pcs, bin, out) = (
            d.join(format!("{prog}.ing")),
            d.join(format!("{prog}.pcs")),
            d.join(format!("{prog}.bin")),
            d.join(format!("{prog}.out")),
        );
        let o = rvtrace(&["run", arg(&elf), "--ingress", arg(&ing), "--pcs", arg(&pcs)]);
        assert!(o.status.code().is_some(), "{prog}");
        let mut args = vec!["encode", "ntrace", arg(&ing), "-o", arg(&bin)];
        args.extend_from_slice(opts);
        ok(&rvtrace(&args), prog);
        let meta = std::fs::read_to_string(d.join(format!("{prog}.bin.meta"))).unwrap();
        assert!(meta.contains("\ndialect = sifive\n"), "{meta}");
        let dump = stdout(&rvtrace(&["dump", "ntrace", arg(&bin)]));
        if opts.contains(&"--hw") {
            assert!(meta.contains("\nsrc-bits = 2\n"), "{meta}");
            assert!(
                meta.contains("\ncall-stack = 1023\ncall-counter = true\n"),
                "{meta}"
            );
        }
        if !opts.contains(&"btm") {
            assert!(dump.contains("RCODE[4]=0x9"), "{prog}: no run");
        }
        ok(
            &rvtrace(&[
                "decode",
                "ntrace",
                arg(&bin),
                "--elf",
                arg(&elf),
                "--pcs",
                arg(&out),
            ]),
            prog,
        );
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&pcs).unwrap(),
            "{prog}"
        );
    }
    let ing = d.join("timer-rv64gc.ing");
    let bin = d.join("x.bin");
    for bad in [
        &["--repeat-history"][..],
        &["--repeat-branch"],
        &["--call-stack", "4", "--call-stack-partial", "8"],
    ] {
        let mut args = sifive_encode(&ing, &bin);
        args.extend_from_slice(bad);
        let o = rvtrace(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(
            s(&o).1.contains("--dialect sifive: SiFive's"),
            "{}",
            s(&o).1
        );
    }
}

/// `encode ntrace ING -o BIN --dialect sifive`.
fn sifive_encode<'a>(ing: &'a std::path::Path, bin: &'a std::path::Path) -> Vec<&'a str> {
    vec![
        "encode",
        "ntrace",
        arg(ing),
        "-o",
        arg(bin),
        "--dialect",
        "sifive",
    ]
}

/// printf over SiFive's ITC (issue 30 item 4): `run --itc` writes the stimulus stores beside the
/// ingress file, each after its store instruction; `encode ntrace --dialect sifive` sends them as
/// DataAcquisition messages; `decode --itc-print -` prints the program's console text exactly
/// (text prints on channel 0, NLS prints from the ELF's formats), from per-instruction and
/// block records, BTM and HTM; the PCs are the run's.
#[test]
fn itc_printf_round_trip() {
    let d = tmpdir("itc");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../programs/itc");
    for arch in ["rv64gc", "rv32imac"] {
        let elf = dir.join(format!("itc_printf-{arch}.elf"));
        let (ing, pcs, bin) = (d.join("t.ing"), d.join("t.pcs"), d.join("t.bin"));
        // `run --itc` of the program, with more options.
        let run = |more: &[&str]| {
            let mut args = vec![
                "run",
                arg(&elf),
                "--itc",
                "0x1000000",
                "--ingress",
                arg(&ing),
            ];
            args.extend_from_slice(more);
            let o = rvtrace(&args);
            ok(&o, arch);
            o
        };
        let o = run(&["--pcs", arg(&pcs)]);
        let console = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            console.contains("count 3 of 3\nfields 2047 -5 2a\n"),
            "{console}"
        );
        // Each write follows its store: the instruction at that place of the PC list is a store
        // (opcode STORE; the program's stimulus stores are 32-bit instructions).
        let mut image = rvtrace_image::Image::new();
        image.load_file(&elf).unwrap();
        let pc_list: Vec<u64> = std::fs::read_to_string(&pcs)
            .unwrap()
            .lines()
            .map(|l| u64::from_str_radix(&l[2..], 16).unwrap())
            .collect();
        let itc = std::fs::read_to_string(d.join("t.ing.itc")).unwrap();
        let writes = rvtrace_ingress::itc::parse(&itc).unwrap();
        assert_eq!(writes.len(), 41, "{itc}");
        for w in &writes {
            let pc = pc_list[w.retired as usize - 1];
            assert_eq!(image.fetch(pc).unwrap() & 0x7f, 0x23, "{w:?} at {pc:#x}");
        }
        for (blocks, mode) in [(false, "htm"), (true, "btm")] {
            if blocks {
                run(&["--ingress-blocks"]);
                assert_eq!(std::fs::read_to_string(d.join("t.ing.itc")).unwrap(), itc);
            }
            let mut args = sifive_encode(&ing, &bin);
            args.extend(["--mode", mode, "--timestamps"]);
            if blocks {
                args.extend(["--elf", arg(&elf)]);
            }
            ok(&rvtrace(&args), arch);
            let out = d.join("t.out");
            let o = rvtrace(&[
                "decode",
                "ntrace",
                arg(&bin),
                "--elf",
                arg(&elf),
                "--itc-print",
                "-",
                "--pcs",
                arg(&out),
            ]);
            ok(&o, arch);
            assert_eq!(String::from_utf8_lossy(&o.stdout), console, "{arch} {mode}");
            assert!(std::fs::read(&out).unwrap() == std::fs::read(&pcs).unwrap());
        }
        // Without the dialect the writes are left out, with a warning.
        let o = rvtrace(&[
            "encode",
            "ntrace",
            arg(&ing),
            "-o",
            arg(&bin),
            "--elf",
            arg(&elf),
        ]);
        assert!(s(&o).1.contains("41 ITC writes not encoded"), "{}", s(&o).1);
    }
}
