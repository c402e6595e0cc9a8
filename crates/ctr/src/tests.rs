//! The rules of CTR v1.0, each against its section of `specs/ctr-v1.0/body.adoc`, on the
//! state machine alone (synthetic retire and trap events).

use super::*;

pub(super) const R64: Xlen = Xlen::Rv64;
pub(super) const NOCYC: [u64; 4] = [0; 4];

fn ctr(ctl: u64) -> Ctr {
    let mut c = Ctr::new(Version::V1_0);
    assert!(c.write(csr::MCTRCTL, ctl, R64, NOCYC));
    c
}

/// A retirement event (the fields CTR reads).
pub(super) fn ret(pc: u64, class: CfClass, next_pc: u64, priv_: u8) -> Retired {
    Retired {
        pc,
        insn: 0,
        len: 4,
        class,
        next_pc,
        priv_,
        trap: None,
        serviced: None,
        mtime: 0,
    }
}

/// A trap event.
pub(super) fn trap(
    epc: u64,
    handler: u64,
    from: u8,
    to: u8,
    interrupt: bool,
    cause: u64,
) -> TrapInfo {
    TrapInfo {
        cause,
        tval: 0,
        interrupt,
        epc,
        from_priv: from,
        to_priv: to,
        handler,
        mstatus: 0,
    }
}

/// Retire a transfer in M-mode that stays in M-mode.
fn m(c: &mut Ctr, pc: u64, class: CfClass, next: u64) {
    c.on_retire(&ret(pc, class, next, 3), 3, next != pc + 4, false);
}

fn sel(c: &mut Ctr, x: u64) {
    assert!(c.write(csr::SISELECT, 0x200 + x, R64, NOCYC));
}

// "Machine Control Transfer Records Control Register": write all-ones, read back exactly the
// implemented fields; bits 2 and 9 read-only 0 in sctrctl ("Supervisor ... Control Register").
#[test]
fn control_registers_warl_masks() {
    let mut c = Ctr::new(Version::V1_0);
    assert!(c.write(csr::MCTRCTL, u64::MAX, R64, NOCYC));
    assert_eq!(c.read(csr::MCTRCTL, R64), Some(0x0000_ff3e_0000_1b87));
    assert_eq!(c.read(csr::SCTRCTL, R64), Some(0x0000_ff3e_0000_1983));
    // sctrctl writes leave M and MTE alone.
    assert!(c.write(csr::SCTRCTL, 0, R64, NOCYC));
    assert_eq!(c.read(csr::MCTRCTL, R64), Some(ctl::M | ctl::MTE));
    assert!(c.write(csr::VSCTRCTL, u64::MAX, R64, NOCYC));
    assert_eq!(c.read(csr::VSCTRCTL, R64), Some(ctl::SCTRCTL_MASK));
    assert_eq!(c.read(csr::MCTRCTL, R64), Some(ctl::M | ctl::MTE));
}

// Note in "CSR Listing": RV32 cannot access bits 63:32 (they keep their value).
#[test]
fn rv32_reaches_only_the_low_half() {
    let mut c = ctr(ctl::EXCINH | ctl::U);
    assert!(c.write(csr::MCTRCTL, u64::MAX, Xlen::Rv32, NOCYC));
    assert_eq!(c.mctrctl(), ctl::EXCINH | 0x1b87);
    assert_eq!(c.read(csr::MCTRCTL, Xlen::Rv32), Some(0x1b87));
}

