//! Turns hart events into ingress-port records ([`rvtrace_ingress::Record`]), one per retired
//! instruction (or one per block, below), plus one with `iretire = 0` for each fault or
//! interrupt (`etrace-v2.0/ingressPort.adoc`: "if itype is 1 or 2 ... the number of instructions
//! retired may be zero").
//!
//! Block records ([`IngressRecorder::block_records`], `rvtrace run --ingress-blocks`): the
//! multiple-retirement interface (`ingressPort.adoc`, "Instruction Trace Interface": "a
//! contiguous sequence of instructions starting at iaddr"; `iretire` counts the half-words of
//! the whole block, `ilastsize` is the size of its last instruction and `itype` that of its
//! last instruction). A block goes on as long as its instructions would be records that differ
//! only in address and size, each one after the other: it ends with an instruction whose
//! `itype` is not 0, with any instruction whose next pc is not the one after it (an inferable
//! call has `itype` 0 when `itype_width_p` is 3, "but must still be the final instruction
//! retired in a block"), with a trap (a fault or interrupt record follows it), before a change
//! of privilege or context (the first instruction in a new context, `ctype` 2, "report the
//! address of the 1st instruction retired in this block", starts a block), with an `ecall` /
//! `ebreak` (`itype` 1, `cause` and `tval` of the block) and at the end of the run. So the
//! records are those of a hart that retires a block per cycle, and expanding each block over
//! the program's instructions gives back exactly the per-instruction records.
//!
//! `time` of a block record is the time of its **last** instruction: the block retires in the
//! cycle its last instruction retires (the spec's block is "retired in the same cycle"), and a
//! trap record after it, which retires nothing, keeps that time as in the per-instruction
//! stream. A block also ends before an instruction whose time is not its predecessor's plus one
//! (the hart model's `mtime` steps by one per retired instruction unless the program writes
//! it), so the time of each instruction in a block is the block's time minus the number of
//! instructions after it: nothing is lost.
//!
//! Environment calls serviced by the hart (semihosting, SBI: [`crate::extension`]) follow the
//! convention of the E-Trace reference flow vectors (`conformance/README.md`, "Trap
//! convention"): the `ebreak`/`ecall` of a serviced call is reported as a retired instruction
//! with an exception (`itype` 1, the cause it would have raised, tval 0) whose handler is the
//! next instruction, except for a final call that never returns (`SYS_EXIT`), which stays a
//! plain row.
//!
//! Context ([`IngressRecorder::context_from_asid`], `rvtrace run --context asid`): the
//! `context` field carries `satp.ASID` in bits 15:0 (VMID bits 29:16 stay 0), where
//! `ingressPort.adoc` recommends them ("the address space and virtual machine IDs"). A write to
//! `satp` that changes the ASID takes effect after the writing instruction: its record still
//! carries the old ASID, and the first instruction that *retires* after it carries the new ASID
//! with `ctype` 2, "report context precisely" (the precise point is the first instruction
//! retired in the new address space). A trap taken before any instruction retires in between
//! (a fault at that first instruction) is recorded with the old context, and the handler's
//! first instruction reports the change. Without it `context` and `ctype` stay 0.

use crate::arch::privilege;
use crate::csr::num;
use crate::observer::{Observer, Retired, RetiredRun, RunStep, TrapInfo};
use rvtrace_ingress::{Itype, Near, Record, RecordSink, RunHead};
use rvtrace_isa::{is_sequentially_inferable, CfClass, IsaConfig};

/// `ctype` 2, "report context precisely" (`ingressPort.adoc`, context type table).
pub const CTYPE_PRECISE: u8 = 2;

pub use crate::csr::satp_asid;

/// The context the recorder reports ([`IngressRecorder::context_from_asid`]).
#[derive(Clone, Copy, Debug)]
struct AsidContext {
    /// The context of the last retired instruction's record.
    reported: u64,
    /// The ASID in effect for the next instruction.
    current: u64,
    /// The ASID a `satp` write of the current instruction set (takes effect after it).
    written: Option<u64>,
}

/// An [`Observer`] that emits ingress records to a sink. A serviced call's record is held
/// back until the next event, so that [`IngressRecorder::finish`] can turn a final call (the
/// program's exit) into a plain row; every other record goes out at once.
///
/// The common instruction (no trap, same privilege and context, time one step on, no `sijump`
/// to compute) is a record the binary format predicts from the previous one but for its
/// address: the recorder tracks that prediction (`pred_*`) and hands such records to
/// [`RecordSink::predicted`], which a binary writer encodes without comparing (a tag byte, and
/// the address delta after a jump: a few host instructions). `FAST = false` (the
/// [`IngressRecorder::general`] recorder, for tests) sends every record through the general path.
pub struct IngressRecorder<S: RecordSink, const FAST: bool = true> {
    sink: S,
    itype_width: u8,
    isa: IsaConfig,
    pending: Option<(Record, bool)>,
    /// The `itype` of a predicted record by control-flow class and taken (`[class][taken]`),
    /// `None` for the classes whose record takes the full path (uninferable jumps, which may
    /// need `sijump`).
    fast_itype: [[Option<Itype>; 2]; 16],
    /// The `itype` by class and taken, for every class (the records of a run,
    /// [`Observer::retire_run`], where no uninferable jump occurs).
    run_itype: [[Itype; 2]; 16],
    prev_bits: Option<u32>,
    /// `context` from `satp.ASID`, if asked for.
    asid: Option<AsidContext>,
    /// The next record must take the full path: a held-back record, a context change to
    /// report, a `satp` write.
    full_next: bool,
    /// The time the format predicts for the next record (`time_step` after the previous
    /// record's time, which is the `mtime` of the last retired instruction: a trap retires
    /// nothing, so time has not moved).
    pred_time: u64,
    /// The previous record's time step.
    time_step: u64,
    /// The privilege (hart encoding) of the previous record.
    pred_priv: u8,
    /// The previous record's `priv` and `context`.
    last_priv: u8,
    last_context: u64,
    /// One record per block instead of one per instruction (module documentation).
    blocks: bool,
    /// Block mode: the open block (`iretire` 0: none; its privilege as the hart encodes it is
    /// `pred_priv`).
    open: Record,
    /// Block mode: `priv` and `context` of the last record sent.
    sent: (u8, u64),
    /// Block mode: what the runs of a block make ([`BlockRunSum`]), direct-mapped by key
    /// ([`block_run_slot`]; an empty slot holds key 0, which no run has).
    block_runs: Box<[BlockRunSum]>,
    /// Block mode: the records of a run, built where no summary or kept bytes are.
    scratch: Vec<Record>,
    /// Records emitted so far.
    pub records: u64,
}

// The keys of runs (`IngressRecorder::run_key`) have 6 bits for the number of records
// (`RetiredRun::block_id`: fewer than 64 instructions in a run with an id).
const _: () = assert!(crate::block::MAX_INSNS < 63);

