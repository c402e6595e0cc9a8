//! `rvtrace run`, `example` and `ingress dump` (issue 9 items 6, 9, 10, 12): outputs to `-`,
//! outputs that would overwrite inputs, Ctrl-C, damaged ingress files, trap loops, `--stats`.

use crate::common;
use common::{rvtrace, stderr, stdout, tmpdir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn elf(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/elf/{name}.elf"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `addi a0,a0,1; j .-4` forever (encodings from riscv64-unknown-elf-as).
fn spin_elf(dir: &Path) -> PathBuf {
    let code: Vec<u8> = [0x00150513u32, 0xffdff06f]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let p = dir.join("spin.elf");
    std::fs::write(&p, rvtrace_testkit::minimal_elf(false, 0x8000_0000, &code)).unwrap();
    p
}

/// Block boundaries of a binary ingress file (format: `crates/ingress/src/binary.rs`): the
/// offset of each block, the end block last, with the records of each.
fn blocks(bytes: &[u8]) -> Vec<(usize, u64)> {
    let mut at = 20 + u16::from_le_bytes([bytes[14], bytes[15]]) as usize;
    let mut v = Vec::new();
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let n = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as u64;
        v.push((at, n));
        at += 12 + len;
    }
    v
}

/// Record lines of `ingress dump` output.
fn record_lines(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("0x")).count()
}

