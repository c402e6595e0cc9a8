//! The rules where the v0.1.4 draft (`specs/ctr-smctr-ssctr-v0.1.4.txt`) differs from v1.0,
//! each against its section, on the state machine alone (synthetic retire and trap events).
//! The rules both versions share are tested in `tests.rs` (v1.0) and, on a hart and over
//! random programs, in both versions by the integration tests.

use super::*;
use draft::csr as dc;
use draft::ctl as d;

use super::tests::{ret, trap, NOCYC, R64};
const R32: Xlen = Xlen::Rv32;

fn ctr(ctl: u64) -> Ctr {
    let mut c = Ctr::new(Version::Draft0_1_4);
    assert!(c.write(dc::MCTRCONTROL, ctl, R64, NOCYC));
    c
}

/// Retire a transfer in privilege `p` that stays there.
fn at(c: &mut Ctr, p: u8, pc: u64, class: CfClass, next: u64) {
    c.on_retire(&ret(pc, class, next, p), p, next != pc + 4, false);
}

fn jumps(c: &mut Ctr, n: u64) {
    for k in 0..n {
        at(c, 3, 0x1000 + 4 * k, CfClass::InferableJump, 0x8000);
    }
}

// Draft 2.1: M, S, U are bits 0, 1, 2 (v1.0: U, S, M); each enables its own mode only.
#[test]
fn mode_bits_are_m_s_u_from_bit_0() {
    for (bit, mode) in [(1u64, 3u8), (2, 1), (4, 0)] {
        let mut c = ctr(bit);
        for p in [0u8, 1, 3] {
            assert_eq!(c.mode_enabled(p), p == mode, "bit {bit}, mode {p}");
            at(
                &mut c,
                p,
                0x100 + 4 * p as u64,
                CfClass::InferableJump,
                0x800,
            );
        }
        let e = c.entries();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].source_pc(), 0x100 + 4 * mode as u64);
    }
}

// Draft 2.1, 5.2: the filter bit of type T is bit 32+T (as in v1.0); each inhibits its type
// only; NTBREN (36) enables not-taken branches.
#[test]
fn filter_bits_are_at_32_plus_type() {
    let all = [
        (CfClass::UninferableCall, d::INDCALLINH, 40),
        (CfClass::InferableCall, d::DIRCALLINH, 41),
        (CfClass::UninferableJump, d::INDJUMPINH, 42),
        (CfClass::InferableJump, d::DIRJUMPINH, 43),
        (CfClass::CoroutineSwap, d::CORSWAPINH, 44),
        (CfClass::Return, d::RETINH, 45),
        (CfClass::OtherUninferableJump, d::INDOJMPINH, 46),
        (CfClass::OtherInferableJump, d::DIROJMPINH, 47),
        (CfClass::Branch, d::TKBRINH, 37),
    ];
    for (class, bit, pos) in all {
        assert_eq!(bit, 1 << pos);
        let mut c = ctr(d::M | bit);
        for (other, _, _) in all {
            at(&mut c, 3, 0x10, other, 0x80);
        }
        let e = c.entries();
        assert_eq!(e.len(), all.len() - 1, "{class:?}");
        let inhibited = (1..16).find(|&t| c.layout().filter_bit(t) == bit).unwrap();
        assert!(e.iter().all(|x| x.ty() != inhibited), "{class:?}");
        // The v1.0 position of the same inhibit (one lower) inhibits nothing here.
        let mut c = ctr(d::M | bit >> 1);
        at(&mut c, 3, 0x10, class, 0x80);
        assert_eq!(c.entries().len(), 1, "{class:?} at v1.0's bit");
    }
    let mut c = ctr(d::M | d::EXCINH);
    c.on_trap(&trap(0x400, 0x800, 3, 3, false, 2));
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 7));
    assert_eq!(c.entries().len(), 1);
    let mut c = ctr(d::M | d::INTRINH | d::TRETINH);
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 7));
    at(&mut c, 3, 0x10, CfClass::TrapReturn, 0x80);
    assert!(c.entries().is_empty());
    let mut c = ctr(d::M | d::NTBREN);
    at(&mut c, 3, 0x10, CfClass::Branch, 0x14);
    assert_eq!(
        (c.entry(0).source, c.entry(0).target, c.entry(0).ty()),
        (0x11, 0x14, ty::NOT_TAKEN_BRANCH)
    );
}

