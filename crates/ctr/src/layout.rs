//! Where each version puts the CTR registers and fields: CSR numbers (v1.0 [`csr`], the draft's
//! [`draft::csr`]), control-register fields ([`ctl`], [`draft::ctl`]), transfer types ([`ty`]),
//! and the per-version [`Layout`] the recording core reads them from.

use crate::FROZEN;
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::stateen;

/// Which CTR specification a [`crate::Ctr`] follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// The ratified Smctr/Ssctr v1.0 (`specs/ctr-v1.0/body.adoc`), as QEMU 10 and Linux.
    #[default]
    V1_0,
    /// The v0.1.4 draft of 2023-09-15 (`specs/ctr-smctr-ssctr-v0.1.4.txt`): `mctrcontrol`
    /// at 0x381 with DEPTH and CLR inside, `mctrstatus` with WRAP, ETEN, `miselect` access.
    Draft0_1_4,
}

impl Version {
    /// Where this version puts each register and field.
    pub fn layout(self) -> &'static Layout {
        match self {
            Version::V1_0 => &V1_0,
            Version::Draft0_1_4 => &DRAFT_0_1_4,
        }
    }
}

/// CSR numbers of v1.0 ("CSR Listing"; Sscsrind for `siselect`/`sireg*`, Smcsrind for
/// `miselect`/`mireg*`).
pub mod csr {
    /// Supervisor control register (a view of `mctrctl`).
    pub const SCTRCTL: u16 = 0x14e;
    /// Status: WRPTR, FROZEN.
    pub const SCTRSTATUS: u16 = 0x14f;
    /// Depth selection.
    pub const SCTRDEPTH: u16 = 0x15f;
    /// VS-mode control register.
    pub const VSCTRCTL: u16 = 0x24e;
    /// Machine control register.
    pub const MCTRCTL: u16 = 0x34e;
    /// Sscsrind: supervisor indirect register select.
    pub const SISELECT: u16 = 0x150;
    /// Sscsrind: `sireg` (CTR: `ctrsource`).
    pub const SIREG: u16 = 0x151;
    /// Sscsrind: `sireg2` (CTR: `ctrtarget`).
    pub const SIREG2: u16 = 0x152;
    /// Sscsrind: `sireg3` (CTR: `ctrdata`).
    pub const SIREG3: u16 = 0x153;
    /// Sscsrind: `sireg4` (CTR: read-only 0).
    pub const SIREG4: u16 = 0x155;
    /// Sscsrind: `sireg5` (CTR: read-only 0).
    pub const SIREG5: u16 = 0x156;
    /// Sscsrind: `sireg6` (CTR: read-only 0).
    pub const SIREG6: u16 = 0x157;
    /// Smcsrind: machine indirect register select (CTR entries in the draft only; v1.0 has no
    /// M-level indirect registers, so there every `mireg*` access is illegal, as on QEMU 10).
    pub const MISELECT: u16 = 0x350;
    /// Smcsrind: `mireg` (draft: `ctrsource`).
    pub const MIREG: u16 = 0x351;
    /// Smcsrind: `mireg2` (draft: `ctrtarget`).
    pub const MIREG2: u16 = 0x352;
    /// Smcsrind: `mireg3` (draft: `ctrdata`).
    pub const MIREG3: u16 = 0x353;
    /// Smcsrind: `mireg4` (draft: read-only 0).
    pub const MIREG4: u16 = 0x355;
    /// Smcsrind: `mireg5` (draft: read-only 0).
    pub const MIREG5: u16 = 0x356;
    /// Smcsrind: `mireg6` (draft: read-only 0).
    pub const MIREG6: u16 = 0x357;
    /// The `*iselect` values of CTR logical entries 0..=255 ("Entry Registers"; draft 3).
    pub const ENTRY_SELECT: std::ops::RangeInclusive<u64> = 0x200..=0x2ff;
    /// Every CSR a v1.0 [`crate::Ctr`] claims: its own, and the Sscsrind/Smcsrind windows it
    /// stands on.
    pub const ALL: [u16; 19] = [
        SCTRCTL, SCTRSTATUS, SCTRDEPTH, VSCTRCTL, MCTRCTL, SISELECT, SIREG, SIREG2, SIREG3, SIREG4,
        SIREG5, SIREG6, MISELECT, MIREG, MIREG2, MIREG3, MIREG4, MIREG5, MIREG6,
    ];
}

