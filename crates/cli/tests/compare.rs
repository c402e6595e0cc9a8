//! `rvtrace compare`: equal streams of every kind, the first divergence (index, PCs, symbols,
//! disassembly, where it comes from), one stream ending early, and the byte offset of the
//! message or packet that produced a decoded instruction, checked by decoding prefixes of the
//! trace.

use crate::common;

use common::{rvtrace, s, tmpdir, TmpDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ELF: &str = "elf/traps-rv64gc.elf";

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs")
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The program's PC list, ingress, N-Trace and E-Trace files.
struct Files {
    _t: TmpDir,
    elf: PathBuf,
    pcs: PathBuf,
    ing: PathBuf,
    nex: PathBuf,
    te: PathBuf,
}

fn files(name: &str) -> Files {
    let t = tmpdir(name);
    let elf = programs().join(ELF);
    let (pcs, ing, nex, te) = (
        t.join("a.pcs"),
        t.join("a.ing"),
        t.join("a.nex"),
        t.join("a.te"),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .current_dir(programs())
        .args(["run", ELF, "--pcs", s(&pcs), "--ingress", s(&ing)])
        .output()
        .unwrap();
    ok(&o, "run");
    ok(
        &rvtrace(&["encode", "ntrace", s(&ing), "-o", s(&nex)]),
        "encode ntrace",
    );
    ok(
        &rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te)]),
        "encode etrace",
    );
    Files {
        _t: t,
        elf,
        pcs,
        ing,
        nex,
        te,
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn equal_streams() {
    let f = files("equal");
    let n = std::fs::read_to_string(&f.pcs).unwrap().lines().count();
    let want = format!("equal: {n} instructions\n");
    for args in [
        vec![s(&f.pcs), s(&f.ing)],
        vec![s(&f.ing), s(&f.pcs)],
        vec![
            s(&f.pcs),
            s(&f.nex),
            "--trace-b",
            "ntrace",
            "--elf",
            s(&f.elf),
        ],
        vec![
            s(&f.te),
            s(&f.nex),
            "--trace-a",
            "etrace",
            "--trace-b",
            "ntrace",
            "--elf",
            s(&f.elf),
        ],
    ] {
        let mut a = vec!["compare"];
        a.extend(&args);
        let o = rvtrace(&a);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout(&o), want, "{args:?}");
    }
}

/// A PC list with instruction K replaced by the entry point.
fn damaged(f: &Files, k: usize) -> (PathBuf, u64) {
    let text = std::fs::read_to_string(&f.pcs).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let orig = u64::from_str_radix(lines[k].trim_start_matches("0x"), 16).unwrap();
    lines[k] = "0x80000000";
    let p = f.pcs.with_extension("bad");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    (p, orig)
}

