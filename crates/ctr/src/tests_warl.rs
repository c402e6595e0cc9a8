//! WARL: for each version, writing all-ones to a CTR CSR reads back exactly the fields the
//! model implements (v1.0 "Machine Control Transfer Records Control Register" and the other
//! register sections; draft 2.1-2.6, 3, 6 "Discovery": "writing all 1s to all defined fields,
//! then reading the value back. Unimplemented fields are read-only 0"). One test per CSR per
//! version; the expected values are written out from the specs' field tables.

use super::*;

use super::tests::{NOCYC, R64};
const R32: Xlen = Xlen::Rv32;

/// Write all-ones to `c` on a fresh CTR (entry 0 selected in both windows), read it back.
fn all_ones(v: Version, xlen: Xlen, c: u16) -> Option<u64> {
    let mut t = Ctr::new(v);
    assert!(t.write(csr::SISELECT, 0x200, xlen, NOCYC));
    if v.layout().machine_window {
        assert!(t.write(csr::MISELECT, 0x200, xlen, NOCYC));
    }
    if !t.write(c, u64::MAX, xlen, NOCYC) {
        assert_eq!(
            t.read(c, xlen),
            None,
            "{c:#x}: writes refused, reads allowed"
        );
        return None;
    }
    t.read(c, xlen)
}

macro_rules! warl {
    ($($name:ident: $v:ident, $xlen:ident, $csr:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(all_ones(Version::$v, $xlen, $csr), $want);
        }
    )*};
}

// v1.0: every standard mctrctl field (U S M 2:0, RASEMU 7, STE 8, MTE 9, BPFRZ 11, LCOFIFRZ 12,
// filters 37:33 and 47:40); sctrctl/vsctrctl without M and MTE; RV32 bits 31:0 only (note in
// "CSR Listing"); sctrdepth 7 -> 4 (QEMU); sctrstatus WRPTR 3:0 (depth 16) and FROZEN 31;
// siselect 11:0 (Sscsrind); ctrsource all bits, ctrtarget PC (MISP read-only 0 without a
// predictor), ctrdata TYPE CCV CC; sireg4..6 read-only 0.
warl! {
    v1_mctrctl: V1_0, R64, csr::MCTRCTL => Some(0x0000_ff3e_0000_1b87);
    v1_mctrctl_rv32: V1_0, R32, csr::MCTRCTL => Some(0x1b87);
    v1_sctrctl: V1_0, R64, csr::SCTRCTL => Some(0x0000_ff3e_0000_1983);
    v1_vsctrctl: V1_0, R64, csr::VSCTRCTL => Some(0x0000_ff3e_0000_1983);
    v1_sctrdepth: V1_0, R64, csr::SCTRDEPTH => Some(4);
    v1_sctrstatus: V1_0, R64, csr::SCTRSTATUS => Some(0x8000_000f);
    v1_siselect: V1_0, R64, csr::SISELECT => Some(0xfff);
    v1_sireg: V1_0, R64, csr::SIREG => Some(u64::MAX);
    v1_sireg2: V1_0, R64, csr::SIREG2 => Some(!1);
    v1_sireg3: V1_0, R64, csr::SIREG3 => Some(0xffff_800f);
    v1_sireg4: V1_0, R64, csr::SIREG4 => Some(0);
    v1_sireg5: V1_0, R64, csr::SIREG5 => Some(0);
    v1_sireg6: V1_0, R64, csr::SIREG6 => Some(0);
    v1_sireg_rv32: V1_0, R32, csr::SIREG => Some(0xffff_ffff);
    // v1.0 has neither the draft's CSRs nor miselect/mireg* for CTR.
    v1_no_mctrcontrol: V1_0, R64, draft::csr::MCTRCONTROL => None;
    v1_no_mctrstatus: V1_0, R64, draft::csr::MCTRSTATUS => None;
    v1_miselect: V1_0, R64, csr::MISELECT => Some(0xfff);
    v1_no_mireg: V1_0, R64, csr::MIREG => None;
}