/// v1.0 `mctrctl` fields ("Machine Control Transfer Records Control Register").
pub mod ctl {
    /// Record in U-mode.
    pub const U: u64 = 1 << 0;
    /// Record in S-mode.
    pub const S: u64 = 1 << 1;
    /// Record in M-mode.
    pub const M: u64 = 1 << 2;
    /// RAS emulation mode.
    pub const RASEMU: u64 = 1 << 7;
    /// Record external traps to S-mode.
    pub const STE: u64 = 1 << 8;
    /// Record external traps to M-mode.
    pub const MTE: u64 = 1 << 9;
    /// Freeze on a breakpoint exception.
    pub const BPFRZ: u64 = 1 << 11;
    /// Freeze on a local counter overflow interrupt.
    pub const LCOFIFRZ: u64 = 1 << 12;
    /// Inhibit exceptions.
    pub const EXCINH: u64 = 1 << 33;
    /// Inhibit interrupts.
    pub const INTRINH: u64 = 1 << 34;
    /// Inhibit trap returns.
    pub const TRETINH: u64 = 1 << 35;
    /// Enable not-taken branches.
    pub const NTBREN: u64 = 1 << 36;
    /// Inhibit taken branches.
    pub const TKBRINH: u64 = 1 << 37;
    /// Inhibit indirect calls.
    pub const INDCALLINH: u64 = 1 << 40;
    /// Inhibit direct calls.
    pub const DIRCALLINH: u64 = 1 << 41;
    /// Inhibit indirect jumps without linkage.
    pub const INDJMPINH: u64 = 1 << 42;
    /// Inhibit direct jumps without linkage.
    pub const DIRJMPINH: u64 = 1 << 43;
    /// Inhibit co-routine swaps.
    pub const CORSWAPINH: u64 = 1 << 44;
    /// Inhibit function returns.
    pub const RETINH: u64 = 1 << 45;
    /// Inhibit other indirect jumps with linkage.
    pub const INDLJMPINH: u64 = 1 << 46;
    /// Inhibit other direct jumps with linkage.
    pub const DIRLJMPINH: u64 = 1 << 47;
    /// The transfer type filter bits 47:32 (type T at bit 32+T: EXCINH 33 .. DIRLJMPINH 47, "Transfer Type Filtering").
    pub const FILTERS: u64 = EXCINH
        | INTRINH
        | TRETINH
        | NTBREN
        | TKBRINH
        | INDCALLINH
        | DIRCALLINH
        | INDJMPINH
        | DIRJMPINH
        | CORSWAPINH
        | RETINH
        | INDLJMPINH
        | DIRLJMPINH;
    /// The fields this model implements: all standard ones (no custom bits 63:60).
    pub const MCTRCTL_MASK: u64 = U | S | M | RASEMU | STE | MTE | BPFRZ | LCOFIFRZ | FILTERS;
    /// `sctrctl` (and `vsctrctl`): bits 2 (M) and 9 (MTE) read-only 0 ("Supervisor Control
    /// Transfer Records Control Register").
    pub const SCTRCTL_MASK: u64 = MCTRCTL_MASK & !(M | MTE);
}

/// The v0.1.4 draft's registers and fields (`specs/ctr-smctr-ssctr-v0.1.4.txt`).
pub mod draft {
    /// CSR numbers (draft 2.6 "CSR Listing"; the `...H` halves exist on RV32 only).
    pub mod csr {
        /// Supervisor control register (a view of `mctrcontrol`).
        pub const SCTRCONTROL: u16 = 0x181;
        /// Upper 32 bits of `sctrcontrol` (RV32).
        pub const SCTRCONTROLH: u16 = 0x182;
        /// Supervisor alias of `mctrstatus` (draft 2.5).
        pub const SCTRSTATUS: u16 = 0x183;
        /// VS-mode control register.
        pub const VSCTRCONTROL: u16 = 0x281;
        /// Upper 32 bits of `vsctrcontrol` (RV32).
        pub const VSCTRCONTROLH: u16 = 0x282;
        /// Machine control register.
        pub const MCTRCONTROL: u16 = 0x381;
        /// Upper 32 bits of `mctrcontrol` (RV32).
        pub const MCTRCONTROLH: u16 = 0x382;
        /// Machine status register: WRPTR, WRAP, FROZEN.
        pub const MCTRSTATUS: u16 = 0x383;
        use crate::csr::*;
        /// Every CSR a draft [`crate::Ctr`] claims: these, and the entry windows
        /// `siselect`/`sireg*` and `miselect`/`mireg*` (draft 3).
        pub const ALL: [u16; 22] = [
            SCTRCONTROL,
            SCTRCONTROLH,
            SCTRSTATUS,
            VSCTRCONTROL,
            VSCTRCONTROLH,
            MCTRCONTROL,
            MCTRCONTROLH,
            MCTRSTATUS,
            SISELECT,
            SIREG,
            SIREG2,
            SIREG3,
            SIREG4,
            SIREG5,
            SIREG6,
            MISELECT,
            MIREG,
            MIREG2,
            MIREG3,
            MIREG4,
            MIREG5,
            MIREG6,
        ];
    }

