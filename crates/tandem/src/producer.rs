//! The producer: an [`Observer`] of the hart model that writes one group per retired instruction
//! or trap with every architectural side effect (chapter 3.1: "For complete tandem verification,
//! all architectural side effects of an instruction or trap must always be included").
//!
//! Per group, in the order of appendix C's examples: begin group; the pc (increment pc when the
//! instruction falls through, else the new pc as additional state, tables C.1/C.2); the
//! instruction (omitted for an interrupt, chapter 3); integer and floating-point register writes
//! (full register, FLEN wide, C.3); `fcsr` (an OR of the new exception flags when an FP
//! instruction raised them, C.3; the full register when software wrote it); other CSR writes
//! (C.6); on a trap `xepc`, `xcause`, `mstatus`, `xtval` (C.7, C.8); the privilege mode when it
//! changed; the effective address and the memory requests and responses; end group. The program
//! load comes first as state initialization groups (chapter 3: "primarily intended for use
//! during program loading").
//!
//! The producer keeps the registers it reports as the hooks give them: trap entry comes with its
//! `mstatus` ([`TrapInfo::mstatus`]), `mret`/`sret` with theirs ([`Observer::trap_return`]);
//! accrued FP flags and `mstatus.FS` becoming dirty arrive as CSR writes. It applies no hart
//! rule of its own.

use crate::codec::{mem_op, reg, AddlState, Layout, OutBuf, Params, ParamsError, Record};
use crate::meta::{Elements, Meta, MetaError, RunEnd};
use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::{irq, mstatus, num};
use rvtrace_sim::{Hart, MemAccess, MemKind, Observer, Retired, TrapInfo};
use std::io::Write;

/// Bits of `mstatus` that `sstatus` shows (without SD).
const SSTATUS_BITS: u64 = mstatus::SSTATUS_BITS;

/// Producer options.
#[derive(Clone, Copy, Debug)]
pub struct ProducerOptions {
    /// Codec parameters.
    pub params: Params,
    /// Elements to leave out (a partial trace, chapter 3.2).
    pub absent: Elements,
}

/// Where [`canonical_csr`] was before the checker's shadow state took the rules of shared CSR
/// bits together; the producer itself writes each CSR as the hart reports it.
pub use crate::checker::canonical_csr;

/// A copy of loaded memory, for the bits of an instruction that faults (the observer is not
/// told them). Stores into it keep it current.
struct CodeMirror {
    lo: u64,
    hi: u64,
    segs: Vec<(u64, Vec<u8>)>,
}

impl CodeMirror {
    fn new(image: &Image) -> CodeMirror {
        let mut segs: Vec<(u64, Vec<u8>)> = image
            .segments()
            .iter()
            .filter(|s| !s.data.is_empty())
            .map(|s| (s.paddr, s.data.clone()))
            .collect();
        segs.sort_by_key(|s| s.0);
        let lo = segs.first().map(|s| s.0).unwrap_or(0);
        let hi = segs
            .iter()
            .map(|s| s.0 + s.1.len() as u64)
            .max()
            .unwrap_or(0);
        CodeMirror { lo, hi, segs }
    }

    #[inline]
    fn store(&mut self, addr: u64, size: u8, value: u64) {
        let end = addr.saturating_add(size.min(8) as u64);
        if addr >= self.hi || end <= self.lo {
            return;
        }
        let bytes = value.to_le_bytes();
        for (base, data) in &mut self.segs {
            // The part of the store that falls in this segment.
            let (lo, hi) = (addr.max(*base), end.min(*base + data.len() as u64));
            if lo < hi {
                data[(lo - *base) as usize..(hi - *base) as usize]
                    .copy_from_slice(&bytes[(lo - addr) as usize..(hi - addr) as usize]);
            }
        }
    }

    fn byte(&self, a: u64) -> Option<u8> {
        self.segs
            .iter()
            .find(|(b, d)| a >= *b && a < *b + d.len() as u64)
            .map(|(b, d)| d[(a - b) as usize])
    }

    /// The instruction at `pc`, if its bytes are in the mirror.
    fn insn(&self, pc: u64) -> Option<u32> {
        let lo = self.byte(pc)? as u32 | (self.byte(pc + 1)? as u32) << 8;
        if lo & 3 != 3 {
            return Some(lo);
        }
        let hi = self.byte(pc + 2)? as u32 | (self.byte(pc + 3)? as u32) << 8;
        Some(lo | hi << 16)
    }
}

