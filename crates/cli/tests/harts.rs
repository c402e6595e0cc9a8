//! Several harts (`run --harts N`, issue 32 item 3): `programs/boot/smp.S` under the built-in SBI
//! on 1, 2, 4 and 8 harts, the same twice (each hart's ingress byte for byte), its retired
//! streams decoded back per hart; OpenSBI's multi-hart boot compared with QEMU 10 `-smp 4`; the
//! device tree of 4 harts compared with QEMU 7.2's; the option's errors.

use crate::common;
use common::{rvtrace, s, stderr, stdout, tmpdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Increments per hart in `smp.S` (its `K`).
const K: u64 = 1000;

fn smp(xlen: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(match xlen {
        64 => "../../programs/boot/smp-rv64gc.elf",
        _ => "../../programs/boot/smp-rv32imac.elf",
    })
}

/// The lines `smp.S` prints, `\r` (OpenSBI's console) dropped.
fn smp_lines(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("smp: "))
        .map(str::to_string)
        .collect()
}

/// What `smp.S` prints on `n` harts whatever the interleaving: each hart counted once, every
/// hart but the boot hart got the IPI once, both counters are `n * K` (the last line).
fn check_smp(lines: &[String], n: u64, what: &str) {
    let mut counted: Vec<&String> = lines.iter().filter(|l| l.ends_with(" counted")).collect();
    counted.sort();
    let mut want: Vec<String> = (0..n).map(|h| format!("smp: hart {h} counted")).collect();
    want.sort();
    assert_eq!(
        counted,
        want.iter().collect::<Vec<_>>(),
        "{what}: {lines:#?}"
    );
    let ipis = lines.iter().filter(|l| l.ends_with(" got the IPI")).count();
    assert_eq!(ipis as u64, n - 1, "{what}: {lines:#?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            format!(
                "smp: {n} harts, lock counter {}, amo counter {}",
                n * K,
                n * K
            )
            .as_str()
        ),
        "{what}"
    );
    assert_eq!(lines.len() as u64, 2 * n, "{what}: {lines:#?}");
}

#[test]
fn lock_and_amo_counters_add_up_on_1_2_4_8_harts_and_runs_repeat_exactly() {
    let d = tmpdir("smp");
    for (xlen, n) in [(64, 1), (64, 2), (64, 4), (64, 8), (32, 4)] {
        let elf = smp(xlen);
        let run = |tag: &str| {
            let ing = d.join(format!("{tag}-{{hart}}.ing"));
            let pcs = d.join(format!("{tag}-{{hart}}.pcs"));
            let mut args = vec!["run", "--sbi", s(&elf), "--harts"];
            let n = n.to_string();
            args.push(&n);
            args.extend(["--ingress", s(&ing), "--pcs", s(&pcs)]);
            let o = rvtrace(&args);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            stdout(&o)
        };
        let (a, b) = (run("a"), run("b"));
        assert_eq!(
            a, b,
            "rv{xlen} {n} harts: the console differs between two runs"
        );
        check_smp(&smp_lines(&a), n, &format!("rv{xlen} --sbi --harts {n}"));
        for h in 0..n {
            for ext in ["ing", "pcs"] {
                let read = |tag: &str| std::fs::read(d.join(format!("{tag}-{h}.{ext}"))).unwrap();
                assert!(
                    read("a") == read("b"),
                    "rv{xlen} {n} harts: hart {h}'s .{ext} differs between two runs"
                );
            }
        }
        // Each hart's ingress is a stream of its own: encoded and decoded, it gives the PCs
        // the hart retired.
        for h in [0, n - 1] {
            let (ing, te) = (d.join(format!("a-{h}.ing")), d.join("t.te"));
            let o = rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te)]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let got = d.join("d.pcs");
            let o = rvtrace(&["decode", s(&te), "--elf", s(&elf), "--pcs", s(&got)]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            assert!(
                std::fs::read(&got).unwrap()
                    == std::fs::read(d.join(format!("a-{h}.pcs"))).unwrap(),
                "rv{xlen} {n} harts: hart {h}'s decoded trace differs from its run"
            );
        }
    }
}

