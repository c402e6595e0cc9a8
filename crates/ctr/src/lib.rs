//! Control Transfer Records (Smctr/Ssctr) for the hart model: the ratified v1.0 and the
//! v0.1.4 draft.
//!
//! [`Ctr`] is a [`rvtrace_sim::extension::Extension`]: it owns the CTR CSRs and the indirect
//! window (`siselect`/`sireg*`, and in the draft `miselect`/`mireg*`) through which the
//! entries are read and written, and records qualified control transfers from the hart's
//! retire and trap events. [`Version`] picks the specification; one recording core serves
//! both, and where they differ (CSR numbers, field positions, depth selection, clearing, WRAP,
//! external traps) the difference is data in the version's [`Layout`] or a rule named after
//! its section. Section names in comments are those of `specs/ctr-v1.0/body.adoc`; "draft
//! N.N" cites a section of `specs/ctr-smctr-ssctr-v0.1.4.txt`. The crate README lists what is
//! modelled and what is not.

use rvtrace_isa::{CfClass, Xlen};
use rvtrace_sim::counters::Event;
use rvtrace_sim::csr::stateen;
use rvtrace_sim::decode::{decode, Insn, Op};
use rvtrace_sim::extension::{Ctx, Extension, Instruction};
use rvtrace_sim::{Hart, Retired, TrapInfo};

/// Which CTR specification a [`Ctr`] follows.
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

pub mod brstack;

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
    /// Every CSR a [`Ctr`] of this version claims (the draft's RV32 halves included: they
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
enum Ctl {
    M,
    S,
    Vs,
}

/// Which indirect window (`siselect`/`sireg*` or `miselect`/`mireg*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Window {
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
    fn control(&self, c: u16, xlen: Xlen) -> Option<(Ctl, u32, u64)> {
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
    fn is_status(&self, c: u16) -> bool {
        c == self.sctrstatus || Some(c) == self.mctrstatus
    }

    /// The window and register index (1..=6: `*ireg`..`*ireg6`) of an indirect CSR.
    fn window(&self, c: u16) -> Option<(Window, usize)> {
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
        crate::V1_0.filter_bit(t)
    }
}

/// v1.0 `sctrstatus.FROZEN` (the draft's is [`draft::FROZEN`]).
pub const FROZEN: u64 = 1 << 31;
/// `ctrsource.V`.
pub const V: u64 = 1;
/// `ctrdata.CCV`.
pub const CCV: u64 = 1 << 15;
/// `ctrdata` bits this model implements: TYPE (bits 3:0), CCV, CC (bits 31:16).
pub const CTRDATA_MASK: u64 = 0xffff_800f;
/// Largest depth code implemented (256 entries; v1.0 `sctrdepth.DEPTH`, draft DEPTH 1111):
/// every depth 16..256 is supported.
pub const MAX_DEPTH_CODE: u64 = 4;
/// Physical entries.
pub const ENTRIES: usize = 256;
/// Exception code of a breakpoint (privileged ISA, `mcause` table).
const CAUSE_BREAKPOINT: u64 = 3;
/// Interrupt code of a local counter overflow interrupt (Sscofpmf).
const IRQ_LCOFI: u64 = 13;

/// One CTR buffer entry, as software reads it through `sireg*` (or the draft's `mireg*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// `ctrsource`: V in bit 0, PC bits 63:1.
    pub source: u64,
    /// `ctrtarget`: MISP in bit 0 (0 without a branch predictor), PC bits 63:1.
    pub target: u64,
    /// `ctrdata`: TYPE, CCV, CC.
    pub data: u64,
}

impl Entry {
    /// `ctrsource.V`.
    pub fn valid(&self) -> bool {
        self.source & V != 0
    }
    /// `ctrdata.TYPE`.
    pub fn ty(&self) -> u8 {
        (self.data & 0xf) as u8
    }
    /// The source pc (V cleared).
    pub fn source_pc(&self) -> u64 {
        self.source & !1
    }
    /// The target pc (MISP cleared).
    pub fn target_pc(&self) -> u64 {
        self.target & !1
    }
    /// `ctrdata.CC` (CCE in 15:12, CCM in 11:0).
    pub fn cc(&self) -> u16 {
        (self.data >> 16) as u16
    }
    /// `ctrdata.CCV`.
    pub fn ccv(&self) -> bool {
        self.data & CCV != 0
    }
}

