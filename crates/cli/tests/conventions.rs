//! What every command does alike (issue 9, items 7, 10, 12, 14): a closed stdout ends quietly
//! with status 0, a closed or full stderr never panics, `-` is stdin/stdout, an output that names
//! an input is refused before anything is written, both decoders print the same flow text, and
//! progress appears only on a terminal.

use crate::common;
use common::{rvtrace, stderr, stdout, tmpdir, TmpDir};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn elf(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../programs/elf")
        .join(format!("{name}.elf"))
        .display()
        .to_string()
}

/// A run of recurse-rv64gc with its ingress, N-Trace, E-Trace and tandem files in `d`.
struct Files {
    elf: String,
    ingress: String,
    nex: String,
    te: String,
    tandem: String,
}

fn files(d: &TmpDir) -> Files {
    let p = |n: &str| d.join(n).display().to_string();
    let f = Files {
        elf: elf("recurse-rv64gc"),
        ingress: p("r.ing"),
        nex: p("r.nex"),
        te: p("r.te"),
        tandem: p("r.tt"),
    };
    let o = rvtrace(&[
        "run",
        &f.elf,
        "--ingress",
        &f.ingress,
        "--tandem",
        &f.tandem,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (proto, out) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let o = rvtrace(&["encode", proto, &f.ingress, "-o", out]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    f
}

/// Each command whose stdout is long: the reader takes a little and closes the pipe. The command
/// must end with status 0 and say nothing on stderr (no error, no panic).
#[test]
fn a_closed_stdout_ends_quietly_with_status_0() {
    let d = tmpdir("pipe");
    let f = files(&d);
    let cases: Vec<Vec<&str>> = vec![
        vec!["ingress", "dump", &f.ingress],
        vec!["dump", "ntrace", &f.nex],
        vec!["dump", "etrace", &f.te],
        vec!["tandem", "dump", &f.tandem],
        vec!["decode", "ntrace", &f.nex, "--elf", &f.elf, "--pcs", "-"],
        vec!["decode", "etrace", &f.te, "--elf", &f.elf, "--flow", "-"],
        vec!["run", &f.elf, "--pcs", "-"],
    ];
    for args in cases {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 64];
        c.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The pipe is closed here (the reader was dropped).
        let o = c.wait_with_output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {e}");
        // `run` may print its program's own stderr; nothing from rvtrace itself.
        assert!(
            !e.contains("rvtrace:") && !e.contains("panicked"),
            "{args:?}: {e}"
        );
    }
}

/// Warnings to a full stderr (`2>/dev/full`) are lost, never a panic (exit status 101).
#[test]
fn a_full_stderr_never_panics() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("note: /dev/full is absent; skipping");
        return;
    };
    let d = tmpdir("full");
    let f = files(&d);
    let garbage = d.join("garbage.bin");
    std::fs::write(&garbage, [0xffu8; 4096]).unwrap();
    let g = garbage.display().to_string();
    for args in [
        vec!["decode", "ntrace", &g, "--elf", &f.elf],
        vec!["decode", "etrace", &g, "--elf", &f.elf],
        vec!["tandem", "check", &g, "--elf", &f.elf],
        vec!["run", "/nonexistent.elf"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(full.try_clone().unwrap())
            .output()
            .unwrap();
        let code = o.status.code();
        assert!(
            code == Some(1) || code == Some(125),
            "{args:?}: status {code:?}"
        );
    }
}

/// `-` reads stdin: a trace piped into the decoder decodes as the file does.
#[test]
fn dash_is_stdin_for_the_decoders() {
    let d = tmpdir("stdin");
    let f = files(&d);
    for (proto, trace) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let from_file = rvtrace(&["decode", proto, trace, "--elf", &f.elf, "--pcs", "-"]);
        assert!(from_file.status.success(), "{}", stderr(&from_file));
        let mut c = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(["decode", proto, "-", "--elf", &f.elf, "--pcs", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(trace).unwrap();
        let mut stdin = c.stdin.take().unwrap();
        let w = std::thread::spawn(move || stdin.write_all(&bytes));
        let o = c.wait_with_output().unwrap();
        w.join().unwrap().unwrap();
        // Without the file name there is no sidecar: the defaults are the encoder's defaults.
        assert!(o.status.success(), "{proto}: {}", stderr(&o));
        assert!(o.stdout == from_file.stdout, "{proto}");
        assert!(!o.stdout.is_empty());
    }
}

/// An output that names an input of the same command is refused with a usage error, and the
/// input is left as it was.
#[test]
fn an_output_naming_an_input_is_refused() {
    let d = tmpdir("distinct");
    let f = files(&d);
    let before = std::fs::read(&f.ingress).unwrap();
    let nex = std::fs::read(&f.nex).unwrap();
    for args in [
        vec!["encode", "ntrace", &f.ingress, "-o", &f.ingress],
        vec!["encode", "etrace", &f.ingress, "-o", &f.ingress],
        vec!["decode", "ntrace", &f.nex, "--elf", &f.elf, "--pcs", &f.nex],
        vec!["decode", "etrace", &f.te, "--elf", &f.elf, "--flow", &f.elf],
        vec!["run", &f.elf, "--pcs", &f.elf],
        vec![
            "ingress", "convert", &f.ingress, "--from", "ingress", "-o", &f.ingress,
        ],
    ] {
        let o = rvtrace(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("refusing to overwrite"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert!(std::fs::read(&f.ingress).unwrap() == before);
    assert!(std::fs::read(&f.nex).unwrap() == nex);
    let o = rvtrace(&["run", &f.elf]);
    assert!(o.status.success(), "the ELF is intact: {}", stderr(&o));
}

/// Both decoders write the same flow text: hexadecimal addresses with symbols (checked with
/// `riscv64-unknown-elf-nm`: `_start` is at 0x80000000 in recurse-rv64gc), the same words for
/// the same elements, and the same loss warnings.
#[test]
fn both_decoders_print_the_same_flow_text() {
    let d = tmpdir("flowtext");
    let f = files(&d);
    let mut texts = Vec::new();
    for (proto, trace) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let o = rvtrace(&["decode", proto, trace, "--elf", &f.elf, "--flow", "-"]);
        assert!(o.status.success(), "{proto}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.starts_with("sync 0x80000000 <_start> start\n"),
            "{proto}: {text}"
        );
        let first_range = text.lines().find(|l| l.starts_with("range ")).unwrap();
        assert!(
            first_range.starts_with("range 0x80000000 <_start> .. 0x"),
            "{proto}: {first_range}"
        );
        for l in text.lines() {
            let word = l.split(' ').next().unwrap();
            assert!(
                ["sync", "range", "trap", "context", "time", "loss", "end"].contains(&word),
                "{proto}: {l}"
            );
            if word == "range" {
                // range 0x... <sym> .. 0x... <sym+0x..> (N instructions)
                assert!(
                    l.contains(" .. 0x") && l.ends_with("instructions)")
                        || l.ends_with("instruction)"),
                    "{proto}: {l}"
                );
            }
        }
        texts.push(text);
    }
    // The last instruction executed is the same in both.
    let last_range = |t: &str| {
        t.lines()
            .rfind(|l| l.starts_with("range "))
            .and_then(|l| l.split(" .. ").nth(1))
            .and_then(|r| r.split(" (").next())
            .map(str::to_string)
    };
    assert_eq!(last_range(&texts[0]), last_range(&texts[1]));

    // A damaged byte: both warn with the same prefix and the same `byte 0x..:` form.
    for (proto, trace) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let mut bytes = std::fs::read(trace).unwrap();
        let n = bytes.len();
        bytes.truncate(n - 2);
        let cut = d.join(format!("cut-{proto}"));
        std::fs::write(&cut, bytes).unwrap();
        let c = cut.display().to_string();
        let o = rvtrace(&["decode", proto, &c, "--elf", &f.elf, "--no-meta"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{proto}: {e}");
        let prefix = format!("rvtrace: warning: {c}: byte 0x");
        assert!(e.lines().any(|l| l.starts_with(&prefix)), "{proto}: {e}");
    }
}

/// Progress is drawn on a terminal (a pseudo-terminal made by `script`) and never when stderr is
/// a pipe.
#[test]
fn progress_only_on_a_terminal() {
    let d = tmpdir("progress");
    let f = files(&d);
    // 3 MiB of idle bytes: long enough for the bar to be drawn, a loss (no message).
    let idle = d.join("idle.nex");
    std::fs::write(&idle, vec![0u8; 3 << 20]).unwrap();
    let idle = idle.display().to_string();
    let piped = rvtrace(&["decode", "ntrace", &idle, "--elf", &f.elf]);
    assert_eq!(piped.status.code(), Some(1), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains("MiB"), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains('\x1b'), "{}", stderr(&piped));
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("note: `script` (util-linux) is absent; skipping the terminal half");
        return;
    }
    let log = d.join("typescript");
    let cmd = format!(
        "{} decode ntrace {idle} --elf {} --pcs /dev/null",
        env!("CARGO_BIN_EXE_rvtrace"),
        f.elf
    );
    let o = Command::new("script")
        .args(["-qfec", &cmd])
        .arg(&log)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        seen.contains("decode") && seen.contains("MiB/3.00 MiB"),
        "{seen}"
    );
}

/// An option out of range is a usage error (exit status 2) whether clap or the library that
/// owns the rule refuses it, and nothing is written.
#[test]
fn options_out_of_range_are_usage_errors() {
    let d = tmpdir("usage");
    let f = files(&d);
    let out = d.join("out").display().to_string();
    for args in [
        vec![
            "encode",
            "etrace",
            &f.ingress,
            "-o",
            &out,
            "--return-stack",
            "3",
        ],
        vec!["encode", "etrace", &f.ingress, "-o", &out, "--resync", "0"],
        vec![
            "encode",
            "etrace",
            &f.ingress,
            "-o",
            &out,
            "--srcid-bits",
            "17",
        ],
        vec![
            "encode",
            "etrace",
            &f.ingress,
            "-o",
            &out,
            "--format",
            "raw",
            "--type-bits",
            "2",
        ],
        vec![
            "decode",
            "etrace",
            &f.te,
            "--elf",
            &f.elf,
            "--branch-prediction",
            "3",
        ],
        vec!["dump", "etrace", &f.te, "--xlen", "33"],
        vec![
            "encode",
            "ntrace",
            &f.ingress,
            "-o",
            &out,
            "--call-stack",
            "0",
        ],
        vec![
            "encode",
            "ntrace",
            &f.ingress,
            "-o",
            &out,
            "--src-bits",
            "2",
            "--src-id",
            "9",
        ],
        vec![
            "decode",
            "ntrace",
            &f.nex,
            "--elf",
            &f.elf,
            "--src-bits",
            "13",
        ],
        vec!["run", &f.elf, "--itype-width", "5"],
        vec!["run", &f.elf, "--isa", "rv48i"],
    ] {
        let o = rvtrace(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).lines().count() <= 4, "{args:?}: {}", stderr(&o));
        assert!(!d.join("out").exists(), "{args:?} wrote its output");
    }
}
