//! Control Transfer Records (Smctr/Ssctr, ratified v1.0) for the hart model.
//!
//! [`Ctr`] is a [`rvtrace_sim::extension::Extension`]: it owns the CTR CSRs (`mctrctl`,
//! `sctrctl`, `vsctrctl`, `sctrdepth`, `sctrstatus`) and the Sscsrind window `siselect`/
//! `sireg*` through which the entries are read and written, and records qualified control
//! transfers from the hart's retire and trap events. Section names in comments are those of
//! `specs/ctr-v1.0/body.adoc`. The crate README lists what is modelled and what is not.

use rvtrace_isa::{CfClass, Xlen};
use rvtrace_sim::counters::Event;
use rvtrace_sim::csr::stateen;
use rvtrace_sim::decode::{decode, Insn, Op};
use rvtrace_sim::extension::{Ctx, Extension, Instruction};
use rvtrace_sim::{Hart, Retired, TrapInfo};

/// CSR numbers ("CSR Listing"; Sscsrind for `siselect`/`sireg*`).
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
    /// The `siselect` values of CTR logical entries 0..=255 ("Entry Registers").
    pub const ENTRY_SELECT: std::ops::RangeInclusive<u64> = 0x200..=0x2ff;
    /// Every CSR [`crate::Ctr`] claims.
    pub const ALL: [u16; 12] = [
        SCTRCTL, SCTRSTATUS, SCTRDEPTH, VSCTRCTL, MCTRCTL, SISELECT, SIREG, SIREG2, SIREG3, SIREG4,
        SIREG5, SIREG6,
    ];
}

/// `mctrctl` fields ("Machine Control Transfer Records Control Register"). The filter bit of
/// transfer type T is bit 32 + T (EXCINH 33 .. DIRLJMPINH 47; "Transfer Type Filtering").
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
    /// The fields this model implements: all standard ones (no custom bits 63:60).
    pub const MCTRCTL_MASK: u64 = U
        | S
        | M
        | RASEMU
        | STE
        | MTE
        | BPFRZ
        | LCOFIFRZ
        | EXCINH
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
    /// `sctrctl` (and `vsctrctl`): bits 2 (M) and 9 (MTE) read-only 0 ("Supervisor Control
    /// Transfer Records Control Register").
    pub const SCTRCTL_MASK: u64 = MCTRCTL_MASK & !(M | MTE);
}

/// `ctrdata.TYPE` encodings ("Transfer Type Filtering", table "Control Transfer Type
/// Definitions").
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

    /// The inhibit (or, for not-taken branches, enable) bit of `xctrctl` for a type.
    pub fn filter_bit(t: u8) -> u64 {
        use crate::ctl::*;
        match t {
            EXCEPTION => EXCINH,
            INTERRUPT => INTRINH,
            TRAP_RETURN => TRETINH,
            NOT_TAKEN_BRANCH => NTBREN,
            TAKEN_BRANCH => TKBRINH,
            INDIRECT_CALL => INDCALLINH,
            DIRECT_CALL => DIRCALLINH,
            INDIRECT_JUMP => INDJMPINH,
            DIRECT_JUMP => DIRJMPINH,
            CORSWAP => CORSWAPINH,
            RETURN => RETINH,
            OTHER_INDIRECT_JUMP => INDLJMPINH,
            OTHER_DIRECT_JUMP => DIRLJMPINH,
            _ => 0,
        }
    }
}

/// `sctrstatus.FROZEN`.
pub const FROZEN: u64 = 1 << 31;
/// `ctrsource.V`.
pub const V: u64 = 1;
/// `ctrdata.CCV`.
pub const CCV: u64 = 1 << 15;
/// `ctrdata` bits this model implements: TYPE (bits 3:0), CCV, CC (bits 31:16).
pub const CTRDATA_MASK: u64 = 0xffff_800f;
/// Largest `sctrdepth.DEPTH` implemented (256 entries): every depth 16..256 is supported.
pub const MAX_DEPTH_CODE: u64 = 4;
/// Physical entries.
pub const ENTRIES: usize = 256;
/// Exception code of a breakpoint (privileged ISA, `mcause` table).
const CAUSE_BREAKPOINT: u64 = 3;
/// Interrupt code of a local counter overflow interrupt (Sscofpmf).
const IRQ_LCOFI: u64 = 13;