// Draft 2.1 DEPTH and 6 "Discovery": the thermometer codes 0000, 0001, 0011, 0111, 1111 select
// 16..256 entries; writing 0000 reads back the minimum and 1111 the maximum; WARL for other
// values (the model's choice: the code with the same most significant one); WRPTR bits above
// depth-1 read-only 0 (draft 2.4).
#[test]
fn depth_field_thermometer_codes() {
    let mut c = ctr(0);
    for (field, depth, back) in [
        (0b0000, 16, 0b0000),
        (0b0001, 32, 0b0001),
        (0b0011, 64, 0b0011),
        (0b0111, 128, 0b0111),
        (0b1111, 256, 0b1111),
        (0b0010, 64, 0b0011),
        (0b0101, 128, 0b0111),
        (0b1000, 256, 0b1111),
        (0b1010, 256, 0b1111),
    ] {
        assert!(c.write(dc::MCTRCONTROL, field << 16 | d::M, R64, NOCYC));
        assert_eq!(c.depth(), depth, "{field:04b}");
        let r = c.read(dc::MCTRCONTROL, R64).unwrap();
        assert_eq!(r, back << 16 | d::M, "{field:04b}");
        assert_eq!(
            c.read(dc::SCTRCONTROL, R64),
            Some(back << 16),
            "{field:04b}"
        );
        assert_eq!(
            c.read(dc::VSCTRCONTROL, R64),
            Some(back << 16),
            "{field:04b}"
        );
    }
    // sctrcontrol writes DEPTH too (draft 2.2: every field but M and MTE).
    assert!(c.write(dc::SCTRCONTROL, 0b0011 << 16, R64, NOCYC));
    assert_eq!(c.depth(), 64);
    assert_eq!(c.mctrctl(), d::M | 0b0011 << 16);
    // vsctrcontrol cannot (read-only copy, draft 2.3).
    assert!(c.write(dc::VSCTRCONTROL, 0b1111 << 16, R64, NOCYC));
    assert_eq!(c.depth(), 64);
    // WRPTR width follows the depth.
    assert!(c.write(dc::MCTRSTATUS, 0xff, R64, NOCYC));
    assert_eq!(c.read(dc::MCTRSTATUS, R64), Some(0x3f));
    assert!(c.write(dc::MCTRCONTROL, d::M, R64, NOCYC));
    assert_eq!(c.wrptr(), 0xf);
    // A depth selected in the control register records with that depth.
    let mut c = ctr(d::M | 0b0001 << 16);
    jumps(&mut c, 40);
    assert_eq!(c.entries().len(), 32);
    assert_eq!(c.wrptr(), 40 % 32);
}

