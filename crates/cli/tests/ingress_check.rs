//! `rvtrace ingress check`: the hart model's ingress files of every program pass, and each
//! kind of damage a hart's ingress port could do is caught (a record lost, an itype changed, a
//! privilege changed without a trap, iretire wrong, ...), each by the rule named in the
//! report; `ingress convert --elf` catches a deleted CSV record; `compare` of two ingress
//! files names the field that differs; `ingress dump --no-time` diffs cleanly; `compare
//! --align` finds where a trace cut at its start joins the reference.
//!
//! The damaged files are made from a real run's records in their text form (`ingress dump`),
//! edited and converted back (`ingress convert --from text`, not checked).

use crate::common;

use common::{ok, program, rvtrace, s, stderr, stdout, tmpdir};
use std::path::{Path, PathBuf};

/// The options `programs/qemu.conf` gives `rvtrace run` for a program (its `rvtrace` column).
fn run_options(name: &str) -> Vec<String> {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/qemu.conf");
    let text = std::fs::read_to_string(conf).unwrap();
    let prog = name.rsplit_once('-').map_or(name, |p| p.0);
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.first() == Some(&prog) && cols.len() > 5 && cols[5] != "-" {
            return cols[5].split(',').map(str::to_string).collect();
        }
    }
    Vec::new()
}

/// Runs `programs/elf/NAME.elf` with `--ingress` (and `extra` options) into `dir`.
fn run_ingress(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let ing = dir.join(format!("{name}.ingress"));
    let elf = program(name);
    let opts = run_options(name);
    let mut args = vec!["run", s(&elf), "--ingress", s(&ing)];
    args.extend(opts.iter().map(String::as_str));
    args.extend(extra);
    let o = rvtrace(&args);
    assert!(
        o.status.code().is_some_and(|c| c < 2),
        "run {name}: {:?}\n{}",
        o.status,
        stderr(&o)
    );
    ing
}

/// The records of an ingress file as text lines (no comments).
fn records(ing: &Path) -> Vec<String> {
    let o = rvtrace(&["ingress", "dump", s(ing)]);
    ok(&o, "dump");
    stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Text records back into a binary ingress file (without the check).
fn write_records(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let txt = dir.join(format!("{name}.txt"));
    std::fs::write(&txt, lines.join("\n") + "\n").unwrap();
    let out = dir.join(format!("{name}.ingress"));
    let o = rvtrace(&[
        "ingress",
        "convert",
        "--from",
        "text",
        s(&txt),
        "--xlen",
        "64",
        "-o",
        s(&out),
    ]);
    ok(&o, "convert --from text");
    out
}

/// `ingress check` of `ing` against `name`'s ELF: (exit status, stdout).
fn check(ing: &Path, name: &str) -> (i32, String) {
    let o = rvtrace(&["ingress", "check", s(ing), "--elf", s(&program(name))]);
    (o.status.code().unwrap_or(-1), stdout(&o))
}

/// Index of the first record line that satisfies `f`.
fn find(lines: &[String], f: impl Fn(&str) -> bool) -> usize {
    lines
        .iter()
        .position(|l| f(l))
        .expect("a record of that kind")
}

/// Replaces `old` by `new` in record `k` (asserting it is there).
fn edit(lines: &mut [String], k: usize, old: &str, new: &str) {
    assert!(lines[k].contains(old), "{}", lines[k]);
    lines[k] = lines[k].replacen(old, new, 1);
}

/// Asserts that the check fails and its first violation is at record `k` with `rule`.
fn caught(ing: &Path, name: &str, k: usize, rule: &str) {
    let (code, out) = check(ing, name);
    assert_eq!(code, 1, "{out}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("record {k}: ")),
        "first violation not at record {k}:\n{out}"
    );
    let block: Vec<&str> = out.lines().take(3).collect();
    assert!(block[2].contains(rule), "rule {rule:?} not named:\n{out}");
}

/// The independent side: every program's clean file passes (the hart model itself is checked
/// PC for PC against QEMU by programs.rs).
#[test]
fn every_program_passes() {
    let t = tmpdir("clean");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "elf").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    assert!(names.len() > 40, "{names:?}");
    for name in &names {
        let ing = run_ingress(&t, name, &[]);
        let (code, out) = check(&ing, name);
        assert_eq!(code, 0, "{name}:\n{out}");
        assert!(out.trim_end().ends_with("no violation"), "{name}: {out}");
    }
    // Block records and context (the vm program switches address spaces) too.
    for (name, extra) in [
        ("recurse-rv64gc", &["--ingress-blocks"][..]),
        ("vm-rv64gc", &["--context", "asid"][..]),
        (
            "vm-rv32imac",
            &["--context", "asid", "--ingress-blocks"][..],
        ),
    ] {
        let ing = run_ingress(&t, name, extra);
        let (code, out) = check(&ing, name);
        assert_eq!(code, 0, "{name} {extra:?}:\n{out}");
    }
}