/// Writes the tandem trace of a run. Create it after loading the program, before running.
///
/// Records are encoded straight into a 64 KiB buffer ([`OutBuf`]) written with one `write_all`
/// when full. The common instruction (no trap, no serviced call, no CSR, FP register or
/// privilege change, at most one integer register write and one plain load or store of 1, 2,
/// 4 or 8 bytes) takes a fast path that writes its group without the general bookkeeping;
/// `FAST = false` ([`Producer::general`], for tests) sends every instruction through the
/// general path. Both write the same bytes (`tests/fast_path.rs`).
pub struct Producer<W: Write, const FAST: bool = true> {
    p: Params,
    layout: Layout,
    absent: Elements,
    xlen: Xlen,
    /// `xlen` bits of ones: values of XLEN registers are masked with it.
    xmask: u64,
    /// The elements written (not absent), looked up once.
    w_pc: bool,
    w_insn: bool,
    w_gpr: bool,
    w_mem: bool,
    w_eaddr: bool,
    out: W,
    buf: OutBuf,
    err: Option<std::io::Error>,
    groups: u64,
    // The hart's state as the hooks report it, for the records that show a change.
    x: [u64; 32],
    f: [u64; 32],
    mstatus: u64,
    priv_: u8,
    fflags: u8,
    frm: u8,
    mie: u64,
    mideleg: u64,
    mtime: u64,
    // This instruction's effects so far: the first register write and memory access in
    // `gpr0`/`mem0` (when `has_gpr`/`has_mem`), any more in the vectors after them.
    has_gpr: bool,
    gpr0: (u8, u64),
    has_mem: bool,
    mem0: MemAccess,
    gprs: Vec<(u8, u64)>,
    fprs: Vec<(u8, u64)>,
    csrs: Vec<(u16, u64)>,
    mems: Vec<MemAccess>,
    fcsr_written: bool,
    /// `mstatus` and privilege after this instruction's `mret`/`sret` (the hart's trap_return).
    xret: Option<(u64, u8)>,
    /// A hook reported something the fast path does not handle (a CSR or FP register write, a
    /// trap return, a second register write or memory access, an access of another size).
    slow: bool,
    code: CodeMirror,
}

fn size_code(bytes: u8) -> u8 {
    match bytes {
        1 => 0,
        2 => 1,
        4 => 2,
        _ => 3,
    }
}

impl<W: Write> Producer<W> {
    /// A producer for `hart` (loaded with `image`, not run yet) writing to `out`. Writes the
    /// state initialization groups at once.
    pub fn new(hart: &Hart, image: &Image, opts: ProducerOptions, out: W) -> Producer<W> {
        Self::with_path(hart, image, opts, out)
    }
}

impl<W: Write> Producer<W, false> {
    /// [`Producer::new`] without the fast path: every instruction takes the general path. The
    /// trace is the same, byte for byte (tests compare them).
    pub fn general(hart: &Hart, image: &Image, opts: ProducerOptions, out: W) -> Self {
        Self::with_path(hart, image, opts, out)
    }
}

impl<W: Write, const FAST: bool> Producer<W, FAST> {
    fn with_path(hart: &Hart, image: &Image, opts: ProducerOptions, out: W) -> Self {
        let has = |e| !opts.absent.has(e);
        let mut pr = Producer {
            p: opts.params,
            layout: Layout::new(&opts.params),
            absent: opts.absent,
            xlen: hart.xlen,
            xmask: match hart.xlen {
                Xlen::Rv32 => 0xffff_ffff,
                Xlen::Rv64 => u64::MAX,
            },
            w_pc: has(Elements::PC),
            w_insn: has(Elements::INSN),
            w_gpr: has(Elements::GPR),
            w_mem: has(Elements::MEM),
            w_eaddr: has(Elements::EADDR),
            out,
            buf: OutBuf::new(1 << 16),
            err: None,
            groups: 0,
            x: hart.x,
            f: hart.f,
            mstatus: hart.csr.mstatus,
            priv_: hart.priv_,
            fflags: hart.csr.fflags,
            frm: hart.csr.frm,
            mie: hart.csr.mie,
            mideleg: hart.csr.mideleg,
            mtime: hart.mtime(),
            has_gpr: false,
            gpr0: (0, 0),
            has_mem: false,
            mem0: MemAccess {
                addr: 0,
                size: 0,
                value: 0,
                kind: MemKind::Load,
            },
            gprs: Vec::new(),
            fprs: Vec::new(),
            csrs: Vec::new(),
            mems: Vec::new(),
            fcsr_written: false,
            xret: None,
            slow: false,
            code: CodeMirror::new(image),
        };
        if !pr.absent.has(Elements::INIT) {
            pr.init_groups(hart, image);
        }
        pr
    }

