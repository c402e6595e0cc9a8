//! The N-Trace encoder (N-Trace chapters 8-10): ingress records ([`rvtrace_ingress::Record`]) in,
//! MSEO/MDO message bytes out.
//!
//! Per record (one ingress-port cycle, N-Trace chapter 2 Tables 3 and 4):
//! * the message left pending by the previous record is emitted first: an uninferable jump, trap
//!   or trap return reports the address of *this* record ("an address emitted is known at the
//!   next ingress port cycle", Table 3);
//! * the retired half-words are added to I-CNT (8.3);
//! * direct conditional branches add a HIST bit (HTM, 8.2) or, when taken, a DirectBranch (BTM);
//! * uninferable jumps leave an IndirectBranch(Hist) pending, unless the call stack predicts the
//!   return (9.2) or the jump is sequentially inferable (9.1);
//! * a full HIST gives ResourceFull RCODE 1 (or RCODE 2 with HREPEAT, 9.3), a full I-CNT
//!   ResourceFull RCODE 0 (8.3) or, under rc7 in HTM with branches in HIST, a SYNC=4
//!   synchronization (rc7 8.4.4);
//! * under 1.0 a trap's `ecall`/`ebreak`/`c.ebreak` is left out of I-CNT (it does not retire).
//!
//! The trace starts with ProgTraceSync and ends (at [`Encoder::finish`]) with
//! ProgTraceCorrelation (7.12).

use crate::codec::{btype, evcode, rcode, sync, Addr, Body, Message, MessageBytes, Process};
use crate::options::{CallStack, EncoderConfig, Mode, Spec, SyncUnit};
use rvtrace_ingress::Record;
use std::collections::VecDeque;

/// Counts from an encode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Ingress records read.
    pub records: u64,
    /// Instructions retired, traced or not (records with `iretire` > 0; a block counts once).
    pub instructions: u64,
    /// Messages written.
    pub messages: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Messages lost in the output queue.
    pub lost_messages: u64,
}

/// A return prediction from the call stack (N-Trace 9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prediction {
    /// Full address: the return is implicit if it goes there.
    Exact(u64),
    /// Partial address: the low bits must match.
    Low { value: u64, mask: u64 },
    /// Counter: any return is implicit.
    Any,
}

impl Prediction {
    fn matches(&self, target: u64) -> bool {
        match *self {
            Prediction::Exact(a) => a == target,
            Prediction::Low { value, mask } => target & mask == value,
            Prediction::Any => true,
        }
    }
}

/// A message whose address is the next record's `iaddr`.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// An uninferable jump, trap or trap return (B-TYPE), possibly a predicted return.
    Jump {
        btype: u8,
        time: u64,
        predicted: Option<Prediction>,
        /// For a trap after a retired instruction: the next sequential address (the `nexrv`
        /// preset traces a trap whose handler is there as a plain instruction).
        seq_next: Option<u64>,
        /// Half-words of the trapping `ecall`/`ebreak` left out of I-CNT (N-Trace 1.0), counted
        /// after all where the `nexrv` preset traces it as a plain instruction.
        unretired: u32,
    },
    /// A taken branch in BTM (DirectBranch; DirectBranchSync when a sync is due).
    Direct { time: u64 },
    /// A synchronization at an instruction boundary (SYNC=2 periodic, SYNC=4 I-CNT overflow).
    Sync { sync: u8, time: u64 },
}

/// `hist_patterns`: a HIST pattern being counted (N-Trace 9.3). The bits of its current,
/// incomplete repetition are in the encoder's HIST register.
#[derive(Clone, Copy, Debug)]
struct PatRun {
    /// The pattern, oldest branch in the most significant of its `period` bits.
    pattern: u64,
    period: u32,
    /// Whole repetitions not sent yet.
    count: u64,
    /// Time of the last whole repetition.
    time: u64,
}

/// Key of a branch message for RepeatBranch (N-Trace 7.11: same I-CNT, HIST and target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BranchKey {
    tcode: u8,
    btype: u8,
    icnt: u64,
    hist: u64,
    target: u64,
}

/// The encoder. Feed it records with [`push`](Encoder::push); it appends message bytes to the
/// output vector; end with [`finish`](Encoder::finish).
pub struct Encoder {
    cfg: EncoderConfig,
    stats: EncodeStats,
    icnt: u64,
    hist: u64,
    ref_addr: u64,
    pending: Option<Pending>,
    stack: VecDeque<u64>,
    count: u32,
    rf_rep: Option<(u64, u64, u64)>,
    br_rep: Option<(BranchKey, u64, u64)>,
    last_key: Option<BranchKey>,
    sync_counter: u64,
    sync_base_time: u64,
    last_time: u64,
    owner: Option<(u8, u64)>,
    seq_ok: bool,
    last: Option<Record>,
    /// Trace is on (a synchronization started it and no filter stopped it).
    enabled: bool,
    /// ProgTraceCorrelation EVCODE=4 was sent for the disabled start of trace.
    disabled_reported: bool,
    /// Bytes in the output queue, in 1/256 units.
    fifo_level: u64,
    /// Messages are being lost: (ECODE bits of what was lost, time of the first loss).
    overflow: Option<(u64, u64)>,
    /// `nexrv` with repeat history: bits the HIST pattern in `rf_rep` was shortened by (0, or 1
    /// and 3 for NexRv's 30- and 28-bit patterns).
    rf_shift: u32,
    /// Trace was lost ([`Encoder::lost`]): the next traced record restarts with SYNC=7.
    lost_restart: bool,
    /// `nexrv` call stack: NexRv's ring of return addresses (`callStack[]`, `max + 1` slots used).
    nx_ring: [u64; 33],
    /// `nexrv` call stack: index of the top entry.
    nx_top: usize,
    /// `nexrv` call stack: number of entries (saturating at the depth).
    nx_cnt: u32,
    /// The current record filled HIST (for the `nexrv` end of trace).
    hist_full_now: bool,
    /// `hist_patterns`: a full HIST register kept back to compare it with the next one (with
    /// its stop-bit, and its time).
    pat_held: Option<(u64, u64)>,
    /// `hist_patterns`: the pattern being counted.
    pat_run: Option<PatRun>,
    /// SiFive's dialect: the run of identical branch outcomes being counted for ResourceFull
    /// RCODE 8/9 (taken, count, time of the last one).
    run: Option<(bool, u64, u64)>,
}

/// SiFive's dialect: a HIST register whose first [`SIFIVE_RUN_MIN`] branches have the same
/// outcome becomes a run counted for ResourceFull RCODE 8 (not taken) / 9 (taken). No public
/// document gives the rule; it is what SiFive's captures show (sifive/trace-decoder-tests
/// 4c9e00e, the 197 RCODE 8/9 messages of its distinct E31 and DV captures): every run counts at
/// least 16 branches (21 exactly 16), none of their 1 547 HIST fields starts with 16 equal
/// outcomes while 6 start with 15,
/// a run ends at the first other outcome (which starts the next HIST) or at any other message
/// than ResourceFull RCODE 0 (which the captures send while a run goes on).
pub const SIFIVE_RUN_MIN: u32 = 16;