/// A record deleted: the flow jumps with itype 0 (the case), caught at the record
/// after the gap.
#[test]
fn deleted_record_is_a_discontinuity() {
    let t = tmpdir("deleted");
    let name = "recurse-rv64gc";
    let mut lines = records(&run_ingress(&t, name, &[]));
    let k = 1000 + find(&lines[1000..], |l| !l.contains("itype="));
    lines.remove(k);
    let bad = write_records(&t, "bad", &lines);
    caught(&bad, name, k, "a discontinuity nothing explains");
}

/// A taken branch relabelled not taken: the branch may be either, but the next record is at
/// its target, not after it.
#[test]
fn taken_branch_relabelled_not_taken() {
    let t = tmpdir("relabel");
    let name = "loops-rv64gc";
    let mut lines = records(&run_ingress(&t, name, &[]));
    let k = find(&lines, |l| l.contains(" itype=5 "));
    edit(&mut lines, k, " itype=5 ", " itype=4 ");
    let bad = write_records(&t, "bad", &lines);
    caught(&bad, name, k + 1, &format!("record {k} ("));
}

/// An itype that does not fit the instruction: a call (itype 9) relabelled as a return, a
/// plain instruction given a branch's itype.
#[test]
fn itype_against_the_instruction() {
    let t = tmpdir("itype");
    let name = "recurse-rv64gc";
    let clean = records(&run_ingress(&t, name, &[]));
    let mut lines = clean.clone();
    let k = find(&lines, |l| l.contains(" itype=9 "));
    edit(&mut lines, k, " itype=9 ", " itype=13 ");
    let bad = write_records(&t, "call", &lines);
    caught(&bad, name, k, "itype does not fit the last instruction");
    let mut lines = clean;
    let k = 100 + find(&lines[100..], |l| !l.contains("itype="));
    lines[k] = lines[k].replacen(" priv=", " itype=4 priv=", 1);
    let bad = write_records(&t, "plain", &lines);
    caught(
        &bad,
        name,
        k,
        "itype does not fit the last instruction (None)",
    );
}

/// The privilege changed on a record that follows no trap and no trap return.
#[test]
fn privilege_change_without_a_trap() {
    let t = tmpdir("priv");
    let name = "sdeleg-rv64gc";
    let mut lines = records(&run_ingress(&t, name, &[]));
    let k = 50
        + find(&lines[50..], |l| {
            l.contains(" priv=M") && !l.contains("itype=")
        });
    let k = k + 1;
    assert!(!lines[k - 1].contains("itype="));
    edit(&mut lines, k, " priv=M", " priv=S");
    let bad = write_records(&t, "bad", &lines);
    caught(
        &bad,
        name,
        k,
        "the privilege changed from M after neither a trap nor a trap return",
    );
}

