//! The E-Trace instruction trace decoder: `decoder.adoc` ("Decoder pseudo code"), extended to the
//! optional modes of `branchTrace.adoc` (implicit return with a call counter or a return address
//! stack, sequentially inferable jumps, branch prediction, jump target cache, implicit exception),
//! with resynchronisation after lost or malformed packets.
//!
//! The decoder walks the program one basic block at a time ([`crate::code::Code`]) and reports
//! what executed as [`FlowElement`]s. Where this decoder departs from the pseudo code it says so
//! in a comment; the crate README lists the choices shared with rvtrace's encoder.

use rvtrace_flow::walk::{Cursor, SequentialJumps, WalkError};
use rvtrace_flow::{FlowElement, FlowSink, LossReason, SyncReason, TraceDecoder};
use rvtrace_image::Image;
use rvtrace_isa::{CfClass, IsaConfig};

use crate::code::{Code, Ent};
use crate::codec::bits::mask;
use crate::codec::encap::MAX_PACKET;
use crate::codec::te_inst::{QualStatus, SyncFields};
use crate::codec::{CodecError, EncapConfig, Item, PacketReader, TeInst};
use crate::config::{Framing, Preset, TraceConfig};
use crate::params::{IOptions, Params};
use crate::predict::{bpred_next, table_index, BPRED_INIT};

/// What went wrong while following the program (the packet stream and the program disagree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The path reached an address outside the program's executable segments.
    Unmapped(u64),
    /// The path reached an invalid instruction.
    BadInstruction(u64),
    /// A branch was reached with no taken/not-taken information left.
    NoBranchInfo(u64),
    /// An uninferable jump was reached while the packet had no address (`decoder.adoc`:
    /// "unexpected uninferable discontinuity").
    UnexpectedDiscontinuity(u64),
    /// The packet's address was reached by an uninferable jump with branches left unprocessed.
    UnprocessedBranches(u64),
    /// A jump target cache index with no valid entry.
    EmptyCacheEntry(u64),
    /// An implicit exception whose handler address was never reported.
    UnknownHandler {
        /// Interrupt (true) or exception.
        interrupt: bool,
        /// *ecause*.
        ecause: u64,
    },
    /// Too many branches pending (more than 64).
    BranchOverflow,
    /// The path ran too long without consuming trace information (garbage input).
    Runaway(u64),
    /// A Zcmt table jump (its target needs the jump table).
    TableJump(u64),
    /// A packet that cannot occur in the decoder's state.
    Unexpected(&'static str),
    /// A packet that does not decode.
    Codec(CodecError),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Unmapped(a) => write!(f, "execution path left the program at {a:#x}"),
            DecodeError::BadInstruction(a) => write!(f, "invalid instruction at {a:#x}"),
            DecodeError::NoBranchInfo(a) => write!(f, "cannot resolve the branch at {a:#x}"),
            DecodeError::UnexpectedDiscontinuity(a) => {
                write!(f, "unexpected uninferable discontinuity at {a:#x}")
            }
            DecodeError::UnprocessedBranches(a) => {
                write!(f, "unprocessed branches on reaching {a:#x}")
            }
            DecodeError::EmptyCacheEntry(i) => write!(f, "jump target cache entry {i} is empty"),
            DecodeError::UnknownHandler { interrupt, ecause } => write!(
                f,
                "unknown trap handler for {} {ecause} (implicit exception)",
                if *interrupt { "interrupt" } else { "exception" }
            ),
            DecodeError::BranchOverflow => f.write_str("too many unprocessed branches"),
            DecodeError::Runaway(a) => write!(f, "execution path does not end (at {a:#x})"),
            DecodeError::TableJump(a) => write!(f, "table jump at {a:#x} is not supported"),
            DecodeError::Unexpected(m) => f.write_str(m),
            DecodeError::Codec(e) => write!(f, "malformed packet: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<WalkError> for DecodeError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Unmapped(a) => DecodeError::Unmapped(a),
            WalkError::BadInstruction(a) => DecodeError::BadInstruction(a),
        }
    }
}

impl DecodeError {
    /// The loss this error is: a packet that does not decode is malformed (a truncated one at
    /// the end of the data: the end is lost); the rest are disagreements between the trace and
    /// the program (or the decoder's settings).
    pub fn loss_reason(&self) -> LossReason {
        let text = self.to_string();
        match self {
            DecodeError::Codec(CodecError::Truncated { .. }) => LossReason::EndLost(text),
            DecodeError::Codec(_) => LossReason::Malformed(text),
            _ => LossReason::Mismatch(text),
        }
    }
}

/// The fields of the packet being followed that the stop conditions look at.
#[derive(Clone, Copy, Debug, Default)]
struct Ctx {
    /// A format 3 packet.
    sync: bool,
    notify: bool,
    updiscon: bool,
    irreport: bool,
    irdepth: u64,
    privilege: u64,
}

/// A trap whose handler is reported by a later packet (F3 SF1 with *thaddr* = 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PendingTrap {
    ecause: u64,
    interrupt: bool,
    tval: Option<u64>,
    epc: Option<u64>,
    /// The *address* of the thaddr = 0 packet (the EPC of a trap that follows immediately).
    address: Option<u64>,
}

/// Decoder statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// `te_inst` packets processed.
    pub packets: u64,
    /// Instructions reported.
    pub instructions: u64,
    /// Errors (lost or malformed packets, or disagreements with the program).
    pub errors: u64,
}

/// Limits that keep garbage input from running long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most jumps followed without consuming any branch or reaching the packet's address.
    pub max_jumps_per_packet: u64,
    /// Most instructions reported for one packet (`u64::MAX`: no limit).
    pub max_insns_per_packet: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_jumps_per_packet: 1 << 22,
            max_insns_per_packet: u64::MAX,
        }
    }
}

/// One segment of pending branch outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BSeg {
    /// Explicit outcomes, oldest in bit 0 (0 = taken).
    Map {
        /// The bits.
        bits: u64,
        /// How many.
        n: u32,
    },
    /// This many branches predicted correctly.
    Pred(u64),
    /// One branch whose prediction failed.
    Fail,
}

/// Branch outcomes not yet consumed, oldest first.
#[derive(Clone, Copy, Debug)]
struct BranchQueue {
    segs: [BSeg; 8],
    head: usize,
    len: usize,
    total: u64,
}

impl Default for BranchQueue {
    fn default() -> Self {
        BranchQueue {
            segs: [BSeg::Fail; 8],
            head: 0,
            len: 0,
            total: 0,
        }
    }
}

/// Two queues are equal when the same outcomes wait (wherever they sit in the ring).
impl PartialEq for BranchQueue {
    fn eq(&self, other: &Self) -> bool {
        self.live() == other.live()
    }
}

impl BranchQueue {
    /// The outcomes waiting, oldest first (for comparing states).
    fn live(&self) -> Vec<BSeg> {
        (0..self.len)
            .map(|k| self.segs[(self.head + k) % self.segs.len()])
            .collect()
    }

    fn clear(&mut self) {
        self.len = 0;
        self.total = 0;
    }

    #[inline]
    fn front(&self) -> Option<&BSeg> {
        (self.len > 0).then(|| &self.segs[self.head])
    }

    fn back_mut(&mut self) -> Option<&mut BSeg> {
        if self.len == 0 {
            return None;
        }
        let i = (self.head + self.len - 1) % self.segs.len();
        Some(&mut self.segs[i])
    }

    fn push(&mut self, s: BSeg) -> Result<(), DecodeError> {
        if self.len == self.segs.len() {
            return Err(DecodeError::BranchOverflow);
        }
        let i = (self.head + self.len) % self.segs.len();
        self.segs[i] = s;
        self.len += 1;
        Ok(())
    }

    fn push_map(&mut self, bits: u64, n: u32) -> Result<(), DecodeError> {
        if n == 0 {
            return Ok(());
        }
        let bits = bits & mask(n);
        if let Some(BSeg::Map { bits: b, n: m }) = self.back_mut() {
            if *m + n <= 64 {
                *b |= bits << *m;
                *m += n;
                self.total += n as u64;
                return Ok(());
            }
        }
        self.push(BSeg::Map { bits, n })?;
        self.total += n as u64;
        Ok(())
    }

    fn push_pred(&mut self, n: u64) -> Result<(), DecodeError> {
        if n == 0 {
            return Ok(());
        }
        if let Some(BSeg::Pred(m)) = self.back_mut() {
            *m += n;
        } else {
            self.push(BSeg::Pred(n))?;
        }
        self.total += n;
        Ok(())
    }