// "Supervisor Control Transfer Records Depth Register": codes 0..4 = 16..256; reserved 5..7
// read back as 4, as QEMU does; WRPTR bits above depth-1 read-only 0.
#[test]
fn depth_warl_and_wrptr_width() {
    let mut c = Ctr::new(Version::V1_0);
    assert_eq!(c.depth(), 16);
    for (w, r) in [
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 4),
        (6, 4),
        (7, 4),
        (8, 0),
    ] {
        assert!(c.write(csr::SCTRDEPTH, w, R64, NOCYC));
        assert_eq!(c.read(csr::SCTRDEPTH, R64), Some(r), "wrote {w}");
    }
    assert_eq!(c.depth(), 16);
    assert!(c.write(csr::SCTRSTATUS, 0xffff_ffff_ffff_ffff, R64, NOCYC));
    assert_eq!(c.read(csr::SCTRSTATUS, R64), Some(FROZEN | 0xf));
    assert!(c.write(csr::SCTRDEPTH, 4, R64, NOCYC));
    assert!(c.write(csr::SCTRSTATUS, 0xff, R64, NOCYC));
    assert_eq!(c.read(csr::SCTRSTATUS, R64), Some(0xff));
    assert!(c.write(csr::SCTRDEPTH, 1, R64, NOCYC));
    assert_eq!(c.wrptr(), 0x1f);
}

// "Entry Registers": logical entry X is physical (WRPTR - X - 1) % depth; entries >= depth
// read 0 and ignore writes; sireg4..6 read-only 0; ctrtarget.MISP and undefined ctrdata bits
// read-only 0.
#[test]
fn entry_window_maps_through_wrptr() {
    let mut c = Ctr::new(Version::V1_0);
    assert!(c.write(csr::SCTRSTATUS, 3, R64, NOCYC));
    sel(&mut c, 0);
    assert!(c.write(csr::SIREG, 0x1001, R64, NOCYC));
    assert!(c.write(csr::SIREG2, 0x2001, R64, NOCYC));
    assert!(c.write(csr::SIREG3, u64::MAX, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG2, R64), Some(0x2000));
    assert_eq!(c.read(csr::SIREG3, R64), Some(0xffff_800f));
    assert!(c.write(csr::SIREG4, 5, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG4, R64), Some(0));
    // Physical entry 2 holds it: with WRPTR = 4 it is logical entry 1.
    assert!(c.write(csr::SCTRSTATUS, 4, R64, NOCYC));
    sel(&mut c, 1);
    assert_eq!(c.read(csr::SIREG, R64), Some(0x1001));
    // WRPTR = 2: logical entry 15 (wrapped).
    assert!(c.write(csr::SCTRSTATUS, 2, R64, NOCYC));
    sel(&mut c, 15);
    assert_eq!(c.read(csr::SIREG, R64), Some(0x1001));
    // Beyond the depth: reads 0, writes ignored.
    sel(&mut c, 16);
    assert!(c.write(csr::SIREG, 0x7777, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG, R64), Some(0));
    assert!(c.write(csr::SCTRDEPTH, 4, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG, R64), Some(0));
    // siselect outside the CTR range: sireg* raise illegal instruction.
    assert!(c.write(csr::SISELECT, 0x1ff, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG, R64), None);
    assert!(!c.write(csr::SIREG3, 0, R64, NOCYC));
    assert_eq!(c.read(csr::SISELECT, R64), Some(0x1ff));
}

