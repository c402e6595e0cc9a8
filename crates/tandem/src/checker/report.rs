//! What a check found (3.1 step 5: "report the difference"): the mismatches, the summary of a
//! whole trace, and why a check could not go on. The bottom layer: plain data and its text.

use crate::codec::DecodeError;
use std::fmt;

/// One element that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    /// The element: `x10 (a0)`, `pc`, `mepc`, `memory at 0x...`, ...
    pub element: String,
    /// What the reference hart model computed.
    pub expected: String,
    /// What the trace says.
    pub traced: String,
}

/// A group whose state differs from the reference's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Group number, counting every group of the trace from 1.
    pub group: u64,
    /// Byte offset of the group in the trace.
    pub offset: u64,
    /// Address of the instruction (or where the interrupt was taken).
    pub pc: u64,
    /// The instruction executed, if any (as the reference fetched it, else as traced).
    pub insn: Option<u32>,
    /// The instruction disassembled (or `interrupt`).
    pub disasm: String,
    /// The elements that differ.
    pub diffs: Vec<Diff>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mismatch in group {} (byte offset {}) at pc 0x{:x}",
            self.group, self.offset, self.pc
        )?;
        match self.insn {
            Some(i) => write!(f, ": {} ({})", self.disasm, insn_hex(i))?,
            None => write!(f, ": {}", self.disasm)?,
        }
        for d in &self.diffs {
            write!(
                f,
                "\n    {}: expected {}, traced {}",
                d.element, d.expected, d.traced
            )?;
        }
        Ok(())
    }
}

pub(super) fn insn_hex(i: u32) -> String {
    if i & 3 != 3 {
        format!("{:04x}", i & 0xffff)
    } else {
        format!("{i:08x}")
    }
}

/// Whether the trace is of the program the reference runs (the ELF).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ProgramCheck {
    /// Nothing compared yet (checking stopped before the first instruction).
    #[default]
    Pending,
    /// The trace initializes no memory before its first instruction (`init` or `mem` absent):
    /// the reference runs the ELF as loaded.
    NotInTrace,
    /// The trace's initial memory is the ELF's loadable contents.
    Same {
        /// Bytes the trace's initial memory wrote.
        bytes: u64,
    },
    /// The trace's initial memory differs from the ELF's.
    Differs {
        /// The lowest address that differs.
        addr: u64,
        /// What the ELF has there.
        elf: String,
        /// What the trace's initial memory has there.
        traced: String,
        /// Differing places (stores that differ, runs of the ELF's bytes the trace lacks).
        count: u64,
    },
}

/// How the trace ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TraceEnd {
    /// Checking did not reach the end (a malformed trace, an I/O error).
    #[default]
    Incomplete,
    /// With the program's exit, in this group.
    Exit(u64),
    /// After a whole group, the run having been stopped early ([`RunEnd::Stopped`](super::RunEnd::Stopped)).
    Stopped,
    /// The reference stopped before the trace ended ([`CheckSummary::reference_stopped`]).
    ReferenceStopped,
    /// Truncated at a group boundary: after a whole group, but the program had not ended.
    Unfinished {
        /// Where the reference would go on.
        pc: u64,
    },
    /// Truncated inside a group: at the end of a record (no end group) or inside one.
    Truncated {
        /// Byte offset of the unfinished group (or of the records outside any group).
        group_offset: u64,
        /// The last record is cut too.
        in_record: bool,
    },
    /// The trace has another number of groups than the producer wrote (the sidecar's).
    GroupCount {
        /// Groups the producer wrote.
        expected: u64,
    },
}

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    /// Groups read.
    pub groups: u64,
    /// Instruction, trap and interrupt groups checked against the reference.
    pub checked: u64,
    /// State initialization (and reset) groups, applied to both.
    pub init: u64,
    /// Runs of records outside any group, applied to both (chapter 3 allows them).
    pub outside: u64,
    /// Mismatches reported (groups, and the program comparison).
    pub mismatches: u64,
    /// Bytes of the trace read (for a malformed trace: where it became malformed).
    pub bytes: u64,
    /// The reference stopped before the trace ended (the message says why).
    pub reference_stopped: Option<String>,
    /// Whether the trace is of the ELF's program.
    pub program: ProgramCheck,
    /// How the trace ended.
    pub end: TraceEnd,
    /// Semihosting calls whose results (a0, memory written) a partial trace does not carry.
    pub unknown_results: u64,
    /// The first such call: group and pc.
    pub first_unknown: Option<(u64, u64)>,
}

