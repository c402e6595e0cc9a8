//! The tiny S-mode kernel (`programs/src/kernel`, Sv39 on rv64gc and Sv32 on rv32imac) traced
//! end to end with its address-space IDs as the trace context:
//!
//! 1. `rvtrace run elf/kernel-ARCH.elf --context asid --ingress ING --pcs PCS`: the ingress
//!    records carry virtual addresses (the user programs run at 0x10000.. and 0x20000..) and
//!    `context` = `satp.ASID`; the context changes 0 -> 1 -> 2 -> 1 -> 0 (process A, B, A again,
//!    the kernel's final `satp` = 0), each reported (`ctype` 2) by the instruction right after a
//!    `csrw satp` (checked on the instruction's encoding in the ELF), and both U and S
//!    privileges occur.
//! 2. N-Trace (`encode ntrace --ownership`) and E-Trace (`encode etrace`, with a static
//!    configuration that keeps a 16-bit context in the packets) decoded with the ELF: the PC
//!    list equals the run's, the flow's context values change in the same order, and each
//!    change sits where the protocol can put it: E-Trace (precise, a synchronisation at the
//!    first instruction in the new context) exactly before that instruction; N-Trace (an
//!    Ownership message, which carries no address: N-Trace 7.1) before the range that holds the
//!    `csrw satp`. The N-Trace flow also shows the U<->S privilege changes (FORMAT 0 Ownership
//!    messages).
//! 3. `rvtrace profile` of the N-Trace trace names the user programs' functions (symbols at
//!    their virtual addresses) with the calls the programs make.

use crate::common;

use common::{rvtrace, tmpdir};
use std::path::{Path, PathBuf};

fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs")
}

fn ok(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Where each context value starts in a decoded flow (`--flow` text): `(instructions before
/// the element, instructions before the next `context` element of any kind (or the end),
/// context)` for every `context` element whose value differs from the previous one.
fn flow_contexts(flow: &str) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut done = 0u64;
    let mut last: Option<u64> = None;
    let mut open = false; // the last change waits for its next context element
    for line in flow.lines() {
        if let Some(rest) = line.strip_prefix("range ") {
            let n: u64 = rest
                .rsplit_once('(')
                .and_then(|(_, t)| t.split_whitespace().next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("range line {line:?}"));
            done += n;
        } else if let Some(rest) = line.strip_prefix("context ") {
            if std::mem::take(&mut open) {
                out.last_mut().unwrap().1 = done;
            }
            let c = rest
                .split_whitespace()
                .find_map(|f| f.strip_prefix("context="))
                .unwrap_or_else(|| panic!("context line {line:?}"));
            if c == "?" {
                continue;
            }
            let c = u64::from_str_radix(c.trim_start_matches("0x"), 16).unwrap();
            if last != Some(c) {
                last = Some(c);
                out.push((done, u64::MAX, c));
                open = true;
            }
        }
    }
    if open {
        out.last_mut().unwrap().1 = done;
    }
    out
}