/// `iretire` at which a block record is closed before it could overflow (never reached by
/// real code: a block is straight-line code).
const MAX_BLOCK_IRETIRE: u32 = u32::MAX / 2;

/// Slots of the block-run summaries (`IngressRecorder::block_runs`).
const BLOCK_RUN_SLOTS: usize = 2048;

/// The slot of a block run's key.
#[inline(always)]
fn block_run_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BLOCK_RUN_SLOTS.trailing_zeros())) as usize
}

/// What the instructions of a run ([`IngressRecorder::retire_run_blocks`]'s keyed runs) make
/// of block records, from an empty or a contiguous open block: the same for every run with the
/// key but for times (instruction `i` of the run retires at the first's time plus `i`). The
/// records closed after the first are the sink's to keep ([`RecordSink::blocks_again`]).
#[derive(Clone, Copy, Default)]
struct BlockRunSum {
    key: u64,
    /// The address of the run's first instruction.
    pc0: u64,
    /// The address of the open block the run leaves (`tail_half` 0: none), when it closes a
    /// record.
    tail_iaddr: u64,
    /// Records the run closes.
    m: u8,
    /// The run's instructions up to the one that closes the first record (all of them if
    /// none does): half-words, the size of the last of them, its `itype` and index.
    half0: u8,
    ilast0: u8,
    itype0: Itype,
    e0: u8,
    /// The index of the instruction that closes the last record and of the one that closes
    /// the record before it (`m` at least 2).
    e_last: u8,
    e_prev: u8,
    /// Half-words and size of the last instruction of the open block the run leaves.
    tail_half: u8,
    tail_ilast: u8,
}

impl<S: RecordSink> IngressRecorder<S> {
    /// A recorder producing `itype` codes of `itype_width` bits (3 or 4) for an `isa`.
    pub fn new(isa: IsaConfig, itype_width: u8, sink: S) -> Self {
        Self::with_path(isa, itype_width, sink)
    }
}

impl<S: RecordSink> IngressRecorder<S, false> {
    /// [`IngressRecorder::new`] without the fast path: every record is built by the general
    /// path and given to [`RecordSink::record`]; the records are the same (tests compare them).
    pub fn general(isa: IsaConfig, itype_width: u8, sink: S) -> Self {
        Self::with_path(isa, itype_width, sink)
    }
}

impl<S: RecordSink, const FAST: bool> IngressRecorder<S, FAST> {
    fn with_path(isa: IsaConfig, itype_width: u8, sink: S) -> Self {
        let mut fast_itype = [[None; 2]; 16];
        let mut run_itype = [[Itype::None; 2]; 16];
        for c in CfClass::ALL {
            for taken in [false, true] {
                let itype = c.etrace_itype(taken, itype_width);
                run_itype[c as usize][taken as usize] = itype;
                fast_itype[c as usize][taken as usize] = (!c.is_uninferable()).then_some(itype);
            }
        }
        IngressRecorder {
            fast_itype,
            run_itype,
            sink,
            itype_width,
            isa,
            pending: None,
            prev_bits: None,
            asid: None,
            full_next: true,
            pred_time: 0,
            time_step: 0,
            pred_priv: 0,
            last_priv: 0,
            last_context: 0,
            blocks: false,
            open: Record::default(),
            sent: (0, 0),
            block_runs: Vec::new().into_boxed_slice(),
            scratch: Vec::new(),
            records: 0,
        }
    }

    /// Report one record per block of instructions instead of one per instruction (module
    /// documentation, "Block records"). The stream's header should say `multi_retire`.
    pub fn block_records(mut self, on: bool) -> Self {
        self.blocks = on;
        if on && self.block_runs.is_empty() {
            self.block_runs = vec![BlockRunSum::default(); BLOCK_RUN_SLOTS].into_boxed_slice();
        }
        self
    }

    /// Drive `context` from `satp.ASID` (module documentation), starting from `satp` (the
    /// hart's value before the first instruction).
    pub fn context_from_asid(mut self, satp: u64) -> Self {
        let asid = satp_asid(self.isa.xlen, satp);
        self.asid = Some(AsidContext {
            reported: asid,
            current: asid,
            written: None,
        });
        self
    }