/// The harts' ingress files encoded into one trace, as a trace funnel merges several harts'
/// encoders (N-Trace SRC, the E-Trace encapsulation's srcID; records taken in the order of the
/// shared timer's time): `decode --all-harts` splits it back, each hart's PCs the run's; the
/// same files give the same bytes; a source field too narrow for the harts is a usage error.
#[test]
fn one_funnelled_trace_of_four_harts_splits_back() {
    let d = tmpdir("smp-funnel");
    let elf = smp(64);
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&elf),
        "--harts",
        "4",
        "--ingress",
        s(&d.join("h-{hart}.ing")),
        "--pcs",
        s(&d.join("h-{hart}.pcs")),
        "--ingress-text",
        s(&d.join("h-{hart}.txt")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ings: Vec<PathBuf> = (0..4).map(|h| d.join(format!("h-{h}.ing"))).collect();
    for (proto, extra) in [("ntrace", &["--timestamps"][..]), ("etrace", &[][..])] {
        let encode = |out: &Path, bits: &str| {
            let mut a = vec!["encode", proto];
            a.extend(ings.iter().map(|p| s(p)));
            a.extend(["-o", s(out), "--src-bits", bits]);
            a.extend_from_slice(extra);
            rvtrace(&a)
        };
        let t = d.join(format!("all.{proto}"));
        let o = encode(&t, "2");
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        let again = d.join(format!("again.{proto}"));
        assert_eq!(encode(&again, "2").status.code(), Some(0));
        assert!(
            std::fs::read(&t).unwrap() == std::fs::read(&again).unwrap(),
            "{proto}"
        );
        if proto == "ntrace" {
            // The harts' messages are interleaved as they run, not one hart after another.
            let o = rvtrace(&["dump", "ntrace", s(&t)]);
            let srcs: Vec<String> = stdout(&o)
                .lines()
                .filter_map(|l| l.split_once("SRC[2]=").map(|(_, v)| v[..3].to_string()))
                .collect();
            let switches = srcs.windows(2).filter(|w| w[0] != w[1]).count();
            assert!(switches > 100, "{switches} switches between harts");
        }
        let pcs = d.join(format!("{proto}-{{hart}}.pcs"));
        let o = rvtrace(&[
            "decode",
            s(&t),
            "--elf",
            s(&elf),
            "--all-harts",
            "--pcs",
            s(&pcs),
        ]);
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        for h in 0..4 {
            let got = std::fs::read(d.join(format!("{proto}-{h}.pcs"))).unwrap();
            let want = std::fs::read(d.join(format!("h-{h}.pcs"))).unwrap();
            assert!(!want.is_empty());
            assert!(got == want, "{proto}: hart {h}'s PCs differ from its run");
        }
        // `profile --by hart`: one profile per hart, each of the hart's run's instructions;
        // the folded stacks begin with the hart.
        let folded = d.join(format!("{proto}.folded"));
        let o = rvtrace(&[
            "profile",
            s(&t),
            "--elf",
            s(&elf),
            "--by",
            "hart",
            "--folded",
            s(&folded),
        ]);
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        let report = stdout(&o);
        let folded = std::fs::read_to_string(&folded).unwrap();
        for h in 0..4 {
            let want = std::fs::read_to_string(d.join(format!("h-{h}.pcs")))
                .unwrap()
                .lines()
                .count();
            let head = format!("hart {h}:\nflat profile: {want} instructions");
            assert!(report.contains(&head), "{proto}: no {head:?} in\n{report}");
            let folded_sum: usize = folded
                .lines()
                .filter(|l| l.starts_with(&format!("hart {h};")))
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<usize>().unwrap())
                .sum();
            assert_eq!(folded_sum, want, "{proto}: hart {h}'s folded stacks");
        }
        if proto == "ntrace" {
            one_timeline_of_four_harts(&d, &elf, &t);
        }
        let o = encode(&d.join("narrow"), "1");
        assert_eq!(o.status.code(), Some(2), "{proto}: {}", stderr(&o));
        assert!(stderr(&o).contains("--src-bits 2"), "{}", stderr(&o));
    }
}