/// iretire that does not end on an instruction (a 4-byte instruction said to be 2), and an
/// ilastsize that is not the last instruction's size.
#[test]
fn iretire_and_ilastsize_against_the_program() {
    let t = tmpdir("iretire");
    let name = "nocompress-rv64g";
    let clean = records(&run_ingress(&t, name, &[]));
    let mut lines = clean.clone();
    let k = 100
        + find(&lines[100..], |l| {
            l.contains(" +4 ") && !l.contains("itype=")
        });
    edit(&mut lines, k, " +4 ", " +6/4 ");
    let bad = write_records(&t, "iretire", &lines);
    caught(&bad, name, k, "iretire does not end on an instruction");
    let mut lines = clean;
    edit(&mut lines, k, " +4 ", " +4/2 ");
    let bad = write_records(&t, "ilastsize", &lines);
    caught(
        &bad,
        name,
        k,
        "ilastsize says the last instruction is not 4 bytes",
    );
}

/// Trap records: an ecall whose cause is not its privilege's, a reserved cause.
#[test]
fn trap_causes() {
    let t = tmpdir("cause");
    let name = "traps-rv64gc";
    let clean = records(&run_ingress(&t, name, &[]));
    let mut lines = clean.clone();
    let k = find(&lines, |l| l.contains(" itype=1 cause=11 "));
    edit(&mut lines, k, " cause=11 ", " cause=8 ");
    let bad = write_records(&t, "ecall", &lines);
    caught(
        &bad,
        name,
        k,
        "an ecall raises the environment call of its privilege",
    );
    let mut lines = clean;
    edit(&mut lines, k, " cause=11 ", " cause=14 ");
    let bad = write_records(&t, "reserved", &lines);
    caught(&bad, name, k, "cause is a reserved exception code");
}

/// A new context on a record with ctype 0 (unreported).
#[test]
fn context_change_unreported() {
    let t = tmpdir("context");
    let name = "recurse-rv64gc";
    let mut lines = records(&run_ingress(&t, name, &[]));
    let k = 500 + find(&lines[500..], |l| !l.contains("itype="));
    for l in &mut lines[k..] {
        *l = l.replacen(" priv=M", " priv=M context=0x5", 1);
    }
    let bad = write_records(&t, "bad", &lines);
    caught(&bad, name, k, "context changed from 0x0 with ctype 0");
    // Reported (ctype 2, precise): clean.
    edit(&mut lines, k, " context=0x5", " context=0x5 ctype=2");
    let good = write_records(&t, "good", &lines);
    assert_eq!(check(&good, name).0, 0);
}

/// `--max N` shows the first N of the violations and counts them all.
#[test]
fn max_violations_shown() {
    let t = tmpdir("max");
    let name = "loops-rv64gc";
    let mut lines = records(&run_ingress(&t, name, &[]));
    let mut n = 0;
    for l in lines.iter_mut().filter(|l| l.contains(" itype=5 ")).take(5) {
        *l = l.replacen(" itype=5 ", " itype=4 ", 1);
        n += 1;
    }
    assert_eq!(n, 5);
    let bad = write_records(&t, "bad", &lines);
    let o = rvtrace(&[
        "ingress",
        "check",
        s(&bad),
        "--elf",
        s(&program(name)),
        "--max",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("record ")).count(),
        2,
        "{out}"
    );
    assert!(out.contains(": 5 violations in "), "{out}");
    assert!(out.contains("(the first 2 shown)"), "{out}");
}

