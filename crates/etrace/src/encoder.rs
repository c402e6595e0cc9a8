//! The E-Trace instruction trace encoder: the reference compressed branch trace algorithm
//! (`exampleAlgorithm.adoc` and its figure `algo.png`) over a three-instruction pipeline
//! (previous, current, next), with the packet rules of `payload.adoc` and the optional modes of
//! `branchTrace.adoc`.
//!
//! Two behaviours ([`Preset`]):
//!
//! * [`Preset::Reference`] makes the reference flow's `encoder_model.py` choices, quirks included
//!   (see the crate README), so that the same ingress gives byte-identical `te_inst_raw`.
//! * [`Preset::Rvtrace`] follows E-Trace v2.0 and implements every option: implicit return (call
//!   counter or return address stack), sequentially inferable jumps, implicit exception, branch
//!   prediction (format 0 subformat 0), jump target cache (format 0 subformat 1), full address,
//!   resynchronisation, time.

use std::collections::HashMap;

use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};

use crate::codec::bits::mask;
use crate::codec::te_inst::{branch_map_width_f0s1, QualStatus, Support, SyncFields};
use crate::codec::{AddrTail, CodecError, IrdepthFill, TeInst};
use crate::config::{Preset, TraceConfig};
use crate::params::{IOptions, Params};
use crate::predict::{bpred_next, table_index, BPRED_INIT};

/// Why the encoder could not go on: its configuration, a packet that does not fit its layout,
/// or the packet sink. The text ([`Display`](std::fmt::Display)) is what `rvtrace encode`
/// prints.
#[derive(Debug)]
pub enum EncodeError {
    /// Parameters the codec cannot lay packets out with ([`Params::validate`]).
    Params(CodecError),
    /// Implicit return with a 3-bit *itype* (rvtrace's encoder): calls and returns are not told
    /// apart.
    ImplicitReturnNeedsItype4,
    /// A packet that does not encode or encapsulate with the stream's layout.
    Packet {
        /// The packet's fields ([`TeInst::fields`]).
        fields: String,
        /// What the codec said.
        error: CodecError,
    },
    /// The packet sink's writer failed.
    Io(std::io::Error),
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::Params(e) => write!(f, "{e}"),
            EncodeError::ImplicitReturnNeedsItype4 => f.write_str(
                "implicit return needs a 4-bit itype (calls and returns are not told apart with 3 bits)",
            ),
            EncodeError::Packet { fields, error } => write!(f, "{fields}: {error}"),
            EncodeError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The text says the cause (the codec's or the writer's error): no [`source`](std::error::Error::source).
impl std::error::Error for EncodeError {}

impl EncodeError {
    /// The error `error` of the packet `p` laid out per `params`.
    fn packet(p: &TeInst, params: &Params, error: CodecError) -> Self {
        EncodeError::Packet {
            fields: p.fields(params).to_string(),
            error,
        }
    }
}

/// For callers that report errors as text.
impl From<EncodeError> for String {
    fn from(e: EncodeError) -> String {
        e.to_string()
    }
}

/// Receives the packets an [`Encoder`] produces.
pub trait PacketSink {
    /// One packet, in order.
    fn packet(&mut self, p: &TeInst) -> Result<(), EncodeError>;
}

impl<F: FnMut(&TeInst) -> Result<(), EncodeError>> PacketSink for F {
    fn packet(&mut self, p: &TeInst) -> Result<(), EncodeError> {
        self(p)
    }
}

impl PacketSink for Vec<TeInst> {
    fn packet(&mut self, p: &TeInst) -> Result<(), EncodeError> {
        self.push(*p);
        Ok(())
    }
}

/// Encoder statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Ingress records encoded.
    pub records: u64,
    /// Packets per kind: F0S0, F0S1, F1, F2, F3S0, F3S1, F3S2, F3S3.
    pub packets: [u64; 8],
}

impl EncodeStats {
    /// All packets.
    pub fn total_packets(&self) -> u64 {
        self.packets.iter().sum()
    }
}

/// One pipeline stage: an ingress record and what the encoder learned about it.
#[derive(Clone, Copy, Debug, Default)]
struct Inst {
    rec: Record,
    qualified: bool,
    /// Resolved when the instruction was current: an uninferable discontinuity whose target
    /// must be reported.
    updiscon: bool,
}

impl Inst {
    fn itype(&self) -> Itype {
        self.rec.itype
    }
    fn retired(&self) -> bool {
        self.rec.iretire != 0
    }
    fn is_exception(&self) -> bool {
        matches!(self.rec.itype, Itype::Exception | Itype::Interrupt)
    }
    fn exc_only(&self) -> bool {
        !self.retired() && self.is_exception()
    }
    fn is_branch(&self) -> bool {
        matches!(self.rec.itype, Itype::TakenBranch | Itype::NonTakenBranch)
    }
}

/// What the encoder decided about the current instruction as a jump.
#[derive(Clone, Copy, Debug, Default)]
struct Resolved {
    /// An uninferable discontinuity whose target is reported.
    upd: bool,
    /// A return that failed its prediction, with the stack depth before it.
    mispredict: Option<u64>,
    /// A return taken from the return address stack (inferred, or failed its prediction).
    popped: bool,
}

/// A position on the decoder's path (rvtrace preset, implicit return): an instruction retired
/// since the decoder's last stop and at or after the last branch, i.e. one where the decoder,
/// following the next packet, has no branch left to resolve and could stop.
#[derive(Clone, Copy, Debug)]
struct Pos {
    pc: u64,
    /// Return address stack depth before the instruction (the decoder's `irstack_depth` there).
    depth: u64,
    /// A return (inferred from the stack, unless it is the newest position).
    ret: bool,
}

/// How a format 0/1/2 packet tells the decoder where to stop (rvtrace's use of *notify*,
/// *irreport* and *irdepth*; see the crate README).
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    /// *notify*: stop at the first occurrence of the address (no tentative stop).
    notify: bool,
    /// *irreport*: with *notify*, the depth at the address; without, the depth of the return that
    /// failed its prediction.
    irreport: bool,
    irdepth: u64,
}

/// Most positions kept: a longer stretch without a branch or a packet is not checked (see the
/// crate README).
const MAX_TAIL: usize = 1 << 16;

/// While a resynchronisation is due, the longest stretch searched for the next instruction
/// before reporting the current one anyway.
const RESYNC_SEARCH: usize = 1024;

/// The first position of every address and of every (address, depth) in a stretch.
struct FirstSeen {
    pc: HashMap<u64, usize>,
    key: HashMap<(u64, u64), usize>,
}

impl FirstSeen {
    fn of(tail: &[Pos]) -> Self {
        let mut f = FirstSeen {
            pc: HashMap::new(),
            key: HashMap::new(),
        };
        for (i, p) in tail.iter().enumerate() {
            f.pc.entry(p.pc).or_insert(i);
            f.key.entry((p.pc, p.depth)).or_insert(i);
        }
        f
    }

