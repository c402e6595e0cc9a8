//! The group reader: a trace read group by group (chapter 3: "State changes that occur between
//! begin and end group occur atomically"), each group's records gathered into a [`Group`] with
//! the ambiguities it shows by itself (an element given twice).

use super::report::{CheckError, Diff};
use crate::codec::{
    decode_record_with, op, AddlState, DecodeError, ErrorKind, Params, Record, RecordSink,
};
use crate::dump::reg_name;
use std::io::Read;

/// Largest group the checker reads (bytes). Our producer's largest groups are the 4 KiB chunks
/// of the program load and semihosting reads; a group must fit in memory to be applied
/// atomically (chapter 3), and a bound keeps memory flat on hostile input.
pub const MAX_GROUP_BYTES: usize = 1 << 20;
/// Most register updates in one group (every GPR, FPR and CSR once, and then some).
pub const MAX_GROUP_REGS: usize = 8192;
/// Most memory requests (and effective addresses, store data) in one group: a semihosting read
/// of 512 KiB in 8-byte stores.
pub const MAX_GROUP_MEMS: usize = 1 << 16;

/// A register update of a group.
#[derive(Clone, Copy, Debug)]
pub(super) enum RegUpd {
    Full(u64),
    Add(i8),
    Or(u8),
}

/// A memory response: size code, result (0 success, 1 failure), data.
#[derive(Clone, Copy, Debug)]
pub(super) struct MemRsp {
    pub(super) size: u8,
    pub(super) result: u8,
    pub(super) data: Option<u64>,
}

/// A memory request of a group with its response, if any.
#[derive(Clone, Copy, Debug)]
pub(super) struct MemItem {
    pub(super) addr: u64,
    pub(super) op: u8,
    pub(super) size: u8,
    pub(super) data: Option<u64>,
    pub(super) rsp: Option<MemRsp>,
}

/// The contents of one group (or of the records between two groups).
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) offset: u64,
    /// A begin group opened it (else: records outside any group).
    pub(super) grouped: bool,
    pub(super) insn: Option<(u32, u8)>,
    pub(super) incr_pc: bool,
    pub(super) new_pc: Option<u64>,
    pub(super) priv_: Option<u8>,
    pub(super) regs: Vec<(u16, RegUpd)>,
    pub(super) mems: Vec<MemItem>,
    pub(super) eaddrs: Vec<u64>,
    pub(super) store_data: Vec<(u8, u64)>,
    pub(super) mtime: Option<u64>,
    pub(super) state_init: bool,
    pub(super) hart_reset: bool,
    /// The first element given twice (chapter 3: "Only unambiguous state changes are allowed").
    pub(super) ambiguous: Option<String>,
    /// More records than [`MAX_GROUP_REGS`] or [`MAX_GROUP_MEMS`] (the rest are dropped).
    pub(super) too_long: bool,
}

