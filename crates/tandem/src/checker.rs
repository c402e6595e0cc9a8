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
//! records may come in any order within a group, the end group may be left out (a begin group
//! implies it, and so does the end of the trace), and register writes may use the incremental
//! forms.

use crate::codec::{
    decode_record, mask_bits, mem_op, reg, AddlState, DecodeError, ErrorKind, Params, Record,
};
use crate::disasm::disasm;
use crate::dump::{priv_name, reg_name};
use crate::meta::Elements;
use crate::producer::canonical_csr;
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
}

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

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    /// Groups read.
    pub groups: u64,
    /// Instruction, trap and interrupt groups checked against the reference.
    pub checked: u64,
    /// State initialization (and reset) groups and updates outside groups, applied to both.
    pub init: u64,
    /// Groups with a mismatch.
    pub mismatches: u64,
    /// The reference stopped before the trace ended (the message says why).
    pub reference_stopped: Option<String>,
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
        if let Some(m) = &self.reference_stopped {
            write!(f, "; the reference stopped: {m}")?;
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

/// A memory request of a group with its response, if any.
#[derive(Clone, Copy, Debug)]
struct MemItem {
    addr: u64,
    op: u8,
    size: u8,
    data: Option<u64>,
    rsp: Option<(u8, Option<u64>)>,
}

/// The contents of one group (or of the records between two groups).
#[derive(Default, Debug)]
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
}

/// Reads a trace from a [`Read`] group by group, with a buffer that grows for long groups.
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

    /// Read more bytes, keeping `buf[keep..]`. False at the end of the input.
    fn refill(&mut self, keep: usize) -> Result<bool, CheckError> {
        if self.eof {
            return Ok(false);
        }
        self.buf.drain(..keep);
        self.base += keep as u64;
        self.pos -= keep;
        let want = (self.buf.len() + (1 << 20)).max(1 << 20);
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
                Ok(n) => return Ok(n),
                Err(ParseErr::NeedMore) => {
                    self.pos = start;
                    if !self.refill(start)? {
                        // Out of bytes in the middle of a record: report it as malformed.
                        return self.parse(g).map_err(|e| match e {
                            ParseErr::Bad(e) => e,
                            ParseErr::NeedMore => {
                                CheckError::Protocol(self.base, "truncated".into())
                            }
                        });
                    }
                }
                Err(ParseErr::Bad(e)) => return Err(e),
            }
        }
    }

    fn parse(&mut self, g: &mut Group) -> Result<Next, ParseErr> {
        g.clear();
        g.offset = self.base + self.pos as u64;
        let mut prev_req: Option<u8> = None;
        loop {
            let b = &self.buf[self.pos..];
            if b.is_empty() {
                if !self.eof {
                    return Err(ParseErr::NeedMore);
                }
                // The end of the trace ends an open group.
                return Ok(if g.is_empty() { Next::End } else { Next::Unit });
            }
            let off = self.base + self.pos as u64;
            let (rec, n) = match decode_record(b, &self.params, prev_req) {
                Ok(x) => x,
                Err(ErrorKind::Truncated { .. }) if !self.eof => return Err(ParseErr::NeedMore),
                // A 16-bit instruction opcode whose parcel says 32 bits (C.5) needs 2 more bytes.
                Err(kind) => {
                    return Err(ParseErr::Bad(CheckError::Malformed(DecodeError {
                        offset: off,
                        kind,
                    })))
                }
            };
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
                    self.pos += n;
                    if g.grouped || !g.is_empty() {
                        return Ok(Next::Unit);
                    }
                    // An end group outside any group: nothing to end.
                    g.offset = self.base + self.pos as u64;
                    prev_req = None;
                    continue;
                }
                Record::IncrPc => g.incr_pc = true,
                Record::FullReg { addr, value } => g.regs.push((addr, RegUpd::Full(value))),
                Record::IncrRegAdd { addr, offset } => g.regs.push((addr, RegUpd::Add(offset))),
                Record::IncrRegOr { addr, mask } => g.regs.push((addr, RegUpd::Or(mask))),
                Record::State(s) => match s {
                    AddlState::Priv(p) => g.priv_ = Some(p),
                    AddlState::Paddr(a) | AddlState::Eaddr(a) => g.eaddrs.push(a),
                    AddlState::StoreData { size, value } => g.store_data.push((size, value)),
                    AddlState::Mtime(t) => g.mtime = Some(t),
                    AddlState::PcPaddr(_) => {}
                    AddlState::Pc(v) => g.new_pc = Some(v),
                },
                Record::MemReq {
                    addr,
                    op,
                    size,
                    data,
                } => g.mems.push(MemItem {
                    addr,
                    op,
                    size,
                    data,
                    rsp: None,
                }),
                Record::MemRsp { result, data, .. } => {
                    if let Some(m) = g.mems.last_mut() {
                        m.rsp = Some((result, data));
                    }
                }
                Record::HartReset => g.hart_reset = true,
                Record::StateInit => g.state_init = true,
                Record::Insn16(i) => g.insn = Some((i as u32, 2)),
                Record::Insn32(i) => g.insn = Some((i, 4)),
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
    done: bool,
}