    /// [`Encoder::marks_for`] with the table.
    fn marks(&self, tail: &[Pos], c: usize) -> Option<Marks> {
        let p = tail[c];
        if self.pc.get(&p.pc) == Some(&c) {
            Some(Marks {
                notify: true,
                ..Marks::default()
            })
        } else if self.key.get(&(p.pc, p.depth)) == Some(&c) {
            Some(Marks {
                notify: true,
                irreport: true,
                irdepth: p.depth,
            })
        } else {
            None
        }
    }
}

/// Which `encoder_model.py` flag combination led to a packet (kept for `ended_ntr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    PrevUpdiscon,
    Other,
}

/// The encoder. Feed it ingress records in order with [`Encoder::push`], then call
/// [`Encoder::finish`].
pub struct Encoder<S: PacketSink> {
    p: Params,
    o: IOptions,
    preset: Preset,
    resync_max: u64,
    sink: S,
    pipe: [Inst; 3],
    /// Index of the next instruction in `pipe`; the previous one is at `head + 1`, the current
    /// one at `head + 2` (mod 3).
    head: usize,
    count: u64,
    // Branch map and prediction.
    branches: u32,
    branch_map: u32,
    pbc: u64,
    all_correct: bool,
    count_mode: bool,
    fail_now: bool,
    curr_correct: bool,
    bpred: Vec<u8>,
    // Resynchronisation and traps.
    resync_count: u64,
    trap_reported: bool,
    last_address: u64,
    // Implicit return.
    stack: Vec<u64>,
    stack_max: usize,
    /// The failed return whose target the next packet reports: its depth.
    pending_irreport: Option<u64>,
    /// rvtrace preset with implicit return: keep `tail`.
    track: bool,
    /// The positions where the decoder could stop for the next packet, oldest first: every
    /// instruction since the last packet and since (including) the last branch.
    tail: Vec<Pos>,
    /// `tail` reached `MAX_TAIL` and misses positions.
    tail_full: bool,
    // Jump target cache and implicit exception handlers.
    jtc: Vec<Option<u64>>,
    tvec: Vec<((bool, u64), u64)>,
    last_why: Why,
    last_updiscon_flag: bool,
    amask: u64,
    /// Take the fast path where it applies (the tests turn it off to compare).
    fast_path: bool,
    /// Statistics.
    pub stats: EncodeStats,
}

fn kind_index(p: &TeInst) -> usize {
    match p {
        TeInst::BranchCount { .. } => 0,
        TeInst::JumpTargetIndex { .. } => 1,
        TeInst::Branch { .. } => 2,
        TeInst::Addr(_) => 3,
        TeInst::Start { .. } => 4,
        TeInst::Trap { .. } => 5,
        TeInst::Context { .. } => 6,
        TeInst::Support(_) => 7,
    }
}

/// The reference flow's classification of a record (`post-iss`), where it differs from the
/// spec's (`ingressPort.adoc`, jump classes) that rvtrace's ingress follows: `c.jr x5` is a
/// return for the spec, an other uninferable jump for post-iss (its `is_return` only knows
/// `c.jr x1`). Trap returns, which post-iss also reports as uninferable jumps, are
/// discontinuities for the encoder anyway. `--preset reference` encodes records passed through
/// this when the program (`image`) is known, so that its trace is the reference flow's.
pub fn post_iss_itype(image: &Image, r: &Record) -> Record {
    let mut r = *r;
    // c.jr x5 = 0x8282 (RVC quadrant 2, funct4 1000, rs1 = x5, rs2 = 0).
    if r.itype == Itype::Return
        && r.iretire > 0
        && r.ilastsize == 0
        && image.fetch(r.iaddr) == Some(0x8282)
    {
        r.itype = Itype::OtherUninferableJump;
    }
    r
}

impl<S: PacketSink> Encoder<S> {
    /// An encoder with configuration `cfg` writing packets to `sink`. Sends the initial support
    /// packet (`payload.adoc` `sec:format33`: before the first synchronisation packet).
    pub fn new(cfg: &TraceConfig, sink: S) -> Result<Self, EncodeError> {
        let p = cfg.params;
        p.validate().map_err(EncodeError::Params)?;
        let o = cfg.options;
        if cfg.preset == Preset::Rvtrace && o.implicit_return && p.itype_width_p != 4 {
            return Err(EncodeError::ImplicitReturnNeedsItype4);
        }
        let stack_max = if p.return_stack_size_p > 0 {
            1usize << p.return_stack_size_p
        } else if p.call_counter_size_p > 0 {
            (1usize << p.call_counter_size_p.min(24)) - 1
        } else {
            0
        };
        let mut e = Encoder {
            p,
            o,
            preset: cfg.preset,
            resync_max: cfg.resync.unwrap_or(u64::MAX),
            sink,
            pipe: [Inst::default(); 3],
            head: 2,
            count: 0,
            branches: 0,
            branch_map: 0,
            pbc: 0,
            all_correct: true,
            count_mode: false,
            fail_now: false,
            curr_correct: true,
            bpred: vec![BPRED_INIT; 1usize << p.bpred_size_p],
            resync_count: 0,
            trap_reported: false,
            last_address: 0,
            stack: Vec::new(),
            stack_max,
            pending_irreport: None,
            track: cfg.preset == Preset::Rvtrace && o.implicit_return,
            tail: Vec::new(),
            tail_full: false,
            jtc: vec![None; 1usize << p.cache_size_p],
            tvec: Vec::new(),
            last_why: Why::Other,
            last_updiscon_flag: false,
            amask: mask(p.iaddress_width_p as u32),
            fast_path: true,
            stats: EncodeStats::default(),
        };
        e.support(true, QualStatus::NoChange)?;
        Ok(e)
    }