impl Group {
    fn clear(&mut self) {
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

    /// A register update; `seen`: the registers this group updated so far.
    #[inline]
    fn push_reg(&mut self, addr: u16, upd: RegUpd, seen: &mut Seen) {
        if seen.insert(addr) {
            self.twice(|| reg_name(addr));
        }
        if self.regs.len() < MAX_GROUP_REGS {
            self.regs.push((addr, upd));
        } else {
            self.too_long = true;
        }
    }

    /// The difference the group shows by itself when it gives an element twice.
    pub(super) fn ambiguity(&self) -> Option<Diff> {
        self.ambiguous.as_ref().map(|a| Diff {
            element: a.clone(),
            expected: "given at most once in a group (chapter 3: only unambiguous state \
                       changes are allowed)"
                .into(),
            traced: "given twice".into(),
        })
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
pub(super) struct GroupReader<R: Read> {
    src: R,
    buf: Vec<u8>,
    /// The bytes of `buf` read from the source (the rest is room).
    len: usize,
    pos: usize,
    /// Trace offset of `buf[0]`.
    base: u64,
    eof: bool,
    params: Params,
    /// The registers the unit being read updated.
    seen: Seen,
}

/// A set of register addresses below 0x1040 (CSRs, GPRs, FPRs: Debug Specification, chapter
/// 3), for registers given twice in a group. Kept by the reader, not in each group: groups read
/// ahead stay small.
struct Seen {
    bits: [u64; 65],
    /// The words of `bits` set (bit `w`: word `w`), for a cheap clear.
    words: u128,
}

impl Seen {
    /// Add `addr`; whether it was there already.
    #[inline]
    fn insert(&mut self, addr: u16) -> bool {
        let a = addr as usize;
        if a >= 65 * 64 {
            return false;
        }
        let (w, b) = (a / 64, 1u64 << (a % 64));
        let was = self.bits[w] & b != 0;
        self.bits[w] |= b;
        self.words |= 1 << w;
        was
    }

    #[inline]
    fn clear(&mut self) {
        while self.words != 0 {
            let w = self.words.trailing_zeros() as usize;
            self.bits[w] = 0;
            self.words &= self.words - 1;
        }
    }
}

pub(super) enum Next {
    Unit,
    End,
    /// The trace ends inside the unit read so far (which is not applied).
    Truncated {
        in_record: bool,
    },
}

impl<R: Read> GroupReader<R> {
    pub(super) fn new(src: R, params: Params) -> Self {
        GroupReader {
            src,
            buf: Vec::new(),
            len: 0,
            pos: 0,
            base: 0,
            eof: false,
            params,
            seen: Seen {
                bits: [0; 65],
                words: 0,
            },
        }
    }

    /// Offset in the trace of the next byte to read.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The bytes read from the source and not yet taken (whole groups or not).
    pub(super) fn ahead(&self) -> &[u8] {
        &self.buf[self.pos..self.len]
    }

    /// Take `n` bytes of [`GroupReader::ahead`]: whole groups, checked without a [`Group`].
    pub(super) fn skip(&mut self, n: usize) {
        debug_assert!(self.pos + n <= self.len);
        self.pos += n;
    }

    /// Bytes read from the source.
    pub(super) fn read_bytes(&self) -> u64 {
        self.base + self.len as u64
    }

    /// Read more bytes, keeping `buf[keep..]`. False at the end of the input.
    fn refill(&mut self, keep: usize) -> Result<bool, CheckError> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(keep..self.len, 0);
        self.len -= keep;
        self.base += keep as u64;
        self.pos -= keep;
        let want = self.len + (1 << 20);
        if self.buf.len() < want {
            // Zeroed when it grows only, not at every refill.
            self.buf.resize(want, 0);
        }
        let old = self.len;
        let mut got = old;
        while got < want {
            match self.src.read(&mut self.buf[got..want]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CheckError::Io(e)),
            }
        }
        self.len = got;
        Ok(got > old)
    }

    /// Read the next group (or the run of records outside any group) into `g`.
    pub(super) fn next(&mut self, g: &mut Group) -> Result<Next, CheckError> {
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
                    if self.len - start > MAX_GROUP_BYTES {
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

    // (Branches that look the same read records of different opcodes, each known there.)
    #[allow(clippy::if_same_then_else)]
    fn parse(&mut self, g: &mut Group) -> Result<Next, ParseErr> {
        g.clear();
        self.seen.clear();
        g.offset = self.offset();
        // The position is kept in a local while records are read (`self.pos` only where the
        // unit ends), and the buffer borrowed once: both stay in registers.
        let buf = &self.buf[..self.len];
        let (base, eof) = (self.base, self.eof);
        let mut pos = self.pos;
        let mut prev_req: Option<u8> = None;
        let end = 'unit: {
            // One record, wherever it is: taken into `g`, or the unit ends.
            macro_rules! record {
                () => {{
                    let b = &buf[pos..];
                    if b.is_empty() {
                        if !eof {
                            return Err(ParseErr::NeedMore);
                        }
                        // The end of the trace does not end an open group (chapter 3 lets only
                        // a begin group imply an end group): the group is cut short.
                        break 'unit if g.grouped {
                            Next::Truncated { in_record: false }
                        } else if g.is_empty() {
                            Next::End
                        } else {
                            Next::Unit
                        };
                    }
                    let off = base + pos as u64;
                    let req = prev_req;
                    let mut sink = Take {
                        g: &mut *g,
                        seen: &mut self.seen,
                        off,
                        eof,
                        prev_req: &mut prev_req,
                    };
                    match decode_record_with(b, &self.params, req, &mut sink) {
                        Ok(Flow::Next(n)) => pos += n,
                        Ok(Flow::UnitBefore) => break 'unit Next::Unit,
                        Ok(Flow::UnitAfter(n)) => {
                            pos += n;
                            break 'unit Next::Unit;
                        }
                        Ok(Flow::NeedMore) => return Err(ParseErr::NeedMore),
                        Ok(Flow::EndOutside) => {
                            return Err(ParseErr::Bad(CheckError::Protocol(
                                off,
                                "an end group outside any group".into(),
                            )))
                        }
                        Err(ErrorKind::Truncated { .. }) if !eof => return Err(ParseErr::NeedMore),
                        Err(ErrorKind::Truncated { .. }) => {
                            break 'unit Next::Truncated { in_record: true };
                        }
                        Err(kind) => {
                            return Err(ParseErr::Bad(CheckError::Malformed(DecodeError {
                                offset: off,
                                kind,
                            })))
                        }
                    }
                }};
            }
            // Whether the next record has opcode `op`.
            macro_rules! at {
                ($op:path) => {
                    buf.get(pos) == Some(&$op)
                };
            }
            // The records in the order our producer writes them (begin group, pc, instruction,
            // registers, addresses, memory requests and responses, end group), each read where
            // its opcode is known: one well-predicted branch per record instead of a dispatch
            // on the opcode (the decoder's match folds to the one case). Whatever comes out of
            // this order is read by the loop below, from where it is.
            if at!(op::BEGIN_GROUP) {
                record!();
                if at!(op::INCR_PC) {
                    record!();
                } else if at!(op::ADDL_STATE) {
                    record!();
                }
                if at!(op::INSN32) {
                    record!();
                } else if at!(op::INSN16) {
                    record!();
                }
                while at!(op::FULL_REG) {
                    record!();
                }
                while at!(op::ADDL_STATE) {
                    record!();
                }
                while at!(op::MEM_REQ) {
                    record!();
                    if at!(op::MEM_RSP) {
                        record!();
                    }
                }
                if at!(op::END_GROUP) {
                    record!();
                }
            }
            loop {
                record!();
            }
        };
        self.pos = pos;
        Ok(end)
    }
}

/// What the reader does after a record ([`take`]).
enum Flow {
    /// Go on after the record's `n` bytes.
    Next(usize),
    /// The unit ends before the record (a begin group that implies an end group).
    UnitBefore,
    /// The unit ends with the record (`n` bytes).
    UnitAfter(usize),
    NeedMore,
    /// An end group outside any group.
    EndOutside,
}

/// Takes a record (at trace offset `off`) into group `g`; `prev_req`: the operation of the
/// memory request just before (for the next record).
struct Take<'a> {
    g: &'a mut Group,
    seen: &'a mut Seen,
    off: u64,
    eof: bool,
    prev_req: &'a mut Option<u8>,
}