    fn push_fail(&mut self) -> Result<(), DecodeError> {
        self.push(BSeg::Fail)?;
        self.total += 1;
        Ok(())
    }

    fn pop_front(&mut self) {
        self.head = (self.head + 1) % self.segs.len();
        self.len -= 1;
    }

    /// Consume the oldest outcome; `predicted` is the predictor's guess for this branch.
    #[inline]
    fn take(&mut self, predicted: bool) -> Option<bool> {
        if self.len == 0 {
            return None;
        }
        self.total -= 1;
        let s = &mut self.segs[self.head];
        let taken = match s {
            BSeg::Map { bits, n } => {
                let t = *bits & 1 == 0;
                *bits >>= 1;
                *n -= 1;
                if *n == 0 {
                    self.pop_front();
                }
                t
            }
            BSeg::Pred(n) => {
                *n -= 1;
                if *n == 0 {
                    self.pop_front();
                }
                predicted
            }
            BSeg::Fail => {
                self.pop_front();
                !predicted
            }
        };
        Some(taken)
    }
}

/// Everything the E-Trace decoder is told: what the trace does not carry (the packet layout,
/// the starting run-time options, the framing), the ISA of the traced hart, and where the decoder
/// follows the reference flow instead of the specification ([`DecoderOptions::reference_flow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderOptions {
    /// Packet layout (discovery parameters).
    pub params: Params,
    /// Run-time options at the start (support packets replace them).
    pub options: IOptions,
    /// How packets are framed in the byte stream.
    pub framing: Framing,
    /// ISA of the traced hart (XLEN, Zcmp, Zcmt) for the block table.
    pub isa: IsaConfig,
    /// Resource limits.
    pub limits: Limits,
    /// Keep the return address stack across synchronisation packets (the reference flow's
    /// encoder in implicit return mode never reports a return, even after a resync; see the
    /// crate README). Off by default (`decoder.adoc` empties it at every sync).
    pub keep_stack_across_syncs: bool,
    /// Classify `c.jr x5` as the reference flow's `post-iss` does (an other uninferable jump,
    /// see [`Decoder::reference_x5_jumps`]). Off by default.
    pub reference_x5_jumps: bool,
    /// Decode only the packets of this *srcID* (the encapsulation's source field,
    /// `e-trace-specifics.adoc`: one hart of a trace of several; [`crate::scan::sources`] lists
    /// them); `None`: every packet (a single source).
    pub src: Option<u16>,
}

impl DecoderOptions {
    /// The specification's decoder for a trace laid out per `params`, starting with `options`,
    /// framed as `framing`, of a hart with `isa`.
    pub fn new(params: Params, options: IOptions, framing: Framing, isa: IsaConfig) -> Self {
        DecoderOptions {
            params,
            options,
            framing,
            isa,
            limits: Limits::default(),
            keep_stack_across_syncs: false,
            reference_x5_jumps: false,
            src: None,
        }
    }

    /// The decoder for traces made with `cfg` (as `rvtrace encode etrace` makes them): its
    /// parameters, options and framing, and the reference flow's quirks when `cfg.preset` is
    /// [`Preset::Reference`].
    pub fn from_config(cfg: &TraceConfig, isa: IsaConfig) -> Self {
        let o = DecoderOptions {
            src: cfg.srcid,
            ..DecoderOptions::new(cfg.params, cfg.options, cfg.framing, isa)
        };
        match cfg.preset {
            Preset::Reference => o.reference_flow(),
            Preset::Rvtrace => o,
        }
    }

    /// The reference flow's decoder quirks (`--preset reference`): the return address stack is
    /// kept across synchronisation packets and `c.jr x5` is an other uninferable jump.
    pub const fn reference_flow(mut self) -> Self {
        self.keep_stack_across_syncs = true;
        self.reference_x5_jumps = true;
        self
    }
}

/// Entries the decoder's return address stack keeps (the encoder's: `return_stack_size_p`, or
/// the call counter's range).
fn stack_max(p: &Params) -> usize {
    if p.return_stack_size_p > 0 {
        1 << p.return_stack_size_p
    } else if p.call_counter_size_p > 0 {
        (1usize << p.call_counter_size_p.min(24)) - 1
    } else {
        // Implicit return without a stack or counter size: the reference flow's encoder in
        // implicit return mode never reports returns (it keeps no stack), so the decoder's
        // stack must not lose entries.
        usize::MAX
    }
}

/// Bytes waiting to be split into packets ([`TraceDecoder::push`]).
#[derive(Clone, Debug)]
struct Stream {
    encap: EncapConfig,
    raw: bool,
    /// Only this *srcID*'s packets ([`DecoderOptions::src`]).
    src: Option<u16>,
    /// Bytes from `base` on not yet given to the decoder (at most one window).
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// The packet reader's run-time options at `base` (support packets change them).
    options: IOptions,
}

/// Bytes gathered before packets are read out of them (a packet that may run past the bytes
/// given so far waits for more).
const WINDOW: usize = 1 << 16;

/// The decoder's state between packets, but for the walk (`Decoder::cur`), the framing and
/// the counts: [`ChunkState`] is a normalized copy of it (no field-by-field copy to keep in
/// step).
#[derive(Clone, Debug, PartialEq)]
struct Progress {
    /// The run-time options in force (support packets change them).
    options: IOptions,
    // decoder.adoc globals.
    /// decoder.adoc `branches`/`branch_map`, generalised to the outcomes of format 0
    /// subformat 0 (counts of correctly predicted branches, then maybe one mispredicted).
    bq: BranchQueue,
    stop_at_last_branch: bool,
    inferred_address: bool,
    start_of_trace: bool,
    address: u64,
    privilege: u64,
    context: u64,
    bpred: Vec<u8>,
    jtc: Vec<Option<u64>>,
    tvec: Vec<((bool, u64), u64)>,
    pending_trap: Option<PendingTrap>,
    /// Offset of the first packet skipped while waiting for the first sync packet.
    skipped_from: Option<u64>,
    /// Tracing ended (a support packet with *qual_status* ended, or [`Decoder::finish`]).
    ended: bool,
    /// A support packet enabled tracing (`payload.adoc` `sec:format33`: one must be issued when
    /// trace is enabled, before the first sync packet), or the gap before this point was
    /// already reported as a loss.
    enabled: bool,
    /// A loss was reported and the decoder waits for a sync packet: what is skipped until then
    /// belongs to that loss.
    recovering: bool,
    /// A synchronisation packet was decoded.
    synced_ever: bool,
    /// Errors not reported yet: offset of the first, the first, how many.
    error_run: Option<(u64, CodecError, u64)>,
    /// The sink asked to stop ([`FlowSink::stop_requested`]).
    stopped: bool,
    /// Chunked decode: whether losses came before and the handlers learnt before are guesses
    /// (unknown at a chunk's start until the stitch fills them in).
    guessing: bool,
}

impl Progress {
    /// The state at the start of a trace laid out per `params`, with run-time `options`.
    fn new(params: &Params, options: IOptions) -> Self {
        Progress {
            options,
            bq: BranchQueue::default(),
            stop_at_last_branch: false,
            inferred_address: false,
            start_of_trace: true,
            address: 0,
            privilege: 0,
            context: 0,
            bpred: vec![BPRED_INIT; 1usize << params.bpred_size_p],
            jtc: vec![None; 1usize << params.cache_size_p],
            tvec: Vec::new(),
            pending_trap: None,
            skipped_from: None,
            ended: false,
            enabled: false,
            recovering: false,
            synced_ever: false,
            error_run: None,
            stopped: false,
            guessing: false,
        }
    }
}