    /// `mctrcontrol` fields (draft 2.1); `vsctrcontrol` has VS, VU, VSTE at the places of
    /// S, U, STE (draft 2.3).
    pub mod ctl {
        /// Record in M-mode.
        pub const M: u64 = 1 << 0;
        /// Record in S-mode.
        pub const S: u64 = 1 << 1;
        /// Record in U-mode.
        pub const U: u64 = 1 << 2;
        /// Written 1: clear the entries of the current depth and `mctrstatus` (reads 0).
        pub const CLR: u64 = 1 << 7;
        /// With ETEN, record external traps to M-mode.
        pub const MTE: u64 = 1 << 8;
        /// With ETEN, record external traps to S-mode.
        pub const STE: u64 = 1 << 9;
        /// RAS emulation mode.
        pub const RASEMU: u64 = 1 << 10;
        /// Freeze on a breakpoint exception.
        pub const BPFRZ: u64 = 1 << 11;
        /// Freeze on a local counter overflow interrupt.
        pub const LCOFIFRZ: u64 = 1 << 12;
        /// DEPTH (bits 19:16): 0000 16, 0001 32, 0011 64, 0111 128, 1111 256 entries.
        pub const DEPTH: u64 = 0xf << 16;
        /// Bit position of DEPTH.
        pub const DEPTH_SHIFT: u32 = 16;
        /// Inhibit exceptions.
        pub const EXCINH: u64 = 1 << 33;
        /// Inhibit interrupts.
        pub const INTRINH: u64 = 1 << 34;
        /// Inhibit trap returns.
        pub const TRETINH: u64 = 1 << 35;
        /// Enable not-taken branches.
        pub const NTBREN: u64 = 1 << 36;
        /// Inhibit taken branches.
        pub const TKBRINH: u64 = 1 << 37;
        /// Enable recording of external traps (with MTE/STE of the target mode).
        pub const ETEN: u64 = 1 << 38;
        /// Inhibit indirect calls.
        pub const INDCALLINH: u64 = 1 << 40;
        /// Inhibit direct calls.
        pub const DIRCALLINH: u64 = 1 << 41;
        /// Inhibit indirect jumps.
        pub const INDJUMPINH: u64 = 1 << 42;
        /// Inhibit direct jumps.
        pub const DIRJUMPINH: u64 = 1 << 43;
        /// Inhibit co-routine swaps.
        pub const CORSWAPINH: u64 = 1 << 44;
        /// Inhibit function returns.
        pub const RETINH: u64 = 1 << 45;
        /// Inhibit other indirect jumps.
        pub const INDOJMPINH: u64 = 1 << 46;
        /// Inhibit other direct jumps.
        pub const DIROJMPINH: u64 = 1 << 47;
        /// The transfer type filter bits (type T at bit 32+T).
        pub const FILTERS: u64 = EXCINH
            | INTRINH
            | TRETINH
            | NTBREN
            | TKBRINH
            | INDCALLINH
            | DIRCALLINH
            | INDJUMPINH
            | DIRJUMPINH
            | CORSWAPINH
            | RETINH
            | INDOJMPINH
            | DIROJMPINH;
        /// The stored fields this model implements (DEPTH and CLR are not stored bits).
        pub const MCTRCONTROL_MASK: u64 =
            M | S | U | MTE | STE | RASEMU | BPFRZ | LCOFIFRZ | ETEN | FILTERS;
        /// `sctrcontrol` and `vsctrcontrol`: bits 0 (M) and 8 (MTE) read-only 0 (draft 2.2).
        pub const SCTRCONTROL_MASK: u64 = MCTRCONTROL_MASK & !(M | MTE);
    }

    /// `mctrstatus.WRAP` (draft 2.4).
    pub const WRAP: u64 = 1 << 14;
    /// `mctrstatus.FROZEN` (draft 2.4).
    pub const FROZEN: u64 = 1 << 15;
}