// Draft: mctrcontrol M S U 2:0, CLR 7 (reads 0), MTE 8, STE 9, RASEMU 10, BPFRZ 11,
// LCOFIFRZ 12, DEPTH 19:16 (1111: 256, the maximum), EXCINH..TKBRINH 37:33, ETEN 38,
// INDCALLINH..DIROJMPINH 47:40 (draft 2.1); sctrcontrol without M (0) and MTE (8) (draft 2.2);
// vsctrcontrol the same with DEPTH a read-only copy of mctrcontrol's (0000 on a fresh CTR,
// draft 2.3); RV32: bits 31:0, the ...h CSRs bits 63:32, which do not exist on RV64 (draft
// 2.6); mctrstatus = sctrstatus: WRPTR 3:0 (depth 16), WRAP 14, FROZEN 15 (draft 2.4, 2.5);
// entries as in v1.0, through miselect/mireg* too (draft 3).
warl! {
    draft_mctrcontrol: Draft0_1_4, R64, draft::csr::MCTRCONTROL => Some(0x0000_ff7e_000f_1f07);
    draft_mctrcontrol_rv32: Draft0_1_4, R32, draft::csr::MCTRCONTROL => Some(0x000f_1f07);
    draft_mctrcontrolh_rv32: Draft0_1_4, R32, draft::csr::MCTRCONTROLH => Some(0xff7e);
    draft_mctrcontrolh_rv64: Draft0_1_4, R64, draft::csr::MCTRCONTROLH => None;
    draft_sctrcontrol: Draft0_1_4, R64, draft::csr::SCTRCONTROL => Some(0x0000_ff7e_000f_1e06);
    draft_sctrcontrol_rv32: Draft0_1_4, R32, draft::csr::SCTRCONTROL => Some(0x000f_1e06);
    draft_sctrcontrolh_rv32: Draft0_1_4, R32, draft::csr::SCTRCONTROLH => Some(0xff7e);
    draft_sctrcontrolh_rv64: Draft0_1_4, R64, draft::csr::SCTRCONTROLH => None;
    draft_vsctrcontrol: Draft0_1_4, R64, draft::csr::VSCTRCONTROL => Some(0x0000_ff7e_0000_1e06);
    draft_vsctrcontrol_rv32: Draft0_1_4, R32, draft::csr::VSCTRCONTROL => Some(0x1e06);
    draft_vsctrcontrolh_rv32: Draft0_1_4, R32, draft::csr::VSCTRCONTROLH => Some(0xff7e);
    draft_vsctrcontrolh_rv64: Draft0_1_4, R64, draft::csr::VSCTRCONTROLH => None;
    draft_mctrstatus: Draft0_1_4, R64, draft::csr::MCTRSTATUS => Some(0xc00f);
    draft_sctrstatus: Draft0_1_4, R64, draft::csr::SCTRSTATUS => Some(0xc00f);
    draft_sctrstatus_rv32: Draft0_1_4, R32, draft::csr::SCTRSTATUS => Some(0xc00f);
    draft_siselect: Draft0_1_4, R64, csr::SISELECT => Some(0xfff);
    draft_sireg: Draft0_1_4, R64, csr::SIREG => Some(u64::MAX);
    draft_sireg2: Draft0_1_4, R64, csr::SIREG2 => Some(!1);
    draft_sireg3: Draft0_1_4, R64, csr::SIREG3 => Some(0xffff_800f);
    draft_sireg4: Draft0_1_4, R64, csr::SIREG4 => Some(0);
    draft_sireg5: Draft0_1_4, R64, csr::SIREG5 => Some(0);
    draft_sireg6: Draft0_1_4, R64, csr::SIREG6 => Some(0);
    draft_miselect: Draft0_1_4, R64, csr::MISELECT => Some(0xfff);
    draft_mireg: Draft0_1_4, R64, csr::MIREG => Some(u64::MAX);
    draft_mireg2: Draft0_1_4, R64, csr::MIREG2 => Some(!1);
    draft_mireg3: Draft0_1_4, R64, csr::MIREG3 => Some(0xffff_800f);
    draft_mireg4: Draft0_1_4, R64, csr::MIREG4 => Some(0);
    draft_mireg5: Draft0_1_4, R64, csr::MIREG5 => Some(0);
    draft_mireg6: Draft0_1_4, R64, csr::MIREG6 => Some(0);
    draft_mireg3_rv32: Draft0_1_4, R32, csr::MIREG3 => Some(0xffff_800f);
    // The draft has no sctrdepth (DEPTH is in the control register) and v1.0's numbers are
    // not its CSRs.
    draft_no_sctrdepth: Draft0_1_4, R64, csr::SCTRDEPTH => None;
    draft_no_mctrctl: Draft0_1_4, R64, csr::MCTRCTL => None;
    draft_no_sctrctl: Draft0_1_4, R64, csr::SCTRCTL => None;
}