/// The E-Trace decoder. Made with [`Decoder::with_options`], it is a
/// [`rvtrace_flow::TraceDecoder`]: push the trace's bytes, then finish. The old way, still there:
/// [`Decoder::new`] with a block table, packets fed with [`Decoder::packet`] (and errors with
/// [`Decoder::error`]), then [`Decoder::finish`], or [`decode_stream`]/[`decode_reader`].
pub struct Decoder<'a> {
    /// The walk over the program's block table, with the open range and the return address
    /// stack: `cur.pc` is `decoder.adoc` `pc` (the last instruction reported), the instruction
    /// before it `last_pc`.
    cur: Cursor<'a>,
    params: Params,
    /// Resource limits.
    pub limits: Limits,
    /// Keep the return address stack across synchronisation packets (the reference flow's
    /// encoder in implicit return mode never reports a return, even after a resync; see the
    /// crate README). Off by default (`decoder.adoc` empties it at every sync).
    pub keep_stack_across_syncs: bool,
    /// Classify `c.jr x5` as the reference flow does: `post-iss` reports it as an other
    /// uninferable jump (itype 14), so the reference encoder reports its target even in implicit
    /// return mode, where the spec (`ingressPort.adoc`, jump classes) calls it a return. Such a
    /// jump is then followed to the reported address, and pops the return address stack only if
    /// it goes to the top entry (millicode `jal t0` ... `jr t0`). Off by default.
    pub reference_x5_jumps: bool,
    /// Everything else the decode depends on between packets (one list: a chunk's state is a
    /// normalized copy of it).
    s: Progress,
    // Per-packet counters.
    jumps: u64,
    insns_at_packet: u64,
    /// Statistics.
    pub stats: DecodeStats,
    /// Bytes skipped, as the losses report them.
    skipped_bytes: u64,
    /// The end of the last packet or error seen (the byte count of the old way).
    bytes: u64,
    /// Framing and unread bytes ([`Decoder::with_options`]).
    stream: Option<Stream>,
    /// Chunked decode (`rvtrace_flow::chunk`): losses were reported before this decoder's
    /// start (a fresh synchronisation is then a recovery).
    errors_before: bool,
    /// Chunked decode: a guessed part was read.
    guess_read: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder of the byte stream of a trace described by `o`, for the program in `image`
    /// (it builds the program's block table).
    pub fn with_options(image: &'a Image, o: DecoderOptions) -> Self {
        Decoder::with_code(image, o, Code::new(image, o.isa))
    }

    /// [`Decoder::with_options`] with the block table `code` (`Code::new(image, o.isa)`, shared
    /// by the decoders of a chunked decode).
    pub fn with_code(image: &'a Image, o: DecoderOptions, code: Code) -> Self {
        let (encap, raw) = o.framing.reader();
        let mut d = Decoder::from_parts(code, image, o.params, o.options);
        d.limits = o.limits;
        d.keep_stack_across_syncs = o.keep_stack_across_syncs;
        d.reference_x5_jumps = o.reference_x5_jumps;
        d.stream = Some(Stream {
            encap,
            raw,
            src: o.src,
            buf: Vec::new(),
            base: 0,
            options: o.options,
        });
        d
    }

    /// The old way: a decoder for the program in `image` (with its block table `code`, shared,
    /// not copied), packets
    /// laid out per `params`, starting with run-time `options` (support packets replace them),
    /// fed packets with [`Decoder::packet`]. Prefer [`Decoder::with_options`].
    pub fn new(code: &'a Code, image: &'a Image, params: Params, options: IOptions) -> Self {
        Decoder::from_parts(code.clone(), image, params, options)
    }

    fn from_parts(code: Code, image: &'a Image, params: Params, options: IOptions) -> Self {
        let cur = Cursor::new(
            code,
            image,
            mask(params.iaddress_width_p as u32),
            SequentialJumps::ExecutedBefore,
            stack_max(&params),
        );
        Decoder {
            cur,
            params,
            limits: Limits::default(),
            keep_stack_across_syncs: false,
            reference_x5_jumps: false,
            s: Progress::new(&params, options),
            jumps: 0,
            insns_at_packet: 0,
            stats: DecodeStats::default(),
            skipped_bytes: 0,
            bytes: 0,
            stream: None,
            errors_before: false,
            guess_read: false,
        }
    }

    /// Bytes the decoder holds on the heap (its return address stack, branch predictor, jump
    /// target cache and trap handler table): bounded by the parameters, whatever the input.
    pub fn heap_bytes(&self) -> usize {
        self.cur.stack.heap_bytes()
            + self.s.bpred.capacity()
            + self.s.jtc.capacity() * std::mem::size_of::<Option<u64>>()
            + self.s.tvec.capacity() * std::mem::size_of::<((bool, u64), u64)>()
    }

    /// The run-time options in force.
    pub fn options(&self) -> IOptions {
        self.s.options
    }

    /// The last reported instruction and the depth of the return address stack (for tests and
    /// debugging).
    pub fn position(&self) -> (u64, usize) {
        (self.cur.pc, self.cur.stack.len())
    }

    // ---------------------------------------------------------------------------------------
    // Output.

    /// Report `count` instructions executed in sequence from `first` to `at` (whose entry is
    /// `e`), which becomes `pc`; `prev` (address, length) is the instruction before it, which
    /// becomes `last_pc`.
    #[inline]
    fn arrive<S: FlowSink + ?Sized>(
        &mut self,
        first: u64,
        count: u64,
        at: u64,
        e: &Ent,
        prev: u64,
        s: &mut S,
    ) {
        self.stats.instructions += count;
        self.cur.arrive(first, count, at, e, prev, s);
    }

    /// `decoder.adoc` `last_pc`: the instruction reported before `pc`.
    #[inline]
    fn last_pc(&self) -> u64 {
        self.cur.prev().unwrap_or(0)
    }

    /// Give the open range to the sink. A branch that ends it is the last instruction reported
    /// (`self.cur.pc`), whose outcome the next step takes from the branch queue: it is there already
    /// whenever the packets so far are whole (the one that reported the branch, or the sync
    /// packet's *branch* field, gave it).
    fn flush<S: FlowSink + ?Sized>(&mut self, s: &mut S) {
        if self.cur.ranges.unresolved_branch() == Some(self.cur.pc) {
            if let Some(taken) = self.peek_branch() {
                self.cur.ranges.resolve(taken);
            }
        }
        self.cur.ranges.flush(s);
    }

    fn emit<S: FlowSink + ?Sized>(&mut self, e: FlowElement, s: &mut S) {
        self.flush(s);
        s.element(&e);
    }

    // ---------------------------------------------------------------------------------------
    // Packets.

    /// Process one `te_inst` packet found at byte `offset`.
    pub fn packet<S: FlowSink + ?Sized>(&mut self, offset: u64, pkt: &TeInst, s: &mut S) {
        self.flush_errors(offset, s);
        self.stats.packets += 1;
        self.jumps = 0;
        self.insns_at_packet = self.stats.instructions;
        if let Err(e) = self.process(offset, pkt, s) {
            self.lose(offset, e.loss_reason(), s);
        }
    }

    /// Report a packet that could not be decoded (or was lost) at `offset`; decoding resumes at
    /// the next synchronisation packet. Errors with no packet between them are one loss
    /// (reported when the next packet or the end comes), so that a run of garbage is one error
    /// that says how many bytes it spans, not one per byte.
    pub fn error<S: FlowSink + ?Sized>(&mut self, offset: u64, e: &CodecError, _s: &mut S) {
        match &mut self.s.error_run {
            Some(r) => r.2 += 1,
            None => self.s.error_run = Some((offset, *e, 1)),
        }
    }

    /// Report the pending run of errors, which ends at `offset`.
    fn flush_errors<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        if let Some((at, e, n)) = self.s.error_run.take() {
            let mut reason = DecodeError::Codec(e).loss_reason();
            if n > 1 {
                reason = reason.map_text(|t| {
                    format!(
                        "{t} (and {} more errors: {} bytes skipped)",
                        n - 1,
                        offset - at
                    )
                });
            }
            self.loss(at, Some(offset - at), reason, s);
            self.reset_sync();
            self.s.ended = false;
        }
    }

    fn lose<S: FlowSink + ?Sized>(&mut self, offset: u64, reason: LossReason, s: &mut S) {
        self.loss(offset, None, reason, s);
        self.reset_sync();
        self.s.ended = false;
    }

    /// Report one loss: a [`FlowElement::Loss`] and one error in [`DecodeStats::errors`]. The
    /// only place that emits a loss, so that the count of losses (warnings) and the error count
    /// (summary, exit status) never disagree.
    fn loss<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        skipped: Option<u64>,
        reason: LossReason,
        s: &mut S,
    ) {
        self.stats.errors += 1;
        self.skipped_bytes += skipped.unwrap_or(0);
        self.s.recovering = true;
        self.s.enabled = true;
        // A branch not resolved yet stays so: the packets that would tell are lost or damaged.
        self.cur.ranges.flush(s);
        self.emit(
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            },
            s,
        );
    }

    fn reset_sync(&mut self) {
        self.s.start_of_trace = true;
        self.s.inferred_address = false;
        self.s.stop_at_last_branch = false;
        self.s.bq.clear();
        self.s.pending_trap = None;
        self.cur.stack.clear();
    }

    /// End of the trace data at `offset`.
    ///
    /// A trace that does not end with a support packet saying that tracing ended
    /// (`payload.adoc` `sec:format33`: one "must be issued when tracing ceases for any reason")
    /// lost its end (a truncated file, a circular buffer read past its write pointer): that is
    /// a loss. So is a trace with no synchronisation packet at all.
    pub fn finish<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        self.bytes = self.bytes.max(offset);
        self.flush_errors(offset, s);
        if let Some(t) = self.s.pending_trap.take() {
            self.emit_trap(&t, None, s);
        }
        if !self.s.ended && !self.s.start_of_trace {
            self.loss(
                offset,
                None,
                LossReason::EndLost("the trace ends without a support packet saying that tracing ended: its end is lost (truncated?)".into()),
                s,
            );
        } else if !self.s.synced_ever && !self.s.ended && self.stats.errors == 0 {
            let reason = match self.s.skipped_from {
                Some(_) => "no synchronisation packet: nothing could be decoded",
                None => "no te_inst packet in the trace",
            };
            let skipped = self.s.skipped_from.map(|f| offset - f);
            let reason = LossReason::NoTrace(reason.into());
            self.loss(self.s.skipped_from.unwrap_or(0), skipped, reason, s);
        }
        if !self.s.ended {
            self.emit(FlowElement::End { offset }, s);
            self.s.ended = true;
        }
        self.flush(s);
    }

    fn process<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        pkt: &TeInst,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        match *pkt {
            TeInst::Support(sp) => {
                self.s.options = IOptions::from_bits(sp.ioptions);
                if sp.ienable {
                    self.s.enabled = true;
                }
                match sp.qual_status {
                    QualStatus::NoChange => {}
                    QualStatus::TraceLost => {
                        self.loss(
                            offset,
                            None,
                            LossReason::Overflow("the encoder lost packets (trace_lost)".into()),
                            s,
                        );
                        self.reset_sync();
                    }
                    QualStatus::EndedRep | QualStatus::EndedNtr => {
                        if self.s.start_of_trace {
                            self.start_lost(offset, s);
                        }
                        if sp.qual_status == QualStatus::EndedNtr
                            && self.s.inferred_address
                            && !self.s.start_of_trace
                        {
                            // decoder.adoc process_support: the final instruction is the next
                            // occurrence of the reported address.
                            let prev = self.cur.pc;
                            self.s.inferred_address = false;
                            loop {
                                if self.step(prev, &Ctx::default(), true, s)?.0 {
                                    break;
                                }
                            }
                        }
                        if let Some(t) = self.s.pending_trap.take() {
                            self.emit_trap(&t, None, s);
                        }
                        self.emit(FlowElement::End { offset }, s);
                        self.s.ended = true;
                        self.s.enabled = false;
                        self.reset_sync();
                    }
                }
                Ok(())
            }
            TeInst::Context {
                privilege,
                time,
                context,
            } => {
                if self.s.start_of_trace {
                    self.skip(offset);
                    return Ok(());
                }
                if !p.notime_p {
                    self.emit(FlowElement::Time { time }, s);
                }
                if privilege != self.s.privilege || (!p.nocontext_p && context != self.s.context) {
                    self.s.privilege = privilege;
                    self.s.context = context;
                    self.emit_context(s);
                }
                Ok(())
            }
            TeInst::Trap {
                sync,
                ecause,
                interrupt,
                thaddr,
                address,
                tval,
            } => {
                let addr = address.map(|a| (a << p.iaddress_lsb_p) & self.cur.mask());
                let epc = if self.s.start_of_trace || self.s.pending_trap.is_some() {
                    // Exception on the first traced instruction (v2.0 `sec:thaddr`: address =
                    // EPC), or a trap immediately after another one (address = this trap's EPC
                    // is the previous handler).
                    let epc = match self.s.pending_trap {
                        Some(t) => t.address,
                        None if !thaddr => addr,
                        None => None,
                    };
                    if let Some(t) = self.s.pending_trap.take() {
                        self.emit_trap(&t, None, s);
                    }
                    epc
                } else {
                    let epc = self.exception_address(thaddr, addr);
                    self.check_trap(epc, interrupt, ecause)?;
                    epc
                };
                let t = PendingTrap {
                    ecause,
                    interrupt,
                    tval,
                    epc,
                    address: addr,
                };
                if !thaddr {
                    self.s.pending_trap = Some(t);
                    return Ok(());
                }
                let handler = self.handler(addr, interrupt, ecause)?;
                self.emit_trap(&t, Some(handler), s);
                self.sync(offset, handler, &sync, true, s)
            }
            TeInst::Start { sync, address } => {
                let addr = (address << p.iaddress_lsb_p) & self.cur.mask();
                if let Some(t) = self.s.pending_trap.take() {
                    // v2.0: the handler of a trap reported with thaddr = 0 (also the draft's
                    // SF1 form, handled above).
                    self.learn_handler(&t, addr);
                    self.emit_trap(&t, Some(addr), s);
                    return self.sync(offset, addr, &sync, true, s);
                }
                self.sync(offset, addr, &sync, false, s)
            }
            _ => {
                if self.s.start_of_trace {
                    self.skip(offset);
                    return Ok(());
                }
                if self.s.pending_trap.is_some() {
                    return Err(DecodeError::Unexpected(
                        "a trap handler was expected (format 3 after thaddr = 0)",
                    ));
                }
                self.differential(pkt, s)
            }
        }
    }

    /// At the first synchronisation (or end) packet at `offset`: a loss if packets were skipped
    /// before it, or if no support packet enabled tracing (`payload.adoc` `sec:format33`), unless
    /// the gap belongs to a loss already reported.
    fn start_lost<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        if let Some(from) = self.s.skipped_from.take() {
            self.loss(
                from,
                Some(offset - from),
                LossReason::StartLost(
                    "packets before the first synchronisation packet: the start of the trace is lost"
                        .into(),
                ),
                s,
            );
        } else if !self.s.enabled {
            self.loss(
                offset,
                None,
                LossReason::StartLost("no support packet before the first synchronisation packet: the start of the trace is lost"
                    .into()),
                s,
            );
        }
    }

    /// A packet at `offset` skipped while waiting for a synchronisation packet: part of the
    /// loss already reported, or (at the start of the trace) of one reported at the sync.
    fn skip(&mut self, offset: u64) {
        if !self.s.recovering {
            self.s.skipped_from.get_or_insert(offset);
        }
    }

    fn context_element(&self) -> FlowElement {
        let context = if self.params.nocontext_p {
            None
        } else {
            Some(self.s.context)
        };
        FlowElement::Context {
            privilege: Some(self.s.privilege as u8),
            context,
        }
    }

    fn emit_context<S: FlowSink + ?Sized>(&mut self, s: &mut S) {
        let e = self.context_element();
        self.emit(e, s);
    }

    /// The Context element for a change the packet naming `addr` reports, `addr` having just
    /// been reported: that instruction already runs in the new context (after an xRET, the
    /// packet names its target), and the flow says "from here on", so the element goes before
    /// it, splitting the open range there.
    fn emit_context_before_last<S: FlowSink + ?Sized>(&mut self, addr: u64, s: &mut S) {
        match self.cur.ranges.open() {
            Some((_, last, n)) if last == addr => {
                if n > 1 {
                    // `last_pc` is the instruction before `addr` on the path (`follow`).
                    let class = self
                        .cur
                        .code()
                        .ent(self.last_pc())
                        .map_or(CfClass::None, |e| e.class);
                    self.cur.ranges.split_before_last(self.last_pc(), class, s);
                }
                s.element(&self.context_element());
            }
            _ => self.emit_context(s),
        }
    }

    fn emit_trap<S: FlowSink + ?Sized>(
        &mut self,
        t: &PendingTrap,
        handler: Option<u64>,
        s: &mut S,
    ) {
        self.emit(
            FlowElement::Trap {
                cause: Some(t.ecause),
                interrupt: t.interrupt,
                tval: t.tval,
                epc: t.epc,
                handler,
            },
            s,
        );
    }

    fn learn_handler(&mut self, t: &PendingTrap, handler: u64) {
        let key = (t.interrupt, t.ecause);
        match self.s.tvec.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = handler,
            None => self.s.tvec.push((key, handler)),
        }
    }

    /// The handler of a trap packet: its address, or in implicit exception mode the handler
    /// last reported for the same cause (rvtrace's encoder omits the address only then; see the
    /// crate README).
    fn handler(
        &mut self,
        addr: Option<u64>,
        interrupt: bool,
        ecause: u64,
    ) -> Result<u64, DecodeError> {
        match addr {
            Some(a) => {
                let key = (interrupt, ecause);
                match self.s.tvec.iter_mut().find(|(k, _)| *k == key) {
                    Some(e) => e.1 = a,
                    None => self.s.tvec.push((key, a)),
                }
                Ok(a)
            }
            None => {
                let found = self
                    .s
                    .tvec
                    .iter()
                    .find(|(k, _)| *k == (interrupt, ecause))
                    .map(|e| e.1);
                // A handler learnt before a chunk's start is not in its table.
                self.guess_read |= found.is_none() && self.s.guessing;
                found.ok_or(DecodeError::UnknownHandler { interrupt, ecause })
            }
        }
    }

    /// An exception whose cause contradicts the instruction at its EPC (the privileged spec's
    /// `mcause` table): an environment call (causes 8-11) is raised by an `ecall`, and an
    /// `ecall` raises nothing else but a fetch fault or a breakpoint. A damaged packet, or a
    /// path that went astray.
    fn check_trap(
        &self,
        epc: Option<u64>,
        interrupt: bool,
        ecause: u64,
    ) -> Result<(), DecodeError> {
        const ECALL: u64 = 0x0000_0073;
        let Some(epc) = epc else { return Ok(()) };
        if interrupt {
            return Ok(());
        }
        let is_ecall = self.cur.image().fetch(epc).map(|w| w as u64) == Some(ECALL);
        let env_call = (8..=11).contains(&ecause);
        // Instruction address misaligned/access fault/page fault, breakpoint, guest page fault.
        let fetch_or_debug = matches!(ecause, 0 | 1 | 3 | 12 | 20);
        if env_call && !is_ecall {
            return Err(DecodeError::Unexpected(
                "an environment call trap where the path has no ecall",
            ));
        }
        if is_ecall && !env_call && !fetch_or_debug {
            return Err(DecodeError::Unexpected(
                "an ecall trapped with a cause other than an environment call",
            ));
        }
        Ok(())
    }

    /// `decoder.adoc` `exception_address`, without moving the decoder: the EPC of a trap
    /// reported now.
    fn exception_address(&self, thaddr: bool, addr: Option<u64>) -> Option<u64> {
        let pc = self.cur.pc;
        let i = self.cur.insn_of(pc, self.cur.code().ent(pc)?);
        if i.class.is_uninferable_discon() && !thaddr {
            return addr;
        }
        if i.class == CfClass::EnvTrap {
            return Some(pc);
        }
        match i.class {
            CfClass::None => Some(i.seq),
            CfClass::Branch => match self.peek_branch()? {
                true => i.target,
                false => Some(i.seq),
            },
            // Zcmt table jumps: the target is in the jump table, not known here.
            c if c.is_inferable() => i.target,
            // An uninferable transfer with `thaddr` = 1: `address` is the handler, and where
            // the transfer went (the epc) is not in the packet.
            _ if thaddr => None,
            _ => addr,
        }
    }

    /// Format 3 subformats 0 and 1 (`decoder.adoc` `process_te_inst`, format 3 branch).
    fn sync<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        addr: u64,
        f: &SyncFields,
        trap: bool,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        self.s.inferred_address = false;
        self.s.address = addr;
        let fresh = trap || self.s.start_of_trace;
        if fresh {
            self.s.bq.clear();
            self.s.stop_at_last_branch = false;
        }
        let e = *self.cur.entry(addr)?;
        if e.class == CfClass::Branch {
            self.add_map_bits(f.branch as u64, 1)?;
        }
        if !fresh {
            let k = Ctx {
                sync: true,
                privilege: f.privilege,
                ..Ctx::default()
            };
            self.follow(addr, &k, s)?;
            if self.s.privilege != f.privilege || (!p.nocontext_p && f.context != self.s.context) {
                self.s.privilege = f.privilege;
                self.s.context = f.context;
                self.emit_context_before_last(addr, s);
            }
        } else {
            if self.s.start_of_trace {
                let reason = if self.stats.errors > 0 || self.errors_before {
                    SyncReason::Recovery
                } else {
                    self.guess_read |= self.s.guessing;
                    SyncReason::Start
                };
                self.start_lost(offset, s);
                self.s.recovering = false;
                self.s.synced_ever = true;
                self.emit(FlowElement::Sync { addr, reason }, s);
            }
            if self.s.start_of_trace
                || self.s.privilege != f.privilege
                || (!p.nocontext_p && f.context != self.s.context)
            {
                self.s.privilege = f.privilege;
                self.s.context = f.context;
                self.emit_context(s);
            }
            self.flush(s);
            self.cur.pc = addr;
            self.arrive(addr, 1, addr, &e, addr, s);
        }
        if !p.notime_p {
            self.emit(FlowElement::Time { time: f.time }, s);
        }
        self.s.start_of_trace = false;
        self.s.ended = false;
        if !self.keep_stack_across_syncs {
            self.cur.stack.clear();
        }
        // Synchronisation resets the predictor and the jump target cache (branchTrace.adoc).
        self.s.bpred.iter_mut().for_each(|b| *b = BPRED_INIT);
        self.s.jtc.iter_mut().for_each(|c| *c = None);
        Ok(())
    }

    /// Formats 0, 1 and 2.
    fn differential<S: FlowSink + ?Sized>(
        &mut self,
        pkt: &TeInst,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        let lsb = p.iaddress_lsb_p as u32;
        let mut k = Ctx::default();
        let apply_tail = |d: &mut Self, t: &crate::codec::AddrTail, k: &mut Ctx| {
            d.s.stop_at_last_branch = false;
            if d.s.options.full_address {
                d.s.address = (t.address << lsb) & d.cur.mask();
            } else {
                let delta = (t.signed_address(&p) as u64) << lsb;
                d.s.address = d.s.address.wrapping_add(delta) & d.cur.mask();
            }
            k.notify = t.notify_flag(&p);
            k.updiscon = t.updiscon_flag();
            k.irreport = t.irreport_flag();
            k.irdepth = t.irdepth;
        };
        match *pkt {
            TeInst::Addr(ref t) => apply_tail(self, t, &mut k),
            TeInst::Branch {
                branches,
                branch_map,
                ref tail,
            } => {
                if let Some(t) = tail {
                    apply_tail(self, t, &mut k);
                }
                self.s.stop_at_last_branch = branches == 0;
                let n = if branches == 0 { 31 } else { branches as u32 };
                self.add_map_bits(branch_map as u64, n)?;
            }
            TeInst::BranchCount {
                branch_count,
                branch_fmt,
                ref tail,
            } => {
                if let Some(t) = tail {
                    apply_tail(self, t, &mut k);
                } else {
                    self.s.stop_at_last_branch = true;
                }
                self.add_predicted(branch_count as u64 + 31, branch_fmt != 2)?;
            }
            TeInst::JumpTargetIndex {
                index,
                branches,
                branch_map,
                irreport,
                irdepth,
            } => {
                let a = self
                    .s
                    .jtc
                    .get(index as usize)
                    .copied()
                    .flatten()
                    .ok_or(DecodeError::EmptyCacheEntry(index))?;
                self.s.stop_at_last_branch = false;
                self.s.address = a;
                let w = crate::codec::te_inst::branch_map_width_f0s1(branches);
                let msb = if branches == 0 {
                    (branches >> 4) & 1 != 0
                } else {
                    (branch_map >> (w - 1)) & 1 != 0
                };
                k.irreport = irreport != msb;
                k.irdepth = irdepth;
                if branches > 0 {
                    self.add_map_bits(branch_map as u64, branches as u32)?;
                }
            }
            _ => return Err(DecodeError::Unexpected("not a differential packet")),
        }
        if pkt.tail().is_some() && self.s.options.jump_target_cache && !self.s.jtc.is_empty() {
            // rvtrace's jump target cache holds every address a format 0/1/2 packet reports
            // (see the crate README); the encoder does the same.
            let i = table_index(self.s.address, self.params.cache_size_p);
            self.s.jtc[i] = Some(self.s.address);
        }
        let a = self.s.address;
        // The reported address must be an instruction of the program: otherwise the packet (or
        // the address it is relative to) is damaged, and following the path to an address it
        // can never reach would only report instructions that did not execute.
        match self.cur.code().ent(a) {
            Some(e) if e.len > 0 => {}
            Some(_) => return Err(DecodeError::BadInstruction(a)),
            None => return Err(DecodeError::Unmapped(a)),
        }
        self.follow(a, &k, s)
    }

    // ---------------------------------------------------------------------------------------
    // Branch information.

    fn add_map_bits(&mut self, bits: u64, n: u32) -> Result<(), DecodeError> {
        self.s.bq.push_map(bits, n)
    }

    fn add_predicted(&mut self, n: u64, fail: bool) -> Result<(), DecodeError> {
        self.s.bq.push_pred(n)?;
        if fail {
            self.s.bq.push_fail()?;
        }
        Ok(())
    }

    #[inline]
    fn pending(&self) -> u64 {
        self.s.bq.total
    }

    #[inline]
    fn unprocessed(&self, at_branch: bool) -> bool {
        self.pending() != at_branch as u64
    }

    /// The outcome of the oldest branch in the queue, for the branch at `self.cur.pc`, without
    /// taking it.
    fn peek_branch(&self) -> Option<bool> {
        let predicted = self.s.bpred[self.predictor_index(self.cur.pc)] & 2 != 0;
        match *self.s.bq.front()? {
            BSeg::Map { bits, .. } => Some(bits & 1 == 0),
            BSeg::Pred(_) => Some(predicted),
            BSeg::Fail => Some(!predicted),
        }
    }

    /// The predictor entry for the branch at `pc` (entry 0, never updated, without branch
    /// prediction).
    #[inline]
    fn predictor_index(&self, pc: u64) -> usize {
        if self.s.options.branch_prediction && self.params.bpred_size_p > 0 {
            table_index(pc, self.params.bpred_size_p)
        } else {
            0
        }
    }

    /// `decoder.adoc` `is_taken_branch` for the branch at `pc`, with the predictor. Inlined
    /// into the walk's two callers: a call per branch cost about as much as the rest of the
    /// branch's step.
    #[inline(always)]
    fn take_branch(&mut self, pc: u64) -> Result<bool, DecodeError> {
        let bp = self.s.options.branch_prediction && self.params.bpred_size_p > 0;
        let idx = if bp {
            table_index(pc, self.params.bpred_size_p)
        } else {
            0
        };
        let predicted = self.s.bpred[idx] & 2 != 0;
        let Some(taken) = self.s.bq.take(predicted) else {
            return Err(DecodeError::NoBranchInfo(pc));
        };
        if bp {
            self.s.bpred[idx] = bpred_next(self.s.bpred[idx], taken);
        }
        Ok(taken)
    }

    // ---------------------------------------------------------------------------------------
    // Return address stack.

    fn push_return(&mut self, link: u64) {
        if self.s.options.implicit_return {
            self.cur.stack.push(link);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Following the execution path.

    /// `decoder.adoc` `follow_execution_path` to `address`.
    fn follow<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let previous_address = self.cur.pc;
        loop {
            let inferred = self.s.inferred_address;
            let to = if inferred { previous_address } else { address };
            match self.follow_blocks(to, k, inferred, s)? {
                Some(true) => return Ok(()),
                Some(false) => continue,
                None => {}
            }
            if inferred {
                let (stop_here, _) = self.step(previous_address, k, true, s)?;
                if stop_here {
                    self.s.inferred_address = false;
                }
            } else {
                let (stop, _) = self.step(address, k, false, s)?;
                if stop {
                    return Ok(());
                }
            }
            if self.stats.instructions - self.insns_at_packet > self.limits.max_insns_per_packet {
                return Err(DecodeError::Runaway(self.cur.pc));
            }
        }
    }

    /// The common steps of [`follow`](Decoder::follow), each as [`step`](Decoder::step) takes it
    /// (with `inferred`) but with each entry looked up once: runs (that do not hold `address`,
    /// unless `inferred`), conditional branches and jumps with a static target (not to
    /// themselves), with `check_stop` (not when `inferred`) only where it can stop (at
    /// `address`, or at the last branch with `stop_at_last_branch`) and the runaway check after
    /// each step. `Some(stop)`: it took steps, the last of which stopped (`true`) or not;
    /// `None`: it took none, the next step is `step`'s.
    #[inline]
    fn follow_blocks<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        inferred: bool,
        s: &mut S,
    ) -> Result<Option<bool>, DecodeError> {
        let mut e = match self.cur.code().ent(self.cur.pc) {
            Some(e) if e.len > 0 => *e,
            _ => return Ok(None),
        };
        let mut walked = None;
        loop {
            let pc = self.cur.pc;
            if let Some(run) = self.cur.run(pc, &e) {
                let x = self.cur.end_of(&run);
                if !inferred && self.r_ok_mid(pc, x, address) {
                    return Ok(walked);
                }
                let ex = match self.cur.code().ent(x) {
                    Some(ex) if ex.len > 0 => *ex,
                    _ => return Ok(walked),
                };
                let first = pc.wrapping_add(e.len as u64);
                self.arrive(first, run.count, x, &ex, run.last(), s);
                e = ex;
            } else {
                // decoder.adoc next_pc, its cases without a stop.
                let seq = pc.wrapping_add(e.len as u64) & self.cur.mask();
                let next = match e.class {
                    CfClass::Branch => {
                        let taken = self.take_branch(pc)?;
                        self.cur.ranges.resolve(taken);
                        match taken {
                            true => self.cur.target(pc, &e).unwrap_or(seq),
                            false => seq,
                        }
                    }
                    CfClass::InferableCall
                    | CfClass::InferableJump
                    | CfClass::OtherInferableJump => {
                        let t = self.cur.target(pc, &e).unwrap_or(seq);
                        if t == pc {
                            return Ok(walked);
                        }
                        self.jumps += 1;
                        if self.jumps > self.limits.max_jumps_per_packet {
                            return Err(DecodeError::Runaway(pc));
                        }
                        if e.class.is_call() {
                            self.push_return(seq);
                        }
                        t
                    }
                    _ => return Ok(walked),
                };
                let en = *self.cur.entry(next)?;
                self.arrive(next, 1, next, &en, pc, s);
                e = en;
            }
            let at = self.cur.pc;
            let stop = if inferred {
                false
            } else if at == address
                || (self.s.stop_at_last_branch && e.class == CfClass::Branch && self.pending() == 1)
            {
                self.check_stop(address, k, false)?
            } else {
                false
            };
            if stop {
                return Ok(Some(true));
            }
            walked = Some(false);
            if self.stats.instructions - self.insns_at_packet > self.limits.max_insns_per_packet {
                return Err(DecodeError::Runaway(self.cur.pc));
            }
        }
    }

    /// One step of the path from `self.cur.pc`: either a run of sequential instructions or one
    /// control transfer. With `inferred` (following to the previous address), returns
    /// `(stop_here, _)` from `next_pc`; otherwise returns `(true, _)` when a stop condition of
    /// `follow_execution_path` holds.
    fn step<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        inferred: bool,
        s: &mut S,
    ) -> Result<(bool, ()), DecodeError> {
        let pc = self.cur.pc;
        let e = *self.cur.entry(pc)?;
        if let Some(run) = self.cur.run(pc, &e) {
            let first = pc.wrapping_add(e.len as u64);
            // Sequential instructions after pc up to the run's end X.
            let x = self.cur.end_of(&run);
            if !inferred && self.r_ok_mid(pc, x, address) {
                // The reported address lies inside this run: maybe stop there.
                if let Some((prev, n)) = self.cur.code().path_to(pc, address) {
                    let ea = *self.cur.entry(address)?;
                    if self.stop_ok(address, address, &ea, k, false) {
                        self.arrive(first, n, address, &ea, prev, s);
                        return Ok((self.check_stop(address, k, false)?, ()));
                    }
                }
            }
            let ex = *self.cur.entry(x)?;
            self.arrive(first, run.count, x, &ex, run.last(), s);
            if inferred {
                return Ok((false, ()));
            }
            return Ok((self.check_stop(address, k, false)?, ()));
        }
        // A control transfer at pc: decoder.adoc next_pc.
        let (next, stop_here) = self.next_pc(pc, &e, address, k, inferred)?;
        let en = *self.cur.entry(next)?;
        self.arrive(next, 1, next, &en, pc, s);
        if inferred {
            return Ok((stop_here, ()));
        }
        Ok((self.check_stop(address, k, stop_here)?, ()))
    }

    /// Whether `address` is strictly inside the run (pc, x).
    #[inline]
    fn r_ok_mid(&self, pc: u64, x: u64, address: u64) -> bool {
        address > pc && address < x
    }

    /// Would the stop conditions hold at `at` (for a position inside a run, where the branch
    /// check cannot apply)?
    fn stop_ok(&self, at: u64, address: u64, e: &Ent, k: &Ctx, _stop_here: bool) -> bool {
        if at != address {
            return false;
        }
        let unprocessed = self.unprocessed(e.class == CfClass::Branch);
        if !k.sync {
            !self.s.stop_at_last_branch && !unprocessed && self.stops_at_address(k)
        } else {
            !unprocessed && k.privilege == self.s.privilege
        }
    }

    /// The stop conditions of `follow_execution_path` at `self.cur.pc` (just reported).
    #[inline]
    fn check_stop(&mut self, address: u64, k: &Ctx, stop_here: bool) -> Result<bool, DecodeError> {
        let pc = self.cur.pc;
        let e = *self.cur.code().ent(pc).ok_or(DecodeError::Unmapped(pc))?;
        let at_branch = e.class == CfClass::Branch;
        if self.s.stop_at_last_branch && at_branch && self.pending() == 1 {
            // Reached the final branch: stop before it (its outcome is known but whether the
            // next instruction retires is not).
            self.s.stop_at_last_branch = false;
            return Ok(true);
        }
        if stop_here {
            if self.unprocessed(at_branch) {
                return Err(DecodeError::UnprocessedBranches(pc));
            }
            return Ok(true);
        }
        if pc != address {
            return Ok(false);
        }
        let unprocessed = self.unprocessed(at_branch);
        if !k.sync {
            if self.s.stop_at_last_branch || unprocessed || !self.stops_at_address(k) {
                return Ok(false);
            }
            // decoder.adoc also requires that the previous instruction is not an uninferable
            // discontinuity; a taken one has already stopped (stop_here), so here it can only
            // have been inferred (implicit return, sequentially inferable jump), which rvtrace's
            // encoder reports like any other instruction. Without notify, the stop is
            // tentative (sec:updiscon: the reported instruction may occur again after an
            // uninferable discontinuity).
            if !k.notify {
                self.s.inferred_address = true;
            }
            Ok(true)
        } else {
            let last_xret = self
                .cur
                .code()
                .ent(self.last_pc())
                .is_some_and(|l| l.class == CfClass::TrapReturn);
            Ok(!unprocessed && (k.privilege == self.s.privilege || last_xret))
        }
    }

    /// Whether a format 0/1/2 packet lets the decoder stop on reaching its address with every
    /// branch processed (not as the target of an uninferable discontinuity). rvtrace (see the
    /// crate README): with *notify*, yes, at the depth *irdepth* when *irreport* is set; without
    /// *notify*, tentatively (`sec:updiscon` cases 1 and 3) unless *updiscon* says the address
    /// follows an uninferable discontinuity and a format 3 is next (case 2), or *irreport* says
    /// it follows a return that failed its prediction (`sec:irxx`: the decoder stops at that
    /// return).
    fn stops_at_address(&self, k: &Ctx) -> bool {
        if k.notify {
            !k.irreport || k.irdepth == self.cur.stack.len() as u64
        } else {
            !k.updiscon && !k.irreport
        }
    }

    /// `decoder.adoc` `next_pc` for the control transfer at `pc`: the next pc and `stop_here`.
    fn next_pc(
        &mut self,
        pc: u64,
        e: &Ent,
        address: u64,
        k: &Ctx,
        inferred: bool,
    ) -> Result<(u64, bool), DecodeError> {
        let class = e.class;
        let seq = pc.wrapping_add(e.len as u64) & self.cur.mask();
        let mut stop_here = false;
        let next = match class {
            CfClass::Branch => {
                let taken = self.take_branch(pc)?;
                self.cur.ranges.resolve(taken);
                match taken {
                    true => self.cur.target(pc, e).unwrap_or(seq),
                    false => seq,
                }
            }
            CfClass::TableJump | CfClass::TableCall => return Err(DecodeError::TableJump(pc)),
            c if c.is_inferable() => {
                self.jumps += 1;
                if self.jumps > self.limits.max_jumps_per_packet {
                    return Err(DecodeError::Runaway(pc));
                }
                let t = self.cur.target(pc, e).unwrap_or(seq);
                if t == pc {
                    // A jump to itself never ends: stop (as the reference decoder model does).
                    stop_here = true;
                }
                t
            }
            c if c.is_uninferable_discon() => {
                let depth = self.cur.stack.len() as u64;
                let sij = if self.s.options.sijump && c.is_uninferable() {
                    self.sequential_target(pc)
                } else {
                    None
                };
                if let Some(t) = sij {
                    self.jumps += 1;
                    t
                } else if self.s.options.implicit_return
                    && c.is_return()
                    && depth > 0
                    && !self.reported_x5_jump(pc, e)
                    && (inferred || !self.failed_return(k, address, depth))
                {
                    self.jumps += 1;
                    if self.jumps > self.limits.max_jumps_per_packet {
                        return Err(DecodeError::Runaway(pc));
                    }
                    self.cur.stack.pop().unwrap_or(seq)
                } else {
                    // decoder.adoc raises this error also while following the previous
                    // packet's path to the second occurrence of its address (inferred_address),
                    // where stop_at_last_branch is already the new packet's: that discontinuity
                    // is the previous packet's.
                    if self.s.stop_at_last_branch && !inferred {
                        return Err(DecodeError::UnexpectedDiscontinuity(pc));
                    }
                    if self.s.options.implicit_return && c.is_return() && depth > 0 {
                        if !self.reported_x5_jump(pc, e) {
                            // A return that failed the prediction consumes its stack entry
                            // (rvtrace's encoder does the same).
                            self.cur.stack.pop();
                        } else if self.cur.stack.top() == Some(address) {
                            // A reported `c.jr x5` that does return (millicode `jr t0`).
                            self.cur.stack.pop();
                        }
                    }
                    stop_here = true;
                    address
                }
            }
            _ => seq,
        };
        if class.is_call() {
            self.push_return(seq);
        }
        Ok((next, stop_here))
    }

    /// Whether the return now at the top of the path (stack depth `depth`) is the one the
    /// packet reports as having failed its prediction: *irreport* without *notify*, *irdepth* =
    /// `depth`, a predicted target other than the reported address, and no branch left before
    /// the reported address (rvtrace's encoder makes the first such return the failed one; see
    /// the crate README).
    fn failed_return(&self, k: &Ctx, address: u64, depth: u64) -> bool {
        if !k.irreport || k.notify || k.irdepth != depth {
            return false;
        }
        if self.cur.stack.top() == Some(address) {
            return false;
        }
        let at_branch = self
            .cur
            .code()
            .ent(address)
            .is_some_and(|e| e.class == CfClass::Branch);
        !self.unprocessed(at_branch)
    }

    /// True for `c.jr x5` when [`Self::reference_x5_jumps`] is set: the reference encoder reports
    /// its target, so it is not an implicit return (see the field).
    fn reported_x5_jump(&self, pc: u64, e: &Ent) -> bool {
        // c.jr x5 = 0x8282 (RVC quadrant 2, funct4 1000, rs1 = x5, rs2 = 0).
        self.reference_x5_jumps && e.len == 2 && self.cur.image().fetch(pc) == Some(0x8282)
    }

    /// The target of a sequentially inferable jump at `pc` (`decoder.adoc`
    /// `is_sequential_jump` / `sequential_jump_target`), if it is one.
    fn sequential_target(&self, pc: u64) -> Option<u64> {
        self.cur.sequential_target(pc)
    }
}