/// Encode an elapsed cycle count as `ctrdata.CC` ("Cycle Counting"): CCE = 0 below 4096,
/// else the index of the most significant one minus 11; CCM = bits CCE+10..CCE-1.
/// Saturates at all ones (4 CCE bits implemented: 134201344 cycles).
pub fn encode_cc(count: u64) -> u16 {
    if count < 4096 {
        return count as u16;
    }
    let cce = 63 - count.leading_zeros() as u64 - 11;
    if cce > 15 {
        return 0xffff;
    }
    ((cce << 12) | ((count >> (cce - 1)) & 0xfff)) as u16
}

/// Decode `ctrdata.CC` into cycles (the formula of "Cycle Counting").
pub fn decode_cc(cc: u16) -> u64 {
    let (cce, ccm) = ((cc >> 12) as u64, (cc & 0xfff) as u64);
    if cce == 0 {
        ccm
    } else {
        (4096 + ccm) << (cce - 1)
    }
}

/// The CTR state of one hart; attach with [`rvtrace_sim::Hart::attach`].
pub struct Ctr {
    layout: &'static Layout,
    /// The stored fields of `mctrctl` in the version's layout (the draft's DEPTH and CLR are
    /// not stored bits: see `depth_code` and [`Ctr::clr`]).
    mctrctl: u64,
    vsctrctl: u64,
    /// The depth: 16 << `depth_code` entries (v1.0 `sctrdepth.DEPTH`, the draft's DEPTH field
    /// as a count of its ones).
    depth_code: u64,
    wrptr: u64,
    frozen: bool,
    /// Draft `mctrstatus.WRAP` (v1.0 has none: kept but never visible).
    wrap: bool,
    siselect: u64,
    miselect: u64,
    buf: Vec<Entry>,
    /// CtrCycleCounter (saturating; only its encoding is visible).
    cycles: u64,
    /// The counter has counted every active cycle since the last record (CCV of the next).
    ccv: bool,
    /// Per-mode cycle totals of the hart when last accounted (index: 0 U, 1 S, 3 M).
    snap: [u64; 4],
    snap_valid: bool,
    /// The transfer being recorded was mispredicted (`ctrtarget.MISP`).
    misp: bool,
    /// MISP is implemented: the hart has a branch predictor (`rvtrace_sim::uarch`).
    misp_impl: bool,
    /// The hart's predictor's mispredict total at the previous event.
    last_misses: u64,
}

impl Default for Ctr {
    /// CTR v1.0.
    fn default() -> Self {
        Ctr::new(Version::V1_0)
    }
}

/// Whether a recorded transfer is complete or has its source or target zeroed ("Privilege
/// Mode Transitions").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Full,
    NoSource,
    NoTarget,
}

fn truncate(v: u64, xlen: Xlen) -> u64 {
    match xlen {
        Xlen::Rv64 => v,
        Xlen::Rv32 => v & 0xffff_ffff,
    }
}

/// The draft's DEPTH field (draft 2.1, 6 "Discovery") for a depth code: a thermometer code,
/// 0000 for 16 entries to 1111 for 256.
fn depth_field(code: u64) -> u64 {
    (1 << code) - 1
}

/// WARL of a written DEPTH field: the depth code of the thermometer code with the same most
/// significant one (a non-thermometer value such as 0101 is taken as 0111), capped at the
/// largest implemented. Writing 0000 reads back the minimum and 1111 the maximum (draft 6).
fn depth_code_of_field(f: u64) -> u64 {
    let f = f & 0xf;
    (64 - f.leading_zeros() as u64).min(MAX_DEPTH_CODE)
}