// Draft 2.1 CLR: written 1, zeroes the entries of the current depth and mctrstatus (WRPTR,
// WRAP, FROZEN); reads back 0; resets the cycle counter (a control write: draft 5.3).
#[test]
fn clr_zeroes_the_current_depth_and_the_status() {
    let mut c = ctr(d::M);
    jumps(&mut c, 20);
    assert!(c.wrap());
    assert!(c.write(dc::MCTRSTATUS, draft::FROZEN | draft::WRAP | 5, R64, NOCYC));
    assert!(c.write(dc::MCTRCONTROL, d::M | d::CLR, R64, NOCYC));
    assert_eq!(c.read(dc::MCTRCONTROL, R64), Some(d::M));
    assert_eq!(c.read(dc::MCTRSTATUS, R64), Some(0));
    assert!((0..16).all(|x| c.entry(x) == Entry::default()));
    at(&mut c, 3, 0x10, CfClass::InferableJump, 0x80);
    assert_eq!(c.entries().len(), 1);
    assert!(!c.entry(0).ccv());
    assert_eq!(c.wrptr(), 1);

    // Only the current depth: at depth 16, entries 16.. keep what a deeper buffer recorded.
    let mut c = ctr(d::M | d::DEPTH);
    jumps(&mut c, 256);
    assert!(c.write(dc::MCTRCONTROL, d::M, R64, NOCYC)); // depth 16, no clear
    assert!(c.write(dc::MCTRCONTROL, d::M | d::CLR, R64, NOCYC));
    assert!(c.write(dc::MCTRCONTROL, d::M | d::DEPTH, R64, NOCYC));
    // WRPTR is 0: logical x is physical 255 - x; physical 0..15 were cleared.
    assert!((0..240).all(|x| c.entry(x).valid()));
    assert!((240..256).all(|x| c.entry(x) == Entry::default()));

    // Lowering DEPTH and setting CLR in one write leaves nothing above the new depth (the
    // note of 2.1): the clear covers the depth before the write.
    let mut c = ctr(d::M | d::DEPTH);
    jumps(&mut c, 256);
    assert!(c.write(dc::MCTRCONTROL, d::M | d::CLR, R64, NOCYC));
    assert_eq!(c.depth(), 16);
    assert!(c.write(dc::MCTRCONTROL, d::M | d::DEPTH, R64, NOCYC));
    assert!((0..256).all(|x| c.entry(x) == Entry::default()));

    // Through sctrcontrol as well (draft 2.2); through vsctrcontrol only when V=1 (draft 2.3),
    // which the hart never is.
    let mut c = ctr(d::M);
    jumps(&mut c, 3);
    assert!(c.write(dc::VSCTRCONTROL, d::CLR, R64, NOCYC));
    assert_eq!(c.entries().len(), 3);
    assert_eq!(c.read(dc::VSCTRCONTROL, R64), Some(0));
    assert!(c.write(dc::SCTRCONTROL, d::CLR, R64, NOCYC));
    assert!(c.entries().is_empty());
    assert_eq!((c.wrptr(), c.mctrctl()), (0, d::M));
}

// Draft 2.4 WRAP: set when a record increments WRPTR from depth-1; sticky; cleared when a
// RASEMU return decrements WRPTR from 0, and by a CLR write; software-writable (WARL).
// v1.0 has no WRAP.
#[test]
fn wrap_is_sticky_and_cleared_as_the_status_table_says() {
    let mut c = ctr(d::M);
    jumps(&mut c, 15);
    assert!(!c.wrap());
    jumps(&mut c, 1); // WRPTR 15 -> 0
    assert!(c.wrap());
    assert_eq!(c.read(dc::SCTRSTATUS, R64), Some(draft::WRAP));
    jumps(&mut c, 20);
    assert!(c.wrap());
    // Software clears and sets it; mctrstatus and sctrstatus are one register (draft 2.5).
    assert!(c.write(dc::SCTRSTATUS, 2, R64, NOCYC));
    assert!(!c.wrap());
    assert!(c.write(dc::MCTRSTATUS, draft::WRAP | 2, R64, NOCYC));
    assert_eq!(c.read(dc::SCTRSTATUS, R64), Some(draft::WRAP | 2));

    // RASEMU: a return at WRPTR 0 clears WRAP; returns elsewhere and calls at other places
    // do not change it.
    let mut c = ctr(d::M | d::RASEMU);
    for k in 0..16 {
        at(&mut c, 3, 0x100 + 4 * k, CfClass::InferableCall, 0x800);
    }
    assert!(c.wrap());
    assert_eq!(c.wrptr(), 0);
    at(&mut c, 3, 0x900, CfClass::Return, 0x104);
    assert!(!c.wrap());
    assert_eq!(c.wrptr(), 15);
    at(&mut c, 3, 0x900, CfClass::Return, 0x104);
    assert!(!c.wrap());
    // A co-routine swap does not move WRPTR, so it does not set WRAP.
    assert!(c.write(dc::MCTRSTATUS, 15, R64, NOCYC));
    at(&mut c, 3, 0x900, CfClass::CoroutineSwap, 0x104);
    assert!(!c.wrap());
    assert_eq!(c.wrptr(), 15);

    // v1.0 sctrstatus has no WRAP bit.
    let mut v = Ctr::new(Version::V1_0);
    assert!(v.write(csr::MCTRCTL, ctl::M, R64, NOCYC));
    jumps(&mut v, 17);
    assert!(!v.wrap());
    assert_eq!(v.sctrstatus(), 1);
}