/// `hist` (with its stop-bit) holds exactly [`SIFIVE_RUN_MIN`] equal outcomes.
const fn sifive_run_starts(hist: u64) -> bool {
    hist == 1 << SIFIVE_RUN_MIN || hist == (1 << (SIFIVE_RUN_MIN + 1)) - 1
}

/// NexRv's (`NexRvEnco.c` `IsHistMatch_30_28`) test of two consecutive full 31-bit HIST registers
/// (with their stop-bit at bit 31) for a branch pattern of 28 or 30 bits that repeats across
/// both: 28, 30 or 0 (none).
fn nexrv_hist_match_30_28(prev: u32, hist: u32) -> u32 {
    if prev & 7 == (prev >> 28) & 7 && prev & 0x0FFF_FFF8 == (hist >> 3) & 0x0FFF_FFF8 {
        return 28;
    }
    if prev & 1 == (prev >> 30) & 1 && prev & 0x3FFF_FFFE == (hist >> 1) & 0x3FFF_FFFE {
        return 30;
    }
    0
}

impl Encoder {
    /// An encoder with these options.
    pub fn new(cfg: EncoderConfig) -> Self {
        Encoder {
            cfg,
            stats: EncodeStats::default(),
            icnt: 0,
            hist: 1,
            ref_addr: 0,
            pending: None,
            stack: VecDeque::new(),
            count: 0,
            rf_rep: None,
            br_rep: None,
            last_key: None,
            sync_counter: 0,
            sync_base_time: 0,
            last_time: 0,
            owner: None,
            seq_ok: false,
            last: None,
            enabled: false,
            disabled_reported: false,
            fifo_level: 0,
            overflow: None,
            rf_shift: 0,
            lost_restart: false,
            nx_ring: [0; 33],
            nx_top: 0,
            nx_cnt: 0,
            hist_full_now: false,
            pat_held: None,
            pat_run: None,
            run: None,
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> EncodeStats {
        self.stats
    }

    fn htm(&self) -> bool {
        self.cfg.mode == Mode::Htm
    }

    fn addr_mask(&self) -> u64 {
        self.cfg.xlen.addr_mask()
    }

    fn addr_field(&self, field: u64) -> Addr {
        if self.cfg.extend_addr_msb {
            Addr::extended(field, self.cfg.xlen)
        } else {
            Addr::plain(field)
        }
    }

    fn trap_btype(&self, interrupt: bool) -> u8 {
        if self.cfg.btype_compat {
            btype::TRAP
        } else if interrupt {
            btype::INTERRUPT
        } else {
            btype::EXCEPTION
        }
    }

    // ---- Output -------------------------------------------------------------------------------

    /// Serialize one message with SRC and TSTAMP (absolute for synchronization messages, N-Trace
    /// 8.5) and append it.
    fn write(&mut self, body: Body, time: u64, out: &mut Vec<u8>) {
        let absolute = body.sync().is_some();
        // Time never runs backwards in the trace (a record without time, such as a trap record of
        // a source that leaves it 0, takes the last time reported).
        let time = time.max(self.last_time);
        let tstamp = self.cfg.timestamps.then(|| {
            let t = if absolute {
                time
            } else if self.cfg.sifive() {
                // SiFive: the relative TSTAMP is XORed into the time (dqr `processTS`,
                // libnexus-rv `timestamp ^= ` with quirk-sifive; P550 README "Timestamp uses XOR
                // scheme"), so the encoder sends the bits that changed.
                time ^ self.last_time
            } else {
                time.wrapping_sub(self.last_time)
            };
            self.last_time = time;
            match self.cfg.tstamp_bits {
                b @ 1..=63 => t & ((1 << b) - 1),
                _ => t,
            }
        });
        let m = Message {
            src: self.cfg.src_id,
            body,
            tstamp,
        };
        let bytes: MessageBytes = m.encode(&self.cfg.codec);
        if let Some(fifo) = self.cfg.fifo {
            let lost = self.overflow.is_some()
                || self.fifo_level + ((bytes.len() as u64) << 8) > u64::from(fifo.bytes) << 8;
            if lost {
                // N-Trace 7.4 ECODE: bit 3 Ownership, bit 2 other program trace messages.
                let bit = if matches!(body, Body::Ownership { .. }) {
                    8
                } else {
                    4
                };
                let (ecode, _) = self.overflow.get_or_insert((0, time));
                *ecode |= bit;
                self.stats.lost_messages += 1;
                return;
            }
            self.fifo_level += (bytes.len() as u64) << 8;
        }
        self.stats.messages += 1;
        self.stats.bytes += bytes.len() as u64;
        out.extend_from_slice(&bytes);
        if let Some((SyncUnit::Messages, _)) = self.cfg.sync_period {
            self.sync_counter += 1;
        }
    }

    /// Emit a message: first what is buffered for repeats (unless this message continues them).
    fn emit(&mut self, body: Body, time: u64, out: &mut Vec<u8>) {
        // SiFive's captures send I-CNT overflows while a run goes on (SIFIVE_RUN_MIN).
        if !matches!(
            body,
            Body::ResourceFull {
                rcode: rcode::ICNT,
                ..
            }
        ) {
            self.flush_run(out);
        }
        self.flush_rf_rep(out);
        self.flush_br_rep(out);
        self.last_key = None;
        self.write(body, time, out);
    }

    fn flush_rf_rep(&mut self, out: &mut Vec<u8>) {
        self.flush_patterns(out);
        self.rf_shift = 0;
        if let Some((hist, n, time)) = self.rf_rep.take() {
            let body = if n == 1 {
                Body::ResourceFull {
                    rcode: rcode::HIST,
                    rdata0: hist,
                    rdata1: None,
                }
            } else {
                Body::ResourceFull {
                    rcode: rcode::HIST_REPEAT,
                    rdata0: hist,
                    rdata1: Some(n),
                }
            };
            self.write(body, time, out);
        }
    }

    /// SiFive's dialect: the run counted so far as ResourceFull RCODE 8 (not taken) or 9 (taken)
    /// with RDATA the number of branches (dqr `parseResourceFull`, libnexus-rv
    /// `trace-decoder.c`).
    fn flush_run(&mut self, out: &mut Vec<u8>) {
        if let Some((taken, n, time)) = self.run.take() {
            let rcode = if taken {
                rcode::SIFIVE_TAKEN
            } else {
                rcode::SIFIVE_NOT_TAKEN
            };
            self.write(
                Body::ResourceFull {
                    rcode,
                    rdata0: n,
                    rdata1: None,
                },
                time,
                out,
            );
        }
    }

    fn flush_br_rep(&mut self, out: &mut Vec<u8>) {
        if let Some((_, n, time)) = self.br_rep.take() {
            self.write(Body::RepeatBranch { bcnt: n }, time, out);
        }
    }

    /// A branch message, or one more repeat of the previous one (N-Trace 7.11).
    fn emit_branch(&mut self, body: Body, key: BranchKey, time: u64, out: &mut Vec<u8>) {
        if self.cfg.repeat_branch && self.last_key == Some(key) {
            match &mut self.br_rep {
                Some((_, n, t)) if *n < self.cfg.max_bcnt => {
                    *n += 1;
                    *t = time;
                    return;
                }
                Some(_) => self.flush_br_rep(out),
                None => {}
            }
            self.br_rep = Some((key, 1, time));
            return;
        }
        self.emit(body, time, out);
        self.last_key = Some(key);
    }

    /// After any synchronization message: state reset (`Spec::sync_resets_encoder`), Ownership
    /// (7.1).
    fn after_sync(&mut self, sync: u8, faddr: u64, r: &Record, out: &mut Vec<u8>) {
        self.icnt = 0;
        self.hist = 1;
        self.ref_addr = faddr;
        self.seq_ok = false;
        self.sync_counter = 0;
        self.sync_base_time = r.time;
        // SiFive's simple-counting stack is cleared at every sync, SYNC 6 included (P550 README).
        if self.cfg.spec.sync_resets_encoder(sync) || self.cfg.sifive() {
            self.stack.clear();
            self.count = 0;
            self.nx_cnt = 0;
            self.nx_top = 0;
        }
        if self.cfg.ownership {
            self.ownership(Process::FORMAT_SCONTEXT, r, out);
        }
    }

    fn ownership(&mut self, format: u8, r: &Record, out: &mut Vec<u8>) {
        let p = Process::from_ingress_priv(format, r.priv_, r.context);
        self.emit(
            Body::Ownership {
                process: p.to_field(),
            },
            r.time,
            out,
        );
        self.owner = Some((r.priv_, r.context));
        if self.cfg.sifive() && format == Process::FORMAT_SCONTEXT {
            // SiFive sends every scontext message followed by an hcontext one with context 0
            // and the same privilege (sifive/trace-decoder-tests linux-static: 658 hcontext
            // messages, each right after an scontext one).
            let h = Process::from_ingress_priv(Process::FORMAT_HCONTEXT, r.priv_, 0);
            self.emit(
                Body::Ownership {
                    process: h.to_field(),
                },
                r.time,
                out,
            );
        }
    }

    fn sync_due(&self) -> bool {
        match self.cfg.sync_period {
            Some((_, period)) => self.sync_counter >= period,
            None => false,
        }
    }

    // ---- Messages with the next address -------------------------------------------------------

    /// Emit the pending message now that `r` gives the address it needs.
    fn resolve(&mut self, p: Pending, r: &Record, out: &mut Vec<u8>) {
        let target = r.iaddr & self.addr_mask();
        match p {
            Pending::Jump {
                btype,
                time,
                predicted,
                seq_next,
                unretired,
            } => {
                if predicted.is_some_and(|p| p.matches(target)) {
                    return; // implicit return (9.2)
                }
                if self.cfg.nexrv && seq_next == Some(target) {
                    // The reference encoder sees a plain instruction here.
                    self.icnt += u64::from(unretired);
                    return;
                }
                if self.sync_due() {
                    self.sync_message(sync::PERIODIC, Some(btype), target, time, r, out);
                    return;
                }
                let icnt = self.icnt;
                let hist = self.hist;
                let uaddr = self.addr_field(((target ^ self.ref_addr) & self.addr_mask()) >> 1);
                let (body, tcode) = if self.htm() && hist != 1 {
                    (
                        Body::IndirectBranchHist {
                            btype,
                            icnt,
                            uaddr,
                            hist,
                        },
                        crate::codec::tcode::INDIRECT_BRANCH_HIST,
                    )
                } else {
                    (
                        Body::IndirectBranch { btype, icnt, uaddr },
                        crate::codec::tcode::INDIRECT_BRANCH,
                    )
                };
                let key = BranchKey {
                    tcode,
                    btype,
                    icnt,
                    hist,
                    target,
                };
                self.emit_branch(body, key, time, out);
                self.ref_addr = target;
                self.icnt = 0;
                self.hist = 1;
            }
            Pending::Direct { time } => {
                if self.sync_due() {
                    let faddr = self.addr_field(target >> 1);
                    let icnt = self.icnt;
                    self.emit(
                        Body::DirectBranchSync {
                            sync: sync::PERIODIC,
                            icnt,
                            faddr,
                        },
                        time,
                        out,
                    );
                    self.after_sync(sync::PERIODIC, target, r, out);
                    return;
                }
                let icnt = self.icnt;
                let key = BranchKey {
                    tcode: crate::codec::tcode::DIRECT_BRANCH,
                    btype: 0,
                    icnt,
                    hist: 1,
                    target: 0,
                };
                self.emit_branch(Body::DirectBranch { icnt }, key, time, out);
                self.icnt = 0;
            }
            Pending::Sync { sync, time } => self.sync_message(sync, None, target, time, r, out),
        }
    }

    /// A synchronization message carrying I-CNT (and HIST) up to here and F-ADDR `target`; `jump`
    /// is the B-TYPE of the uninferable jump or trap it reports (`None`: linear code).
    ///
    /// At a jump, 1.0 upgrades the branch message to its `...Sync` counterpart (8.4.1 note 3:
    /// IndirectBranchSync, B-TYPE 0 included; ProgTraceSync is for linear code); rc7 has no such
    /// rule, and an indirect jump (B-TYPE 0) with an empty HIST gives ProgTraceSync.
    fn sync_message(
        &mut self,
        sync: u8,
        jump: Option<u8>,
        target: u64,
        time: u64,
        r: &Record,
        out: &mut Vec<u8>,
    ) {
        let faddr = self.addr_field(target >> 1);
        let icnt = self.icnt;
        let hist = self.hist;
        let btype = jump.unwrap_or(btype::INDIRECT);
        let upgrade = jump.is_some() && (btype != 0 || self.cfg.spec == Spec::V1_0);
        let body = if self.htm() && hist != 1 {
            Body::IndirectBranchHistSync {
                sync,
                btype,
                icnt,
                faddr,
                hist,
            }
        } else if upgrade {
            Body::IndirectBranchSync {
                sync,
                btype,
                icnt,
                faddr,
            }
        } else {
            Body::ProgTraceSync { sync, icnt, faddr }
        };
        self.emit(body, time, out);
        self.after_sync(sync, target, r, out);
    }

    // ---- Records ------------------------------------------------------------------------------

    /// Encode one ingress record, appending message bytes to `out`.
    pub fn push(&mut self, r: &Record, out: &mut Vec<u8>) {
        self.stats.records += 1;
        self.hist_full_now = false;
        if r.iretire > 0 {
            self.stats.instructions += 1;
        }
        if let Some(fifo) = self.cfg.fifo {
            self.fifo_level = self
                .fifo_level
                .saturating_sub(u64::from(fifo.drain_per_record_256));
        }
        let traced = self.cfg.filter.is_none_or(|f| f.passes(r.iaddr, r.priv_));
        if let Some((ecode, time)) = self.overflow {
            // Messages were lost (N-Trace 7.4): nothing more until there is room for the Error
            // message and a synchronization with SYNC=7 at this instruction.
            self.pending = None;
            let room = self.cfg.fifo.map_or(0, |f| u64::from(f.bytes) << 8);
            if !traced || self.fifo_level + (self.restart_bytes(ecode, r) << 8) > room {
                self.last = Some(*r);
                return;
            }
            self.overflow = None;
            self.emit(Body::Error { etype: 0, ecode }, time, out);
            self.start(sync::FIFO_OVERRUN, r, out);
        }
        if !traced {
            // Trace stops (or starts disabled): ProgTraceCorrelation EVCODE=4 (8.6 Corner Cases).
            if self.enabled {
                if let Some(p) = self.pending.take() {
                    self.resolve(p, r, out);
                }
                self.correlation(evcode::TRACE_DISABLED, r.time, out);
                self.enabled = false;
            } else if self.last.is_none() && !self.disabled_reported {
                self.correlation(evcode::TRACE_DISABLED, r.time, out);
                self.disabled_reported = true;
            }
            self.last = Some(*r);
            return;
        }
        if !self.enabled {
            // Trace (re)starts: ProgTraceSync, SYNC=5 after a disabled stretch.
            let sync = if std::mem::take(&mut self.lost_restart) {
                sync::FIFO_OVERRUN
            } else if self.last.is_none() {
                self.cfg.start_sync
            } else {
                sync::TRACE_ENABLE
            };
            self.start(sync, r, out);
        }
        if let Some(p) = self.pending.take() {
            self.resolve(p, r, out);
        }
        if self.cfg.ownership
            && self
                .owner
                .is_some_and(|(p, c)| p != r.priv_ || c != r.context)
        {
            let format = if self.owner.is_some_and(|(_, c)| c != r.context) {
                Process::FORMAT_SCONTEXT
            } else {
                Process::FORMAT_PRIV
            };
            self.ownership(format, r, out);
        }
        if r.iretire == 0 {
            // A trap before any instruction retired (fault at iaddr, or interrupt at iaddr).
            if r.is_trap() {
                let interrupt = r.itype == rvtrace_isa::Itype::Interrupt;
                self.pending = Some(Pending::Jump {
                    btype: self.trap_btype(interrupt),
                    time: r.time,
                    predicted: None,
                    seq_next: None,
                    unretired: 0,
                });
                self.seq_ok = false;
            }
            self.last = Some(*r);
            return;
        }
        let retired = u64::from(r.iretire - self.unretired(r));
        self.icnt += retired;
        match self.cfg.sync_period {
            Some((SyncUnit::Halfwords, _)) => self.sync_counter += retired,
            Some((SyncUnit::Cycles, _)) => {
                self.sync_counter = r.time.saturating_sub(self.sync_base_time)
            }
            _ => {}
        }
        self.itype(r, out);
        self.seq_ok = !r.is_trap();
        self.icnt_overflow(r, out);
        if self.pending.is_none() && self.sync_due() {
            self.pending = Some(Pending::Sync {
                sync: sync::PERIODIC,
                time: r.time,
            });
        }
        self.last = Some(*r);
    }

    /// Encode ingress records in order: the same bytes as [`push`](Encoder::push) on each,
    /// faster. Runs of records that only count (I-CNT, HIST and the sync counter move, no message
    /// is due) are scanned in place.
    pub fn push_all(&mut self, recs: &[Record], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < recs.len() {
            i += self.run_fast(&recs[i..]);
            if let Some(r) = recs.get(i) {
                self.push(r, out);
                i += 1;
            }
        }
    }

    /// The run of records at the start of `recs` that produce no message and leave none
    /// pending: traced retired instructions (no trap) that are sequential, inferable jumps that
    /// are not calls (without all-jumps), or, in HTM, branches that do not fill HIST (8.2.1);
    /// I-CNT not reaching its overflow flag (8.3), no sync due, no ownership change, no
    /// output queue model. Their effect applied (I-CNT, HIST, the sync counter), their number
    /// returned.
    fn run_fast(&mut self, recs: &[Record]) -> usize {
        if self.cfg.fifo.is_some()
            || self.overflow.is_some()
            || !self.enabled
            || self.pending.is_some()
        {
            return 0;
        }
        let cfg = &self.cfg;
        // SiFive's dialect: a branch that extends or ends a run, or starts one, is not counted
        // here (`sifive_bit`).
        let htm_hist = cfg.mode == Mode::Htm && !cfg.hist_patterns && self.run.is_none();
        let sifive = cfg.sifive();
        let btm = cfg.mode == Mode::Btm;
        let hist_top = u32::from(cfg.hist_bits.clamp(2, 63)) - 1;
        // I-CNT's most significant bit is its overflow flag (Table 10); 0 bits: no limit.
        let icnt_top = match cfg.icnt_bits {
            0 => 64,
            b => u32::from(b.clamp(2, 24)) - 1,
        };
        let (unit, period) = match cfg.sync_period {
            Some((u, p)) => (Some(u), p),
            None => (None, u64::MAX),
        };
        // No filter, no ownership, no sync period (the common settings): a loop without
        // their tests.
        let plain = cfg.filter.is_none() && !cfg.ownership && unit.is_none();
        let hist = (htm_hist, sifive);
        let n = if plain {
            self.run_fast_loop::<true>(recs, hist, btm, hist_top, icnt_top, unit, period)
        } else {
            self.run_fast_loop::<false>(recs, hist, btm, hist_top, icnt_top, unit, period)
        };
        if n > 0 {
            self.seq_ok = true;
            self.hist_full_now = false;
            self.last = Some(recs[n - 1]);
            self.stats.records += n as u64;
            self.stats.instructions += n as u64;
        }
        n
    }

    /// The loop of [`run_fast`](Self::run_fast), its state (I-CNT, HIST, the sync counter)
    /// updated; `PLAIN`: no filter, no ownership, no sync period; `hist`: branches go to HIST
    /// here, and whether SiFive's runs are to be looked for.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run_fast_loop<const PLAIN: bool>(
        &mut self,
        recs: &[Record],
        (htm_hist, sifive): (bool, bool),
        btm: bool,
        hist_top: u32,
        icnt_top: u32,
        unit: Option<SyncUnit>,
        period: u64,
    ) -> usize {
        let cfg = &self.cfg;
        let (mut icnt, mut hist, mut counter) = (self.icnt, self.hist, self.sync_counter);
        let mut n = 0;
        for r in recs {
            if r.iretire == 0
                || (!PLAIN
                    && (!cfg.filter.is_none_or(|f| f.passes(r.iaddr, r.priv_))
                        || (cfg.ownership && self.owner != Some((r.priv_, r.context)))))
            {
                break;
            }
            let h = match r.itype.code() {
                0 => hist,
                7 | 11 | 15 if !cfg.all_jumps => hist,
                4 if btm => hist,
                4 | 5 if htm_hist => {
                    let h = (hist << 1) | (r.itype.code() == 5) as u64;
                    if h >> hist_top != 0 || (sifive && sifive_run_starts(h)) {
                        break;
                    }
                    h
                }
                _ => break,
            };
            let ic = icnt + r.iretire as u64;
            if icnt_top < 64 && ic >> icnt_top != 0 {
                break;
            }
            let c = match unit {
                _ if PLAIN => counter,
                Some(SyncUnit::Halfwords) => counter + r.iretire as u64,
                Some(SyncUnit::Cycles) => r.time.saturating_sub(self.sync_base_time),
                _ => counter,
            };
            if !PLAIN && c >= period {
                break;
            }
            (icnt, hist, counter) = (ic, h, c);
            n += 1;
        }
        (self.icnt, self.hist, self.sync_counter) = (icnt, hist, counter);
        n
    }

    /// Half-words of `r` that did not retire although the ingress counts them: in 1.0 the
    /// `ecall`/`ebreak`/`c.ebreak` that takes its exception ("These instructions do not retire",
    /// 1.0 chapter 2; 8.3: not in I-CNT). rc7 counts it (rc7 Table 2, 8.4).
    fn unretired(&self, r: &Record) -> u32 {
        match self.cfg.spec {
            Spec::V1_0 if r.ends_in_env_trap() => (1u32 << r.ilastsize.min(30)).min(r.iretire),
            _ => 0,
        }
    }

    /// N-Trace Tables 3 and 4: what the block's last instruction does.
    fn itype(&mut self, r: &Record, out: &mut Vec<u8>) {
        let code = r.itype.code();
        match code {
            0 => {}
            // Trap after a retired instruction (ecall, ebreak; interrupt after it).
            1 | 2 => {
                self.pending = Some(Pending::Jump {
                    btype: self.trap_btype(code == 2),
                    time: r.time,
                    predicted: None,
                    seq_next: (code == 1).then(|| r.next_iaddr() & self.addr_mask()),
                    unretired: self.unretired(r),
                })
            }
            // Trap return.
            3 => {
                self.pending = Some(Pending::Jump {
                    btype: btype::INDIRECT,
                    time: r.time,
                    predicted: None,
                    seq_next: None,
                    unretired: 0,
                })
            }
            4 | 5 => self.branch(code == 5, r, out),
            // Reserved 7: as 5 with all-jumps, else as 0 (N-Trace chapter 2 note).
            7 => {
                if self.cfg.all_jumps {
                    self.branch(true, r, out)
                }
            }
            // Inferable calls and jumps (9, 15; E-Trace 11 like 15).
            9 | 11 | 15 => {
                if code == 9 {
                    self.push_return(r.next_iaddr() & self.addr_mask());
                }
                if self.cfg.all_jumps {
                    self.branch(true, r, out);
                }
            }
            // Uninferable jumps: 6 (3-bit), 8 call, 12 swap, 13 return, 14 (E-Trace 10 like 14).
            _ => {
                let pops = code == 12 || code == 13;
                let pushes = code == 8 || code == 12;
                let predicted = if pops { self.pop_return() } else { None };
                if pushes {
                    self.push_return(r.next_iaddr() & self.addr_mask());
                }
                if self.cfg.sequential_jumps && r.sijump && self.seq_ok {
                    return; // sequentially inferable (9.1)
                }
                self.pending = Some(Pending::Jump {
                    btype: btype::INDIRECT,
                    time: r.time,
                    predicted,
                    seq_next: None,
                    unretired: 0,
                });
            }
        }
    }

    fn branch(&mut self, taken: bool, r: &Record, out: &mut Vec<u8>) {
        if self.htm() && self.cfg.hist_patterns {
            self.pattern_bit(taken, r.time, out);
        } else if self.htm() && self.cfg.sifive() {
            self.sifive_bit(taken, r.time, out);
        } else if self.htm() {
            self.hist = (self.hist << 1) | taken as u64;
            if self.hist >> (self.cfg.hist_bits.clamp(2, 63) - 1) != 0 {
                self.hist_full(r.time, out);
            }
        } else if taken {
            self.pending = Some(Pending::Direct { time: r.time });
        }
    }

    /// SiFive's dialect: one more branch outcome. A run goes on while the outcome repeats (up
    /// to `max_hrepeat`: no source gives the counter's width; the captures count up to 4096);
    /// another outcome ends it and starts HIST. A HIST that starts with [`SIFIVE_RUN_MIN`] equal
    /// outcomes becomes a run; a full one is ResourceFull RCODE 1.
    fn sifive_bit(&mut self, taken: bool, time: u64, out: &mut Vec<u8>) {
        if let Some((t, n, last)) = &mut self.run {
            if *t == taken && *n < self.cfg.max_hrepeat {
                *n += 1;
                *last = time;
                return;
            }
            self.flush_run(out);
        }
        self.hist = (self.hist << 1) | taken as u64;
        if sifive_run_starts(self.hist) {
            self.hist = 1;
            self.run = Some((taken, u64::from(SIFIVE_RUN_MIN), time));
        } else if self.hist >> (self.cfg.hist_bits.clamp(2, 63) - 1) != 0 {
            self.hist_full(time, out);
        }
    }

    /// HIST is full (N-Trace 8.2.1): ResourceFull RCODE 1, or counted for RCODE 2 (9.3).
    fn hist_full(&mut self, time: u64, out: &mut Vec<u8>) {
        self.hist_full_now = true;
        if self.cfg.nexrv && self.cfg.repeat_history {
            self.hist_full_nexrv(time, out);
            return;
        }
        let h = self.hist;
        self.hist = 1;
        if self.cfg.repeat_history {
            if let Some((v, n, t)) = &mut self.rf_rep {
                if *v == h && *n < self.cfg.max_hrepeat {
                    *n += 1;
                    *t = time;
                    return;
                }
            }
            self.flush_br_rep(out);
            self.last_key = None;
            self.flush_rf_rep(out);
            self.rf_rep = Some((h, 1, time));
        } else {
            self.emit(
                Body::ResourceFull {
                    rcode: rcode::HIST,
                    rdata0: h,
                    rdata1: None,
                },
                time,
                out,
            );
        }
    }

    /// `hist_patterns`: one more branch. While a pattern is counted, a branch that follows it
    /// extends the current repetition (in HIST); one that does not ends the count (the pattern
    /// and its count are sent) and starts HIST with the repetition's bits so far and this one.
    fn pattern_bit(&mut self, taken: bool, time: u64, out: &mut Vec<u8>) {
        self.hist = (self.hist << 1) | taken as u64;
        if let Some(run) = self.pat_run {
            let have = 63 - self.hist.leading_zeros(); // bits of the current repetition
            let follows = self.hist & ((1 << have) - 1) == run.pattern >> (run.period - have);
            if follows {
                if have == run.period {
                    self.hist = 1;
                    let run = self.pat_run.as_mut().expect("counted pattern");
                    run.count += 1;
                    run.time = time;
                    if run.count >= self.cfg.max_hrepeat {
                        self.send_pattern(out);
                    }
                }
                return;
            }
            self.send_pattern(out);
            self.pat_run = None;
        }
        if self.hist >> (self.cfg.hist_bits.clamp(2, 32) - 1) != 0 {
            self.hist_full_now = true;
            self.pattern_full(time, out);
        }
    }

    /// `hist_patterns`: HIST is full (8.2.1). The window of this register and the one held back
    /// is searched for a repeating stretch at its end ([`crate::histpat::find`]): the bits before
    /// the stretch are sent as ResourceFull RCODE 1 and the stretch's pattern is counted;
    /// without one, the held register is sent and this one held in its place.
    fn pattern_full(&mut self, time: u64, out: &mut Vec<u8>) {
        self.flush_br_rep(out);
        self.last_key = None;
        let w = u32::from(self.cfg.hist_bits.clamp(2, 32)) - 1;
        let h = self.hist & ((1 << w) - 1);
        self.hist = 1;
        let (bits, n, held_time) = match self.pat_held.take() {
            Some((p, t)) => (((p & ((1 << w) - 1)) << w) | h, 2 * w, t),
            None => (h, w, time),
        };
        // A stretch that covers the new register (so that the bits before it fit in one
        // message), and at least half a register. On CoreMark, workload and the test programs
        // this gives the smallest trace of the thresholds tried (8 to 31 bits; 31 alone gives 3%
        // more on CoreMark, 16 alone 0.6% more on the others).
        let min_len = if n > w { w } else { w.div_ceil(2) };
        let Some(f) = crate::histpat::find(bits, n, w, min_len) else {
            if n > w {
                self.write_hist(1 << w | bits >> w, held_time, out);
            }
            self.pat_held = Some((1 << w | h, time));
            return;
        };
        // The bits before the stretch, at most `w` per message.
        let mut left = f.prefix;
        while left > 0 {
            let k = left.min(w);
            let chunk = (bits >> (n - f.prefix + left - k)) & ((1 << k) - 1);
            self.write_hist(1 << k | chunk, held_time, out);
            left -= k;
        }
        self.hist = 1 << f.partial | (f.pattern >> (f.period - f.partial));
        self.pat_run = Some(PatRun {
            pattern: f.pattern,
            period: f.period,
            count: f.count,
            time,
        });
        if f.count >= self.cfg.max_hrepeat {
            self.send_pattern(out);
        }
    }

    /// ResourceFull RCODE 1 with `hist` (stop-bit included).
    fn write_hist(&mut self, hist: u64, time: u64, out: &mut Vec<u8>) {
        self.write(
            Body::ResourceFull {
                rcode: rcode::HIST,
                rdata0: hist,
                rdata1: None,
            },
            time,
            out,
        );
    }

    /// Send the repetitions of the counted pattern so far (RCODE 2; RCODE 1 for a single one);
    /// the pattern stays counted from 0.
    fn send_pattern(&mut self, out: &mut Vec<u8>) {
        let Some(run) = self.pat_run.as_mut() else {
            return;
        };
        let (n, time) = (std::mem::take(&mut run.count), run.time);
        let rdata0 = 1 << run.period | run.pattern;
        match n {
            0 => {}
            1 => self.write_hist(rdata0, time, out),
            _ => self.write(
                Body::ResourceFull {
                    rcode: rcode::HIST_REPEAT,
                    rdata0,
                    rdata1: Some(n),
                },
                time,
                out,
            ),
        }
    }

    /// `hist_patterns`: before any other message, the held register and the counted pattern
    /// are sent (their branches come before the message's own).
    fn flush_patterns(&mut self, out: &mut Vec<u8>) {
        if let Some((h, t)) = self.pat_held.take() {
            self.write_hist(h, t, out);
        }
        self.send_pattern(out);
        self.pat_run = None;
    }

    /// NexRv's repeated-history detection (`NexRvEnco.c`, `conf_Repeat & 2`): a run of identical
    /// full registers is one ResourceFull RCODE 2 (N-Trace 9.3). When the second register of a
    /// run differs from the first, NexRv also looks for a 28- or 30-branch pattern repeating over
    /// both (`IsHistMatch_30_28`): if there is one, RDATA[0] becomes that pattern (with its
    /// stop-bit), the branches after two patterns start the next register, and each further
    /// register counts when its first 28/30 branches are the pattern again (the rest again
    /// starting the next register).
    fn hist_full_nexrv(&mut self, time: u64, out: &mut Vec<u8>) {
        let h = self.hist;
        let shift = self.rf_shift;
        let max = self.cfg.max_hrepeat;
        if let Some((prev, n, t)) = &mut self.rf_rep {
            if h >> shift == *prev && *n < max {
                *n += 1;
                *t = time;
                self.hist = (1 << shift) | (h & ((1 << shift) - 1));
                return;
            }
            if *n == 1 {
                let m = nexrv_hist_match_30_28(*prev as u32, h as u32);
                if m != 0 {
                    let s = 31 - m;
                    *prev >>= s;
                    *n += 1;
                    *t = time;
                    self.rf_shift = s;
                    self.hist = (1 << (2 * s)) | (h & ((1 << (2 * s)) - 1));
                    return;
                }
            }
        }
        self.flush_br_rep(out);
        self.last_key = None;
        self.flush_rf_rep(out);
        self.rf_rep = Some((h, 1, time));
        self.hist = 1;
    }

    /// I-CNT overflow (N-Trace 8.3). `icnt_bits` 0: no limit (NexRv never checks its counter).
    fn icnt_overflow(&mut self, r: &Record, out: &mut Vec<u8>) {
        if self.cfg.icnt_bits == 0 {
            return;
        }
        let bits = self.cfg.icnt_bits.clamp(2, 24) as u32;
        // The counter's most significant bit is its overflow flag (Table 10). A message already
        // pending for this record will carry the count.
        if self.icnt >> (bits - 1) == 0 || self.pending.is_some() {
            return;
        }
        // rc7 8.4.4: SYNC=4 in HTM with branches in HIST ("Required for HTM mode"); 1.0 8.3:
        // ResourceFull RCODE 0 in both modes, SYNC=4 "may be only used in BTM mode".
        if self.htm() && self.hist != 1 && self.cfg.spec == Spec::Rc7 {
            self.pending = Some(Pending::Sync {
                sync: sync::ICNT_OVERFLOW,
                time: r.time,
            });
        } else {
            let icnt = self.icnt;
            self.emit(
                Body::ResourceFull {
                    rcode: rcode::ICNT,
                    rdata0: icnt,
                    rdata1: None,
                },
                r.time,
                out,
            );
            self.icnt = 0;
        }
    }

    fn push_return(&mut self, addr: u64) {
        match self.cfg.call_stack {
            CallStack::Off => {}
            // NexRv's `CallStack_Push`: the top index runs 0..=max before wrapping to 0 (so a ring
            // of max + 1 slots), the count saturates at max.
            CallStack::Full { depth } if self.cfg.nexrv => {
                let max = depth.min(32) as usize;
                if max == 0 {
                    return;
                }
                self.nx_top = if self.nx_top >= max {
                    0
                } else {
                    self.nx_top + 1
                };
                self.nx_ring[self.nx_top] = addr;
                self.nx_cnt = (self.nx_cnt + 1).min(max as u32);
            }
            CallStack::Counter { max } => self.count = (self.count + 1).min(max),
            CallStack::Partial { depth, .. } | CallStack::Full { depth } => {
                if depth == 0 {
                    return;
                }
                if self.stack.len() >= depth as usize {
                    self.stack.pop_front();
                }
                self.stack.push_back(addr);
            }
        }
    }

    fn pop_return(&mut self) -> Option<Prediction> {
        match self.cfg.call_stack {
            CallStack::Off => None,
            // NexRv's `CallStack_Pop`: nothing when the count is 0; otherwise the top entry, the
            // top index going down and wrapping from 0 to max - 1 (not max: after a wrap-around
            // the entry in slot max is skipped and older, stale entries come back). The encoder
            // keeps the prediction in an `unsigned int` (`checkRetNext`): its low 32 bits.
            CallStack::Full { depth } if self.cfg.nexrv => {
                let max = depth.min(32) as usize;
                if self.nx_cnt == 0 || max == 0 {
                    return None;
                }
                self.nx_cnt -= 1;
                let prev = self.nx_top;
                self.nx_top = if self.nx_top == 0 {
                    max - 1
                } else {
                    self.nx_top - 1
                };
                Some(Prediction::Exact(self.nx_ring[prev] & 0xFFFF_FFFF))
            }
            CallStack::Counter { .. } => {
                if self.count > 0 {
                    self.count -= 1;
                    Some(Prediction::Any)
                } else {
                    None
                }
            }
            CallStack::Partial { bits, .. } => {
                let mask = if bits >= 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                };
                self.stack.pop_back().map(|a| Prediction::Low {
                    value: a & mask,
                    mask,
                })
            }
            CallStack::Full { .. } => self.stack.pop_back().map(Prediction::Exact),
        }
    }

