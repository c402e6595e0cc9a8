//! SCTRCLR and the Smstateen gating of CTR on a hart (v1.0 "Supervisor CTR Clear Instruction"
//! and "State Enable Access Control"; Smstateen for `mstateen0`; Sscsrind for bit 60 CSRIND).

use rvtrace_ctr::{csr, ctl, draft, ty, Ctr, Version, SCTRCLR};
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::{num, stateen};
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{addi, branch, csrr, csrrw, hart_with_code, jal, NOP, SPIN};

const BASE: u64 = 0x8000_0000;
const T0: u32 = 5;
const T1: u32 = 6;
/// Privileges.
const U: u8 = 0;
const S: u8 = 1;
const M: u8 = 3;

/// A hart with Smstateen (as `run --ctr`), CTR attached, `code` at the start of RAM, traps to
/// M at a spin loop at word 60 (so a trap is visible as `mcause` and the pc).
fn hart(code: &[u32], smstateen: bool) -> Hart {
    hart_of(Version::V1_0, code, smstateen)
}

/// [`hart`] with a CTR of version `v`.
fn hart_of(v: Version, code: &[u32], smstateen: bool) -> Hart {
    let mut c = code.to_vec();
    c.resize(60, NOP);
    c.push(SPIN);
    let mut cfg = Config::virt(Xlen::Rv64);
    cfg.smstateen = smstateen;
    let mut h = hart_with_code(cfg, &c);
    assert!(h.pmp_allow_all()); // the S/U-mode parts need a PMP entry
    assert!(h.csr_write(num::MTVEC, BASE + 4 * 60));
    h.attach(Box::new(Ctr::new(v)));
    h
}

/// Run `n` instructions at privilege `p`; the trap cause if it trapped to the spin loop.
fn run_at(h: &mut Hart, p: u8, n: u64) -> Option<u64> {
    h.priv_ = p;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    (h.pc == BASE + 4 * 60).then(|| h.csr_read(num::MCAUSE).unwrap())
}

fn ctr(h: &mut Hart) -> &mut Ctr {
    h.extension_mut::<Ctr>().unwrap()
}

#[test]
fn sctrclr_clears_every_entry_and_the_cycle_counter_and_retires() {
    // Record a call and a taken branch in M, then SCTRCLR, then a jump.
    let code = [
        addi(T0, 0, ctl::M as i32),
        csrrw(0, csr::MCTRCTL, T0),
        jal(0, 8),          // 2: direct jump -> 4
        NOP,                // 3
        branch(0, 0, 0, 8), // 4: beq taken -> 6
        NOP,                // 5
        SCTRCLR,            // 6
        jal(0, 8),          // 7: -> 9
    ];
    let mut h = hart(&code, true);
    assert_eq!(run_at(&mut h, M, 4), None);
    assert_eq!(ctr(&mut h).entries().len(), 2);
    let before = h.instret;
    assert_eq!(run_at(&mut h, M, 1), None, "SCTRCLR retires in M-mode");
    assert_eq!((h.pc, h.instret), (BASE + 4 * 7, before + 1));
    let c = ctr(&mut h);
    assert!(c.entries().is_empty());
    assert!((0..256).all(|x| c.entry(x) == Default::default()));
    // WRPTR is not part of the entry registers: it stays.
    assert_eq!(c.wrptr(), 2);
    run_at(&mut h, M, 1);
    let e = ctr(&mut h).entry(0);
    assert_eq!((e.source_pc(), e.ty()), (BASE + 4 * 7, ty::DIRECT_JUMP));
    assert!(!e.ccv(), "the first record after SCTRCLR has CCV = 0");
}

#[test]
fn sctrclr_is_illegal_in_u_mode_and_without_ctr() {
    let mut h = hart(&[SCTRCLR], false);
    assert_eq!(run_at(&mut h, U, 1), Some(2), "U-mode");
    assert_eq!(h.csr_read(num::MTVAL), Some(SCTRCLR as u64));
    let mut h = hart(&[SCTRCLR], false);
    assert_eq!(run_at(&mut h, S, 1), None, "S-mode without Smstateen");
    // Without the extension the encoding is undefined.
    let mut cfg = Config::virt(Xlen::Rv64);
    cfg.smstateen = true;
    let mut h = hart_with_code(cfg, &[SCTRCLR, SPIN]);
    assert!(h.pmp_allow_all());
    assert!(h.csr_write(num::MTVEC, BASE + 4));
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!(h.csr_read(num::MCAUSE), Some(2));
    assert_eq!(h.pc, BASE + 4);
}