impl Decoder<'_> {
    /// Give the decoder the packets in `data` (the stream from offset `base` on), stopping at
    /// the first one that may run past its end unless `eof`; returns the bytes consumed.
    fn feed<S: FlowSink + ?Sized>(
        &mut self,
        st: &mut Stream,
        data: &[u8],
        eof: bool,
        sink: &mut S,
    ) -> usize {
        let mut rd =
            PacketReader::new(data, st.encap, st.raw, self.params, st.options).only_src(st.src);
        let mut keep = data.len();
        while !self.s.stopped {
            let before = rd.options();
            let Some((off, item)) = rd.next() else { break };
            // A packet that may run past the bytes so far waits for more (its options too).
            if !eof && off + MAX_PACKET > data.len() {
                keep = off;
                st.options = before;
                break;
            }
            let at = st.base + off as u64;
            match item {
                Item::Packet(p) => self.packet(at, &p, sink),
                Item::Error(e) => self.error(at, &e, sink),
                Item::Other(_) => {}
            }
            st.options = rd.options();
            self.s.stopped = sink.stop_requested();
        }
        st.base += keep as u64;
        keep
    }

    /// The stream state; a decoder made the old way ([`Decoder::new`]) reads plain
    /// encapsulation.
    fn take_stream(&mut self) -> Stream {
        self.stream.take().unwrap_or(Stream {
            encap: EncapConfig::PLAIN,
            raw: false,
            src: None,
            buf: Vec::new(),
            base: 0,
            options: self.s.options,
        })
    }
}