    /// Bytes of the Error message, the SYNC=7 synchronization and its Ownership message.
    fn restart_bytes(&self, ecode: u64, r: &Record) -> u64 {
        let ts = self.cfg.timestamps.then_some(r.time);
        let msg = |body| {
            Message {
                src: self.cfg.src_id,
                body,
                tstamp: ts,
            }
            .encode(&self.cfg.codec)
            .len() as u64
        };
        let sync = msg(Body::ProgTraceSync {
            sync: sync::FIFO_OVERRUN,
            icnt: 0,
            faddr: self.addr_field((r.iaddr & self.addr_mask()) >> 1),
        });
        let own = if self.cfg.ownership {
            msg(Body::Ownership {
                process: Process::from_ingress_priv(Process::FORMAT_SCONTEXT, r.priv_, r.context)
                    .to_field(),
            })
        } else {
            0
        };
        msg(Body::Error { etype: 0, ecode }) + sync + own
    }

    /// Start of trace at `r`: ProgTraceSync with I-CNT=0 (N-Trace 7.5).
    fn start(&mut self, sync: u8, r: &Record, out: &mut Vec<u8>) {
        self.lost_restart = false;
        let target = r.iaddr & self.addr_mask();
        self.icnt = 0;
        self.hist = 1;
        self.pending = None;
        self.emit(
            Body::ProgTraceSync {
                sync,
                icnt: 0,
                faddr: self.addr_field(target >> 1),
            },
            r.time,
            out,
        );
        self.enabled = true;
        self.after_sync(sync, target, r, out);
    }