/// One CTR buffer entry, as software reads it through `sireg*`.
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
    mctrctl: u64,
    vsctrctl: u64,
    /// `sctrdepth.DEPTH` (0..=4).
    depth_code: u64,
    wrptr: u64,
    frozen: bool,
    siselect: u64,
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
    fn default() -> Self {
        Ctr::new()
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

impl Ctr {
    /// CTR after reset: nothing enabled, depth 16, empty buffer. (Reset values of the CTR
    /// CSRs are not specified; `mctrctl` = 0 keeps recording off until software enables it.)
    pub fn new() -> Ctr {
        Ctr {
            mctrctl: 0,
            vsctrctl: 0,
            depth_code: 0,
            wrptr: 0,
            frozen: false,
            siselect: 0,
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

    /// `mctrctl`.
    pub fn mctrctl(&self) -> u64 {
        self.mctrctl
    }
    /// `vsctrctl`.
    pub fn vsctrctl(&self) -> u64 {
        self.vsctrctl
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
    /// `sctrstatus`.
    pub fn sctrstatus(&self) -> u64 {
        self.wrptr | if self.frozen { FROZEN } else { 0 }
    }
    /// `sctrdepth`.
    pub fn sctrdepth(&self) -> u64 {
        self.depth_code
    }

    /// Logical entry `x` (0 = most recent): the physical entry `(WRPTR - x - 1) % depth`
    /// (note in "Supervisor Control Transfer Records Status Register"); entries at or beyond
    /// the depth read 0.
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

    /// SCTRCLR ("Supervisor CTR Clear Instruction"): zero every entry of every depth, the
    /// cycle counter and CCV.
    pub fn clear(&mut self) {
        self.buf.iter_mut().for_each(|e| *e = Entry::default());
        self.reset_counter();
    }

    fn reset_counter(&mut self) {
        self.cycles = 0;
        self.ccv = false;
    }

    /// Whether privilege `p` (0 U, 1 S, 3 M) is enabled for recording (V=0: `mctrctl`.U/S/M).
    pub fn mode_enabled(&self, p: u8) -> bool {
        let bit = match p {
            0 => ctl::U,
            1 => ctl::S,
            3 => ctl::M,
            _ => return false,
        };
        self.mctrctl & bit != 0
    }

    /// Write `mctrctl` (`mask` selects the bits the written CSR shows). On RV32 only bits 31:0
    /// are accessible (note in "CSR Listing"). A write resets CtrCycleCounter ("Cycle Counting").
    fn write_ctl(old: u64, v: u64, mask: u64, xlen: Xlen) -> u64 {
        let reach = match xlen {
            Xlen::Rv64 => u64::MAX,
            Xlen::Rv32 => 0xffff_ffff,
        };
        let m = mask & reach;
        (old & !m) | (v & m)
    }

    /// Read a CTR CSR (`None`: illegal instruction). `xlen` truncates the result.
    pub fn read(&self, csr: u16, xlen: Xlen) -> Option<u64> {
        let v = match csr {
            csr::MCTRCTL => self.mctrctl,
            csr::SCTRCTL => self.mctrctl & ctl::SCTRCTL_MASK,
            csr::VSCTRCTL => self.vsctrctl,
            csr::SCTRDEPTH => self.depth_code,
            csr::SCTRSTATUS => self.sctrstatus(),
            csr::SISELECT => self.siselect,
            csr::SIREG | csr::SIREG2 | csr::SIREG3 | csr::SIREG4 | csr::SIREG5 | csr::SIREG6 => {
                let x = self.selected()?;
                let e = self.entry(x);
                match csr {
                    csr::SIREG => e.source,
                    csr::SIREG2 => e.target,
                    csr::SIREG3 => e.data,
                    _ => 0,
                }
            }
            _ => return None,
        };
        Some(match xlen {
            Xlen::Rv64 => v,
            Xlen::Rv32 => v & 0xffff_ffff,
        })
    }

    /// The logical entry `siselect` selects; `None` when it is outside 0x200..=0x2FF (an
    /// `sireg*` access then raises an illegal-instruction exception: no other indirect
    /// register is implemented).
    fn selected(&self) -> Option<usize> {
        csr::ENTRY_SELECT
            .contains(&self.siselect)
            .then(|| (self.siselect - 0x200) as usize)
    }

    /// Write a CTR CSR (`false`: illegal instruction). `cycles` are the hart's per-mode cycle
    /// totals now (for the cycle counter up to this point).
    pub fn write(&mut self, csr: u16, v: u64, xlen: Xlen, cycles: [u64; 4]) -> bool {
        self.account(cycles);
        let v = match xlen {
            Xlen::Rv64 => v,
            Xlen::Rv32 => v & 0xffff_ffff,
        };
        match csr {
            csr::MCTRCTL => {
                self.mctrctl = Self::write_ctl(self.mctrctl, v, ctl::MCTRCTL_MASK, xlen);
                self.reset_counter();
            }
            csr::SCTRCTL => {
                self.mctrctl = Self::write_ctl(self.mctrctl, v, ctl::SCTRCTL_MASK, xlen);
                self.reset_counter();
            }
            csr::VSCTRCTL => {
                self.vsctrctl = Self::write_ctl(self.vsctrctl, v, ctl::SCTRCTL_MASK, xlen);
                self.reset_counter();
            }
            csr::SCTRDEPTH => {
                // WARL: the reserved codes 5..7 read back as 4 (256 entries), as QEMU does.
                self.depth_code = (v & 7).min(MAX_DEPTH_CODE);
                // WRPTR bits above depth-1 are read-only 0 (its value is otherwise
                // unspecified on a depth change).
                self.wrptr &= self.depth() as u64 - 1;
            }
            csr::SCTRSTATUS => {
                self.wrptr = v & (self.depth() as u64 - 1);
                self.frozen = v & FROZEN != 0;
            }
            // Sscsrind: `siselect` holds at least 0..=0xFFF.
            csr::SISELECT => self.siselect = v & 0xfff,
            csr::SIREG | csr::SIREG2 | csr::SIREG3 | csr::SIREG4 | csr::SIREG5 | csr::SIREG6 => {
                let Some(x) = self.selected() else {
                    return false;
                };
                // Entries at or beyond the depth, and sireg4..6, are read-only 0.
                if let Some(p) = self.physical(x) {
                    let e = &mut self.buf[p];
                    match csr {
                        csr::SIREG => e.source = v,
                        csr::SIREG2 => e.target = v & !(!self.misp_impl as u64),
                        csr::SIREG3 => e.data = v & CTRDATA_MASK,
                        _ => {}
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// Whether the hart must send retirements: some mode records. (Traps reach every
    /// extension anyway, so freezes on LCOFI/breakpoint happen with no mode enabled too.)
    pub fn active_somewhere(&self) -> bool {
        self.mctrctl & (ctl::U | ctl::S | ctl::M) != 0
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

    /// Push a record at WRPTR ("Behavior"), with the cycle count since the previous one.
    fn push(&mut self, source: u64, target: u64, t: u8, with_cc: bool) {
        let p = self.wrptr as usize;
        self.buf[p] = self.make(source, target, t, with_cc);
        self.wrptr = (self.wrptr + 1) & (self.depth() as u64 - 1);
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
    /// if it is a qualified transfer.
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
        if self.mctrctl & ctl::RASEMU != 0 {
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

    /// The type filter: inhibit bits, and NTBREN as an enable ("Transfer Type Filtering").
    fn type_allowed(&self, t: u8) -> bool {
        let bit = ty::filter_bit(t);
        if t == ty::NOT_TAKEN_BRANCH {
            self.mctrctl & bit != 0
        } else {
            self.mctrctl & bit == 0
        }
    }

    /// RAS emulation ("RAS (Return Address Stack) Emulation Mode"): calls push, returns pop,
    /// co-routine swaps replace logical entry 0, everything else is inhibited; the filter bits
    /// are ignored. Calls carry CCV=0 and CC=0 (the simple choice the spec's note allows).
    fn ras(&mut self, ev: &Retired, t: u8) {
        let mask = self.depth() as u64 - 1;
        match t {
            ty::INDIRECT_CALL | ty::DIRECT_CALL => self.push(ev.pc, ev.next_pc, t, false),
            ty::RETURN => {
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
        // "Freeze": an LCOFI or breakpoint trap to M or S freezes instead of being recorded.
        if tr.interrupt && tr.cause == IRQ_LCOFI && self.mctrctl & ctl::LCOFIFRZ != 0
            || !tr.interrupt && tr.cause == CAUSE_BREAKPOINT && self.mctrctl & ctl::BPFRZ != 0
        {
            self.frozen = true;
            return;
        }
        if self.frozen || self.mctrctl & ctl::RASEMU != 0 {
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
            // "External Traps": needs xTE of the target and every intervening mode; not
            // subject to EXCINH/INTRINH; ctrtarget.PC = 0.
            (true, false) if self.external_trap_enabled(tr.from_priv, tr.to_priv) => {
                self.record(tr.epc, tr.handler, t, Part::NoTarget)
            }
            _ => {}
        }
    }

    /// Table "External Trap Enable Requirements" (V=0 rows).
    fn external_trap_enabled(&self, from: u8, to: u8) -> bool {
        let c = self.mctrctl;
        match (from, to) {
            (0, 1) => c & ctl::STE != 0,
            (0, 3) => c & ctl::MTE != 0 && c & ctl::STE != 0,
            (1, 3) => c & ctl::MTE != 0,
            _ => false,
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
    /// Enable Access Control"): below M, `mstateen0`.CTR guards the CTR CSRs and the entries
    /// (`sireg*` while `siselect` selects one), and `mstateen0`.CSRIND (Sscsrind) guards
    /// `siselect`/`sireg*` whatever they select.
    fn stateen_allows(&self, h: &Hart, c: u16) -> bool {
        match c {
            csr::SISELECT => h.stateen_allows(stateen::CSRIND),
            csr::SIREG | csr::SIREG2 | csr::SIREG3 | csr::SIREG4 | csr::SIREG5 | csr::SIREG6 => {
                h.stateen_allows(stateen::CSRIND)
                    && (self.selected().is_none() || h.stateen_allows(stateen::CTR))
            }
            csr::MCTRCTL => true,
            _ => h.stateen_allows(stateen::CTR),
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
        csr::ALL.contains(&c)
    }

    fn stateen_bits(&self) -> u64 {
        stateen::CTR | stateen::CSRIND
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
        if i.insn != SCTRCLR || h.priv_ == 0 || !h.stateen_allows(stateen::CTR) {
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