/// The privileges named by the flow's `context` elements.
fn flow_privileges(flow: &str) -> Vec<String> {
    let mut v: Vec<String> = flow
        .lines()
        .filter_map(|l| l.strip_prefix("context priv="))
        .filter_map(|r| r.split_whitespace().next())
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn kernel_trace(arch: &str) {
    let d = tmpdir(&format!("kernel-{arch}"));
    let elf = programs_dir().join(format!("elf/kernel-{arch}.elf"));
    let e = elf.to_str().unwrap();
    let ing = d.join("k.ing");
    let pcs = d.join("run.pcs");
    let o = rvtrace(&[
        "run",
        e,
        "--context",
        "asid",
        "--ingress",
        ing.to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    ok(&o, "rvtrace run");
    let run_pcs = std::fs::read(&pcs).unwrap();

    // 1. The ingress: context changes at the instruction after each `csrw satp`.
    let (header, recs) =
        rvtrace_ingress::binary::from_slice(&std::fs::read(&ing).unwrap()).expect("ingress file");
    assert!(
        header.has_context,
        "the ingress header must say context is driven"
    );
    let mut image = rvtrace_image::Image::new();
    image.load_file(&elf).unwrap();
    let mut idx = 0u64; // retired instructions so far
    let mut prev: Option<u64> = None;
    let mut changes = Vec::new(); // (retired index, context)
    let mut privs = std::collections::BTreeSet::new();
    let mut user_pcs = 0u64;
    for r in &recs {
        if r.iretire == 0 {
            continue;
        }
        privs.insert(r.priv_);
        if r.priv_ == 0 {
            assert!(
                r.iaddr < 0x3_0000,
                "U-mode instruction at {:#x}: not a user virtual address",
                r.iaddr
            );
            user_pcs += 1;
        }
        if r.ctype != 0 {
            assert_eq!(r.ctype, 2, "ctype at {:#x}", r.iaddr);
            let p = prev.expect("a context change before any instruction");
            let mut b = [0u8; 4];
            assert!(image.read(p, &mut b), "no code at {p:#x}");
            let bits = u32::from_le_bytes(b);
            // csrrw (SYSTEM opcode, funct3 1) with csr = satp (0x180): privileged ISA encoding.
            assert!(
                bits & 0x7f == 0x73 && (bits >> 12) & 7 == 1 && bits >> 20 == 0x180,
                "the instruction before the context change at {:#x} is {bits:#010x} at {p:#x}, not csrw satp",
                r.iaddr
            );
            changes.push((idx, r.context));
        }
        prev = Some(r.iaddr);
        idx += 1; // one instruction per record (single retirement)
    }
    let n_run = run_pcs
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .count() as u64;
    assert_eq!(idx, n_run, "one retiring record per retired instruction");
    let at: Vec<u64> = changes.iter().map(|c| c.0).collect();
    let ctx: Vec<u64> = changes.iter().map(|c| c.1).collect();
    assert_eq!(ctx, [1, 2, 1, 0], "context (ASID) changes");
    assert!(
        privs.contains(&0) && privs.contains(&1),
        "privileges {privs:?}"
    );
    assert!(user_pcs > 1000, "{user_pcs} U-mode instructions");

    // 2. N-Trace and E-Trace, decoded.
    let scf = d.join("ctx.scf");
    std::fs::write(&scf, "nocontext_p=0\ncontext_width_p=16\n").unwrap();
    for (proto, extra) in [
        ("ntrace", vec!["--ownership"]),
        ("etrace", vec!["--scf", scf.to_str().unwrap()]),
    ] {
        let bin = d.join(format!("k.{proto}"));
        let mut args = vec![
            "encode",
            proto,
            ing.to_str().unwrap(),
            "-o",
            bin.to_str().unwrap(),
        ];
        args.extend(extra);
        ok(&rvtrace(&args), &format!("encode {proto}"));
        let dpcs = d.join(format!("{proto}.pcs"));
        let flow = d.join(format!("{proto}.flow"));
        let o = rvtrace(&[
            "decode",
            proto,
            bin.to_str().unwrap(),
            "--elf",
            e,
            "--pcs",
            dpcs.to_str().unwrap(),
            "--flow",
            flow.to_str().unwrap(),
        ]);
        ok(&o, &format!("decode {proto}"));
        assert!(
            std::fs::read(&dpcs).unwrap() == run_pcs,
            "{proto}: decoded PCs differ from the run's"
        );
        let flow = std::fs::read_to_string(&flow).unwrap();
        let got = flow_contexts(&flow);
        let values: Vec<u64> = got.iter().map(|g| g.2).collect();
        assert_eq!(
            values,
            [0, 1, 2, 1, 0],
            "{proto}: context values in the flow"
        );
        for (k, &(before, until, c)) in got[1..].iter().enumerate() {
            // The first instruction in the new context.
            let change = at[k];
            if proto == "etrace" {
                // ctype 2: a synchronisation at that instruction (payload.adoc, format 3).
                assert_eq!(
                    before, change,
                    "{proto}: context {c:#x} reported after {before} instructions, the change is at {change}"
                );
            } else {
                // An Ownership message has no address (N-Trace 7.1): it comes before the
                // message that reports the csrw satp (instruction change - 1), here the
                // sret into U, whose privilege change is the next context element.
                assert!(
                    before < change && change <= until,
                    "{proto}: context {c:#x} reported after {before} instructions (next context element after {until}), the csrw satp is instruction {}",
                    change - 1
                );
            }
        }
        if proto == "ntrace" {
            let p = flow_privileges(&flow);
            assert!(
                p.iter().any(|x| x == "U") && p.iter().any(|x| x == "S"),
                "{proto}: privileges in the flow {p:?}"
            );
        }
    }

    // 3. The profile names the user functions (at virtual addresses).
    let o = rvtrace(&[
        "profile",
        "--trace",
        "ntrace",
        d.join("k.ntrace").to_str().unwrap(),
        "--elf",
        e,
        "--top",
        "1000",
    ]);
    ok(&o, "profile");
    let text = String::from_utf8_lossy(&o.stdout);
    for f in ["user_a_main", "collatz", "user_b_main", "fib"] {
        assert!(
            text.lines().any(|l| l.split_whitespace().last() == Some(f)),
            "profile: no line for {f}:\n{text}"
        );
    }
    for edge in ["fib -> fib", "user_b_main -> fib", "user_a_main -> collatz"] {
        assert!(text.contains(edge), "profile: no call {edge}:\n{text}");
    }
}

#[test]
fn kernel_rv64gc() {
    kernel_trace("rv64gc");
}

#[test]
fn kernel_rv32imac() {
    kernel_trace("rv32imac");
}

/// `--context` without an ingress output is a usage error (nothing would carry the context).
#[test]
fn context_needs_an_ingress_output() {
    let elf = programs_dir().join("elf/kernel-rv64gc.elf");
    let o = rvtrace(&["run", elf.to_str().unwrap(), "--context", "asid"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--context"));
}

/// Runs the system of `programs/system` (the kernel, its two user programs loaded beside it,
/// the ASID as the trace context) in `d`: its ingress file and its PC list. Checks the
/// programs' own output.
fn run_system(d: &Path) -> (PathBuf, Vec<u8>) {
    let sys = programs_dir().join("system");
    let path = |n: &str| sys.join(n).to_str().unwrap().to_string();
    let (ing, pcs) = (d.join("s.ing"), d.join("run.pcs"));
    let o = rvtrace(&[
        "run",
        &path("kernel-rv64gc.elf"),
        "--load",
        &path("user_a-rv64gc.elf"),
        "--load",
        &path("user_b-rv64gc.elf"),
        "--context",
        "asid",
        "--ingress",
        ing.to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    ok(&o, "rvtrace run");
    let out = String::from_utf8_lossy(&o.stdout);
    for line in [
        "[A asid 1] collatz steps 1..40: 709",
        "[B asid 2] hello from B: fib(15) = 610",
        "kernel: ok",
    ] {
        assert!(out.contains(line), "run output lacks {line:?}:\n{out}");
    }
    (ing, std::fs::read(&pcs).unwrap())
}

/// The tiny kernel as a small system (`programs/system`, issue 31): the kernel ELF and its two
/// user programs as ELF files of their own, both linked at 0x10000 (different code there) and
/// told apart by their ASID. `run --load` places them by physical address; N-Trace (Ownership
/// with the ASID as context) and E-Trace (format 3 with a 16-bit context) decode to exactly the
/// run's PCs when each program is given as `--image FILE,priv=u,ctx=ASID`, on one thread and
/// when more are asked for; without the scopes the two programs cannot be one image, and with
/// the kernel alone the user code is missing.
#[test]
fn system_address_spaces() {
    let d = tmpdir("system-spaces");
    let sys = programs_dir().join("system");
    let path = |n: &str| sys.join(n).to_str().unwrap().to_string();
    let (kernel, ua, ub) = (
        path("kernel-rv64gc.elf"),
        path("user_a-rv64gc.elf"),
        path("user_b-rv64gc.elf"),
    );
    // Same virtual address, different code.
    let code_at = |f: &str| {
        let mut im = rvtrace_image::Image::new();
        im.load_file(Path::new(f)).unwrap();
        let mut b = [0u8; 64];
        assert!(im.read(0x10000, &mut b), "{f}: no code at 0x10000");
        b
    };
    assert_ne!(code_at(&ua), code_at(&ub));

    let (ing, run_pcs) = run_system(&d);

    let scf = d.join("ctx.scf");
    std::fs::write(&scf, "nocontext_p=0\ncontext_width_p=16\n").unwrap();
    let a_img = format!("{ua},priv=u,ctx=1");
    let b_img = format!("{ub},priv=u,ctx=2");
    for (proto, extra) in [
        ("ntrace", vec!["--ownership"]),
        ("etrace", vec!["--scf", scf.to_str().unwrap()]),
    ] {
        let bin = d.join(format!("s.{proto}"));
        let mut args = vec![
            "encode",
            proto,
            ing.to_str().unwrap(),
            "-o",
            bin.to_str().unwrap(),
        ];
        args.extend(extra);
        ok(&rvtrace(&args), &format!("encode {proto}"));
        let b = bin.to_str().unwrap();
        for jobs in ["1", "2"] {
            let dpcs = d.join(format!("{proto}-{jobs}.pcs"));
            let o = rvtrace(&[
                "decode",
                proto,
                b,
                "--elf",
                &kernel,
                "--image",
                &a_img,
                "--image",
                &b_img,
                "--jobs",
                jobs,
                "--pcs",
                dpcs.to_str().unwrap(),
            ]);
            ok(&o, &format!("decode {proto} --jobs {jobs}"));
            assert!(
                std::fs::read(&dpcs).unwrap() == run_pcs,
                "{proto} --jobs {jobs}: decoded PCs differ from the run's"
            );
        }
        // The flow names each process's functions with its own symbols (both at 0x10000..):
        // every range in user_a's collatz is in context 1, every one in user_b's fib in 2.
        let flow = d.join(format!("{proto}.flow"));
        let o = rvtrace(&[
            "decode",
            proto,
            b,
            "--elf",
            &kernel,
            "--image",
            &a_img,
            "--image",
            &b_img,
            "--flow",
            flow.to_str().unwrap(),
        ]);
        ok(&o, &format!("decode {proto} --flow"));
        let flow = std::fs::read_to_string(&flow).unwrap();
        let mut ctx = None;
        let mut seen = (0, 0);
        for line in flow.lines() {
            if let Some(c) = line
                .strip_prefix("context ")
                .and_then(|r| r.split("context=").nth(1))
            {
                if c != "?" {
                    ctx = Some(c.to_string());
                }
            } else if line.starts_with("range ") {
                if line.contains("<collatz") {
                    assert_eq!(ctx.as_deref(), Some("0x1"), "{proto}: {line}");
                    seen.0 += 1;
                }
                if line.contains("<fib") {
                    assert_eq!(ctx.as_deref(), Some("0x2"), "{proto}: {line}");
                    seen.1 += 1;
                }
            }
        }
        assert!(
            seen.0 > 10 && seen.1 > 10,
            "{proto}: collatz and fib ranges {seen:?}"
        );
        // Both programs everywhere: they overlap, an error naming both files.
        let o = rvtrace(&[
            "decode", proto, b, "--elf", &kernel, "--image", &ua, "--image", &ub,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("user_a") && err.contains("user_b"),
            "{proto}: overlapping images: {}\n{err}",
            o.status
        );
        // The kernel alone: the user code is missing (a loss, not a quiet wrong answer).
        let o = rvtrace(&["decode", proto, b, "--elf", &kernel]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("0x10000"), "{proto}: kernel alone:\n{err}");
    }
    // A trace of several harts (here hart 1 of 4: SRC bits 2): --all-harts decodes each in
    // the spaces.
    let multi = d.join("s4.ntrace");
    let o = rvtrace(&[
        "encode",
        "ntrace",
        ing.to_str().unwrap(),
        "--ownership",
        "--src-bits",
        "2",
        "--src-id",
        "1",
        "-o",
        multi.to_str().unwrap(),
    ]);
    ok(&o, "encode ntrace --src-id 1");
    let pattern = d.join("h{hart}.pcs");
    let o = rvtrace(&[
        "decode",
        multi.to_str().unwrap(),
        "--all-harts",
        "--elf",
        &kernel,
        "--image",
        &a_img,
        "--image",
        &b_img,
        "--pcs",
        pattern.to_str().unwrap(),
    ]);
    ok(&o, "decode --all-harts");
    assert!(
        std::fs::read(d.join("h1.pcs")).unwrap() == run_pcs,
        "--all-harts: hart 1's PCs differ from the run's"
    );
    // A command that reads one address space refuses the qualifiers.
    let o = rvtrace(&[
        "autofdo",
        d.join("s.ntrace").to_str().unwrap(),
        "--elf",
        &kernel,
        "--image",
        &a_img,
        "-o",
        d.join("prof.txt").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("priv= and ctx="));
    // `decode --text` names one space's code: refused, pointing to `rvtrace text`.
    let o = rvtrace(&[
        "decode",
        d.join("s.ntrace").to_str().unwrap(),
        "--elf",
        &kernel,
        "--image",
        &a_img,
        "--text",
        d.join("t.txt").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("rvtrace text"));
}

/// An ELF core file from a tool nobody here wrote: QEMU 7.2's `dump-guest-memory` of the `virt`
/// machine with a test program loaded (paused before its first instruction: the reset ROM and
/// the program in RAM, PT_LOAD segments without flags). `decode --image CORE` alone (no ELF)
/// decodes rvtrace's run of the same program, in both protocols, to exactly the run's PCs.
#[test]
fn qemu_core_dump_is_an_image() {
    let elf = programs_dir().join("elf/loops-rv64gc.elf");
    let d = tmpdir("qemu-core");
    let core = d.join("guest.core");
    let qemu = std::process::Command::new("qemu-system-riscv64")
        .args([
            "-M",
            "virt",
            "-bios",
            "none",
            "-nographic",
            "-S",
            "-serial",
            "none",
        ])
        .args(["-display", "none", "-monitor", "stdio", "-kernel"])
        .arg(&elf)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut qemu) = qemu else {
        eprintln!("note: qemu-system-riscv64 absent (scripts/setup.sh installs it); skipped");
        return;
    };
    {
        use std::io::Write;
        let mut stdin = qemu.stdin.take().unwrap();
        // The monitor runs its commands in order: the dump is written before quit.
        writeln!(stdin, "dump-guest-memory {}", core.display()).unwrap();
        writeln!(stdin, "quit").unwrap();
    }
    let out = qemu.wait_with_output().unwrap();
    assert!(
        core.is_file(),
        "QEMU wrote no core: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (ing, pcs) = (d.join("l.ing"), d.join("run.pcs"));
    let o = rvtrace(&[
        "run",
        elf.to_str().unwrap(),
        "--ingress",
        ing.to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    ok(&o, "rvtrace run");
    let run_pcs = std::fs::read(&pcs).unwrap();
    for proto in ["ntrace", "etrace"] {
        let bin = d.join(format!("l.{proto}"));
        let o = rvtrace(&[
            "encode",
            proto,
            ing.to_str().unwrap(),
            "-o",
            bin.to_str().unwrap(),
        ]);
        ok(&o, &format!("encode {proto}"));
        let dpcs = d.join(format!("{proto}.pcs"));
        let o = rvtrace(&[
            "decode",
            bin.to_str().unwrap(),
            "--image",
            core.to_str().unwrap(),
            "--pcs",
            dpcs.to_str().unwrap(),
        ]);
        ok(&o, &format!("decode {proto} --image CORE"));
        assert!(
            std::fs::read(&dpcs).unwrap() == run_pcs,
            "{proto}: PCs decoded with QEMU's core differ from the run's"
        );
    }
}

/// A kernel's symbol list (`kallsyms:FILE[@OFFSET]`: /proc/kallsyms and System.map are `nm -n`'s
/// format, which binutils writes) names code that has no symbols of its own: a run's code
/// snapshot with the program's `nm -n` list decodes to the same `--flow` text, symbols and all,
/// as the program's ELF; the list moved down by 16 MiB and given back with `@0x1000000` (a
/// System.map and its KASLR offset) gives it too.
#[test]
fn kallsyms_name_code_without_symbols() {
    let elf = programs_dir().join("elf/loops-rv64gc.elf");
    let e = elf.to_str().unwrap();
    let Ok(nm) = std::process::Command::new("riscv64-unknown-elf-nm")
        .args(["-n", e])
        .output()
    else {
        eprintln!("note: riscv64-unknown-elf-nm absent (scripts/setup.sh installs binutils-riscv64-unknown-elf); skipped");
        return;
    };
    assert!(nm.status.success());
    let d = tmpdir("kallsyms");
    let (ing, code, te) = (d.join("l.ing"), d.join("code.elf"), d.join("l.te"));
    let o = rvtrace(&[
        "run",
        e,
        "--ingress",
        ing.to_str().unwrap(),
        "--code-snapshot",
        code.to_str().unwrap(),
    ]);
    ok(&o, "rvtrace run");
    ok(
        &rvtrace(&[
            "encode",
            "etrace",
            ing.to_str().unwrap(),
            "-o",
            te.to_str().unwrap(),
        ]),
        "encode",
    );
    let map = d.join("System.map");
    std::fs::write(&map, &nm.stdout).unwrap();
    let shifted = d.join("System.map.shifted");
    let text = String::from_utf8(nm.stdout).unwrap();
    let moved: String = text
        .lines()
        .map(|l| {
            let (a, rest) = l.split_once(' ').unwrap();
            let a = u64::from_str_radix(a, 16).unwrap().wrapping_sub(0x100_0000);
            format!("{a:016x} {rest}\n")
        })
        .collect();
    std::fs::write(&shifted, moved).unwrap();
    let flow = |name: &str, images: &[String]| {
        let out = d.join(name);
        let mut args = vec!["decode".to_string(), te.to_str().unwrap().to_string()];
        for i in images {
            args.extend(["--image".to_string(), i.clone()]);
        }
        args.extend(["--flow".to_string(), out.to_str().unwrap().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&rvtrace(&args), name);
        std::fs::read_to_string(out).unwrap()
    };
    let with_elf = flow("elf.flow", &[e.to_string()]);
    assert!(
        with_elf.contains("<main>"),
        "{}",
        &with_elf[..200.min(with_elf.len())]
    );
    let c = code.to_str().unwrap().to_string();
    let names = flow(
        "map.flow",
        &[c.clone(), format!("kallsyms:{}", map.display())],
    );
    assert_eq!(
        names, with_elf,
        "kallsyms names the snapshot's code as the ELF does"
    );
    let moved = flow(
        "moved.flow",
        &[
            c.clone(),
            format!("kallsyms:{}@0x1000000", shifted.display()),
        ],
    );
    assert_eq!(moved, with_elf, "a System.map with its KASLR offset");
    let none = flow("none.flow", &[c]);
    assert!(!none.contains("<main>"), "the snapshot alone has no names");
}

/// SiFive's decoder settings for a Linux capture (`map = PID,FILE`, `kmempath`, as in
/// sifive/trace-decoder-tests' linux-* captures) decode the system's N-Trace with Ownership
/// (context = ASID) to the run's PCs: each process's `/proc/PID/maps`-format file names its ELF
/// (found by name beside the settings file), the kernel's code comes as 4 KiB page files
/// `kmem.0xADDR` each holding 2 bytes of the next page (as SiFive's do).
#[test]
fn sifive_settings_with_maps_and_kernel_pages() {
    let d = tmpdir("sifive-linux");
    let sys = programs_dir().join("system");
    let kernel = sys.join("kernel-rv64gc.elf");
    for u in ["user_a", "user_b"] {
        std::fs::copy(sys.join(format!("{u}-rv64gc.elf")), d.join(u)).unwrap();
    }
    let (ing, run_pcs) = run_system(&d);
    let nex = d.join("s.rtd");
    let arg = |p: &Path| p.to_str().unwrap().to_string();
    ok(
        &rvtrace(&[
            "encode",
            "ntrace",
            &arg(&ing),
            "--ownership",
            "-o",
            &arg(&nex),
        ]),
        "encode",
    );
    // The kernel's text as page files.
    let mut image = rvtrace_image::Image::new();
    image.load_file(&kernel).unwrap();
    std::fs::create_dir_all(d.join("kmem")).unwrap();
    for seg in image.segments().iter().filter(|s| s.is_executable()) {
        let mut at = seg.vaddr & !0xfff;
        while at < seg.vaddr + seg.data.len() as u64 {
            let mut page = vec![0u8; 4098];
            let n = (0..4098u64)
                .take_while(|&k| image.read(at + k, &mut page[k as usize..k as usize + 1]))
                .count();
            page.truncate(n.max(1));
            std::fs::write(d.join(format!("kmem/kmem.{at:#x}")), &page).unwrap();
            at += 0x1000;
        }
    }
    // Each process's map: its text page from the ELF's file offset 0x1000 (user.ld).
    for u in ["user_a", "user_b"] {
        std::fs::write(
            d.join(format!("{u}.map")),
            format!(
                "00010000-00011000 r-xp 00001000 b3:04 77 /home/root/{u}\n\
                 00011000-00012000 rw-p 00002000 b3:04 77 /home/root/{u}\n\
                 0001f000-00020000 rw-p 00000000 00:00 0 [stack]\n"
            ),
        )
        .unwrap();
    }
    let settings = d.join("s.settings");
    std::fs::write(
        &settings,
        "archsize = 64\nsrcbits = 0\nrtd = s.rtd\npids = 1,2\n\
         map = 1,user_a.map;2,user_b.map\nkmempath = ./kmem\n",
    )
    .unwrap();
    let dpcs = d.join("d.pcs");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .current_dir(&d)
        .args([
            "decode",
            "s.rtd",
            "--protocol",
            "ntrace",
            "--sifive-settings",
            "s.settings",
        ])
        .args(["--dialect", "standard", "--pcs", "d.pcs"])
        .output()
        .unwrap();
    ok(&o, "decode --sifive-settings");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("pids: rvtrace decodes every process"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        std::fs::read(&dpcs).unwrap() == run_pcs,
        "PCs decoded with the SiFive settings differ from the run's"
    );
}

/// One retired instruction of a run's `--ingress-text`: its address, privilege letter and
/// context (the oracle of the outputs per process).
struct Retired {
    pc: u64,
    privilege: char,
    context: Option<u64>,
}

/// The retired instructions of an ingress text (a record of `+0` bytes is a fault: nothing
/// retired).
fn retired(text: &str) -> Vec<Retired> {
    let mut v = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = l.split_whitespace();
        let pc = u64::from_str_radix(f.next().unwrap().trim_start_matches("0x"), 16).unwrap();
        let bytes = f.next().unwrap();
        if bytes.trim_start_matches('+').split('/').next() == Some("0") {
            continue;
        }
        let field = |k: &str| l.split_whitespace().find_map(|w| w.strip_prefix(k));
        v.push(Retired {
            pc,
            privilege: field("priv=").unwrap().chars().next().unwrap(),
            context: field("context=")
                .map(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).unwrap()),
        });
    }
    v
}

/// Outputs of a whole system (issue 31 item 4) on programs/system's run: `profile --by
/// process` gives the kernel and each user program (both at 0x10000, ASIDs 1 and 2) a profile
/// of its own, each with as many instructions as the run retired in that privilege and
/// context (its `--ingress-text`), and each user function (`collatz`, `fib`: ELF symbols)
/// as many as the run retired inside it; the folded stacks begin with the process. `text`
/// names every instruction with its own program's symbols and shows the source lines
/// binutils' `addr2line` gives each address; `coverage` counts each function's entries
/// (`FNDA`) as the run's PCs do; `export`'s rows carry each process's context and name, its
/// ranges and flat profile adding up to its instructions; `stats` decodes every instruction.
/// N-Trace (Ownership) and E-Trace (context).
#[test]
fn system_outputs_per_process() {
    let d = tmpdir("system-outputs");
    let sys = programs_dir().join("system");
    let path = |n: &str| sys.join(n).to_str().unwrap().to_string();
    let (kernel, ua, ub) = (
        path("kernel-rv64gc.elf"),
        path("user_a-rv64gc.elf"),
        path("user_b-rv64gc.elf"),
    );
    let (ing, txt) = (d.join("s.ing"), d.join("s.txt"));
    let o = rvtrace(&[
        "run",
        &kernel,
        "--load",
        &ua,
        "--load",
        &ub,
        "--context",
        "asid",
        "--ingress",
        ing.to_str().unwrap(),
        "--ingress-text",
        txt.to_str().unwrap(),
    ]);
    ok(&o, "rvtrace run");
    let run = retired(&std::fs::read_to_string(&txt).unwrap());
    let in_user = |r: &Retired, c: u64| r.privilege == 'U' && r.context == Some(c);
    let count = |f: &dyn Fn(&Retired) -> bool| run.iter().filter(|r| f(r)).count();
    let n_a = count(&|r| in_user(r, 1));
    let n_b = count(&|r| in_user(r, 2));
    let n_k = count(&|r| matches!(r.privilege, 'S' | 'M'));
    assert_eq!(n_a + n_b + n_k, run.len());
    assert!(n_a > 1000 && n_b > 1000, "{n_a} {n_b}");
    // The user functions' ranges from the ELF symbols.
    let sym = |f: &str, name: &str| {
        let mut im = rvtrace_image::Image::new();
        im.load_file(Path::new(f)).unwrap();
        let s = im.symbol_by_name(name).unwrap();
        (s.addr, s.addr + s.size)
    };
    let (collatz, fib) = (sym(&ua, "collatz"), sym(&ub, "fib"));
    let inside = |r: &Retired, (lo, hi): (u64, u64)| lo <= r.pc && r.pc < hi;
    let n_collatz = count(&|r| in_user(r, 1) && inside(r, collatz));
    let n_fib = count(&|r| in_user(r, 2) && inside(r, fib));
    let e_collatz = count(&|r| in_user(r, 1) && r.pc == collatz.0);
    let e_fib = count(&|r| in_user(r, 2) && r.pc == fib.0);
    assert!(n_collatz > 0 && n_fib > 0 && e_collatz > 0 && e_fib > 0);

    let scf = d.join("ctx.scf");
    std::fs::write(&scf, "nocontext_p=0\ncontext_width_p=16\n").unwrap();
    let a_img = format!("{ua},priv=u,ctx=1");
    let b_img = format!("{ub},priv=u,ctx=2");
    let images = ["--elf", &kernel, "--image", &a_img, "--image", &b_img];
    for (proto, extra) in [
        ("ntrace", vec!["--ownership"]),
        ("etrace", vec!["--scf", scf.to_str().unwrap()]),
    ] {
        let bin = d.join(format!("s.{proto}"));
        let b = bin.to_str().unwrap();
        let mut args = vec!["encode", proto, ing.to_str().unwrap(), "-o", b];
        args.extend(extra);
        ok(&rvtrace(&args), &format!("encode {proto}"));
        let with = |cmd: &str, more: &[&str]| {
            let mut a = vec![cmd, b];
            a.extend(images);
            a.extend(more);
            let o = rvtrace(&a);
            ok(&o, &format!("{proto}: {cmd} {more:?}"));
            String::from_utf8_lossy(&o.stdout).into_owned()
        };

        // `stats` decodes through the spaces too: every instruction of the run, no loss.
        let stats = with("stats", &["--json"]);
        assert!(
            stats.contains(&format!("\"instructions\":{},", run.len())),
            "{proto}: {stats}"
        );

        // Profiles per process.
        let folded = d.join(format!("{proto}.folded"));
        let report = with(
            "profile",
            &["--by", "process", "--folded", folded.to_str().unwrap()],
        );
        for (name, n) in [
            ("ctx=1 user_a-rv64gc.elf (U)", n_a),
            ("ctx=2 user_b-rv64gc.elf (U)", n_b),
            ("kernel-rv64gc.elf", n_k),
        ] {
            let head = format!("process {name}:\nflat profile: {n} instructions\n");
            assert!(report.contains(&head), "{proto}: no {head:?} in\n{report}");
        }
        let folded = std::fs::read_to_string(&folded).unwrap();
        let weight = |prefix: &str, leaf: &str| -> usize {
            folded
                .lines()
                .filter(|l| l.starts_with(prefix))
                .filter_map(|l| l.rsplit_once(' '))
                .filter(|(stack, _)| stack.ends_with(leaf))
                .map(|(_, n)| n.parse::<usize>().unwrap())
                .sum()
        };
        assert_eq!(
            weight("ctx=1 user_a-rv64gc.elf (U);", ";collatz"),
            n_collatz,
            "{proto}"
        );
        assert_eq!(
            weight("ctx=2 user_b-rv64gc.elf (U);", ";fib"),
            n_fib,
            "{proto}"
        );
        assert_eq!(weight("ctx=1 user_a-rv64gc.elf (U);", ""), n_a, "{proto}");
        assert_eq!(weight("ctx=2 user_b-rv64gc.elf (U);", ""), n_b, "{proto}");
        // One profile of everything: the same functions, apart.
        let report = with("profile", &["--top", "1000"]);
        assert!(report.contains(&format!("flat profile: {} instructions\n", run.len())));
        let self_of = |f: &str| {
            report
                .lines()
                .find(|l| l.ends_with(&format!("  {f}")))
                .and_then(|l| l.split_whitespace().next()?.parse::<usize>().ok())
        };
        assert_eq!(self_of("collatz"), Some(n_collatz), "{proto}\n{report}");
        assert_eq!(self_of("fib"), Some(n_fib), "{proto}\n{report}");

        // The Parquet tables: every flow row with the context in effect and its process;
        // each process's ranges and flat profile add up to its instructions.
        let dir = d.join(format!("{proto}.tables"));
        with("export", &["-o", dir.to_str().unwrap()]);
        let mut per: std::collections::BTreeMap<String, usize> = Default::default();
        for batch in crate::export::read(&dir.join("flow.parquet")) {
            let (kind, process) = (
                crate::export::strs(&batch, "kind"),
                crate::export::strs(&batch, "process"),
            );
            let (count, context) = (
                crate::export::u64s(&batch, "count"),
                crate::export::u64s(&batch, "context"),
            );
            for i in 0..batch.num_rows() {
                let p = process[i].clone().expect("every row has its process");
                if kind[i].as_deref() == Some("range") {
                    *per.entry(p.clone()).or_default() += count[i].unwrap() as usize;
                }
                if p.starts_with("ctx=1 ") {
                    assert_eq!(context[i], Some(1), "{proto}: row {i} of {p}");
                }
                if p.starts_with("ctx=2 ") {
                    assert_eq!(context[i], Some(2), "{proto}: row {i} of {p}");
                }
            }
        }
        let mut self_per: std::collections::BTreeMap<String, usize> = Default::default();
        for batch in crate::export::read(&dir.join("functions.parquet")) {
            let (process, n) = (
                crate::export::strs(&batch, "process"),
                crate::export::u64s(&batch, "self_insns"),
            );
            for i in 0..batch.num_rows() {
                *self_per.entry(process[i].clone().unwrap()).or_default() += n[i].unwrap() as usize;
            }
        }
        for (name, n) in [
            ("ctx=1 user_a-rv64gc.elf (U)", n_a),
            ("ctx=2 user_b-rv64gc.elf (U)", n_b),
            ("kernel-rv64gc.elf", n_k),
        ] {
            assert_eq!(per.get(name), Some(&n), "{proto}: flow ranges of {name}");
            assert_eq!(self_per.get(name), Some(&n), "{proto}: functions of {name}");
        }

        // Coverage: each function's entries.
        let lcov = d.join(format!("{proto}.info"));
        with(
            "coverage",
            &["--lcov", lcov.to_str().unwrap(), "--all-sources"],
        );
        let lcov = std::fs::read_to_string(&lcov).unwrap();
        assert!(
            lcov.contains(&format!("FNDA:{e_collatz},collatz\n")),
            "{lcov}"
        );
        assert!(lcov.contains(&format!("FNDA:{e_fib},fib\n")), "{lcov}");

        // The instruction trace: each program's names and source lines.
        let text = d.join(format!("{proto}.text"));
        with("text", &["-o", text.to_str().unwrap()]);
        let text = std::fs::read_to_string(&text).unwrap();
        let named = |f: &str| {
            text.lines()
                .filter(|l| l.contains(&format!(" <{f}")))
                .count()
        };
        assert_eq!(named("collatz"), n_collatz, "{proto}");
        assert_eq!(named("fib"), n_fib, "{proto}");
        if proto != "ntrace" {
            continue;
        }
        // The source line shown last before each user instruction, by program (the context
        // the flow reported last), against addr2line's for the address.
        let mut shown: Option<String> = None;
        let mut ctx = 0;
        let mut asked: [Vec<(u64, Option<String>)>; 2] = [Vec::new(), Vec::new()];
        for l in text.lines() {
            if let Some(src) = l.strip_prefix("  ") {
                shown = src.split_whitespace().next().map(str::to_string);
            } else if l.starts_with("context ") {
                if l.contains("context=0x1") {
                    ctx = 1;
                } else if l.contains("context=0x2") {
                    ctx = 2;
                }
            } else if let Some(a) = l.strip_prefix("0x") {
                let pc = u64::from_str_radix(a.split_whitespace().next().unwrap(), 16).unwrap();
                if pc < 0x8000_0000 && ctx > 0 {
                    asked[ctx - 1].push((pc, shown.clone()));
                }
            }
        }
        for (elf, asked) in [(&ua, &asked[0]), (&ub, &asked[1])] {
            assert!(
                asked.len() > 100,
                "{elf}: {} user instructions",
                asked.len()
            );
            let addrs: String = asked.iter().map(|(pc, _)| format!("{pc:#x}\n")).collect();
            let Some(lines) = addr2line(elf, &addrs) else {
                eprintln!("skipped: riscv64-unknown-elf-addr2line is not installed");
                return;
            };
            let mut checked = 0;
            for ((pc, shown), want) in asked.iter().zip(&lines) {
                let want = want.split(" (discriminator").next().unwrap();
                if want.starts_with("??") || want.ends_with(":0") || want.ends_with(":?") {
                    continue;
                }
                assert_eq!(shown.as_deref(), Some(want), "{elf} {pc:#x}");
                checked += 1;
            }
            assert!(checked > 100, "{elf}: {checked} lines checked");
        }
    }
}

/// binutils' `addr2line -e ELF` of the addresses in `addrs` (one a line), one line each;
/// `None` when the tool is not installed.
fn addr2line(elf: &str, addrs: &str) -> Option<Vec<String>> {
    let o = std::process::Command::new("riscv64-unknown-elf-addr2line")
        .args(["-e", elf])
        .args(addrs.lines())
        .output()
        .ok()?;
    assert!(o.status.success());
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// Runs binutils tool `tool` (`riscv64-unknown-elf-TOOL`) with `args`: its stdout, `None`
/// when it is not installed.
fn binutils(tool: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(format!("riscv64-unknown-elf-{tool}"))
        .args(args)
        .output()
        .ok()?;
    assert!(
        o.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Stripped `--image` files get their source lines from their debug files (issue 31 item 4):
/// user_a stripped with a `.gnu_debuglink` to its `strip --only-keep-debug` file, user_b
/// stripped with a build ID (a note added by objcopy, read back by `readelf -n`) and its debug
/// file at `DIR/.build-id/xx/rest.debug`: `text --debug-dir DIR` is the same as with the
/// unstripped files (whose lines `system_outputs_per_process` checks against addr2line);
/// without --debug-dir it has no line of either program.
#[test]
fn stripped_images_find_their_debug_files() {
    let d = tmpdir("system-debug-files");
    let sys = programs_dir().join("system");
    let path = |n: &str| sys.join(n).to_str().unwrap().to_string();
    let (kernel, ua, ub) = (
        path("kernel-rv64gc.elf"),
        path("user_a-rv64gc.elf"),
        path("user_b-rv64gc.elf"),
    );
    let p = |n: &str| d.join(n).to_str().unwrap().to_string();
    std::fs::create_dir_all(d.join("dbg")).unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    // A build ID note (NT_GNU_BUILD_ID = 3, owner "GNU").
    let id: Vec<u8> = (0x10..0x24).collect();
    let mut note = Vec::new();
    for w in [4u32, id.len() as u32, 3] {
        note.extend(w.to_le_bytes());
    }
    note.extend(b"GNU\0");
    note.extend(&id);
    std::fs::write(d.join("note"), &note).unwrap();
    let with_id = p("user_b-id.elf");
    let add = format!(".note.gnu.build-id={}", p("note"));
    if binutils("objcopy", &["--add-section", &add, &ub, &with_id]).is_none() {
        eprintln!("skipped: binutils-riscv64-unknown-elf is not installed");
        return;
    }
    let notes = binutils("readelf", &["-n", &with_id]).unwrap();
    let hex = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap()
        .to_string();
    assert_eq!(hex, "101112131415161718191a1b1c1d1e1f20212223");
    let by_id = d.join("dbg/.build-id").join(&hex[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    let by_id = by_id.join(format!("{}.debug", &hex[2..]));
    binutils(
        "strip",
        &["--only-keep-debug", &with_id, "-o", by_id.to_str().unwrap()],
    );
    let (sa, sb) = (p("bin/user_a-rv64gc.elf"), p("bin/user_b-rv64gc.elf"));
    binutils("strip", &["--strip-debug", &with_id, "-o", &sb]);
    let a_dbg = p("dbg/user_a.debug");
    binutils("strip", &["--only-keep-debug", &ua, "-o", &a_dbg]);
    binutils("strip", &["--strip-debug", &ua, "-o", &sa]);
    binutils("objcopy", &[&format!("--add-gnu-debuglink={a_dbg}"), &sa]);
    for f in [&sa, &sb] {
        let sections = binutils("readelf", &["-S", f]).unwrap();
        assert!(!sections.contains(".debug_line"), "{f} is not stripped");
    }

    let (ing, _) = run_system(&d);
    let t = p("s.ntrace");
    ok(
        &rvtrace(&[
            "encode",
            "ntrace",
            ing.to_str().unwrap(),
            "-o",
            &t,
            "--ownership",
        ]),
        "encode",
    );
    let text = |a: &str, b: &str, more: &[&str]| {
        let out = p("t.text");
        let (a, b) = (format!("{a},priv=u,ctx=1"), format!("{b},priv=u,ctx=2"));
        let mut args = vec![
            "text", &t, "--elf", &kernel, "--image", &a, "--image", &b, "-o", &out,
        ];
        args.extend(more);
        ok(&rvtrace(&args), &format!("text {more:?}"));
        std::fs::read_to_string(&out).unwrap()
    };
    let want = text(&ua, &ub, &[]);
    for f in ["user_a.c", "user_b.c"] {
        assert!(want.contains(&format!("kernel/{f}:")), "no line of {f}");
    }
    let got = text(&sa, &sb, &["--debug-dir", &p("dbg")]);
    assert!(
        got == want,
        "stripped images with their debug files: another text"
    );
    let bare = text(&sa, &sb, &[]);
    for f in ["user_a.c", "user_b.c"] {
        assert!(
            !bare.contains(&format!("kernel/{f}:")),
            "{f} without its debug file"
        );
    }
}