// Draft 5.2.1 "External Traps": recorded (target 0) only if ETEN=1 and xTE=1 for the target
// mode x; no intervening-mode rule (v1.0 needs STE too for U -> M); independent of
// EXCINH/INTRINH.
#[test]
fn external_traps_need_eten_and_the_target_te_only() {
    let cases = [
        // (ctl, from, to, recorded)
        (d::U, 0, 1, false),
        (d::U | d::STE, 0, 1, false),
        (d::U | d::ETEN, 0, 1, false),
        (d::U | d::ETEN | d::STE, 0, 1, true),
        (d::U | d::ETEN | d::MTE, 0, 1, false),
        (d::U | d::ETEN | d::MTE, 0, 3, true),
        (d::U | d::MTE, 0, 3, false),
        (d::U | d::ETEN | d::STE, 0, 3, false),
        (d::S | d::ETEN | d::MTE, 1, 3, true),
        (d::S | d::ETEN | d::STE, 1, 3, false),
        (d::S | d::ETEN | d::MTE | d::EXCINH | d::INTRINH, 1, 3, true),
        // Not external (target enabled): ETEN plays no part.
        (d::U | d::M | d::ETEN | d::MTE | d::EXCINH, 0, 3, false),
    ];
    for (k, (c0, from, to, want)) in cases.into_iter().enumerate() {
        let mut c = ctr(c0);
        c.on_trap(&trap(0x400, 0x800, from, to, k % 2 == 0, 8));
        let e = c.entries();
        assert_eq!(e.len(), want as usize, "case {k}");
        if want {
            let t = if k % 2 == 0 {
                ty::INTERRUPT
            } else {
                ty::EXCEPTION
            };
            assert_eq!(
                (e[0].source, e[0].target, e[0].ty()),
                (0x401, 0, t),
                "case {k}"
            );
        }
    }
    // sctrcontrol reaches ETEN and STE but not MTE (draft 2.2).
    let mut c = ctr(d::MTE);
    assert!(c.write(dc::SCTRCONTROL, u64::MAX, R64, NOCYC));
    assert_eq!(
        c.mctrctl() & (d::ETEN | d::STE | d::MTE | d::M),
        d::ETEN | d::STE | d::MTE
    );
    assert!(c.write(dc::SCTRCONTROL, 0, R64, NOCYC));
    assert_eq!(c.mctrctl(), d::MTE);
}

// Draft 5.4 RASEMU (bit 10): calls push, a return invalidates entry 0 and rotates it to
// depth-1, co-routine swaps overwrite entry 0, other types and the filter bits are ignored.
#[test]
fn ras_emulation_at_bit_10() {
    let mut c = ctr(d::M | d::RASEMU | d::DIRCALLINH);
    at(&mut c, 3, 0x10, CfClass::InferableCall, 0x100);
    at(&mut c, 3, 0x104, CfClass::UninferableCall, 0x200);
    at(&mut c, 3, 0x204, CfClass::InferableJump, 0x300);
    c.on_trap(&trap(0x300, 0x800, 3, 3, false, 2));
    assert_eq!(c.wrptr(), 2);
    at(&mut c, 3, 0x304, CfClass::Return, 0x108);
    assert_eq!(c.wrptr(), 1);
    assert_eq!(c.entries().len(), 1);
    assert!(!c.entry(15).valid());
    assert_eq!(c.entry(15).source_pc(), 0x104);
    at(&mut c, 3, 0x110, CfClass::CoroutineSwap, 0x500);
    assert_eq!(
        (c.entry(0).source_pc(), c.entry(0).ty()),
        (0x110, ty::CORSWAP)
    );
    // Bit 7 (v1.0's RASEMU) is CLR here: not RAS emulation.
    let mut c = ctr(d::M | 1 << 7);
    at(&mut c, 3, 0x304, CfClass::Return, 0x108);
    assert_eq!(c.entries().len(), 1);
}

// Draft 2.1, 5.5: BPFRZ (11) and LCOFIFRZ (12) freeze; FROZEN is mctrstatus bit 15.
#[test]
fn freeze_sets_status_bit_15() {
    let mut c = ctr(d::M | d::LCOFIFRZ);
    c.on_trap(&trap(0x400, 0x800, 3, 3, true, 13));
    assert_eq!(c.read(dc::MCTRSTATUS, R64), Some(draft::FROZEN));
    jumps(&mut c, 1);
    assert!(c.entries().is_empty());
    assert!(c.write(dc::MCTRSTATUS, 0, R64, NOCYC));
    jumps(&mut c, 1);
    assert_eq!(c.entries().len(), 1);
    let mut c = ctr(d::BPFRZ);
    c.on_trap(&trap(0x400, 0x800, 0, 1, false, 3));
    assert!(c.frozen());
}