/// Where a [`Version`] puts the CTR registers and fields. Fields a version lacks are 0 (or
/// `None` for CSRs).
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// The version this describes.
    pub version: Version,
    /// Machine control register.
    pub mctrctl: u16,
    /// Supervisor control register.
    pub sctrctl: u16,
    /// VS control register.
    pub vsctrctl: u16,
    /// The RV32 upper halves of `mctrctl`, `sctrctl`, `vsctrctl` (draft only).
    pub ctl_high: Option<[u16; 3]>,
    /// Supervisor status register.
    pub sctrstatus: u16,
    /// Machine status register (draft only; the same register as `sctrstatus`).
    pub mctrstatus: Option<u16>,
    /// Depth register (v1.0 only; the draft has DEPTH in the control register).
    pub sctrdepth: Option<u16>,
    /// `miselect`/`mireg*` reach the entries too (draft only).
    pub machine_window: bool,
    /// Every CSR a [`crate::Ctr`] of this version claims (the draft's RV32 halves included: they
    /// raise illegal-instruction exceptions on RV64).
    pub csrs: &'static [u16],
    /// Control field: record in U-mode.
    pub u: u64,
    /// Control field: record in S-mode.
    pub s: u64,
    /// Control field: record in M-mode.
    pub m: u64,
    /// Control field: RASEMU.
    pub rasemu: u64,
    /// Control field: STE.
    pub ste: u64,
    /// Control field: MTE.
    pub mte: u64,
    /// Control field: BPFRZ.
    pub bpfrz: u64,
    /// Control field: LCOFIFRZ.
    pub lcofifrz: u64,
    /// Control field: ETEN (draft only).
    pub eten: u64,
    /// Control field: CLR (draft only).
    pub clr: u64,
    /// Stored `mctrctl` bits (without DEPTH and CLR).
    pub mctrctl_mask: u64,
    /// Stored `sctrctl`/`vsctrctl` bits.
    pub sctrctl_mask: u64,
    /// Status field: FROZEN.
    pub frozen: u64,
    /// Status field: WRAP (draft only).
    pub wrap: u64,
    /// The CTR bit of `mstateen0`/`hstateen0` (v1.0 bit 54, "State Enable Access Control";
    /// draft bit 55, draft 4).
    pub stateen_ctr: u64,
}

/// v1.0 ("CSR Listing", "Machine Control Transfer Records Control Register").
static V1_0: Layout = Layout {
    version: Version::V1_0,
    mctrctl: csr::MCTRCTL,
    sctrctl: csr::SCTRCTL,
    vsctrctl: csr::VSCTRCTL,
    ctl_high: None,
    sctrstatus: csr::SCTRSTATUS,
    mctrstatus: None,
    sctrdepth: Some(csr::SCTRDEPTH),
    machine_window: false,
    csrs: &csr::ALL,
    u: ctl::U,
    s: ctl::S,
    m: ctl::M,
    rasemu: ctl::RASEMU,
    ste: ctl::STE,
    mte: ctl::MTE,
    bpfrz: ctl::BPFRZ,
    lcofifrz: ctl::LCOFIFRZ,
    eten: 0,
    clr: 0,
    mctrctl_mask: ctl::MCTRCTL_MASK,
    sctrctl_mask: ctl::SCTRCTL_MASK,
    frozen: FROZEN,
    wrap: 0,
    stateen_ctr: stateen::CTR,
};

/// The v0.1.4 draft (draft 2.1-2.6, 3, 4).
static DRAFT_0_1_4: Layout = Layout {
    version: Version::Draft0_1_4,
    mctrctl: draft::csr::MCTRCONTROL,
    sctrctl: draft::csr::SCTRCONTROL,
    vsctrctl: draft::csr::VSCTRCONTROL,
    ctl_high: Some([
        draft::csr::MCTRCONTROLH,
        draft::csr::SCTRCONTROLH,
        draft::csr::VSCTRCONTROLH,
    ]),
    sctrstatus: draft::csr::SCTRSTATUS,
    mctrstatus: Some(draft::csr::MCTRSTATUS),
    sctrdepth: None,
    machine_window: true,
    csrs: &draft::csr::ALL,
    u: draft::ctl::U,
    s: draft::ctl::S,
    m: draft::ctl::M,
    rasemu: draft::ctl::RASEMU,
    ste: draft::ctl::STE,
    mte: draft::ctl::MTE,
    bpfrz: draft::ctl::BPFRZ,
    lcofifrz: draft::ctl::LCOFIFRZ,
    eten: draft::ctl::ETEN,
    clr: draft::ctl::CLR,
    mctrctl_mask: draft::ctl::MCTRCONTROL_MASK,
    sctrctl_mask: draft::ctl::SCTRCONTROL_MASK,
    frozen: draft::FROZEN,
    wrap: draft::WRAP,
    // Draft 4: "The CTR bit is bit 55 in mstateen0 and hstateen0."
    stateen_ctr: 1 << 55,
};

