//! The checker: tandem verification of a trace against the hart model (chapter 3.1, "Tandem
//! Verification"), with partial traces (3.2).
//!
//! For each group of the trace:
//!
//! 1. the group's state changes are applied to a *shadow state* (3.1 step 1);
//! 2. non-deterministic state is in place in the reference hart (3.1 step 2): `mtime`, the
//!    counters and the software-writable bits of `mip` are copied from the shadow after each
//!    group, so they are there before the next instruction runs (a group's values are those
//!    after its instruction: copying them before it would let the instruction see its own
//!    future). An interrupt the trace shows is taken by the reference even when its own timer
//!    says otherwise, and one the trace does not show is held off; a load from a device (outside
//!    RAM) takes the traced value, and a semihosting call takes its results (`a0`, the memory it
//!    wrote) from the trace instead of doing host I/O again;
//! 3. the reference hart steps one instruction or trap (3.1 step 3);
//! 4. shadow and reference are compared (3.1 step 4) the efficient way 3.1 allows: all
//!    integer and floating-point registers, the pc and the privilege mode every time, and every
//!    CSR and memory location that either side changed, so an erroneous change is caught
//!    whichever side made it;
//! 5. a difference is reported, then the shadow state is copied to the reference (3.1 step 5).
//!
//! Elements a partial trace leaves out are neither compared nor copied (3.2).
//!
//! A difference that came from the trace alone (a value damaged on its way, the rest of the
//! trace consistent with the correct value) would otherwise be reported again at every later
//! instruction that reads the copied value. So when a later group does not match after such a
//! copy, the checker steps that instruction again from the reference's own values; if it then
//! matches, the trace went on from the correct value, and only the first group is reported.
//!
//! Reading does not depend on how our producer writes: the pc may come incremented or in full,
//! records may come in any order within a group, the end group may be left out before a begin
//! group (chapter 3: "end group is implied by a begin group"), and register writes may use the
//! incremental forms.
//!
//! What a trace must be to pass, beyond matching the reference group by group:
//!
//! * **Of this program.** The state initialization before the first instruction (the program
//!   load) is compared with what the reference loaded from the ELF: every store with the ELF's
//!   bytes at its address, every non-zero byte of the ELF with some store, and the registers it
//!   sets with the reference's reset state. The first difference (the lowest address) is
//!   reported, as a mismatch ([`ProgramCheck`]). A trace without initial memory (`init` or `mem`
//!   absent) leaves the reference with the ELF's, and the summary says so.
//! * **Whole.** The trace must end where the program ended: its exit is visible in the trace
//!   (a semihosting `SYS_EXIT`/`SYS_EXIT_EXTENDED` call, or a store to an exit device: HTIF
//!   `tohost`, the SiFive test finisher), unless the options say the run was stopped early
//!   ([`RunEnd::Stopped`], from the sidecar that `rvtrace run` writes). A trace that ends at a
//!   group boundary before that, inside a group (no end group: the end of the trace does not
//!   imply one), or inside a record is truncated ([`TraceEnd`]). The protocol has no end-of-trace
//!   record, so the program's own end is the only mark a foreign trace can carry; the sidecar's
//!   group count (`groups = N`) is checked too when it is given.
//! * **Unambiguous** (chapter 3: "Only unambiguous state changes are allowed"): within a group,
//!   the pc, the privilege mode, the instruction, `mtime` and each register are given at most
//!   once; an end group ends a group (not one outside any group).
//! * **Nothing more than happened.** A register the trace writes must be one the reference's
//!   instruction wrote (a write of the value the register already held is no state change, but
//!   it is not what the instruction did), and a register address must be a register (chapter 3:
//!   the Debug Specification's address space). A memory response has its request's size, and a
//!   failure where the reference's access succeeded is a mismatch.
//!
//! Semihosting results are non-deterministic input (host I/O): the checker takes them from the
//! trace. A partial trace (3.2) still needs them; `rvtrace run` writes them even when `gpr` or
//! `mem` is absent. A call whose results a partial trace lacks is counted and explained in the
//! summary ([`CheckSummary::unknown_results`]): mismatches after it may come from that.
//!
//! Resources stay bounded on any input: a group may hold at most [`MAX_GROUP_BYTES`] bytes,
//! [`MAX_GROUP_REGS`] register updates and [`MAX_GROUP_MEMS`] memory requests.

use crate::codec::{
    decode_record, mask_bits, mem_op, reg, AddlState, DecodeError, ErrorKind, Params, Record,
};
use crate::dump::{priv_name, reg_name};
use crate::meta::Elements;
use crate::producer::canonical_csr;
use rvtrace_image::Image;
use rvtrace_isa::disasm::disasm;
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::Clint;
use rvtrace_sim::csr::{irq, mstatus, num, Csrs};
use rvtrace_sim::decode::{decode, Op};
use rvtrace_sim::{Hart, MemAccess, MemKind, Observer, Retired, Stop, TrapInfo};
use std::fmt;
use std::io::Read;

/// Checker options.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Codec parameters of the trace.
    pub params: Params,
    /// Elements the trace leaves out (3.2).
    pub absent: Elements,
    /// How the run that wrote the trace ended.
    pub run_end: RunEnd,
    /// The number of groups the producer wrote, when known (the sidecar's `groups`).
    pub groups: Option<u64>,
}

impl CheckOptions {
    /// Options for a trace of a run that ended with the program's exit, group count unknown.
    pub fn new(params: Params, absent: Elements) -> CheckOptions {
        CheckOptions {
            params,
            absent,
            run_end: RunEnd::Exit,
            groups: None,
        }
    }
}

/// How the run that wrote a trace ended (the sidecar's `end`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunEnd {
    /// The program ended (or nothing is known): the trace must end with the program's exit.
    #[default]
    Exit,
    /// The run was stopped before the program ended (`--max-insns`, an error): the trace may end
    /// after any whole group.
    Stopped,
}

/// Largest group the checker reads (bytes). Our producer's largest groups are the 4 KiB chunks
/// of the program load and semihosting reads; a group must fit in memory to be applied
/// atomically (chapter 3), and a bound keeps memory flat on hostile input.
pub const MAX_GROUP_BYTES: usize = 1 << 20;
/// Most register updates in one group (every GPR, FPR and CSR once, and then some).
pub const MAX_GROUP_REGS: usize = 8192;
/// Most memory requests (and effective addresses, store data) in one group: a semihosting read
/// of 512 KiB in 8-byte stores.
pub const MAX_GROUP_MEMS: usize = 1 << 16;

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

fn insn_hex(i: u32) -> String {
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
    /// After a whole group, the run having been stopped early ([`RunEnd::Stopped`]).
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

// ---------------------------------------------------------------------------------------------
// Reading groups.

/// A register update of a group.
#[derive(Clone, Copy, Debug)]
enum RegUpd {
    Full(u64),
    Add(i8),
    Or(u8),
}

/// A memory response: size code, result (0 success, 1 failure), data.
#[derive(Clone, Copy, Debug)]
struct MemRsp {
    size: u8,
    result: u8,
    data: Option<u64>,
}

/// A memory request of a group with its response, if any.
#[derive(Clone, Copy, Debug)]
struct MemItem {
    addr: u64,
    op: u8,
    size: u8,
    data: Option<u64>,
    rsp: Option<MemRsp>,
}

/// The contents of one group (or of the records between two groups).
#[derive(Debug)]
struct Group {
    offset: u64,
    /// A begin group opened it (else: records outside any group).
    grouped: bool,
    insn: Option<(u32, u8)>,
    incr_pc: bool,
    new_pc: Option<u64>,
    priv_: Option<u8>,
    regs: Vec<(u16, RegUpd)>,
    mems: Vec<MemItem>,
    eaddrs: Vec<u64>,
    store_data: Vec<(u8, u64)>,
    mtime: Option<u64>,
    state_init: bool,
    hart_reset: bool,
    /// The first element given twice (chapter 3: "Only unambiguous state changes are allowed").
    ambiguous: Option<String>,
    /// Register addresses below 0x1040 seen in this group (one bit each).
    reg_seen: [u64; 65],
    /// More records than [`MAX_GROUP_REGS`] or [`MAX_GROUP_MEMS`] (the rest are dropped).
    too_long: bool,
}

impl Default for Group {
    fn default() -> Group {
        Group {
            offset: 0,
            grouped: false,
            insn: None,
            incr_pc: false,
            new_pc: None,
            priv_: None,
            regs: Vec::new(),
            mems: Vec::new(),
            eaddrs: Vec::new(),
            store_data: Vec::new(),
            mtime: None,
            state_init: false,
            hart_reset: false,
            ambiguous: None,
            reg_seen: [0; 65],
            too_long: false,
        }
    }
}

impl Group {
    fn clear(&mut self) {
        for &(a, _) in &self.regs {
            if (a as usize) < 65 * 64 {
                self.reg_seen[a as usize / 64] = 0;
            }
        }
        self.grouped = false;
        self.insn = None;
        self.incr_pc = false;
        self.new_pc = None;
        self.priv_ = None;
        self.regs.clear();
        self.mems.clear();
        self.eaddrs.clear();
        self.store_data.clear();
        self.mtime = None;
        self.state_init = false;
        self.hart_reset = false;
        self.ambiguous = None;
        self.too_long = false;
    }

    fn is_empty(&self) -> bool {
        !self.grouped
            && self.insn.is_none()
            && !self.incr_pc
            && self.new_pc.is_none()
            && self.priv_.is_none()
            && self.regs.is_empty()
            && self.mems.is_empty()
            && self.eaddrs.is_empty()
            && self.store_data.is_empty()
            && self.mtime.is_none()
            && !self.state_init
            && !self.hart_reset
    }

    #[cold]
    fn twice(&mut self, what: impl FnOnce() -> String) {
        if self.ambiguous.is_none() {
            self.ambiguous = Some(what());
        }
    }

    #[inline]
    fn push_reg(&mut self, addr: u16, upd: RegUpd) {
        let a = addr as usize;
        if a < 65 * 64 {
            let (w, b) = (a / 64, 1u64 << (a % 64));
            if self.reg_seen[w] & b != 0 {
                self.twice(|| reg_name(addr));
            }
            self.reg_seen[w] |= b;
        }
        if self.regs.len() < MAX_GROUP_REGS {
            self.regs.push((addr, upd));
        } else {
            self.too_long = true;
        }
    }

    /// Room for one more memory record.
    #[inline]
    fn mem_room(&mut self) -> bool {
        let ok = self.mems.len() + self.eaddrs.len() + self.store_data.len() < MAX_GROUP_MEMS;
        self.too_long |= !ok;
        ok
    }
}

/// Reads a trace from a [`Read`] group by group, with a buffer that grows for long groups (up
/// to [`MAX_GROUP_BYTES`]).
struct GroupReader<R: Read> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    /// Trace offset of `buf[0]`.
    base: u64,
    eof: bool,
    params: Params,
}