impl RecordSink for Take<'_> {
    type Out = Flow;
    #[inline(always)]
    fn record(&mut self, rec: Record, n: usize) -> Flow {
        let (g, seen, off, eof) = (&mut *self.g, &mut *self.seen, self.off, self.eof);
        *self.prev_req = None;
        match rec {
            Record::BeginGroup => {
                // (Nothing read yet in this unit when `off` is where it starts.)
                if g.grouped || (off != g.offset && !g.is_empty()) {
                    // An end group is implied by a begin group (chapter 3); the begin group
                    // is read again as the start of the next unit.
                    return Flow::UnitBefore;
                }
                g.grouped = true;
                g.offset = off;
            }
            Record::EndGroup => {
                return if g.grouped {
                    Flow::UnitAfter(n)
                } else {
                    Flow::EndOutside
                };
            }
            Record::IncrPc => {
                if g.incr_pc || g.new_pc.is_some() {
                    g.twice(|| "pc".into());
                }
                g.incr_pc = true;
            }
            Record::FullReg { addr, value } => g.push_reg(addr, RegUpd::Full(value), seen),
            Record::IncrRegAdd { addr, offset } => g.push_reg(addr, RegUpd::Add(offset), seen),
            Record::IncrRegOr { addr, mask } => g.push_reg(addr, RegUpd::Or(mask), seen),
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
                *self.prev_req = Some(op);
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
                // A 16-bit instruction opcode whose parcel says 32 bits (C.5) needs 2 more
                // bytes.
                if i & 3 == 3 && !eof {
                    return Flow::NeedMore;
                }
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
        Flow::Next(n)
    }
}

enum ParseErr {
    NeedMore,
    Bad(CheckError),
}