    /// Groups written so far.
    pub fn groups(&self) -> u64 {
        self.groups
    }

    /// The sidecar of the trace written so far, with how the run ended (`stopped_early`:
    /// `--max-insns`, Ctrl-C, an error) and the number of groups: the checker tells a trace cut
    /// short from a whole one with them.
    pub fn sidecar(&self, stopped_early: bool) -> Meta {
        let mut meta = Meta::new(self.p, self.absent);
        meta.run_end = Some(if stopped_early {
            RunEnd::Stopped
        } else {
            RunEnd::Exit
        });
        meta.groups = Some(self.groups);
        meta
    }

    /// Encode `r` (the general path: the buffer is drained whenever it is full, so that a
    /// group of any size fits).
    #[inline(always)]
    fn rec(&mut self, r: Record) {
        self.buf.put(&r, &self.layout);
        if self.buf.full() {
            self.flush_buf();
        }
    }

    #[inline(always)]
    fn xv(&self, v: u64) -> u64 {
        v & self.xmask
    }

    #[inline(always)]
    fn end_group(&mut self) {
        self.rec(Record::EndGroup);
        self.groups += 1;
    }

    #[cold]
    #[inline(never)]
    fn flush_buf(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(self.buf.filled()) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Write what is buffered and return the writer, or the first I/O error.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_buf();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn fcsr(&self) -> u64 {
        ((self.frm as u64) << 5) | self.fflags as u64
    }

    /// State initialization: the registers as the program starts, then the loaded memory
    /// (chapter 3: "The state initialization opcode should be within a group that includes the
    /// update, which would typically include a register opcode or a memory request").
    fn init_groups(&mut self, hart: &Hart, image: &Image) {
        self.rec(Record::BeginGroup);
        self.rec(Record::StateInit);
        if !self.absent.has(Elements::PC) {
            let pc = self.xv(hart.pc);
            self.rec(Record::State(AddlState::Pc(pc)));
        }
        if !self.absent.has(Elements::PRIV) {
            self.rec(Record::State(AddlState::Priv(hart.priv_)));
        }
        if !self.absent.has(Elements::GPR) {
            for r in 1..32u8 {
                if hart.x[r as usize] != 0 {
                    let v = self.xv(hart.x[r as usize]);
                    self.rec(Record::FullReg {
                        addr: reg::gpr(r),
                        value: v,
                    });
                }
            }
        }
        if !self.absent.has(Elements::FPR) && self.p.flen > 0 {
            for r in 0..32u8 {
                if hart.f[r as usize] != 0 {
                    self.rec(Record::FullReg {
                        addr: reg::fpr(r),
                        value: hart.f[r as usize],
                    });
                }
            }
        }
        if !self.absent.has(Elements::CSR) {
            let ms = mstatus::read(self.mstatus, self.xlen);
            let ms = self.xv(ms);
            self.rec(Record::FullReg {
                addr: num::MSTATUS,
                value: ms,
            });
        }
        self.end_group();
        if self.absent.has(Elements::MEM) {
            return;
        }
        // Memory: 8-byte stores where aligned, smaller ones at the edges; RAM starts zeroed, so
        // all-zero words are left out. One group per 4 KiB.
        for seg in image.segments() {
            let (base, data) = (seg.paddr, &seg.data);
            let mut off = 0usize;
            while off < data.len() {
                let chunk_end = (off + 4096).min(data.len());
                let mut any = false;
                let mut k = off;
                while k < chunk_end {
                    let a = base + k as u64;
                    let mut n = 8usize;
                    while n > 1 && (!a.is_multiple_of(n as u64) || k + n > chunk_end) {
                        n /= 2;
                    }
                    let mut v = [0u8; 8];
                    v[..n].copy_from_slice(&data[k..k + n]);
                    let v = u64::from_le_bytes(v);
                    if v != 0 {
                        if !any {
                            self.rec(Record::BeginGroup);
                            self.rec(Record::StateInit);
                            any = true;
                        }
                        self.rec(Record::MemReq {
                            addr: a,
                            op: mem_op::STORE,
                            size: size_code(n as u8),
                            data: Some(v),
                        });
                    }
                    k += n;
                }
                if any {
                    self.end_group();
                }
                off = chunk_end;
            }
        }
    }

    /// The `mstatus` and privilege the trap entered with.
    fn enter_trap(&mut self, t: &TrapInfo) {
        self.mstatus = t.mstatus;
        self.priv_ = t.to_priv;
    }

    fn trap_records(&mut self, t: &TrapInfo, ms_before: u64) {
        self.enter_trap(t);
        if !self.absent.has(Elements::CSR) {
            let int_bit = if t.interrupt {
                1u64 << (self.p.xlen - 1)
            } else {
                0
            };
            let (epc, cause, tval) = if t.to_priv == 1 {
                (num::SEPC, num::SCAUSE, num::STVAL)
            } else {
                (num::MEPC, num::MCAUSE, num::MTVAL)
            };
            let v = self.xv(t.epc);
            self.rec(Record::FullReg {
                addr: epc,
                value: v,
            });
            self.rec(Record::FullReg {
                addr: cause,
                value: t.cause | int_bit,
            });
            let ms = self.xv(mstatus::read(self.mstatus, self.xlen));
            if ms != ms_before {
                self.rec(Record::FullReg {
                    addr: num::MSTATUS,
                    value: ms,
                });
            }
            let v = self.xv(t.tval);
            self.rec(Record::FullReg {
                addr: tval,
                value: v,
            });
        }
    }

    fn mem_records(&mut self, insn: u32, semihosting: bool, rs1v: u64, rs2v: u64) {
        let absent_mem = self.absent.has(Elements::MEM);
        let absent_ea = self.absent.has(Elements::EADDR);
        let is_amo = insn & 0x7f == 0x2f;
        let f5 = insn >> 27;
        if is_amo && f5 == 3 && self.mems.is_empty() {
            // A failed SC makes no access: the request and its failure.
            let size = if (insn >> 12) & 7 == 3 { 3 } else { 2 };
            let addr = self.xv(rs1v);
            let data = rs2v & crate::codec::mask_bits(u64::MAX, 8 << size);
            if !absent_ea {
                self.rec(Record::State(AddlState::Eaddr(addr)));
            }
            if !absent_mem {
                self.rec(Record::MemReq {
                    addr,
                    op: mem_op::SC,
                    size,
                    data: Some(data),
                });
                self.rec(Record::MemRsp {
                    size,
                    result: 1,
                    data: None,
                });
            }
            return;
        }
        if self.mems.is_empty() {
            return;
        }
        if !absent_ea && !semihosting {
            self.rec(Record::State(AddlState::Eaddr(self.mems[0].addr)));
        }
        // The memory a semihosting call wrote is written even when mem is absent (see `retire`).
        if absent_mem && !semihosting {
            return;
        }
        let mems = std::mem::take(&mut self.mems);
        if is_amo && f5 != 2 && f5 != 3 {
            // AMO: the load and the store of the model are one request; its data is the
            // operand (rs2), its response the old value.
            let old = mems.iter().find(|m| m.kind == MemKind::Load);
            if let Some(l) = old {
                let size = size_code(l.size);
                let op = mem_op::from_amo_funct5(f5);
                let data = rs2v & crate::codec::mask_bits(u64::MAX, 8 * l.size as u32);
                self.rec(Record::MemReq {
                    addr: l.addr,
                    op,
                    size,
                    data: Some(data),
                });
                self.rec(Record::MemRsp {
                    size,
                    result: 0,
                    data: Some(l.value),
                });
            }
            self.mems = mems;
            return;
        }
        for m in &mems {
            let (op, is_load) = match (m.kind, is_amo, f5) {
                (MemKind::Load, true, 2) => (mem_op::LR, true),
                (MemKind::Load, _, _) => (mem_op::LOAD, true),
                (MemKind::Store, true, 3) => (mem_op::SC, false),
                (MemKind::Store, _, _) => (mem_op::STORE, false),
            };
            // Semihosting writes pieces of any length up to 8: split into 1/2/4/8.
            let mut done = 0u8;
            while done < m.size {
                let left = m.size - done;
                let n = if left >= 8 {
                    8
                } else if left >= 4 {
                    4
                } else if left >= 2 {
                    2
                } else {
                    1
                };
                let v = if n == 8 {
                    m.value
                } else {
                    (m.value >> (8 * done)) & ((1u64 << (8 * n)) - 1)
                };
                let size = size_code(n);
                let addr = m.addr + done as u64;
                if is_load {
                    self.rec(Record::MemReq {
                        addr,
                        op,
                        size,
                        data: None,
                    });
                    self.rec(Record::MemRsp {
                        size,
                        result: 0,
                        data: Some(v),
                    });
                } else {
                    self.rec(Record::MemReq {
                        addr,
                        op,
                        size,
                        data: Some(v),
                    });
                    self.rec(Record::MemRsp {
                        size,
                        result: 0,
                        data: None,
                    });
                }
                done += n;
            }
        }
        self.mems = mems;
    }

    fn clear_pending(&mut self) {
        self.has_gpr = false;
        self.has_mem = false;
        self.gprs.clear();
        self.fprs.clear();
        self.csrs.clear();
        self.mems.clear();
        self.fcsr_written = false;
        self.xret = None;
        self.slow = false;
    }

    /// The group of the common instruction (see the type's doc), what [`Self::retire_general`]
    /// writes for it: with no CSR, FP register, trap or privilege change, `fcsr`, `mstatus`
    /// and the privilege stay as they were, so their records are never due.
    #[inline(always)]
    fn retire_fast(&mut self, ev: &Retired) {
        self.mtime = ev.mtime;
        let l = &self.layout;
        let mut g = self.buf.group();
        g.put(&Record::BeginGroup, l);
        if self.w_pc {
            let next = ev.next_pc & self.xmask;
            if next == ev.pc.wrapping_add(ev.len as u64) & self.xmask {
                g.put(&Record::IncrPc, l);
            } else {
                g.put(&Record::State(AddlState::Pc(next)), l);
            }
        }
        if self.w_insn {
            if ev.len == 2 {
                g.put(&Record::Insn16(ev.insn as u16), l);
            } else {
                g.put(&Record::Insn32(ev.insn), l);
            }
        }
        if self.has_gpr {
            let (rd, v) = self.gpr0;
            self.x[rd as usize] = v;
            if self.w_gpr {
                g.put(
                    &Record::FullReg {
                        addr: reg::gpr(rd),
                        value: v & self.xmask,
                    },
                    l,
                );
            }
        }
        if self.has_mem {
            let m = &self.mem0;
            if self.w_eaddr {
                g.put(&Record::State(AddlState::Eaddr(m.addr)), l);
            }
            if self.w_mem {
                // One access of 1, 2, 4 or 8 bytes (`mem_access` made others slow).
                let size = size_code(m.size);
                let v = crate::codec::mask_bits(m.value, 8 * m.size as u32);
                let (op, req, rsp) = match m.kind {
                    MemKind::Load => (mem_op::LOAD, None, Some(v)),
                    MemKind::Store => (mem_op::STORE, Some(v), None),
                };
                g.put(
                    &Record::MemReq {
                        addr: m.addr,
                        op,
                        size,
                        data: req,
                    },
                    l,
                );
                g.put(
                    &Record::MemRsp {
                        size,
                        result: 0,
                        data: rsp,
                    },
                    l,
                );
            }
        }
        g.put(&Record::EndGroup, l);
        g.done();
        self.groups += 1;
        if self.buf.full() {
            self.flush_buf();
        }
        self.has_gpr = false;
        self.has_mem = false;
    }

    /// Any retired instruction: every record the instruction's effects call for.
    /// (The event by value: the fast path then needs no copy of it in memory.)
    #[inline(never)]
    fn retire_general(&mut self, ev: Retired) {
        // The first register write and memory access join the others (see the fields).
        if self.has_gpr {
            self.gprs.insert(0, self.gpr0);
            self.has_gpr = false;
        }
        if self.has_mem {
            self.mems.insert(0, self.mem0);
            self.has_mem = false;
        }
        let ms_before = self.xv(mstatus::read(self.mstatus, self.xlen));
        let (priv_before, fcsr_before) = (self.priv_, self.fcsr());
        self.mtime = ev.mtime;
        self.rec(Record::BeginGroup);
        if !self.absent.has(Elements::PC) {
            if ev.trap.is_none() && ev.next_pc == self.xv(ev.pc.wrapping_add(ev.len as u64)) {
                self.rec(Record::IncrPc);
            } else {
                let pc = self.xv(ev.next_pc);
                self.rec(Record::State(AddlState::Pc(pc)));
            }
        }
        if !self.absent.has(Elements::INSN) {
            self.rec(if ev.len == 2 {
                Record::Insn16(ev.insn as u16)
            } else {
                Record::Insn32(ev.insn)
            });
        }
        // A `fflags` write by an instruction that is not a CSR instruction is the hart reporting
        // flags an FP operation accrued: traced as the OR form of Table C.3, not as a write.
        let csr_insn = ev.insn & 0x7f == 0x73 && (ev.insn >> 12) & 7 != 0;
        let mut op = 0u8;
        // Operands of an atomic, before the instruction wrote its destination.
        let (rs1v, rs2v) = (
            self.x[((ev.insn >> 15) & 31) as usize],
            self.x[((ev.insn >> 20) & 31) as usize],
        );
        // Register writes.
        let gprs = std::mem::take(&mut self.gprs);
        for &(rd, v) in &gprs {
            self.x[rd as usize] = v;
        }
        // A serviced call's (semihosting, SBI) results are non-deterministic input the checker
        // cannot know (3.1 step 2): written even when gpr is absent (3.2: "If the trace excludes state
        // elements that are necessary to reflect non-deterministic behavior, then false positive
        // tandem verification mismatches will result").
        if !self.absent.has(Elements::GPR) || ev.serviced.is_some() {
            for (k, &(rd, _)) in gprs.iter().enumerate() {
                // The last write of each register (semihosting may write a0 more than once).
                if gprs[k + 1..].iter().any(|&(r, _)| r == rd) {
                    continue;
                }
                let v = self.xv(self.x[rd as usize]);
                self.rec(Record::FullReg {
                    addr: reg::gpr(rd),
                    value: v,
                });
            }
        }
        self.gprs = gprs;
        let fprs = std::mem::take(&mut self.fprs);
        for &(rd, v) in &fprs {
            self.f[rd as usize] = v;
            self.mstatus |= mstatus::FS;
        }
        if !self.absent.has(Elements::FPR) && self.p.flen > 0 {
            for &(rd, v) in &fprs {
                self.rec(Record::FullReg {
                    addr: reg::fpr(rd),
                    value: crate::codec::mask_bits(v, self.p.flen),
                });
            }
        }
        self.fprs = fprs;
        // CSR writes by the instruction, as their canonical registers.
        let csrs = std::mem::take(&mut self.csrs);
        let mut other: Vec<(u16, u64)> = Vec::new();
        for &(csr, v) in &csrs {
            match csr {
                num::FFLAGS if !csr_insn => op |= (v & 0x1f) as u8 & !self.fflags,
                num::FFLAGS => {
                    self.fflags = (v & 0x1f) as u8;
                    self.fcsr_written = true;
                    self.mstatus |= mstatus::FS;
                }
                num::FRM => {
                    self.frm = (v & 7) as u8;
                    self.fcsr_written = true;
                    self.mstatus |= mstatus::FS;
                }
                num::FCSR => {
                    self.fflags = (v & 0x1f) as u8;
                    self.frm = ((v >> 5) & 7) as u8;
                    self.fcsr_written = true;
                    self.mstatus |= mstatus::FS;
                }
                num::MSTATUS => {
                    self.mstatus = match self.xlen {
                        Xlen::Rv32 => (self.mstatus & !0xffff_ffff) | (v & 0x7fff_ffff),
                        Xlen::Rv64 => v & !(1 << 63),
                    };
                }
                num::SSTATUS => {
                    let m = match self.xlen {
                        Xlen::Rv32 => SSTATUS_BITS & 0x7fff_ffff,
                        Xlen::Rv64 => SSTATUS_BITS,
                    };
                    self.mstatus = (self.mstatus & !m) | (v & m);
                }
                num::MIE => {
                    self.mie = self.xv(v);
                    other.push((num::MIE, self.mie));
                }
                num::SIE => {
                    let m = self.mideleg & irq::S_VIEW;
                    self.mie = (self.mie & !m) | (v & m);
                    other.push((num::MIE, self.mie));
                }
                num::MIDELEG => {
                    self.mideleg = self.xv(v);
                    other.push((csr, self.mideleg));
                }
                // The counters read back one less than the next instruction sees: this
                // instruction's own retirement is absorbed (the model's `csr_write`).
                num::MCYCLE | num::MINSTRET => other.push((csr, self.xv(v.wrapping_add(1)))),
                _ => other.push((csr, self.xv(v))),
            }
        }
        self.csrs = csrs;
        if op != 0 {
            self.fflags |= op;
        }
        if !self.absent.has(Elements::CSR) {
            let fcsr = self.fcsr();
            if self.fcsr_written {
                self.rec(Record::FullReg {
                    addr: reg::FCSR,
                    value: fcsr,
                });
            } else if fcsr != fcsr_before {
                // Table C.3: the new exception flags as an OR.
                self.rec(Record::IncrRegOr {
                    addr: reg::FCSR,
                    mask: (fcsr & !fcsr_before) as u8,
                });
            }
            for &(csr, v) in &other {
                self.rec(Record::FullReg {
                    addr: csr,
                    value: v,
                });
            }
        }
        // mret / sret (privileged ISA, "Trap-Return Instructions").
        if let Some((ms, p)) = self.xret.take() {
            (self.mstatus, self.priv_) = (ms, p);
        }
        if let Some(t) = &ev.trap {
            self.trap_records(t, ms_before);
        } else if !self.absent.has(Elements::CSR) {
            let ms = self.xv(mstatus::read(self.mstatus, self.xlen));
            if ms != ms_before {
                self.rec(Record::FullReg {
                    addr: num::MSTATUS,
                    value: ms,
                });
            }
        }
        if self.priv_ != priv_before && !self.absent.has(Elements::PRIV) {
            self.rec(Record::State(AddlState::Priv(self.priv_)));
        }
        self.mem_records(ev.insn, ev.serviced.is_some(), rs1v, rs2v);
        self.end_group();
        self.clear_pending();
    }
}

impl<W: Write, const FAST: bool> Observer for Producer<W, FAST> {
    #[inline(always)]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        if !self.has_gpr {
            self.gpr0 = (rd, value);
            self.has_gpr = true;
        } else {
            self.slow = true;
            self.gprs.push((rd, value));
        }
    }

    #[inline]
    fn fpr_write(&mut self, rd: u8, value: u64) {
        self.slow = true;
        self.fprs.push((rd, value));
    }

    #[inline]
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.slow = true;
        self.csrs.push((csr, value));
    }

    #[inline]
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.slow = true;
        self.xret = Some((mstatus, to_priv));
    }

    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        if !self.has_mem {
            self.mem0 = *acc;
            self.has_mem = true;
            self.slow |= !matches!(acc.size, 1 | 2 | 4 | 8);
        } else {
            self.slow = true;
            self.mems.push(*acc);
        }
        if acc.kind == MemKind::Store {
            self.code.store(acc.addr, acc.size, acc.value);
        }
    }

    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        // AMOs (opcode 0x2f) have their own records; serviced calls write what the call did.
        if FAST
            && !self.slow
            && ev.trap.is_none()
            && ev.serviced.is_none()
            && ev.insn & 0x7f != 0x2f
        {
            self.retire_fast(ev);
        } else {
            self.retire_general(*ev);
        }
    }

    fn trap(&mut self, t: &TrapInfo) {
        // A fault (the instruction did not retire: its partial effects are dropped) or an
        // interrupt (no instruction field, chapter 3).
        let ms_before = self.xv(mstatus::read(self.mstatus, self.xlen));
        let priv_before = self.priv_;
        self.rec(Record::BeginGroup);
        if !self.absent.has(Elements::PC) {
            let pc = self.xv(t.handler);
            self.rec(Record::State(AddlState::Pc(pc)));
        }
        if !t.interrupt && !self.absent.has(Elements::INSN) && t.cause != 1 {
            let bits = if t.cause == 2 && t.tval != 0 {
                Some(t.tval as u32)
            } else {
                self.code.insn(t.epc)
            };
            if let Some(b) = bits {
                self.rec(if b & 3 != 3 {
                    Record::Insn16(b as u16)
                } else {
                    Record::Insn32(b)
                });
            }
        }
        self.trap_records(t, ms_before);
        if self.priv_ != priv_before && !self.absent.has(Elements::PRIV) {
            self.rec(Record::State(AddlState::Priv(self.priv_)));
        }
        if t.interrupt && !self.absent.has(Elements::MTIME) {
            let m = self.mtime;
            self.rec(Record::State(AddlState::Mtime(m)));
        }
        self.end_group();
        self.clear_pending();
    }
}