impl Ctr {
    /// CTR after reset: nothing enabled, depth 16, empty buffer. (Reset values of the CTR
    /// CSRs are not specified; a zero control register keeps recording off until software
    /// enables it.)
    pub fn new(version: Version) -> Ctr {
        Ctr {
            layout: version.layout(),
            mctrctl: 0,
            vsctrctl: 0,
            depth_code: 0,
            wrptr: 0,
            frozen: false,
            wrap: false,
            siselect: 0,
            miselect: 0,
            buf: vec![Entry::default(); ENTRIES],
            cycles: 0,
            ccv: false,
            snap: [0; 4],
            snap_valid: false,
            misp: false,
            misp_impl: false,
            last_misses: 0,
        }
    }

    /// The specification this follows.
    pub fn version(&self) -> Version {
        self.layout.version
    }
    /// The version's register and field layout.
    pub fn layout(&self) -> &'static Layout {
        self.layout
    }
    /// `mctrctl` (draft `mctrcontrol`, its DEPTH field included).
    pub fn mctrctl(&self) -> u64 {
        self.mctrctl | self.depth_bits()
    }
    /// `vsctrctl` (draft `vsctrcontrol`, its read-only DEPTH copy included).
    pub fn vsctrctl(&self) -> u64 {
        self.vsctrctl | self.depth_bits()
    }
    /// The draft's DEPTH field in place in the control registers (0 in v1.0).
    fn depth_bits(&self) -> u64 {
        match self.layout.version {
            Version::V1_0 => 0,
            Version::Draft0_1_4 => depth_field(self.depth_code) << draft::ctl::DEPTH_SHIFT,
        }
    }
    /// The buffer depth in entries (16..=256).
    pub fn depth(&self) -> usize {
        16 << self.depth_code
    }
    /// `sctrstatus.WRPTR`.
    pub fn wrptr(&self) -> u64 {
        self.wrptr
    }
    /// `sctrstatus.FROZEN`.
    pub fn frozen(&self) -> bool {
        self.frozen
    }
    /// The draft's `mctrstatus.WRAP` (always false in v1.0, which has no such bit).
    pub fn wrap(&self) -> bool {
        self.wrap && self.layout.wrap != 0
    }
    /// `sctrstatus` (draft: `mctrstatus`, the same register).
    pub fn sctrstatus(&self) -> u64 {
        let l = self.layout;
        self.wrptr | if self.frozen { l.frozen } else { 0 } | if self.wrap { l.wrap } else { 0 }
    }
    /// v1.0 `sctrdepth` (the depth code; the draft's DEPTH field is in [`Ctr::mctrctl`]).
    pub fn sctrdepth(&self) -> u64 {
        self.depth_code
    }

    /// Logical entry `x` (0 = most recent): the physical entry `(WRPTR - x - 1) % depth`
    /// (note in "Supervisor Control Transfer Records Status Register"; draft 2.4); entries at
    /// or beyond the depth read 0.
    pub fn entry(&self, x: usize) -> Entry {
        match self.physical(x) {
            Some(p) => self.buf[p],
            None => Entry::default(),
        }
    }

    /// The valid entries, most recent first (stops at the first invalid one).
    pub fn entries(&self) -> Vec<Entry> {
        (0..self.depth())
            .map(|x| self.entry(x))
            .take_while(|e| e.valid())
            .collect()
    }

    fn physical(&self, x: usize) -> Option<usize> {
        let d = self.depth() as u64;
        ((x as u64) < d).then(|| (self.wrptr.wrapping_sub(x as u64 + 1) & (d - 1)) as usize)
    }

    /// v1.0 SCTRCLR ("Supervisor CTR Clear Instruction"): zero every entry of every depth,
    /// the cycle counter and CCV. (The draft has no SCTRCLR: its control register's CLR bit,
    /// [`draft::ctl::CLR`], clears the current depth and the status instead.)
    pub fn clear(&mut self) {
        self.buf.iter_mut().for_each(|e| *e = Entry::default());
        self.reset_counter();
    }

    /// Draft `ctrcontrol.CLR` written 1 (draft 2.1, 2.4): zero the entries of the current
    /// depth and `mctrstatus` (WRPTR, WRAP, FROZEN). `entries`: how many physical entries the
    /// clear covers (the larger of the depths before and after the same write, so that a write
    /// lowering DEPTH with CLR leaves nothing in the entries above the new depth, as the note
    /// of 2.1 intends).
    fn clr(&mut self, entries: usize) {
        self.buf[..entries]
            .iter_mut()
            .for_each(|e| *e = Entry::default());
        self.wrptr = 0;
        self.wrap = false;
        self.frozen = false;
        self.reset_counter();
    }

    fn reset_counter(&mut self) {
        self.cycles = 0;
        self.ccv = false;
    }

    /// Whether privilege `p` (0 U, 1 S, 3 M) is enabled for recording (V=0: `mctrctl`.U/S/M).
    pub fn mode_enabled(&self, p: u8) -> bool {
        let l = self.layout;
        let bit = match p {
            0 => l.u,
            1 => l.s,
            3 => l.m,
            _ => return false,
        };
        self.mctrctl & bit != 0
    }

    /// Read a CTR CSR (`None`: illegal instruction). `xlen` truncates the result.
    pub fn read(&self, c: u16, xlen: Xlen) -> Option<u64> {
        let l = self.layout;
        let v = if let Some((reg, shift, width)) = l.control(c, xlen) {
            (self.control_value(reg) >> shift) & width
        } else if l.is_status(c) {
            self.sctrstatus()
        } else if Some(c) == l.sctrdepth {
            self.depth_code
        } else if c == csr::SISELECT {
            self.siselect
        } else if c == csr::MISELECT {
            self.miselect
        } else if let Some((w, i)) = l.window(c) {
            let e = self.entry(self.selected(w)?);
            match i {
                1 => e.source,
                2 => e.target,
                3 => e.data,
                _ => 0,
            }
        } else {
            return None;
        };
        Some(truncate(v, xlen))
    }

    /// A control register as read (the draft's DEPTH field included, CLR 0).
    fn control_value(&self, reg: Ctl) -> u64 {
        match reg {
            Ctl::M => self.mctrctl(),
            Ctl::S => self.mctrctl() & (self.layout.sctrctl_mask | self.depth_bits()),
            Ctl::Vs => self.vsctrctl(),
        }
    }

    /// The logical entry `*iselect` selects; `None` when it is outside 0x200..=0x2FF (an
    /// `*ireg*` access then raises an illegal-instruction exception: no other indirect
    /// register is implemented).
    fn selected(&self, w: Window) -> Option<usize> {
        let sel = match w {
            Window::S => self.siselect,
            Window::M => self.miselect,
        };
        csr::ENTRY_SELECT
            .contains(&sel)
            .then(|| (sel - 0x200) as usize)
    }

    /// Write a CTR CSR (`false`: illegal instruction). `cycles` are the hart's per-mode cycle
    /// totals now (for the cycle counter up to this point).
    pub fn write(&mut self, c: u16, v: u64, xlen: Xlen, cycles: [u64; 4]) -> bool {
        self.account(cycles);
        let l = self.layout;
        let v = truncate(v, xlen);
        if let Some((reg, shift, width)) = l.control(c, xlen) {
            let reach = width << shift;
            let new = (self.control_value(reg) & !reach) | ((v << shift) & reach);
            self.write_control(reg, new);
        } else if l.is_status(c) {
            // WARL: WRPTR bits above depth-1 are read-only 0; the draft's WRAP is writable.
            self.wrptr = v & (self.depth() as u64 - 1);
            self.frozen = v & l.frozen != 0;
            self.wrap = v & l.wrap != 0;
        } else if Some(c) == l.sctrdepth {
            // WARL: the reserved codes 5..7 read back as 4 (256 entries), as QEMU does.
            self.set_depth((v & 7).min(MAX_DEPTH_CODE));
        } else if c == csr::SISELECT {
            // Sscsrind: `siselect` holds at least 0..=0xFFF.
            self.siselect = v & 0xfff;
        } else if c == csr::MISELECT {
            self.miselect = v & 0xfff;
        } else if let Some((w, i)) = l.window(c) {
            let Some(x) = self.selected(w) else {
                return false;
            };
            // Entries at or beyond the depth, and *ireg4..6, are read-only 0.
            if let Some(p) = self.physical(x) {
                let misp_mask = !(!self.misp_impl as u64);
                let e = &mut self.buf[p];
                match i {
                    1 => e.source = v,
                    2 => e.target = v & misp_mask,
                    3 => e.data = v & CTRDATA_MASK,
                    _ => {}
                }
            }
        } else {
            return false;
        }
        true
    }

    /// Write a whole control register (`new`: the value as written, in the version's layout).
    /// Any write resets CtrCycleCounter ("Cycle Counting"; draft 5.3).
    fn write_control(&mut self, reg: Ctl, new: u64) {
        let l = self.layout;
        match reg {
            Ctl::M => self.mctrctl = new & l.mctrctl_mask,
            Ctl::S => self.mctrctl = (self.mctrctl & !l.sctrctl_mask) | (new & l.sctrctl_mask),
            // Draft 2.3: DEPTH is a read-only copy of mctrcontrol's, and CLR clears only when
            // V=1 (the hart never runs with V=1).
            Ctl::Vs => self.vsctrctl = new & l.sctrctl_mask,
        }
        self.reset_counter();
        if l.version == Version::Draft0_1_4 && reg != Ctl::Vs {
            // Draft 2.1: DEPTH (WARL) and CLR live in mctrcontrol (and sctrcontrol).
            let before = self.depth();
            self.set_depth(depth_code_of_field(new >> draft::ctl::DEPTH_SHIFT));
            if new & l.clr != 0 {
                self.clr(before.max(self.depth()));
            }
        }
    }

    /// Select a depth; WRPTR bits above depth-1 are read-only 0 (its value is otherwise
    /// unspecified on a depth change).
    fn set_depth(&mut self, code: u64) {
        self.depth_code = code;
        self.wrptr &= self.depth() as u64 - 1;
    }

    /// Whether the hart must send retirements: some mode records. (Traps reach every
    /// extension anyway, so freezes on LCOFI/breakpoint happen with no mode enabled too.)
    pub fn active_somewhere(&self) -> bool {
        let l = self.layout;
        self.mctrctl & (l.u | l.s | l.m) != 0
    }

    /// Add the cycles spent while CTR was active since the last call ("Cycle Counting": only
    /// cycles in an enabled mode while not frozen count). `cycles`: per-mode totals.
    pub fn account(&mut self, cycles: [u64; 4]) {
        if self.snap_valid && !self.frozen {
            for m in [0u8, 1, 3] {
                if self.mode_enabled(m) {
                    let d = cycles[m as usize].wrapping_sub(self.snap[m as usize]);
                    self.cycles = self.cycles.saturating_add(d);
                }
            }
        }
        self.snap = cycles;
        self.snap_valid = true;
    }

    /// Push a record at WRPTR ("Behavior"), with the cycle count since the previous one. In
    /// the draft, incrementing WRPTR from depth-1 sets WRAP (draft 2.4).
    fn push(&mut self, source: u64, target: u64, t: u8, with_cc: bool) {
        let p = self.wrptr as usize;
        self.buf[p] = self.make(source, target, t, with_cc);
        let last = self.depth() as u64 - 1;
        self.wrap |= self.wrptr == last;
        self.wrptr = (self.wrptr + 1) & last;
    }

    fn make(&mut self, source: u64, target: u64, t: u8, with_cc: bool) -> Entry {
        let data = if with_cc {
            (encode_cc(self.cycles) as u64) << 16 | if self.ccv { CCV } else { 0 }
        } else {
            0
        };
        self.cycles = 0;
        self.ccv = true;
        Entry {
            source: (source & !1) | V,
            target: (target & !1) | self.misp as u64,
            data: data | t as u64,
        }
    }

    /// A retired instruction (`new_priv`: the privilege after it; `branch_taken`: whether a
    /// conditional branch was taken; `misp`: the branch predictor mispredicted it). Records it
    /// if it is a qualified transfer ("Behavior"; draft 5: the same three criteria, enabled
    /// mode, type not inhibited, not frozen; v1.0 adds "completes/retires", which every
    /// transfer the hart reports does).
    pub fn on_retire(&mut self, ev: &Retired, new_priv: u8, branch_taken: bool, misp: bool) {
        self.misp = misp;
        if self.frozen {
            return;
        }
        let t = match ev.class {
            CfClass::None | CfClass::EnvTrap => return,
            CfClass::Branch if branch_taken => ty::TAKEN_BRANCH,
            CfClass::Branch => ty::NOT_TAKEN_BRANCH,
            CfClass::InferableCall | CfClass::TableCall => ty::DIRECT_CALL,
            CfClass::UninferableCall => ty::INDIRECT_CALL,
            CfClass::CoroutineSwap => ty::CORSWAP,
            CfClass::Return | CfClass::PopRet => ty::RETURN,
            CfClass::InferableJump | CfClass::TableJump => ty::DIRECT_JUMP,
            CfClass::UninferableJump => ty::INDIRECT_JUMP,
            CfClass::OtherInferableJump => ty::OTHER_DIRECT_JUMP,
            CfClass::OtherUninferableJump => ty::OTHER_INDIRECT_JUMP,
            CfClass::TrapReturn => ty::TRAP_RETURN,
        };
        let src_on = self.mode_enabled(ev.priv_);
        if !src_on {
            // Trap returns from a disabled mode are never recorded; other transfers execute
            // in one mode.
            return;
        }
        if self.mctrctl & self.layout.rasemu != 0 {
            self.ras(ev, t);
            return;
        }
        if !self.type_allowed(t) {
            return;
        }
        let part = if t == ty::TRAP_RETURN && !self.mode_enabled(new_priv) {
            Part::NoTarget // to a disabled mode: ctrtarget.PC = 0
        } else {
            Part::Full
        };
        self.record(ev.pc, ev.next_pc, t, part);
    }

    fn record(&mut self, source: u64, target: u64, t: u8, part: Part) {
        let (s, d) = match part {
            Part::Full => (source, target),
            Part::NoSource => (0, target),
            Part::NoTarget => (source, 0),
        };
        self.push(s, d, t, true);
    }

    /// The type filter: inhibit bits, and NTBREN as an enable ("Transfer Type Filtering";
    /// draft 5.2, the bits one place higher).
    fn type_allowed(&self, t: u8) -> bool {
        let bit = self.layout.filter_bit(t);
        if t == ty::NOT_TAKEN_BRANCH {
            self.mctrctl & bit != 0
        } else {
            self.mctrctl & bit == 0
        }
    }

    /// RAS emulation ("RAS (Return Address Stack) Emulation Mode"; draft 5.4, the same rules):
    /// calls push, returns invalidate logical entry 0 and rotate (WRPTR decremented; in the
    /// draft a decrement from 0 clears WRAP, draft 2.4), co-routine swaps replace logical
    /// entry 0, everything else is inhibited; the filter bits are ignored. Calls carry CCV=0
    /// and CC=0 (the simple choice the spec's note allows).
    fn ras(&mut self, ev: &Retired, t: u8) {
        let mask = self.depth() as u64 - 1;
        match t {
            ty::INDIRECT_CALL | ty::DIRECT_CALL => self.push(ev.pc, ev.next_pc, t, false),
            ty::RETURN => {
                if self.wrptr == 0 {
                    self.wrap = false;
                }
                self.wrptr = self.wrptr.wrapping_sub(1) & mask;
                self.buf[self.wrptr as usize].source &= !V;
            }
            ty::CORSWAP => {
                let p = (self.wrptr.wrapping_sub(1) & mask) as usize;
                self.buf[p] = self.make(ev.pc, ev.next_pc, t, false);
            }
            _ => {}
        }
    }

    /// A trap taken (after the hart switched to the handler's privilege).
    pub fn on_trap(&mut self, tr: &TrapInfo) {
        self.misp = false;
        let l = self.layout;
        // "Freeze" (draft 5.5): an LCOFI or breakpoint trap freezes instead of being recorded.
        if tr.interrupt && tr.cause == IRQ_LCOFI && self.mctrctl & l.lcofifrz != 0
            || !tr.interrupt && tr.cause == CAUSE_BREAKPOINT && self.mctrctl & l.bpfrz != 0
        {
            self.frozen = true;
            return;
        }
        if self.frozen || self.mctrctl & l.rasemu != 0 {
            return;
        }
        let t = if tr.interrupt {
            ty::INTERRUPT
        } else {
            ty::EXCEPTION
        };
        let (src_on, dst_on) = (
            self.mode_enabled(tr.from_priv),
            self.mode_enabled(tr.to_priv),
        );
        match (src_on, dst_on) {
            (true, true) if self.type_allowed(t) => self.record(tr.epc, tr.handler, t, Part::Full),
            (false, true) if self.type_allowed(t) => {
                self.record(tr.epc, tr.handler, t, Part::NoSource)
            }
            // "External Traps" (draft 5.2.1): not subject to EXCINH/INTRINH; ctrtarget.PC = 0.
            (true, false) if self.external_trap_enabled(tr.from_priv, tr.to_priv) => {
                self.record(tr.epc, tr.handler, t, Part::NoTarget)
            }
            _ => {}
        }
    }

    /// Whether an external trap from `from` to `to` is recorded.
    fn external_trap_enabled(&self, from: u8, to: u8) -> bool {
        let c = self.mctrctl;
        let l = self.layout;
        let (ste, mte) = (c & l.ste != 0, c & l.mte != 0);
        match l.version {
            // Table "External Trap Enable Requirements" (V=0 rows): xTE of the target and of
            // every intervening mode.
            Version::V1_0 => match (from, to) {
                (0, 1) => ste,
                (0, 3) => mte && ste,
                (1, 3) => mte,
                _ => false,
            },
            // Draft 5.2.1: "only if both ETEN=1 and xTE=1, such that x is the target
            // privilege mode of the trap" (no intervening-mode rule). The draft's table names
            // the type "External Trap", which ctrdata.TYPE (draft 3.3) has no encoding for:
            // the record keeps the exception/interrupt type.
            Version::Draft0_1_4 => {
                c & l.eten != 0
                    && match (from, to) {
                        (0, 1) => ste,
                        (0 | 1, 3) => mte,
                        _ => false,
                    }
            }
        }
    }
}