    /// ProgTraceCorrelation with what is left of I-CNT and HIST (N-Trace 7.12): CDF=1 with HIST in
    /// HTM (the `nexrv` preset leaves out an empty HIST), CDF=0 in BTM.
    fn correlation(&mut self, evcode: u8, time: u64, out: &mut Vec<u8>) {
        let htm = self.htm();
        // NexRv and SiFive leave out an empty HIST (SiFive's captures: 14 ProgTraceCorrelation
        // with CDF=0 in HTM, none with an empty HIST field).
        let empty_out = self.cfg.nexrv || self.cfg.sifive();
        let hist = (htm && !(empty_out && self.hist == 1)).then_some(self.hist);
        let body = Body::ProgTraceCorrelation {
            evcode,
            cdf: hist.is_some() as u8,
            icnt: self.icnt,
            hist,
        };
        self.emit(body, time, out);
        self.icnt = 0;
        self.hist = 1;
    }

    /// NexRv's end of trace (`HandleRetired` called with `info == 0` and the last instruction's
    /// address): a message still due is sent as usual (a branch message with that address), and
    /// then no ProgTraceCorrelation follows; nor does one when the last instruction filled HIST
    /// (NexRv sends that ResourceFull, or with repeat history keeps counting it, and stops).
    /// True when the trace is complete without ProgTraceCorrelation.
    fn nexrv_flush(&mut self, pending: Option<Pending>, last: &Record, out: &mut Vec<u8>) -> bool {
        let target = last.iaddr & self.addr_mask();
        match pending {
            Some(
                p @ Pending::Jump {
                    btype: btype::INDIRECT,
                    predicted,
                    seq_next: None,
                    ..
                },
            ) => {
                if predicted.is_some_and(|p| p.matches(target)) {
                    return false;
                }
                self.resolve(p, last, out);
                true
            }
            Some(p @ Pending::Direct { .. }) => {
                self.resolve(p, last, out);
                true
            }
            // Our pattern detection keeps registers back: ProgTraceCorrelation sends them.
            _ => self.hist_full_now && !self.cfg.hist_patterns,
        }
    }

