//! The `rvtrace` command line: bad input gets one clear line and a non-zero exit; options work.

use crate::common;
use common::{rvtrace, stderr, tmpdir};
use rvtrace_testkit::minimal_elf;

/// Instructions, little-endian.
fn code(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

// Encodings checked with riscv64-unknown-elf-as / objdump (binutils 2.40):
const LI_A0_42: u32 = 0x02a00513; // addi a0, zero, 42
const LUI_T0_0X10: u32 = 0x000102b7; // lui t0, 0x10  (t0 = 0x10000, unmapped)
const JR_T0: u32 = 0x00028067; // jalr zero, 0(t0)
const ADDI_A1_SP_0: u32 = 0x00010593; // addi a1, sp, 0
/// The semihosting call sequence around `ebreak` (RISC-V semihosting spec).
const SLLI: u32 = 0x01f01013;
const EBREAK: u32 = 0x00100073;
const SRAI: u32 = 0x40705013;

#[test]
fn missing_file() {
    let o = rvtrace(&["run", "/nonexistent/prog.elf"]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("/nonexistent/prog.elf") && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn not_riscv_elf() {
    let d = tmpdir("x86");
    let p = d.join("x86.elf");
    let mut elf = minimal_elf(true, 0x8000_0000, &code(&[LI_A0_42]));
    elf[18] = 62; // e_machine = x86-64
    std::fs::write(&p, elf).unwrap();
    let o = rvtrace(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("not a RISC-V ELF"), "{e}");
    // Not an ELF at all.
    std::fs::write(&p, b"#!/bin/sh\necho hi\n").unwrap();
    let o = rvtrace(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("not an ELF"), "{}", stderr(&o));
}

#[test]
fn truncated_elf() {
    let d = tmpdir("trunc");
    let p = d.join("t.elf");
    let elf = minimal_elf(true, 0x8000_0000, &code(&[LI_A0_42, LI_A0_42]));
    for cut in [10, 70, elf.len() - 3] {
        std::fs::write(&p, &elf[..cut]).unwrap();
        let o = rvtrace(&["run", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(125), "cut {cut}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("truncated"), "cut {cut}: {e}");
    }
}

#[test]
fn runaway_into_unmapped_memory_is_reported_with_pc() {
    let d = tmpdir("runaway");
    let p = d.join("r.elf");
    std::fs::write(
        &p,
        minimal_elf(true, 0x8000_0000, &code(&[LUI_T0_0X10, JR_T0])),
    )
    .unwrap();
    let o = rvtrace(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("instruction access fault at pc 0x10000"), "{e}");
    assert!(e.contains("mtvec"), "{e}");
}

#[test]
fn exit_status_pcs_and_ingress() {
    // RV32 SYS_EXIT takes the reason in a1: ADP_Stopped_ApplicationExit exits 0, anything else 1.
    let d = tmpdir("exit");
    let p = d.join("e.elf");
    // li a0, 0x18 (SYS_EXIT); a1 = sp = 0 (not ApplicationExit) -> exit status 1.
    let prog = code(&[0x01800513, ADDI_A1_SP_0, SLLI, EBREAK, SRAI]);
    std::fs::write(&p, minimal_elf(false, 0x8000_0000, &prog)).unwrap();
    let pcs = d.join("pcs.txt");
    let ing = d.join("trace.ingress");
    let o = rvtrace(&[
        "run",
        p.to_str().unwrap(),
        "--pcs",
        pcs.to_str().unwrap(),
        "--ingress",
        ing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // The exit call's ebreak retires (semihosting calls are ordinary retired instructions).
    assert_eq!(
        std::fs::read_to_string(&pcs).unwrap(),
        "0x80000000\n0x80000004\n0x80000008\n0x8000000c\n"
    );
    let dump = rvtrace(&["ingress", "dump", ing.to_str().unwrap()]);
    assert!(dump.status.success());
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(text.contains("0x8000000c +4 priv=M"), "{text}");
    assert!(text.contains("records=4"), "{text}");
}

#[test]
fn max_insns_stops_with_124() {
    let d = tmpdir("loop");
    let p = d.join("l.elf");
    std::fs::write(&p, minimal_elf(true, 0x8000_0000, &code(&[0x0000006f]))).unwrap(); // j .
    let pcs = d.join("pcs.txt");
    let o = rvtrace(&[
        "run",
        p.to_str().unwrap(),
        "--max-insns",
        "1000",
        "--pcs",
        pcs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(124));
    assert!(
        stderr(&o).contains("stopped after 1000 instructions"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&pcs).unwrap().lines().count(), 1000);
}

#[test]
fn bad_isa_and_bad_dump_input() {
    // A usage error (exit 2), found before the ELF is even opened.
    let o = rvtrace(&["run", "x.elf", "--isa", "rv64gcv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unsupported extension 'v'"),
        "{}",
        stderr(&o)
    );
    let d = tmpdir("dump");
    let p = d.join("not-ingress");
    std::fs::write(&p, b"hello").unwrap();
    let o = rvtrace(&["ingress", "dump", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("not an rvtrace ingress file"),
        "{}",
        stderr(&o)
    );
}

/// riscv-tests style programs end by writing `(code << 1) | 1` to `tohost` (HTIF); the HTIF
/// console (device 1, command 1) prints. Sources: `programs/htif/htif.S`.
#[test]
fn htif_tohost_exit_and_console() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../programs/htif");
    for (code, elf) in [(0, "htif-exit0-rv64gc.elf"), (3, "htif-exit3-rv64gc.elf")] {
        let o = rvtrace(&["run", &format!("{dir}/{elf}")]);
        assert_eq!(o.status.code(), Some(code), "{elf}: {}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n", "{elf}");
    }
}

/// Without C, a jump to an address that is 2 mod 4 raises instruction-address-misaligned at the
/// jump (`--isa` overrides the ELF); with C the same jump is fine.
#[test]
fn isa_override_without_c_makes_misaligned_jumps_trap() {
    let d = tmpdir("noc");
    let p = d.join("m.elf");
    const J_PLUS_6: u32 = 0x0060006f; // jal zero, .+6
    std::fs::write(&p, minimal_elf(true, 0x8000_0000, &code(&[J_PLUS_6, 0]))).unwrap();
    let o = rvtrace(&["run", p.to_str().unwrap(), "--isa", "rv64g"]);
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert!(
        e.contains("instruction address misaligned at pc 0x80000000 (tval 0x80000006)"),
        "{e}"
    );
    // With C the jump retires and the hart runs into the zero parcel at 0x80000006 (c.unimp).
    let o = rvtrace(&["run", p.to_str().unwrap(), "--isa", "rv64gc"]);
    assert!(
        stderr(&o).contains("illegal instruction at pc 0x80000006"),
        "{}",
        stderr(&o)
    );
}