#[test]
fn first_divergence_is_reported() {
    let f = files("diverge");
    let k = 5000;
    let (bad, orig) = damaged(&f, k);
    let o = rvtrace(&[
        "compare",
        s(&bad),
        s(&f.ing),
        "--elf",
        s(&f.elf),
        "--context",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[2].starts_with(&format!("first divergence at instruction {k} ")),
        "{out}"
    );
    // Three lines of context, then A and B at the divergence.
    assert_eq!(lines.len(), 3 + 3 + 2, "{out}");
    let a = lines[6];
    let b = lines[7];
    assert!(
        a.starts_with('A') && a.contains(&format!("{k}  0x80000000 <_start> ")),
        "{a}"
    );
    assert!(
        a.contains("auipc") && a.ends_with(&format!("(line {})", k + 1)),
        "{a}"
    );
    assert!(
        b.starts_with('B') && b.contains(&format!("{orig:#x} <")),
        "{b}"
    );
    assert!(
        b.ends_with(&format!("(record {k})")) || b.contains("(record "),
        "{b}"
    );
}

#[test]
fn a_stream_that_ends_early_diverges() {
    let f = files("ends");
    let text = std::fs::read_to_string(&f.pcs).unwrap();
    let short: String = text.lines().take(123).map(|l| format!("{l}\n")).collect();
    let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(["compare", s(&f.ing), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(short.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("first divergence at instruction 123 "),
        "{out}"
    );
    assert!(
        out.contains("B         123  (end: B ends after 123 instructions)"),
        "{out}"
    );
}

#[test]
fn malformed_input_names_the_line() {
    let f = files("malformed");
    let bad = f.pcs.with_extension("bad");
    std::fs::write(&bad, "0x80000000\nhello\n").unwrap();
    let o = rvtrace(&["compare", s(&bad), s(&f.ing)]);
    assert_eq!(o.status.code(), Some(125));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 2") && err.starts_with("rvtrace: error: "),
        "{err}"
    );
    let o = rvtrace(&["compare", s(&f.pcs), s(&f.nex), "--trace-b", "ntrace"]);
    assert_eq!(o.status.code(), Some(2), "a trace needs --elf");
}

/// Number of instructions `decode PROTO` gets from the first `len` bytes of `trace`.
fn decoded_prefix(proto: &str, trace: &Path, len: usize, elf: &Path, t: &Path) -> usize {
    let data = std::fs::read(trace).unwrap();
    let cut = t.join(format!("cut-{proto}-{len}"));
    std::fs::write(&cut, &data[..len]).unwrap();
    let pcs = t.join(format!("cut-{proto}-{len}.pcs"));
    let _ = rvtrace(&["decode", proto, s(&cut), "--elf", s(elf), "--pcs", s(&pcs)]);
    std::fs::read_to_string(&pcs)
        .unwrap_or_default()
        .lines()
        .count()
}

/// The offset reported for a decoded instruction is that of the message (packet) that produced
/// it: the trace cut before that message decodes to fewer instructions than the index, the
/// trace cut after it to more.
#[test]
fn decoded_offsets_are_the_producing_message() {
    let f = files("offsets");
    let data_nex = std::fs::read(&f.nex).unwrap();
    let data_te = std::fs::read(&f.te).unwrap();
    for k in [1usize, 2, 777, 5000, 40_000] {
        let (bad, _) = damaged(&f, k);
        for (proto, trace, data) in [("ntrace", &f.nex, &data_nex), ("etrace", &f.te, &data_te)] {
            let flag = "--trace-b";
            let o = rvtrace(&[
                "compare",
                s(&bad),
                s(trace),
                flag,
                proto,
                "--elf",
                s(&f.elf),
            ]);
            assert_eq!(o.status.code(), Some(1), "{proto} {k}");
            let out = stdout(&o);
            let b = out.lines().find(|l| l.starts_with("B  ")).unwrap();
            let off: usize = b
                .rsplit(" at byte ")
                .next()
                .and_then(|x| {
                    usize::from_str_radix(x.trim_end_matches(')').trim_start_matches("0x"), 16).ok()
                })
                .unwrap_or_else(|| panic!("{proto} {k}: {b}"));
            assert!(off < data.len(), "{proto} {k}: {b}");
            // The end of that message: N-Trace's last byte has MSEO = 11; E-Trace's next packet
            // starts where the decoder's packets say (found by cutting until more decode).
            let end = if proto == "ntrace" {
                off + data[off..].iter().position(|b| b & 3 == 3).unwrap() + 1
            } else {
                (off + 1..=data.len())
                    .find(|&e| decoded_prefix(proto, trace, e, &f.elf, &f._t) > k)
                    .unwrap()
            };
            assert!(
                end - off < 64,
                "{proto} {k}: a message of {} bytes?",
                end - off
            );
            let before = decoded_prefix(proto, trace, off, &f.elf, &f._t);
            let after = decoded_prefix(proto, trace, end, &f.elf, &f._t);
            assert!(
                before <= k && after > k,
                "{proto} {k}: byte {off}..{end}: {before} {after}"
            );
        }
    }
}

/// A trace whose first bytes were lost: the decoder's loss is a warning, and the divergence
/// says that trace was lost before it.
#[test]
fn decoder_loss_is_reported() {
    let f = files("loss");
    let data = std::fs::read(&f.nex).unwrap();
    let cut = f.nex.with_extension("cut");
    std::fs::write(&cut, &data[3..]).unwrap();
    let o = rvtrace(&[
        "compare",
        s(&f.pcs),
        s(&cut),
        "--trace-b",
        "ntrace",
        "--elf",
        s(&f.elf),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("rvtrace: warning: "), "{err}");
    let out = stdout(&o);
    assert!(out.contains("first divergence at instruction 0 "), "{out}");
    assert!(
        out.contains("B: trace was lost before this point, at byte 0x0"),
        "{out}"
    );
}

/// A trace encoded with settings the decoder must know (N-Trace SRC field, E-Trace
/// encapsulation widths and branch prediction) compares equal without repeating them: compare
/// reads the sidecar `encode` wrote, as `decode` does; with `--no-meta` the settings are missing
/// and the decode loses trace.
#[test]
fn decoded_traces_follow_their_sidecars() {
    let f = files("sidecar");
    let (nex, te) = (f._t.join("s.nex"), f._t.join("s.te"));
    ok(
        &rvtrace(&[
            "encode",
            "ntrace",
            s(&f.ing),
            "-o",
            s(&nex),
            "--src-bits",
            "3",
            "--src-id",
            "5",
        ]),
        "encode ntrace",
    );
    ok(
        &rvtrace(&[
            "encode",
            "etrace",
            s(&f.ing),
            "-o",
            s(&te),
            "--srcid-bits",
            "4",
            "--branch-prediction",
            "64",
        ]),
        "encode etrace",
    );
    for (proto, t) in [("ntrace", &nex), ("etrace", &te)] {
        let o = rvtrace(&[
            "compare",
            s(&f.pcs),
            s(t),
            "--trace-b",
            proto,
            "--elf",
            s(&f.elf),
        ]);
        ok(&o, proto);
        assert!(stdout(&o).starts_with("equal: "), "{proto}: {}", stdout(&o));
        let o = rvtrace(&[
            "compare",
            s(&f.pcs),
            s(t),
            "--trace-b",
            proto,
            "--elf",
            s(&f.elf),
            "--no-meta",
        ]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{proto} --no-meta: {}",
            stdout(&o)
        );
    }
}

/// `decode --pcs-format bin` writes the magic and one u64 LE per instruction, the same
/// addresses as the text list `run --pcs` wrote; `compare` reads it beside every other kind and
/// names the entry where a changed one diverges.
#[test]
fn binary_pc_list() {
    let f = files("binpcs");
    let text = std::fs::read_to_string(&f.pcs).unwrap();
    let want: Vec<u64> = text
        .lines()
        .map(|l| u64::from_str_radix(l.trim_start_matches("0x"), 16).unwrap())
        .collect();
    for (proto, trace) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let bin = f.pcs.with_extension(format!("{proto}.bin"));
        let o = rvtrace(&[
            "decode",
            proto,
            s(trace),
            "--elf",
            s(&f.elf),
            "--pcs",
            s(&bin),
            "--pcs-format",
            "bin",
        ]);
        ok(&o, "decode --pcs-format bin");
        let bytes = std::fs::read(&bin).unwrap();
        assert_eq!(&bytes[..8], b"RVTRPC64");
        let got: Vec<u64> = bytes[8..]
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{proto}");
        let o = rvtrace(&["compare", s(&bin), s(&f.pcs)]);
        assert_eq!(stdout(&o), format!("equal: {} instructions\n", want.len()));
        let o = rvtrace(&["compare", s(&f.ing), s(&bin)]);
        assert_eq!(stdout(&o), format!("equal: {} instructions\n", want.len()));
    }
    // Entry 7 changed: the divergence is there, named as the list's entry.
    let bin = f.pcs.with_extension("ntrace.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[8 + 7 * 8] ^= 0x40;
    let bad = f.pcs.with_extension("bad.bin");
    std::fs::write(&bad, &bytes).unwrap();
    let o = rvtrace(&["compare", s(&f.pcs), s(&bad), "--elf", s(&f.elf)]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("first divergence at instruction 7"), "{out}");
    assert!(out.contains("(address 7 of the binary list)"), "{out}");
    // Cut inside an address: an error naming it, not a quiet end.
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() - 3]).unwrap();
    let o = rvtrace(&["compare", s(&f.pcs), s(&bad)]);
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("cut inside address"));
}