    /// The packet sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The packet sink, mutably.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    fn reference(&self) -> bool {
        self.preset == Preset::Reference
    }

    /// Add one ingress record (one retired instruction, or a trap that retired nothing).
    pub fn push(&mut self, rec: &Record) -> Result<(), EncodeError> {
        self.stats.records += 1;
        self.count += 1;
        // The pipeline is a ring: the oldest slot (previous) becomes the next instruction.
        self.head = (self.head + 1) % 3;
        self.pipe[self.head] = Inst {
            rec: *rec,
            qualified: true,
            ..Inst::default()
        };
        if self.count != 1 {
            self.encode(false)?;
        }
        Ok(())
    }

    /// Add ingress records in order: the same packets as [`push`](Encoder::push) on each, faster.
    /// Runs of records that take the fast path (sequential, or a branch while the map has room) are
    /// scanned in place, without going through the pipeline one by one.
    pub fn push_all(&mut self, recs: &[Record]) -> Result<(), EncodeError> {
        let mut i = 0;
        while i < recs.len() {
            i += self.run_fast(&recs[i..]);
            if let Some(r) = recs.get(i) {
                self.push(r)?;
                i += 1;
            }
        }
        Ok(())
    }

    /// The run of records at the start of `recs` that [`push`](Encoder::push) would each take
    /// through the fast path: their effect applied (branch map, positions, the pipeline left as
    /// after pushing them), their number returned.
    fn run_fast(&mut self, recs: &[Record]) -> usize {
        let Some(first_next) = recs.first() else {
            return 0;
        };
        // The pipeline's newest record becomes current with `recs[0]` next; its previous one
        // must be a pushed record (count >= 2) the fast path may follow.
        if !self.fast_path
            || self.count < 2
            || self.resync_count >= self.resync_max
            || self.pending_irreport.is_some()
        {
            return 0;
        }
        let iprev = self.pipe[self.ic()];
        let icurr = self.pipe[self.head].rec;
        if !(iprev.qualified
            && self.prev_allows_fast(&iprev)
            && icurr.priv_ == iprev.rec.priv_
            && icurr.context == iprev.rec.context
            && self.quick(&icurr, first_next))
        {
            return 0;
        }
        self.quick_step(&icurr);
        // A record that took the fast path as current is a plain one: the next may follow it
        // (its own privilege and context were compared with the next's).
        let mut j = 1;
        while let (Some(c), Some(x)) = (recs.get(j - 1), recs.get(j)) {
            if !self.quick(c, x) {
                break;
            }
            self.quick_step(c);
            j += 1;
        }
        // The pipeline as `push` leaves it: the last three records, the current one's
        // discontinuity resolved (none).
        for rec in &recs[j.saturating_sub(3)..j] {
            self.head = (self.head + 1) % 3;
            self.pipe[self.head] = Inst {
                rec: *rec,
                qualified: true,
                updiscon: false,
            };
        }
        let ic = self.ic();
        self.pipe[ic].updiscon = false;
        self.last_updiscon_flag = false;
        self.count += j as u64;
        self.stats.records += j as u64;
        j
    }

    /// End of trace: report the final instruction and send a support packet saying tracing
    /// ended. Returns the sink.
    pub fn finish(mut self) -> Result<S, EncodeError> {
        if self.count > 0 {
            // Flush the pipeline.
            let next = self.pipe[self.head];
            self.head = (self.head + 1) % 3;
            self.pipe[self.head] = next;
            if self.reference() {
                // encoder_model.py close(): the last instruction is also "next", then an
                // address packet for it whatever encode() did.
                self.encode(false)?;
                let c = self.pipe[self.ic()];
                // Its status bits use the flags of that last encode() call.
                let u = self.last_updiscon_flag;
                self.address_packet(c.rec.iaddr & self.amask, false, u, Marks::default())?;
                self.support(false, QualStatus::EndedRep)?;
            } else {
                // v2.0: the next instruction is unqualified; the algorithm reports the final
                // one (algo.png "next inst is ... unqualified"), then ended_rep / ended_ntr
                // (payload.adoc sec:qual-status).
                self.pipe[self.head] = Inst::default();
                self.last_why = Why::Other;
                self.encode(true)?;
                let q = if self.last_why == Why::PrevUpdiscon {
                    QualStatus::EndedNtr
                } else {
                    QualStatus::EndedRep
                };
                self.support(false, q)?;
            }
        } else if !self.reference() {
            self.support(false, QualStatus::EndedRep)?;
        }
        Ok(self.sink)
    }

    /// Trace was lost after the records pushed so far (a decoded trace's loss, re-encoded by
    /// `rvtrace transcode`): the last instruction is reported and tracing ends as at
    /// [`finish`](Encoder::finish) (*ended_rep* / *ended_ntr*, `payload.adoc` `sec:qual-status`),
    /// then a support packet with *qual_status* `trace_lost` ("one or more instruction trace
    /// packets lost", `sec:format33`) says why; the next record starts trace again with a
    /// synchronisation packet. The reference preset does the same (its encoder has no losses).
    pub fn lost(&mut self) -> Result<(), EncodeError> {
        self.end_tracing(false)?;
        self.support(true, QualStatus::TraceLost)?;
        self.restart();
        Ok(())
    }

    /// The next records are not qualified (a filter on privilege or address leaves them out):
    /// the final qualified instruction is reported, then a support packet, the encoder still
    /// enabled, says qualification ended (*ended_rep* / *ended_ntr*, `payload.adoc`
    /// `sec:qual-status`; `exampleAlgorithm.adoc`: "next inst is ... unqualified"); the next
    /// record pushed is traced again from a synchronisation packet (`sec:format3`: the first
    /// qualified instruction). Nothing when no record is being traced.
    pub fn unqualified(&mut self) -> Result<(), EncodeError> {
        if self.count > 0 {
            self.end_tracing(true)?;
            self.restart();
        }
        Ok(())
    }

    /// Report the final traced instruction and a support packet with *ienable* `enabled` and
    /// *qual_status* ended_rep / ended_ntr (nothing when no record was pushed).
    fn end_tracing(&mut self, enabled: bool) -> Result<(), EncodeError> {
        if self.count > 0 {
            let next = self.pipe[self.head];
            self.head = (self.head + 1) % 3;
            self.pipe[self.head] = next;
            self.pipe[self.head] = Inst::default();
            self.last_why = Why::Other;
            self.encode(true)?;
            let q = if self.last_why == Why::PrevUpdiscon {
                QualStatus::EndedNtr
            } else {
                QualStatus::EndedRep
            };
            self.support(enabled, q)?;
        }
        Ok(())
    }

    /// Start again as a new encoder does: the next record is the first traced one.
    fn restart(&mut self) {
        self.pipe = [Inst::default(); 3];
        self.head = 2;
        self.count = 0;
        self.trap_reported = false;
        self.stack.clear();
        self.pending_irreport = None;
        self.tail.clear();
        self.tail_full = false;
        self.last_why = Why::Other;
        self.last_updiscon_flag = false;
    }

    fn send(&mut self, pkt: TeInst) -> Result<(), EncodeError> {
        self.stats.packets[kind_index(&pkt)] += 1;
        self.sink.packet(&pkt)?;
        self.resync_count = self.resync_count.saturating_add(1);
        if !self.reference() && matches!(pkt, TeInst::Context { .. }) {
            // A context packet carries no branch information (rvtrace preset).
            return Ok(());
        }
        // The decoder stops at the instruction this packet reports (callers reporting an older
        // one restore the positions after it).
        self.tail.clear();
        self.tail_full = false;
        // encoder_model.py send_te_inst: every packet empties the branch map and counts towards
        // the resynchronisation period.
        self.branches = 0;
        self.branch_map = 0;
        self.pbc = 0;
        self.all_correct = true;
        self.count_mode = false;
        self.fail_now = false;
        Ok(())
    }

    fn support(&mut self, enabled: bool, q: QualStatus) -> Result<(), EncodeError> {
        // The reference encoder sends qual_status = int(qualified) of the instruction it is
        // given: 0 at the start, 1 (ended_rep) at the end.
        self.send(TeInst::Support(Support {
            ienable: enabled,
            encoder_mode: 0,
            qual_status: q,
            ioptions: self.o.to_field(self.p.options_layout),
            denable: false,
            dloss: false,
            doptions: 0,
        }))
    }

    fn is_updiscon_itype(&self, i: &Inst) -> bool {
        if !i.retired() {
            return false;
        }
        match i.itype() {
            Itype::UninferableJump3
            | Itype::UninferableCall
            | Itype::UninferableJump
            | Itype::OtherUninferableJump => true,
            // encoder_model.py: returns and co-routine swaps are not discontinuities in implicit
            // return mode (it keeps no stack).
            Itype::Return | Itype::CoroutineSwap => !self.o.implicit_return,
            // A trap return is an uninferable discontinuity (`sec:uninferable-discontinuities`).
            // The reference flow agrees: `encoder_model.py` itself leaves itype 3 out of its list,
            // but its input never contains itype 3, as `post-iss` reports `mret`/`sret` as
            // uninferable jumps (itype 6, or 14 with 4-bit itype; see the README).
            Itype::TrapReturn => true,
            _ => false,
        }
    }

    fn sync_fields(&self, i: &Inst) -> SyncFields {
        let p = &self.p;
        SyncFields {
            branch: i.itype() != Itype::TakenBranch,
            privilege: i.rec.priv_ as u64 & mask(p.privilege_width_p as u32),
            time: if p.notime_p {
                0
            } else {
                i.rec.time & mask(p.time_width_p as u32)
            },
            context: if p.nocontext_p {
                0
            } else {
                i.rec.context & mask(p.context_width_p as u32)
            },
        }
    }

    fn full(&self, addr: u64) -> u64 {
        (addr & self.amask) >> self.p.iaddress_lsb_p
    }

    /// After a format 3 subformat 0/1: reset the resync timer, the return stack, the branch
    /// predictor (then count the current branch again) and the jump target cache.
    fn after_sync(&mut self, icurr: &Inst) {
        self.resync_count = 0;
        if self.reference() {
            return;
        }
        self.stack.clear();
        self.pending_irreport = None;
        self.jtc.iter_mut().for_each(|c| *c = None);
        if self.o.branch_prediction && !self.bpred.is_empty() {
            self.bpred.iter_mut().for_each(|b| *b = BPRED_INIT);
            if icurr.is_branch() {
                let i = table_index(icurr.rec.iaddr, self.p.bpred_size_p);
                self.bpred[i] = bpred_next(self.bpred[i], icurr.itype() == Itype::TakenBranch);
            }
        }
    }

    fn start(&mut self, icurr: &Inst) -> Result<(), EncodeError> {
        self.trap_reported = false;
        let pkt = TeInst::Start {
            sync: self.sync_fields(icurr),
            address: self.full(icurr.rec.iaddr),
        };
        self.last_address = icurr.rec.iaddr;
        self.send(pkt)?;
        self.after_sync(icurr);
        Ok(())
    }

    fn trap(
        &mut self,
        icurr: &Inst,
        thaddr: bool,
        exc: &Inst,
        reported: bool,
    ) -> Result<(), EncodeError> {
        self.trap_reported = reported;
        let interrupt = exc.itype() == Itype::Interrupt;
        let ecause = exc.rec.cause & mask(self.p.ecause_width_p as u32);
        let tval = if interrupt {
            None
        } else {
            Some(exc.rec.tval & mask(self.p.iaddress_width_p as u32))
        };
        let handler = icurr.rec.iaddr & self.amask;
        let mut address = Some(self.full(handler));
        if thaddr && !self.reference() {
            let key = (interrupt, ecause);
            let known = self.tvec.iter().find(|(k, _)| *k == key).map(|e| e.1);
            if self.o.implicit_exception {
                if known == Some(handler) {
                    address = None;
                } else {
                    // rvtrace's implicit exception mode: a handler the decoder has not seen for
                    // this cause is reported by a trap packet with thaddr = 0 followed by a
                    // synchronisation packet (the form payload.adoc sec:thaddr uses when the
                    // handler is reported separately); both ends then know it.
                    self.learn(key, handler);
                    let pkt = TeInst::Trap {
                        sync: self.sync_fields(icurr),
                        ecause,
                        interrupt,
                        thaddr: false,
                        address: Some(self.full(exc.rec.iaddr)),
                        tval,
                    };
                    self.send(pkt)?;
                    return self.start(icurr);
                }
            }
            self.learn(key, handler);
        }
        let pkt = TeInst::Trap {
            sync: self.sync_fields(icurr),
            ecause,
            interrupt,
            thaddr,
            address,
            tval,
        };
        self.last_address = handler;
        self.send(pkt)?;
        self.after_sync(icurr);
        Ok(())
    }

    fn learn(&mut self, key: (bool, u64), handler: u64) {
        match self.tvec.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = handler,
            None => self.tvec.push((key, handler)),
        }
    }

    /// Report the current instruction `icurr` (the newest position) with a format 0/1/2 packet
    /// that is not about an uninferable discontinuity: before a trap, a resynchronisation or the
    /// end of tracing, an `ecall`/`ebreak`, or the branch count limit. `definite`: the next packet
    /// may not be a format 3, so the decoder must not stop tentatively (`sec:updiscon` case 3).
    fn report_here(&mut self, icurr: &Inst, definite: bool) -> Result<(), EncodeError> {
        let fail = icurr.is_branch() && !self.curr_correct;
        let addr = icurr.rec.iaddr & self.amask;
        match self.tail.len().checked_sub(1) {
            Some(t) if self.track && !self.tail_full && self.tail[t].pc == addr => {
                self.stop_at(t, definite, fail)
            }
            _ => {
                let m = Marks {
                    notify: definite && self.track,
                    ..Marks::default()
                };
                self.address_packet(addr, fail, false, m)
            }
        }
    }

    /// Record the current instruction (at `pc`; `ret`: a return taken from the stack) as a
    /// position, with the stack depth before it.
    #[inline]
    fn push_pos(&mut self, pc: u64, ret: bool) {
        if self.tail.len() < MAX_TAIL {
            self.tail.push(Pos {
                pc,
                depth: self.stack.len() as u64,
                ret,
            });
        } else {
            self.tail_full = true;
        }
    }

    /// How a packet reporting position `c` makes the decoder stop there, if it can: the decoder
    /// stops at the first position with the reported address (and, with *irreport*, depth), so
    /// `c` must be the first with its address, or with its address and depth.
    fn marks_for(&self, c: usize) -> Option<Marks> {
        let p = self.tail[c];
        let before = &self.tail[..c];
        if before.iter().all(|q| q.pc != p.pc) {
            return Some(Marks {
                notify: true,
                ..Marks::default()
            });
        }
        if before.iter().all(|q| q.pc != p.pc || q.depth != p.depth) {
            return Some(Marks {
                notify: true,
                irreport: true,
                irdepth: p.depth,
            });
        }
        None
    }

    /// Stop the decoder exactly at position `t` (rvtrace preset, implicit return). After the last
    /// packet and the last branch, the decoder's path holds no branch and no uninferable
    /// discontinuity that is not inferred, so it stops at the first position with the reported
    /// address (and depth, when reported). When an earlier position has the same address and
    /// depth (the same instruction reached at the same depth twice with no branch in between:
    /// `f(); f();`, or a recursion's returns), the decoder is first stopped at a position after
    /// the last such one that it can find (or, failing that, at the first such one, and so on):
    /// each packet carries *notify* (`sec:notify`) and, when the address alone is ambiguous, the
    /// depth in *irreport*/*irdepth* (`sec:irxx`).
    fn stop_at(&mut self, mut t: usize, definite: bool, fail: bool) -> Result<(), EncodeError> {
        loop {
            let p = self.tail[t];
            let m = self.marks_for(t);
            if let Some(mut m) = m {
                if !definite && !m.irreport {
                    // The first occurrence of its address: a plain packet (the decoder stops
                    // there tentatively, and the format 3 that follows confirms it).
                    m.notify = false;
                }
                return self.stop_packet(t, m, fail);
            }
            let first = FirstSeen::of(&self.tail);
            let same = |q: &Pos| q.pc == p.pc && q.depth == p.depth;
            let last_same = (0..t).rev().find(|&i| same(&self.tail[i])).unwrap_or(0);
            let first_same = first.key.get(&(p.pc, p.depth)).copied().unwrap_or(0);
            let c = (last_same + 1..t)
                .rev()
                .find(|&c| first.marks(&self.tail, c).is_some())
                .unwrap_or(first_same);
            let m = first.marks(&self.tail, c).unwrap_or(Marks {
                notify: true,
                irreport: true,
                irdepth: self.tail[c].depth,
            });
            self.stop_packet(c, m, false)?;
            t -= c + 1;
        }
    }

    /// Send a packet reporting position `c`; the positions after it stay.
    fn stop_packet(&mut self, c: usize, m: Marks, fail: bool) -> Result<(), EncodeError> {
        let rest = self.tail.split_off(c + 1);
        let pc = self.tail[c].pc;
        self.address_packet(pc, fail, false, m)?;
        self.tail = rest;
        Ok(())
    }

    /// The current instruction is a return at depth `d` whose target `target` is not the stack
    /// top (reported by the next packet, with *irreport* and *irdepth* = `d`). The decoder takes
    /// the first return at depth `d` after which no branch is left and whose predicted target is
    /// not the reported address as the failed one: if an inferred return since the last packet
    /// and branch fits that description, stop the decoder after it first.
    fn separate_failed_return(&mut self, ret: u64, d: u64, target: u64) -> Result<(), EncodeError> {
        let Some(t) = self.tail.len().checked_sub(1) else {
            return Ok(());
        };
        if self.tail_full || self.tail[t].pc != ret {
            // Already stopped at the return (or the stretch is too long to check).
            return Ok(());
        }
        let confusable = |e: &Self, i: usize| {
            let q = e.tail[i];
            q.ret && q.depth == d && e.tail[i + 1].pc != target
        };
        let Some(j) = (0..t).rev().find(|&i| confusable(self, i)) else {
            return Ok(());
        };
        let first = FirstSeen::of(&self.tail);
        match (j + 1..=t)
            .rev()
            .find_map(|c| Some((c, first.marks(&self.tail, c)?)))
        {
            Some((c, m)) => self.stop_packet(c, m, false),
            None => self.stop_at(t, true, false),
        }
    }

    /// A format 0/1/2 packet reporting `addr` with the branches so far. `fail`: `addr` is a
    /// branch whose prediction failed. `updiscon`: the *updiscon* flag.
    fn address_packet(
        &mut self,
        addr: u64,
        fail: bool,
        updiscon: bool,
        m: Marks,
    ) -> Result<(), EncodeError> {
        let p = self.p;
        let Marks {
            notify,
            irreport,
            irdepth,
        } = m;
        let field = if self.o.full_address {
            if self.reference() {
                // encoder_model.py AddressHandler.get: the full address is not shifted.
                addr & mask(p.address_width())
            } else {
                self.full(addr)
            }
        } else {
            (addr.wrapping_sub(self.last_address) & self.amask) >> p.iaddress_lsb_p
        };
        let msb_src = if self.o.full_address && self.reference() {
            addr >> (p.iaddress_width_p - 1)
        } else {
            field >> (p.address_width() - 1)
        };
        let fill = if self.reference() {
            IrdepthFill::Ones
        } else {
            IrdepthFill::Updiscon
        };
        let mut tail = AddrTail::from_flags(&p, field, notify, updiscon, irreport, irdepth, fill);
        if self.reference() {
            // encoder_model.py set_status_fields derives notify from the MSB of the whole
            // address (bit iaddress_width_p - 1), which in full address mode is not the field's.
            let msb = msb_src & 1 != 0;
            tail.notify = msb;
            tail.updiscon = updiscon ^ tail.notify;
            tail.irreport = tail.updiscon;
        }
        self.pending_irreport = None;
        let pkt = if !self.reference() && self.count_mode {
            TeInst::BranchCount {
                branch_count: (self.pbc - 31) as u32,
                branch_fmt: if fail { 3 } else { 2 },
                tail: Some(tail),
            }
        } else if self.branches != 0 {
            TeInst::Branch {
                branches: self.branches as u8,
                branch_map: self.branch_map,
                tail: Some(tail),
            }
        } else {
            TeInst::Addr(tail)
        };
        let pkt = self.maybe_cache(pkt, addr, &tail, irreport, irdepth);
        self.last_address = addr;
        self.send(pkt)
    }

    /// Jump target cache (`branchTrace.adoc` `sec:jump-cache`; format choice in
    /// `exampleAlgorithm.adoc` "Format selection"): every address reported by a format 0/1/2
    /// packet goes into the cache; a hit is sent as format 0 subformat 1 unless the format 1/2
    /// packet is shorter.
    fn maybe_cache(
        &mut self,
        pkt: TeInst,
        addr: u64,
        tail: &AddrTail,
        irreport: bool,
        irdepth: u64,
    ) -> TeInst {
        if self.reference() || !self.o.jump_target_cache || self.jtc.is_empty() {
            return pkt;
        }
        let i = table_index(addr, self.p.cache_size_p);
        let hit = self.jtc[i] == Some(addr);
        self.jtc[i] = Some(addr);
        if !hit
            || tail.notify_flag(&self.p)
            || tail.updiscon_flag()
            || matches!(pkt, TeInst::BranchCount { .. })
        {
            return pkt;
        }
        let (branches, branch_map) = match pkt {
            TeInst::Branch {
                branches,
                branch_map,
                ..
            } => (branches, branch_map),
            _ => (0, 0),
        };
        let w = branch_map_width_f0s1(branches);
        let msb = if branches == 0 {
            false
        } else {
            (branch_map >> (w - 1)) & 1 != 0
        };
        let dw = self.p.irdepth_width();
        let alt = TeInst::JumpTargetIndex {
            index: i as u64,
            branches,
            branch_map,
            irreport: irreport ^ msb,
            irdepth: if irreport {
                irdepth & mask(dw)
            } else if msb {
                mask(dw)
            } else {
                0
            },
        };
        let len = |t: &TeInst| {
            t.to_bits(&self.p, self.o)
                .map(|b| {
                    let mut out = [0u8; crate::codec::bits::MAX_PAYLOAD];
                    b.compress(&mut out)
                })
                .unwrap_or(usize::MAX)
        };
        if len(&alt) <= len(&pkt) {
            alt
        } else {
            pkt
        }
    }

    /// Add the current branch to the branch map / predictor (`algo.png` "Update branch
    /// map/predictor").
    fn update_branch(&mut self, icurr: &Record) {
        let taken = icurr.itype == Itype::TakenBranch;
        self.curr_correct = true;
        if !self.reference() && self.o.branch_prediction && !self.bpred.is_empty() {
            let i = table_index(icurr.iaddr, self.p.bpred_size_p);
            let predicted = self.bpred[i] & 2 != 0;
            self.bpred[i] = bpred_next(self.bpred[i], taken);
            let correct = predicted == taken;
            self.curr_correct = correct;
            if self.count_mode {
                if correct {
                    self.pbc += 1;
                } else {
                    self.fail_now = true;
                }
                return;
            }
            if correct && self.all_correct {
                self.pbc += 1;
            } else {
                self.all_correct = false;
            }
        }
        self.branch_map |= (!taken as u32) << self.branches;
        self.branches += 1;
        if self.all_correct
            && self.branches == 31
            && self.pbc == 31
            && !self.reference()
            && self.o.branch_prediction
        {
            // All 31 predicted correctly: count instead of sending a map (format 0 subformat 0).
            self.count_mode = true;
            self.branches = 0;
            self.branch_map = 0;
        }
    }

    /// Fast path: an instruction that cannot cause a packet (algo.png takes no rectangle but
    /// "Update branch map/predictor"): a plain retired instruction, inferable jump that is not a
    /// call, or branch that does not fill the branch map, after a plain one, with no privilege
    /// or context change around it, no trap next and the resync timer not due.
    #[inline]
    fn fast(&self, last: bool) -> bool {
        let iprev = &self.pipe[self.ip()];
        let icurr = &self.pipe[self.ic()];
        let inext = &self.pipe[self.head];
        self.fast_path
            && !last
            && icurr.qualified
            && iprev.qualified
            && self.prev_allows_fast(iprev)
            && icurr.rec.priv_ == iprev.rec.priv_
            && icurr.rec.context == iprev.rec.context
            && self.resync_count < self.resync_max
            && self.pending_irreport.is_none()
            && self.quick(&icurr.rec, &inext.rec)
    }

    /// The previous instruction's part of [`fast`](Self::fast): no trap, no uninferable
    /// discontinuity whose target is reported.
    #[inline(always)]
    fn prev_allows_fast(&self, iprev: &Inst) -> bool {
        !iprev.is_exception()
            && if self.reference() {
                !self.is_updiscon_itype(iprev)
            } else {
                !iprev.updiscon
            }
    }

    /// The current (`c`) and next (`x`) instructions' part of [`fast`](Self::fast). Nothing in
    /// `encode` sends a packet then: no trap (current or next), no privilege or context change
    /// (ppccd, cci), no discontinuity, and a branch leaves at most 30 in the map outside
    /// counting mode (31 would send a full map, `rpt_br`, or start counting).
    #[inline(always)]
    fn quick(&self, c: &Record, x: &Record) -> bool {
        let kind_ok = match c.itype {
            Itype::None | Itype::InferableJump | Itype::OtherInferableJump => true,
            Itype::TakenBranch | Itype::NonTakenBranch => !self.count_mode && self.branches < 30,
            _ => false,
        };
        kind_ok
            && c.iretire != 0
            && !matches!(x.itype, Itype::Exception | Itype::Interrupt)
            && x.priv_ == c.priv_
            && x.context == c.context
    }

    /// The fast path's effect of the current instruction `c`: a branch goes into the branch map
    /// (and the decoder cannot stop before it); the instruction is a position the decoder may
    /// stop at (implicit return).
    #[inline(always)]
    fn quick_step(&mut self, c: &Record) {
        let branch = matches!(c.itype, Itype::TakenBranch | Itype::NonTakenBranch);
        if branch {
            self.update_branch(c);
        }
        if self.track {
            if branch {
                self.tail.clear();
                self.tail_full = false;
            }
            self.push_pos(c.iaddr & self.amask, false);
        }
    }

    #[inline]
    fn ip(&self) -> usize {
        (self.head + 1) % 3
    }

    #[inline]
    fn ic(&self) -> usize {
        (self.head + 2) % 3
    }

    /// One cycle of the algorithm for the current instruction (`encoder_model.py` `encode`,
    /// `algo.png`). `last`: the next instruction is unqualified (end of trace, rvtrace preset).
    fn encode(&mut self, last: bool) -> Result<(), EncodeError> {
        let r = self.reference();
        let (ip, ic) = (self.ip(), self.ic());
        if self.fast(last) {
            let c = self.pipe[ic].rec;
            self.quick_step(&c);
            self.pipe[ic].updiscon = false;
            self.last_updiscon_flag = false;
            return Ok(());
        }
        let iprev = self.pipe[ip];
        let icurr = self.pipe[ic];
        let inext = self.pipe[self.head];
        if !icurr.qualified {
            return Ok(());
        }
        if icurr.is_branch() {
            self.update_branch(&icurr.rec);
        }
        // The current instruction's discontinuity status with the stack as it is now (a sync
        // packet at this instruction would clear the stack; that is applied after the packet).
        let prov = if r {
            Resolved {
                upd: self.is_updiscon_itype(&icurr),
                ..Resolved::default()
            }
        } else {
            self.resolve_updiscon(&icurr, &inext, false)
        };
        if self.track && icurr.retired() {
            if icurr.is_branch() {
                // The decoder cannot stop before the last branch.
                self.tail.clear();
                self.tail_full = false;
            }
            self.push_pos(icurr.rec.iaddr & self.amask, prov.popped);
        }
        let curr_updiscon = prov.upd;
        let prev_updiscon = if r {
            self.is_updiscon_itype(&iprev)
        } else {
            iprev.updiscon
        };
        let next_exception = inext.is_exception();
        let next_exc_only = inext.exc_only();
        let prev_exception = iprev.is_exception();
        let curr_exc_only = icurr.exc_only();
        let curr_exception = icurr.is_exception();
        let prev_reported = prev_exception && self.trap_reported;
        self.trap_reported = false;
        let first_qualified = !iprev.qualified;
        // Precise context change (ctype 2; rvtrace also treats 3, "asynchronous discontinuity",
        // this way), or a context change at an uninferable discontinuity.
        let ctx_change = |a: &Inst, b: &Inst, upd: bool| {
            a.rec.context != b.rec.context && (a.rec.ctype == 2 || (!r && a.rec.ctype == 3) || upd)
        };
        // A trap that retired nothing is not an instruction: it cannot be the start of a
        // synchronisation (rvtrace preset; the reference encoder would report it with a format
        // 3 subformat 0 as if it had retired).
        let ppccd = (r || icurr.retired())
            && (icurr.rec.priv_ != iprev.rec.priv_ || ctx_change(&icurr, &iprev, prev_updiscon));
        let next_ppccd = inext.qualified
            && (inext.rec.priv_ != icurr.rec.priv_ || ctx_change(&inext, &icurr, curr_updiscon));
        let ppccd_br = (self.branches != 0 || self.count_mode) && next_ppccd;
        let resync_now = self.resync_count == self.resync_max;
        let updiscon = prev_updiscon
            && (next_exception
                || (if r {
                    inext.rec.priv_ != icurr.rec.priv_
                } else {
                    next_ppccd
                })
                || resync_now);
        let er_n = icurr.retired() && curr_exception;
        let cci = icurr.rec.context != iprev.rec.context && icurr.rec.ctype == 1;
        // rvtrace also reports the instruction before a resync when the next one occurred
        // earlier since the last packet and branch (implicit return: the same instruction at
        // another depth), so that the format 3 is reached at the right occurrence.
        let resync_br = resync_now
            && (self.branches != 0
                || self.count_mode
                || (self.track
                    && icurr.retired()
                    && (self.tail_full || self.tail.len() > RESYNC_SEARCH || {
                        let next = inext.rec.iaddr & self.amask;
                        self.tail.iter().any(|q| q.pc == next)
                    })));
        let rpt_br =
            (self.branches == 31 && !self.count_mode) || (self.count_mode && self.fail_now);
        let resync_exceeded = self.resync_count > self.resync_max && (r || icurr.retired());
        let max_count = self.count_mode && self.pbc - 31 == 0xffff_ffff;

        'decide: {
            if prev_exception {
                if curr_exc_only {
                    let rep = prev_updiscon || next_exception;
                    self.trap(&icurr, false, &iprev, rep)?;
                } else if prev_reported {
                    // This sync packet gives the handler of the trap reported with thaddr = 0
                    // (payload.adoc sec:thaddr); the decoder keeps it for the cause (implicit
                    // exception mode), and so must the encoder, or the two tables part.
                    let interrupt = iprev.itype() == Itype::Interrupt;
                    let ecause = iprev.rec.cause & mask(self.p.ecause_width_p as u32);
                    self.learn((interrupt, ecause), icurr.rec.iaddr & self.amask);
                    self.start(&icurr)?;
                } else {
                    self.trap(&icurr, true, &iprev, false)?;
                }
                self.last_why = Why::Other;
                break 'decide;
            }
            if !r && first_qualified && curr_exc_only {
                // v2.0 sec:thaddr: an exception on the first traced instruction is reported
                // with thaddr = 0 and address = EPC; the handler follows in a sync packet.
                self.trap(&icurr, false, &icurr, true)?;
                self.last_why = Why::Other;
                break 'decide;
            }
            let defer_resync = !r && self.pending_irreport.is_some() && prev_updiscon;
            if first_qualified || ppccd || (resync_exceeded && !defer_resync) {
                self.start(&icurr)?;
                self.last_why = Why::Other;
                break 'decide;
            }
            if prev_updiscon {
                if curr_exc_only {
                    self.trap(&icurr, false, &icurr, true)?;
                } else {
                    // The target of an uninferable discontinuity; after a return that failed
                    // its prediction, with its depth (sec:irxx).
                    let m = match self.pending_irreport {
                        Some(d) if !r => Marks {
                            notify: false,
                            irreport: true,
                            irdepth: d,
                        },
                        _ => Marks::default(),
                    };
                    let fail = icurr.is_branch() && !self.curr_correct;
                    self.address_packet(icurr.rec.iaddr & self.amask, fail, updiscon, m)?;
                }
                self.last_why = Why::PrevUpdiscon;
                break 'decide;
            }
            if !r && last && curr_exc_only {
                // Tracing ends at a trap that retired nothing: the previous packet reported the
                // last retired instruction; report the trap (its handler is not traced).
                self.trap(&icurr, false, &icurr, true)?;
                self.last_why = Why::Other;
                break 'decide;
            }
            if resync_br || er_n || (!r && max_count) {
                // After the branch count limit the next packet is not a format 3: no
                // tentative stop.
                let definite = !resync_br && !er_n;
                self.report_here(&icurr, definite)?;
                self.last_why = Why::Other;
                break 'decide;
            }
            if next_exc_only || ppccd_br || (!r && last) {
                self.report_here(&icurr, false)?;
                self.last_why = Why::Other;
                break 'decide;
            }
            if rpt_br {
                if self.count_mode {
                    let pkt = TeInst::BranchCount {
                        branch_count: (self.pbc - 31) as u32,
                        branch_fmt: 0,
                        tail: None,
                    };
                    self.send(pkt)?;
                } else {
                    let pkt = TeInst::Branch {
                        branches: 0,
                        branch_map: self.branch_map,
                        tail: None,
                    };
                    self.send(pkt)?;
                }
            }
            if cci && !r {
                let s = self.sync_fields(&icurr);
                self.send(TeInst::Context {
                    privilege: s.privilege,
                    time: s.time,
                    context: s.context,
                })?;
            }
        }
        self.last_updiscon_flag = updiscon;
        if !r {
            if let (Some(d), true) = (prov.mispredict, self.track) {
                // Unless a packet already stopped the decoder at this return.
                let ret = icurr.rec.iaddr & self.amask;
                self.separate_failed_return(ret, d, inext.rec.iaddr & self.amask)?;
            }
            // After any sync packet (which reset the stack), the current instruction's own
            // effects.
            let res = self.resolve_updiscon(&icurr, &inext, true);
            self.pipe[ic].updiscon = res.upd;
        }
        Ok(())
    }

    /// Whether the current instruction is an uninferable discontinuity for the decoder (rvtrace
    /// preset), and whether it is a return inferred from the stack. With `apply`, also apply its
    /// effects on the return address stack (`decoder.adoc` `next_pc` order: sequentially
    /// inferable jump, implicit return, uninferable; then push for calls).
    fn resolve_updiscon(&mut self, icurr: &Inst, inext: &Inst, apply: bool) -> Resolved {
        if !icurr.retired() {
            return Resolved::default();
        }
        let it = icurr.itype();
        let uninferable = matches!(
            it,
            Itype::UninferableJump3
                | Itype::UninferableCall
                | Itype::UninferableJump
                | Itype::CoroutineSwap
                | Itype::Return
                | Itype::OtherUninferableJump
        );
        let mut upd = false;
        let mut mispredict = None;
        let mut popped = false;
        if uninferable {
            let iprev = &self.pipe[self.ip()];
            let sij = self.o.sijump
                && icurr.rec.sijump
                && iprev.qualified
                && iprev.retired()
                && !iprev.is_exception()
                && iprev.rec.next_iaddr() == icurr.rec.iaddr;
            if sij {
                upd = false;
            } else if it == Itype::Return && self.o.implicit_return && !self.stack.is_empty() {
                let target = inext.rec.iaddr & self.amask;
                let top = *self.stack.last().unwrap_or(&0);
                let depth = self.stack.len() as u64;
                popped = true;
                if top != target && inext.qualified {
                    upd = true;
                    mispredict = Some(depth);
                }
                if apply {
                    if mispredict.is_some() {
                        self.pending_irreport = mispredict;
                    }
                    self.stack.pop();
                }
            } else {
                upd = true;
            }
        } else if it == Itype::TrapReturn {
            upd = true;
        }
        if apply
            && matches!(it, Itype::UninferableCall | Itype::InferableCall)
            && self.o.implicit_return
            && self.stack_max > 0
        {
            if self.stack.len() >= self.stack_max {
                self.stack.remove(0);
            }
            self.stack.push(icurr.rec.next_iaddr() & self.amask);
        }
        Resolved {
            upd,
            mispredict,
            popped,
        }
    }
}

