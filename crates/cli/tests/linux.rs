//! Debian's riscv64 kernel on the hart model (issue 32): the flat `Image` booted as QEMU's
//! `-kernel` boots it, with an initramfs built here (`rvtrace_testkit::cpio`) whose `/init`
//! (busybox-static) prints a marker and powers off, under the built-in SBI and under OpenSBI
//! 1.5.1's `fw_jump.bin`; and the placement of the kernel and initrd in the device tree checked
//! against QEMU 7.2's for the same options. The kernel and busybox come from
//! `scripts/setup.sh` (`target/tools/debian-riscv64`); without them the tests say so and pass.

use crate::common;
use common::{rvtrace, s, stderr, stdout, tmpdir};
use rvtrace_testkit::cpio::Cpio;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools")
}

/// A file `scripts/setup.sh` installs under target/tools, or `None` with a note.
fn tool(rel: &str) -> Option<PathBuf> {
    common::installed(tools().join(rel))
}

fn kernel() -> Option<PathBuf> {
    tool("debian-riscv64/boot/Image")
}

/// The line `/init` prints first (in user space, through the console's tty: more than the
/// 16550's 16-byte FIFO).
const MARKER: &str = "rvtrace: user space reached";

/// The Linux user programs built here (`programs/linux`, committed).
fn linux_programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/linux")
}

/// An initramfs: `/dev/console`, busybox-static as `/bin/busybox`, `programs/linux/perf_count`
/// and `collatz` in `/bin`, and `/init`, a shell script that prints [`MARKER`], mounts `/proc`,
/// installs busybox's applets and runs `script`.
fn initramfs_with(dir: &Path, script: &str) -> Option<PathBuf> {
    let busybox = std::fs::read(tool("debian-riscv64/usr/bin/busybox")?).ok()?;
    let linux_program = |name: &str| std::fs::read(linux_programs().join(name)).unwrap();
    let init = format!(
        "#!/bin/busybox sh\n/bin/busybox echo '{MARKER}'\n\
         /bin/busybox mount -t proc proc /proc\n/bin/busybox --install -s /bin\n{script}"
    );
    let mut c = Cpio::new();
    c.dir("dev")
        .char_dev("dev/console", 5, 1)
        .dir("proc")
        .dir("bin")
        .file("bin/busybox", 0o755, &busybox)
        .file("bin/perf_count", 0o755, &linux_program("perf_count"))
        .file("bin/collatz", 0o755, &linux_program("collatz"))
        .file("init", 0o755, init.as_bytes());
    let p = dir.join("initramfs.cpio");
    std::fs::write(&p, c.finish()).unwrap();
    Some(p)
}

/// What a boot into busybox's shell printed (the console's lines, without the tty's `\r`).
struct Booted {
    lines: Vec<String>,
}

impl Booted {
    fn has(&self, want: &str) -> bool {
        self.lines.iter().any(|l| l == want)
    }
}