// Draft 2.1, 2.6: on RV32 the ...h CSRs reach bits 63:32, so the filter bits, NTBREN and
// ETEN are usable there (v1.0 RV32 cannot reach them); a write to one half leaves the other.
#[test]
fn rv32_upper_halves() {
    let mut c = ctr(0);
    assert!(c.write(dc::MCTRCONTROL, d::M | 0b0011 << 16, R32, NOCYC));
    assert!(c.write(dc::MCTRCONTROLH, (d::NTBREN | d::ETEN) >> 32, R32, NOCYC));
    assert_eq!(c.mctrctl(), d::M | 0b0011 << 16 | d::NTBREN | d::ETEN);
    assert_eq!(c.depth(), 64);
    assert_eq!(
        c.read(dc::MCTRCONTROLH, R32),
        Some((d::NTBREN | d::ETEN) >> 32)
    );
    at(&mut c, 3, 0x10, CfClass::Branch, 0x14);
    assert_eq!(c.entry(0).ty(), ty::NOT_TAKEN_BRANCH);
    assert!(c.write(dc::SCTRCONTROLH, 0, R32, NOCYC));
    assert_eq!(c.mctrctl(), d::M | 0b0011 << 16);
    assert!(c.write(dc::MCTRCONTROL, d::S, R32, NOCYC));
    assert_eq!(c.mctrctl(), d::S);
    assert!(!c.write(dc::MCTRCONTROLH, 0, R64, NOCYC));
    assert_eq!(c.read(dc::SCTRCONTROLH, R64), None);
}

// Draft 3: miselect/mireg* reach the entries as siselect/sireg* do (separate selects, the
// same entries); mireg* with miselect outside 0x200..0x2FF raise illegal instruction;
// entries at or beyond the depth read 0.
#[test]
fn miselect_window_reaches_the_entries() {
    let mut c = ctr(d::M);
    jumps(&mut c, 3);
    assert!(c.write(csr::MISELECT, 0x201, R64, NOCYC));
    assert!(c.write(csr::SISELECT, 0x200, R64, NOCYC));
    assert_eq!(c.read(csr::MIREG, R64), Some(c.entry(1).source));
    assert_eq!(c.read(csr::SIREG, R64), Some(c.entry(0).source));
    assert_eq!(c.read(csr::MIREG3, R64), Some(c.entry(1).data));
    assert!(c.write(csr::MIREG2, 0x4444, R64, NOCYC));
    assert!(c.write(csr::SISELECT, 0x201, R64, NOCYC));
    assert_eq!(c.read(csr::SIREG2, R64), Some(0x4444));
    assert!(c.write(csr::MISELECT, 0x210, R64, NOCYC));
    assert_eq!(c.read(csr::MIREG, R64), Some(0));
    assert!(c.write(csr::MISELECT, 0x300, R64, NOCYC));
    assert_eq!(c.read(csr::MIREG, R64), None);
    assert!(!c.write(csr::MIREG, 0, R64, NOCYC));
    assert_eq!(c.read(csr::MISELECT, R64), Some(0x300));
    assert_eq!(c.read(csr::SISELECT, R64), Some(0x201));
}

// Draft 5.1: the trap/trap-return table is v1.0's (partial records with PC 0 from or to a
// disabled mode, nothing from disabled modes), at the draft's bit positions.
#[test]
fn privilege_transitions_with_draft_bits() {
    let mut c = ctr(d::M);
    c.on_trap(&trap(0x400, 0x800, 0, 3, false, 8));
    assert_eq!((c.entry(0).source, c.entry(0).target), (V, 0x800));
    c.on_retire(&ret(0x810, CfClass::TrapReturn, 0x404, 3), 0, true, false);
    assert_eq!((c.entry(0).source, c.entry(0).target), (0x811, 0));
    c.on_retire(&ret(0x900, CfClass::TrapReturn, 0x404, 1), 3, true, false);
    assert_eq!(c.entries().len(), 2);
}