/// The hart's cycle totals per privilege (index 0 U, 1 S, 3 M): retirements plus the timing
/// model's stalls, the count `mcycle` advances by.
pub fn hart_cycles(h: &Hart) -> [u64; 4] {
    let c = |m: u8| h.counters.event_total(Event::Cycles, m, h.instret);
    [c(0), c(1), 0, c(3)]
}

/// The hart's branch predictor's mispredict total (conditional directions and targets).
fn mispredicts(h: &Hart) -> u64 {
    let s = h.uarch.stats();
    s.cond_mispredicts.wrapping_add(s.jump_mispredicts)
}

/// Whether the conditional branch `ev` (decoded: `insn`) was taken. `next_pc` decides unless
/// the branch's offset equals its length (taken and not taken then continue at the same pc);
/// then the condition is evaluated on the registers `x` (as the hart holds them: sign-extended
/// to 64 bits, so signed and unsigned orders are those of XLEN), which a branch does not write.
pub fn branch_taken(ev: &Retired, insn: &Insn, x: &[u64; 32]) -> bool {
    if ev.next_pc != ev.pc.wrapping_add(ev.len as u64) {
        return true;
    }
    if insn.imm as i64 != ev.len as i64 {
        return false;
    }
    let (a, b) = (x[insn.rs1 as usize & 31], x[insn.rs2 as usize & 31]);
    match insn.op {
        Op::Beq => a == b,
        Op::Bne => a != b,
        Op::Blt => (a as i64) < (b as i64),
        Op::Bge => (a as i64) >= (b as i64),
        Op::Bltu => a < b,
        Op::Bgeu => a >= b,
        _ => false,
    }
}

