//! Hooks on the hart's retire step. The execution loop is generic over an [`Observer`], so an
//! observer that ignores an event costs nothing: the call inlines to nothing.
//!
//! Order of calls for one instruction: register/memory/CSR effects as they happen, then exactly
//! one of [`Observer::retire`] (the instruction retired; for `ecall`/`ebreak` it carries the trap
//! it raised) or [`Observer::trap`] (a fault: the instruction did not retire), and
//! [`Observer::trap`] also for an interrupt, which is taken between instructions.

use rvtrace_isa::CfClass;

/// An environment call serviced by an extension (in [`Retired::serviced`]; the servicing
/// side is [`crate::extension`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Serviced {
    /// Index of the extension in attach order ([`crate::Hart::extension_name`]), or
    /// [`Serviced::UNKNOWN`] for events replayed from a log ([`crate::import`]).
    pub by: u8,
    /// The exception the instruction would otherwise have raised (3, 8, 9 or 11).
    pub cause: u8,
}

impl Serviced {
    /// [`Serviced::by`] when the servicing extension is not known.
    pub const UNKNOWN: u8 = u8::MAX;
}

/// A trap taken by the hart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapInfo {
    /// Exception or interrupt code (without the interrupt bit).
    pub cause: u64,
    /// Trap value written to `mtval`/`stval`.
    pub tval: u64,
    /// Interrupt (true) or exception.
    pub interrupt: bool,
    /// `mepc`/`sepc` written by the trap.
    pub epc: u64,
    /// Privilege before the trap (0 U, 1 S, 3 M).
    pub from_priv: u8,
    /// Privilege of the handler.
    pub to_priv: u8,
    /// First instruction of the handler.
    pub handler: u64,
    /// `mstatus` after the trap entry (its xPIE/xIE/xPP stack pushed, privileged ISA), as the
    /// hart holds it (raw, without SD). Events replayed from a log ([`crate::import`]) do not
    /// know it and give 0.
    pub mstatus: u64,
}

/// One retired instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retired {
    /// Address of the instruction.
    pub pc: u64,
    /// Instruction bits (16-bit instructions in the low half).
    pub insn: u32,
    /// Length in bytes.
    pub len: u8,
    /// Control-flow class (for the ingress `itype`).
    pub class: CfClass,
    /// Address of the next instruction to execute (branch/jump target, trap handler, or pc+len).
    pub next_pc: u64,
    /// Privilege the instruction executed at.
    pub priv_: u8,
    /// The trap raised by an instruction that retires with an exception (`ecall`, `ebreak`).
    pub trap: Option<TrapInfo>,
    /// This `ecall`/`ebreak` was serviced by an extension of the hart (semihosting, SBI)
    /// instead of trapping ([`crate::extension`]).
    pub serviced: Option<Serviced>,
    /// `mtime` when the instruction retired.
    pub mtime: u64,
}

/// A memory access made by an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// Effective (physical) address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u8,
    /// Value loaded or stored (for AMOs: the value stored).
    pub value: u64,
    /// Kind of access.
    pub kind: MemKind,
}

/// Kind of a [`MemAccess`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// A load (including LR and the read half of an AMO).
    Load,
    /// A store (including a successful SC and the write half of an AMO).
    Store,
}

/// Instructions that retired one after the other in a pre-decoded block
/// ([`Observer::retire_run`]): no trap, the same privilege, and every one but the last goes on
/// in the block (none but the last is an uninferable jump: a `jalr` ends a block).
pub trait RetiredRun {
    /// Instructions in the run (at least 1).
    fn len(&self) -> usize;
    /// Whether the run is empty (never, for a run given to an observer).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The event [`Observer::retire`] would have had for instruction `i` (< `len`).
    fn get(&self, i: usize) -> Retired;
    /// Where instruction `i` (< `len - 1`: any but the last) is and how it went on, as
    /// [`RetiredRun::get`] would say: for observers that need no more, without the event's
    /// other fields (the default builds the event).
    #[inline(always)]
    fn step(&self, i: usize) -> RunStep {
        RunStep::of(&self.get(i))
    }
    /// What names the run's instructions before its last: two runs with the same id have
    /// the same [`RetiredRun::step`] at every `i` that both have before their last (runs of
    /// one pre-decoded block, however far each got), and two of the same length the same
    /// address, length and class of their last instruction ([`RetiredRun::last_step`] but
    /// for `taken`). An id is never given to other instructions in the process, also after
    /// the code is rewritten and decoded again, and only to runs of fewer than 64
    /// instructions. `None` (the default): no such name.
    #[inline(always)]
    fn block_id(&self) -> Option<u64> {
        None
    }
    /// `mtime` of instruction `i` (< `len`), as [`RetiredRun::get`] would say (for observers
    /// that need no more of the event; the default builds it).
    #[inline(always)]
    fn mtime(&self, i: usize) -> u64 {
        self.get(i).mtime
    }
    /// The bits of instruction `i` (< `len`), as [`RetiredRun::get`] would say.
    #[inline(always)]
    fn insn(&self, i: usize) -> u32 {
        self.get(i).insn
    }
    /// The privilege every instruction of the run executed at, as [`RetiredRun::get`] says.
    #[inline(always)]
    fn priv_(&self) -> u8 {
        self.get(0).priv_
    }
    /// [`RunStep::of`] the last instruction's event ([`RetiredRun::step`] is for the others).
    #[inline(always)]
    fn last_step(&self) -> RunStep {
        RunStep::of(&self.get(self.len() - 1))
    }
    /// [`RetiredRun::step`] of instructions `from..to` (`to` < `len`).
    #[inline(always)]
    fn steps(&self, from: usize, to: usize) -> impl Iterator<Item = RunStep> + '_ {
        (from..to).map(move |i| self.step(i))
    }
}