#[test]
fn mstateen0_ctr_gates_s_mode_access_and_sctrclr_but_not_recording() {
    // In S-mode: SCTRCLR, then read sctrstatus.
    let code = [SCTRCLR, csrr(T1, csr::SCTRSTATUS)];
    let mut h = hart(&code, true);
    assert_eq!(h.csr_read(num::MSTATEEN0), Some(0), "reset value");
    assert_eq!(run_at(&mut h, S, 1), Some(2), "SCTRCLR with CTR = 0");
    let mut h = hart(&code, true);
    assert!(h.csr_write(num::MSTATEEN0, stateen::CTR));
    assert_eq!(run_at(&mut h, S, 2), None);
    // Recording continues while access is blocked: S-mode transfers are recorded.
    let code = [jal(0, 8), NOP, csrr(T1, csr::SCTRSTATUS)];
    let mut h = hart(&code, true);
    assert!(h.csr_write(csr::MCTRCTL, ctl::S));
    assert_eq!(
        run_at(&mut h, S, 2),
        Some(2),
        "sctrstatus read with CTR = 0"
    );
    assert_eq!(h.csr_read(num::MEPC), Some(BASE + 8));
    let e = ctr(&mut h).entry(0);
    assert_eq!((e.source_pc(), e.target_pc()), (BASE, BASE + 8));
}

#[test]
fn each_ctr_csr_from_s_mode_follows_ctr_and_csrind() {
    let mut h = hart(&[], true);
    h.priv_ = S;
    let ctr_csrs = [csr::SCTRCTL, csr::VSCTRCTL, csr::SCTRDEPTH, csr::SCTRSTATUS];
    for (bits, ctr_ok, ind_ok) in [
        (0, false, false),
        (stateen::CTR, true, false),
        (stateen::CSRIND, false, true),
        (stateen::CTR | stateen::CSRIND, true, true),
    ] {
        h.csr.mstateen[0] = bits;
        for c in ctr_csrs {
            assert_eq!(h.csr_read(c).is_some(), ctr_ok, "{c:#x} with {bits:#x}");
            assert_eq!(h.csr_write(c, 0), ctr_ok, "{c:#x} with {bits:#x}");
        }
        assert_eq!(h.csr_write(csr::SISELECT, 0x200), ind_ok);
        // An entry needs both bits.
        assert_eq!(h.csr_read(csr::SIREG).is_some(), ctr_ok && ind_ok);
        // M-mode is never restricted.
        h.priv_ = M;
        assert!(h.csr_read(csr::SCTRSTATUS).is_some() && h.csr_write(csr::SISELECT, 0x200));
        assert!(h.csr_read(csr::SIREG).is_some());
        h.priv_ = S;
    }
}

