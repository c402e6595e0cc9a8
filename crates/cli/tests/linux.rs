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

/// An initramfs: `/dev/console`, busybox-static as `/bin/busybox`, and `/init`, a shell script
/// that prints [`MARKER`], reads lines of console input until one is `hello` or none comes
/// for 1 s of the model's time (which jumps while the kernel idles), prints the last as
/// `input: LINE`, and powers off at once (`poweroff -f`: the kernel's power-off, SBI SRST or
/// the syscon-poweroff of the test finisher).
fn initramfs(dir: &Path) -> Option<PathBuf> {
    initramfs_with(
        dir,
        "while read -t 1 line; do case \"$line\" in hello) break;; esac; done\n\
         /bin/busybox echo \"input: $line\"\n",
    )
}

/// An initramfs whose `/init` prints [`MARKER`], runs `script` (with `/proc` mounted) and
/// powers off at once.
fn initramfs_with(dir: &Path, script: &str) -> Option<PathBuf> {
    let busybox = std::fs::read(tool("debian-riscv64/usr/bin/busybox")?).ok()?;
    let init = format!(
        "#!/bin/busybox sh\n/bin/busybox echo '{MARKER}'\n\
         /bin/busybox mount -t proc proc /proc\n{script}/bin/busybox poweroff -f\n"
    );
    let mut c = Cpio::new();
    c.dir("dev")
        .char_dev("dev/console", 5, 1)
        .dir("proc")
        .dir("bin")
        .file("bin/busybox", 0o755, &busybox)
        .file("init", 0o755, init.as_bytes());
    let p = dir.join("initramfs.cpio");
    std::fs::write(&p, c.finish()).unwrap();
    Some(p)
}

/// Boot the kernel with the initramfs under `mode` (`--sbi`, or `--bios FW`), `input` piped
/// into rvtrace, and check the marker and the line `/init` printed for its input (`want`);
/// prints the instructions, seconds and speed.
fn boot(what: &str, mode: &[&str], input: &str, want: &str) {
    let (Some(k), d) = (kernel(), tmpdir("boot")) else {
        return;
    };
    let Some(rd) = initramfs(&d) else { return };
    let mut args = vec!["run"];
    args.extend(mode);
    args.extend([
        s(&k),
        "--initrd",
        s(&rd),
        "--bootargs",
        "console=ttyS0",
        "--stats",
    ]);
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let (out, err) = (stdout(&o), stderr(&o));
    // The tty turns "\n" into "\r\n".
    let has = |want: &str| out.lines().any(|l| l.trim_end_matches('\r') == want);
    assert!(
        has(MARKER) && has(want),
        "{what}: no marker or no {want:?}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    );
    assert!(out.contains("reboot: Power down"), "{what}: {out}");
    assert!(o.status.success(), "{what}: {:?}\n{err}", o.status);
    // --stats: "rvtrace: stopped by ... after N instructions in S s (M MIPS)".
    let stats = err.lines().find(|l| l.contains(" MIPS)")).unwrap_or("?");
    eprintln!("{what}: booted to user space and powered off in {secs:.1} s; {stats}");
}

/// Issue 32 item 7, CI-sized windows: the first 3 M instructions of Debian's kernel under
/// `--sbi` (its early boot at physical addresses, then `start_kernel` at virtual ones), the
/// ingress encoded in both protocols and decoded with the run's `--code-snapshot` alone (the
/// kernel's code at its physical and, through the page table at the end, its virtual
/// addresses, as memory held it): each decode gives the run's PCs, most of them kernel
/// virtual addresses; and the window of instructions 20 M to 21 M (`--trace-from`) likewise.
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

#[test]
#[ignore = "1.1 G instructions, 50-90 s in the test profile (over the CI budget's 60 s); run with --ignored"]
fn debian_kernel_boots_to_user_space_under_the_builtin_sbi() {
    // The built-in SBI's console owns stdin: the UART receives nothing.
    boot("--sbi", &["--sbi"], "hello\n", "input: ");
}

#[test]
#[ignore = "1.1 G instructions, 80-120 s in the test profile (over the CI budget's 60 s); run with --ignored"]
fn debian_kernel_boots_to_user_space_under_opensbi_fw_jump() {
    let Some(fw) = tool("opensbi/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin") else {
        return;
    };
    // The UART receives the pipe: what the console's set-up reads and drops (its FIFO resets,
    // as on QEMU) falls in the padding; the rest reaches the shell through the received-data
    // interrupt.
    let input = format!("{}hello\n", "padding\n".repeat(32));
    boot(
        "--bios fw_jump.bin",
        &["--bios", s(&fw)],
        &input,
        "input: hello",
    );
}

/// Two harts under the built-in SBI: the kernel starts the second through SBI HSM, says so
/// ("smp: Brought up 1 node, 2 CPUs"), and `/proc/cpuinfo` lists both; prints the instructions
/// and seconds.
#[test]
#[ignore = "1.22 G instructions, about 30 s of CPU in the release build, several times that in the test profile; run with --ignored"]
fn debian_kernel_boots_on_two_harts_under_the_builtin_sbi() {
    let (Some(k), d) = (kernel(), tmpdir("smp2")) else {
        return;
    };
    let script = "/bin/busybox grep -E '^(processor|hart)' /proc/cpuinfo\n";
    let Some(rd) = initramfs_with(&d, script) else {
        return;
    };
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(["run", "--sbi", "--harts", "2", s(&k), "--initrd", s(&rd)])
        .args(["--bootargs", "console=ttyS0", "--stats"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{:?}\n{err}", o.status);
    let lines: Vec<&str> = out.lines().map(|l| l.trim_end_matches('\r')).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("smp: Brought up 1 node, 2 CPUs")),
        "{out}"
    );
    assert!(lines.contains(&MARKER), "{out}");
    let harts: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("hart\t"))
        .collect();
    assert_eq!(harts, ["hart\t\t: 0", "hart\t\t: 1"], "{out}");
    let stats = err.lines().find(|l| l.contains(" MIPS)")).unwrap_or("?");
    eprintln!(
        "--sbi --harts 2: user space and power-off in {:.1} s; {stats}",
        t.elapsed().as_secs_f64()
    );
}

/// The nodes QEMU's `virt` and the model share (`/chosen`, the memory, and the devices the model
/// has: the 16550, the PLIC, the CLINT, the test finisher), property by property, from `dtc`'s
/// source form.
fn shared_nodes(dtb: &Path) -> Vec<String> {
    const NODES: [&str; 6] = [
        "chosen",
        "memory@80000000",
        "serial@10000000",
        "plic@c000000",
        "clint@2000000",
        "test@100000",
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
        assert_eq!(nodes.len(), 26, "{nodes:#?}");
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