enum Next {
    Unit,
    End,
    /// The trace ends inside the unit read so far (which is not applied).
    Truncated {
        in_record: bool,
    },
}

impl<R: Read> GroupReader<R> {
    fn new(src: R, params: Params) -> Self {
        GroupReader {
            src,
            buf: Vec::with_capacity(1 << 20),
            pos: 0,
            base: 0,
            eof: false,
            params,
        }
    }

    /// Offset in the trace of the next byte to read.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes read from the source.
    fn read_bytes(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Read more bytes, keeping `buf[keep..]`. False at the end of the input.
    fn refill(&mut self, keep: usize) -> Result<bool, CheckError> {
        if self.eof {
            return Ok(false);
        }
        self.buf.drain(..keep);
        self.base += keep as u64;
        self.pos -= keep;
        let want = self.buf.len() + (1 << 20);
        let old = self.buf.len();
        self.buf.resize(want, 0);
        let mut got = old;
        while got < want {
            match self.src.read(&mut self.buf[got..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CheckError::Io(e)),
            }
        }
        self.buf.truncate(got);
        Ok(got > old)
    }

    /// Read the next group (or the run of records outside any group) into `g`.
    fn next(&mut self, g: &mut Group) -> Result<Next, CheckError> {
        loop {
            let start = self.pos;
            match self.parse(g) {
                Ok(n) => {
                    if g.too_long {
                        return Err(CheckError::Protocol(
                            g.offset,
                            format!(
                                "a group with more than {MAX_GROUP_REGS} register updates or \
                                 {MAX_GROUP_MEMS} memory records (the checker's limit)"
                            ),
                        ));
                    }
                    return Ok(n);
                }
                Err(ParseErr::NeedMore) => {
                    self.pos = start;
                    if self.buf.len() - start > MAX_GROUP_BYTES {
                        return Err(CheckError::Protocol(
                            self.base + start as u64,
                            format!(
                                "a group longer than {} MiB (the checker's limit)",
                                MAX_GROUP_BYTES >> 20
                            ),
                        ));
                    }
                    self.refill(start)?;
                }
                Err(ParseErr::Bad(e)) => return Err(e),
            }
        }
    }

    fn parse(&mut self, g: &mut Group) -> Result<Next, ParseErr> {
        g.clear();
        g.offset = self.offset();
        let mut prev_req: Option<u8> = None;
        loop {
            let b = &self.buf[self.pos..];
            if b.is_empty() {
                if !self.eof {
                    return Err(ParseErr::NeedMore);
                }
                // The end of the trace does not end an open group (chapter 3 lets only a begin
                // group imply an end group): the group is cut short.
                return Ok(if g.grouped {
                    Next::Truncated { in_record: false }
                } else if g.is_empty() {
                    Next::End
                } else {
                    Next::Unit
                });
            }
            let off = self.offset();
            let (rec, n) = match decode_record(b, &self.params, prev_req) {
                Ok(x) => x,
                Err(ErrorKind::Truncated { .. }) if !self.eof => return Err(ParseErr::NeedMore),
                Err(ErrorKind::Truncated { .. }) => {
                    return Ok(Next::Truncated { in_record: true });
                }
                Err(kind) => {
                    return Err(ParseErr::Bad(CheckError::Malformed(DecodeError {
                        offset: off,
                        kind,
                    })))
                }
            };
            // A 16-bit instruction opcode whose parcel says 32 bits (C.5) needs 2 more bytes.
            if matches!(rec, Record::Insn16(i) if i & 3 == 3) && !self.eof {
                return Err(ParseErr::NeedMore);
            }
            match rec {
                Record::BeginGroup => {
                    if g.grouped || !g.is_empty() {
                        // An end group is implied by a begin group (chapter 3); the begin group
                        // is read again as the start of the next unit.
                        return Ok(Next::Unit);
                    }
                    g.grouped = true;
                    g.offset = off;
                }
                Record::EndGroup => {
                    if g.grouped {
                        self.pos += n;
                        return Ok(Next::Unit);
                    }
                    return Err(ParseErr::Bad(CheckError::Protocol(
                        off,
                        "an end group outside any group".into(),
                    )));
                }
                Record::IncrPc => {
                    if g.incr_pc || g.new_pc.is_some() {
                        g.twice(|| "pc".into());
                    }
                    g.incr_pc = true;
                }
                Record::FullReg { addr, value } => g.push_reg(addr, RegUpd::Full(value)),
                Record::IncrRegAdd { addr, offset } => g.push_reg(addr, RegUpd::Add(offset)),
                Record::IncrRegOr { addr, mask } => g.push_reg(addr, RegUpd::Or(mask)),
                Record::State(s) => match s {
                    AddlState::Priv(p) => {
                        if g.priv_.is_some() {
                            g.twice(|| "privilege mode".into());
                        }
                        g.priv_ = Some(p)
                    }
                    AddlState::Paddr(a) | AddlState::Eaddr(a) => {
                        if g.mem_room() {
                            g.eaddrs.push(a)
                        }
                    }
                    AddlState::StoreData { size, value } => {
                        if g.mem_room() {
                            g.store_data.push((size, value))
                        }
                    }
                    AddlState::Mtime(t) => {
                        if g.mtime.is_some() {
                            g.twice(|| "mtime".into());
                        }
                        g.mtime = Some(t)
                    }
                    AddlState::PcPaddr(_) => {}
                    AddlState::Pc(v) => {
                        if g.incr_pc || g.new_pc.is_some() {
                            g.twice(|| "pc".into());
                        }
                        g.new_pc = Some(v)
                    }
                },
                Record::MemReq {
                    addr,
                    op,
                    size,
                    data,
                } => {
                    if g.mem_room() {
                        g.mems.push(MemItem {
                            addr,
                            op,
                            size,
                            data,
                            rsp: None,
                        })
                    }
                }
                Record::MemRsp { size, result, data } => {
                    // (The response of a request dropped for `too_long` goes nowhere.)
                    if let (Some(m), false) = (g.mems.last_mut(), g.too_long) {
                        m.rsp = Some(MemRsp { size, result, data });
                    }
                }
                Record::HartReset => g.hart_reset = true,
                Record::StateInit => g.state_init = true,
                Record::Insn16(i) => {
                    if g.insn.is_some() {
                        g.twice(|| "instruction".into());
                    }
                    g.insn = Some((i as u32, 2))
                }
                Record::Insn32(i) => {
                    if g.insn.is_some() {
                        g.twice(|| "instruction".into());
                    }
                    g.insn = Some((i, 4))
                }
            }
            prev_req = match rec {
                Record::MemReq { op, .. } => Some(op),
                _ => None,
            };
            self.pos += n;
        }
    }
}

enum ParseErr {
    NeedMore,
    Bad(CheckError),
}

// ---------------------------------------------------------------------------------------------
// The reference's events during one step.

#[derive(Default)]
struct StepObserver {
    retired: Option<Retired>,
    trap: Option<TrapInfo>,
    csrs: Vec<u16>,
    mems: Vec<MemAccess>,
    /// Integer and floating-point registers written (bit n: register n).
    gprs: u32,
    fprs: u32,
    done: bool,
}

impl StepObserver {
    fn clear(&mut self) {
        self.retired = None;
        self.trap = None;
        self.csrs.clear();
        self.mems.clear();
        self.gprs = 0;
        self.fprs = 0;
        self.done = false;
    }
}

impl Observer for StepObserver {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        self.retired = Some(*ev);
        self.done = true;
    }
    #[inline]
    fn trap(&mut self, ev: &TrapInfo) {
        self.trap = Some(*ev);
        self.done = true;
    }
    #[inline]
    fn gpr_write(&mut self, rd: u8, _value: u64) {
        self.gprs |= 1 << (rd & 31);
    }
    #[inline]
    fn fpr_write(&mut self, rd: u8, _value: u64) {
        self.fprs |= 1 << (rd & 31);
    }
    #[inline]
    fn csr_write(&mut self, csr: u16, _value: u64) {
        self.csrs.push(canonical_csr(csr));
    }
    #[inline]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.mems.push(*acc);
    }
    #[inline]
    fn stop_requested(&mut self) -> bool {
        self.done
    }
}