/// `ingress convert --from csv --elf` checks what it imports: one deleted CSV record is caught
/// (exit 1, a warning naming the record), the same file without the deletion converts cleanly,
/// and `--no-check` skips the check.
#[test]
fn convert_checks_a_csv_with_a_deleted_record() {
    let t = tmpdir("csv");
    let name = "recurse-rv64gc";
    let elf = program(name);
    let ing = run_ingress(&t, name, &[]);
    let csv = t.join("a.csv");
    let conv = |from: &str, input: &Path, out: &Path, more: &[&str]| {
        let mut a = vec![
            "ingress",
            "convert",
            "--from",
            from,
            s(input),
            "--elf",
            s(&elf),
            "-o",
            s(out),
        ];
        a.extend(more);
        rvtrace(&a)
    };
    ok(
        &conv("ingress", &ing, &csv, &["--to", "csv"]),
        "ingress to csv",
    );
    let back = t.join("back.ingress");
    ok(&conv("csv", &csv, &back, &[]), "clean csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut rows: Vec<&str> = text.lines().collect();
    // Row 1 is the header; delete the record 2000 (a plain instruction, else the next).
    let k = 2000 + rows[2001..].iter().position(|r| r.contains(",0,")).unwrap();
    rows.remove(k + 1);
    let bad = t.join("bad.csv");
    std::fs::write(&bad, rows.join("\n") + "\n").unwrap();
    let o = conv("csv", &bad, &back, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("record {k}: ")) && err.contains("a discontinuity nothing explains"),
        "{err}"
    );
    ok(&conv("csv", &bad, &back, &["--no-check"]), "--no-check");
}