/// `--trace-from N` on 4 harts: the first N instructions of all harts run without outputs, and
/// each hart's PC list is then the end of its list in the whole run (the machine goes on with
/// the same interleaving), the lists together N lines shorter.
#[test]
fn trace_from_on_four_harts_gives_the_end_of_each_harts_run() {
    let d = tmpdir("smp-trace-from");
    let elf = smp(64);
    let run = |tag: &str, extra: &[&str]| {
        let pcs = d.join(format!("{tag}-{{hart}}.pcs"));
        let mut a = vec!["run", "--sbi", s(&elf), "--harts", "4", "--pcs", s(&pcs)];
        a.extend_from_slice(extra);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        (0..4)
            .map(|h| std::fs::read_to_string(d.join(format!("{tag}-{h}.pcs"))).unwrap())
            .collect::<Vec<String>>()
    };
    let full = run("full", &[]);
    let win = run("win", &["--trace-from", "50000"]);
    let lines = |v: &[String]| v.iter().map(|t| t.lines().count()).sum::<usize>();
    assert_eq!(lines(&win) + 50_000, lines(&full));
    for h in 0..4 {
        assert!(!win[h].is_empty());
        assert!(
            full[h].ends_with(&win[h]),
            "hart {h}: not the end of its run"
        );
    }
}

/// OpenSBI 1.5.1 (scripts/setup.sh) or 1.1 (bookworm's `opensbi`) `fw_jump`.
fn fw_jump(version: &str) -> Option<PathBuf> {
    common::installed(match version {
        "1.5" => Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../target/tools/opensbi/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin",
        ),
        _ => PathBuf::from("/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf"),
    })
}