impl TraceDecoder for Decoder<'_> {
    type ProtocolStats = DecodeStats;

    fn push<S: FlowSink + ?Sized>(&mut self, mut data: &[u8], sink: &mut S) {
        if self.s.stopped {
            return;
        }
        let mut st = self.take_stream();
        while !data.is_empty() && !self.s.stopped {
            if st.buf.is_empty() && data.len() >= WINDOW {
                // Packets straight from the caller's bytes; only the tail is kept.
                let n = self.feed(&mut st, data, false, sink);
                data = &data[n..];
                if n > 0 && data.len() >= WINDOW {
                    continue;
                }
            }
            // Gather a window; a packet started in the kept bytes ends within MAX_PACKET.
            let take = data.len().min(WINDOW.max(2 * MAX_PACKET));
            st.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if st.buf.len() < WINDOW {
                break;
            }
            let buf = std::mem::take(&mut st.buf);
            let n = self.feed(&mut st, &buf, false, sink);
            st.buf = buf;
            st.buf.drain(..n);
        }
        self.bytes = st.base + st.buf.len() as u64;
        self.stream = Some(st);
    }

    fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> rvtrace_flow::DecodeStats {
        if self.s.stopped || sink.stop_requested() {
            self.s.stopped = true;
            return TraceDecoder::stats(self);
        }
        let mut st = self.take_stream();
        let buf = std::mem::take(&mut st.buf);
        self.feed(&mut st, &buf, true, sink);
        let end = st.base;
        self.stream = Some(st);
        if !self.s.stopped {
            Decoder::finish(self, end, sink);
        }
        TraceDecoder::stats(self)
    }

    fn stats(&self) -> rvtrace_flow::DecodeStats {
        rvtrace_flow::DecodeStats {
            bytes: self.bytes,
            messages: self.stats.packets,
            instructions: self.stats.instructions,
            losses: self.stats.errors,
            skipped_bytes: self.skipped_bytes,
        }
    }

    fn protocol_stats(&self) -> DecodeStats {
        self.stats
    }
}