/// `compare` of two ingress files compares every field: a taken branch relabelled not taken
/// is a divergence in itype (the PCs are equal); `--fields iaddr` compares PCs only; `time` is
/// left out unless asked.
#[test]
fn compare_names_the_field() {
    let t = tmpdir("compare");
    let name = "loops-rv64gc";
    let golden = run_ingress(&t, name, &[]);
    let mut lines = records(&golden);
    let k = find(&lines, |l| l.contains(" itype=5 "));
    edit(&mut lines, k, " itype=5 ", " itype=4 ");
    let bug = write_records(&t, "bug", &lines);
    let elf = program(name);
    let cmp = |more: &[&str]| {
        let mut a = vec!["compare", s(&golden), s(&bug), "--elf", s(&elf)];
        a.extend(more);
        rvtrace(&a)
    };
    let o = cmp(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("differs: itype (A 5, B 4)"), "{out}");
    assert!(out.contains(&format!("(record {k})")), "{out}");
    let o = cmp(&["--fields", "iaddr"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("equal: "));
    // Time: the text round trip keeps it; zeroed, it differs only when asked.
    let zero: Vec<String> = records(&golden)
        .iter()
        .map(|l| match l.find(" time=") {
            Some(i) => {
                let end = l[i + 1..].find(' ').map_or(l.len(), |j| i + 1 + j);
                format!("{}{}", &l[..i], &l[end..])
            }
            None => l.clone(),
        })
        .collect();
    let untimed = write_records(&t, "untimed", &zero);
    let o = rvtrace(&["compare", s(&golden), s(&untimed), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = rvtrace(&[
        "compare",
        s(&golden),
        s(&untimed),
        "--elf",
        s(&elf),
        "--fields",
        "all",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("differs: time (A "), "{}", stdout(&o));
    // A block file equals the single-retirement file of the same run.
    let blocks = t.join("blocks.ingress");
    let o = rvtrace(&["run", s(&elf), "--ingress", s(&blocks), "--ingress-blocks"]);
    assert!(o.status.code().is_some_and(|c| c < 2));
    let o = rvtrace(&["compare", s(&golden), s(&blocks), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// `ingress dump --no-time`: the dump of a file with time and that of the same records
/// through a CSV without a time column have the same record lines (the issue's "diffing two
/// ingress dumps").
#[test]
fn dumps_diff_without_time() {
    let t = tmpdir("dump");
    let name = "traps-rv64gc";
    let elf = program(name);
    let ing = run_ingress(&t, name, &[]);
    let csv = t.join("a.csv");
    let o = rvtrace(&[
        "ingress",
        "convert",
        "--from",
        "ingress",
        s(&ing),
        "--to",
        "csv",
        "-o",
        s(&csv),
    ]);
    ok(&o, "to csv");
    // The CSV has no time column (the writer's default).
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        !text.lines().next().unwrap().contains("time"),
        "{text:.200}"
    );
    let from_csv = t.join("csv.ingress");
    let o = rvtrace(&[
        "ingress",
        "convert",
        "--from",
        "csv",
        s(&csv),
        "--elf",
        s(&elf),
        "-o",
        s(&from_csv),
    ]);
    ok(&o, "from csv");
    let dump = |f: &Path, more: &[&str]| {
        let mut a = vec!["ingress", "dump", s(f)];
        a.extend(more);
        let o = rvtrace(&a);
        ok(&o, "dump");
        stdout(&o)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = (dump(&ing, &[]), dump(&from_csv, &[]));
    assert_ne!(a, b, "with time, the dumps differ");
    let (a, b) = (dump(&ing, &["--no-time"]), dump(&from_csv, &["--no-time"]));
    assert_eq!(a, b);
    assert!(!a.iter().any(|l| l.contains("time=")));
}

/// `compare --align`: an N-Trace of the run cut at its start (its first messages removed, the
/// decoder starts at the next sync) joins the PC list of the run some instructions in; the
/// offset is said and the rest compares equal. Without `--align` the two diverge at once.
#[test]
fn align_finds_where_a_cut_trace_joins() {
    let t = tmpdir("align");
    let name = "recurse-rv64gc";
    let elf = program(name);
    let pcs = t.join("a.pcs");
    let o = rvtrace(&["run", s(&elf), "--pcs", s(&pcs)]);
    assert!(o.status.code().is_some_and(|c| c < 2));
    let all: Vec<String> = std::fs::read_to_string(&pcs)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // A PC list cut at its start: B begins 12345 instructions into A.
    let cut = t.join("cut.pcs");
    std::fs::write(&cut, all[12345..].join("\n") + "\n").unwrap();
    let o = rvtrace(&["compare", s(&pcs), s(&cut), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(1));
    let o = rvtrace(&["compare", s(&pcs), s(&cut), "--elf", s(&elf), "--align"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap();
    let n: u64 = first
        .strip_prefix("aligned: B starts at A's instruction ")
        .unwrap_or_else(|| panic!("{out}"))
        .parse()
        .unwrap();
    assert_eq!(n, 12345, "{out}");
    assert_eq!(
        out.lines().nth(1),
        Some(format!("equal: {} instructions", all.len() - 12345).as_str())
    );
    // A real trace cut at its start: an N-Trace with periodic sync, its first half of messages
    // gone; the decoder starts at the first sync after the cut, wherever that is in the run.
    let ing = run_ingress(&t, name, &[]);
    let nex = t.join("a.nex");
    let o = rvtrace(&[
        "encode",
        "ntrace",
        s(&ing),
        "-o",
        s(&nex),
        "--sync-period",
        "64",
    ]);
    ok(&o, "encode ntrace");
    let bytes = std::fs::read(&nex).unwrap();
    let msgs = common::ntrace_messages(&bytes);
    let tail: Vec<u8> = msgs[msgs.len() / 2..].concat();
    let cut_nex = t.join("cut.nex");
    std::fs::write(&cut_nex, tail).unwrap();
    let o = rvtrace(&[
        "compare",
        s(&pcs),
        s(&cut_nex),
        "--trace-b",
        "ntrace",
        "--elf",
        s(&elf),
        "--align",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let n: usize = out
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("aligned: B starts at A's instruction "))
        .unwrap_or_else(|| panic!("{out}"))
        .parse()
        .unwrap();
    assert!(n > all.len() / 4, "{out}");
    assert_eq!(
        out.lines().nth(1),
        Some(format!("equal: {} instructions", all.len() - n).as_str()),
        "{out}"
    );
    // Nowhere in A: said, exit 1.
    let other = t.join("other.pcs");
    std::fs::write(&other, "0x1234\n0x5678\n").unwrap();
    let o = rvtrace(&["compare", s(&pcs), s(&other), "--elf", s(&elf), "--align"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).starts_with("not aligned: "), "{}", stdout(&o));
}