    /// SiFive's dialect: a store to ITC stimulus register `idtag / 4` made by the last record
    /// pushed: DataAcquisition (TCODE 7) with IDTAG the store's byte offset inside the stimulus
    /// array and DQDATA the value (dqr `parseDataAcquisition`, `ITCPrint::print`), at the last
    /// record's time. It goes out whether instruction trace is on or not (instrumentation is
    /// SiFive's teInstrumentation, apart from teInstruction), but not before the trace has
    /// started nor while the output queue loses messages; nothing in the standard dialect
    /// (TCODE 7 is reserved in N-Trace).
    pub fn itc_write(&mut self, idtag: u64, value: u64, out: &mut Vec<u8>) {
        let Some(last) = self.last else { return };
        if !self.cfg.sifive() || self.overflow.is_some() {
            return;
        }
        let body = Body::DataAcquisition {
            idtag,
            dqdata: value,
        };
        self.emit(body, last.time, out);
    }

    /// [`push_all`](Encoder::push_all), with the ITC stimulus writes of `writes` (in order; the
    /// writes it passes are taken from it) sent with [`itc_write`](Encoder::itc_write) after the
    /// record of their store. `retired` counts the records that retired an instruction so far
    /// (one instruction per record: block records must be split first).
    pub fn push_all_itc(
        &mut self,
        recs: &[Record],
        writes: &mut std::iter::Peekable<impl Iterator<Item = rvtrace_ingress::itc::ItcWrite>>,
        retired: &mut u64,
        out: &mut Vec<u8>,
    ) {
        let (mut start, mut i) = (0, 0);
        while let Some(w) = writes.peek().copied() {
            while i < recs.len() && *retired < w.retired {
                *retired += u64::from(recs[i].iretire > 0);
                i += 1;
            }
            if *retired < w.retired {
                break;
            }
            self.push_all(&recs[start..i], out);
            start = i;
            self.itc_write(u64::from(w.idtag), w.value, out);
            writes.next();
        }
        *retired += recs[i..].iter().filter(|r| r.iretire > 0).count() as u64;
        self.push_all(&recs[start..], out);
    }