/// Frames packets onto a byte stream (`te_inst_raw` or `etrace-encap`), counting sizes.
pub struct FrameWriter<W: std::io::Write> {
    w: W,
    params: Params,
    options: IOptions,
    encap: crate::codec::EncapConfig,
    flow: u8,
    srcid: u16,
    /// Bytes written (headers included).
    pub bytes: u64,
    /// Payload bytes written (the `te_inst` payloads, without encapsulation).
    pub payload_bytes: u64,
    /// Packets written.
    pub packets: u64,
}

impl<W: std::io::Write> FrameWriter<W> {
    /// A writer of packets laid out per `cfg` to `w`.
    pub fn new(w: W, cfg: &TraceConfig) -> Self {
        let (encap, flow) = match cfg.framing {
            crate::codec::Framing::Raw => (
                crate::codec::EncapConfig::TE_INST_RAW,
                crate::codec::encap::RAW_TE_INST,
            ),
            // SMI, as te_inst_raw, says te_inst in the flow bits.
            crate::codec::Framing::Encap(e) if e.header == crate::codec::Header::Smi => {
                (e, crate::codec::encap::RAW_TE_INST)
            }
            crate::codec::Framing::Encap(e) => (e, 0),
        };
        FrameWriter {
            w,
            params: cfg.params,
            options: cfg.options,
            encap,
            flow,
            srcid: cfg.srcid.unwrap_or(0),
            bytes: 0,
            payload_bytes: 0,
            packets: 0,
        }
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

impl<W: std::io::Write> PacketSink for FrameWriter<W> {
    fn packet(&mut self, p: &TeInst) -> Result<(), EncodeError> {
        if let TeInst::Support(s) = p {
            self.options = IOptions::from_field(s.ioptions, self.params.options_layout);
        }
        let mut payload = [0u8; crate::codec::bits::MAX_PAYLOAD];
        let n = p
            .encode(&self.params, self.options, &mut payload)
            .map_err(|e| EncodeError::packet(p, &self.params, e))?;
        let mut out = [0u8; crate::codec::encap::MAX_PACKET];
        let fields = crate::codec::FrameFields {
            flow: self.flow,
            srcid: self.srcid,
            ptype: self.encap.te_inst_type,
            // The ESP32-C6 header's index: the packet's number (see `codec::encap`).
            index: self.packets as u16,
            ..Default::default()
        };
        let len = crate::codec::write_frame(&payload[..n], &fields, &self.encap, &mut out)
            .map_err(|e| EncodeError::packet(p, &self.params, e))?;
        self.w.write_all(&out[..len]).map_err(EncodeError::Io)?;
        self.bytes += len as u64;
        self.payload_bytes += n as u64;
        self.packets += 1;
        Ok(())
    }
}

/// Encode a whole record sequence with `cfg`: the trace's bytes, framed as `cfg` says (as
/// `rvtrace encode etrace` writes them).
pub fn encode(cfg: &TraceConfig, records: &[Record]) -> Result<Vec<u8>, EncodeError> {
    let mut e = Encoder::new(cfg, FrameWriter::new(Vec::new(), cfg))?;
    e.push_all(records)?;
    Ok(e.finish()?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInputs;
    use rvtrace_testkit::records::{random_pieces, random_records};

    fn configs() -> Vec<TraceConfig> {
        let d = ConfigInputs::default();
        let sets = [
            d.clone(),
            ConfigInputs {
                preset: Preset::Reference,
                ..d.clone()
            },
            ConfigInputs {
                implicit_return: true,
                ..d.clone()
            },
            ConfigInputs {
                implicit_return: true,
                return_stack: Some(8),
                sijump: true,
                implicit_exception: true,
                ..d.clone()
            },
            ConfigInputs {
                branch_prediction: Some(16),
                ..d.clone()
            },
            ConfigInputs {
                branch_prediction: Some(64),
                jump_target_cache: Some(16),
                implicit_return: true,
                resync: Some(40),
                ..d.clone()
            },
            ConfigInputs {
                resync: Some(16),
                full_address: true,
                timestamps: true,
                ..d.clone()
            },
        ];
        sets.iter()
            .map(|i| {
                TraceConfig::build(&ConfigInputs {
                    xlen_bits: 64,
                    ..i.clone()
                })
                .unwrap()
            })
            .collect()
    }

    /// The packets of `recs` in `pieces` (a trace loss after the pieces marked so), pushed
    /// one by one or (`all`) with `push_all`, with or without the fast path.
    fn encode(
        cfg: &TraceConfig,
        pieces: &[(&[Record], bool)],
        fast: bool,
        all: bool,
    ) -> (Vec<TeInst>, u64) {
        let mut e = Encoder::new(cfg, Vec::new()).unwrap();
        e.fast_path = fast;
        for &(piece, lost) in pieces {
            if all {
                e.push_all(piece).unwrap();
            } else {
                for r in piece {
                    e.push(r).unwrap();
                }
            }
            if lost {
                e.lost().unwrap();
            }
        }
        let records = e.stats.records;
        (e.finish().unwrap(), records)
    }

    /// The fast paths (`push`'s, and `push_all`'s runs) give the packets of the algorithm without
    /// them, on random record streams cut at random places (with trace losses now and then).
    #[test]
    fn fast_paths_equal_the_algorithm() {
        for seed in 1..=12u64 {
            let recs = random_records(seed, 6000, seed % 2 == 0);
            let pieces = random_pieces(&recs, seed + 99);
            for (k, cfg) in configs().iter().enumerate() {
                let (slow, n) = encode(cfg, &pieces, false, false);
                assert_eq!(n, recs.len() as u64);
                let kinds = slow.iter().map(kind_index).fold(0u8, |m, i| m | 1 << i);
                // Branch maps, traps and syncs at least.
                assert!(
                    kinds & 0b11_0100 == 0b11_0100,
                    "seed {seed} config {k}: {kinds:b}"
                );
                let one = encode(cfg, &pieces, true, false);
                assert!(one.0 == slow, "seed {seed} config {k}: push");
                let all = encode(cfg, &pieces, true, true);
                assert!(all.0 == slow, "seed {seed} config {k}: push_all");
                assert_eq!(all.1, n);
            }
        }
    }

    /// `push_all` takes its runs on a stream of plain instructions and branches: the records
    /// left to `push` are few.
    #[test]
    fn push_all_runs_cover_the_common_records() {
        let recs: Vec<Record> = random_records(5, 20_000, false)
            .into_iter()
            .filter(|r| matches!(r.itype, Itype::None | Itype::NonTakenBranch))
            .collect();
        let cfg = &configs()[0];
        let mut e = Encoder::new(cfg, Vec::new()).unwrap();
        let mut fast = 0;
        let mut i = 0;
        while i < recs.len() {
            let n = e.run_fast(&recs[i..]);
            fast += n;
            i += n;
            if let Some(r) = recs.get(i) {
                e.push(r).unwrap();
                i += 1;
            }
        }
        assert!(fast * 10 > recs.len() * 9, "{fast} of {}", recs.len());
    }
}
