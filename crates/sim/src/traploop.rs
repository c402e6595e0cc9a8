//! Trap-loop detection: the one place for the rules that stop a hart caught in a loop of traps
//! that would otherwise spin until `--max-insns` (QEMU spins forever).
//!
//! 1. **Traps without a retired instruction**: [`NO_RETIRE_LIMIT`] traps in a row with no
//!    instruction retired between them (a handler whose first instruction faults), or a trap whose
//!    handler is not in memory.
//! 2. **A repeating exception with nothing else changing**: the same synchronous exception (cause
//!    and `epc`) taken again and again, where between two of them [`REPEAT_THRESHOLD`] or more
//!    occurrences apart nothing that could ever end the loop changed: the integer and
//!    floating-point registers (except `sp`), the privilege, the trap CSRs software keeps state in
//!    and all of RAM (for an exception taken from S or U: the RAM PMP lets that privilege reach,
//!    since a firmware that redirects the exception moves its own locks and counters each time)
//!    are the same, no interrupt was taken, and the hart did not look outside itself
//!    (no counter or time CSR read, no device access, no semihosting call). The hart is
//!    deterministic, so from such a state it can only repeat: the rule cannot fire on a program
//!    that makes progress, however slowly (a program whose progress lives in RAM passes the check
//!    and is looked at again after twice as many repetitions). Typical causes: a program built for
//!    an extension the hart lacks (`--isa rv32i` on RV32IMAC code: every compressed instruction
//!    traps, in the handler too) and a handler with a bad stack pointer (its first store faults,
//!    so only `sp` moves; `tval` follows it and is not compared).
//!
//! Everything here runs only when a trap is taken, never per instruction.

use crate::observer::TrapInfo;

/// Consecutive traps without a retired instruction after which the hart stops (rule 1).
pub const NO_RETIRE_LIMIT: u32 = 1000;
/// Repetitions of one exception after which rule 2 compares the whole machine state.
pub const REPEAT_THRESHOLD: u32 = 1000;

/// A trap loop the hart stopped in ([`crate::Hart::trap_loop`]): what repeats and the likely reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrapLoopReport {
    /// The repeating trap (the last one taken).
    pub trap: TrapInfo,
    /// How many times it was taken in a row.
    pub repeats: u64,
    /// The likely reason, for people ("the hart's ISA lacks C", ...), if one is known.
    pub reason: Option<String>,
}

/// State of both rules.
#[derive(Default)]
pub(crate) struct TrapLoop {
    // Rule 1.
    /// Handler address of the last trap, until an instruction retires (runaway detection).
    pub(crate) last_handler: Option<u64>,
    /// The first trap since the last retired instruction, with the instruction count then.
    pub(crate) first_fault: Option<(TrapInfo, u64)>,
    /// Traps taken since the last retired instruction.
    pub(crate) traps_without_retire: u32,
    // Rule 2.
    /// `(cause, epc)` of the exception being counted, and its snapshot.
    pub(crate) key: Option<(u64, u64)>,
    pub(crate) snapshot: Snapshot,
    pub(crate) repeats: u32,
    pub(crate) threshold: u32,
    pub(crate) ram_digest: Option<u64>,
    pub(crate) sp_at_digest: u64,
    /// The report of the loop the hart stopped in.
    pub(crate) report: Option<TrapLoopReport>,
}

/// The machine state rule 2 compares (besides RAM).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) x: [u64; 32],
    pub(crate) f: [u64; 32],
    pub(crate) priv_: u8,
    pub(crate) csrs: [u64; 9],
    /// The debug triggers' registers (a handler may make progress there alone).
    pub(crate) trig: [u64; 5],
}