    /// Trace was lost after the records pushed so far (a decoded trace's loss, re-encoded by
    /// `rvtrace transcode`). The instructions traced so far are closed by ProgTraceCorrelation
    /// EVCODE=4 with their I-CNT and HIST (7.12, as when trace is disabled; the target of a
    /// pending indirect jump is what was lost), then an Error message says trace was lost
    /// (ETYPE 0, ECODE bit 2: program trace messages, 7.4), and the next record restarts trace
    /// with ProgTraceSync SYNC=7 (8.4), as after an output queue overrun.
    pub fn lost(&mut self, out: &mut Vec<u8>) {
        let time = self.last.map_or(0, |r| r.time.max(self.last_time));
        self.pending = None;
        if self.enabled {
            self.correlation(evcode::TRACE_DISABLED, time, out);
            self.enabled = false;
        }
        // Messages the output queue lost meanwhile are said by the same Error message; the
        // queue is not what lost this trace, so the message goes out.
        let ecode = 4 | self.overflow.take().map_or(0, |(e, _)| e);
        let fifo = self.cfg.fifo.take();
        self.emit(Body::Error { etype: 0, ecode }, time, out);
        self.cfg.fifo = fifo;
        self.lost_restart = true;
    }

    /// End of trace: ProgTraceCorrelation EVCODE=0 (Entry into Debug Mode: the hart stopped) with
    /// the I-CNT and HIST of the last instructions (N-Trace 7.12).
    pub fn finish(&mut self, out: &mut Vec<u8>) -> EncodeStats {
        self.finish_with(evcode::DEBUG, out)
    }