// The claimed CSR sets are exactly each version's: a hart gives an illegal-instruction
// exception for the other version's numbers.
#[test]
fn each_version_claims_its_own_csrs() {
    let v1 = Ctr::new(Version::V1_0);
    let d = Ctr::new(Version::Draft0_1_4);
    for c in 0..0x1000u16 {
        let want_v1 = csr::ALL.contains(&c);
        let want_d = draft::csr::ALL.contains(&c);
        assert_eq!(v1.claims_csr(c), want_v1, "{c:#x}");
        assert_eq!(d.claims_csr(c), want_d, "{c:#x}");
    }
    for c in [0x14e, 0x14f, 0x15f, 0x24e, 0x34e] {
        assert!(!d.claims_csr(c));
    }
    for c in [0x181, 0x182, 0x183, 0x281, 0x282, 0x381, 0x382, 0x383] {
        assert!(!v1.claims_csr(c));
        assert!(d.claims_csr(c));
    }
}

// Smcsrind in v1.0 (as QEMU 10 with smcsrind=true: checked there, `csrr mireg` with
// `miselect` = 0x200 raises an illegal-instruction exception): `miselect` holds 0..0xFFF, and no
// `mireg*` register exists for any value, the CTR range included (v1.0 gives CTR no M-level
// window: the note at the end of "CSR Listing").
#[test]
fn v1_miselect_exists_but_selects_nothing() {
    let mut t = Ctr::new(Version::V1_0);
    assert!(t.write(csr::MISELECT, u64::MAX, R64, NOCYC));
    assert_eq!(t.read(csr::MISELECT, R64), Some(0xfff));
    for sel in [0x200, 0x2ff, 0x30, 0] {
        assert!(t.write(csr::MISELECT, sel, R64, NOCYC));
        for r in [
            csr::MIREG,
            csr::MIREG2,
            csr::MIREG3,
            csr::MIREG4,
            csr::MIREG5,
            csr::MIREG6,
        ] {
            assert_eq!(t.read(r, R64), None, "{r:#x} with miselect {sel:#x}");
            assert!(!t.write(r, 0, R64, NOCYC));
        }
    }
}

// vsctrcontrol.DEPTH is a read-only copy of mctrcontrol.DEPTH (draft 2.3): after mctrcontrol's
// DEPTH is set to 1111, all-ones to vsctrcontrol reads DEPTH 1111; writing it 0 changes nothing.
#[test]
fn draft_vsctrcontrol_depth_is_a_copy() {
    let mut t = Ctr::new(Version::Draft0_1_4);
    assert!(t.write(draft::csr::MCTRCONTROL, draft::ctl::DEPTH, R64, NOCYC));
    assert!(t.write(draft::csr::VSCTRCONTROL, u64::MAX, R64, NOCYC));
    assert_eq!(
        t.read(draft::csr::VSCTRCONTROL, R64),
        Some(0x0000_ff7e_000f_1e06)
    );
    assert!(t.write(draft::csr::VSCTRCONTROL, 0, R64, NOCYC));
    assert_eq!(t.read(draft::csr::VSCTRCONTROL, R64), Some(0x000f_0000));
    assert_eq!(t.depth(), 256);
    // Only mctrcontrol's own stored fields are unaffected by the vsctrcontrol writes.
    assert_eq!(t.read(draft::csr::MCTRCONTROL, R64), Some(0x000f_0000));
}