/// Where a retired instruction is and how it went on ([`RetiredRun::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunStep {
    /// Address of the instruction.
    pub pc: u64,
    /// Length in bytes.
    pub len: u8,
    /// Control-flow class.
    pub class: CfClass,
    /// Its next pc is not the one after it (a taken branch, a jump).
    pub taken: bool,
}

impl RunStep {
    /// The step of a retired instruction.
    #[inline(always)]
    pub fn of(ev: &Retired) -> RunStep {
        RunStep {
            pc: ev.pc,
            len: ev.len,
            class: ev.class,
            taken: ev.next_pc != ev.pc.wrapping_add(ev.len as u64),
        }
    }
}

/// Receives the hart's events. Every method has an empty default.
pub trait Observer {
    /// Whether this observer takes the instructions a pre-decoded block retired as one
    /// [`Observer::retire_run`] after the block instead of a [`Observer::retire`] after each
    /// (the block loop asks at compile time). Only for an observer to which the order of
    /// [`Observer::retire`] among the register and memory events of the instructions after it
    /// does not matter, and that is asked [`Observer::stop_requested`] once per run (a stop
    /// request takes effect after the run). The hart runs pre-decoded blocks with fused
    /// operations for it (one dispatch for a sequence of instructions; crates/sim/README.md,
    /// "Blocks"). Default false: every event in order.
    const RETIRE_RUNS: bool = false;

    /// Whether this observer takes no events at all (every method the default, like `()`): the
    /// hart then runs pre-decoded blocks with fused operations in a run compiled once, in the
    /// sim crate (crates/sim/README.md, "Blocks"). Default false.
    const QUIET: bool = false;

    /// An instruction retired.
    #[inline(always)]
    fn retire(&mut self, _ev: &Retired) {}

    /// Instructions retired in a block, as a run (only if [`Observer::RETIRE_RUNS`]; before a
    /// [`Observer::trap`] of a fault after them). The default gives each to
    /// [`Observer::retire`].
    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        for i in 0..run.len() {
            self.retire(&run.get(i));
        }
    }
    /// A trap was taken without retiring an instruction (a fault or an interrupt).
    #[inline(always)]
    fn trap(&mut self, _ev: &TrapInfo) {}
    /// An integer register was written (never called for `x0`).
    #[inline(always)]
    fn gpr_write(&mut self, _rd: u8, _value: u64) {}
    /// A floating-point register was written.
    #[inline(always)]
    fn fpr_write(&mut self, _rd: u8, _value: u64) {}
    /// A CSR was written by an instruction (value as read back afterwards). Also called for the
    /// implicit writes of instructions: `fflags` when an FP operation accrues new flags, and
    /// `mstatus` when FS becomes dirty. Not for trap entry (the new `mstatus` is in
    /// [`TrapInfo::mstatus`]) nor for `mret`/`sret` ([`Observer::trap_return`]).
    #[inline(always)]
    fn csr_write(&mut self, _csr: u16, _value: u64) {}
    /// A data memory access.
    #[inline(always)]
    fn mem_access(&mut self, _acc: &MemAccess) {}
    /// A trap return (`mret`, `sret`) set `mstatus` to `mstatus` (raw, without SD) and the
    /// privilege to `to_priv`; called before [`Observer::retire`] of that instruction.
    #[inline(always)]
    fn trap_return(&mut self, _mstatus: u64, _to_priv: u8) {}
    /// Asked after every retired instruction and every trap: `true` makes [`crate::Hart::run`]
    /// return [`crate::Stop::Requested`] (for stepping, breakpoints, checkers).
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        false
    }
}

/// The observer that observes nothing.
impl Observer for () {
    const QUIET: bool = true;
}

/// Every retired PC, in order (the `--pcs` list).
#[derive(Clone, Debug, Default)]
pub struct PcList(pub Vec<u64>);

impl Observer for PcList {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        self.0.push(ev.pc);
    }
}

/// Two observers side by side.
impl<A: Observer, B: Observer> Observer for (A, B) {
    const RETIRE_RUNS: bool = A::RETIRE_RUNS && B::RETIRE_RUNS;
    const QUIET: bool = A::QUIET && B::QUIET;
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        self.0.retire(ev);
        self.1.retire(ev);
    }
    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        self.0.retire_run(run);
        self.1.retire_run(run);
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        self.0.trap(ev);
        self.1.trap(ev);
    }
    #[inline(always)]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.0.gpr_write(rd, value);
        self.1.gpr_write(rd, value);
    }
    #[inline(always)]
    fn fpr_write(&mut self, rd: u8, value: u64) {
        self.0.fpr_write(rd, value);
        self.1.fpr_write(rd, value);
    }
    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.0.csr_write(csr, value);
        self.1.csr_write(csr, value);
    }
    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.0.mem_access(acc);
        self.1.mem_access(acc);
    }
    #[inline(always)]
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.0.trap_return(mstatus, to_priv);
        self.1.trap_return(mstatus, to_priv);
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        self.0.stop_requested() | self.1.stop_requested()
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    const RETIRE_RUNS: bool = O::RETIRE_RUNS;
    const QUIET: bool = O::QUIET;
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        (**self).retire(ev)
    }
    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        (**self).retire_run(run)
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        (**self).trap(ev)
    }
    #[inline(always)]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        (**self).gpr_write(rd, value)
    }
    #[inline(always)]
    fn fpr_write(&mut self, rd: u8, value: u64) {
        (**self).fpr_write(rd, value)
    }
    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        (**self).csr_write(csr, value)
    }
    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        (**self).mem_access(acc)
    }
    #[inline(always)]
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        (**self).trap_return(mstatus, to_priv)
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        (**self).stop_requested()
    }
}