impl Decoder<'_> {
    fn set_framing(&mut self, encap: EncapConfig, raw: bool) {
        let mut st = self.take_stream();
        st.encap = encap;
        st.raw = raw;
        self.stream = Some(st);
    }
}

/// The old way: decode a whole framed byte stream into `sink` with a decoder made by
/// [`Decoder::new`]. Prefer [`Decoder::with_options`] and [`rvtrace_flow::decode_all`].
pub fn decode_stream<S: FlowSink + ?Sized>(
    data: &[u8],
    encap: EncapConfig,
    raw: bool,
    dec: &mut Decoder<'_>,
    sink: &mut S,
) {
    dec.set_framing(encap, raw);
    rvtrace_flow::decode_all(dec, data, sink);
}

/// The old way: decode a framed byte stream read from `input` into `sink` (memory stays flat
/// whatever the input's size); returns the number of bytes read. Prefer
/// [`Decoder::with_options`] and [`rvtrace_flow::decode_read`].
pub fn decode_reader<R: std::io::Read, S: FlowSink + ?Sized>(
    input: R,
    encap: EncapConfig,
    raw: bool,
    dec: &mut Decoder<'_>,
    sink: &mut S,
) -> std::io::Result<u64> {
    dec.set_framing(encap, raw);
    Ok(rvtrace_flow::decode_read(dec, input, sink)?.bytes)
}