/// Boot Debian's kernel under `mode` (`--sbi`, or `--bios FW`) on `harts` harts into busybox's
/// interactive shell on the console (`/init` ends with `exec sh`), with `commands` piped into
/// rvtrace: the shell reads them through the 16550 (its received-data interrupt, through the
/// PLIC). Blank lines go first: the serial driver resets the FIFO while it sets the port up, as
/// on QEMU, and a blank line is a shell's no-op. Checks the marker and the power-off; prints the
/// seconds taken. `None` when the kernel or busybox is not installed.
fn boot_to_shell(mode: &[&str], harts: usize, commands: &str) -> Option<Booted> {
    let d = tmpdir(&format!("shell-{harts}"));
    let k = kernel()?;
    let rd = initramfs_with(&d, "exec /bin/sh\n")?;
    let what = format!("{} --harts {harts}", mode[0]);
    let harts = harts.to_string();
    let mut args = vec!["run"];
    args.extend(mode);
    args.extend(["--harts", &harts, s(&k), "--initrd", s(&rd)]);
    args.extend(["--bootargs", "console=ttyS0", "--max-insns", "4000000000"]);
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{}{commands}", "\n".repeat(64)).as_bytes())
        .unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    let booted = Booted {
        lines: out
            .lines()
            .map(|l| l.trim_end_matches('\r').to_string())
            .collect(),
    };
    assert!(
        booted.has(MARKER) && out.contains("reboot: Power down") && o.status.success(),
        "{what}: {:?}\n--- stdout ---\n{out}\n--- stderr ---\n{err}",
        o.status
    );
    eprintln!(
        "{what}: user space, the shell's commands and power-off in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Some(booted)
}

/// The commands piped into the shell: arithmetic only a shell does (the tty echoes the line as
/// typed, so `shell: 42` comes from the shell), the harts `/proc/cpuinfo` lists, the goldfish
/// RTC's date, the counts of `perf_count`, and power-off.
const SHELL_COMMANDS: &str = "echo shell: $((6 * 7))\ngrep ^hart /proc/cpuinfo\n\
     grep rtc_date /proc/driver/rtc\nperf_count\npoweroff -f\n";

/// The shell ran the piped commands: it computed, and `/proc/cpuinfo` lists harts 0..n. (A
/// line may begin with the shell's prompt.)
fn check_shell(b: &Booted, harts: usize) {
    assert!(
        b.lines.iter().any(|l| l.ends_with("shell: 42")),
        "{:#?}",
        b.lines
    );
    let listed: Vec<&str> = b
        .lines
        .iter()
        .filter_map(|l| l.find("hart\t\t: ").map(|i| &l[i..]))
        .collect();
    let want: Vec<String> = (0..harts).map(|h| format!("hart\t\t: {h}")).collect();
    assert_eq!(listed, want, "{:#?}", b.lines);
    if harts > 1 {
        let smp = format!("smp: Brought up 1 node, {harts} CPUs");
        assert!(b.lines.iter().any(|l| l.ends_with(&smp)), "{:#?}", b.lines);
    }
    // QEMU virt's devices without a driver of ours, found as on QEMU: the PCIe host bridge
    // (pci-host-generic) and the goldfish RTC, which reads the model's clock from the epoch.
    for line in [
        "pci 0000:00:00.0: [1b36:0008] type 00 class 0x060000 conventional PCI endpoint",
        "goldfish_rtc 101000.rtc: registered as rtc0",
        "rtc_date\t: 1970-01-01",
    ] {
        assert!(
            b.lines.iter().any(|l| l.ends_with(line)),
            "no {line:?}: {:#?}",
            b.lines
        );
    }
    check_perf(b);
}

/// `perf_count`'s counts through `perf_event_open`, the kernel's `riscv-pmu-sbi` driver and the
/// SBI, user mode only: its loop of n iterations is 2n + 3 instructions and n conditional
/// branches (counted from its source, programs/linux/perf_count.c), and 2n + 4 cycles (the
/// hart's rule: a cycle per instruction, and one for the `ecall` that ends the window, which
/// raises its exception in user mode and does not retire).
fn check_perf(b: &Booted) {
    for n in [1000u64, 100_000] {
        for (event, want) in [
            ("instructions", 2 * n + 3),
            ("branches", n),
            ("cycles", 2 * n + 4),
        ] {
            let line = format!("perf: {event} n={n} count={want}");
            assert!(
                b.lines.iter().any(|l| l.ends_with(&line)),
                "no {line:?}: {:#?}",
                b.lines
            );
        }
    }
    assert!(b.lines.iter().any(|l| l.ends_with("perf: done")));
}

fn fw_jump() -> Option<PathBuf> {
    tool("opensbi/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin")
}

/// Issue 32 item 7, CI-sized windows: the first 3 M instructions of Debian's kernel under
/// `--sbi` (its early boot at physical addresses, then `start_kernel` at virtual ones), the
/// ingress encoded in both protocols and decoded with the run's `--code-snapshot` alone (the
/// kernel's code at its physical and, through the page table at the end, its virtual
/// addresses, as memory held it): each decode gives the run's PCs, most of them kernel
/// virtual addresses; and the window of instructions 20 M to 21 M (`--trace-from`) likewise,
/// with the snapshot given as `--image` and as `--elf`.
#[test]
fn kernel_boot_window_decodes_with_its_code_snapshot() {
    let (Some(k), d) = (kernel(), tmpdir("kernel-window")) else {
        return;
    };
    let (ing, pcs, code) = (d.join("k.ing"), d.join("k.pcs"), d.join("code.elf"));
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&k),
        "--bootargs",
        "console=ttyS0",
        "--max-insns",
        "3000000",
        "--ingress",
        s(&ing),
        "--pcs",
        s(&pcs),
        "--code-snapshot",
        s(&code),
    ]);
    // The boot modes call a run cut by --max-insns an error; its outputs are whole.
    assert!(
        stderr(&o).contains("within 3000000 instructions"),
        "{}",
        stderr(&o)
    );
    let want = std::fs::read(&pcs).unwrap();
    let text = String::from_utf8_lossy(&want);
    let virt = text
        .lines()
        .filter(|l| l.starts_with("0xffffffff8"))
        .count();
    assert!(virt > 1_000_000, "{virt} PCs at kernel virtual addresses");
    // A window later in the boot (`--trace-from`): instructions 20 M to 21 M.
    let (wing, wpcs, wcode) = (d.join("w.ing"), d.join("w.pcs"), d.join("wcode.elf"));
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&k),
        "--bootargs",
        "console=ttyS0",
        "--trace-from",
        "20000000",
        "--max-insns",
        "21000000",
        "--ingress",
        s(&wing),
        "--pcs",
        s(&wpcs),
        "--code-snapshot",
        s(&wcode),
    ]);
    assert!(
        stderr(&o).contains("within 21000000 instructions"),
        "{}",
        stderr(&o)
    );
    let wwant = std::fs::read(&wpcs).unwrap();
    assert_eq!(wwant.iter().filter(|&&b| b == b'\n').count(), 1_000_000);
    let (wt, wgot) = (d.join("w.te"), d.join("w-dec.pcs"));
    let o = rvtrace(&["encode", "etrace", s(&wing), "-o", s(&wt)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rvtrace(&["decode", s(&wt), "--image", s(&wcode), "--pcs", s(&wgot)]);
    assert!(o.status.success(), "window: {}", stderr(&o));
    assert!(
        std::fs::read(&wgot).unwrap() == wwant,
        "window: the decoded PCs differ"
    );
    // The snapshot given as --elf is read as --image reads it (a core file).
    let o = rvtrace(&["decode", s(&wt), "--elf", s(&wcode), "--pcs", s(&wgot)]);
    assert!(o.status.success(), "window, --elf: {}", stderr(&o));
    assert!(
        std::fs::read(&wgot).unwrap() == wwant,
        "window, --elf: the decoded PCs differ"
    );
    for proto in ["etrace", "ntrace"] {
        let (t, got) = (d.join(format!("k.{proto}")), d.join(format!("{proto}.pcs")));
        let o = rvtrace(&["encode", proto, s(&ing), "-o", s(&t)]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = rvtrace(&["decode", s(&t), "--image", s(&code), "--pcs", s(&got)]);
        assert!(o.status.success(), "{proto}: {}", stderr(&o));
        assert!(
            std::fs::read(&got).unwrap() == want,
            "{proto}: the decoded PCs differ from the run's"
        );
    }
}

/// A window by address (issue 32 item 7): `--trace-from 0xADDR` starts the outputs when the hart
/// first reaches ADDR (the first instruction at a kernel virtual address, after the MMU is on)
/// and `--trace-to 0xADDR2` ends the run before ADDR2's instruction (the 2,000,000th PC of the
/// boot); the window's PC list is the full run's between the first occurrences of the two (the
/// full run is the oracle), and the run ends with status 0 and a note.
#[test]
fn kernel_boot_window_by_address() {
    let (Some(k), d) = (kernel(), tmpdir("kernel-window-addr")) else {
        return;
    };
    let full = d.join("full.pcs");
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&k),
        "--bootargs",
        "console=ttyS0",
        "--max-insns",
        "2500000",
        "--pcs",
        s(&full),
    ]);
    assert!(
        stderr(&o).contains("within 2500000 instructions"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(&full).unwrap();
    let pcs: Vec<&str> = text.lines().collect();
    let from = pcs
        .iter()
        .position(|l| l.starts_with("0xffffffff8"))
        .unwrap();
    let to_pc = pcs[2_000_000];
    let to = pcs.iter().position(|&l| l == to_pc).unwrap();
    assert!(from > 0 && to > from + 100_000, "{from} {to}");
    let win = d.join("w.pcs");
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&k),
        "--bootargs",
        "console=ttyS0",
        "--max-insns",
        "2500000",
        "--trace-from",
        pcs[from],
        "--trace-to",
        to_pc,
        "--pcs",
        s(&win),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("stopped at --trace-to {to_pc}")),
        "{}",
        stderr(&o)
    );
    let got = std::fs::read_to_string(&win).unwrap();
    let want: String = pcs[from..to].iter().map(|l| format!("{l}\n")).collect();
    assert!(got == want, "the window is not the run's PCs {from}..{to}");
}