impl StepObserver {
    fn clear(&mut self) {
        self.retired = None;
        self.trap = None;
        self.csrs.clear();
        self.mems.clear();
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
    alts: Vec<Alt>,
    alt_since: u64,
    summary: CheckSummary,
    stopped: bool,
}

impl Checker {
    /// A checker with `hart` as the reference: the program loaded, semihosting off (its calls
    /// are taken from the trace), not run yet.
    pub fn new(mut hart: Hart, opts: CheckOptions) -> Checker {
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
            alts: Vec::new(),
            alt_since: 0,
            summary: CheckSummary::default(),
            stopped: false,
        }
    }

    /// The reference hart.
    pub fn hart(&self) -> &Hart {
        &self.hart
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

    /// Check the trace read from `src`, calling `report` for each mismatch.
    pub fn check<R: Read>(
        &mut self,
        src: R,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<CheckSummary, CheckError> {
        let mut rd = GroupReader::new(src, self.opts.params);
        let mut g = Group::default();
        loop {
            match rd.next(&mut g)? {
                Next::End => break,
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
                self.apply_init(&g);
                if g.grouped {
                    self.summary.init += 1;
                }
                continue;
            }
            if self.stopped {
                continue;
            }
            self.step_group(&g, report);
        }
        Ok(self.summary.clone())
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

    fn sstatus_mask(&self) -> u64 {
        let m = mstatus::SIE
            | mstatus::SPIE
            | mstatus::UBE
            | mstatus::SPP
            | mstatus::VS
            | mstatus::FS
            | mstatus::XS
            | mstatus::SUM
            | mstatus::MXR;
        match self.xlen {
            Xlen::Rv32 => m | 1 << 31,
            Xlen::Rv64 => m | mstatus::UXL | 1 << 63,
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

    /// A state initialization group, a hart reset, or updates outside any group: applied to
    /// the shadow and to the reference alike (chapter 3: "changes to program state outside of
    /// the processor that must be copied to the shadow state but cannot be modeled").
    fn apply_init(&mut self, g: &Group) {
        self.apply_shadow(g, 0);
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
        if !self.absent(Elements::MEM) {
            for m in &g.mems {
                if let Some(d) = m.data {
                    if mem_op::request_has_data(m.op) {
                        let n = 1usize << m.size;
                        let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                    }
                }
            }
        }
        self.copy_nondet(g);
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
                    let off = if addr & 2 == 0 {
                        &mut h.csr.cycle_offset
                    } else {
                        &mut h.csr.instret_offset
                    };
                    let cur = instret.wrapping_add(*off);
                    let new = if addr & 0x80 != 0 {
                        (cur & 0xffff_ffff) | (v << 32)
                    } else if rv32 {
                        (cur & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                    *off = new.wrapping_sub(instret);
                }
                _ => {}
            }
        }
    }

    // ---- one instruction ----

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
        let h = &self.hart;
        if h.priv_ == 0 {
            return false;
        }
        // A trap instead of a sequential retire is an ordinary breakpoint.
        if g.regs
            .iter()
            .any(|&(a, _)| a == num::MCAUSE || a == num::SCAUSE)
        {
            return false;
        }
        let pc = h.pc;
        let (pre, post) = (pc.wrapping_sub(4), pc.wrapping_add(4));
        pre & !0xfff == post & !0xfff
            && h.bus.fetch(pre) == Some(0x01f0_1013)
            && h.bus.fetch(pc) == Some(0x0010_0073)
            && h.bus.fetch(post) == Some(0x4070_5013)
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

    /// Take interrupt `code` in the reference (privileged ISA, trap entry with `mideleg`).
    fn force_interrupt(&mut self, code: u64) {
        let h = &mut self.hart;
        let from = h.priv_;
        let to_s = from <= 1 && h.ext.s && (h.csr.mideleg >> code) & 1 == 1;
        let int_bit = 1u64 << (self.xlen.bits() - 1);
        let epc = h.pc;
        let s = &mut h.csr.mstatus;
        let tvec;
        if to_s {
            h.csr.sepc = epc;
            h.csr.scause = code | int_bit;
            h.csr.stval = 0;
            let sie = *s & mstatus::SIE != 0;
            *s &= !(mstatus::SPIE | mstatus::SIE | mstatus::SPP);
            if sie {
                *s |= mstatus::SPIE;
            }
            if from == 1 {
                *s |= mstatus::SPP;
            }
            h.priv_ = 1;
            tvec = h.csr.stvec;
        } else {
            h.csr.mepc = epc;
            h.csr.mcause = code | int_bit;
            h.csr.mtval = 0;
            let mie = *s & mstatus::MIE != 0;
            *s &= !(mstatus::MPIE | mstatus::MIE | mstatus::MPP);
            if mie {
                *s |= mstatus::MPIE;
            }
            *s |= (from as u64) << mstatus::MPP_SHIFT;
            h.priv_ = 3;
            tvec = h.csr.mtvec;
        }
        let base = tvec & !3;
        let handler = if tvec & 3 == 1 { base + 4 * code } else { base };
        h.pc = handler & self.xmask;
        self.obs.trap = Some(TrapInfo {
            cause: code,
            tval: 0,
            interrupt: true,
            epc,
            from_priv: from,
            to_priv: h.priv_,
            handler: h.pc,
        });
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
    fn run_reference(&mut self, g: &Group) -> Result<(), String> {
        self.obs.clear();
        if let Some(code) = self.traced_interrupt(g) {
            if self.hart.pending_interrupt().is_none() {
                self.force_interrupt(code);
                return Ok(());
            }
        } else if self.is_semihosting_call(g) {
            // Host I/O is not repeated: the call retires, its results come from the trace.
            let (no_gpr, no_mem) = (self.absent(Elements::GPR), self.absent(Elements::MEM));
            let h = &mut self.hart;
            let pc = h.pc;
            h.pc = pc.wrapping_add(4) & self.xmask;
            h.instret += 1;
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) && !no_gpr {
                    let r = (addr - reg::GPR0) as usize;
                    if r != 0 {
                        h.x[r] = self.x[r];
                    }
                }
            }
            if !no_mem {
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
            }
            self.obs.retired = Some(Retired {
                pc,
                insn: 0x0010_0073,
                len: 4,
                class: rvtrace_isa::CfClass::None,
                next_pc: h.pc,
                priv_: h.priv_,
                trap: None,
                semihosting: true,
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
        self.apply_shadow(g, len);
        let with_alts = !self.alts.is_empty();
        let snap = with_alts.then(|| self.snapshot());
        if let Err(m) = self.run_reference(g) {
            self.stop_reference(g, pre_pc, m, report);
            return;
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
            if self.run_reference(g).is_ok() {
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
            let _ = self.run_reference(g);
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
                Some(i) => disasm(i, pre_pc, self.xlen.bits()),
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
                .map(|i| disasm(i, pre_pc, self.xlen.bits()))
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
        if !self.absent(Elements::CSR) {
            self.compare_csrs(pre);
        }
        if !self.absent(Elements::MEM) || !self.absent(Elements::EADDR) {
            self.compare_mem(g);
        }
    }

    fn compare_csrs(&mut self, pre: &[u64; 9]) {
        let post = self.pre_state();
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
        let mut set: [u16; 32] = [0; 32];
        let mut n = 0;
        let mut add = |c: u16, n: &mut usize| {
            if !set[..*n].contains(&c) && *n < set.len() {
                set[*n] = c;
                *n += 1;
            }
        };
        for (k, &c) in IMPLICIT.iter().enumerate() {
            if pre[k] != post[k] {
                add(c, &mut n);
            }
        }
        for &c in &self.obs.csrs {
            add(c, &mut n);
        }
        for &c in &self.traced_csrs {
            add(c, &mut n);
        }
        let xb = self.xlen.bits();
        for &c in &set[..n] {
            if csr_nondet(c) {
                continue;
            }
            let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
            let s = self.csr[c as usize];
            if r != s {
                let note = if self.traced_csrs.contains(&c) {
                    ""
                } else {
                    " (not in the trace)"
                };
                self.diffs.push(Diff {
                    element: reg_name(c),
                    expected: format!("0x{:0w$x}", r, w = xb as usize / 4),
                    traced: format!("0x{:0w$x}{note}", s, w = xb as usize / 4),
                });
            }
        }
    }

    fn compare_mem(&mut self, g: &Group) {
        let check_mem = !self.absent(Elements::MEM);
        let ram = |h: &Hart, a: u64, n: u64| h.bus.ram_offset(a, n).is_some();
        let mut matched: u64 = 0; // bit k: reference access k is accounted for
        let mut nondet_load = false;
        let mems = &self.obs.mems;
        let mut diffs = Vec::new();
        let find = |kind: MemKind, addr: u64, n: u8, matched: &mut u64| -> Option<MemAccess> {
            for (k, m) in mems.iter().enumerate() {
                if m.kind == kind && m.addr == addr && m.size == n && *matched & (1 << k) == 0 {
                    *matched |= 1 << k.min(63);
                    return Some(*m);
                }
            }
            None
        };
        if check_mem {
            for it in &g.mems {
                let n = 1u8 << it.size;
                let what = || {
                    format!(
                        "memory {} of {} bytes at 0x{:x}",
                        mem_op::name(it.op),
                        n,
                        it.addr
                    )
                };
                let sc_failed = it.op == mem_op::SC && matches!(it.rsp, Some((1, _)));
                match it.op {
                    mem_op::IFETCH => {}
                    mem_op::LOAD | mem_op::LR => {
                        match find(MemKind::Load, it.addr, n, &mut matched) {
                            None => diffs.push(Diff {
                                element: what(),
                                expected: "no such access".into(),
                                traced: "made".into(),
                            }),
                            Some(m) => {
                                if let Some((_, Some(d))) = it.rsp {
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
                    _ if sc_failed => {
                        if find(MemKind::Store, it.addr, n, &mut matched).is_some() {
                            diffs.push(Diff {
                                element: what(),
                                expected: "store made (sc succeeded)".into(),
                                traced: "sc failed".into(),
                            });
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
                                if let (Some((_, Some(old))), Some(opnd)) = (it.rsp, it.data) {
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
                    Some((k, _)) => matched |= 1 << k.min(63),
                    None => diffs.push(Diff {
                        element: format!("memory store data ({n} bytes)"),
                        expected: "no such store".into(),
                        traced: format!("0x{v:x}"),
                    }),
                }
            }
            // Every store of the reference must be in the trace.
            for (k, m) in mems.iter().enumerate() {
                if m.kind == MemKind::Store && matched & (1 << k.min(63)) == 0 {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({} bytes)", m.addr, m.size),
                        expected: format!("store of 0x{:x}", m.value),
                        traced: "no store (not in the trace)".into(),
                    });
                }
            }
        }
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
                    if matches!(m.rsp, Some((1, _))) {
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

/// The value an AMO stores (unprivileged ISA, "Atomic Memory Operations"), `n` bytes wide.
fn amo(op: u8, old: u64, src: u64, n: u8) -> u64 {
    let bits = 8 * n as u32;
    let sx = |v: u64| {
        if bits == 64 {
            v as i64
        } else {
            ((v << (64 - bits)) as i64) >> (64 - bits)
        }
    };
    let (o, s) = (mask_bits(old, bits), mask_bits(src, bits));
    let r = match op {
        mem_op::AMO_SWAP => s,
        mem_op::AMO_ADD => o.wrapping_add(s),
        mem_op::AMO_XOR => o ^ s,
        mem_op::AMO_AND => o & s,
        mem_op::AMO_OR => o | s,
        mem_op::AMO_MIN => {
            if sx(o) <= sx(s) {
                o
            } else {
                s
            }
        }
        mem_op::AMO_MAX => {
            if sx(o) >= sx(s) {
                o
            } else {
                s
            }
        }
        mem_op::AMO_MINU => o.min(s),
        _ => o.max(s),
    };
    mask_bits(r, bits)
}