/// Which control register a CSR number names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ctl {
    M,
    S,
    Vs,
}

/// Which indirect window (`siselect`/`sireg*` or `miselect`/`mireg*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Window {
    S,
    M,
}

impl Layout {
    /// The filter bit of `ctrdata.TYPE` `t`: an inhibit bit, or for not-taken branches the
    /// NTBREN enable ("Transfer Type Filtering"; draft 5.2). Both versions put type T at bit
    /// 32 + T (EXCINH 33 .. the last inhibit at 47); 0 for the reserved types (the draft's
    /// type-6 position is ETEN).
    pub fn filter_bit(&self, t: u8) -> u64 {
        match t {
            1..=5 | 8..=15 => 1 << (32 + t as u32),
            _ => 0,
        }
    }

    /// The control register `c` names and which bits of it the access reaches: `(reg, shift,
    /// width mask)`. RV32 reaches bits 31:0 through the register and, in the draft, bits 63:32
    /// through its `...h` half (draft 2.1); v1.0 RV32 has no upper half (note in "CSR
    /// Listing"). `None`: not a control register at this XLEN.
    pub(crate) fn control(&self, c: u16, xlen: Xlen) -> Option<(Ctl, u32, u64)> {
        let regs = [
            (self.mctrctl, Ctl::M),
            (self.sctrctl, Ctl::S),
            (self.vsctrctl, Ctl::Vs),
        ];
        if let Some(&(_, r)) = regs.iter().find(|(n, _)| *n == c) {
            return Some(match xlen {
                Xlen::Rv64 => (r, 0, u64::MAX),
                Xlen::Rv32 => (r, 0, 0xffff_ffff),
            });
        }
        let high = self.ctl_high?;
        let k = high.iter().position(|&n| n == c)?;
        (xlen == Xlen::Rv32).then_some((regs[k].1, 32, 0xffff_ffff))
    }

    /// Whether `c` is the status register (`sctrstatus`, or the draft's `mctrstatus`).
    pub(crate) fn is_status(&self, c: u16) -> bool {
        c == self.sctrstatus || Some(c) == self.mctrstatus
    }

    /// The window and register index (1..=6: `*ireg`..`*ireg6`) of an indirect CSR.
    pub(crate) fn window(&self, c: u16) -> Option<(Window, usize)> {
        let idx = |base: u16| match c.wrapping_sub(base) {
            1..=3 => Some((c - base) as usize),
            5..=7 => Some((c - base - 1) as usize),
            _ => None,
        };
        if let Some(i) = idx(csr::SISELECT) {
            return Some((Window::S, i));
        }
        if self.machine_window {
            if let Some(i) = idx(csr::MISELECT) {
                return Some((Window::M, i));
            }
        }
        None
    }
}

/// `ctrdata.TYPE` encodings ("Transfer Type Filtering", table "Control Transfer Type
/// Definitions"; draft 3.3: the same).
pub mod ty {
    /// Exception.
    pub const EXCEPTION: u8 = 1;
    /// Interrupt.
    pub const INTERRUPT: u8 = 2;
    /// Trap return.
    pub const TRAP_RETURN: u8 = 3;
    /// Not-taken branch.
    pub const NOT_TAKEN_BRANCH: u8 = 4;
    /// Taken branch.
    pub const TAKEN_BRANCH: u8 = 5;
    /// Indirect call.
    pub const INDIRECT_CALL: u8 = 8;
    /// Direct call.
    pub const DIRECT_CALL: u8 = 9;
    /// Indirect jump (without linkage).
    pub const INDIRECT_JUMP: u8 = 10;
    /// Direct jump (without linkage).
    pub const DIRECT_JUMP: u8 = 11;
    /// Co-routine swap.
    pub const CORSWAP: u8 = 12;
    /// Function return.
    pub const RETURN: u8 = 13;
    /// Other indirect jump (with linkage).
    pub const OTHER_INDIRECT_JUMP: u8 = 14;
    /// Other direct jump (with linkage).
    pub const OTHER_DIRECT_JUMP: u8 = 15;

    /// The v1.0 inhibit (or, for not-taken branches, enable) bit of `xctrctl` for a type
    /// ([`crate::Layout::filter_bit`] for either version).
    pub fn filter_bit(t: u8) -> u64 {
        super::V1_0.filter_bit(t)
    }
}