// "Behavior": qualified transfers push at logical entry 0; the oldest falls off when full.
// Types from table "Control Transfer Type Definitions".
#[test]
fn every_jump_type_is_recorded_with_its_type() {
    let mut c = ctr(ctl::M);
    let cases = [
        (CfClass::UninferableCall, ty::INDIRECT_CALL),
        (CfClass::InferableCall, ty::DIRECT_CALL),
        (CfClass::TableCall, ty::DIRECT_CALL),
        (CfClass::UninferableJump, ty::INDIRECT_JUMP),
        (CfClass::InferableJump, ty::DIRECT_JUMP),
        (CfClass::TableJump, ty::DIRECT_JUMP),
        (CfClass::CoroutineSwap, ty::CORSWAP),
        (CfClass::Return, ty::RETURN),
        (CfClass::PopRet, ty::RETURN),
        (CfClass::OtherUninferableJump, ty::OTHER_INDIRECT_JUMP),
        (CfClass::OtherInferableJump, ty::OTHER_DIRECT_JUMP),
        (CfClass::Branch, ty::TAKEN_BRANCH),
    ];
    for (k, (class, _)) in cases.iter().enumerate() {
        m(&mut c, 0x100 * k as u64, *class, 0x8000 + 8 * k as u64);
    }
    m(&mut c, 0x50, CfClass::None, 0x54);
    m(&mut c, 0x60, CfClass::Branch, 0x64); // not taken, NTBREN=0: not recorded
    let e = c.entries();
    assert_eq!(e.len(), cases.len());
    for (k, (_, t)) in cases.iter().enumerate() {
        let x = &e[cases.len() - 1 - k];
        assert_eq!(
            (x.source, x.target_pc(), x.ty()),
            ((0x100 * k as u64) | V, 0x8000 + 8 * k as u64, *t)
        );
    }
    assert_eq!(c.wrptr(), cases.len() as u64);
    // Wrap-around: 16 more; the oldest are lost.
    for k in 0..16u64 {
        m(&mut c, 0x4000 + 4 * k, CfClass::InferableJump, 0x9000);
    }
    assert_eq!(c.entries().len(), 16);
    assert_eq!(c.entry(15).source_pc(), 0x4000);
    assert_eq!(c.wrptr(), (cases.len() as u64 + 16) % 16);
}

// "Transfer Type Filtering": each inhibit bit suppresses its type only; NTBREN records
// not-taken branches with the next sequential pc as target.
#[test]
fn every_inhibit_bit_and_ntbren() {
    let all = [
        (CfClass::UninferableCall, ctl::INDCALLINH),
        (CfClass::InferableCall, ctl::DIRCALLINH),
        (CfClass::UninferableJump, ctl::INDJMPINH),
        (CfClass::InferableJump, ctl::DIRJMPINH),
        (CfClass::CoroutineSwap, ctl::CORSWAPINH),
        (CfClass::Return, ctl::RETINH),
        (CfClass::OtherUninferableJump, ctl::INDLJMPINH),
        (CfClass::OtherInferableJump, ctl::DIRLJMPINH),
        (CfClass::Branch, ctl::TKBRINH),
    ];
    for (class, bit) in all {
        let mut c = ctr(ctl::M | bit);
        for (other, _) in all {
            m(&mut c, 0x10, other, 0x80);
        }
        let e = c.entries();
        assert_eq!(e.len(), all.len() - 1, "{class:?}");
        let inhibited = (1..16).find(|&t| ty::filter_bit(t) == bit).unwrap();
        assert!(e.iter().all(|x| x.ty() != inhibited), "{class:?}");
    }
    // TRETINH.
    let mut c = ctr(ctl::M | ctl::TRETINH);
    m(&mut c, 0x10, CfClass::TrapReturn, 0x80);
    assert!(c.entries().is_empty());
    // NTBREN, 4-byte and compressed.
    let mut c = ctr(ctl::M | ctl::NTBREN);
    m(&mut c, 0x10, CfClass::Branch, 0x14);
    let mut ev = ret(0x20, CfClass::Branch, 0x22, 3);
    ev.len = 2;
    c.on_retire(&ev, 3, false, false);
    let e = c.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].source, e[0].target, e[0].ty()),
        (0x21, 0x22, ty::NOT_TAKEN_BRANCH)
    );
    assert_eq!(
        (e[1].source, e[1].target, e[1].ty()),
        (0x11, 0x14, ty::NOT_TAKEN_BRANCH)
    );
}