// ---------------------------------------------------------------------------------------------
// The program: the ELF's loadable contents, to compare the trace's initial memory with.

/// A loaded segment: physical base, the ELF's bytes, and which bytes the trace's initial memory
/// wrote (one bit each).
struct Segment {
    base: u64,
    data: Vec<u8>,
    covered: Vec<u64>,
}

#[derive(Default)]
struct Program {
    segs: Vec<Segment>,
    /// Bytes the trace's initial memory wrote.
    bytes: u64,
    /// The lowest differing address so far: address, ELF's value, trace's value, group, offset.
    first: Option<(u64, String, String, u64, u64)>,
    count: u64,
}

impl Program {
    fn new(image: &Image) -> Program {
        let segs = image
            .segments()
            .iter()
            .filter(|s| !s.data.is_empty())
            .map(|s| Segment {
                base: s.paddr,
                data: s.data.clone(),
                covered: vec![0; s.data.len().div_ceil(64)],
            })
            .collect();
        Program {
            segs,
            ..Program::default()
        }
    }

    fn differ(&mut self, addr: u64, elf: String, traced: String, group: u64, offset: u64) {
        self.count += 1;
        if self.first.as_ref().is_none_or(|f| addr < f.0) {
            self.first = Some((addr, elf, traced, group, offset));
        }
    }

    /// A store of the trace's initial memory: `n` bytes of `data` at `addr`; `in_ram` when the
    /// address is the hart's memory.
    fn store(&mut self, addr: u64, n: usize, data: u64, in_ram: bool, group: u64, offset: u64) {
        self.bytes += n as u64;
        let traced = format!("0x{:0w$x}", mask_bits(data, 8 * n as u32), w = 2 * n);
        if !in_ram {
            self.differ(
                addr,
                "no memory there".into(),
                format!("a store of {traced}"),
                group,
                offset,
            );
            return;
        }
        let mut elf = [0u8; 8];
        for (k, e) in elf.iter_mut().enumerate().take(n) {
            let a = addr.wrapping_add(k as u64);
            if let Some(s) = self
                .segs
                .iter_mut()
                .find(|s| a >= s.base && a - s.base < s.data.len() as u64)
            {
                let i = (a - s.base) as usize;
                *e = s.data[i];
                s.covered[i / 64] |= 1 << (i % 64);
            }
        }
        let ev = u64::from_le_bytes(elf);
        if ev != mask_bits(data, 8 * n as u32) {
            self.differ(
                addr,
                format!("0x{ev:0w$x}", w = 2 * n),
                traced,
                group,
                offset,
            );
        }
    }