/// Every command that reads a trace gives byte-identical output from stdin (read as it comes,
/// in the pipe's pieces) and from the file: decode (PC lists, flow), stats, compare, profile.
#[test]
fn stdin_equals_file() {
    use std::io::Write;
    use std::process::Stdio;
    let f = files("stdin");
    let elf = s(&f.elf);
    let run = |args: &[&str], stdin: Option<&Path>| -> (Vec<u8>, Option<i32>) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut w = c.stdin.take().unwrap();
        if let Some(p) = stdin {
            // Small writes: the command reads the pipe in pieces.
            for piece in std::fs::read(p).unwrap().chunks(777) {
                w.write_all(piece).unwrap();
            }
        }
        drop(w);
        let o = c.wait_with_output().unwrap();
        (o.stdout, o.status.code())
    };
    for (proto, trace) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let t = s(trace);
        let mut cases: Vec<Vec<&str>> = vec![
            vec!["decode", proto, "@", "--elf", elf, "--pcs", "-"],
            vec![
                "decode",
                proto,
                "@",
                "--elf",
                elf,
                "--pcs",
                "-",
                "--pcs-format",
                "bin",
            ],
            vec!["decode", proto, "@", "--elf", elf, "--flow", "-"],
            vec!["stats", "@", "--trace", proto, "--elf", elf],
            vec!["stats", "@", "--trace", proto, "--elf", elf, "--json"],
            vec!["compare", s(&f.pcs), "@", "--trace-b", proto, "--elf", elf],
            vec!["profile", "@", "--trace", proto, "--elf", elf],
        ];
        if proto == "ntrace" {
            // Read as it comes only with the link rule given (auto may decode twice).
            cases.push(vec![
                "decode",
                proto,
                "@",
                "--elf",
                elf,
                "--pcs",
                "-",
                "--link-registers",
                "spec",
            ]);
        }
        for c in cases {
            let file: Vec<&str> = c.iter().map(|a| if *a == "@" { t } else { a }).collect();
            let pipe: Vec<&str> = c.iter().map(|a| if *a == "@" { "-" } else { a }).collect();
            let (want, code) = run(&file, None);
            assert_eq!(code, Some(0), "{file:?}");
            assert!(!want.is_empty(), "{file:?}");
            let (got, code) = run(&pipe, Some(trace));
            assert_eq!(code, Some(0), "{pipe:?}");
            assert!(got == want, "{pipe:?}: stdin and file differ");
        }
    }
}
