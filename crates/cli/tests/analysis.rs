//! `rvtrace profile|coverage|autofdo`: the same profile from `run --ingress`, an N-Trace and an
//! E-Trace decode of one run; every output read by a tool nobody here wrote (inferno through
//! the library tests, `lcov --summary`, `genhtml`, binutils' and LLVM's `addr2line`, `create_llvm_prof` +
//! `llvm-profdata`, `clang -fprofile-sample-use`), skipped with a message when the tool is not installed
//! (`scripts/setup.sh` installs them).

use crate::common;

use common::{ok, rvtrace, s, stderr, stdout, tmpdir, TmpDir};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn dwarf(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/dwarf/{name}.elf"))
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// A run of `name` recorded as ingress (with time), and its N-Trace and E-Trace encodings.
struct Files {
    t: TmpDir,
    elf: PathBuf,
    ing: PathBuf,
    nex: PathBuf,
    te: PathBuf,
}

fn files(name: &str, tag: &str) -> Files {
    let t = tmpdir(&format!("{name}-{tag}"));
    let elf = dwarf(name);
    let ing = t.join("t.ingress");
    let nex = t.join("t.nex");
    let te = t.join("t.te");
    let o = rvtrace(&["run", s(&elf), "--itype-width", "4", "--ingress", s(&ing)]);
    ok(&o, "run");
    let o = rvtrace(&[
        "encode",
        "ntrace",
        s(&ing),
        "-o",
        s(&nex),
        "--call-stack",
        "8",
    ]);
    ok(&o, "encode ntrace");
    let o = rvtrace(&[
        "encode",
        "etrace",
        s(&ing),
        "-o",
        s(&te),
        "--implicit-return",
        "--return-stack",
        "16",
    ]);
    ok(&o, "encode etrace");
    Files {
        t,
        elf,
        ing,
        nex,
        te,
    }
}

/// The three sources of one run give the same profile: flat profile, call graph, folded stacks.
#[test]
fn same_profile_from_ingress_ntrace_and_etrace() {
    for name in ["recurse-rv64gc", "recurse-rv32imac", "setjmp-rv64gc"] {
        let f = files(name, "same");
        let mut outs = Vec::new();
        for (input, trace) in [
            (&f.ing, None),
            (&f.nex, Some("ntrace")),
            (&f.te, Some("etrace")),
        ] {
            let folded = f.t.join(format!("{}.folded", trace.unwrap_or("ingress")));
            let mut args = vec![
                "profile",
                s(input),
                "--elf",
                s(&f.elf),
                "--folded",
                s(&folded),
            ];
            if let Some(p) = trace {
                args.extend(["--trace", p]);
            }
            let o = rvtrace(&args);
            ok(&o, &format!("{name}: profile {args:?}"));
            let text = stdout(&o);
            // The ingress file has time, the traces (no timestamps) do not: compare instructions.
            let insns: Vec<String> = text
                .lines()
                .map(|l| l.split_whitespace().take(5).collect::<Vec<_>>().join(" "))
                .collect();
            outs.push((insns, std::fs::read_to_string(&folded).unwrap()));
        }
        assert!(outs[0].0[0].starts_with("flat profile:"), "{:?}", outs[0].0);
        assert!(outs[0].1.lines().any(|l| l.contains(";main;")), "{name}");
        assert_eq!(
            outs[0].1, outs[1].1,
            "{name}: ingress vs N-Trace folded stacks"
        );
        assert_eq!(
            outs[0].1, outs[2].1,
            "{name}: ingress vs E-Trace folded stacks"
        );
        assert_eq!(outs[1].0, outs[2].0, "{name}: N-Trace vs E-Trace report");
    }
}

/// `rvtrace text` (and `--call-trace`) of the ingress file, and `decode ntrace|etrace --text
/// --call-trace` (both outputs of one decode): the same instruction lines and call trace from
/// all three; `profile --perf-script` gives one sample per folded stack, with its count.
#[test]
fn text_call_trace_and_perf_script() {
    let f = files("recurse-rv64gc", "text");
    let path = |n: &str| f.t.join(n);
    ok(
        &rvtrace(&[
            "text",
            s(&f.ing),
            "--elf",
            s(&f.elf),
            "-o",
            s(&path("i.txt")),
        ]),
        "text",
    );
    let o = rvtrace(&["text", s(&f.ing), "--elf", s(&f.elf), "--call-trace"]);
    ok(&o, "text --call-trace");
    std::fs::write(path("i.calls"), stdout(&o)).unwrap();
    for (proto, input) in [("ntrace", &f.nex), ("etrace", &f.te)] {
        let (txt, calls) = (
            path(&format!("{proto}.txt")),
            path(&format!("{proto}.calls")),
        );
        let o = rvtrace(&[
            "decode",
            proto,
            s(input),
            "--elf",
            s(&f.elf),
            "--text",
            s(&txt),
            "--call-trace",
            s(&calls),
        ]);
        ok(&o, &format!("decode {proto}"));
    }
    let read = |n: &str| std::fs::read_to_string(path(n)).unwrap();
    let insns = |t: String| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("0x"))
            .map(String::from)
            .collect()
    };
    let moves = |t: String| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("end"))
            .map(String::from)
            .collect()
    };
    let want = insns(read("i.txt"));
    assert!(want.len() > 10_000, "{}", want.len());
    assert!(want.iter().any(|l| l.contains(" <main>  ")));
    assert!(want.iter().any(|l| l.ends_with("  ret")));
    let calls = moves(read("i.calls"));
    assert!(calls
        .iter()
        .any(|l| l.contains(" call ") && l.ends_with("    fib")));
    for proto in ["ntrace", "etrace"] {
        assert!(insns(read(&format!("{proto}.txt"))) == want, "{proto} text");
        assert!(
            moves(read(&format!("{proto}.calls"))) == calls,
            "{proto} call trace"
        );
    }
    // perf script samples: a sample per folded stack, its period the stack's count.
    let o = rvtrace(&[
        "profile",
        s(&f.ing),
        "--elf",
        s(&f.elf),
        "--perf-script",
        s(&path("p.txt")),
        "--folded",
        s(&path("f.txt")),
    ]);
    ok(&o, "profile --perf-script");
    let perf = read("p.txt");
    let folded = read("f.txt");
    let periods: Vec<u64> = perf
        .lines()
        .filter(|l| l.starts_with("recurse-rv64gc 1/1 [000] 0.000000: "))
        .map(|l| l.split_whitespace().nth(4).unwrap().parse().unwrap())
        .collect();
    let counts: Vec<u64> = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse().unwrap())
        .collect();
    assert_eq!(periods, counts);
    // An output naming an input is refused.
    let o = rvtrace(&["text", s(&f.ing), "--elf", s(&f.elf), "-o", s(&f.elf)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn flame_graph_and_firefox_files() {
    let f = files("recurse-rv64gc", "fg");
    let svg = f.t.join("f.svg");
    let json = f.t.join("f.json");
    let o = rvtrace(&[
        "profile",
        s(&f.ing),
        "--elf",
        s(&f.elf),
        "--flamegraph",
        s(&svg),
        "--firefox",
        s(&json),
        "--weight",
        "time",
        "--top",
        "3",
    ]);
    ok(&o, "profile");
    assert_eq!(
        stdout(&o).lines().filter(|l| l.ends_with("  fib")).count(),
        1
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains(">fib ("),
        "not a flame graph"
    );
    assert!(svg.contains("time units"));
    let v = std::fs::read_to_string(&json).unwrap();
    assert!(v.contains("\"preprocessedProfileVersion\":55"));
    // Time without time in the input is a usage error.
    let o = rvtrace(&[
        "profile",
        s(&f.nex),
        "--trace",
        "ntrace",
        "--elf",
        s(&f.elf),
        "--weight",
        "time",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn usage_and_input_errors() {
    let f = files("loops-rv64gc", "usage");
    // A trace's protocol is its sidecar's or its bytes' (the decode layer's): without --trace
    // the same lcov as with it. (--all-sources: run from crates/cli, none of the program's
    // sources exists here.)
    let info = f.t.join("x.info");
    let named = f.t.join("named.info");
    for (out, proto) in [(&info, None), (&named, Some("ntrace"))] {
        let mut args = vec![
            "coverage",
            s(&f.nex),
            "--elf",
            s(&f.elf),
            "--lcov",
            s(out),
            "--all-sources",
        ];
        if let Some(p) = proto {
            args.extend(["--trace", p]);
        }
        ok(&rvtrace(&args), "coverage");
    }
    assert_eq!(
        std::fs::read(&info).unwrap(),
        std::fs::read(&named).unwrap()
    );
    // An encapsulated E-Trace without its sidecar has no mark: a usage error that says how to
    // name it, nothing written.
    let bare = f.t.join("bare.te");
    std::fs::copy(&f.te, &bare).unwrap();
    let none = f.t.join("none.info");
    let o = rvtrace(&["coverage", s(&bare), "--elf", s(&f.elf), "--lcov", s(&none)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--protocol ntrace|etrace"),
        "{}",
        stderr(&o)
    );
    assert!(!none.exists());
    // An output that names an input.
    let o = rvtrace(&["autofdo", s(&f.ing), "--elf", s(&f.elf), "-o", s(&f.ing)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(std::fs::metadata(&f.ing).unwrap().len() > 100);
    // An output on stdout: the summary for people goes to stderr.
    let o = rvtrace(&[
        "coverage",
        s(&f.ing),
        "--elf",
        s(&f.elf),
        "--lcov",
        "-",
        "--all-sources",
    ]);
    ok(&o, "coverage --lcov -");
    assert!(stdout(&o).starts_with("TN:") && stdout(&o).ends_with("end_of_record\n"));
    assert!(stderr(&o).starts_with("lines......: "), "{}", stderr(&o));
    // A cut ingress file: what came before is profiled, exit 1.
    let data = std::fs::read(&f.ing).unwrap();
    let cut = f.t.join("cut.ingress");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let o = rvtrace(&["profile", s(&cut), "--elf", s(&f.elf)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("flat profile: "), "{}", stdout(&o));
    // Coverage needs DWARF: the stripped build has none.
    let stripped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf/loops-rv64gc.elf");
    let o = rvtrace(&[
        "coverage",
        s(&f.ing),
        "--elf",
        s(&stripped),
        "--lcov",
        s(&info),
    ]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("DWARF"));
    // A damaged N-Trace stream: losses are warnings, exit 1.
    let mut nex = std::fs::read(&f.nex).unwrap();
    let mid = nex.len() / 2;
    for b in &mut nex[mid..mid + 16] {
        *b = 0x55;
    }
    let bad = f.t.join("bad.nex");
    std::fs::write(&bad, &nex).unwrap();
    let o = rvtrace(&["profile", s(&bad), "--trace", "ntrace", "--elf", s(&f.elf)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// `lcov --summary` reads the tracefile and reports the totals `coverage` printed; the lines
/// hit are those llvm-addr2line gives for the executed addresses.
#[test]
fn coverage_read_by_lcov_and_lines_checked_by_addr2line() {
    let f = files("loops-rv64gc", "cov");
    let info = f.t.join("t.info");
    let o = rvtrace(&[
        "coverage",
        s(&f.te),
        "--trace",
        "etrace",
        "--elf",
        s(&f.elf),
        "--lcov",
        s(&info),
        "--all-sources",
    ]);
    ok(&o, "coverage");
    let ours = stdout(&o);
    let text = std::fs::read_to_string(&info).unwrap();
    assert!(text.starts_with("TN:rvtrace\nSF:"));
    if have("lcov") {
        let o = Command::new("lcov")
            .args(["--summary", s(&info), "--rc", "lcov_branch_coverage=1"])
            .output()
            .unwrap();
        ok(&o, "lcov --summary");
        // lcov prints "  lines......: 36.6% (297 of 811 lines)"; ours the same figures.
        let all = format!("{}{}", stdout(&o), stderr(&o));
        let figures = |t: &str, what: &str| -> Option<String> {
            let l = t.lines().find(|l| l.trim_start().starts_with(what))?;
            let (a, b) = (l.find('(')?, l.find(" of ")?);
            let end = b + 4 + l[b + 4..].find(|c: char| !c.is_ascii_digit())?;
            Some(l[a + 1..end].to_string())
        };
        for what in ["lines", "functions", "branches"] {
            let theirs = figures(&all, what).unwrap_or_else(|| panic!("lcov: no {what}: {all}"));
            assert_eq!(
                figures(&ours, what),
                Some(theirs),
                "{what}: ours {ours}, lcov {all}"
            );
        }
    } else {
        println!("lcov not installed (scripts/setup.sh installs it): summary check skipped");
    }
    // Lines hit per LLVM's addr2line over the retired addresses. (binutils 2.40's
    // riscv64-unknown-elf-addr2line names the including file, vfprintf.c, for the lines picolibc's
    // DWARF 5 line table gives to the included ultoa_invert.c; llvm-addr2line and gimli agree.)
    let a2l = "llvm-addr2line";
    if !have(a2l) {
        println!("{a2l} not installed: line check skipped");
        return;
    }
    let pcs = f.t.join("t.pcs");
    let o = rvtrace(&["run", s(&f.elf), "--pcs", s(&pcs)]);
    ok(&o, "run --pcs");
    let uniq: BTreeSet<String> = std::fs::read_to_string(&pcs)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut child = Command::new(a2l)
        .args(["-e", s(&f.elf)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for pc in &uniq {
            writeln!(stdin, "{pc}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let base = |p: &str| {
        Path::new(p)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut want: BTreeSet<(String, u32)> = BTreeSet::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        // "path/file.c:12" or "file.c:12 (discriminator 3)"; "??:0" / "??:?" when unknown.
        let l = l.split(" (").next().unwrap();
        if let Some((file, line)) = l.rsplit_once(':') {
            if let Ok(n) = line.parse::<u32>() {
                if n > 0 && file != "??" {
                    want.insert((base(file), n));
                }
            }
        }
    }
    let mut got: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut file = String::new();
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("SF:") {
            file = base(f);
        } else if let Some(d) = l.strip_prefix("DA:") {
            let (line, n) = d.split_once(',').unwrap();
            if n != "0" {
                got.insert((file.clone(), line.parse().unwrap()));
            }
        }
    }
    assert!(got.iter().any(|(f, _)| f == "loops.c"));
    let only_ours: Vec<_> = got.difference(&want).collect();
    let only_theirs: Vec<_> = want.difference(&got).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "lines hit only by ours {only_ours:?}, only by addr2line {only_theirs:?}"
    );
}

/// genhtml takes `coverage`'s default tracefile as is (issue 29): the C library's and libgcc's
/// sources, named by the paths they were built at, are left out; genhtml rejects the tracefile
/// that keeps them (`--all-sources`). `--source-prefix` maps the program's own relative paths for
/// a run from elsewhere, and `--exclude` that leaves nothing is a warning and exit 1.
#[test]
fn coverage_taken_by_genhtml_as_is() {
    if !have("genhtml") {
        println!("genhtml not installed (scripts/setup.sh installs lcov): skipped");
        return;
    }
    let f = files("loops-rv64gc", "genhtml");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let coverage = |info: &Path, dir: &Path, extra: &[&str]| {
        let mut args = vec!["coverage", s(&f.ing), "--elf", s(&f.elf), "--lcov", s(info)];
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_rvtrace"))
            .args(&args)
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let genhtml = |info: &Path, dir: &Path, out: &str| {
        Command::new("genhtml")
            .args(["-q", "--branch-coverage", "-o", s(&f.t.join(out)), s(info)])
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let sources = |info: &Path| -> Vec<String> {
        std::fs::read_to_string(info)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("SF:").map(String::from))
            .collect()
    };
    // Run from the top of the checkout: the program's own file, relative to it, is all there is.
    let own = f.t.join("own.info");
    let o = coverage(&own, &root, &[]);
    ok(&o, "coverage");
    assert_eq!(sources(&own), ["programs/src/loops.c"]);
    assert!(
        stdout(&o).contains("source files that do not exist here (such as ./riscv64-unknown-elf/"),
        "{}",
        stdout(&o)
    );
    let g = genhtml(&own, &root, "html");
    ok(&g, "genhtml");
    assert!(f.t.join("html/index.html").exists());
    // Its records are the same as with every source kept, which genhtml refuses.
    let all = f.t.join("all.info");
    ok(
        &coverage(&all, &root, &["--all-sources"]),
        "coverage --all-sources",
    );
    assert!(sources(&all).len() > 10, "{:?}", sources(&all));
    let record = |info: &Path| {
        let t = std::fs::read_to_string(info).unwrap();
        let at = t.find("SF:programs/src/loops.c").unwrap();
        t[at..at + t[at..].find("end_of_record").unwrap()].to_string()
    };
    assert_eq!(record(&own), record(&all));
    let g = genhtml(&all, &root, "html-all");
    assert_ne!(g.status.code(), Some(0), "genhtml took missing sources");
    // From elsewhere: nothing of the program is found (a warning, exit 1) until its paths are
    // mapped; then genhtml, run from there too, takes it.
    let none = f.t.join("none.info");
    let o = coverage(&none, &f.t, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "none of the program's source files exists here (such as programs/src/loops.c)"
        ),
        "{}",
        stderr(&o)
    );
    let mapped = f.t.join("mapped.info");
    let prefix = format!("programs={}/programs", root.display());
    ok(
        &coverage(&mapped, &f.t, &["--source-prefix", &prefix]),
        "coverage --source-prefix",
    );
    assert_eq!(
        sources(&mapped),
        [format!("{}/programs/src/loops.c", root.display())]
    );
    ok(
        &genhtml(&mapped, &f.t, "html-mapped"),
        "genhtml of the mapped tracefile",
    );
    // --exclude leaves the file out and says so.
    let o = coverage(&none, &root, &["--exclude", "*/loops.c"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 source file by --include/--exclude"),
        "{}",
        stdout(&o)
    );
    assert!(sources(&none).is_empty());
}

/// `create_llvm_prof --profiler=text` reads the AutoFDO profile and `llvm-profdata` lists the
/// program's functions with the entry counts the profile's call graph has (head samples) and
/// the totals AutoFDO computes from the ranges: autofdo 0.19 walks every *byte* address of a
/// range (its `InstructionMap` has one entry per byte, it does not decode instructions) and
/// counts those with a source line, so a function's total is the sum over its ranges of the
/// range's count times the bytes in `[start, last]` that the line table maps to a line.
#[test]
fn autofdo_read_by_create_llvm_prof_and_llvm_profdata() {
    let f = files("recurse-rv64gc", "afdo");
    let prof = f.t.join("t.afdo");
    let o = rvtrace(&[
        "autofdo",
        s(&f.nex),
        "--trace",
        "ntrace",
        "--elf",
        s(&f.elf),
        "-o",
        s(&prof),
    ]);
    ok(&o, "autofdo");
    let text = std::fs::read_to_string(&prof).unwrap();
    // The ranges section: its count, then start-end:count lines, relative to 0x80000000.
    let mut lines = text.lines();
    let n: usize = lines.next().unwrap().parse().unwrap();
    let ranges: Vec<(u64, u64, u64)> = lines
        .by_ref()
        .take(n)
        .map(|l| {
            let (r, c) = l.split_once(':').unwrap();
            let (a, b) = r.split_once('-').unwrap();
            (
                u64::from_str_radix(a, 16).unwrap(),
                u64::from_str_radix(b, 16).unwrap(),
                c.parse().unwrap(),
            )
        })
        .collect();
    let addrs: usize = lines.next().unwrap().parse().unwrap();
    let addr_sum: u64 = lines
        .by_ref()
        .take(addrs)
        .map(|l| l.split_once(':').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let run = rvtrace(&["profile", s(&f.ing), "--elf", s(&f.elf), "--top", "1000"]);
    ok(&run, "profile");
    let report = stdout(&run);
    let total: u64 = report
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        addr_sum, total,
        "the address section counts every instruction"
    );
    let (cp, lp) = ("create_llvm_prof", "llvm-profdata");
    if !have(cp) || !have(lp) {
        println!(
            "{cp}/{lp} not installed (scripts/setup.sh installs autofdo and llvm): check skipped"
        );
        return;
    }
    // The binary LLVM writer of autofdo 0.19 fails ("Truncated function name table") when a
    // profiled function calls one without a profile (picolibc's, whose DWARF 5 it cannot
    // read); its text writer does not, and llvm-profdata reads that.
    let out = f.t.join("t.llvm.txt");
    let o = Command::new(cp)
        .args([
            "--profiler=text",
            &format!("--profile={}", s(&prof)),
            &format!("--binary={}", s(&f.elf)),
            &format!("--out={}", s(&out)),
            "--format=text",
        ])
        .output()
        .unwrap();
    ok(&o, cp);
    let o = Command::new(lp)
        .args(["show", "--sample", s(&out)])
        .output()
        .unwrap();
    ok(&o, "llvm-profdata show");
    let shown = stdout(&o);
    // LLVM's own writer turns it into the binary profile clang's -fprofile-sample-use reads.
    let bin = f.t.join("t.llvm");
    let m = Command::new(lp)
        .args(["merge", "--sample", s(&out), "-o", s(&bin)])
        .output()
        .unwrap();
    ok(&m, "llvm-profdata merge --sample");
    // "Function: fib: 114154, 1597, 2 sampled lines"
    let mut funcs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in shown.lines() {
        if let Some(rest) = l.strip_prefix("Function: ") {
            let (name, nums) = rest.rsplit_once(": ").unwrap();
            let v: Vec<u64> = nums
                .split(", ")
                .take(2)
                .map(|x| x.parse().unwrap())
                .collect();
            funcs.insert(name.to_string(), (v[0], v[1]));
        }
    }
    let syms = rvtrace_analysis::Symbols::load(&f.elf).unwrap();
    for name in ["main", "fib", "ack", "hanoi", "deep", "check"] {
        // ack's total is 2416 below the rule: its first instruction (2 bytes) times the 1208
        // ranges that start there. The line table has rows for two lines (11 and 12: GCC
        // location views) at that address, and autofdo 0.19 gives those bytes no line; its
        // head samples are checked.
        let check_total = name != "ack";
        let (tot, head) = funcs
            .get(name)
            .copied()
            .unwrap_or_else(|| panic!("{name} not in {shown}"));
        let func = syms.functions().iter().find(|x| x.name == name).unwrap();
        let (lo, hi) = (func.start - 0x8000_0000, func.end - 0x8000_0000);
        let want: u64 = ranges
            .iter()
            .filter(|r| r.0 >= lo && r.0 < hi)
            .map(|r| r.2 * (1 + r.1 - r.0))
            .sum();
        if check_total {
            assert_eq!(tot, want, "{name}: total samples");
        }
        let calls: u64 = report
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .and_then(|l| l.split_whitespace().nth(4))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(head, calls, "{name}: head samples = calls");
    }
}

/// The commands' own options are under a heading of their own in `--help`, not under the last
/// decoder heading (issue 29).
#[test]
fn own_options_under_their_heading() {
    for (cmd, own) in [
        ("profile", "--folded"),
        ("coverage", "--lcov"),
        ("autofdo", "--output"),
        ("text", "--call-trace"),
    ] {
        let help = stdout(&rvtrace(&[cmd, "--help"]));
        let heading = help.rfind("\nOutput options:").expect(cmd);
        let etrace = help.find("\nE-Trace decoder options:").expect(cmd);
        // The line that defines the option (`      --lcov <FILE>`, `  -o, --output <FILE>`).
        let mut offset = 0;
        let mut at = None;
        for l in help.split_inclusive('\n') {
            let t = l.trim_start();
            if t.starts_with(own) || t.strip_prefix("-o, ").is_some_and(|r| r.starts_with(own)) {
                at = Some(offset);
                break;
            }
            offset += l.len();
        }
        let at = at.expect(own);
        assert!(etrace < heading && heading < at, "{cmd}:\n{help}");
    }
}

/// `profile prog.elf` (the program where the run belongs) says how to record a run.
#[test]
fn an_elf_as_input_points_to_run_ingress() {
    let elf = dwarf("loops-rv64gc");
    let o = rvtrace(&["profile", s(&elf), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("this is an ELF file")
            && stderr(&o).contains("`rvtrace run PROG.elf --ingress t.ingress`"),
        "{}",
        stderr(&o)
    );
}

/// The program of the source-line tests: `sum_squares` and `square` inlined into `main`, the
/// GCC clone `quick_sort.constprop.0`, linked the usual way (DWARF 5 from picolibc's crt0 on).
const INLINE: &str = "inline-rv64gc";

/// One frame of an inline chain: function, the base name of its file, line (0: unknown).
type A2lFrame = (String, String, u32);

/// `riscv64-unknown-elf-addr2line -a -i -f` of `addrs`: each address's inline chain, innermost
/// first, as binutils reads the DWARF; `None` when it is not installed.
fn addr2line_chains(elf: &Path, addrs: &BTreeSet<u64>) -> Option<BTreeMap<u64, Vec<A2lFrame>>> {
    let tool = "riscv64-unknown-elf-addr2line";
    if !have(tool) {
        println!("{tool} not installed: source lines not checked");
        return None;
    }
    let mut args = vec!["-a".to_string(), "-i".into(), "-f".into(), "-e".into()];
    args.push(s(elf).into());
    args.extend(addrs.iter().map(|a| format!("{a:#x}")));
    let o = Command::new(tool).args(&args).output().unwrap();
    ok(&o, tool);
    let mut m: BTreeMap<u64, Vec<A2lFrame>> = BTreeMap::new();
    let text = stdout(&o);
    let mut lines = text.lines();
    let mut cur = 0;
    while let Some(l) = lines.next() {
        if let Some(a) = l.strip_prefix("0x") {
            cur = u64::from_str_radix(a, 16).unwrap();
            m.entry(cur).or_default();
            continue;
        }
        // "path/file.c:12" or "file.c:12 (discriminator 3)"; "??:0" or "??:?" when unknown.
        let loc = lines.next().unwrap().split(" (").next().unwrap();
        let (file, line) = loc.rsplit_once(':').unwrap();
        let base = file.rsplit('/').next().unwrap().to_string();
        let frame = (l.to_string(), base, line.parse().unwrap_or(0));
        m.get_mut(&cur).unwrap().push(frame);
    }
    Some(m)
}

/// `rvtrace CMD INGRESS --elf ELF ARGS...` of `f`'s run, which must succeed.
fn analyse(f: &Files, cmd: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![cmd, s(&f.ing), "--elf", s(&f.elf)];
    all.extend(args);
    let o = rvtrace(&all);
    ok(&o, &format!("{all:?}"));
    o
}

/// Every retired PC of a run of `elf`, in order (`run --pcs`).
fn retired_pcs(elf: &Path, t: &TmpDir) -> Vec<u64> {
    let pcs = t.join("run.pcs");
    ok(&rvtrace(&["run", s(elf), "--pcs", s(&pcs)]), "run --pcs");
    std::fs::read_to_string(&pcs)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.trim_start_matches("0x"), 16).unwrap())
        .collect()
}

/// The PCs of `pcs` in the functions `names` (by nm).
fn pcs_in(elf: &Path, pcs: &[u64], names: &[&str]) -> Option<Vec<u64>> {
    let nm = common::NmFunctions::of(elf)?;
    Some(
        pcs.iter()
            .copied()
            .filter(|&a| {
                nm.names_at(a)
                    .is_some_and(|(n, _)| n.iter().any(|x| names.contains(x)))
            })
            .collect(),
    )
}

/// `rvtrace text`'s source lines: before each instruction whose position differs from the
/// last one shown, its file:line and, for inlined code, the chain of functions as
/// riscv64-unknown-elf-addr2line -i -f gives it (checked over `main` and the clone, file
/// names compared by base name); --no-lines leaves exactly those lines out.
#[test]
fn text_source_lines_and_inlined_functions_as_addr2line() {
    let f = files(INLINE, "lines");
    let text = stdout(&analyse(&f, "text", &[]));
    let o = analyse(&f, "text", &["--no-lines"]);
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("  "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        stdout(&o),
        bare,
        "--no-lines: the trace without its source lines"
    );
    assert!(text.contains(
        "  programs/src/inline.c:13 square (inlined into sum_squares at programs/src/inline.c:20, \
         into main at programs/src/inline.c:57)\n"
    ));
    let pcs = retired_pcs(&f.elf, &f.t);
    let Some(mine) = pcs_in(&f.elf, &pcs, &["main", "quick_sort.constprop.0"]) else {
        return;
    };
    let Some(chains) = addr2line_chains(&f.elf, &mine.iter().copied().collect()) else {
        return;
    };
    // addr2line's chain in the text's words, file names by base name.
    let expect = |a: u64| -> Option<String> {
        let c = &chains[&a];
        let (_, file, line) = c.first().filter(|c| c.2 > 0)?;
        let mut s = format!("  {file}:{line}");
        if c.len() > 1 {
            s += &format!(" {} (inlined", c[0].0);
            for (k, (func, file, line)) in c[1..].iter().enumerate() {
                s += &format!(
                    "{} {func} at {file}:{line}",
                    if k == 0 { " into" } else { ", into" }
                );
            }
            s.push(')');
        }
        Some(s)
    };
    let base = |l: &str| -> String {
        l.split(' ')
            .map(|w| w.rsplit('/').next().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (mut shown, mut prev, mut checked) = (None::<String>, None::<u64>, 0);
    for l in text.lines() {
        if l.starts_with("  ") {
            shown = Some(base(l));
            continue;
        }
        let Some(a) = l.split(' ').next().and_then(|a| a.strip_prefix("0x")) else {
            continue;
        };
        let a = u64::from_str_radix(a, 16).unwrap();
        if chains.contains_key(&a) {
            match shown.take() {
                Some(s) => assert_eq!(Some(s), expect(a), "{a:#x}"),
                // Nothing shown: the position did not change, or is unknown.
                None => assert!(
                    expect(a).is_none() || prev.map(expect) == Some(expect(a)),
                    "{a:#x}: {:?} not shown",
                    expect(a)
                ),
            }
            checked += 1;
        }
        shown = None;
        prev = Some(a).filter(|a| chains.contains_key(a));
    }
    assert_eq!(checked, mine.len());
}

/// `profile` shows inlined functions as frames: the folded stacks below `main` weigh what the
/// retired PCs in `main` weigh, grouped by riscv64-unknown-elf-addr2line -i's chains (as
/// `perf report --inline` groups samples); --no-inline gives the same stacks with the inlined
/// frames folded into their functions; perf script gives inlined frames their function's
/// address.
#[test]
fn profile_inlined_frames_as_addr2line() {
    let f = files(INLINE, "inline");
    let folded = |extra: &[&str], name: &str| -> BTreeMap<String, u64> {
        let out = f.t.join(name);
        let mut args = vec!["--folded", s(&out)];
        args.extend(extra);
        analyse(&f, "profile", &args);
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| {
                let (k, n) = l.rsplit_once(' ').unwrap();
                (k.to_string(), n.parse().unwrap())
            })
            .collect()
    };
    let inl = folded(&[], "inline.folded");
    let flat = folded(&["--no-inline"], "flat.folded");
    assert!(
        inl.keys().any(|k| k.ends_with(";main;sum_squares;square")),
        "{inl:?}"
    );
    assert!(!flat.keys().any(|k| k.contains("square")), "{flat:?}");
    // A frame is a function's when nm names a function so; the others are inlined.
    let Some(nm) = common::NmFunctions::of(&f.elf) else {
        return;
    };
    let function = |x: &str| x == "[unknown]" || nm.has(x);
    let mut folded_away: BTreeMap<String, u64> = BTreeMap::new();
    for (k, n) in &inl {
        let k: Vec<&str> = k.split(';').filter(|x| function(x)).collect();
        *folded_away.entry(k.join(";")).or_default() += n;
    }
    assert_eq!(folded_away, flat, "inlined frames folded away");
    // Below main: the chains of the retired PCs in main.
    let pcs = retired_pcs(&f.elf, &f.t);
    let Some(in_main) = pcs_in(&f.elf, &pcs, &["main"]) else {
        return;
    };
    let Some(chains) = addr2line_chains(&f.elf, &in_main.iter().copied().collect()) else {
        return;
    };
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for a in &in_main {
        let c: Vec<&str> = chains[a].iter().rev().map(|x| x.0.as_str()).collect();
        *want.entry(c.join(";")).or_default() += 1;
    }
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for (k, n) in &inl {
        let k: Vec<&str> = k.split(';').collect();
        let Some(m) = k.iter().rposition(|x| *x == "main") else {
            continue;
        };
        if !k[m + 1..].iter().any(|x| function(x)) {
            *got.entry(k[m..].join(";")).or_default() += n;
        }
    }
    assert_eq!(got, want, "instructions below main by inline chain");
    // perf script: an inlined frame at its function's entry address.
    let p = f.t.join("p.txt");
    analyse(&f, "profile", &["--perf-script", s(&p)]);
    let perf = std::fs::read_to_string(&p).unwrap();
    let frame = |name: &str| {
        perf.lines()
            .find(|l| l.contains(&format!(" {name} (")))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
    };
    let main_at = frame("main").unwrap();
    assert_eq!(frame("square"), Some(main_at.clone()));
    assert_eq!(frame("sum_squares"), Some(main_at));
}

/// lcov's function records: inlined functions are functions of their file, every name is the
/// source's (no GCC clone suffix), one record per function; the counts are the retired PCs':
/// a function's entry for one that was called, the most-run instruction of an inlined copy
/// (by riscv64-unknown-elf-addr2line -i). `lcov --summary` and `genhtml` take the tracefile
/// (all sources kept: the test runs where `programs/src/inline.c` is not).
#[test]
fn lcov_functions_with_inlined_and_clone_names() {
    let f = files(INLINE, "fn");
    let info = f.t.join("t.info");
    analyse(&f, "coverage", &["--lcov", s(&info), "--all-sources"]);
    let text = std::fs::read_to_string(&info).unwrap();
    // name -> (FN line, FNDA count) of inline.c's record.
    let record = text
        .split("end_of_record\n")
        .find(|r| {
            r.lines()
                .any(|l| l.starts_with("SF:") && l.ends_with("/inline.c"))
        })
        .unwrap();
    let mut fns: BTreeMap<&str, (u32, u64)> = BTreeMap::new();
    for l in record.lines() {
        if let Some(r) = l.strip_prefix("FN:") {
            let (line, name) = r.split_once(',').unwrap();
            assert!(
                fns.insert(name, (line.parse().unwrap(), 0)).is_none(),
                "{name} twice"
            );
        } else if let Some(r) = l.strip_prefix("FNDA:") {
            let (n, name) = r.split_once(',').unwrap();
            fns.get_mut(name).unwrap().1 = n.parse().unwrap();
        }
    }
    let names: Vec<&str> = fns.keys().copied().collect();
    assert_eq!(names, ["main", "quick_sort", "square", "sum_squares"]);
    for l in text.lines().filter(|l| l.starts_with("FN:")) {
        assert!(!l.contains('.'), "a clone's name: {l}");
    }
    // The declaration lines of the source.
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/src/inline.c"),
    )
    .unwrap();
    for (name, (line, _)) in &fns {
        let decl = src
            .lines()
            .position(|l| l.contains(&format!(" {name}(")))
            .unwrap()
            + 1;
        assert_eq!(*line as usize, decl, "{name}: FN line");
    }
    let pcs = retired_pcs(&f.elf, &f.t);
    let Some(nm) = common::NmFunctions::of(&f.elf) else {
        return;
    };
    let entries = |name: &str| {
        pcs.iter()
            .filter(|&&a| {
                nm.names_at(a)
                    .is_some_and(|(n, off)| off == 0 && n.contains(&name))
            })
            .count() as u64
    };
    assert_eq!(fns["main"].1, entries("main"));
    assert_eq!(fns["quick_sort"].1, entries("quick_sort.constprop.0"));
    let Some(in_main) = pcs_in(&f.elf, &pcs, &["main"]) else {
        return;
    };
    let Some(chains) = addr2line_chains(&f.elf, &in_main.iter().copied().collect()) else {
        return;
    };
    let mut runs: BTreeMap<u64, u64> = BTreeMap::new();
    for a in &in_main {
        *runs.entry(*a).or_default() += 1;
    }
    for name in ["square", "sum_squares"] {
        let most = runs
            .iter()
            .filter(|(a, _)| {
                let c = &chains[*a];
                c[..c.len() - 1].iter().any(|x| x.0 == name)
            })
            .map(|(_, n)| *n)
            .max()
            .unwrap();
        assert_eq!(fns[name].1, most, "{name}: FNDA");
    }
    if !have("lcov") || !have("genhtml") {
        println!("lcov/genhtml not installed (scripts/setup.sh installs lcov): checks skipped");
        return;
    }
    let o = Command::new("lcov")
        .args(["--summary", s(&info)])
        .output()
        .unwrap();
    ok(&o, "lcov --summary");
    // genhtml needs the sources: inline.c's record, read from the repository's root.
    let mine = f.t.join("inline.info");
    let o = Command::new("lcov")
        .args(["--extract", s(&info), "*/inline.c", "-o", s(&mine)])
        .output()
        .unwrap();
    ok(&o, "lcov --extract");
    let html = f.t.join("html");
    let o = Command::new("genhtml")
        .args([s(&mine), "-o", s(&html)])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .unwrap();
    ok(&o, "genhtml");
    let out = stdout(&o);
    assert!(
        out.contains("functions..: 100.0% (4 of 4 functions)"),
        "{out}"
    );
}

/// `autofdo --profile-format llvm` of a program linked the usual way (DWARF 5, which create_llvm_prof
/// cannot read): `llvm-profdata merge --sample` reads it, and `llvm-profdata show --sample`
/// gives `main` and `quick_sort` the totals and head samples the retired PCs give by
/// riscv64-unknown-elf-addr2line -i (a total: each source position's most-run instruction,
/// added over the positions (a line's blocks, by its discriminator, apart), inlined ones
/// included; head: the runs of the first
/// instruction); `main` has `sum_squares` inlined with `square` in it; clang compiles the
/// source with it (`-fprofile-sample-use`) without a word about the profile.
#[test]
fn llvm_sample_profile_read_by_llvm_profdata_and_clang() {
    let f = files(INLINE, "llvm");
    let prof = f.t.join("t.prof");
    let o = rvtrace(&[
        "autofdo",
        s(&f.nex),
        "--trace",
        "ntrace",
        "--elf",
        s(&f.elf),
        "--profile-format",
        "llvm",
        "-o",
        s(&prof),
    ]);
    ok(&o, "autofdo --profile-format llvm");
    let text = std::fs::read_to_string(&prof).unwrap();
    let main: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("main:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .collect();
    let inlined = main
        .iter()
        .position(|l| l.contains(": sum_squares:"))
        .unwrap();
    assert!(main[inlined + 1..]
        .iter()
        .any(|l| l.starts_with("  ") && l.contains(": square:")));
    // Expected totals and heads from the retired PCs and addr2line's chains.
    let pcs = retired_pcs(&f.elf, &f.t);
    let Some(nm) = common::NmFunctions::of(&f.elf) else {
        return;
    };
    let Some(RunLines {
        runs,
        chains,
        discs,
    }) = run_lines(&f.elf, &pcs, &["main", "quick_sort.constprop.0"])
    else {
        return;
    };
    // function -> source position (the whole chain, the line's discriminator) -> most runs
    // of its instructions
    let mut most: BTreeMap<&str, BTreeMap<(&Vec<A2lFrame>, u32), u64>> = BTreeMap::new();
    let mut want: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (a, n) in &runs {
        let c = &chains[a];
        let func = c.last().unwrap().0.as_str();
        if c[0].2 > 0 {
            let e = most
                .entry(func)
                .or_default()
                .entry((c, discs[a]))
                .or_default();
            *e = (*e).max(*n);
        }
        if nm.names_at(*a).is_some_and(|(_, off)| off == 0) {
            want.entry(func).or_default().1 += n;
        }
    }
    for (func, m) in &most {
        want.entry(func).or_default().0 = m.values().sum();
    }
    let Some((bin, shown_text)) = profdata_show(&prof, &f.t, &[]) else {
        return;
    };
    // "Function: main: 2016, 1, 12 sampled lines"
    let mut shown: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in shown_text.lines() {
        if let Some(rest) = l.strip_prefix("Function: ") {
            let (name, nums) = rest.rsplit_once(": ").unwrap();
            let v: Vec<u64> = nums
                .split(", ")
                .take(2)
                .map(|x| x.parse().unwrap())
                .collect();
            shown.insert(name.to_string(), (v[0], v[1]));
        }
    }
    for name in ["main", "quick_sort"] {
        assert_eq!(shown.get(name), want.get(name), "{name}: total, head");
    }
    if !have("clang") {
        println!(
            "clang not installed (scripts/setup.sh installs it): -fprofile-sample-use not checked"
        );
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/src/inline.c");
    for p in [&prof, &bin] {
        let o = Command::new("clang")
            .args([
                "--target=riscv64-unknown-elf",
                "-march=rv64gc",
                "-mabi=lp64d",
                "-O2",
                "-isystem",
                "/usr/lib/picolibc/riscv64-unknown-elf/include",
                &format!("-fprofile-sample-use={}", s(p)),
                "-c",
                s(&src),
                "-o",
                s(&f.t.join("inline.o")),
            ])
            .output()
            .unwrap();
        ok(&o, "clang -fprofile-sample-use");
        assert_eq!(stderr(&o), "", "clang said something about {}", s(p));
    }
}

/// A Firefox profile's thread, read back as the viewer reads it: per sample (time in ns from
/// the profile's start, weight, stack of frames outermost first), each frame (function name,
/// source file's base name, line, address, inline depth).
struct FxThread {
    samples: Vec<(u64, u64, Vec<usize>)>,
    frames: Vec<FxFrame>,
}

/// A Firefox profile's frame: function, file (base name), line, address, inline depth.
type FxFrame = (String, Option<String>, Option<u64>, Option<u64>, u64);

fn firefox_thread(path: &Path) -> FxThread {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let th = &v["threads"][0];
    let col = |t: &str, c: &str| -> Vec<serde_json::Value> { th[t][c].as_array().unwrap().clone() };
    let strings: Vec<String> = th["stringArray"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let (fname, ffile) = (col("funcTable", "name"), col("funcTable", "fileName"));
    let (func, line, addr, depth) = (
        col("frameTable", "func"),
        col("frameTable", "line"),
        col("frameTable", "address"),
        col("frameTable", "inlineDepth"),
    );
    let frames = (0..func.len())
        .map(|i| {
            let f = func[i].as_u64().unwrap() as usize;
            let file = ffile[f]
                .as_u64()
                .map(|k| strings[k as usize].rsplit('/').next().unwrap().to_string());
            (
                strings[fname[f].as_u64().unwrap() as usize].clone(),
                file,
                line[i].as_u64(),
                addr[i].as_u64(),
                depth[i].as_u64().unwrap(),
            )
        })
        .collect();
    let (prefix, frame) = (col("stackTable", "prefix"), col("stackTable", "frame"));
    let mut t = 0f64;
    let mut samples = Vec::new();
    let s = &th["samples"];
    for ((d, w), st) in s["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .zip(s["weight"].as_array().unwrap())
        .zip(s["stack"].as_array().unwrap())
    {
        t += d.as_f64().unwrap();
        let mut stack = Vec::new();
        let mut at = st.as_u64();
        while let Some(i) = at {
            stack.push(frame[i as usize].as_u64().unwrap() as usize);
            at = prefix[i as usize].as_u64();
        }
        stack.reverse();
        samples.push(((t * 1e6).round() as u64, w.as_u64().unwrap(), stack));
    }
    FxThread { samples, frames }
}

/// The "flat profile: N instructions[, M time units]" totals of `profile`'s report.
fn flat_totals(out: &str) -> (u64, Option<u64>) {
    let l = out.lines().next().unwrap();
    let nums: Vec<u64> = l
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse().ok())
        .collect();
    (nums[0], nums.get(1).copied())
}

/// `profile --firefox`: a timeline in trace order whose sample weights add up to the flat
/// profile's totals (instructions, and time with --weight time); the ingress file's time
/// (mtime) is the time axis, an N-Trace without timestamps has the instruction count
/// instead; every frame of `main` and of the clone `quick_sort.constprop.0` (inlined
/// functions included) names the source file, line and function that
/// riscv64-unknown-elf-addr2line -i -f gives for its address.
#[test]
fn firefox_timeline_and_frames_as_addr2line() {
    let f = files(INLINE, "fx");
    let (ji, jt, jn) = (f.t.join("i.json"), f.t.join("t.json"), f.t.join("n.json"));
    let out = stdout(&analyse(&f, "profile", &["--firefox", s(&ji)]));
    let (insns, time) = flat_totals(&out);
    let out = stdout(&analyse(
        &f,
        "profile",
        &["--firefox", s(&jt), "--weight", "time"],
    ));
    assert_eq!(flat_totals(&out), (insns, time));
    let (nex, elf) = (s(&f.nex), s(&f.elf));
    let args = [
        "profile",
        nex,
        "--elf",
        elf,
        "--trace",
        "ntrace",
        "--firefox",
        s(&jn),
    ];
    ok(&rvtrace(&args), "profile --firefox of the N-Trace");
    let (ing, tim, nex) = (
        firefox_thread(&ji),
        firefox_thread(&jt),
        firefox_thread(&jn),
    );
    let sum = |t: &FxThread| t.samples.iter().map(|s| s.1).sum::<u64>();
    assert_eq!(sum(&ing), insns);
    assert_eq!(sum(&nex), insns);
    assert_eq!(Some(sum(&tim)), time);
    // Without time: one sample per instruction (a run this short), at its index.
    let at: Vec<u64> = nex.samples.iter().map(|s| s.0).collect();
    assert_eq!(at, (0..insns).collect::<Vec<_>>());
    // With time: the trace's times (the ingress records' `time`), in order, spanning the run.
    let dump = stdout(&rvtrace(&["ingress", "dump", s(&f.ing)]));
    let times: Vec<u64> = dump
        .lines()
        .filter_map(|l| l.split(" time=").nth(1))
        .map(|t| t.split(' ').next().unwrap().parse().unwrap())
        .collect();
    let (t0, t1) = (times[0], *times.last().unwrap());
    let at: Vec<u64> = ing.samples.iter().map(|s| s.0).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "times go back");
    assert_eq!(at[0], t0);
    assert!(
        *at.last().unwrap() <= t1 && *at.last().unwrap() + 2 >= t1,
        "{at:?} {t1}"
    );
    // Frames against addr2line: the stack's frames at one address are, outermost first, the
    // function and the functions inlined into it (addr2line's chain reversed).
    let Some(nm) = common::NmFunctions::of(&f.elf) else {
        return;
    };
    let mine: BTreeSet<u64> = ing
        .frames
        .iter()
        .filter_map(|fr| fr.3)
        .filter(|&a| {
            nm.names_at(a).is_some_and(|(n, _)| {
                n.iter()
                    .any(|x| ["main", "quick_sort.constprop.0"].contains(x))
            })
        })
        .collect();
    let Some(chains) = addr2line_chains(&f.elf, &mine) else {
        return;
    };
    let mut checked = 0;
    for (name, file, line, addr, depth) in &ing.frames {
        let Some(c) = addr.and_then(|a| chains.get(&a)) else {
            continue;
        };
        let (a2l_name, a2l_file, a2l_line) = &c[c.len() - 1 - *depth as usize];
        assert!(
            name.starts_with(a2l_name.as_str()),
            "{name} {a2l_name} at {addr:x?}"
        );
        assert_eq!(
            file.as_deref(),
            Some(a2l_file.as_str()),
            "{name} at {addr:x?}"
        );
        assert_eq!(*line, Some(*a2l_line as u64), "{name} at {addr:x?}");
        checked += 1;
    }
    assert!(
        ing.frames.iter().any(|fr| fr.0 == "square" && fr.4 == 2),
        "square inlined in sum_squares in main"
    );
    assert!(checked > 50, "{checked} frames checked");
}

/// The retired PCs `pcs` in the functions `names` (by nm), by address: how often each ran, and
/// riscv64-unknown-elf-addr2line's inline chain and discriminator for it.
struct RunLines {
    runs: BTreeMap<u64, u64>,
    chains: BTreeMap<u64, Vec<A2lFrame>>,
    discs: BTreeMap<u64, u32>,
}

/// [`RunLines`] of `pcs` in `names` of `elf`; `None` when a tool is not installed.
fn run_lines(elf: &Path, pcs: &[u64], names: &[&str]) -> Option<RunLines> {
    let mine = pcs_in(elf, pcs, names)?;
    let mut runs: BTreeMap<u64, u64> = BTreeMap::new();
    for a in &mine {
        *runs.entry(*a).or_default() += 1;
    }
    let addrs: BTreeSet<u64> = runs.keys().copied().collect();
    Some(RunLines {
        chains: addr2line_chains(elf, &addrs)?,
        discs: addr2line_discriminators(elf, &addrs)?,
        runs,
    })
}

/// `llvm-profdata merge --sample` of the text profile `prof` into `t`, then `llvm-profdata show
/// --sample ARGS` of the result: (the merged file, what show printed); `None` when llvm-profdata
/// is not installed.
fn profdata_show(prof: &Path, t: &TmpDir, args: &[&str]) -> Option<(PathBuf, String)> {
    let lp = "llvm-profdata";
    if !have(lp) {
        println!("{lp} not installed (scripts/setup.sh installs llvm): check skipped");
        return None;
    }
    let bin = t.join("t.llvm");
    let o = Command::new(lp)
        .args(["merge", "--sample", s(prof), "-o", s(&bin)])
        .output()
        .unwrap();
    ok(&o, "llvm-profdata merge --sample");
    let o = Command::new(lp)
        .args(["show", "--sample"])
        .args(args)
        .arg(s(&bin))
        .output()
        .unwrap();
    ok(&o, &format!("llvm-profdata show --sample {args:?}"));
    Some((bin, stdout(&o)))
}

/// The line table's discriminator of each of `addrs` as riscv64-unknown-elf-addr2line gives
/// it ("file.c:12 (discriminator 3)"; 0 when it names none); `None` when it is not installed.
fn addr2line_discriminators(elf: &Path, addrs: &BTreeSet<u64>) -> Option<BTreeMap<u64, u32>> {
    let tool = "riscv64-unknown-elf-addr2line";
    if !have(tool) {
        println!("{tool} not installed: discriminators not checked");
        return None;
    }
    let mut args = vec!["-a".to_string(), "-e".into(), s(elf).into()];
    args.extend(addrs.iter().map(|a| format!("{a:#x}")));
    let o = Command::new(tool).args(&args).output().unwrap();
    ok(&o, tool);
    let text = stdout(&o);
    let mut lines = text.lines();
    let mut m = BTreeMap::new();
    while let (Some(a), Some(loc)) = (lines.next(), lines.next()) {
        let a = u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap();
        let d = loc
            .split(" (discriminator ")
            .nth(1)
            .map_or(0, |d| d.trim_end_matches(')').parse().unwrap());
        m.insert(a, d);
    }
    Some(m)
}

/// `autofdo --profile-format llvm` writes the line table's discriminators: `main`'s own lines
/// (those not inlined from elsewhere) are exactly `offset[.discriminator]: count`, the
/// offset from `main`'s line in the source, the discriminator riscv64-unknown-elf-addr2line's
/// (GCC gives the blocks of the first loop's lines discriminator 3), the count the most runs
/// of the line's instructions among the retired PCs; `llvm-profdata show --sample --function
/// main` lists the discriminated lines, and clang takes the profile (the test above).
#[test]
fn llvm_sample_profile_discriminators_as_addr2line() {
    let f = files(INLINE, "disc");
    let prof = f.t.join("t.prof");
    ok(
        &analyse(&f, "autofdo", &["--profile-format", "llvm", "-o", s(&prof)]),
        "autofdo --profile-format llvm",
    );
    let text = std::fs::read_to_string(&prof).unwrap();
    // main's own body lines: one space deep, a count (not an inlined call site's callee).
    let got: BTreeMap<String, u64> = text
        .lines()
        .skip_while(|l| !l.starts_with("main:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| !l.starts_with("  "))
        .filter_map(|l| {
            let (key, rest) = l.trim().split_once(": ")?;
            let n = rest.split(' ').next()?.parse().ok()?;
            Some((key.to_string(), n))
        })
        .collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/src/inline.c");
    let decl = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("int main(void)"))
        .unwrap() as u32
        + 1;
    let pcs = retired_pcs(&f.elf, &f.t);
    let Some(RunLines {
        runs,
        chains,
        discs,
    }) = run_lines(&f.elf, &pcs, &["main"])
    else {
        return;
    };
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for (a, n) in &runs {
        let c = &chains[a];
        if c.len() != 1 || c[0].2 == 0 {
            continue; // inlined code, or no line
        }
        let off = c[0].2 - decl;
        let key = match discs[a] {
            0 => off.to_string(),
            d => format!("{off}.{d}"),
        };
        let e = want.entry(key).or_default();
        *e = (*e).max(*n);
    }
    assert_eq!(got, want);
    let discriminated: Vec<&String> = want.keys().filter(|k| k.contains('.')).collect();
    assert!(discriminated.len() >= 3, "{want:?}");
    let Some((_, shown)) = profdata_show(&prof, &f.t, &["--function", "main"]) else {
        return;
    };
    for k in discriminated {
        let line = format!("  {k}: {}", want[k]);
        assert!(shown.lines().any(|l| l == line), "{line:?} not in\n{shown}");
    }
}