/// An optional [`Producer`] (for composing into an observer tuple).
pub struct MaybeProducer<W: Write>(pub Option<Producer<W>>);

impl<W: Write> Observer for MaybeProducer<W> {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        if let Some(p) = &mut self.0 {
            p.retire(ev)
        }
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        if let Some(p) = &mut self.0 {
            p.trap(ev)
        }
    }
    #[inline(always)]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        if let Some(p) = &mut self.0 {
            p.gpr_write(rd, value)
        }
    }
    #[inline(always)]
    fn fpr_write(&mut self, rd: u8, value: u64) {
        if let Some(p) = &mut self.0 {
            p.fpr_write(rd, value)
        }
    }
    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        if let Some(p) = &mut self.0 {
            p.csr_write(csr, value)
        }
    }
    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        if let Some(p) = &mut self.0 {
            p.mem_access(acc)
        }
    }
    #[inline(always)]
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        if let Some(p) = &mut self.0 {
            p.trap_return(mstatus, to_priv)
        }
    }
}

/// The parameters the producer uses for `hart` unless told otherwise: XLEN of the hart, FLEN 64
/// with D (32 with F only, 0 without), MLEN 64 for RV64 and 32 for RV32 (chapter 3: "MLEN for
/// RV32 is 34 when supervisor mode and Sv32 are supported, and 32 otherwise"; the hart model
/// does not translate addresses, so its RV32 addresses are 32 bits).
pub fn default_params(hart: &Hart) -> Params {
    let xlen = hart.xlen.bits();
    Params {
        xlen,
        flen: if hart.ext.d {
            64
        } else if hart.ext.f {
            32
        } else {
            0
        },
        mlen: xlen,
        pc_ident: crate::codec::state::PC,
    }
}