impl Ctr {
    /// Whether the hart's current privilege may access CTR CSR `c` under Smstateen ("State
    /// Enable Access Control"; draft 4, the same rule with CTR at bit 55): below M,
    /// `mstateen0`.CTR guards the CTR CSRs and the entries (`sireg*` while `siselect` selects
    /// one), and `mstateen0`.CSRIND (Sscsrind) guards `siselect`/`sireg*` whatever they
    /// select. (The M-level CSRs are M-mode only anyway, where Smstateen restricts nothing.)
    fn stateen_allows(&self, h: &Hart, c: u16) -> bool {
        let ctr = self.layout.stateen_ctr;
        match c {
            csr::SISELECT => h.stateen_allows(stateen::CSRIND),
            csr::SIREG | csr::SIREG2 | csr::SIREG3 | csr::SIREG4 | csr::SIREG5 | csr::SIREG6 => {
                h.stateen_allows(stateen::CSRIND)
                    && (self.selected(Window::S).is_none() || h.stateen_allows(ctr))
            }
            _ if c == self.layout.mctrctl => true,
            _ => h.stateen_allows(ctr),
        }
    }
}

/// The SCTRCLR instruction ("Supervisor CTR Clear Instruction").
pub const SCTRCLR: u32 = 0x1040_0073;