#[test]
fn mstateen_registers_show_what_the_hart_has() {
    let mut h = hart(&[], true);
    let all = stateen::SE0 | stateen::ENVCFG | stateen::CTR | stateen::CSRIND;
    assert!(h.csr_write(num::MSTATEEN0, u64::MAX));
    assert_eq!(h.csr_read(num::MSTATEEN0), Some(all));
    assert!(h.csr_write(num::MSTATEEN0 + 1, u64::MAX));
    assert_eq!(h.csr_read(num::MSTATEEN0 + 1), Some(stateen::SE0));
    assert!(
        h.csr_read(num::MSTATEEN0H).is_none(),
        "no upper halves on RV64"
    );
    // sstateen0: nothing to guard in its 32 bits; from S-mode only with SE0.
    h.priv_ = S;
    assert_eq!(h.csr_read(num::SSTATEEN0), Some(0));
    h.csr.mstateen[0] = stateen::CTR;
    assert!(h.csr_read(num::SSTATEEN0).is_none());
    assert!(h.csr_read(num::SENVCFG).is_none(), "senvcfg needs ENVCFG");
    h.csr.mstateen[0] |= stateen::ENVCFG;
    assert!(h.csr_read(num::SENVCFG).is_some());
    // Without CTR attached, its bits are read-only 0; without Smstateen, no registers.
    let mut cfg = Config::virt(Xlen::Rv64);
    cfg.smstateen = true;
    let mut h = Hart::new(&cfg);
    assert!(h.csr_write(num::MSTATEEN0, u64::MAX));
    assert_eq!(
        h.csr_read(num::MSTATEEN0),
        Some(stateen::SE0 | stateen::ENVCFG)
    );
    let mut h = Hart::new(&Config::virt(Xlen::Rv64));
    assert!(h.csr_read(num::MSTATEEN0).is_none() && h.csr_read(num::SSTATEEN0).is_none());
    assert!(h.csr_read(num::SENVCFG).is_some());
    // RV32: the upper half through mstateen0h.
    let mut cfg = Config::virt(Xlen::Rv32);
    cfg.smstateen = true;
    let mut h = Hart::new(&cfg);
    h.attach(Box::new(Ctr::default()));
    assert!(h.csr_write(num::MSTATEEN0H, 0xffff_ffff));
    assert!(h.csr_write(num::MSTATEEN0, 0xffff_ffff));
    assert_eq!(h.csr_read(num::MSTATEEN0), Some(0));
    assert_eq!(
        h.csr_read(num::MSTATEEN0H),
        Some(((all >> 32) as i32) as i64 as u64),
        "read sign-extended like every RV32 CSR"
    );
}

// Draft 4 "State Enable Access Control": the CTR bit is bit 55 of `mstateen0` (v1.0: 54);
// below M-mode it gates `sctrcontrol`, `vsctrcontrol`, `sctrstatus` and `sireg*` selecting
// an entry; CSRIND (bit 60) gates `siselect`/`sireg*`.
#[test]
fn draft_ctr_is_bit_55_of_mstateen0() {
    let mut h = hart_of(Version::Draft0_1_4, &[], true);
    assert!(h.csr_write(num::MSTATEEN0, u64::MAX));
    assert_eq!(
        h.csr_read(num::MSTATEEN0),
        Some(stateen::SE0 | stateen::ENVCFG | stateen::CSRIND | 1 << 55),
        "bit 55 writable, 54 not"
    );
    h.priv_ = S;
    let ctr_csrs = [
        draft::csr::SCTRCONTROL,
        draft::csr::VSCTRCONTROL,
        draft::csr::SCTRSTATUS,
    ];
    for (bits, ctr_ok, ind_ok) in [
        (0, false, false),
        (1 << 55, true, false),
        (stateen::CTR | stateen::CSRIND, false, true),
        (1 << 55 | stateen::CSRIND, true, true),
    ] {
        h.csr.mstateen[0] = bits;
        for c in ctr_csrs {
            assert_eq!(h.csr_read(c).is_some(), ctr_ok, "{c:#x} with {bits:#x}");
            assert_eq!(h.csr_write(c, 0), ctr_ok, "{c:#x} with {bits:#x}");
        }
        assert_eq!(h.csr_write(csr::SISELECT, 0x200), ind_ok);
        assert_eq!(h.csr_read(csr::SIREG).is_some(), ctr_ok && ind_ok);
    }
}

// The draft has no SCTRCLR (draft 2.1: the CLR bit clears instead): the encoding is illegal
// in every mode, with every mstateen0 bit set, and clears nothing.
#[test]
fn draft_has_no_sctrclr() {
    for p in [M, S] {
        let mut h = hart_of(Version::Draft0_1_4, &[jal(0, 4), SCTRCLR], true);
        assert!(h.csr_write(num::MSTATEEN0, u64::MAX));
        assert!(h.csr_write(draft::csr::MCTRCONTROL, draft::ctl::M | draft::ctl::S));
        assert_eq!(run_at(&mut h, p, 1), None);
        assert_eq!(run_at(&mut h, p, 1), Some(2), "privilege {p}");
        assert_eq!(h.csr_read(num::MTVAL), Some(SCTRCLR as u64));
        // The jump before it is still recorded (the oldest entry): nothing was cleared.
        let e = *ctr(&mut h).entries().last().unwrap();
        assert_eq!((e.source_pc(), e.ty()), (BASE, ty::DIRECT_JUMP));
    }
}
