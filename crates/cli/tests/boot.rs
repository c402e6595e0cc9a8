//! Boot modes of `rvtrace run` (`--sbi`, `--bios`) and `rvtrace dtb` (issue 11): the device
//! tree checked by `dtc`, Debian's OpenSBI booting the `programs/boot` payload, its banner
//! compared with QEMU 10 running the same firmware and payload, and the error paths.

use crate::common;
use common::{rvtrace, s, stderr, stdout, tmpdir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hello(xlen: u32) -> PathBuf {
    root().join(match xlen {
        64 => "programs/boot/sbi_hello-rv64gc.elf",
        _ => "programs/boot/sbi_hello-rv32imac.elf",
    })
}

/// OpenSBI 1.5.1 (bookworm-backports, unpacked by scripts/setup.sh) and 1.1 (bookworm's
/// `opensbi` package): `fw_*.bin` for 1.5.1 (its ELFs are position-independent, linked at 0,
/// and QEMU cannot load them either), `fw_*.elf` for 1.1.
fn firmware(version: &str, name: &str, xlen: u32) -> Option<PathBuf> {
    let p = match version {
        "1.5" => root().join(format!(
            "target/tools/opensbi/usr/lib/riscv{xlen}-linux-gnu/opensbi/generic/{name}"
        )),
        _ => PathBuf::from(format!(
            "/usr/lib/riscv{xlen}-linux-gnu/opensbi/generic/{name}"
        )),
    };
    common::installed(p)
}

/// The one error line of a tool failure.
fn fails_with(o: &std::process::Output, what: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(125), "stderr: {e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("rvtrace: error: ") && e.contains(what), "{e}");
}

#[test]
fn dtb_is_accepted_by_dtc_and_describes_the_model() {
    if Command::new("dtc").arg("--version").output().is_err() {
        eprintln!("note: dtc absent (scripts/setup.sh installs device-tree-compiler); skipped");
        return;
    }
    let d = tmpdir("dtb");
    for (isa, hpm, isa_line, cycles) in [
        (
            None,
            "4",
            "riscv,isa = \"rv64imafdc_zicntr_zicsr_zifencei_zihintpause_zihpm_zba_zbb_zbc_zbs_smcntrpmf_sscofpmf_sstc\";",
            // cycles: mcycle + mhpmcounter3..6 = 0x79; instructions: minstret + the same.
            "riscv,event-to-mhpmcounters = <0x01 0x01 0x79 0x02 0x02 0x7c 0x03 0x03 0x78",
        ),
        (
            Some("rv32imac"),
            "16",
            "riscv,isa = \"rv32imac_zicntr_zicsr_zifencei_zihintpause_zihpm\";",
            "riscv,event-to-mhpmcounters = <0x01 0x01 0x7fff9 0x02 0x02 0x7fffc",
        ),
    ] {
        let blob = d.join("virt.dtb");
        let mut args = vec!["dtb", "-o", s(&blob), "--hpm-counters", hpm];
        args.extend(isa.map(|i| ["--isa", i]).into_iter().flatten());
        args.extend(["--bootargs", "console=hvc0"]);
        let o = rvtrace(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let dts = Command::new("dtc")
            .args(["-I", "dtb", "-O", "dts", s(&blob)])
            .output()
            .unwrap();
        assert!(dts.status.success(), "{}", stderr(&dts));
        let text = stdout(&dts);
        for want in [
            isa_line,
            cycles,
            "compatible = \"riscv,pmu\";",
            "riscv,raw-event-to-mhpmcounters = <0x00 0x20001 0xffffffff 0xffffffff",
            "reg = <0x00 0x80000000 0x00 0x8000000>;",
            "compatible = \"sifive,clint0\\0riscv,clint0\";",
            "compatible = \"ns16550a\";",
            "compatible = \"sifive,test1\\0sifive,test0\\0syscon\";",
            "compatible = \"syscon-poweroff\";",
            "stdout-path = \"/soc/serial@10000000\";",
            "bootargs = \"console=hvc0\";",
            "timebase-frequency = <0x989680>;",
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
    }
}

/// An OpenSBI boot log with what legitimately differs between QEMU 10 and the model taken out:
/// the ISA extensions QEMU's CPU has beyond the model's (Zicbom, Zicboz, Svadu). The PLIC's
/// domain regions and the scratch space its driver takes are the same on both.
fn comparable(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            if let Some(ext) = l.strip_prefix("Boot HART ISA Extensions  : ") {
                let kept: Vec<&str> = ext
                    .split(',')
                    .filter(|e| !["zicbom", "zicboz", "svadu"].contains(e))
                    .collect();
                format!("Boot HART ISA Extensions  : {}", kept.join(","))
            } else {
                l.to_string()
            }
        })
        .collect()
}

#[test]
fn opensbi_boots_the_payload_as_on_qemu10() {
    for (xlen, version, name) in [
        (64, "1.5", "fw_jump.bin"),
        (64, "1.5", "fw_dynamic.bin"),
        (64, "1.1", "fw_jump.elf"),
        (64, "1.1", "fw_dynamic.elf"),
        (32, "1.5", "fw_jump.bin"),
        (32, "1.5", "fw_dynamic.bin"),
    ] {
        let qemu = rvtrace_testkit::qemu10(xlen);
        if let Err(e) = &qemu {
            eprintln!("note: {e}: the QEMU comparison is skipped");
        }
        let Some(fw) = firmware(version, name, xlen) else {
            continue;
        };
        let hello = hello(xlen);
        let o = rvtrace(&["run", "--bios", s(&fw), s(&hello)]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{name}: {}{out}", stderr(&o));
        assert!(out.contains(&format!("OpenSBI v{version}")), "{out}");
        assert!(out.contains("Platform Name             : riscv-virtio,qemu"));
        let next = if xlen == 64 {
            "0x0000000080200000"
        } else {
            "0x80400000"
        };
        assert!(
            out.contains(&format!("Domain0 Next Address      : {next}")),
            "{out}"
        );
        // OpenSBI's console writes "\r\n" for each "\n".
        assert!(out.contains("sbi_hello: S-mode payload running on hart 0\r\n"));
        assert!(out.contains("sbi_hello: a1 points at a device tree\r\n"));
        if let Ok(q) = &qemu {
            let qo = Command::new(q)
                .args(["-M", "virt", "-cpu"])
                .arg(rvtrace_testkit::qemu_cpu(
                    xlen,
                    Some("sscofpmf=true,smcntrpmf=true"),
                ))
                .args(["-nographic", "-bios", s(&fw), "-kernel", s(&hello)])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert_eq!(qo.status.code(), Some(0), "{}", stderr(&qo));
            let qt = stdout(&qo);
            let ours = comparable(&out);
            assert!(ours
                .iter()
                .any(|l| l.starts_with("Boot HART ISA Extensions  : sscofpmf")));
            assert!(
                ours.iter()
                    .filter(|l| l.starts_with("Domain0 Region"))
                    .count()
                    >= 3
            );
            assert_eq!(ours, comparable(&qt), "{name}: QEMU:\n{qt}");
        }
    }
}

/// `code` as a payload ELF at `addr`.
fn payload(dir: &Path, name: &str, addr: u64, code: &[u32]) -> PathBuf {
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let p = dir.join(name);
    std::fs::write(&p, rvtrace_testkit::minimal_elf(true, addr, &bytes)).unwrap();
    p
}

#[test]
fn boot_errors_are_one_line_and_exit_125() {
    let d = tmpdir("errors");
    let spin = payload(&d, "spin.elf", 0x8020_0000, &[0x0000_006f]); // j .
                                                                     // --sbi: never shuts down.
    let o = rvtrace(&["run", "--sbi", s(&spin), "--max-insns", "1000"]);
    fails_with(&o, "did not shut down");
    // --sbi: an all-zero word is illegal, delegated to S (as OpenSBI redirects what it cannot
    // emulate), and the payload has no handler.
    let bad = payload(&d, "bad.elf", 0x8020_0000, &[0]);
    let o = rvtrace(&["run", "--sbi", s(&bad)]);
    fails_with(
        &o,
        "illegal instruction at pc 0x80200000 (tval 0x0) after 0 instructions; its trap handler at 0x0 (stvec) is not in memory",
    );
    // A payload outside RAM.
    let io = payload(&d, "io.elf", 0x1000_0000, &[0x0000_006f]);
    let o = rvtrace(&["run", "--sbi", s(&io)]);
    fails_with(&o, "is outside RAM");
    // A payload over the device tree (2 MiB below the end of the 128 MiB of RAM).
    let dt = payload(&d, "dt.elf", 0x87e0_0010, &[0x0000_006f]);
    let o = rvtrace(&["run", "--sbi", s(&dt)]);
    fails_with(&o, "overlaps the device tree at 0x87e00000");
    // A --bios file that is not an ELF (and not a .bin).
    let text = d.join("fw.elf");
    std::fs::write(&text, "not firmware\n").unwrap();
    let o = rvtrace(&["run", "--bios", s(&text), s(&spin)]);
    fails_with(&o, "--bios");
    let o = rvtrace(&["run", "--bios", s(&d.join("absent.elf")), s(&spin)]);
    fails_with(&o, "absent.elf");
    // A payload linked over the firmware.
    let fw = payload(&d, "fw.elf2", 0x8000_0000, &[0x0000_006f; 64]);
    let over = payload(&d, "over.elf", 0x8000_0080, &[0x0000_006f]);
    let o = rvtrace(&["run", "--bios", s(&fw), s(&over)]);
    fails_with(&o, "overlaps the firmware");
    // A firmware that never starts the payload.
    let o = rvtrace(&["run", "--bios", s(&fw), s(&spin), "--max-insns", "5000"]);
    fails_with(&o, "did not shut down");
    // OpenSBI 1.5.1's position-independent ELF: refused, with the way out.
    if let Some(pie) = firmware("1.5", "fw_jump.elf", 64) {
        let o = rvtrace(&["run", "--bios", s(&pie), s(&hello(64))]);
        fails_with(&o, "give its .bin");
    }
    // --bootargs without a boot mode is a usage error.
    let o = rvtrace(&["run", s(&spin), "--bootargs", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `programs/boot/sbi_state.S` checks the S-mode entry state (hart id, device tree, counters
/// open, FPU on, S interrupts and ebreak delegated) and reports through the test finisher: the
/// state `--sbi` sets up passes it, and so does the state OpenSBI 1.5.1 leaves, on the model
/// and on QEMU 10.
#[test]
fn sbi_entry_state_is_the_one_opensbi_leaves() {
    for xlen in [64, 32] {
        let arch = if xlen == 64 { "rv64gc" } else { "rv32imac" };
        let p = root().join(format!("programs/boot/sbi_state-{arch}.elf"));
        let o = rvtrace(&["run", "--sbi", s(&p)]);
        assert_eq!(o.status.code(), Some(0), "--sbi {arch}: {}", stderr(&o));
        let Some(fw) = firmware("1.5", "fw_jump.bin", xlen) else {
            continue;
        };
        let o = rvtrace(&["run", "--bios", s(&fw), s(&p)]);
        assert_eq!(o.status.code(), Some(0), "--bios {arch}: {}", stderr(&o));
        if let Ok(q) = rvtrace_testkit::qemu10(xlen) {
            let qo = Command::new(q)
                .args(["-M", "virt", "-cpu"])
                .arg(rvtrace_testkit::qemu_cpu(
                    xlen,
                    Some("sscofpmf=true,smcntrpmf=true"),
                ))
                .args(["-nographic", "-bios", s(&fw), "-kernel", s(&p)])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert_eq!(qo.status.code(), Some(0), "QEMU {arch}: {}", stderr(&qo));
        }
    }
}

/// Run `cmd` with `input` on its stdin; its stdout.
fn with_input(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The UART receives piped input under a firmware: OpenSBI's legacy getchar reads it. OpenSBI's
/// uart8250 set-up reads RBR once, so the first byte is gone on QEMU 10 as on the model.
#[test]
fn uart_receives_piped_input_as_on_qemu10() {
    let Some(fw) = firmware("1.5", "fw_jump.bin", 64) else {
        return;
    };
    let input = b"abc\nxyz";
    let o = with_input(
        Command::new(env!("CARGO_BIN_EXE_rvtrace")).args(["run", "--bios", s(&fw), s(&hello(64))]),
        input,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out.lines().last().unwrap_or("");
    assert_eq!(line, "sbi_hello: input: bc");
    if let Ok(q) = rvtrace_testkit::qemu10(64) {
        let qo = with_input(
            Command::new(q)
                .args(["-M", "virt", "-cpu"])
                .arg(rvtrace_testkit::qemu_cpu(
                    64,
                    Some("sscofpmf=true,smcntrpmf=true"),
                ))
                .args(["-nographic", "-bios", s(&fw), "-kernel", s(&hello(64))]),
            input,
        );
        assert_eq!(stdout(&qo).lines().last(), Some(line));
    }
}

/// Semihosting is off in the boot modes unless asked: `programs/boot/semihost_s.S` writes a line
/// and exits with status 3 (RV64; RV32's SYS_EXIT carries no status) through it.
#[test]
fn semihosting_in_boot_modes_only_when_asked() {
    for (arch, status) in [("rv64gc", 3), ("rv32imac", 0)] {
        let p = root().join(format!("programs/boot/semihost_s-{arch}.elf"));
        let o = rvtrace(&["run", "--sbi", "--semihosting", s(&p)]);
        assert_eq!(o.status.code(), Some(status), "{}", stderr(&o));
        assert_eq!(stdout(&o), "semihosting from S-mode\n");
        // Without it the ebreak is an ordinary breakpoint, delegated to S (no handler: the
        // payload faults at stvec 0, again and again).
        let o = rvtrace(&["run", "--sbi", s(&p)]);
        fails_with(&o, "its trap handler at 0x0 (stvec) is not in memory");
        assert_eq!(stdout(&o), "");
    }
    let p = hello(64);
    let o = rvtrace(&["run", "--sbi", "--cmdline", "x", s(&p)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = rvtrace(&["run", "--semihosting", s(&p)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `run --ctr 1.0`: the CTR CSRs exist, and S-mode reaches them under --sbi (whose M-mode
/// state opens `mstateen0`); without the option `sctrstatus` is an illegal instruction.
#[test]
fn ctr_option_adds_the_ctr_csrs() {
    use rvtrace_testkit::asm::{addi, csrr, ECALL};
    let d = tmpdir("ctr");
    let lui_a7 = (0x53525 << 12) | (17 << 7) | 0x37;
    let code = [
        csrr(5, 0x14f), // csrr t0, sctrstatus
        csrr(5, 0x15f), // csrr t0, sctrdepth
        lui_a7,
        addi(17, 17, 0x354), // a7 = SRST
        addi(16, 0, 0),      // a6 = 0: system_reset
        addi(10, 0, 0),      // a0 = 0: shutdown
        addi(11, 0, 0),      // a1 = 0: no reason
        ECALL,
    ];
    let p = payload(&d, "ctr.elf", 0x8020_0000, &code);
    let o = rvtrace(&["run", "--sbi", s(&p), "--ctr", "1.0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rvtrace(&["run", "--sbi", s(&p)]);
    fails_with(&o, "illegal instruction");
    let o = rvtrace(&["run", "--sbi", s(&p), "--ctr", "2.0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("1.0"), "{}", stderr(&o));
}

/// A trace of a firmware run (issue 31): the firmware given to `decode` as a raw binary at its
/// address (`--image fw_jump.bin@0x80000000`), or as its position-independent ELF moved there;
/// the flow is the run's from the first synchronisation after the reset ROM (whose code no file
/// holds) to the end; with `run --code-snapshot`'s file, from the reset ROM on. Or the payload
/// alone, traced with `encode etrace --trace-priv s`. Raw images without an address or a width
/// are usage errors.
#[test]
fn decode_takes_the_firmware_as_an_image() {
    let (Some(bin), Some(elf)) = (
        firmware("1.5", "fw_jump.bin", 64),
        firmware("1.5", "fw_jump.elf", 64),
    ) else {
        return;
    };
    let t = tmpdir("fwimage");
    let hello = hello(64);
    let (ing, pcs, te) = (t.join("b.ing"), t.join("b.pcs"), t.join("b.te"));
    let code = t.join("code.elf");
    let o = rvtrace(&[
        "run",
        "--bios",
        s(&bin),
        s(&hello),
        "--ingress",
        s(&ing),
        "--pcs",
        s(&pcs),
        "--code-snapshot",
        s(&code),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = std::fs::read_to_string(&pcs).unwrap();
    let run: Vec<&str> = run.lines().collect();
    let decode = |image: String, out: &Path| {
        rvtrace(&[
            "decode",
            s(&te),
            "--image",
            &image,
            "--elf",
            s(&hello),
            "--pcs",
            s(out),
        ])
    };
    let mut got = Vec::new();
    for (i, fw) in [
        format!("{}@0x80000000", s(&bin)),
        format!("{}@0x80000000", s(&elf)),
    ]
    .into_iter()
    .enumerate()
    {
        let out = t.join(format!("d{i}.pcs"));
        let o = decode(fw, &out);
        // The loss at the start (the reset ROM at 0x1000 is in no file): exit status 1.
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("0x1000"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("--format raw"), "{}", stderr(&o));
        // The hint names the cause: code no file holds, not the decoder's settings.
        assert!(
            stderr(&o).contains("synchronizes at 0x1000 (byte 0x2), where no --elf or --image"),
            "{}",
            stderr(&o)
        );
        got.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(got[0], got[1], "the .bin and the moved ELF give one flow");
    // The ELF as a process map names it (`maps:FILE`, proc(5)): text mapped from its page at
    // file offset 0x1000, data, an anonymous page, the stack; found under --sysroot.
    let path = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf";
    let sysroot = s(&elf).strip_suffix(path).expect("firmware under a root");
    let maps = t.join("maps");
    std::fs::write(
        &maps,
        format!(
            "80000000-80024000 r-xp 00001000 fe:01 7 {path}\n\
             80040000-80047000 rw-p 00025000 fe:01 7 {path}\n\
             80047000-80048000 rw-p 00000000 00:00 0\n\
             3ffffde000-3ffffff000 rw-p 00000000 00:00 0 [stack]\n"
        ),
    )
    .unwrap();
    let out = t.join("maps.pcs");
    let o = rvtrace(&[
        "decode",
        s(&te),
        "--image",
        &format!("maps:{}", s(&maps)),
        "--sysroot",
        sysroot,
        "--elf",
        s(&hello),
        "--pcs",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        got[0],
        "maps: gives the moved ELF's flow"
    );
    // Without --sysroot, a usage error; a file not under it, a warning and no code.
    let o = rvtrace(&["decode", s(&te), "--image", &format!("maps:{}", s(&maps))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--sysroot"), "{}", stderr(&o));
    let o = rvtrace(&[
        "decode",
        s(&te),
        "--image",
        &format!("maps:{}", s(&maps)),
        "--sysroot",
        s(&t),
        "--elf",
        s(&hello),
    ]);
    assert!(
        stderr(&o).contains("is not under --sysroot"),
        "{}",
        stderr(&o)
    );
    let dec: Vec<&str> = got[0].lines().collect();
    // Everything after the ROM's few instructions and the firmware's first trap.
    assert!(
        dec.len() > run.len() * 7 / 10,
        "{} of {}",
        dec.len(),
        run.len()
    );
    assert_eq!(dec[..], run[run.len() - dec.len()..]);
    assert!(
        dec.contains(&"0x80200000"),
        "the payload's entry is in the flow"
    );
    // With the run's code snapshot (the reset ROM, the firmware and the payload as memory held
    // them), the whole run decodes: every PC, no loss.
    let all = t.join("all.pcs");
    let o = rvtrace(&["decode", s(&te), "--image", s(&code), "--pcs", s(&all)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&all)
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        run
    );
    // Every trace reader takes the same option: stats and profile count the same instructions.
    let fw = format!("{}@0x80000000", s(&bin));
    let o = rvtrace(&["stats", s(&te), "--image", &fw, "--elf", s(&hello)]);
    let want = format!("instructions      {}\n", dec.len());
    assert!(
        stdout(&o).starts_with(&want),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let o = rvtrace(&["profile", s(&te), "--image", &fw, "--elf", s(&hello)]);
    let want = format!("flat profile: {} instructions\n", dec.len());
    assert!(
        stdout(&o).starts_with(&want),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );

    // Only S-mode traced (the payload): each return to the payload restarts trace with a
    // synchronisation packet after the support packet that ended qualification; the payload's
    // instructions come out exactly, with no loss and no firmware.
    let ste = t.join("s.te");
    let o = rvtrace(&[
        "encode",
        "etrace",
        s(&ing),
        "-o",
        s(&ste),
        "--trace-priv",
        "s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let spcs = t.join("s.pcs");
    let o = rvtrace(&["decode", s(&ste), "--elf", s(&hello), "--pcs", s(&spcs)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let payload: Vec<&str> = run
        .iter()
        .copied()
        .filter(|pc| u64::from_str_radix(&pc[2..], 16).unwrap() >= 0x8020_0000)
        .collect();
    let got = std::fs::read_to_string(&spcs).unwrap();
    assert_eq!(got.lines().collect::<Vec<_>>(), payload);
    assert!(payload.len() > 500, "{}", payload.len());

    let usage = |args: &[&str], what: &str| {
        let mut all = vec!["decode", s(&te)];
        all.extend(args);
        let o = rvtrace(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    };
    usage(
        &["--image", s(&bin), "--elf", s(&hello)],
        "needs its address",
    );
    let at = format!("{}@0x80000000", s(&bin));
    usage(&["--image", &at], "--xlen");
    usage(
        &["--image", &at, "--elf", s(&hello), "--xlen", "32"],
        "contradicts",
    );
}