impl Extension for Ctr {
    fn name(&self) -> &'static str {
        "ctr"
    }

    fn claims_csr(&self, c: u16) -> bool {
        self.layout.csrs.contains(&c)
    }

    fn stateen_bits(&self) -> u64 {
        self.layout.stateen_ctr | stateen::CSRIND
    }

    fn csr_read(&mut self, ctx: &mut Ctx, c: u16) -> Option<u64> {
        if !self.stateen_allows(ctx.hart(), c) {
            return None;
        }
        self.read(c, ctx.hart().xlen)
    }

    fn csr_write(&mut self, ctx: &mut Ctx, c: u16, v: u64) -> bool {
        let h = ctx.hart();
        if !self.stateen_allows(h, c) {
            return false;
        }
        // Events may start after this write: take the predictor's count from here.
        self.misp_impl = h.uarch.config().bpred.is_some();
        self.last_misses = mispredicts(h);
        self.write(c, v, h.xlen, hart_cycles(h))
    }

    fn wants_events(&self) -> bool {
        self.active_somewhere()
    }

    /// SCTRCLR: illegal in U-mode, and below M-mode while `mstateen0`.CTR = 0 ("State Enable
    /// Access Control"); otherwise it clears.
    fn instruction(&mut self, ctx: &mut Ctx, i: &Instruction) -> bool {
        let h = ctx.hart();
        // The draft has no SCTRCLR (its CLR bit clears instead): undefined there.
        if i.insn != SCTRCLR
            || self.layout.version != Version::V1_0
            || h.priv_ == 0
            || !h.stateen_allows(self.layout.stateen_ctr)
        {
            return false;
        }
        self.account(hart_cycles(h));
        self.clear();
        true
    }

    fn retire(&mut self, ctx: &mut Ctx, ev: &Retired) {
        let h = ctx.hart();
        self.account(hart_cycles(h));
        let taken =
            ev.class == CfClass::Branch && branch_taken(ev, &decode(ev.insn, h.xlen, &h.ext), &h.x);
        // The hart trains its predictor on the instruction before extensions see it: exactly
        // one more mispredict means this one was mispredicted.
        let misses = mispredicts(h);
        let misp = misses.wrapping_sub(self.last_misses) == 1;
        self.last_misses = misses;
        self.on_retire(ev, h.priv_, taken, misp);
    }

    fn trap(&mut self, _ctx: &mut Ctx, ev: &TrapInfo) {
        // No cycle accounting here: the hart reports a trap of a retiring `ecall`/`ebreak`
        // after its counters moved to the handler's mode but before `instret` counts the
        // instruction, so the per-mode totals are not readable yet (they underflow). Cycles
        // are attributed per mode, so the next retirement accounts for them correctly.
        self.on_trap(ev);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_draft;
#[cfg(test)]
mod tests_warl;
