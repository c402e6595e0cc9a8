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
#![warn(missing_docs)]

use rvtrace_isa::{CfClass, Xlen};
use rvtrace_sim::counters::Event;
use rvtrace_sim::csr::stateen;
use rvtrace_sim::decode::{decode, Insn, Op};
use rvtrace_sim::extension::{Ctx, Extension, HartAccess, Instruction};
use rvtrace_sim::{Retired, TrapInfo};

mod layout;
pub use layout::{csr, ctl, draft, ty, Layout, Version};
use layout::{Ctl, Window};

pub mod brstack;

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
pub fn hart_cycles(h: &dyn HartAccess) -> [u64; 4] {
    let c = |m: u8| h.counters().event_total(Event::Cycles, m, h.instret());
    [c(0), c(1), 0, c(3)]
}

/// The hart's branch predictor's mispredict total (conditional directions and targets).
fn mispredicts(h: &dyn HartAccess) -> u64 {
    let s = h.uarch().stats();
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
    fn stateen_allows(&self, h: &dyn HartAccess, c: u16) -> bool {
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
        self.read(c, ctx.hart().xlen())
    }

    fn csr_write(&mut self, ctx: &mut Ctx, c: u16, v: u64) -> bool {
        let h = ctx.hart();
        if !self.stateen_allows(h, c) {
            return false;
        }
        // Events may start after this write: take the predictor's count from here.
        self.misp_impl = h.uarch().config().bpred.is_some();
        self.last_misses = mispredicts(h);
        self.write(c, v, h.xlen(), hart_cycles(h))
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
            || h.privilege() == 0
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
        let taken = ev.class == CfClass::Branch
            && branch_taken(ev, &decode(ev.insn, h.xlen(), h.isa_extensions()), h.x());
        // The hart trains its predictor on the instruction before extensions see it: exactly
        // one more mispredict means this one was mispredicted.
        let misses = mispredicts(h);
        let misp = misses.wrapping_sub(self.last_misses) == 1;
        self.last_misses = misses;
        self.on_retire(ev, h.privilege(), taken, misp);
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