    /// The sink.
    pub fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Sends `rec` (held back if `serviced`; `hart_priv` is its privilege as the hart encodes
    /// it) and sets the prediction for the next record.
    #[inline]
    fn push(&mut self, rec: Record, hart_priv: u8, serviced: bool) {
        if let Some((r, _)) = self.pending.take() {
            self.sink.record(&r);
            self.records += 1;
        }
        self.time_step = rec
            .time
            .wrapping_sub(self.pred_time.wrapping_sub(self.time_step));
        self.pred_time = rec.time.wrapping_add(self.time_step);
        self.last_priv = rec.priv_;
        self.pred_priv = hart_priv;
        self.last_context = rec.context;
        self.sent = (rec.priv_, rec.context);
        let context_due = self.asid.is_some_and(|a| a.current != a.reported);
        self.full_next = serviced || context_due;
        if serviced {
            self.pending = Some((rec, true));
        } else {
            self.sink.record(&rec);
            self.records += 1;
        }
    }

    /// Any retired instruction, the general path. (The event by value: the fast path then
    /// needs no copy of it in memory.)
    #[inline(never)]
    fn retire_full(&mut self, ev: Retired, taken: bool) {
        let mut rec = Record {
            iaddr: ev.pc,
            iretire: ev.len as u32 / 2,
            ilastsize: if ev.len == 4 { 1 } else { 0 },
            itype: ev.class.etrace_itype(taken, self.itype_width),
            priv_: ingress_priv(ev.priv_),
            time: ev.mtime,
            ..Record::default()
        };
        if let Some(a) = &mut self.asid {
            rec.context = a.current;
            if a.current != a.reported {
                rec.ctype = CTYPE_PRECISE;
                a.reported = a.current;
            }
            if let Some(new) = a.written.take() {
                a.current = new;
            }
        }
        if let Some(t) = ev.trap {
            rec.itype = Itype::Exception;
            rec.cause = t.cause;
            rec.tval = t.tval;
        } else if let Some(s) = ev.serviced {
            rec.itype = Itype::Exception;
            rec.cause = s.cause as u64;
        }
        if ev.class.is_uninferable() {
            if let Some(prev) = self.prev_bits {
                rec.sijump = is_sequentially_inferable(&self.isa, prev, ev.insn);
            }
        }
        self.prev_bits = Some(ev.insn);
        if self.blocks {
            self.block_add(rec, ev.priv_, ev.serviced.is_some(), taken);
        } else {
            self.push(rec, ev.priv_, ev.serviced.is_some());
        }
    }

    /// Block mode: adds the record `rec` of one instruction (`hart_priv`: its privilege as the
    /// hart encodes it; `taken`: its next pc is not the one after it) to the open block, or
    /// closes that block and opens one with `rec`; closes the block after `rec` when `rec` ends
    /// one (module documentation, "Block records").
    fn block_add(&mut self, rec: Record, hart_priv: u8, serviced: bool, taken: bool) {
        let o = &mut self.open;
        if o.iretire != 0
            && o.iretire < MAX_BLOCK_IRETIRE
            && rec.iaddr == o.next_iaddr()
            && hart_priv == self.pred_priv
            && rec.priv_ == o.priv_
            && rec.context == o.context
            && rec.ctype == 0
            && rec.time == o.time.wrapping_add(1)
        {
            o.iretire += rec.iretire;
            o.ilastsize = rec.ilastsize;
            o.itype = rec.itype;
            o.cause = rec.cause;
            o.tval = rec.tval;
            o.time = rec.time;
            o.sijump = rec.sijump;
        } else {
            self.close_block();
            self.open = rec;
            self.pred_priv = hart_priv;
            self.last_priv = rec.priv_;
            self.last_context = rec.context;
        }
        if rec.itype != Itype::None || taken || serviced {
            let r = self.open;
            self.open.iretire = 0;
            self.push(r, hart_priv, serviced);
        } else {
            // The next instruction takes this path when it reports a new context.
            self.full_next = self.asid.is_some_and(|a| a.current != a.reported);
        }
    }

    /// Block mode: sends the open block, if any. (`open.time` stays: the time of the last
    /// retired instruction.)
    #[inline(never)]
    fn close_block(&mut self) {
        if self.open.iretire == 0 {
            return;
        }
        let r = &self.open;
        // The common block: like the record before it but for address, size, itype and time
        // (`RecordSink::block`), nothing held back. (Sent from where it is: no copy.)
        if self.pending.is_none()
            && r.priv_ == self.sent.0
            && r.context == self.sent.1
            && (r.cause | r.tval | r.ctype as u64) == 0
            && !r.sijump
        {
            self.sink.block(r);
            let r = &mut self.open;
            r.iretire = 0;
            self.records += 1;
            // As `push`.
            self.time_step = r
                .time
                .wrapping_sub(self.pred_time.wrapping_sub(self.time_step));
            self.pred_time = r.time.wrapping_add(self.time_step);
            self.full_next = self.asid.is_some_and(|a| a.current != a.reported);
            return;
        }
        let r = self.open;
        self.open.iretire = 0;
        self.push(r, self.pred_priv, false);
    }

    /// Block mode, the instructions of a run: the first and the last as any instruction
    /// ([`Self::retire_block`]); those in between follow one another with the privilege of the
    /// first and the time one step on each (`RetiredRun`), and none is an uninferable jump, so
    /// each only adds its size to the open block, or opens one, or ends it.
    #[inline(never)]
    fn retire_run_blocks(&mut self, run: &impl RetiredRun) {
        if let Some(key) = self.block_run_key(run) {
            let slot = block_run_slot(key);
            if self.block_runs[slot].key == key && self.block_run_again(run, slot, key) {
                return;
            }
            return self.block_run_new(run, key);
        }
        self.retire_run_blocks_general(run);
    }

    /// The key of a run whose block records [`BlockRunSum`] says (`None`: the run takes
    /// [`Self::retire_run_blocks_general`]): a run of at least 2 instructions of a block
    /// ([`RetiredRun::block_id`]), whose first instruction goes on from the time and privilege
    /// before it, with nothing held back or to report, the `priv` and `context` of its records
    /// those of the last record sent, after an empty open block or one it continues (at its
    /// address, far from `MAX_BLOCK_IRETIRE`), whose last instruction retires one step on and
    /// is not an uninferable jump with `sijump`: every record it closes is then a block record
    /// like the one before it, as [`Self::close_block`] sends them. The key names the block,
    /// the run's length, whether its last instruction went on in the block, and the `itype`
    /// width.
    #[inline(always)]
    fn block_run_key(&self, run: &impl RetiredRun) -> Option<u64> {
        let n = run.len();
        let id = run.block_id()?;
        if !FAST || n < 2 {
            return None;
        }
        debug_assert!(n < 64, "{n} instructions in a run with an id");
        let t0 = run.mtime(0);
        let o = &self.open;
        if self.full_next
            || self.pending.is_some()
            || t0 != o.time.wrapping_add(1)
            || run.priv_() != self.pred_priv
            || (self.last_priv, self.last_context) != self.sent
            || run.mtime(n - 1) != t0.wrapping_add(n as u64 - 1)
        {
            return None;
        }
        if o.iretire != 0
            && (o.iretire >= MAX_BLOCK_IRETIRE - 128 || o.next_iaddr() != run.step(0).pc)
        {
            return None;
        }
        // An open block with trap fields or `sijump` is closed at once; one with `ctype` 2
        // reports a context other than that of the records before it, which `sent` holds.
        debug_assert!(
            o.iretire == 0 || ((o.cause | o.tval | o.ctype as u64) == 0 && !o.sijump),
            "open block {o}"
        );
        let last = run.last_step();
        if self.last_sijump(run, &last) {
            return None;
        }
        Some(self.run_key(id, n, last.taken))
    }

    /// `sijump` of the last instruction of `run` (of at least 2 instructions), step `last`: an
    /// uninferable jump sequentially inferable from the instruction before it.
    #[inline]
    fn last_sijump(&self, run: &impl RetiredRun, last: &RunStep) -> bool {
        let n = run.len();
        last.class.is_uninferable()
            && is_sequentially_inferable(&self.isa, run.insn(n - 2), run.insn(n - 1))
    }

    /// The first record a run summarised by `sum` closes (or the open block it leaves when it
    /// closes none): the open block before it, if any, goes on.
    #[inline(always)]
    fn block_run_first(&self, slot: usize, t0: u64) -> Record {
        let sum = &self.block_runs[slot];
        let o = &self.open;
        let (iaddr, half) = if o.iretire != 0 {
            (o.iaddr, o.iretire)
        } else {
            (sum.pc0, 0)
        };
        Record {
            iaddr,
            iretire: half + sum.half0 as u32,
            ilastsize: sum.ilast0,
            itype: sum.itype0,
            priv_: self.last_priv,
            context: self.last_context,
            time: t0.wrapping_add(sum.e0 as u64),
            ..Record::default()
        }
    }

    /// A run whose summary is kept: its records from the summary, those after the first
    /// copied by the sink ([`RecordSink::blocks_again`]); false (nothing done) when the sink
    /// kept nothing for them.
    #[inline(always)]
    fn block_run_again(&mut self, run: &impl RetiredRun, slot: usize, key: u64) -> bool {
        let t0 = run.mtime(0);
        let first = self.block_run_first(slot, t0);
        match self.block_runs[slot].m {
            0 => {}
            1 => self.sink.block(&first),
            m => {
                if !self.sink.blocks_again(&first, m as usize, key) {
                    return false;
                }
            }
        }
        self.block_run_end(run, slot, &first);
        true
    }

    /// The state after a run summarised by `sum` whose first record is `first` (sent, or the
    /// open block when the run closes none), as [`Self::retire_run_blocks_general`] leaves
    /// it.
    #[inline(always)]
    fn block_run_end(&mut self, run: &impl RetiredRun, slot: usize, first: &Record) {
        // (The summary's fields read in place: no copy of it.)
        let sum = &self.block_runs[slot];
        let (m, e_last, e_prev) = (sum.m, sum.e_last, sum.e_prev);
        let (tail_iaddr, tail_half, tail_ilast) = (sum.tail_iaddr, sum.tail_half, sum.tail_ilast);
        let n = run.len();
        let t0 = run.mtime(0);
        let t_end = t0.wrapping_add(n as u64 - 1);
        self.prev_bits = Some(run.insn(n - 1));
        if m == 0 {
            self.open = *first;
            self.open.time = t_end;
            return;
        }
        self.records += m as u64;
        // As `close_block` after each record: the time step is the last record's.
        let t_last = t0.wrapping_add(e_last as u64);
        let t_prev = if m == 1 {
            self.pred_time.wrapping_sub(self.time_step)
        } else {
            t0.wrapping_add(e_prev as u64)
        };
        self.time_step = t_last.wrapping_sub(t_prev);
        self.pred_time = t_last.wrapping_add(self.time_step);
        if tail_half != 0 {
            self.open = Record {
                iaddr: tail_iaddr,
                iretire: tail_half as u32,
                ilastsize: tail_ilast,
                priv_: self.last_priv,
                context: self.last_context,
                time: t_end,
                ..Record::default()
            };
        } else {
            self.open.iretire = 0;
            self.open.time = t_end;
        }
    }

    /// A run with a key ([`Self::block_run_key`]) whose summary or kept bytes are not there:
    /// its records from its steps, to the sink ([`RecordSink::blocks_keyed`] when more than
    /// one), and its summary kept.
    #[inline(never)]
    fn block_run_new(&mut self, run: &impl RetiredRun, key: u64) {
        let n = run.len();
        let t0 = run.mtime(0);
        let mut recs = std::mem::take(&mut self.scratch);
        recs.clear();
        let mut sum = BlockRunSum {
            key,
            pc0: run.step(0).pc,
            ..BlockRunSum::default()
        };
        let (mut seg_pc, mut half, mut size32) = (0, 0u32, false);
        for i in 0..n {
            let s = if i + 1 < n {
                run.step(i)
            } else {
                run.last_step()
            };
            if half == 0 {
                seg_pc = s.pc;
            }
            size32 = s.len == 4;
            half += 1 + size32 as u32;
            let itype = self.run_itype[s.class as usize & 15][s.taken as usize];
            if itype != Itype::None || s.taken {
                if recs.is_empty() {
                    (sum.half0, sum.ilast0, sum.itype0, sum.e0) =
                        (half as u8, size32 as u8, itype, i as u8);
                }
                sum.e_prev = sum.e_last;
                sum.e_last = i as u8;
                recs.push(Record {
                    iaddr: seg_pc,
                    iretire: half,
                    ilastsize: size32 as u8,
                    itype,
                    priv_: self.last_priv,
                    context: self.last_context,
                    time: t0.wrapping_add(i as u64),
                    ..Record::default()
                });
                half = 0;
            }
        }
        sum.m = recs.len() as u8;
        if recs.is_empty() {
            (sum.half0, sum.ilast0, sum.itype0, sum.e0) =
                (half as u8, size32 as u8, Itype::None, n as u8 - 1);
        } else {
            (sum.tail_iaddr, sum.tail_half, sum.tail_ilast) = (seg_pc, half as u8, size32 as u8);
        }
        let slot = block_run_slot(key);
        self.block_runs[slot] = sum;
        let first = self.block_run_first(slot, t0);
        match recs.len() {
            0 => {}
            1 => self.sink.block(&first),
            _ => {
                recs[0] = first;
                self.sink.blocks_keyed(key, &recs);
            }
        }
        self.block_run_end(run, slot, &first);
        self.scratch = recs;
    }

    /// [`Self::retire_run_blocks`] of any run.
    #[inline(never)]
    fn retire_run_blocks_general(&mut self, run: &impl RetiredRun) {
        let n = run.len();
        let first = run.get(0);
        self.retire_block(
            &first,
            first.next_pc != first.pc.wrapping_add(first.len as u64),
        );
        if n == 1 {
            return;
        }
        if self.open.iretire >= MAX_BLOCK_IRETIRE - 2 * n as u32 {
            self.close_block();
        }
        let mut i = 1;
        while i < n - 1 {
            if self.full_next {
                // A context to report (a `satp` write before the run).
                let ev = run.get(i);
                let taken = ev.next_pc != ev.pc.wrapping_add(ev.len as u64);
                self.open.time = first.mtime.wrapping_add(i as u64 - 1);
                self.retire_block(&ev, taken);
                i += 1;
                continue;
            }
            // Field by field (`RetiredRun::step`, no event built), the open block's size in
            // a local, up to an instruction that ends the block or the run's last.
            let s = run.step(i);
            if self.open.iretire == 0 {
                self.open = Record {
                    iaddr: s.pc,
                    priv_: self.last_priv,
                    context: self.last_context,
                    ..Record::default()
                };
            }
            let mut half = self.open.iretire;
            let mut s = s;
            loop {
                let size32 = s.len == 4;
                half += 1 + size32 as u32;
                let itype = self.run_itype[s.class as usize & 15][s.taken as usize];
                debug_assert!(!s.class.is_uninferable(), "inside a run: {s:?}");
                let ends = itype != Itype::None || s.taken;
                i += 1;
                if ends || i == n - 1 {
                    let o = &mut self.open;
                    o.iretire = half;
                    o.ilastsize = size32 as u8;
                    if ends {
                        o.itype = itype;
                        o.time = first.mtime.wrapping_add(i as u64 - 1);
                        self.close_block();
                    }
                    break;
                }
                s = run.step(i);
            }
        }
        // The open block's time, and the bits before the last instruction (its `sijump`, read
        // only for an uninferable jump; the last instruction's record then sets them).
        self.open.time = first.mtime.wrapping_add(n as u64 - 2);
        let last = run.get(n - 1);
        if n > 2 && last.class.is_uninferable() {
            self.prev_bits = Some(run.get(n - 2).insn);
        }
        self.retire_block(&last, last.next_pc != last.pc.wrapping_add(last.len as u64));
    }

    /// Block mode, one retired instruction: the common one (see the type's doc: nothing but
    /// address and size changed, the time one step on, no `sijump` set) goes on with
    /// the open block, or opens one after a closed block, in place; the others take
    /// [`Self::retire_full`].
    #[inline(always)]
    fn retire_block(&mut self, ev: &Retired, taken: bool) {
        let mut fast_itype = self.fast_itype[ev.class as usize & 15][taken as usize];
        // An uninferable jump without `sijump` (from its bits and the previous instruction's,
        // as `retire_full` works it out) is like any other instruction here: only `sijump`
        // takes it to the full path.
        if FAST
            && fast_itype.is_none()
            && !self
                .prev_bits
                .is_some_and(|p| is_sequentially_inferable(&self.isa, p, ev.insn))
        {
            fast_itype = Some(self.run_itype[ev.class as usize & 15][taken as usize]);
        }
        let o = &mut self.open;
        let cont = o.iretire != 0;
        if let (true, Some(itype)) = (
            FAST && !self.full_next
                && ev.mtime == o.time.wrapping_add(1)
                && ev.priv_ == self.pred_priv
                && (!cont || (ev.pc == o.next_iaddr() && o.iretire < MAX_BLOCK_IRETIRE))
                && ev.trap.is_none()
                && ev.serviced.is_none(),
            fast_itype,
        ) {
            let size32 = ev.len == 4;
            if cont {
                o.iretire += 1 + size32 as u32;
            } else {
                *o = Record {
                    iaddr: ev.pc,
                    iretire: 1 + size32 as u32,
                    priv_: self.last_priv,
                    context: self.last_context,
                    ..Record::default()
                };
            }
            o.ilastsize = size32 as u8;
            o.time = ev.mtime;
            self.prev_bits = Some(ev.insn);
            if itype != Itype::None || taken {
                o.itype = itype;
                self.close_block();
            }
            return;
        }
        self.retire_full(*ev, taken);
    }

    /// [`Observer::retire_run`] one record per instruction, out of line: the hart's block
    /// loop, into which everything else inlines, stays smaller (callgrind: fewer host
    /// instructions for the hart's own work, for one call per run).
    ///
    /// The common run, of at least 2 instructions whose first is predicted (the type's doc)
    /// and that comes from a block ([`RetiredRun::block_id`]), from the run's fields (no
    /// [`Retired`] built): all its records but a last one that takes the full path (its time
    /// not one step on) in one keyed call, a last uninferable jump with `sijump` among them
    /// ([`Near::sijump`]: 1.5 M of 11 M runs per 100 M instructions of a Linux boot end in
    /// an `auipc`/`jalr` call, each a full-path record before); any other run takes
    /// [`Self::retire_run_general`], which gives the same records.
    #[inline(never)]
    fn retire_run_insns(&mut self, run: &impl RetiredRun) {
        let n = run.len();
        let (Some(id), true) = (run.block_id(), n >= 2) else {
            return self.retire_run_general(run);
        };
        // The key below has 6 bits for the number of records (`RetiredRun::block_id`).
        debug_assert!(n < 64, "{n} instructions in a run with an id");
        let time = run.mtime(0);
        // As the first turn of the general path's loop.
        if self.full_next
            || time != self.pred_time
            || self.time_step != 1
            || run.priv_() != self.pred_priv
        {
            return self.retire_run_general(run);
        }
        let last = run.last_step();
        // The last record takes the full path when its time is not one step on (a store to
        // `mtime` ends a block). (An uninferable jump with `sijump` is the keyed records' last:
        // `sijump` follows from the block's last two instructions, which the key names.)
        let alone = run.mtime(n - 1) != time.wrapping_add(n as u64 - 1);
        // Records in the keyed call.
        let m = n - alone as usize;
        if m < 2 {
            // Two instructions, the last alone: each as any instruction.
            self.retire_apart(&run.get(0));
            return self.retire_apart(&run.get(1));
        }
        // Records of `m` instructions from block `id` are the block's (their `itype`s
        // depend on the width) but for the last one's `itype`, which depends on whether
        // it went on in the block.
        let taken = if alone { run.step(m - 1) } else { last }.taken;
        let key = self.run_key(id, m, taken);
        let head = RunHead {
            priv_: self.last_priv,
            context: self.last_context,
            time,
            time_step: 1,
        };
        if !self.sink.predicted_run_again(&head, m, key) {
            self.run_keyed(run, m, key);
        }
        self.records += m as u64;
        self.pred_time = time.wrapping_add(m as u64);
        self.prev_bits = Some(run.insn(m - 1));
        if alone {
            self.retire_apart(&run.get(n - 1));
        }
    }

    /// The key of `n` instructions of block `id` (a run, or its first `n`), the last of them
    /// `taken` or not: their records (per instruction or per block) depend on nothing else but
    /// the `itype` width, which the key also holds. `n` has 6 bits (`RetiredRun::block_id`:
    /// fewer than 64 instructions in a run with an id).
    #[inline(always)]
    fn run_key(&self, id: u64, n: usize, taken: bool) -> u64 {
        (((id << 6 | n as u64) << 1 | taken as u64) << 1) | (self.itype_width == 4) as u64
    }

    /// [`Observer::retire`] out of line (the run path's rarer cases: its own code stays
    /// smaller, with fewer registers saved).
    #[inline(never)]
    fn retire_apart(&mut self, ev: &Retired) {
        self.retire(ev);
    }

    /// The first `m` (at least 2) records of `run`, named by `key`, to
    /// [`RecordSink::predicted_run_keyed`] (out of line: the sink kept nothing for the key;
    /// the run's head as [`Self::retire_run_insns`] makes it, made here: that one stays in
    /// registers).
    #[inline(never)]
    fn run_keyed(&mut self, run: &impl RetiredRun, m: usize, key: u64) {
        let head = RunHead {
            priv_: self.last_priv,
            context: self.last_context,
            time: run.mtime(0),
            time_step: 1,
        };
        let itype = &self.run_itype;
        let near = |s: RunStep| Near {
            iaddr: s.pc,
            itype: itype[s.class as usize & 15][s.taken as usize],
            size32: s.len == 4,
            sijump: false,
        };
        let n = run.len();
        // `RetiredRun`: only the last instruction of a run may be uninferable (and so have
        // `sijump`, from its bits and those of the instruction before it, as `retire_full`
        // works it out).
        let last = (m == n).then(|| {
            let s = run.last_step();
            Near {
                sijump: self.last_sijump(run, &s),
                ..near(s)
            }
        });
        let ends = (
            near(run.step(0)),
            last.unwrap_or_else(|| near(run.step(m - 1))),
        );
        let nears = run.steps(0, n - 1).map(near).chain(last);
        self.sink.predicted_run_keyed(&head, m, key, ends, nears);
    }

    /// [`Self::retire_run_insns`] of any run: the instructions before the first predicted one
    /// each as any instruction, the others as a run of predicted records but for a last one
    /// that takes the full path.
    #[inline(never)]
    fn retire_run_general(&mut self, run: &impl RetiredRun) {
        let n = run.len();
        let mut i = 0;
        let first = loop {
            if i == n {
                return;
            }
            let ev = run.get(i);
            // Retired instructions step `mtime` by 1: predicted once the time step is 1.
            if !self.full_next
                && ev.mtime == self.pred_time
                && self.time_step == 1
                && ev.priv_ == self.pred_priv
            {
                break ev;
            }
            self.retire(&ev);
            i += 1;
        };
        let last = run.get(n - 1);
        // The last instruction alone when its time is not one step on (a store to `mtime`
        // ends a block) or it is an uninferable jump with `sijump` set (its bits and those of
        // the instruction before it, as `retire_full` works it out); an uninferable jump
        // without is a predicted record like the others (nothing but `sijump` takes it to
        // the full path: a run has no trap, no serviced call, and `full_next` is clear).
        let with_sijump = || {
            let prev = if n - 1 > i {
                Some(run.get(n - 2).insn)
            } else {
                self.prev_bits
            };
            prev.is_some_and(|p| is_sequentially_inferable(&self.isa, p, last.insn))
        };
        let end = if last.mtime != first.mtime.wrapping_add((n - 1 - i) as u64)
            || (last.class.is_uninferable() && with_sijump())
        {
            n - 1
        } else {
            n
        };
        if end > i {
            let head = RunHead {
                priv_: self.last_priv,
                context: self.last_context,
                time: first.mtime,
                time_step: 1,
            };
            let itype = &self.run_itype;
            let near = |s: RunStep| {
                // `RetiredRun`: only the last instruction of a run may be uninferable.
                debug_assert!(!s.class.is_uninferable(), "inside a run: {s:?}");
                Near {
                    iaddr: s.pc,
                    itype: itype[s.class as usize & 15][s.taken as usize],
                    size32: s.len == 4,
                    sijump: false,
                }
            };
            // The instructions before the last field by field (`RetiredRun::steps`), in one
            // go; the last one after them, from its event. (No keyed run: a run from a block
            // whose first record is predicted takes `retire_run_insns`'s path.)
            let inner = end.min(n - 1);
            if inner > i {
                self.sink
                    .predicted_run(&head, inner - i, run.steps(i, inner).map(near));
            }
            if end == n {
                let k = n - 1 - i;
                let s = RunStep::of(&last);
                // (`end` is `n` only when the last has no `sijump`.)
                let r = Near {
                    iaddr: s.pc,
                    itype: itype[s.class as usize & 15][s.taken as usize],
                    size32: s.len == 4,
                    sijump: false,
                }
                .record(&head, k);
                self.sink.predicted(&r);
            }
            self.records += (end - i) as u64;
            self.pred_time = first.mtime.wrapping_add((end - i) as u64);
            let before = if end == n { last } else { run.get(end - 1) };
            self.prev_bits = Some(before.insn);
        }
        if end < n {
            self.retire(&last);
        }
    }

    /// Emit the last record. A trailing serviced call (the program's exit) is a plain row.
    pub fn finish(&mut self) {
        self.close_block();
        if let Some((mut r, serviced)) = self.pending.take() {
            if serviced {
                r.itype = Itype::None;
                r.cause = 0;
            }
            self.sink.record(&r);
            self.records += 1;
        }
    }
}

/// Privilege as the ingress port encodes it (U 0, S 1, M 3).
fn ingress_priv(p: u8) -> u8 {
    match p {
        privilege::U => rvtrace_ingress::privilege::U,
        privilege::S => rvtrace_ingress::privilege::S,
        _ => rvtrace_ingress::privilege::M,
    }
}

impl<S: RecordSink, const FAST: bool> Observer for IngressRecorder<S, FAST> {
    /// The fast recorder takes a block's instructions as a run (the general one, which tests
    /// compare with, each one).
    const RETIRE_RUNS: bool = FAST;