    /// End of a trace whose records ran out before the hart stopped (a damaged or cut input):
    /// in 1.0 ProgTraceCorrelation EVCODE=4 (trace disabled, "hart may be still running"), since
    /// EVCODE=0 says the hart entered Debug Mode at the `ebreak` that 1.0 leaves out of I-CNT
    /// and a decoder reports that instruction (8.3.3); rc7 as [`Encoder::finish`].
    pub fn finish_cut(&mut self, out: &mut Vec<u8>) -> EncodeStats {
        let evcode = match self.cfg.spec {
            Spec::V1_0 => evcode::TRACE_DISABLED,
            Spec::Rc7 => evcode::DEBUG,
        };
        self.finish_with(evcode, out)
    }

    fn finish_with(&mut self, evcode: u8, out: &mut Vec<u8>) -> EncodeStats {
        let Some(last) = self.last else {
            return self.stats;
        };
        let pending = self.pending.take();
        if let Some((ecode, time)) = self.overflow.take() {
            // Lost messages at the end: the Error message is the last one (ratified 7.4 note).
            self.cfg.fifo = None;
            self.emit(Body::Error { etype: 0, ecode }, time, out);
            return self.stats;
        }
        if !self.enabled {
            // The hart stops with trace disabled: EVCODE=0 and I-CNT=0 (8.6 Corner Cases).
            self.icnt = 0;
            self.hist = 1;
        }
        self.cfg.fifo = None; // the port drains what is queued
        if self.cfg.nexrv && self.enabled && self.nexrv_flush(pending, &last, out) {
            return self.stats;
        }
        let evcode = if self.enabled { evcode } else { evcode::DEBUG };
        self.correlation(evcode, last.time, out);
        self.stats
    }
}