// "Privilege Mode Transitions", table "Trap and Trap Return Recording" (V=0), and the
// privilege enables of "Machine ... Control Register".
#[test]
fn mode_enables_and_transitions() {
    // Only U enabled: M-mode transfers are not recorded.
    let mut c = ctr(ctl::U);
    m(&mut c, 0x10, CfClass::InferableJump, 0x80);
    c.on_retire(&ret(0x20, CfClass::InferableJump, 0x90, 0), 0, true, false);
    assert_eq!(c.entries().len(), 1);
    assert_eq!(c.entry(0).source, 0x21);
    // Trap from disabled U to enabled M: source 0.
    let mut c = ctr(ctl::M);
    c.on_trap(&trap(0x400, 0x800, 0, 3, false, 8));
    assert_eq!(
        c.entry(0),
        Entry {
            source: V,
            target: 0x800,
            data: ty::EXCEPTION as u64
        }
    );
    // Trap return from enabled M to disabled U: target 0.
    c.on_retire(&ret(0x810, CfClass::TrapReturn, 0x404, 3), 0, true, false);
    assert_eq!(
        c.entry(0),
        Entry {
            source: 0x811,
            target: 0,
            data: ty::TRAP_RETURN as u64 | CCV
        }
    );
    // Trap return from disabled U-mode... (S to U with only M enabled): not recorded.
    c.on_retire(&ret(0x900, CfClass::TrapReturn, 0x404, 1), 0, true, false);
    // Trap between disabled modes: not recorded.
    c.on_trap(&trap(0x400, 0x700, 0, 1, false, 8));
    assert_eq!(c.entries().len(), 2);
    // Between enabled modes: complete.
    let mut c = ctr(ctl::M | ctl::S);
    c.on_trap(&trap(0x400, 0x800, 1, 3, true, 7));
    c.on_retire(&ret(0x810, CfClass::TrapReturn, 0x400, 3), 1, true, false);
    let e = c.entries();
    assert_eq!(
        (e[1].source, e[1].target, e[1].ty()),
        (0x401, 0x800, ty::INTERRUPT)
    );
    assert_eq!(
        (e[0].source, e[0].target, e[0].ty()),
        (0x811, 0x400, ty::TRAP_RETURN)
    );
    // EXCINH / INTRINH.
    let mut c = ctr(ctl::M | ctl::EXCINH);
    c.on_trap(&trap(0x400, 0x800, 3, 3, false, 2));
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 7));
    assert_eq!(c.entries().len(), 1);
    assert_eq!(c.entry(0).ty(), ty::INTERRUPT);
    let mut c = ctr(ctl::M | ctl::INTRINH);
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 7));
    assert!(c.entries().is_empty());
}

// "External Traps", table "External Trap Enable Requirements": xTE of the target and every
// intervening mode; target 0; independent of EXCINH/INTRINH.
#[test]
fn external_traps_need_every_intervening_enable() {
    let cases = [
        // (ctl, from, to, recorded)
        (ctl::U, 0, 1, false),
        (ctl::U | ctl::STE, 0, 1, true),
        (ctl::U | ctl::MTE, 0, 3, false),
        (ctl::U | ctl::STE, 0, 3, false),
        (ctl::U | ctl::STE | ctl::MTE, 0, 3, true),
        (ctl::S, 1, 3, false),
        (ctl::S | ctl::MTE, 1, 3, true),
        (ctl::S | ctl::STE, 1, 3, false),
        (ctl::S | ctl::MTE | ctl::EXCINH | ctl::INTRINH, 1, 3, true),
    ];
    for (k, (c0, from, to, want)) in cases.into_iter().enumerate() {
        let mut c = ctr(c0);
        c.on_trap(&trap(0x400, 0x800, from, to, k % 2 == 0, 8));
        let e = c.entries();
        assert_eq!(e.len(), want as usize, "case {k}");
        if want {
            assert_eq!((e[0].source, e[0].target), (0x401, 0), "case {k}");
        }
    }
}