    /// A run's records once they are predicted (the type's doc) go to the sink in one call
    /// ([`RecordSink::predicted_run_again`], [`RecordSink::predicted_run_keyed`] for a run of
    /// a block, else [`RecordSink::predicted_run`]); the others (the first after a change, the
    /// time step other than 1, a last time not one step on, and outside a block's run a last
    /// uninferable jump with `sijump`) each through [`Observer::retire`].
    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        if self.blocks {
            return self.retire_run_blocks(run);
        }
        self.retire_run_insns(run);
    }

    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        let taken = ev.next_pc != ev.pc.wrapping_add(ev.len as u64);
        if self.blocks {
            return self.retire_block(ev, taken);
        }
        // A predicted record (see the type's doc): no trap, no serviced call, nothing else
        // that changed, and no `sijump` to work out (not an uninferable jump).
        let fast_itype = self.fast_itype[ev.class as usize & 15][taken as usize];
        if let (true, Some(itype)) = (
            FAST && !self.full_next
                && ev.mtime == self.pred_time
                && ev.priv_ == self.pred_priv
                && ev.trap.is_none()
                && ev.serviced.is_none(),
            fast_itype,
        ) {
            let rec = Record {
                iaddr: ev.pc,
                iretire: ev.len as u32 / 2,
                ilastsize: if ev.len == 4 { 1 } else { 0 },
                itype,
                priv_: self.last_priv,
                context: self.last_context,
                time: ev.mtime,
                ..Record::default()
            };
            self.sink.predicted(&rec);
            self.records += 1;
            self.pred_time = ev.mtime.wrapping_add(self.time_step);
            self.prev_bits = Some(ev.insn);
            return;
        }
        self.retire_full(*ev, taken);
    }

    fn trap(&mut self, ev: &TrapInfo) {
        // Block mode: the block before the trap, then the trap (its time is that block's).
        self.close_block();
        self.prev_bits = None;
        let mut rec = Record {
            iaddr: ev.epc,
            iretire: 0,
            ilastsize: 0,
            itype: if ev.interrupt {
                Itype::Interrupt
            } else {
                Itype::Exception
            },
            cause: ev.cause,
            tval: ev.tval,
            priv_: ingress_priv(ev.from_priv),
            time: self.pred_time.wrapping_sub(self.time_step),
            ..Record::default()
        };
        if let Some(a) = &self.asid {
            // Before any instruction retired in a new context, the old one (module docs).
            rec.context = a.reported;
        }
        self.push(rec, ev.from_priv, false);
    }

    fn csr_write(&mut self, csr: u16, value: u64) {
        if csr == num::SATP {
            if let Some(a) = &mut self.asid {
                a.written = Some(satp_asid(self.isa.xlen, value));
                // The writing instruction's record takes the full path, which applies it.
                self.full_next = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_isa::Xlen;

    const NOP: u32 = 0x0000_0013;

    fn retired(pc: u64, priv_: u8) -> Retired {
        Retired {
            pc,
            insn: NOP,
            len: 4,
            class: CfClass::None,
            next_pc: pc + 4,
            priv_,
            trap: None,
            serviced: None,
            mtime: 0,
        }
    }

    /// (iaddr, iretire, context, ctype) of every record.
    fn fields(recs: &[Record]) -> Vec<(u64, u32, u64, u8)> {
        recs.iter()
            .map(|r| (r.iaddr, r.iretire, r.context, r.ctype))
            .collect()
    }

    fn sv39(asid: u64, ppn: u64) -> u64 {
        8 << 60 | asid << 44 | ppn
    }

    #[test]
    fn asid_change_is_reported_by_the_next_retired_instruction() {
        let mut recs = Vec::new();
        let mut r = IngressRecorder::new(IsaConfig::new(Xlen::Rv64), 4, |x: &Record| recs.push(*x))
            .context_from_asid(sv39(5, 0x80000));
        r.retire(&retired(0x100, privilege::S));
        // csrw satp: ASID 5 -> 7; the csrw itself still runs under 5.
        r.csr_write(num::SATP, sv39(7, 0x80001));
        r.retire(&retired(0x104, privilege::S));
        r.retire(&retired(0x108, privilege::S));
        r.retire(&retired(0x10c, privilege::S));
        // Same ASID, another root: no context change.
        r.csr_write(num::SATP, sv39(7, 0x80002));
        r.retire(&retired(0x110, privilege::S));
        r.retire(&retired(0x114, privilege::S));
        // ASID 9, then a fault before anything retires under it: the trap row keeps 7, the
        // handler's first instruction reports 9.
        r.csr_write(num::SATP, sv39(9, 0x80003));
        r.retire(&retired(0x118, privilege::S));
        r.trap(&TrapInfo {
            cause: 12,
            tval: 0x11c,
            interrupt: false,
            epc: 0x11c,
            from_priv: privilege::S,
            to_priv: privilege::M,
            handler: 0x200,
            mstatus: 0,
        });
        r.retire(&retired(0x200, privilege::M));
        r.retire(&retired(0x204, privilege::M));
        r.finish();
        assert_eq!(
            fields(&recs),
            [
                (0x100, 2, 5, 0),
                (0x104, 2, 5, 0),
                (0x108, 2, 7, CTYPE_PRECISE),
                (0x10c, 2, 7, 0),
                (0x110, 2, 7, 0),
                (0x114, 2, 7, 0),
                (0x118, 2, 7, 0),
                (0x11c, 0, 7, 0),
                (0x200, 2, 9, CTYPE_PRECISE),
                (0x204, 2, 9, 0),
            ]
        );
    }

    /// A run of a synthetic block ([`block_runs_write_the_general_paths_bytes`]).
    struct FakeRun<'a> {
        evs: &'a [Retired],
        id: u64,
    }

    impl RetiredRun for FakeRun<'_> {
        fn len(&self) -> usize {
            self.evs.len()
        }
        fn get(&self, i: usize) -> Retired {
            self.evs[i]
        }
        fn block_id(&self) -> Option<u64> {
            Some(self.id)
        }
    }

    /// Block mode: the fast recorder taking runs (keyed runs from kept summaries, records
    /// copied by the binary writer) writes the bytes of the general recorder given each
    /// instruction, on random event streams of synthetic blocks: chains of blocks that end
    /// with no control transfer (runs that close no record, open blocks continued by the next
    /// run), runs cut short, runs not where the previous one went on, `mtime` written by a
    /// run's last instruction, uninferable jumps with and without `sijump`, traps, serviced
    /// calls (held back) followed by runs, `satp` writes (context reported by a block left
    /// open), privilege changes.
    #[test]
    fn block_runs_write_the_general_paths_bytes() {
        use rvtrace_ingress::{IngressHeader, IngressWriter, WriterSink};
        const AUIPC_T0: u32 = 0x0000_0297;
        const JR_T0: u32 = 0x0002_8067;
        const ADDI: u32 = 0x0010_0093;
        let mut rng = rvtrace_testkit::Rng(0x0b10_c4ec_0de5_eed5);
        let mut rnd = move |m: u64| rng.below(m);
        // Blocks: (first pc, instructions as (pc, len, class, insn, next pc)); chains of three
        // blocks one after the other, the first two ending with no control transfer.
        type Insn = (u64, u8, CfClass, u32, u64);
        let mut blocks: Vec<Vec<Insn>> = Vec::new();
        for c in 0..12u64 {
            let mut pc = 0x8000_0000 + c * 0x1000;
            for b in 0..3 {
                let n = 2 + rnd(10) as usize;
                let mut blk = Vec::new();
                for i in 0..n {
                    let len = if rnd(3) == 0 { 2 } else { 4 };
                    let last = i + 1 == n;
                    // The chains of even `c`: a first block with no control transfer, an
                    // `auipc t0` before a last `jr t0` (`sijump`).
                    let plain = c % 2 == 0 && b == 0;
                    let (class, insn) = match (last, b, rnd(10)) {
                        (true, 2, 0..=3) => (CfClass::UninferableJump, JR_T0),
                        (true, 2, 4..=6) => (CfClass::Branch, ADDI),
                        (true, 2, _) => (CfClass::InferableJump, ADDI),
                        (true, _, 0..4) => (CfClass::None, AUIPC_T0),
                        (true, _, _) => (CfClass::None, ADDI),
                        _ if plain => (CfClass::None, ADDI),
                        (false, 2, _) if c % 2 == 0 && i + 2 == n => (CfClass::None, AUIPC_T0),
                        (false, _, 0) => (CfClass::Branch, ADDI),
                        (false, _, 1) => (CfClass::InferableCall, ADDI),
                        (false, _, 2) => (CfClass::None, AUIPC_T0),
                        _ => (CfClass::None, ADDI),
                    };
                    let taken = match class {
                        CfClass::Branch => !last && rnd(3) == 0,
                        CfClass::InferableCall => true,
                        _ => false,
                    };
                    let next = if taken {
                        pc.wrapping_add(rnd(64) * 2).wrapping_sub(32)
                    } else {
                        pc + len as u64
                    };
                    blk.push((pc, len, class, insn, next));
                    pc = next;
                }
                blocks.push(blk);
            }
        }
        let by_pc: std::collections::HashMap<u64, usize> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (b[0].0, i))
            .collect();
        let satp = |asid: u64| 8 << 60 | asid << 44;
        for (seed, (width, context, target)) in [
            (4, false, 1 << 16),
            (3, true, 300),
            (4, true, 1 << 16),
            (3, false, 977),
        ]
        .into_iter()
        .enumerate()
        {
            let isa = IsaConfig::new(Xlen::Rv64);
            let mut h = IngressHeader::new(Xlen::Rv64, width, "test");
            h.multi_retire = true;
            let mut w = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut err = None;
            let mut general = Vec::new();
            let mut fast = IngressRecorder::new(
                isa,
                width,
                WriterSink {
                    w: &mut w,
                    err: &mut err,
                },
            )
            .block_records(true);
            let mut slow = IngressRecorder::general(isa, width, |r: &Record| general.push(*r))
                .block_records(true);
            if context {
                fast = fast.context_from_asid(satp(1));
                slow = slow.context_from_asid(satp(1));
            }
            let (mut pc, mut time, mut priv_) = (0x8000_0000u64, 1000u64, privilege::M);
            let mut runs = 0;
            for _ in 0..30_000 + seed {
                let ev = |pc: u64, class: CfClass, insn: u32, next_pc: u64, mtime: u64| Retired {
                    pc,
                    insn,
                    len: 4,
                    class,
                    next_pc,
                    priv_,
                    trap: None,
                    serviced: None,
                    mtime,
                };
                match rnd(100) {
                    0..=79 => {
                        // A run: mostly of the block where the last one went on.
                        let b = match by_pc.get(&pc) {
                            Some(&b) if rnd(8) != 0 => b,
                            _ => rnd(blocks.len() as u64) as usize,
                        };
                        let blk = &blocks[b];
                        let n = if rnd(4) == 0 {
                            1 + rnd(blk.len() as u64) as usize
                        } else {
                            blk.len()
                        };
                        time += if rnd(10) == 0 { 3 } else { 1 };
                        let mut evs: Vec<Retired> = blk[..n]
                            .iter()
                            .enumerate()
                            .map(|(i, &(pc, len, class, insn, next_pc))| Retired {
                                len,
                                ..ev(pc, class, insn, next_pc, time + i as u64)
                            })
                            .collect();
                        let last = evs.last_mut().unwrap();
                        if n == blk.len() {
                            // Where the block's last instruction goes.
                            last.next_pc = match last.class {
                                CfClass::None => last.pc + last.len as u64,
                                CfClass::Branch if rnd(2) == 0 => last.pc + last.len as u64,
                                _ => blocks[rnd(blocks.len() as u64) as usize][0].0,
                            };
                        }
                        if rnd(20) == 0 {
                            // It wrote `mtime`.
                            last.mtime += 1 + rnd(5);
                        }
                        (pc, time) = (last.next_pc, last.mtime);
                        if n > 1 {
                            runs += 1;
                        }
                        let run = FakeRun {
                            evs: &evs,
                            id: b as u64,
                        };
                        fast.retire_run(&run);
                        for e in &evs {
                            slow.retire(e);
                        }
                    }
                    80..=87 => {
                        // One instruction as the single-step loop gives it (a `jr t0`: with
                        // `sijump` after an `auipc t0`).
                        time += 1;
                        let (class, insn, next) = match rnd(6) {
                            0 | 1 => (CfClass::InferableJump, ADDI, pc + 0x40),
                            2 => (
                                CfClass::UninferableJump,
                                JR_T0,
                                blocks[rnd(blocks.len() as u64) as usize][0].0,
                            ),
                            _ => (CfClass::None, ADDI, pc + 4),
                        };
                        let e = ev(pc, class, insn, next, time);
                        fast.retire(&e);
                        slow.retire(&e);
                        pc = next;
                    }
                    88..=91 => {
                        // A trap (into M), at a block's start or anywhere.
                        let t = TrapInfo {
                            cause: 7,
                            tval: 0,
                            interrupt: rnd(2) == 0,
                            epc: pc,
                            from_priv: priv_,
                            to_priv: privilege::M,
                            handler: blocks[rnd(blocks.len() as u64) as usize][0].0,
                            mstatus: 0,
                        };
                        fast.trap(&t);
                        slow.trap(&t);
                        (pc, priv_) = (t.handler, privilege::M);
                    }
                    92..=94 => {
                        // A serviced call, then on after it.
                        time += 1;
                        let e = Retired {
                            serviced: Some(crate::observer::Serviced { by: 0, cause: 8 }),
                            ..ev(pc, CfClass::EnvTrap, 0x73, pc + 4, time)
                        };
                        fast.retire(&e);
                        slow.retire(&e);
                        pc += 4;
                    }
                    95..=96 => {
                        // csrw satp (a new ASID, or the same), mostly before a chain.
                        time += 1;
                        if rnd(4) != 0 {
                            pc = blocks[3 * rnd(blocks.len() as u64 / 3) as usize][0].0 - 4;
                        }
                        let v = satp(rnd(3));
                        fast.csr_write(num::SATP, v);
                        slow.csr_write(num::SATP, v);
                        let e = ev(pc, CfClass::None, ADDI, pc + 4, time);
                        fast.retire(&e);
                        slow.retire(&e);
                        pc += 4;
                    }
                    _ => {
                        // A trap return to another privilege.
                        time += 1;
                        let to = [privilege::U, privilege::S, privilege::M][rnd(3) as usize];
                        let next = blocks[rnd(blocks.len() as u64) as usize][0].0;
                        let e = ev(pc, CfClass::TrapReturn, 0x3020_0073, next, time);
                        fast.retire(&e);
                        slow.retire(&e);
                        (pc, priv_) = (next, to);
                    }
                }
            }
            fast.finish();
            slow.finish();
            assert_eq!(fast.records, slow.records);
            drop(fast);
            assert!(err.is_none(), "{err:?}");
            assert!(runs > 10_000, "{runs}");
            let mut slow_w = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            slow_w.write_batch(&general).unwrap();
            let want = slow_w.finish().unwrap();
            let got = w.finish().unwrap();
            assert!(
                got == want,
                "width {width} context {context} target {target}: bytes differ"
            );
        }
    }

    #[test]
    fn no_context_unless_asked() {
        let mut recs = Vec::new();
        let mut r = IngressRecorder::new(IsaConfig::new(Xlen::Rv64), 4, |x: &Record| recs.push(*x));
        r.csr_write(num::SATP, sv39(7, 0x80001));
        r.retire(&retired(0x100, privilege::S));
        r.retire(&retired(0x104, privilege::S));
        assert!(recs.iter().all(|x| x.context == 0 && x.ctype == 0));
    }

    #[test]
    fn satp_asid_fields() {
        // RV64: ASID is satp[59:44] (16 bits); MODE and PPN are not part of it.
        assert_eq!(satp_asid(Xlen::Rv64, sv39(0xffff, (1 << 44) - 1)), 0xffff);
        assert_eq!(satp_asid(Xlen::Rv64, 0xf << 60 | 0x1234 << 44), 0x1234);
        // RV32: ASID is satp[30:22] (9 bits); MODE is bit 31, PPN bits 21:0.
        assert_eq!(
            satp_asid(Xlen::Rv32, 1 << 31 | 0x1ff << 22 | 0x3f_ffff),
            0x1ff
        );
        assert_eq!(satp_asid(Xlen::Rv32, 1 << 31 | 2 << 22 | 0x80408), 2);
    }
}