/// A window of a two-hart boot (both harts running: instructions 161 M to 163 M of all
/// together, 38 k of them hart 0's when written), each hart's ingress encoded into one funnelled trace (N-Trace SRC, E-Trace srcID)
/// and split back by `decode --all-harts` with the run's code snapshot: each hart's PCs are its
/// run's (issue 32 item 7: a Linux boot's trace, per hart).
#[test]
fn two_hart_kernel_window_funnelled_decodes_per_hart() {
    let (Some(k), d) = (kernel(), tmpdir("kernel-window-smp")) else {
        return;
    };
    let code = d.join("code.elf");
    let o = rvtrace(&[
        "run",
        "--sbi",
        "--harts",
        "2",
        s(&k),
        "--bootargs",
        "console=ttyS0",
        "--trace-from",
        "161000000",
        "--max-insns",
        "163000000",
        "--ingress",
        s(&d.join("h-{hart}.ing")),
        "--pcs",
        s(&d.join("h-{hart}.pcs")),
        "--code-snapshot",
        s(&code),
    ]);
    assert!(
        stderr(&o).contains("within 163000000 instructions"),
        "{}",
        stderr(&o)
    );
    let want: Vec<Vec<u8>> = (0..2)
        .map(|h| std::fs::read(d.join(format!("h-{h}.pcs"))).unwrap())
        .collect();
    for (h, w) in want.iter().enumerate() {
        // Both harts ran in the window. (Which hart runs when in a boot is bursty: a change of
        // the kernel's path can leave one idle here; then pick a window where both run, from
        // the per-hart counts `run --stats` prints at a few --max-insns.)
        let n = w.iter().filter(|&&b| b == b'\n').count();
        assert!(n > 10_000, "hart {h} ran {n} instructions in the window");
        assert!(w.starts_with(b"0xffffffff8"), "kernel virtual addresses");
    }
    for proto in ["ntrace", "etrace"] {
        let t = d.join(format!("all.{proto}"));
        let mut a = vec!["encode", proto];
        let ings: Vec<PathBuf> = (0..2).map(|h| d.join(format!("h-{h}.ing"))).collect();
        a.extend(ings.iter().map(|p| s(p)));
        a.extend(["-o", s(&t), "--src-bits", "1"]);
        let o = rvtrace(&a);
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        let pcs = d.join(format!("{proto}-{{hart}}.pcs"));
        let o = rvtrace(&[
            "decode",
            s(&t),
            "--image",
            s(&code),
            "--all-harts",
            "--pcs",
            s(&pcs),
        ]);
        assert_eq!(o.status.code(), Some(0), "{proto}: {}", stderr(&o));
        for (h, w) in want.iter().enumerate() {
            let got = std::fs::read(d.join(format!("{proto}-{h}.pcs"))).unwrap();
            assert!(&got == w, "{proto}: hart {h}'s PCs differ from its run");
        }
    }
}