impl<'a> Decoder<'a> {
    /// A decoder whose input starts at byte `offset` of the trace, at a packet's start, with
    /// the run-time options `options` in force there (a chunk of a chunked decode,
    /// `rvtrace_flow::chunk`; [`crate::scan`] finds both): offsets in its elements and counts
    /// are the trace's. Tracing is taken as enabled (the support packet that enabled it came
    /// before).
    pub fn at(
        image: &'a Image,
        o: DecoderOptions,
        code: Code,
        offset: u64,
        options: IOptions,
    ) -> Self {
        let mut d = Decoder::with_code(image, DecoderOptions { options, ..o }, code);
        if let Some(st) = d.stream.as_mut() {
            st.base = offset;
        }
        d.bytes = offset;
        d.s.enabled = true;
        d
    }
}

/// What an E-Trace decode depends on at a chunk boundary (`rvtrace_flow::chunk`): every field
/// of the decoder but its counts, its table and its per-packet counters.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkState {
    stream: Option<(u64, usize, IOptions)>,
    /// The decoder's own state, normalized: the handlers learnt sorted (the branch queue
    /// compares its waiting outcomes only). Of it, a chunk's start guesses the handlers learnt
    /// (`tvec`) and whether they are guesses (`guessing`, the chunk's own only).
    s: Progress,
    pc: u64,
    /// `None`: guessed.
    prev: Option<u64>,
    range: Option<(u64, u64, CfClass, Option<bool>)>,
    stack: rvtrace_flow::walk::ReturnStack,
    /// Losses came before (guessed at a chunk's start, with the handlers).
    had_errors: bool,
}