    /// Runs of the ELF's non-zero bytes that the trace's initial memory did not write (zero
    /// bytes need no store: RAM starts zeroed).
    fn uncovered(&mut self, group: u64, offset: u64) {
        let mut found = Vec::new();
        for s in &self.segs {
            let missing = |k: usize| s.data[k] != 0 && s.covered[k / 64] & (1 << (k % 64)) == 0;
            let mut k = 0;
            while k < s.data.len() {
                if !missing(k) {
                    k += 1;
                    continue;
                }
                let start = k;
                while k < s.data.len() && missing(k) {
                    k += 1;
                }
                let shown: Vec<String> = s.data[start..k.min(start + 8)]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                found.push((s.base + start as u64, shown.join(" ")));
            }
        }
        for (a, bytes) in found {
            self.differ(
                a,
                format!("bytes {bytes}"),
                "nothing (not in its initial memory)".into(),
                group,
                offset,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shadow state.

const NCSR: usize = 4096;

/// The CSRs whose values are non-deterministic: copied, never compared.
fn csr_nondet(c: u16) -> bool {
    matches!(c, 0x144 | 0x344 | 0xb00..=0xb1f | 0xb80..=0xb9f | 0xc00..=0xc1f | 0xc80..=0xc9f)
}

/// State of the reference that a step may change and a retry must undo.
struct Snapshot {
    x: [u64; 32],
    f: [u64; 32],
    pc: u64,
    priv_: u8,
    csr: Csrs,
    instret: u64,
    clint: Clint,
    mem: Option<(u64, [u8; 8])>,
}

/// A value the reference computed where the trace said otherwise and the shadow's was copied in
/// (3.1 step 5): kept in case the trace goes on from the reference's value.
#[derive(Clone, Copy, Debug)]
enum Alt {
    Gpr(u8, u64),
    Fpr(u8, u64),
    Csr(u16, u64),
    Pc(u64),
    Priv(u8),
    Mem(u64, u8, u64),
}

/// How long an unresolved alternative is kept (groups).
const ALT_LIFETIME: u64 = 100_000;

/// The tandem verifier: a reference hart, a shadow state and the 3.1 procedure.
pub struct Checker {
    hart: Hart,
    opts: CheckOptions,
    xlen: Xlen,
    xmask: u64,
    // Shadow state.
    x: [u64; 32],
    f: [u64; 32],
    pc: u64,
    priv_: u8,
    csr: Vec<u64>,
    // Per-group scratch.
    obs: StepObserver,
    traced_csrs: Vec<u16>,
    diffs: Vec<Diff>,
    /// Differences the trace shows by itself (not by comparison): reported with the group's.
    trace_diffs: Vec<Diff>,
    matched: Vec<bool>,
    alts: Vec<Alt>,
    alt_since: u64,
    summary: CheckSummary,
    stopped: bool,
    /// An instruction group was read (the program load is over).
    running: bool,
    /// The group with the program's exit.
    exited: Option<u64>,
    program: Program,
}

impl Checker {
    /// A checker with `hart` as the reference: the program of `image` loaded, semihosting off
    /// (its calls are taken from the trace), not run yet. The trace's initial memory is compared
    /// with `image`'s loadable contents.
    pub fn new(mut hart: Hart, image: &Image, opts: CheckOptions) -> Checker {
        hart.bus.console = Box::new(std::io::sink());
        let xlen = hart.xlen;
        let mut csr = vec![0u64; NCSR];
        let xmask = mask_bits(u64::MAX, xlen.bits());
        for (c, v) in csr.iter_mut().enumerate() {
            *v = hart.csr_read(c as u16).unwrap_or(0) & xmask;
        }
        Checker {
            x: hart.x,
            f: hart.f,
            pc: hart.pc,
            priv_: hart.priv_,
            hart,
            opts,
            xlen,
            xmask,
            csr,
            obs: StepObserver::default(),
            traced_csrs: Vec::new(),
            diffs: Vec::new(),
            trace_diffs: Vec::new(),
            matched: Vec::new(),
            alts: Vec::new(),
            alt_since: 0,
            summary: CheckSummary::default(),
            stopped: false,
            running: false,
            exited: None,
            program: Program::new(image),
        }
    }

    /// The reference hart.
    pub fn hart(&self) -> &Hart {
        &self.hart
    }

    /// What was checked so far: after [`Checker::check`] failed, the partial summary up to the
    /// malformed bytes ([`CheckSummary::bytes`]).
    pub fn summary(&self) -> &CheckSummary {
        &self.summary
    }

    #[inline(always)]
    fn sext(&self, v: u64) -> u64 {
        match self.xlen {
            Xlen::Rv32 => v as i32 as i64 as u64,
            Xlen::Rv64 => v,
        }
    }

    #[inline(always)]
    fn absent(&self, e: Elements) -> bool {
        self.opts.absent.has(e)
    }

    /// Check the trace read from `src`, calling `report` for each mismatch. On an error, the
    /// partial summary is [`Checker::summary`].
    pub fn check<R: Read>(
        &mut self,
        src: R,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<CheckSummary, CheckError> {
        let mut rd = GroupReader::new(src, self.opts.params);
        let r = self.check_groups(&mut rd, report);
        self.summary.bytes = match &r {
            Ok(()) | Err(CheckError::Io(_)) => rd.read_bytes(),
            Err(CheckError::Malformed(e)) => e.offset,
            Err(CheckError::Protocol(off, _)) => *off,
        };
        r?;
        Ok(self.summary.clone())
    }

    fn check_groups<R: Read>(
        &mut self,
        rd: &mut GroupReader<R>,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<(), CheckError> {
        let mut g = Group::default();
        loop {
            match rd.next(&mut g)? {
                Next::End => {
                    self.finish_trace(report);
                    return Ok(());
                }
                Next::Truncated { in_record } => {
                    if !self.running {
                        self.finish_program(report);
                    }
                    self.summary.end = TraceEnd::Truncated {
                        group_offset: g.offset,
                        in_record,
                    };
                    return Ok(());
                }
                Next::Unit => {}
            }
            if g.grouped {
                self.summary.groups += 1;
            }
            if g.hart_reset || g.state_init || !g.grouped {
                if g.insn.is_some() || g.incr_pc {
                    return Err(CheckError::Protocol(
                        g.offset,
                        if g.grouped {
                            "an instruction in a state initialization or hart reset group \
                             (chapter 3 forbids it)"
                                .into()
                        } else {
                            "an instruction outside any group".into()
                        },
                    ));
                }
                self.apply_init(&g, report);
                if g.grouped {
                    self.summary.init += 1;
                } else {
                    self.summary.outside += 1;
                }
                continue;
            }
            if !self.running {
                self.finish_program(report);
                self.running = true;
            }
            if self.stopped {
                continue;
            }
            if let Some(e) = self.exited {
                // Nothing runs after the program's exit.
                self.stop_reference(
                    &g,
                    self.hart.pc,
                    format!("the program exited in group {e}"),
                    report,
                );
                continue;
            }
            self.step_group(&g, report);
        }
    }

    /// The end of the trace after a whole group: it must be the program's end.
    fn finish_trace(&mut self, report: &mut dyn FnMut(&Mismatch)) {
        if !self.running {
            self.finish_program(report);
        }
        let s = &mut self.summary;
        s.end = if s.reference_stopped.is_some() {
            TraceEnd::ReferenceStopped
        } else if let Some(g) = self.exited {
            TraceEnd::Exit(g)
        } else if self.opts.run_end == RunEnd::Stopped {
            TraceEnd::Stopped
        } else {
            TraceEnd::Unfinished { pc: self.hart.pc }
        };
        if let Some(n) = self.opts.groups {
            if n != s.groups && matches!(s.end, TraceEnd::Exit(_) | TraceEnd::Stopped) {
                s.end = TraceEnd::GroupCount { expected: n };
            }
        }
    }

    /// The program load is over: the trace's initial memory against the ELF's.
    fn finish_program(&mut self, report: &mut dyn FnMut(&Mismatch)) {
        let p = &mut self.program;
        let expected =
            !self.opts.absent.has(Elements::INIT) && !self.opts.absent.has(Elements::MEM);
        if p.bytes == 0 && !expected {
            self.summary.program = ProgramCheck::NotInTrace;
            return;
        }
        p.uncovered(self.summary.groups, self.summary.bytes);
        let Some((addr, elf, traced, group, offset)) = p.first.clone() else {
            self.summary.program = ProgramCheck::Same { bytes: p.bytes };
            return;
        };
        let count = p.count;
        self.summary.program = ProgramCheck::Differs {
            addr,
            elf: elf.clone(),
            traced: traced.clone(),
            count,
        };
        self.summary.mismatches += 1;
        report(&Mismatch {
            group,
            offset,
            pc: self.hart.pc,
            insn: None,
            disasm: format!(
                "state initialization: the trace's initial memory is not the ELF's \
                 ({count} differing place{}; the first, by address, below)",
                if count == 1 { "" } else { "s" }
            ),
            diffs: vec![Diff {
                element: format!("memory at 0x{addr:x}"),
                expected: format!("{elf} (the ELF)"),
                traced,
            }],
        });
    }

    // ---- applying traced state ----

    fn shadow_csr_write(&mut self, c: u16, v: u64) {
        let v = v & self.xmask;
        let c = c as usize & (NCSR - 1);
        match c as u16 {
            num::FCSR => {
                self.csr[num::FCSR as usize] = v & 0xff;
                self.csr[num::FFLAGS as usize] = v & 0x1f;
                self.csr[num::FRM as usize] = (v >> 5) & 7;
            }
            num::FFLAGS => {
                self.csr[num::FFLAGS as usize] = v & 0x1f;
                let f = &mut self.csr[num::FCSR as usize];
                *f = (*f & !0x1f) | (v & 0x1f);
            }
            num::FRM => {
                self.csr[num::FRM as usize] = v & 7;
                let f = &mut self.csr[num::FCSR as usize];
                *f = (*f & !0xe0) | ((v & 7) << 5);
            }
            num::SSTATUS => {
                let m = self.sstatus_mask();
                let ms = &mut self.csr[num::MSTATUS as usize];
                *ms = (*ms & !m) | (v & m);
                self.csr[c] = v;
            }
            num::SIE => {
                let m = self.csr[num::MIDELEG as usize] & irq::S_VIEW;
                let mie = &mut self.csr[num::MIE as usize];
                *mie = (*mie & !m) | (v & m);
                self.csr[c] = v;
            }
            _ => self.csr[c] = v,
        }
    }

    /// The bits of `mstatus` that `sstatus` shows (the hart's view), with SD.
    fn sstatus_mask(&self) -> u64 {
        match self.xlen {
            Xlen::Rv32 => (mstatus::SSTATUS_BITS & !mstatus::UXL) | 1 << 31,
            Xlen::Rv64 => mstatus::SSTATUS_BITS | 1 << 63,
        }
    }

    /// Apply the group's register, pc and privilege updates to the shadow.
    fn apply_shadow(&mut self, g: &Group, insn_len: u8) {
        self.traced_csrs.clear();
        let p = self.opts.params;
        for &(addr, upd) in &g.regs {
            if reg::is_gpr(addr) {
                let r = (addr - reg::GPR0) as usize;
                let old = self.x[r];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.x[r] = self.sext(v & self.xmask);
            } else if reg::is_fpr(addr) {
                let r = (addr - reg::FPR0) as usize;
                let old = self.f[r];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.f[r] = mask_bits(v, p.flen.max(1));
            } else if reg::is_csr(addr) {
                let old = self.csr[addr as usize];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.shadow_csr_write(addr, v);
                self.traced_csrs.push(canonical_csr(addr));
            } else {
                self.bad_register(addr, upd);
            }
        }
        if let Some(pc) = g.new_pc {
            self.pc = pc & self.xmask;
        } else if g.incr_pc {
            self.pc = self.pc.wrapping_add(insn_len as u64) & self.xmask;
        }
        if let Some(pv) = g.priv_ {
            self.priv_ = pv & 3;
        }
    }

    /// A register address outside the Debug Specification's space (chapter 3).
    #[cold]
    fn bad_register(&mut self, addr: u16, upd: RegUpd) {
        self.trace_diffs.push(Diff {
            element: reg_name(addr),
            expected: "no such register (CSRs are 0x000-0xfff, GPRs 0x1000-0x101f, FPRs \
                       0x1020-0x103f: Debug Specification, chapter 3)"
                .into(),
            traced: match upd {
                RegUpd::Full(v) => format!("written with 0x{v:x}"),
                RegUpd::Add(o) => format!("incremented by {o}"),
                RegUpd::Or(m) => format!("ORed with 0x{m:02x}"),
            },
        });
    }

    /// The difference a group shows by itself when it gives an element twice.
    fn ambiguity(g: &Group) -> Option<Diff> {
        g.ambiguous.as_ref().map(|a| Diff {
            element: a.clone(),
            expected: "given at most once in a group (chapter 3: only unambiguous state \
                       changes are allowed)"
                .into(),
            traced: "given twice".into(),
        })
    }

    /// A state initialization group, a hart reset, or updates outside any group: applied to
    /// the shadow and to the reference alike (chapter 3: "changes to program state outside of
    /// the processor that must be copied to the shadow state but cannot be modeled"). Before
    /// the first instruction (the program load), what they set is compared with what the
    /// reference loaded: registers with its reset state, memory with the ELF.
    fn apply_init(&mut self, g: &Group, report: &mut dyn FnMut(&Mismatch)) {
        self.trace_diffs.clear();
        self.apply_shadow(g, 0);
        let mut diffs = std::mem::take(&mut self.trace_diffs);
        diffs.extend(Self::ambiguity(g));
        if !self.running {
            self.compare_init(g, &mut diffs);
        }
        if !self.absent(Elements::GPR) {
            self.x[0] = 0;
            self.hart.x = self.x;
        }
        if !self.absent(Elements::FPR) {
            self.hart.f = self.f;
        }
        if !self.absent(Elements::PC) {
            self.hart.pc = self.pc;
        }
        if !self.absent(Elements::PRIV) {
            self.hart.priv_ = self.priv_;
        }
        if !self.absent(Elements::CSR) {
            let cs = std::mem::take(&mut self.traced_csrs);
            for &c in &cs {
                self.copy_csr_to_ref(c);
            }
            self.traced_csrs = cs;
        }
        for m in &g.mems {
            if m.op != mem_op::STORE {
                // State initialization writes memory (chapter 3); nothing else is meant there.
                diffs.push(Diff {
                    element: format!("memory request at 0x{:x}", m.addr),
                    expected: "a store (state initialization)".into(),
                    traced: mem_op::name(m.op).into(),
                });
                continue;
            }
            if let Some(d) = m.data {
                let n = 1usize << m.size;
                let in_ram = self.hart.bus.ram_offset(m.addr, n as u64).is_some();
                if !self.running {
                    let (grp, off) = (self.summary.groups, g.offset);
                    self.program.store(m.addr, n, d, in_ram, grp, off);
                } else if !in_ram {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({n} bytes)", m.addr),
                        expected: "the hart's memory".into(),
                        traced: "a store outside it".into(),
                    });
                }
                let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
            }
        }
        self.copy_nondet(g);
        if !diffs.is_empty() {
            self.summary.mismatches += 1;
            report(&Mismatch {
                group: self.summary.groups,
                offset: g.offset,
                pc: self.hart.pc,
                insn: None,
                disasm: if g.grouped {
                    "state initialization".into()
                } else {
                    "updates outside any group".into()
                },
                diffs,
            });
        }
    }

    /// The registers a group of the program load sets, against the reference's reset state
    /// (the shadow has the group applied, the reference not yet).
    fn compare_init(&mut self, g: &Group, diffs: &mut Vec<Diff>) {
        let xb = self.xlen.bits();
        let hex = |v: u64, bits: u32| format!("0x{:0w$x}", v, w = (bits as usize).div_ceil(4));
        let reset = " (the reset state)";
        if g.new_pc.is_some() && self.pc != self.hart.pc {
            diffs.push(Diff {
                element: "pc".into(),
                expected: format!("{} (the ELF's entry)", hex(self.hart.pc, xb)),
                traced: hex(self.pc, xb),
            });
        }
        if g.priv_.is_some() && self.priv_ != self.hart.priv_ {
            diffs.push(Diff {
                element: "privilege mode".into(),
                expected: format!("{}{reset}", self.hart.priv_),
                traced: format!("{}", self.priv_),
            });
        }
        let flen = self.opts.params.flen;
        for &(addr, _) in &g.regs {
            let (r, s, bits) = if reg::is_gpr(addr) {
                let k = (addr - reg::GPR0) as usize;
                (self.hart.x[k] & self.xmask, self.x[k] & self.xmask, xb)
            } else if reg::is_fpr(addr) {
                let k = (addr - reg::FPR0) as usize;
                let m = |v| mask_bits(v, flen.max(1));
                (m(self.hart.f[k]), m(self.f[k]), flen)
            } else if reg::is_csr(addr) && !csr_nondet(addr) {
                let c = canonical_csr(addr);
                let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                (r, self.csr[c as usize], xb)
            } else {
                continue;
            };
            if r != s {
                diffs.push(Diff {
                    element: reg_name(addr),
                    expected: format!("{}{reset}", hex(r, bits)),
                    traced: hex(s, bits),
                });
            }
        }
    }

    fn copy_csr_to_ref(&mut self, c: u16) {
        let v = self.csr[c as usize];
        let h = &mut self.hart;
        match c {
            num::MSTATUS => {
                h.csr.mstatus = match self.xlen {
                    Xlen::Rv32 => (h.csr.mstatus & !0xffff_ffff) | (v & 0x7fff_ffff),
                    Xlen::Rv64 => v & !(1 << 63),
                }
            }
            num::FCSR => {
                h.csr.fflags = (v & 0x1f) as u8;
                h.csr.frm = ((v >> 5) & 7) as u8;
            }
            num::MEPC => h.csr.mepc = v,
            num::MCAUSE => h.csr.mcause = v,
            num::MTVAL => h.csr.mtval = v,
            num::SEPC => h.csr.sepc = v,
            num::SCAUSE => h.csr.scause = v,
            num::STVAL => h.csr.stval = v,
            num::MIE => h.csr.mie = v,
            _ if csr_nondet(c) => {}
            _ => {
                let _ = h.csr_write(c, v);
            }
        }
    }

    /// Non-deterministic state from the shadow into the reference (3.1 step 2), for the next
    /// instruction.
    fn copy_nondet(&mut self, g: &Group) {
        if let Some(t) = g.mtime {
            if !self.absent(Elements::MTIME) {
                let now = self.hart.mtime();
                let c = &mut self.hart.bus.clint;
                c.mtime_offset = c.mtime_offset.wrapping_add(t.wrapping_sub(now));
            }
        }
        if self.absent(Elements::CSR) {
            return;
        }
        for &(addr, _) in &g.regs {
            if !reg::is_csr(addr) || !csr_nondet(addr) {
                continue;
            }
            let v = self.csr[addr as usize];
            let h = &mut self.hart;
            let rv32 = self.xlen == Xlen::Rv32;
            let instret = h.instret;
            match addr {
                0x344 => h.csr.mip_sw = v & irq::MIP_WRITABLE,
                0x144 => {
                    let m = h.csr.mideleg & irq::SSI;
                    h.csr.mip_sw = (h.csr.mip_sw & !m) | (v & m);
                }
                0xb00 | 0xc00 | 0xb02 | 0xc02 | 0xb80 | 0xc80 | 0xb82 | 0xc82 => {
                    let i = (addr & 0x1f) as usize;
                    let cur = h.counters.counter(i, instret);
                    let new = if addr & 0x80 != 0 {
                        (cur & 0xffff_ffff) | (v << 32)
                    } else if rv32 {
                        (cur & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                    h.counters.set_counter(i, new, instret);
                }
                _ => {}
            }
        }
    }

    // ---- one instruction ----

    #[inline]
    fn is_semihosting_call(&self, g: &Group) -> bool {
        // The traced instruction, or with instructions absent the one the reference is at.
        match g.insn {
            Some((0x0010_0073, 4)) => {}
            None if self.absent(Elements::INSN) => {}
            _ => return false,
        }
        if g.new_pc
            .is_some_and(|p| p != self.hart.pc.wrapping_add(4) & self.xmask)
        {
            return false;
        }
        // A trap instead of a sequential retire is an ordinary breakpoint.
        if g.regs
            .iter()
            .any(|&(a, _)| a == num::MCAUSE || a == num::SCAUSE)
        {
            return false;
        }
        self.hart.semihosting_sequence_at(self.hart.pc)
    }

    /// A semihosting call's results (the reference takes them from the trace): whether the
    /// trace has them, or why the checker cannot know them. True for the program's exit.
    fn semihosting_results(&mut self, g: &Group, pc: u64) -> bool {
        use rvtrace_semihost as sh;
        let op = (self.hart.x[10] & 0xffff_ffff) as u32;
        let a0 = g.regs.iter().any(|&(a, _)| a == reg::gpr(10));
        if matches!(op, sh::SYS_EXIT | sh::SYS_EXIT_EXTENDED) && !a0 {
            return true;
        }
        let writes_mem = matches!(
            op,
            sh::SYS_READ
                | sh::SYS_TMPNAM
                | sh::SYS_GET_CMDLINE
                | sh::SYS_HEAPINFO
                | sh::SYS_ELAPSED
        );
        let unknown_mem = writes_mem && g.mems.is_empty() && self.absent(Elements::MEM);
        if !a0 && !self.absent(Elements::GPR) {
            self.trace_diffs.push(Diff {
                element: reg_name(reg::gpr(10)),
                expected: "the call's result (every semihosting call but the exit returns one)"
                    .into(),
                traced: "no write".into(),
            });
        }
        // WRITEC and WRITE0 return a fixed value (QEMU 7.2, as the model): no host input.
        if a0 && matches!(op, sh::SYS_WRITEC | sh::SYS_WRITE0) {
            let want = sh::DEADBEEF & self.xmask;
            if self.x[10] & self.xmask != want {
                self.trace_diffs.push(Diff {
                    element: reg_name(reg::gpr(10)),
                    expected: format!("0x{want:x} (what WRITEC and WRITE0 return)"),
                    traced: format!("0x{:x}", self.x[10] & self.xmask),
                });
            }
        }
        if (!a0 && self.absent(Elements::GPR)) || unknown_mem {
            self.summary.unknown_results += 1;
            if self.summary.first_unknown.is_none() {
                self.summary.first_unknown = Some((self.summary.groups, pc));
            }
        }
        false
    }

    /// The cause of the interrupt a group shows (a write of `mcause`/`scause` with the
    /// interrupt bit, and no instruction).
    fn traced_interrupt(&self, g: &Group) -> Option<u64> {
        if g.insn.is_some() {
            return None;
        }
        let top = self.xlen.bits() - 1;
        g.regs.iter().find_map(|&(a, u)| match (a, u) {
            (num::MCAUSE | num::SCAUSE, RegUpd::Full(v)) if (v >> top) & 1 == 1 => {
                Some(mask_bits(v, top))
            }
            _ => None,
        })
    }

    /// Take interrupt `code` in the reference, as the hart takes one (trap entry with `mideleg`).
    fn force_interrupt(&mut self, code: u64) {
        let epc = self.hart.pc;
        self.obs.trap = Some(self.hart.take_trap(code, 0, true, epc));
    }

    fn snapshot(&self) -> Snapshot {
        let h = &self.hart;
        // The one memory location the instruction may store to.
        let mut mem = None;
        if let Some(raw) = h.bus.fetch(h.pc) {
            let i = decode(raw, h.xlen, &h.ext);
            use Op::*;
            let addr = match i.op {
                Sb | Sh | Sw | Sd | Fsw | Fsd => {
                    Some(h.x[i.rs1 as usize].wrapping_add(i.imm as i64 as u64) & self.xmask)
                }
                ScW | ScD | AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW
                | AmoMinuW | AmoMaxuW | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD
                | AmoMinD | AmoMaxD | AmoMinuD | AmoMaxuD => Some(h.x[i.rs1 as usize] & self.xmask),
                _ => None,
            };
            if let Some(a) = addr {
                let mut b = [0u8; 8];
                if h.bus.read_ram(a, &mut b) {
                    mem = Some((a, b));
                }
            }
        }
        Snapshot {
            x: h.x,
            f: h.f,
            pc: h.pc,
            priv_: h.priv_,
            csr: h.csr.clone(),
            instret: h.instret,
            clint: h.bus.clint.clone(),
            mem,
        }
    }

    fn restore(&mut self, s: &Snapshot) {
        let h = &mut self.hart;
        h.x = s.x;
        h.f = s.f;
        h.pc = s.pc;
        h.priv_ = s.priv_;
        h.csr = s.csr.clone();
        h.instret = s.instret;
        h.bus.clint = s.clint.clone();
        if let Some((a, b)) = s.mem {
            let _ = h.bus.write_ram(a, &b);
        }
    }

    fn apply_alts(&mut self) {
        for a in self.alts.clone() {
            let h = &mut self.hart;
            match a {
                Alt::Gpr(r, v) => h.x[r as usize] = v,
                Alt::Fpr(r, v) => h.f[r as usize] = v,
                Alt::Pc(v) => h.pc = v,
                Alt::Priv(v) => h.priv_ = v,
                Alt::Mem(addr, n, v) => {
                    let _ = h.bus.write_ram(addr, &v.to_le_bytes()[..n as usize]);
                }
                Alt::Csr(c, v) => {
                    let keep = self.csr[c as usize];
                    self.csr[c as usize] = v;
                    self.copy_csr_to_ref(c);
                    self.csr[c as usize] = keep;
                }
            }
        }
    }

    /// Run the reference for one instruction or trap as the group asks. Returns the pc the
    /// instruction ran at, or `None` when the reference stopped.
    fn run_reference(&mut self, g: &Group, semihosting: bool) -> Result<(), String> {
        self.obs.clear();
        if let Some(code) = self.traced_interrupt(g) {
            if self.hart.pending_interrupt().is_none() {
                self.force_interrupt(code);
                return Ok(());
            }
        } else if semihosting {
            // Host I/O is not repeated: the call retires, its results come from the trace (also
            // from a partial trace without gpr or mem: they are non-deterministic input, 3.1
            // step 2, and `rvtrace run` writes them).
            let h = &mut self.hart;
            let pc = h.pc;
            h.retire_serviced_call(4);
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) {
                    let r = (addr - reg::GPR0) as usize;
                    if r != 0 {
                        h.x[r] = self.x[r];
                        self.obs.gprs |= 1 << r;
                    }
                }
            }
            for m in &g.mems {
                if let (Some(d), true) = (m.data, mem_op::request_has_data(m.op)) {
                    let n = 1usize << m.size;
                    let _ = h.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                    self.obs.mems.push(MemAccess {
                        addr: m.addr,
                        size: n as u8,
                        value: d,
                        kind: MemKind::Store,
                    });
                }
            }
            self.obs.retired = Some(Retired {
                pc,
                insn: 0x0010_0073,
                len: 4,
                class: rvtrace_isa::CfClass::None,
                next_pc: h.pc,
                priv_: h.priv_,
                trap: None,
                serviced: Some(rvtrace_sim::extension::Serviced {
                    by: rvtrace_sim::extension::Serviced::UNKNOWN,
                    cause: rvtrace_sim::cause::BREAKPOINT as u8,
                }),
                mtime: h.mtime(),
            });
            return Ok(());
        }
        // Hold off an interrupt the trace does not show.
        let hold = g.insn.is_some() && self.hart.pending_interrupt().is_some();
        let saved_mie = self.hart.csr.mie;
        if hold {
            self.hart.csr.mie = 0;
        }
        let stop = self.hart.run(&mut self.obs, u64::MAX);
        if hold && !self.obs.csrs.contains(&num::MIE) {
            self.hart.csr.mie = saved_mie;
        }
        match stop {
            Stop::Requested => Ok(()),
            Stop::Exit(c) => Err(format!("the program exited with status {c}")),
            Stop::InsnLimit => Err("instruction limit".into()),
            Stop::Error(m) => Err(m),
        }
    }

    fn step_group(&mut self, g: &Group, report: &mut dyn FnMut(&Mismatch)) {
        self.summary.checked += 1;
        let pre_pc = self.hart.pc;
        let pre = self.pre_state();
        // The length of the instruction for an increment: the traced instruction's, else the
        // one the reference executes.
        let len = match g.insn {
            Some((_, l)) => l,
            None => {
                let raw = self.hart.bus.fetch(pre_pc).unwrap_or(3);
                if raw & 3 == 3 {
                    4
                } else {
                    2
                }
            }
        };
        self.trace_diffs.clear();
        self.apply_shadow(g, len);
        let semihosting = self.is_semihosting_call(g);
        let exit_call = semihosting && self.semihosting_results(g, pre_pc);
        let with_alts = !self.alts.is_empty();
        let snap = with_alts.then(|| self.snapshot());
        if let Err(m) = self.run_reference(g, semihosting) {
            self.stop_reference(g, pre_pc, m, report);
            return;
        }
        if exit_call || self.hart.bus.exit.is_some() {
            self.exited = Some(self.summary.groups);
        }
        self.compare(g, pre_pc, &pre);
        if let (Some(snap), false) = (&snap, self.diffs.is_empty()) {
            // Try the instruction again from the reference's own values (see the module notes).
            let first = std::mem::take(&mut self.diffs);
            self.restore(snap);
            self.apply_alts();
            let retry_pre = self.pre_state();
            let shadow = (self.x, self.f, self.pc, self.priv_, self.csr.clone());
            self.adopt_alts(g, len);
            if self.run_reference(g, self.is_semihosting_call(g)).is_ok() {
                self.compare(g, pre_pc, &retry_pre);
            }
            if self.diffs.is_empty() {
                // The trace went on from the reference's values: the shadow keeps them where
                // this group did not write them, and nothing is reported here.
                self.alts.clear();
                self.copy_nondet(g);
                return;
            }
            (self.x, self.f, self.pc, self.priv_) = (shadow.0, shadow.1, shadow.2, shadow.3);
            self.csr = shadow.4;
            self.restore(snap);
            let _ = self.run_reference(g, semihosting);
            self.diffs = first;
            self.alts.clear();
        }
        if self.diffs.is_empty() {
            if with_alts {
                self.resolve_alts(g);
            }
        } else {
            self.summary.mismatches += 1;
            let insn =
                self.obs
                    .retired
                    .map(|r| r.insn)
                    .or(g.insn.map(|(i, _)| i))
                    .or_else(|| {
                        // A fault: the instruction at the pc (an interrupt has none).
                        match self.obs.trap {
                            Some(t) if !t.interrupt => self.hart.bus.fetch(pre_pc).map(|r| {
                                if r & 3 == 3 {
                                    r
                                } else {
                                    r & 0xffff
                                }
                            }),
                            _ => None,
                        }
                    });
            let text = match insn {
                Some(i) => disasm(i, pre_pc, self.xlen.bits()).to_string(),
                None => "interrupt".into(),
            };
            let m = Mismatch {
                group: self.summary.groups,
                offset: g.offset,
                pc: pre_pc,
                insn,
                disasm: text,
                diffs: std::mem::take(&mut self.diffs),
            };
            report(&m);
            self.resync(g);
        }
        self.copy_nondet(g);
    }

    fn stop_reference(
        &mut self,
        g: &Group,
        pre_pc: u64,
        msg: String,
        report: &mut dyn FnMut(&Mismatch),
    ) {
        self.summary.mismatches += 1;
        self.summary.reference_stopped = Some(msg.clone());
        self.stopped = true;
        let insn = g.insn.map(|(i, _)| i);
        report(&Mismatch {
            group: self.summary.groups,
            offset: g.offset,
            pc: pre_pc,
            insn,
            disasm: insn
                .map(|i| disasm(i, pre_pc, self.xlen.bits()).to_string())
                .unwrap_or_else(|| "interrupt".into()),
            diffs: vec![Diff {
                element: "execution".into(),
                expected: format!("the reference stopped ({msg})"),
                traced: "the trace goes on".into(),
            }],
        });
    }

    /// The CSRs trap entry, `mret`/`sret` and FP instructions change without a hook.
    fn pre_state(&self) -> [u64; 9] {
        let c = &self.hart.csr;
        [
            c.mstatus,
            ((c.frm as u64) << 5) | c.fflags as u64,
            c.mepc,
            c.mcause,
            c.mtval,
            c.sepc,
            c.scause,
            c.stval,
            c.mie,
        ]
    }

    /// Compare shadow and reference after the step into `self.diffs`.
    fn compare(&mut self, g: &Group, pre_pc: u64, pre: &[u64; 9]) {
        self.diffs.clear();
        let hex = |v: u64, bits: u32| format!("0x{:0w$x}", v, w = (bits as usize).div_ceil(4));
        let xb = self.xlen.bits();
        // The instruction.
        if !self.absent(Elements::INSN) {
            let ref_insn = match (self.obs.retired, self.obs.trap) {
                (Some(r), _) => Some(r.insn),
                (None, Some(t)) if !t.interrupt && t.cause != 1 => self
                    .hart
                    .bus
                    .fetch(pre_pc)
                    .map(|r| if r & 3 == 3 { r } else { r & 0xffff }),
                _ => None,
            };
            let traced = g.insn.map(|(i, _)| i);
            // A group without an instruction is an interrupt or a fetch fault.
            let ref_is_int = self.obs.trap.is_some_and(|t| t.interrupt || t.cause == 1);
            if traced != ref_insn && !(traced.is_none() && ref_is_int) {
                let show = |i: Option<u32>| match i {
                    Some(i) => format!("{} ({})", insn_hex(i), disasm(i, pre_pc, xb)),
                    None => "none (an interrupt)".into(),
                };
                self.diffs.push(Diff {
                    element: "instruction".into(),
                    expected: show(ref_insn),
                    traced: show(traced),
                });
            }
        }
        if !self.absent(Elements::PC) && self.pc != self.hart.pc {
            self.diffs.push(Diff {
                element: "pc".into(),
                expected: hex(self.hart.pc, xb),
                traced: hex(self.pc, xb),
            });
        }
        if !self.absent(Elements::PRIV) && self.priv_ != self.hart.priv_ {
            self.diffs.push(Diff {
                element: "privilege mode".into(),
                expected: format!("{} ({})", self.hart.priv_, priv_name(self.hart.priv_)),
                traced: format!("{} ({})", self.priv_, priv_name(self.priv_)),
            });
        }
        if !self.absent(Elements::GPR) && self.x != self.hart.x {
            for r in 0..32 {
                if self.x[r] != self.hart.x[r] {
                    self.diffs.push(Diff {
                        element: reg_name(reg::gpr(r as u8)),
                        expected: hex(self.hart.x[r] & self.xmask, xb),
                        traced: hex(self.x[r] & self.xmask, xb),
                    });
                }
            }
        }
        let flen = self.opts.params.flen;
        if !self.absent(Elements::FPR) && flen > 0 && self.f != self.hart.f {
            for r in 0..32 {
                let (a, b) = (mask_bits(self.f[r], flen), mask_bits(self.hart.f[r], flen));
                if a != b {
                    self.diffs.push(Diff {
                        element: reg_name(reg::fpr(r as u8)),
                        expected: hex(b, flen),
                        traced: hex(a, flen),
                    });
                }
            }
        }
        self.unwritten_regs(g);
        if !self.absent(Elements::CSR) {
            self.compare_csrs(pre);
        }
        if !self.absent(Elements::MEM) || !self.absent(Elements::EADDR) {
            self.compare_mem(g);
        }
        if !self.trace_diffs.is_empty() {
            self.diffs.extend(self.trace_diffs.iter().cloned());
        }
        if g.ambiguous.is_some() {
            self.diffs.extend(Self::ambiguity(g));
        }
    }

    /// Integer and floating-point registers the trace writes and the reference's instruction
    /// does not (with the value they held, or a difference is reported already).
    fn unwritten_regs(&mut self, g: &Group) {
        let flen = self.opts.params.flen.max(1);
        for &(addr, _) in &g.regs {
            let same = if reg::is_gpr(addr) && !self.absent(Elements::GPR) {
                let r = (addr - reg::GPR0) as usize;
                r != 0 && self.obs.gprs & (1 << r) == 0 && self.x[r] == self.hart.x[r]
            } else if reg::is_fpr(addr) && !self.absent(Elements::FPR) {
                let r = (addr - reg::FPR0) as usize;
                self.obs.fprs & (1 << r) == 0
                    && mask_bits(self.f[r], flen) == mask_bits(self.hart.f[r], flen)
            } else {
                false
            };
            if same {
                self.diffs.push(Diff {
                    element: reg_name(addr),
                    expected: "not written by this instruction".into(),
                    traced: "written (with the value it held)".into(),
                });
            }
        }
    }

    fn compare_csrs(&mut self, pre: &[u64; 9]) {
        let post = self.pre_state();
        if self.traced_csrs.is_empty() && self.obs.csrs.is_empty() && *pre == post {
            // Most instructions: no CSR on either side.
            return;
        }
        const IMPLICIT: [u16; 9] = [
            num::MSTATUS,
            num::FCSR,
            num::MEPC,
            num::MCAUSE,
            num::MTVAL,
            num::SEPC,
            num::SCAUSE,
            num::STVAL,
            num::MIE,
        ];
        // The CSRs the reference's step wrote: with a hook, by a change, or by trap entry and
        // return (which write their CSRs whatever the values).
        let trap = self.obs.trap.or(self.obs.retired.and_then(|r| r.trap));
        let xret = self
            .obs
            .retired
            .is_some_and(|r| r.insn == 0x3020_0073 || r.insn == 0x1020_0073);
        let obs_csrs = &self.obs.csrs;
        let written = |c: u16| {
            obs_csrs.contains(&c)
                || IMPLICIT
                    .iter()
                    .position(|&x| x == c)
                    .is_some_and(|k| pre[k] != post[k])
                || (xret && c == num::MSTATUS)
                || trap.is_some_and(|t| {
                    c == num::MSTATUS
                        || if t.to_priv == 1 {
                            matches!(c, num::SEPC | num::SCAUSE | num::STVAL)
                        } else {
                            matches!(c, num::MEPC | num::MCAUSE | num::MTVAL)
                        }
                })
        };
        let xb = self.xlen.bits();
        let hex = |v: u64| format!("0x{:0w$x}", v, w = xb as usize / 4);
        let mut diffs = Vec::new();
        // Every CSR the trace writes.
        for &c in &self.traced_csrs {
            if csr_nondet(c) {
                continue;
            }
            let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
            let s = self.csr[c as usize];
            if r != s {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: hex(r),
                    traced: hex(s),
                });
            } else if !written(c) {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: "not written by this instruction".into(),
                    traced: format!("written (with the value it held, {})", hex(s)),
                });
            }
        }
        // Every CSR the reference changed or wrote and the trace does not.
        let mut others: [u16; 16] = [0; 16];
        let mut n = 0;
        let implicit = IMPLICIT
            .iter()
            .enumerate()
            .filter(|&(k, _)| pre[k] != post[k])
            .map(|(_, &c)| c);
        for c in implicit.chain(self.obs.csrs.iter().copied()) {
            if self.traced_csrs.contains(&c) || others[..n].contains(&c) || csr_nondet(c) {
                continue;
            }
            if n == others.len() {
                // More than an instruction writes: compare the rest one by one.
                let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                if r != self.csr[c as usize] {
                    diffs.push(Diff {
                        element: reg_name(c),
                        expected: hex(r),
                        traced: format!("{} (not in the trace)", hex(self.csr[c as usize])),
                    });
                }
                continue;
            }
            others[n] = c;
            n += 1;
        }
        for &c in &others[..n] {
            let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
            let s = self.csr[c as usize];
            if r != s {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: hex(r),
                    traced: format!("{} (not in the trace)", hex(s)),
                });
            }
        }
        self.diffs.extend(diffs);
    }

    fn compare_mem(&mut self, g: &Group) {
        if g.mems.is_empty()
            && self.obs.mems.is_empty()
            && g.eaddrs.is_empty()
            && g.store_data.is_empty()
        {
            return;
        }
        let check_mem = !self.absent(Elements::MEM);
        let ram = |h: &Hart, a: u64, n: u64| h.bus.ram_offset(a, n).is_some();
        // matched[k]: reference access k is accounted for.
        let mut matched = std::mem::take(&mut self.matched);
        matched.clear();
        matched.resize(self.obs.mems.len(), false);
        let mut nondet_load = false;
        let mems = &self.obs.mems;
        let mut diffs = Vec::new();
        let find = |kind: MemKind, addr: u64, n: u8, matched: &mut [bool]| -> Option<MemAccess> {
            for (k, m) in mems.iter().enumerate() {
                if m.kind == kind && m.addr == addr && m.size == n && !matched[k] {
                    matched[k] = true;
                    return Some(*m);
                }
            }
            None
        };
        // The atomic memory operation of the reference's instruction, if it is one (A
        // extension: opcode AMO, funct5); any other instruction makes plain loads and stores.
        let atomic = self
            .obs
            .retired
            .and_then(|r| (r.insn & 0x7f == 0x2f).then(|| mem_op::from_amo_funct5(r.insn >> 27)));
        if check_mem {
            for it in &g.mems {
                let n = 1u8 << it.size;
                // A load or store may stand for part of an atomic (chapter 3: "AMOs may be
                // implemented as read-modify-write"), an atomic request only for its own kind.
                if (mem_op::LR..=mem_op::AMO_MAXU).contains(&it.op) && atomic != Some(it.op) {
                    diffs.push(Diff {
                        element: format!("memory request at 0x{:x}: operation", it.addr),
                        expected: match atomic {
                            Some(a) => mem_op::name(a).into(),
                            None => "load or store (not an atomic instruction)".into(),
                        },
                        traced: mem_op::name(it.op).into(),
                    });
                }
                let what = || {
                    format!(
                        "memory {} of {} bytes at 0x{:x}",
                        mem_op::name(it.op),
                        n,
                        it.addr
                    )
                };
                if let Some(r) = it.rsp {
                    if r.size != it.size {
                        diffs.push(Diff {
                            element: format!("{}: response size", what()),
                            expected: format!("{n} bytes (the request's)"),
                            traced: format!("{} bytes", 1u8 << r.size),
                        });
                    }
                }
                let rsp_data = it.rsp.and_then(|r| r.data);
                let failed = matches!(it.rsp, Some(MemRsp { result: 1, .. }));
                let is_load = matches!(it.op, mem_op::LOAD | mem_op::LR);
                match it.op {
                    mem_op::IFETCH => {}
                    _ if failed => {
                        // A failed request changed nothing; the reference's access succeeded.
                        let kind = if is_load {
                            MemKind::Load
                        } else {
                            MemKind::Store
                        };
                        if find(kind, it.addr, n, &mut matched).is_some() {
                            diffs.push(Diff {
                                element: what(),
                                expected: if it.op == mem_op::SC {
                                    "store made (sc succeeded)".into()
                                } else {
                                    "success".into()
                                },
                                traced: if it.op == mem_op::SC {
                                    "sc failed".into()
                                } else {
                                    "failure".into()
                                },
                            });
                        }
                    }
                    mem_op::LOAD | mem_op::LR => {
                        match find(MemKind::Load, it.addr, n, &mut matched) {
                            None => diffs.push(Diff {
                                element: what(),
                                expected: "no such access".into(),
                                traced: "made".into(),
                            }),
                            Some(m) => {
                                if let Some(d) = rsp_data {
                                    if d != m.value {
                                        if ram(&self.hart, it.addr, n as u64) {
                                            diffs.push(Diff {
                                                element: format!("{}: data read", what()),
                                                expected: format!("0x{:x}", m.value),
                                                traced: format!("0x{d:x}"),
                                            });
                                        } else {
                                            // A device read: non-deterministic (3.1).
                                            nondet_load = true;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    mem_op::STORE | mem_op::SC => {
                        let d = it.data.unwrap_or(0);
                        match find(MemKind::Store, it.addr, n, &mut matched) {
                            None => diffs.push(Diff {
                                element: what(),
                                expected: "no such store".into(),
                                traced: format!("data 0x{d:x}"),
                            }),
                            Some(m) if m.value != d => diffs.push(Diff {
                                element: format!("memory at 0x{:x} ({} bytes)", it.addr, n),
                                expected: format!("0x{:0w$x}", m.value, w = 2 * n as usize),
                                traced: format!("0x{:0w$x}", d, w = 2 * n as usize),
                            }),
                            Some(_) => {}
                        }
                    }
                    op => {
                        // AMO: the reference loaded the old value and stored the new one.
                        let l = find(MemKind::Load, it.addr, n, &mut matched);
                        let s = find(MemKind::Store, it.addr, n, &mut matched);
                        match (l, s) {
                            (Some(l), Some(s)) => {
                                if let (Some(old), Some(opnd)) = (rsp_data, it.data) {
                                    let new = amo(op, old, opnd, n);
                                    if old != l.value || new != s.value {
                                        diffs.push(Diff {
                                            element: format!("{}: old, new value", what()),
                                            expected: format!("0x{:x}, 0x{:x}", l.value, s.value),
                                            traced: format!("0x{old:x}, 0x{new:x}"),
                                        });
                                    }
                                }
                            }
                            _ => diffs.push(Diff {
                                element: what(),
                                expected: "no such access".into(),
                                traced: "made".into(),
                            }),
                        }
                    }
                }
            }
            // Store data as additional state: some store of that size and data.
            for &(size, v) in &g.store_data {
                let n = 1u8 << size;
                let hit = mems.iter().enumerate().find(|(_, m)| {
                    m.kind == MemKind::Store && m.size == n && m.value == mask_bits(v, 8 * n as u32)
                });
                match hit {
                    Some((k, _)) => matched[k] = true,
                    None => diffs.push(Diff {
                        element: format!("memory store data ({n} bytes)"),
                        expected: "no such store".into(),
                        traced: format!("0x{v:x}"),
                    }),
                }
            }
            // Every store of the reference must be in the trace.
            for (k, m) in mems.iter().enumerate() {
                if m.kind == MemKind::Store && !matched[k] {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({} bytes)", m.addr, m.size),
                        expected: format!("store of 0x{:x}", m.value),
                        traced: "no store (not in the trace)".into(),
                    });
                }
            }
        }
        self.matched = matched;
        if !self.absent(Elements::EADDR) {
            for &a in &g.eaddrs {
                if !mems.iter().any(|m| m.addr == a) {
                    let expected = match mems.first() {
                        Some(m) => format!("0x{:x}", m.addr),
                        None => "no memory access".into(),
                    };
                    diffs.push(Diff {
                        element: "effective address".into(),
                        expected,
                        traced: format!("0x{a:x}"),
                    });
                }
            }
        }
        if nondet_load {
            // The loaded register takes the traced value, without a report (3.1 step 2).
            let mut names = Vec::new();
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) {
                    let r = (addr - reg::GPR0) as usize;
                    self.hart.x[r] = self.x[r];
                    names.push(reg_name(addr));
                } else if reg::is_fpr(addr) {
                    let r = (addr - reg::FPR0) as usize;
                    self.hart.f[r] = self.f[r];
                    names.push(reg_name(addr));
                }
            }
            self.hart.x[0] = 0;
            self.diffs.retain(|d| !names.contains(&d.element));
        }
        self.diffs.extend(diffs);
    }

    /// 3.1 step 5: copy the shadow state to the reference (absent elements excepted), keeping
    /// the reference's own values of what differed in case the trace goes on from them.
    fn resync(&mut self, g: &Group) {
        self.alts.clear();
        self.alt_since = self.summary.groups;
        let h = &mut self.hart;
        if !self.opts.absent.has(Elements::GPR) {
            for r in 1..32 {
                if self.x[r] != h.x[r] {
                    self.alts.push(Alt::Gpr(r as u8, h.x[r]));
                }
            }
            self.x[0] = 0;
            h.x = self.x;
        }
        if !self.opts.absent.has(Elements::FPR) {
            for r in 0..32 {
                if self.f[r] != h.f[r] {
                    self.alts.push(Alt::Fpr(r as u8, h.f[r]));
                }
            }
            h.f = self.f;
        }
        if !self.opts.absent.has(Elements::PC) && self.pc != h.pc {
            self.alts.push(Alt::Pc(h.pc));
            h.pc = self.pc;
        }
        if !self.opts.absent.has(Elements::PRIV) && self.priv_ != h.priv_ {
            self.alts.push(Alt::Priv(h.priv_));
            h.priv_ = self.priv_;
        }
        if !self.opts.absent.has(Elements::CSR) {
            // Every CSR either side changed in this step.
            let mut cs: Vec<u16> = self.traced_csrs.clone();
            cs.extend(self.obs.csrs.iter().copied());
            cs.extend([
                num::MSTATUS,
                num::FCSR,
                num::MEPC,
                num::MCAUSE,
                num::MTVAL,
                num::SEPC,
                num::SCAUSE,
                num::STVAL,
                num::MIE,
            ]);
            cs.sort_unstable();
            cs.dedup();
            for c in cs {
                if csr_nondet(c) {
                    continue;
                }
                let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                if r != self.csr[c as usize] {
                    self.alts.push(Alt::Csr(c, r));
                    self.copy_csr_to_ref(c);
                    // What the reference holds now (WARL) is what the shadow holds.
                    let now = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                    if now != self.csr[c as usize] {
                        self.shadow_csr_write(c, now);
                    }
                }
            }
        }
        if !self.opts.absent.has(Elements::MEM) {
            for m in &g.mems {
                if let (Some(d), true) = (m.data, matches!(m.op, mem_op::STORE | mem_op::SC)) {
                    if matches!(m.rsp, Some(MemRsp { result: 1, .. })) {
                        continue;
                    }
                    let n = 1usize << m.size;
                    let mut old = [0u8; 8];
                    if self.hart.bus.read_ram(m.addr, &mut old[..n]) {
                        let oldv = u64::from_le_bytes(old);
                        if oldv != mask_bits(d, 8 * n as u32) {
                            self.alts.push(Alt::Mem(m.addr, n as u8, oldv));
                            let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                        }
                    }
                }
            }
        }
    }

    /// For a second try from the reference's own values: the shadow takes them too where this
    /// group did not write them (an incremented pc counts from the reference's pc).
    fn adopt_alts(&mut self, g: &Group, len: u8) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        for a in self.alts.clone() {
            match a {
                Alt::Gpr(r, v) if !written(reg::gpr(r)) => self.x[r as usize] = v,
                Alt::Fpr(r, v) if !written(reg::fpr(r)) => self.f[r as usize] = v,
                Alt::Csr(c, v) if !self.traced_csrs.contains(&c) => self.shadow_csr_write(c, v),
                Alt::Pc(v) if g.new_pc.is_none() && g.incr_pc => {
                    self.pc = v.wrapping_add(len as u64) & self.xmask
                }
                Alt::Priv(v) if g.priv_.is_none() => self.priv_ = v,
                _ => {}
            }
        }
    }

    /// After a clean step: alternatives for elements both sides just wrote are settled; old
    /// ones are dropped.
    fn resolve_alts(&mut self, g: &Group) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        let tc = &self.traced_csrs;
        self.alts.retain(|a| match *a {
            Alt::Gpr(r, _) => !written(reg::gpr(r)),
            Alt::Fpr(r, _) => !written(reg::fpr(r)),
            Alt::Csr(c, _) => !tc.contains(&c),
            Alt::Pc(_) => false,
            Alt::Priv(_) => g.priv_.is_none(),
            Alt::Mem(a, _, _) => !g.mems.iter().any(|m| m.addr == a && m.op != mem_op::LOAD),
        });
        if self.summary.groups.saturating_sub(self.alt_since) > ALT_LIFETIME {
            self.alts.clear();
        }
    }
}

/// The value an AMO stores, `n` bytes wide, by the hart's rule.
fn amo(op: u8, old: u64, src: u64, n: u8) -> u64 {
    use rvtrace_sim::AmoOp;
    let op = match op {
        mem_op::AMO_SWAP => AmoOp::Swap,
        mem_op::AMO_ADD => AmoOp::Add,
        mem_op::AMO_XOR => AmoOp::Xor,
        mem_op::AMO_AND => AmoOp::And,
        mem_op::AMO_OR => AmoOp::Or,
        mem_op::AMO_MIN => AmoOp::Min,
        mem_op::AMO_MAX => AmoOp::Max,
        mem_op::AMO_MINU => AmoOp::Minu,
        _ => AmoOp::Maxu,
    };
    op.apply(old, src, n)
}