/// Issue 32 item 5: Debian's kernel boots to busybox's shell under the built-in SBI on one hart,
/// and the shell runs what is piped in (the SBI's console shares the UART's input).
/// The Collatz steps of 1..=n, as `programs/linux/collatz.c` sums them.
fn collatz_steps(n: u64) -> u64 {
    (1..=n)
        .map(|mut v| {
            let mut s = 0;
            while v != 1 {
                v = if v & 1 == 1 { 3 * v + 1 } else { v / 2 };
                s += 1;
            }
            s
        })
        .sum()
}

/// Issue 31 item 5 on Linux: a window of Debian's kernel running processes, from the first
/// instruction of `collatz` (a static program linked at 0x10000, as busybox is) to the power-off
/// by busybox's `poweroff` (the shell forks, the child execs busybox), traced with `--context
/// asid`. The run's `--code-snapshot` alone (the kernel's code, and each process's code by the
/// ASID it ran under) decodes the E-Trace (with context) and the N-Trace (with Ownership) to
/// exactly the run's PCs, though busybox and collatz have different code at the same
/// addresses. With collatz's own file for its context, `profile --by process` names its
/// functions: `steps` is called once per number, its instructions are the run's in its
/// address range (binutils nm) and that context.
#[test]
fn linux_processes_decode_with_the_run_snapshot() {
    let (Some(k), d) = (kernel(), tmpdir("linux-processes")) else {
        return;
    };
    let Some(rd) = initramfs_with(&d, "collatz\npoweroff -f\n") else {
        return;
    };
    let collatz = linux_programs().join("collatz");
    let Ok(nm) = Command::new("riscv64-unknown-elf-nm")
        .arg(&collatz)
        .output()
    else {
        eprintln!("note: riscv64-unknown-elf-nm absent (scripts/setup.sh installs binutils-riscv64-unknown-elf); skipped");
        return;
    };
    let sym = |name: &str| {
        let text = String::from_utf8_lossy(&nm.stdout);
        let line = text.lines().find(|l| l.ends_with(&format!(" {name}")));
        u64::from_str_radix(line.expect(name).split(' ').next().unwrap(), 16).unwrap()
    };
    let (start, steps, put_line) = (sym("_start"), sym("steps"), sym("put_line.constprop.0"));
    // `steps` ends where the next function begins.
    assert!(
        steps < put_line && put_line < start,
        "{steps:#x} {put_line:#x} {start:#x}"
    );
    let (ing, pcs, code) = (d.join("w.ing"), d.join("w.pcs"), d.join("code.core"));
    let from = format!("{start:#x}");
    let o = rvtrace(&[
        "run",
        "--sbi",
        s(&k),
        "--initrd",
        s(&rd),
        "--bootargs",
        "console=ttyS0",
        "--max-insns",
        "4000000000",
        "--trace-from",
        &from,
        "--context",
        "asid",
        "--ingress",
        s(&ing),
        "--pcs",
        s(&pcs),
        "--code-snapshot",
        s(&code),
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{}", out, stderr(&o));
    let want_line = format!("collatz: N=3000 steps={}", collatz_steps(3000));
    assert!(out.lines().any(|l| l.trim_end() == want_line), "{out}");
    // The run: which contexts ran user code, and collatz's (the first record's).
    let mut reader =
        rvtrace_ingress::binary::IngressReader::new(std::fs::File::open(&ing).unwrap()).unwrap();
    let mut first_ctx = None;
    let mut user: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut in_collatz_range = std::collections::BTreeSet::new();
    let mut in_steps = 0u64;
    for r in reader.by_ref() {
        let r = r.unwrap();
        let c = *first_ctx.get_or_insert(r.context);
        if r.iretire == 0 || r.priv_ != 0 {
            continue;
        }
        *user.entry(r.context).or_default() += 1;
        if (steps..start + 0x100).contains(&r.iaddr) {
            in_collatz_range.insert(r.context);
        }
        in_steps += u64::from(r.context == c && (steps..put_line).contains(&r.iaddr));
    }
    let c = first_ctx.unwrap();
    // Other processes ran code at collatz's addresses: busybox's, under their own ASIDs.
    assert!(
        in_collatz_range.len() >= 2 && in_collatz_range.contains(&c),
        "contexts that ran at collatz's addresses: {in_collatz_range:?}; user instructions by context: {user:?}"
    );
    let scf = d.join("ctx.scf");
    std::fs::write(&scf, "nocontext_p=0\ncontext_width_p=16\n").unwrap();
    let want = std::fs::read(&pcs).unwrap();
    // E-Trace's context field (off by default), N-Trace's Ownership messages.
    for (proto, extra) in [
        ("etrace", vec!["--scf", s(&scf)]),
        ("ntrace", vec!["--ownership"]),
    ] {
        let (t, got) = (d.join(format!("w.{proto}")), d.join(format!("{proto}.pcs")));
        let mut args = vec!["encode", proto, s(&ing), "-o", s(&t)];
        args.extend(extra);
        let o = rvtrace(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = rvtrace(&["decode", s(&t), "--image", s(&code), "--pcs", s(&got)]);
        assert!(o.status.success(), "{proto}: {}", stderr(&o));
        assert!(
            std::fs::read(&got).unwrap() == want,
            "{proto}: the decoded PCs differ from the run's"
        );
        std::fs::remove_file(&got).unwrap();
    }
    // collatz's file for its context, beside the snapshot: its functions by name.
    let image = format!("{},priv=u,ctx={c}", collatz.display());
    let o = rvtrace(&[
        "profile",
        s(&d.join("w.etrace")),
        "--image",
        s(&code),
        "--image",
        &image,
        "--by",
        "process",
    ]);
    let report = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let part = report
        .split("process ")
        .find(|p| p.starts_with(&format!("ctx={c} ")))
        .unwrap_or_else(|| panic!("no profile of context {c}:\n{report}"));
    let total = format!("flat profile: {} instructions", user[&c]);
    assert!(part.contains(&total), "{total}\n{part}");
    let row = part
        .lines()
        .find(|l| l.trim_end().ends_with(" steps"))
        .unwrap_or_else(|| panic!("{part}"));
    let f: Vec<&str> = row.split_whitespace().collect();
    // self, %, inclusive, %, calls, name: one call per number, the run's instructions in it.
    assert_eq!(
        (f[0], f[4]),
        (in_steps.to_string().as_str(), "3000"),
        "{row}"
    );
    // Given for every space (no ctx=), collatz takes busybox's place too: the load says where
    // its code is not what ran (contexts that ran user code, not collatz's own).
    let o = rvtrace(&[
        "decode",
        s(&d.join("w.etrace")),
        "--image",
        s(&code),
        "--elf",
        s(&collatz),
        "--pcs",
        s(&d.join("wrong.pcs")),
    ]);
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("its code differs from what ran"))
        .unwrap_or_else(|| panic!("{err}"));
    let listed: Vec<u64> = line
        .split(" in context")
        .nth(1)
        .and_then(|t| t.split(" at ").next())
        .map(|t| {
            t.trim_start_matches('s')
                .split(',')
                .map(|c| c.trim().parse().unwrap())
                .collect()
        })
        .unwrap_or_else(|| panic!("{line}"));
    assert!(!listed.is_empty() && !listed.contains(&c), "{line}");
    assert!(listed.iter().all(|x| user.contains_key(x)), "{line}");
}

#[test]
fn debian_kernel_runs_a_shell_under_the_builtin_sbi() {
    if let Some(b) = boot_to_shell(&["--sbi"], 1, SHELL_COMMANDS) {
        check_shell(&b, 1);
    }
}

/// The same under OpenSBI 1.5.1's `fw_jump.bin`.
#[test]
fn debian_kernel_runs_a_shell_under_opensbi_fw_jump() {
    let Some(fw) = fw_jump() else { return };
    if let Some(b) = boot_to_shell(&["--bios", s(&fw)], 1, SHELL_COMMANDS) {
        check_shell(&b, 1);
    }
}

/// Four harts under the built-in SBI: the kernel starts the others through SBI HSM, says so,
/// and `/proc/cpuinfo` lists all four.
#[test]
fn debian_kernel_runs_a_shell_on_four_harts_under_the_builtin_sbi() {
    if let Some(b) = boot_to_shell(&["--sbi"], 4, SHELL_COMMANDS) {
        check_shell(&b, 4);
    }
}

/// Four harts under OpenSBI 1.5.1's `fw_jump.bin` (its own multi-hart boot: the other harts
/// wait in the firmware until the kernel starts them through its HSM).
#[test]
fn debian_kernel_runs_a_shell_on_four_harts_under_opensbi_fw_jump() {
    let Some(fw) = fw_jump() else { return };
    if let Some(b) = boot_to_shell(&["--bios", s(&fw)], 4, SHELL_COMMANDS) {
        check_shell(&b, 4);
    }
}

/// The nodes QEMU's `virt` and the model share (`/chosen`, the memory, and the devices the model
/// has: the 16550, the PLIC, the CLINT, the test finisher, the goldfish RTC, the PCIe host),
/// property by property, from `dtc`'s source form.
fn shared_nodes(dtb: &Path) -> Vec<String> {
    const NODES: [&str; 8] = [
        "chosen",
        "memory@80000000",
        "serial@10000000",
        "plic@c000000",
        "clint@2000000",
        "test@100000",
        "rtc@101000",
        "pci@30000000",
    ];
    let o = Command::new("dtc")
        .args(["-I", "dtb", "-O", "dts", s(dtb)])
        .output()
        .unwrap();
    let dts = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut keep = Vec::new();
    let mut node = String::new();
    for l in dts.lines().map(str::trim) {
        if let Some(n) = l.strip_suffix(" {") {
            node = n.to_string();
        } else if NODES.contains(&node.as_str()) {
            if l.starts_with("rng-seed") {
                // Random on QEMU: only its size (8 cells, 32 bytes) is compared.
                keep.push(format!(
                    "{node}: rng-seed cells {}",
                    l.split_whitespace().count() - 2
                ));
            } else if !l.is_empty() && l != "};" {
                keep.push(format!("{node}: {l}"));
            }
        }
    }
    // Node by node (the nodes' order differs: QEMU adds its memory node later, and has more
    // devices between them), each node's properties in the blob's order.
    keep.sort_by(|a, b| a.split(':').next().cmp(&b.split(':').next()));
    keep
}

/// The kernel Image and initrd where QEMU 7.2 puts them, for two RAM sizes: `/chosen`
/// (`linux,initrd-*`, `rng-seed`'s size, `bootargs`, `stdout-path`, in QEMU's order), the
/// memory node and the device nodes (the 16550 on PLIC source 10, the PLIC's contexts) equal to
/// QEMU's `dumpdtb`, and the kernel where QEMU loads it (its first
/// instruction retired at 0x80200000 behind OpenSBI, and under `--sbi`).
#[test]
fn image_initrd_and_memory_are_placed_as_qemu_places_them() {
    let Some(k) = kernel() else { return };
    if Command::new("dtc").arg("--version").output().is_err() {
        eprintln!("note: dtc absent (scripts/setup.sh installs device-tree-compiler); skipped");
        return;
    }
    let d = tmpdir("place");
    let rd = d.join("rd.bin");
    std::fs::write(&rd, vec![0x5a; 1000]).unwrap();
    let append = "console=ttyS0 rdinit=/init";
    for mem in ["128M", "256M"] {
        let ours = d.join(format!("ours-{mem}.dtb"));
        let o = rvtrace(&[
            "run",
            "--sbi",
            s(&k),
            "--initrd",
            s(&rd),
            "--bootargs",
            append,
            "--memory",
            mem,
            "--dump-dtb",
            s(&ours),
        ]);
        assert!(o.status.success() && ours.is_file(), "{}", stderr(&o));
        let qemu = d.join(format!("qemu-{mem}.dtb"));
        let q = Command::new("qemu-system-riscv64")
            .args(["-M", "virt", "-m", mem, "-nographic", "-machine"])
            .arg(format!("dumpdtb={}", s(&qemu)))
            .args(["-kernel", s(&k), "-initrd", s(&rd), "-append", append])
            .output();
        if q.is_err() || !qemu.is_file() {
            eprintln!("note: qemu-system-riscv64 (7.2) absent; skipped");
            return;
        }
        let nodes = shared_nodes(&ours);
        assert_eq!(nodes.len(), 42, "{nodes:#?}");
        assert_eq!(nodes, shared_nodes(&qemu), "--memory {mem}");
    }
    // The kernel's first instruction, under --sbi where it is behind OpenSBI.
    let o = rvtrace(&["run", "--sbi", s(&k), "--max-insns", "1", "--pcs", "-"]);
    assert_eq!(stdout(&o), "0x80200000\n", "{}", stderr(&o));
}

/// The machine options' errors: 1 to 8 harts, RAM sizes as QEMU's `-m` within bounds,
/// the machine options only with a boot mode, an initrd that does not fit in RAM.
#[test]
fn machine_options_are_checked() {
    let hello =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/boot/sbi_hello-rv64gc.elf");
    let usage = |args: &[&str], what: &str| {
        let o = rvtrace(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    };
    usage(
        &["run", "--sbi", s(&hello), "--harts", "9"],
        "9 is not in 1..=8",
    );
    usage(
        &["run", "--sbi", s(&hello), "--memory", "8M"],
        "RAM is 16M to 64G",
    );
    usage(
        &["run", "--sbi", s(&hello), "--memory", "12X"],
        "a size is a number of MiB",
    );
    usage(
        &["run", s(&hello), "--initrd", s(&hello)],
        "--initrd needs --sbi or --bios",
    );
    usage(
        &["run", s(&hello), "--memory", "256"],
        "--memory needs --sbi or --bios",
    );
    usage(
        &["run", "--sbi", s(&hello), "--memory", "1024K"],
        "RAM is 16M to 64G",
    );
    // 256 (MiB) and 1G as QEMU's -m reads them: the memory node says so.
    let d = tmpdir("mem");
    for (m, reg) in [("256", "0x10000000"), ("1G", "0x40000000")] {
        let dtb = d.join("m.dtb");
        let o = rvtrace(&[
            "run",
            "--sbi",
            s(&hello),
            "--memory",
            m,
            "--dump-dtb",
            s(&dtb),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let blob = std::fs::read(&dtb).unwrap();
        let want = u32::from_str_radix(&reg[2..], 16).unwrap().to_be_bytes();
        // reg = <0 0x80000000 0 SIZE>: the size's low cell follows 0x80000000 and a zero cell.
        let at = blob
            .windows(12)
            .position(|w| w[..4] == [0x80, 0, 0, 0] && w[4..8] == [0; 4] && w[8..] == want);
        assert!(at.is_some(), "--memory {m}: no memory node of {reg}");
    }
    // An initrd larger than the RAM above its place.
    let big = d.join("big.img");
    std::fs::write(&big, vec![0u8; 65 << 20]).unwrap();
    let o = rvtrace(&["run", "--sbi", s(&hello), "--initrd", s(&big)]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("the initrd"), "{}", stderr(&o));
}