/// OpenSBI's banner (the lines before the payload's), with what legitimately differs from QEMU
/// 10 taken out: the ISA extensions QEMU's CPU has beyond the model's, and the boot hart (the
/// hart that wins OpenSBI's boot lottery: hart 0 on the model, any on QEMU).
fn banner(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.trim_end_matches('\r'))
        .take_while(|l| !l.starts_with("smp: "))
        .filter(|l| !l.starts_with("Boot HART ID") && !l.starts_with("Domain0 Boot HART"))
        .map(|l| match l.strip_prefix("Boot HART ISA Extensions  : ") {
            Some(ext) => {
                let kept: Vec<&str> = ext
                    .split(',')
                    .filter(|e| !["zicbom", "zicboz", "svadu"].contains(e))
                    .collect();
                format!("Boot HART ISA Extensions  : {}", kept.join(","))
            }
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn opensbi_boots_four_harts_as_on_qemu10() {
    let qemu = rvtrace_testkit::qemu10(64);
    if let Err(e) = &qemu {
        eprintln!("note: {e}: the QEMU comparison is skipped");
    }
    for version in ["1.5", "1.1"] {
        let Some(fw) = fw_jump(version) else { continue };
        let elf = smp(64);
        let o = rvtrace(&["run", "--bios", s(&fw), "--harts", "4", s(&elf)]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{version}: {}{out}", stderr(&o));
        assert!(out.contains("Platform HART Count       : 4"), "{out}");
        assert!(
            out.contains("Domain0 HARTs             : 0*,1*,2*,3*"),
            "{out}"
        );
        check_smp(&smp_lines(&out), 4, &format!("OpenSBI {version}"));
        let Ok(q) = &qemu else { continue };
        // QEMU runs its harts on threads: which hart boots and the order of the harts' lines
        // vary, what `banner` and `check_smp` compare does not. On QEMU (7.2 and 10) OpenSBI
        // 1.5.1 now and then leaves a hart that lost its boot lottery waiting for the boot
        // hart's "done" (`_wait_for_boot_hart`, seen with a payload that only spins), so that
        // `smp.S` waits for it for ever: such a run is cut short (`timeout`) and run again.
        let run_qemu = || {
            Command::new("timeout")
                .args(["30", s(q), "-M", "virt", "-smp", "4", "-cpu"])
                .arg(rvtrace_testkit::qemu_cpu(
                    64,
                    Some("sscofpmf=true,smcntrpmf=true"),
                ))
                .args(["-nographic", "-bios", s(&fw), "-kernel", s(&elf)])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap()
        };
        let Some(qo) = (0..5)
            .map(|_| run_qemu())
            .find(|o| o.status.code() == Some(0))
        else {
            eprintln!("note: QEMU 10 -smp 4 with OpenSBI {version} hung 5 times; skipped");
            continue;
        };
        let qt = stdout(&qo);
        assert!(banner(&out).len() > 30, "{out}");
        assert_eq!(banner(&out), banner(&qt), "{version}: QEMU:\n{qt}");
        check_smp(&smp_lines(&qt), 4, &format!("QEMU 10, OpenSBI {version}"));
    }
}

/// The nodes of the harts and of their interrupts from `dtc`'s source form: `cpus` (each
/// `cpu@N` with its interrupt controller, `cpu-map`), the PLIC and the CLINT, property by
/// property with the node's path; the ISA strings (QEMU 7.2's CPU has other extensions) and
/// `mmu-type` (sv48 on QEMU 7.2; crates/sim/src/fdt.rs) left out.
fn hart_nodes(dtb: &Path) -> Vec<String> {
    let o = Command::new("dtc")
        .args(["-I", "dtb", "-O", "dts", s(dtb)])
        .output()
        .unwrap();
    let dts = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut path: Vec<String> = Vec::new();
    let mut keep = Vec::new();
    for l in dts.lines().map(str::trim) {
        if let Some(n) = l.strip_suffix(" {") {
            path.push(n.to_string());
        } else if l == "};" {
            path.pop();
        } else if !l.is_empty() {
            let p = path.join("/");
            let ours = path.iter().any(|n| n == "cpus")
                || p.ends_with("plic@c000000")
                || p.ends_with("clint@2000000");
            if ours && !l.starts_with("riscv,isa") && !l.starts_with("mmu-type") {
                keep.push(format!("{p}: {l}"));
            }
        }
    }
    keep
}

#[test]
fn device_tree_of_four_harts_is_qemus() {
    if Command::new("dtc").arg("--version").output().is_err() {
        eprintln!("note: dtc absent (scripts/setup.sh installs device-tree-compiler); skipped");
        return;
    }
    let d = tmpdir("dtb4");
    let ours = d.join("ours.dtb");
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&smp(64)),
        "--harts",
        "4",
        "--dump-dtb",
        s(&ours),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let qemu = d.join("qemu.dtb");
    let q = Command::new("qemu-system-riscv64")
        .args(["-M", "virt", "-smp", "4", "-nographic", "-machine"])
        .arg(format!("dumpdtb={}", s(&qemu)))
        .output();
    if q.is_err() || !qemu.is_file() {
        eprintln!("note: qemu-system-riscv64 (7.2) absent; skipped");
        return;
    }
    let nodes = hart_nodes(&ours);
    // Per hart 5 properties and 4 of its interrupt controller, 3 on `cpus`, a core per hart,
    // 8 on the PLIC, 3 on the CLINT.
    assert_eq!(nodes.len(), 4 * 9 + 3 + 4 + 8 + 3, "{nodes:#?}");
    assert_eq!(nodes, hart_nodes(&qemu));
}

#[test]
fn harts_option_errors() {
    let d = tmpdir("hartsopt");
    let elf = smp(64);
    let usage = |args: &[&str], what: &str| {
        let o = rvtrace(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    };
    usage(
        &["run", "--sbi", s(&elf), "--harts", "0"],
        "0 is not in 1..=8",
    );
    usage(
        &["run", "--sbi", s(&elf), "--harts", "9"],
        "9 is not in 1..=8",
    );
    usage(
        &["run", s(&elf), "--harts", "2"],
        "--harts needs --sbi or --bios",
    );
    usage(
        &["run", "--sbi", s(&elf), "--harts", "2", "--quantum", "0"],
        "0 is not in 1..",
    );
    let one = d.join("one.ing");
    usage(
        &[
            "run",
            "--sbi",
            s(&elf),
            "--harts",
            "2",
            "--ingress",
            s(&one),
        ],
        "--harts 2 writes one --ingress file per hart: put {hart} in its path",
    );
    usage(
        &["run", "--sbi", s(&elf), "--harts", "2", "--pcs", "-"],
        "--harts 2 writes one --pcs file per hart",
    );
    usage(
        &["run", "--sbi", s(&elf), "--harts", "2", "--counters"],
        "--counters is for one hart (--harts 1) for now",
    );
}

/// `--quantum N`: the harts' turns are N instructions. smp.S on 2 harts ends well with turns of
/// 1 instruction and of a million, each run repeats exactly, and the turns show in the runs
/// (the harts' waits for each other take other instructions, so the PC lists differ).
#[test]
fn quantum_sets_the_turns() {
    let d = tmpdir("quantum");
    let elf = smp(64);
    let run = |q: &str, tag: &str| -> Vec<Vec<u8>> {
        let pcs = d.join(format!("{tag}-{{hart}}.pcs"));
        let o = rvtrace(&[
            "run",
            "--sbi",
            s(&elf),
            "--harts",
            "2",
            "--quantum",
            q,
            "--pcs",
            s(&pcs),
        ]);
        assert_eq!(o.status.code(), Some(0), "--quantum {q}: {}", stderr(&o));
        (0..2)
            .map(|h| std::fs::read(d.join(format!("{tag}-{h}.pcs"))).unwrap())
            .collect()
    };
    let fine = run("1", "fine");
    assert_eq!(run("1", "fine2"), fine, "--quantum 1 repeats");
    let coarse = run("1000000", "coarse");
    assert_eq!(
        run("1000000", "coarse2"),
        coarse,
        "--quantum 1000000 repeats"
    );
    assert_ne!(fine, coarse, "the turns change the interleaving");
}

/// `text --all-harts` of the funnelled N-Trace (with time stamps) of smp.S on 4 harts: one
/// timeline, its nanoseconds never decreasing; each hart's instructions are its run's PCs in
/// order, each shown at 100 ns per tick of the 10 MHz timer (the device tree's
/// `timebase-frequency`, also read with --dtb) at a time no later than the run retired it
/// (its ingress text's `time`); --timebase-hz 1000000000 shows the ticks themselves.
fn one_timeline_of_four_harts(d: &Path, elf: &Path, t: &Path) {
    let text = |more: &[&str]| {
        let out = d.join("timeline.txt");
        let mut a = vec!["text", s(t), "--elf", s(elf), "--all-harts", "-o", s(&out)];
        a.extend_from_slice(more);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        std::fs::read_to_string(&out).unwrap()
    };
    let merged = text(&[]);
    // The run: each hart's retired instructions and their times.
    let run: Vec<Vec<(u64, u64)>> = (0..4)
        .map(|h| {
            std::fs::read_to_string(d.join(format!("h-{h}.txt")))
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter(|l| !l.split_whitespace().nth(1).unwrap().starts_with("+0"))
                .map(|l| {
                    let pc = u64::from_str_radix(&l[2..l.find(' ').unwrap()], 16).unwrap();
                    let time = l
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("time="))
                        .unwrap();
                    (pc, time.parse().unwrap())
                })
                .collect()
        })
        .collect();
    let mut next = [0usize; 4];
    let (mut prev, mut switches, mut last_hart) = (0u64, 0, 0);
    for l in merged.lines() {
        let (ns, rest) = l.split_once(" ns hart ").unwrap();
        let ns: u64 = ns.parse().unwrap();
        assert!(ns >= prev, "{l}: time goes back");
        assert_eq!(ns % 100, 0, "{l}: not a whole tick");
        prev = ns;
        let (h, line) = rest.split_once(": ").unwrap();
        let h: usize = h.parse().unwrap();
        switches += usize::from(h != last_hart);
        last_hart = h;
        let Some(pc) = line.strip_prefix("0x") else {
            continue;
        };
        let pc = u64::from_str_radix(&pc[..pc.find(' ').unwrap()], 16).unwrap();
        let (want_pc, time) = run[h][next[h]];
        next[h] += 1;
        assert_eq!(pc, want_pc, "hart {h}'s instruction {}", next[h]);
        assert!(
            ns / 100 <= time,
            "{l}: shown after the run retired it (tick {time})"
        );
    }
    for h in 0..4 {
        assert_eq!(next[h], run[h].len(), "hart {h}: instructions");
    }
    assert!(switches > 100, "{switches} switches between harts");
    // The frequency from the device tree of the same machine.
    let dtb = d.join("smp.dtb");
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(elf),
        "--harts",
        "4",
        "--dump-dtb",
        s(&dtb),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        text(&["--dtb", s(&dtb)]) == merged,
        "--dtb: another timeline"
    );
    // At 1 GHz a tick is a nanosecond: each time stamp shows as itself.
    let ticks = text(&["--timebase-hz", "1000000000"]);
    let mut seen = 0;
    for l in ticks.lines() {
        if let Some((ns, time)) = l
            .split_once(" ns hart ")
            .and_then(|(ns, r)| Some((ns, r.split_once(": time ")?.1)))
        {
            assert_eq!(ns, time, "{l}");
            seen += 1;
        }
    }
    assert!(seen > 100, "{seen} time lines");
}