// "Freeze": LCOFI / breakpoint traps freeze (and are not recorded) under LCOFIFRZ / BPFRZ;
// frozen CTR records nothing until FROZEN is cleared.
#[test]
fn freeze_on_lcofi_and_breakpoint() {
    let mut c = ctr(ctl::M | ctl::LCOFIFRZ);
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 13));
    assert!(c.frozen());
    assert!(c.entries().is_empty());
    m(&mut c, 0x10, CfClass::InferableJump, 0x80);
    assert!(c.entries().is_empty());
    assert!(c.write(csr::SCTRSTATUS, 0, R64, NOCYC));
    // A breakpoint without BPFRZ is recorded; an LCOFI without LCOFIFRZ too.
    c.on_trap(&trap(0x400, 0x800, 3, 3, false, 3));
    assert!(!c.frozen());
    let mut c = ctr(ctl::M | ctl::BPFRZ);
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 13));
    assert_eq!(c.entries().len(), 1);
    c.on_trap(&trap(0x400, 0x800, 3, 3, false, 3));
    assert!(c.frozen());
    assert_eq!(c.entries().len(), 1);
    // Freezing does not need a recording mode (retirements are then not wanted: traps reach
    // the extension anyway).
    let mut c = ctr(ctl::BPFRZ);
    assert!(!c.active_somewhere());
    c.on_trap(&trap(0x400, 0x800, 0, 1, false, 3));
    assert!(c.frozen());
}

// "RAS (Return Address Stack) Emulation Mode".
#[test]
fn ras_emulation() {
    let mut c = ctr(ctl::M | ctl::RASEMU | ctl::DIRCALLINH);
    m(&mut c, 0x10, CfClass::InferableCall, 0x100); // filter bits ignored: recorded
    m(&mut c, 0x104, CfClass::UninferableCall, 0x200);
    m(&mut c, 0x204, CfClass::InferableJump, 0x300); // other types inhibited
    c.on_trap(&trap(0x300, 0x800, 3, 3, false, 2));
    assert_eq!(c.wrptr(), 2);
    m(&mut c, 0x304, CfClass::Return, 0x108);
    assert_eq!(c.wrptr(), 1);
    assert_eq!(c.entries().len(), 1);
    assert_eq!(c.entry(0).source_pc(), 0x10);
    // The popped entry is invalid and now logical depth-1.
    assert!(!c.entry(15).valid());
    assert_eq!(c.entry(15).source_pc(), 0x104);
    // Co-routine swap overwrites logical entry 0, WRPTR unchanged.
    m(&mut c, 0x110, CfClass::CoroutineSwap, 0x500);
    assert_eq!(c.wrptr(), 1);
    assert_eq!(
        (c.entry(0).source_pc(), c.entry(0).ty()),
        (0x110, ty::CORSWAP)
    );
    assert_eq!(c.entries().len(), 1);
    // Calls carry CCV = 0 (the note's permitted simplification).
    assert!(!c.entry(0).ccv());
}

// "Cycle Counting": encoding with saturation, and the examples of table "Cycle Counter Size
// Options" (largest value with 4 CCE bits).
#[test]
fn cycle_count_encoding() {
    for (n, cc) in [
        (0, 0),
        (4095, 0xfff),
        (4096, 0x1000),
        (8191, 0x1fff),
        (8192, 0x2000),
        (8195, 0x2001),
    ] {
        assert_eq!(encode_cc(n), cc, "{n}");
    }
    assert_eq!(decode_cc(encode_cc(8195)), 8194); // granularity 2 at CCE = 2
    assert_eq!(decode_cc(0xffff), 134_201_344);
    assert_eq!(encode_cc(134_201_344), 0xffff);
    assert_eq!(encode_cc(u64::MAX), 0xffff);
    for n in [1u64, 5000, 70_000, 1 << 20, 100_000_000] {
        let d = decode_cc(encode_cc(n));
        assert!(d <= n && n - d < (n >> 11).max(1), "{n} -> {d}");
    }
}