/// Encode a whole record sequence.
pub fn encode(cfg: EncoderConfig, records: &[Record]) -> (Vec<u8>, EncodeStats) {
    let mut e = Encoder::new(cfg);
    let mut out = Vec::new();
    for r in records {
        e.push(r, &mut out);
    }
    let st = e.finish(&mut out);
    (out, st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Fifo, TraceFilter};
    use rvtrace_isa::Xlen;
    use rvtrace_testkit::records::{random_pieces, random_records};

    fn configs() -> Vec<EncoderConfig> {
        let d = EncoderConfig::new(Xlen::Rv64);
        vec![
            d,
            EncoderConfig {
                mode: Mode::Btm,
                ..d
            },
            EncoderConfig {
                repeat_history: true,
                call_stack: CallStack::Full { depth: 8 },
                ..d
            },
            EncoderConfig {
                repeat_history: true,
                hist_patterns: true,
                repeat_branch: true,
                ..d
            },
            EncoderConfig {
                sync_period: Some((SyncUnit::Messages, 8)),
                timestamps: true,
                ..d
            },
            EncoderConfig {
                sync_period: Some((SyncUnit::Halfwords, 300)),
                hist_bits: 6,
                icnt_bits: 7,
                ..d
            },
            EncoderConfig {
                sync_period: Some((SyncUnit::Cycles, 200)),
                all_jumps: true,
                ownership: true,
                ..d
            },
            // Each setting that keeps the runs off their plain loop, alone.
            EncoderConfig {
                ownership: true,
                ..d
            },
            EncoderConfig {
                filter: Some(TraceFilter {
                    privileges: 1 << 3 | 1,
                    range: Some((0x8000_0000, 0x8000_0180)),
                }),
                ..d
            },
            EncoderConfig {
                fifo: Some(Fifo {
                    bytes: 64,
                    drain_per_record_256: 200,
                }),
                ..d
            },
            EncoderConfig {
                repeat_history: true,
                ..d.nexrv()
            },
        ]
    }

    /// `push_all`'s runs give the bytes of `push` on each record, on random record streams cut
    /// at random places (with trace losses now and then).
    #[test]
    fn push_all_equals_push() {
        for seed in 1..=12u64 {
            let recs = random_records(seed, 6000, seed % 2 == 0);
            let pieces = random_pieces(&recs, seed + 7);
            for (k, cfg) in configs().into_iter().enumerate() {
                let run = |all: bool| {
                    let mut e = Encoder::new(cfg);
                    let mut out = Vec::new();
                    for &(piece, lost) in &pieces {
                        if all {
                            e.push_all(piece, &mut out);
                        } else {
                            piece.iter().for_each(|r| e.push(r, &mut out));
                        }
                        if lost {
                            e.lost(&mut out);
                        }
                    }
                    let st = e.finish(&mut out);
                    (out, st)
                };
                let (one, st) = run(false);
                assert!(st.messages > 20, "seed {seed} config {k}: {st:?}");
                let (all, st_all) = run(true);
                assert!(all == one, "seed {seed} config {k}");
                assert_eq!(st_all, st, "seed {seed} config {k}");
            }
        }
    }

    /// `push_all` takes its runs on a stream of plain instructions and branches.
    #[test]
    fn push_all_runs_cover_the_common_records() {
        let recs: Vec<Record> = random_records(5, 20_000, false)
            .into_iter()
            .filter(|r| matches!(r.itype.code(), 0 | 4 | 5))
            .collect();
        let mut e = Encoder::new(EncoderConfig::new(Xlen::Rv64));
        let mut out = Vec::new();
        let (mut fast, mut i) = (0, 0);
        while i < recs.len() {
            let n = e.run_fast(&recs[i..]);
            fast += n;
            i += n;
            if let Some(r) = recs.get(i) {
                e.push(r, &mut out);
                i += 1;
            }
        }
        assert!(fast * 10 > recs.len() * 9, "{fast} of {}", recs.len());
    }
}