impl ChunkState {
    /// The guessed parts of `before` added to this state's own (when it was guessing).
    fn inherit(s: &mut Progress, had_errors: &mut bool, before: &ChunkState) {
        if s.guessing {
            *had_errors |= before.had_errors;
            for &(k, h) in &before.s.tvec {
                if !s.tvec.iter().any(|e| e.0 == k) {
                    s.tvec.push((k, h));
                }
            }
            s.guessing = before.s.guessing;
        }
    }
}

impl rvtrace_flow::chunk::ChunkDecoder for Decoder<'_> {
    type State = ChunkState;

    fn drain<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        let mut st = self.take_stream();
        let buf = std::mem::take(&mut st.buf);
        // The chunk ends at a packet's end: every packet in the bytes is whole.
        self.feed(&mut st, &buf, true, sink);
        self.bytes = st.base;
        self.stream = Some(st);
    }

    fn begin_guess(&mut self) {
        // The sync packet says the address, privilege and context; the instruction before it
        // and the start of the range it ends are the previous chunk's.
        self.cur.guess_prev();
        self.cur.ranges.continue_open();
        self.s.guessing = true;
    }

    fn guess_read(&self) -> bool {
        self.guess_read || self.cur.guess_read()
    }

    fn state(&self) -> ChunkState {
        let mut s = self.s.clone();
        s.tvec.sort_unstable();
        ChunkState {
            stream: self
                .stream
                .as_ref()
                .map(|st| (st.base, st.buf.len(), st.options)),
            s,
            pc: self.cur.pc,
            prev: self.cur.prev_state(),
            range: self.cur.ranges.boundary(),
            stack: self.cur.stack.clone(),
            had_errors: self.stats.errors > 0 || self.errors_before,
        }
    }

    fn matches(actual: &ChunkState, guess: &ChunkState) -> bool {
        let prev = guess.prev.is_none() || actual.prev == guess.prev;
        let known = guess.s.guessing
            || (actual.had_errors, &actual.s.tvec) == (guess.had_errors, &guess.s.tvec);
        // The rest: all but the guessed parts.
        let rest = |c: &ChunkState| ChunkState {
            prev: None,
            had_errors: false,
            s: Progress {
                tvec: Vec::new(),
                guessing: false,
                ..c.s.clone()
            },
            ..c.clone()
        };
        prev && known && rest(actual) == rest(guess)
    }

    fn inherit(&mut self, before: &ChunkState) {
        ChunkState::inherit(&mut self.s, &mut self.errors_before, before);
    }

    fn complete(state: &mut ChunkState, before: &ChunkState) {
        ChunkState::inherit(&mut state.s, &mut state.had_errors, before);
        state.s.tvec.sort_unstable();
    }

    fn open_range(&self) -> (Option<(u64, u64)>, bool) {
        (self.cur.ranges.extent(), self.cur.ranges.continuing())
    }

    fn add_counts(base: &DecodeStats, end: &DecodeStats, start: &DecodeStats) -> DecodeStats {
        DecodeStats {
            packets: base.packets + end.packets - start.packets,
            instructions: base.instructions + end.instructions - start.instructions,
            errors: base.errors + end.errors - start.errors,
        }
    }
}