#[test]
fn ctrl_c_finishes_every_output_and_exits_130() {
    let d = tmpdir("sigint");
    let prog = spin_elf(&d);
    let (pcs, ing, txt, tt) = (
        d.join("p.txt"),
        d.join("t.ingress"),
        d.join("t.txt"),
        d.join("t.tt"),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(["run", s(&prog), "--pcs", s(&pcs), "--ingress", s(&ing)])
        .args(["--ingress-text", s(&txt), "--tandem", s(&tt)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it is running (the pcs file fills in 64 KiB steps), then Ctrl-C.
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&pcs).map(|m| m.len()).unwrap_or(0) == 0 {
        assert!(t0.elapsed().as_secs() < 60, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{e}");
    let n: u64 = e
        .split("interrupted after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no count in {e:?}"));
    assert!(n > 0 && n < 100_000_000, "{n}");
    // Every output is complete up to the stop: the ingress file has its end block.
    let dump = rvtrace(&["ingress", "dump", s(&ing)]);
    assert_eq!(dump.status.code(), Some(0), "{}", stderr(&dump));
    let dumped = stdout(&dump);
    assert!(
        dumped.ends_with(&format!(
            "# records={n} instructions={n} halfwords={} traps=0\n",
            2 * n
        )),
        "{}",
        &dumped[dumped.len() - 200..]
    );
    let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count() as u64;
    assert_eq!(lines(&pcs), n);
    // The text: its header comments, then a line per record.
    let text = std::fs::read_to_string(&txt).unwrap();
    assert_eq!(record_lines(&text) as u64, n);
    assert_eq!(text.lines().count() as u64, n + 3);
    let td = rvtrace(&["tandem", "dump", s(&tt)]);
    assert_eq!(td.status.code(), Some(0), "{}", stderr(&td));
    assert!(
        stdout(&td).contains(&format!("groups, {n} with an instruction")),
        "{}",
        stdout(&td).lines().last().unwrap_or("")
    );
}

#[test]
fn damaged_ingress_delivers_the_records_before_the_damage() {
    let d = tmpdir("damaged");
    let prog = elf("recurse-rv64gc");
    let (ing, pcs) = (d.join("r.ingress"), d.join("r.pcs"));
    let o = rvtrace(&["run", s(&prog), "--ingress", s(&ing), "--pcs", s(&pcs)]);
    assert_eq!(o.status.code(), Some(0));
    let bytes = std::fs::read(&ing).unwrap();
    let blks = blocks(&bytes);
    assert!(blks.len() >= 4, "{blks:?}");
    let truth: Vec<String> = std::fs::read_to_string(&pcs)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let before2: u64 = blks[..2].iter().map(|b| b.1).sum();

    // A flipped byte in block 2: the records of blocks 0 and 1, then a warning, exit 1.
    let bad = d.join("bad.ingress");
    let mut b = bytes.clone();
    b[blks[2].0 + 100] ^= 0x04;
    std::fs::write(&bad, &b).unwrap();
    let o = rvtrace(&["ingress", "dump", s(&bad)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(record_lines(&stdout(&o)) as u64, before2);
    let e = stderr(&o);
    assert!(
        e.starts_with("rvtrace: warning: ") && e.contains("checksum mismatch"),
        "{e}"
    );

    // Cut at a block boundary (a writer killed before it finished): the same, with the hint.
    let cut = d.join("cut.ingress");
    std::fs::write(&cut, &bytes[..blks[2].0]).unwrap();
    let o = rvtrace(&["ingress", "dump", s(&cut)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(record_lines(&stdout(&o)) as u64, before2);
    assert!(stderr(&o).contains("did not finish"), "{}", stderr(&o));

    // encode ntrace / etrace: the trace of the records before the damage, which decodes to the
    // first PCs of the run; exit 1.
    for proto in ["ntrace", "etrace"] {
        let t = d.join(format!("cut.{proto}"));
        let o = rvtrace(&["encode", proto, s(&cut), "-o", s(&t)]);
        assert_eq!(o.status.code(), Some(1), "{proto}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("the trace of the {before2} records before it")),
            "{}",
            stderr(&o)
        );
        let dp = d.join(format!("cut.{proto}.pcs"));
        let o = rvtrace(&["decode", proto, s(&t), "--elf", s(&prog), "--pcs", s(&dp)]);
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        let got: Vec<String> = std::fs::read_to_string(&dp)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(got.len() as u64, before2, "{proto}");
        assert_eq!(got[..], truth[..got.len()], "{proto}");
    }

    // Not an ingress file at all: nothing was read, a tool failure.
    let o = rvtrace(&["ingress", "dump", s(&prog)]);
    assert_eq!(o.status.code(), Some(125));
}

#[test]
fn dash_is_stdout_for_every_output() {
    let d = tmpdir("dash");
    let prog = elf("stdio-rv64gc");
    let (pcs, ing, txt) = (d.join("p"), d.join("i"), d.join("t"));
    let o = rvtrace(&["run", s(&prog), "--pcs", s(&pcs), "--ingress", s(&ing)]);
    assert_eq!(o.status.code(), Some(0));
    let program_output = stdout(&o);
    assert!(program_output.contains("hello"), "{program_output}");
    rvtrace(&["run", s(&prog), "--ingress-text", s(&txt)]);
    for (opt, file) in [
        ("--pcs", &pcs),
        ("--ingress", &ing),
        ("--ingress-text", &txt),
    ] {
        let o = rvtrace(&["run", s(&prog), opt, "-"]);
        assert_eq!(o.status.code(), Some(0), "{opt}");
        assert_eq!(o.stdout, std::fs::read(file).unwrap(), "{opt}");
        // The program's own output went to stderr.
        assert!(stderr(&o).contains(program_output.trim_end()), "{opt}");
    }
    // The tandem trace to stdout: its sidecar's contents are notes on stderr.
    let tt = d.join("t.tt");
    rvtrace(&["run", s(&prog), "--tandem", s(&tt)]);
    let o = rvtrace(&["run", s(&prog), "--tandem", "-"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout, std::fs::read(&tt).unwrap());
    let meta = std::fs::read_to_string(d.join("t.tt.meta")).unwrap();
    let e = stderr(&o);
    for l in meta.lines() {
        assert!(e.contains(&format!("rvtrace: note:   {l}")), "{l}: {e}");
    }
    // Two outputs to stdout: a usage error.
    let o = rvtrace(&["run", s(&prog), "--pcs", "-", "--ingress", "-"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_output_equal_to_an_input_is_refused_before_anything_is_written() {
    let d = tmpdir("distinct");
    let prog = d.join("p.elf");
    std::fs::copy(elf("recurse-rv64gc"), &prog).unwrap();
    let before = std::fs::read(&prog).unwrap();
    let other = d.join("other.txt");
    for args in [
        vec!["--pcs", s(&prog)],
        vec!["--ingress", s(&prog)],
        vec!["--pcs", s(&other), "--ingress-text", s(&prog)],
        vec!["--pcs", s(&other), "--ingress", s(&other)],
    ] {
        let mut a = vec!["run", s(&prog)];
        a.extend(&args);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(&prog).unwrap(), before, "{args:?}");
        assert!(
            !other.exists(),
            "{args:?}: created an output before refusing"
        );
    }
    // The tandem sidecar is an output too: --tandem X where X.meta is the program.
    let x = d.join("p.elf.meta");
    std::fs::copy(&prog, &x).unwrap();
    let o = rvtrace(&["run", s(&x), "--tandem", s(&prog.with_extension("elf"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&x).unwrap(), before);
}

#[test]
fn stats_print_names_and_the_profile() {
    let o = rvtrace(&["run", s(&elf("recurse-rv64gc")), "--stats"]);
    assert_eq!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(
        e.contains("rvtrace: stopped by exit status 0 after "),
        "{e}"
    );
    assert!(!e.contains("Exit(") && !e.contains("InsnLimit"), "{e}");
    assert!(e.contains("where the time went"), "{e}");
    // The busiest function of this program, as `example` shows it too.
    assert!(e.lines().any(|l| l.ends_with("  fib")), "{e}");
    let o = rvtrace(&[
        "run",
        s(&elf("recurse-rv64gc")),
        "--stats",
        "--max-insns",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(124));
    assert!(
        stderr(&o)
            .contains("stopped by the instruction limit (--max-insns) after 1000 instructions"),
        "{}",
        stderr(&o)
    );
    let ex = rvtrace(&["example"]);
    assert!(stdout(&ex).contains("where the time went"));
    assert!(stdout(&ex).lines().any(|l| l.ends_with("  fib")));
}

#[test]
fn trap_loop_is_explained() {
    let o = rvtrace(&["run", s(&elf("recurse-rv32imac")), "--isa", "rv32i"]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert!(
        e.contains("stuck in a trap loop: illegal instruction at pc 0x"),
        "{e}"
    );
    assert!(e.contains("lacks C"), "{e}");
    assert!(
        e.contains("rvtrace: note: the instruction at 0x") && e.contains(": sw "),
        "{e}"
    );
}

#[test]
fn default_limit_is_documented() {
    // Help text is wrapped to the terminal: compare with whitespace collapsed.
    let text = |args: &[&str]| {
        stdout(&rvtrace(args))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let h = text(&["run", "--help"]);
    assert!(
        h.contains(
            "100000000 when the run writes trace (--pcs, --ingress, --ingress-text, --tandem)"
        ),
        "{h}"
    );
    let h = text(&["--help"]);
    assert!(
        h.contains("130 Ctrl-C stopped `run` (its output files are finished)"),
        "{h}"
    );
}

#[test]
fn example_on_a_closed_stdout_is_quiet() {
    for args in [&["example"][..], &["example", "--list"]] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(c.stdout.take()); // the reader goes away at once (`| head -0`)
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

/// The `--counters` table's total of an event (by its name column).
fn counter_total(text: &str, name: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in:\n{text}"));
    line.split_whitespace()
        .nth(3)
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap()
}

/// `run --counters`: the table's instruction count is the retired-PC list less the
/// ecall/ebreak that trapped (the counters' view), per mode columns add up, cycles equal
/// instructions plus ecall/ebreak without timing and exceed them with `--timing on`, and the
/// caches' misses appear only when a cache is configured.
#[test]
fn counters_table_agrees_with_the_pc_list() {
    let d = tmpdir("counters");
    let pcs = d.join("pcs.txt");
    let o = rvtrace(&[
        "run",
        s(&elf("traps-rv64gc")),
        "--counters",
        "--pcs",
        s(&pcs),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let listed = std::fs::read_to_string(&pcs).unwrap().lines().count() as u64;
    let env_calls = counter_total(&err, "raw:env-calls");
    assert!(env_calls > 0, "traps has ecalls and ebreaks");
    let insns = counter_total(&err, "instructions");
    assert_eq!(insns + env_calls, listed);
    assert_eq!(counter_total(&err, "cycles"), listed);
    let row = err
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("instructions"))
        .unwrap();
    let cols: Vec<u64> = row
        .split_whitespace()
        .skip(5)
        .map(|c| c.replace(',', "").parse().unwrap())
        .collect();
    assert_eq!(cols.iter().sum::<u64>(), insns, "U + S + M: {row}");
    assert!(
        cols[0] > 0 && cols[1] > 0,
        "traps runs code in U and S: {row}"
    );
    assert_eq!(
        counter_total(&err, "L1-dcache-load-misses"),
        0,
        "no L1D by default"
    );
    // The table says what the model leaves off, so zeros are not read as facts.
    for off in [
        "off: no caches: the cache events count nothing",
        "off: no timing: cycles = instructions",
    ] {
        assert!(err.contains(off), "{off}:\n{err}");
    }

    let o = rvtrace(&[
        "run",
        s(&elf("traps-rv64gc")),
        "--counters",
        "--timing",
        "on",
        "--cache",
        "l1d:1k:1:16",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(counter_total(&err, "instructions"), insns);
    assert!(counter_total(&err, "cycles") > listed);
    assert!(!err.contains("off: no timing"), "{err}");
    assert!(err.contains("off: one L1 cache only"), "{err}");
    let loads = counter_total(&err, "L1-dcache-loads");
    let misses = counter_total(&err, "L1-dcache-load-misses");
    assert!(misses > 0 && misses <= loads, "{misses} of {loads}");
}

/// Options of the counters and the model: bad values are usage errors (exit 2) that say what is
/// expected.
#[test]
fn counter_and_model_options_are_checked() {
    let prog = elf("recurse-rv64gc");
    for (args, says) in [
        (&["--hpm-counters", "30"][..], "--hpm-counters"),
        (&["--cache", "l1d:3k:8:64"][..], "--cache"),
        (&["--cache", "l2:32k:8:64"][..], "--cache"),
        (&["--bpred", "gshare:4096"][..], "--bpred"),
        (&["--timing", "mispredict=x"][..], "--timing"),
        (&["--isa", "rv64gc_sscofpmf_zzz"][..], "--isa"),
    ] {
        let mut a = vec!["run", s(&prog)];
        a.extend_from_slice(args);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// `rvtrace example pmu-stat`: the bundled S-mode program measures its workload through the
/// built-in SBI's PMU extension; every event is counted (the example runs with caches and
/// timing on), instructions exactly as the program's own loop makes them whatever the model.
#[test]
fn example_pmu_stat_measures_through_the_sbi() {
    let o = rvtrace(&["example", "pmu-stat"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let count = |name: &str| -> u64 {
        let l = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{out}"));
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let insns = count("instructions");
    assert!(count("cycles") > insns, "timing on: stalls\n{out}");
    assert!(count("branches") > 0 && count("branch-misses") <= count("branches"));
    assert!(count("cache-misses") > 0 && count("cache-misses") <= count("cache-references"));
    assert_eq!(count("sbi-set-timer"), 4, "{out}");
    assert!(out.contains("stopped by exit status 0"), "{out}");
    let list = stdout(&rvtrace(&["example", "--list"]));
    assert!(list.lines().any(|l| l.starts_with("pmu-stat ")), "{list}");
}

/// `example --write DIR` writes the bundled programs, byte for byte the committed ELFs, and they
/// run; `example pmu-stat` points at the file it writes, not at the checkout's.
#[test]
fn example_write_gives_the_bundled_programs() {
    let d = tmpdir("example-write");
    let o = rvtrace(&["example", "--write", s(&d)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&rvtrace(&["example", "--list"]));
    for name in list.lines().map(|l| l.split_whitespace().next().unwrap()) {
        let path = d.join(format!("{name}.elf"));
        assert!(
            stdout(&o).contains(s(&path)),
            "{name} not listed:\n{}",
            stdout(&o)
        );
        let written = std::fs::read(&path).unwrap();
        assert!(written.starts_with(b"\x7fELF"), "{name}");
        if let Ok(committed) = std::fs::read(elf(name)) {
            assert_eq!(written, committed, "{name}: not the committed ELF");
        }
    }
    let o = rvtrace(&["run", s(&d.join("recurse-rv64gc.elf"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rvtrace(&["example", "nonesuch", "--write", s(&d)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = rvtrace(&["example", "pmu-stat"]);
    assert!(
        stdout(&o).contains("rvtrace example pmu-stat --write DIR"),
        "{}",
        stdout(&o)
    );
}

/// The README's "Your own program" build command, run as written (with Debian's cross compiler
/// and picolibc), gives a program the hart model runs to its exit status.
#[test]
fn readme_own_program_recipe_builds_a_program_that_runs() {
    if std::process::Command::new("riscv64-unknown-elf-gcc")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("riscv64-unknown-elf-gcc not installed (scripts/setup.sh installs it): skipped");
        return;
    }
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let section = readme
        .split("## Your own program")
        .nth(1)
        .expect("README section")
        .split("\n## ")
        .next()
        .unwrap();
    // The indented command that ends with `hello.c -o hello.elf`, its continuation lines joined.
    let mut cmd = String::new();
    for l in section.lines().filter(|l| l.starts_with("    ")) {
        cmd.push_str(l.trim().trim_end_matches('\\'));
        cmd.push(' ');
        if l.contains("-o hello.elf") {
            break;
        }
    }
    assert!(cmd.starts_with("riscv64-unknown-elf-gcc "), "{cmd}");
    let d = tmpdir("own-program");
    std::fs::write(
        d.join("hello.c"),
        "#include <stdio.h>\nint main(void) { printf(\"hello\\n\"); return 3; }\n",
    )
    .unwrap();
    let o = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{cmd}\n{}", stderr(&o));
    let o = rvtrace(&["run", s(&d.join("hello.elf"))]);
    assert_eq!(stdout(&o), "hello\n");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    // Linked without the four symbols: the error says what to give.
    let plain = cmd.split(" -Wl,").next().unwrap().to_string() + " hello.c -o plain.elf";
    let o = std::process::Command::new("sh")
        .args(["-c", &plain])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{plain}\n{}", stderr(&o));
    let o = rvtrace(&["run", s(&d.join("plain.elf"))]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("is outside RAM")
            && stderr(&o).contains("-Wl,--defsym=__flash=0x80000000"),
        "{}",
        stderr(&o)
    );
}

/// `run --ctr 0.1.4`: the draft's CTR CSRs exist: M-mode writes all-ones to `mctrcontrol`
/// (0x381), reads it and `mctrstatus` (0x383), and exits through the `virt` test finisher only
/// if `mctrcontrol` read back the draft's implemented RV32 fields, `0x000f_1f07` (else it runs
/// into an illegal instruction). Without `--ctr`, and with `--ctr 1.0` (whose CSR numbers
/// differ), 0x381 is an illegal instruction.
#[test]
fn ctr_draft_option_adds_the_draft_csrs() {
    use rvtrace_testkit::asm::{addi, branch, csrr, csrrw, s_type};
    let d = tmpdir("ctr-draft");
    let lui = |rd: u32, imm: u32| (imm << 12) | (rd << 7) | 0x37;
    let code = [
        addi(5, 0, -1),       // 0: t0 = all ones
        csrrw(0, 0x381, 5),   // 1: mctrcontrol = all ones
        csrr(6, 0x381),       // 2: t1 = mctrcontrol
        csrr(7, 0x383),       // 3: t2 = mctrstatus
        lui(28, 0xf2),        // 4: t3 = 0xf2000
        addi(28, 28, -0xf9),  // 5: t3 = 0xf1f07
        branch(0, 6, 28, 8),  // 6: beq t1, t3 -> 8
        0,                    // 7: illegal
        lui(29, 0x100),       // 8: t4 = finisher 0x100000
        lui(30, 0x5),         // 9: t5 = 0x5000
        addi(30, 30, 0x555),  // 10: t5 = 0x5555 (pass)
        s_type(0, 30, 29, 2), // 11: sw t5, 0(t4)
    ];
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let p = d.join("ctr.elf");
    std::fs::write(&p, rvtrace_testkit::minimal_elf(false, 0x8000_0000, &bytes)).unwrap();
    let o = rvtrace(&["run", s(&p), "--ctr", "0.1.4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for args in [&[][..], &["--ctr", "1.0"][..]] {
        let o = rvtrace(&[&["run", s(&p)][..], args].concat());
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {e}");
        assert!(e.contains("illegal instruction"), "{args:?}: {e}");
        assert!(
            e.contains("0x80000004"),
            "at the mctrcontrol write: {args:?}: {e}"
        );
    }
}

/// Issue 32 item 7: `--trace-from N` starts the trace outputs after N instructions: the PC list
/// is the full run's after its first N lines, and the window's ingress, encoded and decoded,
/// gives it; a window past the end leaves the outputs empty with a warning; a start at or past
/// `--max-insns`, with `--tandem` or with several harts is a usage error.
#[test]
fn trace_from_starts_the_outputs_later() {
    let d = tmpdir("trace-from");
    let p = elf("heap-rv64gc");
    let (full, win, ing, te, dec) = (
        d.join("full.pcs"),
        d.join("win.pcs"),
        d.join("win.ing"),
        d.join("win.te"),
        d.join("dec.pcs"),
    );
    let o = rvtrace(&["run", s(&p), "--pcs", s(&full)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rvtrace(&[
        "run",
        s(&p),
        "--trace-from",
        "1000",
        "--pcs",
        s(&win),
        "--ingress",
        s(&ing),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let full = std::fs::read_to_string(&full).unwrap();
    let tail: String = full.lines().skip(1000).map(|l| format!("{l}\n")).collect();
    assert!(tail.len() > 100_000);
    assert_eq!(std::fs::read_to_string(&win).unwrap(), tail);
    let o = rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rvtrace(&["decode", s(&te), "--elf", s(&p), "--pcs", s(&dec)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&dec).unwrap(), tail);
    // Past the end: the run ends as without the option, the outputs empty, a warning.
    let o = rvtrace(&["run", s(&p), "--trace-from", "50000000", "--pcs", s(&win)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("before --trace-from 50000000"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read(&win).unwrap().is_empty());
    for bad in [
        &["--trace-from", "100", "--max-insns", "100"][..],
        &["--trace-from", "100", "--tandem", "t.tdm"][..],
    ] {
        let mut a = vec!["run", s(&p), "--pcs", s(&win)];
        a.extend_from_slice(bad);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
}

/// Issue 32 item 7: `--trace-from` and `--trace-to` at symbols and addresses. The window from
/// `main` (its address from `riscv64-unknown-elf-nm`) to `exit` is the full run's PC list from
/// the first `main` to before the first `exit`; a name from `--symbols` (a System.map line) and
/// `NAME+OFFSET` and `0xADDR` likewise; the run ends with status 0 at `--trace-to`. An unknown
/// name, a count for `--trace-to` and a bad `--symbols` offset are usage errors.
#[test]
fn trace_window_by_symbol_and_address() {
    let d = tmpdir("trace-window");
    let p = elf("heap-rv64gc");
    let Some(nm) = common::NmFunctions::of(&p) else {
        return;
    };
    let (main, exit) = (nm.addr_of("main").unwrap(), nm.addr_of("exit").unwrap());
    let full = d.join("full.pcs");
    let o = rvtrace(&["run", s(&p), "--pcs", s(&full)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let full = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let first = |a: u64| {
        let hex = format!("{a:#x}");
        lines.iter().position(|&l| l == hex).unwrap()
    };
    let window = |from: u64, to: u64| -> String {
        lines[first(from)..first(to)]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let map = d.join("System.map");
    std::fs::write(&map, format!("{main:016x} T window_start\n")).unwrap();
    let win = d.join("win.pcs");
    let main_hex = format!("{main:#x}");
    for (from, to, want) in [
        ("main", "exit", window(main, exit)),
        ("window_start", "exit", window(main, exit)),
        (main_hex.as_str(), "exit+0x0", window(main, exit)),
        ("main+4", "exit", window(main + 4, exit)),
    ] {
        let o = rvtrace(&[
            "run",
            s(&p),
            "--symbols",
            s(&map),
            "--trace-from",
            from,
            "--trace-to",
            to,
            "--pcs",
            s(&win),
        ]);
        assert_eq!(o.status.code(), Some(0), "{from}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("stopped at --trace-to"),
            "{}",
            stderr(&o)
        );
        let got = std::fs::read_to_string(&win).unwrap();
        assert!(want.lines().count() > 1000, "{from}");
        assert!(got == want, "{from}..{to}: not the run's window");
    }
    for bad in [
        &["--trace-from", "no_such_function"][..],
        &["--trace-to", "1000"][..],
        &["--trace-to", "exit", "--symbols", "map@zz"][..],
    ] {
        let mut a = vec!["run", s(&p), "--pcs", s(&win)];
        a.extend_from_slice(bad);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
}

/// `run --stats`, alone or beside `--pcs` and the ingress stream, counts pre-decoded blocks'
/// runs once per block and length (the hart keeps its fused block loop); beside the tandem
/// trace (which sees every instruction) every instruction is counted as it retires. All give
/// the same counts and profile, and the block runs' `--pcs` and ingress files are the
/// per-instruction ones byte for byte, on programs with traps, interrupts, U/S code and both
/// XLENs.
#[test]
fn stats_of_block_runs_are_the_per_instruction_stats() {
    let d = tmpdir("stats-runs");
    for p in [
        "heap-rv64gc",
        "float-rv32imac",
        "traps-rv64gc",
        "timer-rv32imac",
        "kernel-rv64gc",
    ] {
        let elf = elf(p);
        let run = |tag: &str, extra: &[&str]| -> (Vec<String>, Vec<u8>, Vec<u8>) {
            let (pcs, ing) = (
                d.join(format!("{p}-{tag}.pcs")),
                d.join(format!("{p}-{tag}.ing")),
            );
            let mut a = vec![
                "run",
                s(&elf),
                "--stats",
                "--pcs",
                s(&pcs),
                "--ingress",
                s(&ing),
            ];
            a.extend_from_slice(extra);
            let o = rvtrace(&a);
            assert!(o.status.success(), "{p}: {}", stderr(&o));
            // Not the timing line.
            let lines = stderr(&o)
                .lines()
                .filter(|l| !l.contains(" MIPS)"))
                .map(str::to_string)
                .collect();
            (
                lines,
                std::fs::read(&pcs).unwrap(),
                std::fs::read(&ing).unwrap(),
            )
        };
        let runs = run("runs", &[]);
        assert!(
            runs.0.iter().any(|l| l.contains("where the time went")),
            "{p}"
        );
        assert!(!runs.1.is_empty() && !runs.2.is_empty(), "{p}");
        let tt = d.join(format!("{p}.tt"));
        let each = run("each", &["--tandem", s(&tt)]);
        assert!(
            runs == each,
            "{p}: block runs and single instructions differ"
        );
        let o = rvtrace(&["run", s(&elf), "--stats"]);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        let alone: Vec<String> = stderr(&o)
            .lines()
            .filter(|l| !l.contains(" MIPS)"))
            .map(str::to_string)
            .collect();
        assert_eq!(runs.0, alone, "{p}");
    }
}