// "Cycle Counting": only active cycles count (enabled mode, not frozen); reset (CCV=0 next)
// on a control write and on SCTRCLR; CCV=1 thereafter.
#[test]
fn cycle_counter_counts_active_cycles_only() {
    let mut c = ctr(ctl::M | ctl::S);
    c.account([0, 0, 0, 0]);
    m(&mut c, 0x10, CfClass::InferableJump, 0x80); // first after the write: CCV = 0
    assert!(!c.entry(0).ccv());
    c.account([100, 10, 0, 20]); // U is disabled: 30 active cycles
    m(&mut c, 0x10, CfClass::InferableJump, 0x80);
    assert!(c.entry(0).ccv());
    assert_eq!(c.entry(0).cc(), 30);
    assert!(c.write(csr::SCTRSTATUS, FROZEN, R64, [100, 10, 0, 20]));
    c.account([100, 10, 0, 1000]); // frozen: not counted
    assert!(c.write(csr::SCTRSTATUS, 0, R64, [100, 10, 0, 1000]));
    c.account([100, 10, 0, 1005]);
    m(&mut c, 0x10, CfClass::InferableJump, 0x80);
    assert_eq!((c.entry(0).ccv(), c.entry(0).cc()), (true, 5));
    c.clear();
    assert!(c.entries().is_empty());
    c.account([100, 10, 0, 1007]);
    m(&mut c, 0x10, CfClass::InferableJump, 0x80);
    assert!(!c.entry(0).ccv());
}

// SCTRCLR ("Supervisor CTR Clear Instruction") zeroes entries of every depth.
#[test]
fn clear_zeroes_every_entry() {
    let mut c = ctr(ctl::M);
    assert!(c.write(csr::SCTRDEPTH, 4, R64, NOCYC));
    for k in 0..200 {
        m(&mut c, 4 * k, CfClass::InferableJump, 0x80);
    }
    assert!(c.write(csr::SCTRDEPTH, 0, R64, NOCYC));
    c.clear();
    assert!(c.write(csr::SCTRDEPTH, 4, R64, NOCYC));
    assert!((0..256).all(|x| c.entry(x) == Entry::default()));
}

// A branch whose offset equals its length continues at pc+len either way: the registers
// decide whether it was taken.
#[test]
fn branch_with_offset_equal_length() {
    use rvtrace_sim::decode::{decode, Extensions};
    let d = |raw: u32| decode(raw, R64, &Extensions::ALL);
    let mut x = [0u64; 32];
    // beq x5, x6, +4
    let beq = ((4 >> 1) & 0xf) << 8 | 6 << 20 | 5 << 15 | 0x63;
    let mut ev = ret(0x100, CfClass::Branch, 0x104, 3);
    ev.insn = beq;
    x[6] = 1;
    assert!(!branch_taken(&ev, &d(beq), &x));
    x[6] = 0;
    assert!(branch_taken(&ev, &d(beq), &x));
    // blt x5, x6, +4 with x5 = -1 < x6 = 0 (signed); bltu: not taken.
    x[5] = u64::MAX;
    let blt = beq | 4 << 12;
    let bltu = beq | 6 << 12;
    ev.insn = blt;
    assert!(branch_taken(&ev, &d(blt), &x));
    assert!(!branch_taken(&ev, &d(bltu), &x));
    // A branch with another offset that continued at pc+4 was not taken.
    let beq8 = ((8 >> 1) & 0xf) << 8 | 6 << 20 | 6 << 15 | 0x63;
    assert!(!branch_taken(&ev, &d(beq8), &x));
    // c.beqz x8, +2: offset bit 1 in insn bit 3.
    let c = 0xc001 | 1 << 3;
    let mut ev = ret(0x100, CfClass::Branch, 0x102, 3);
    ev.len = 2;
    ev.insn = c;
    assert!(branch_taken(&ev, &d(c), &x));
    x[8] = 3;
    assert!(!branch_taken(&ev, &d(c), &x));
    ev.next_pc = 0x200;
    assert!(branch_taken(&ev, &d(c), &x));
}

// "Control Transfer Record Target Register": MISP (bit 0) marks a mispredicted transfer.
#[test]
fn misp_marks_the_mispredicted_transfer() {
    let mut c = ctr(ctl::M);
    c.on_retire(&ret(0x10, CfClass::Return, 0x80, 3), 3, true, true);
    c.on_retire(&ret(0x80, CfClass::Return, 0x90, 3), 3, true, false);
    assert_eq!(c.entry(1).target, 0x81);
    assert_eq!(c.entry(0).target, 0x90);
    c.on_trap(&trap(0x90, 0x800, 3, 3, false, 2));
    assert_eq!(c.entry(0).target, 0x800);
}