impl CheckSummary {
    /// The trace verified: no mismatch, and whole (it ends where the program or run ended).
    pub fn passed(&self) -> bool {
        self.mismatches == 0 && matches!(self.end, TraceEnd::Exit(_) | TraceEnd::Stopped)
    }
}

impl fmt::Display for CheckSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} groups: {} instructions and traps checked, {} state initialization; {} mismatch{}",
            self.groups,
            self.checked,
            self.init,
            self.mismatches,
            if self.mismatches == 1 { "" } else { "es" }
        )?;
        if self.outside > 0 {
            write!(f, "; {} runs of updates outside any group", self.outside)?;
        }
        match &self.program {
            ProgramCheck::Pending => {}
            ProgramCheck::NotInTrace => write!(
                f,
                "\n  program: the trace initializes no memory: the reference runs the ELF's"
            )?,
            ProgramCheck::Same { bytes } => write!(
                f,
                "\n  program: the trace's initial memory is the ELF's ({bytes} bytes)"
            )?,
            ProgramCheck::Differs {
                addr,
                elf,
                traced,
                count,
            } => write!(
                f,
                "\n  program: NOT THE ELF'S: the trace's initial memory differs from the ELF's \
                 in {count} place{}, first at 0x{addr:x}: the ELF has {elf}, the trace {traced}",
                if *count == 1 { "" } else { "s" }
            )?,
        }
        match &self.end {
            TraceEnd::Incomplete => {}
            TraceEnd::Exit(g) => write!(f, "\n  end: with the program's exit (group {g})")?,
            TraceEnd::Stopped => write!(
                f,
                "\n  end: where the run was stopped before the program ended (as the sidecar says)"
            )?,
            TraceEnd::ReferenceStopped => {}
            TraceEnd::Unfinished { pc } => write!(
                f,
                "\n  end: TRUNCATED: the trace ends after group {} (byte offset {}), but the \
                 program had not ended (it goes on at pc 0x{pc:x}); a trace of a run stopped \
                 early says `end = stopped` in its sidecar",
                self.groups, self.bytes
            )?,
            TraceEnd::Truncated {
                group_offset,
                in_record,
            } => write!(
                f,
                "\n  end: TRUNCATED: the trace ends inside group {} (byte offset {group_offset}), \
                 {} at byte offset {}",
                self.groups + 1,
                if *in_record {
                    "in the middle of a record"
                } else {
                    "before its end group"
                },
                self.bytes
            )?,
            TraceEnd::GroupCount { expected } => write!(
                f,
                "\n  end: TRUNCATED or extended: the trace has {} groups, the producer wrote \
                 {expected} (the sidecar's `groups`)",
                self.groups
            )?,
        }
        if let Some(m) = &self.reference_stopped {
            write!(f, "\n  the reference stopped: {m}")?;
        }
        if let Some((g, pc)) = self.first_unknown {
            write!(
                f,
                "\n  note: {} semihosting call{} without {} results in the trace (the first in \
                 group {g} at pc 0x{pc:x}): the trace leaves out gpr or mem (protocol 3.2), so the \
                 checker cannot know what the host returned; mismatches after it may come from \
                 that (`rvtrace run --tandem-omit` keeps these results)",
                self.unknown_results,
                if self.unknown_results == 1 { "" } else { "s" },
                if self.unknown_results == 1 {
                    "its"
                } else {
                    "their"
                },
            )?;
        }
        Ok(())
    }
}

/// Why a check could not go on.
#[derive(Debug)]
pub enum CheckError {
    /// Reading the trace failed.
    Io(std::io::Error),
    /// The trace is malformed from this offset on.
    Malformed(DecodeError),
    /// The trace breaks a rule of the protocol the checker needs (offset and message).
    Protocol(u64, String),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Io(e) => write!(f, "reading the trace: {e}"),
            CheckError::Malformed(e) => write!(f, "{e}"),
            CheckError::Protocol(off, m) => {
                write!(f, "malformed trace at byte offset {off} (0x{off:x}): {m}")
            }
        }
    }
}

impl std::error::Error for CheckError {}