/// A producer writing to the file `path`, with its sidecar `path.meta` (which records the
/// parameters and the absent elements).
pub fn create_file_producer(
    path: &std::path::Path,
    hart: &Hart,
    image: &Image,
    absent: Elements,
    mlen: Option<u32>,
) -> Result<Producer<std::io::BufWriter<std::fs::File>>, CreateError> {
    let mut params = default_params(hart);
    if let Some(m) = mlen {
        params.mlen = m;
    }
    params.validate().map_err(CreateError::Params)?;
    let f = std::fs::File::create(path).map_err(|error| CreateError::Create {
        path: path.to_path_buf(),
        error,
    })?;
    Meta::new(params, absent)
        .write(path)
        .map_err(CreateError::Sidecar)?;
    Ok(Producer::new(
        hart,
        image,
        ProducerOptions { params, absent },
        std::io::BufWriter::with_capacity(1 << 16, f),
    ))
}

/// Why [`create_file_producer`] failed.
#[derive(Debug)]
pub enum CreateError {
    /// The parameters are not ones the codec can represent.
    Params(ParamsError),
    /// The trace file could not be created.
    Create {
        /// The trace file.
        path: std::path::PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The sidecar could not be written.
    Sidecar(MetaError),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::Params(e) => write!(f, "{e}"),
            CreateError::Create { path, error } => {
                write!(f, "{}: cannot create: {error}", path.display())
            }
            CreateError::Sidecar(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CreateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CreateError::Params(e) => Some(e),
            CreateError::Create { error, .. } => Some(error),
            CreateError::Sidecar(e) => Some(e),
        }
    }
}
