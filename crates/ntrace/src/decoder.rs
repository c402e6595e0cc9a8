//! The N-Trace decoder (N-Trace chapter 11): messages + program image -> flow elements
//! ([`rvtrace_flow::FlowElement`]).
//!
//! For each message with I-CNT the decoder walks the code from the current PC (11.1): HIST bits
//! first (each direct conditional branch takes the next bit, MSB after the stop-bit first; 8.2),
//! then the rest of the I-CNT (branches not taken), counting 16-bit units per instruction (8.3).
//! The last instruction of the I-CNT is the one the message is about: the next PC is the
//! message's address (F-ADDR, or U-ADDR XOR the previous address: 8.1; with the MSB extension of
//! 9.4 when configured), or the taken target of a DirectBranch (7.2).
//!
//! Inside an I-CNT only inferable instructions may be met; two kinds of uninferable jump are
//! inferred and need no option:
//! * implicit returns (9.2): the decoder keeps its own stack of return addresses, pushed by every
//!   call and popped by every return, whatever the encoder's stack depth or mode (a return that
//!   ends a message is explicit and pops too, which keeps the stacks aligned when the encoder's
//!   stack is shallower);
//! * sequential jumps (9.1): an indirect jump right after the `lui`/`auipc`/`c.lui` that loads its
//!   register.
//!
//! ResourceFull messages carry I-CNT (RCODE 0, added up) or HIST (RCODE 1; RCODE 2 with HREPEAT
//! repeats, 9.3) without ending a block: HIST bits are walked at once, I-CNT waits for the next
//! message with an I-CNT. RepeatBranch (7.11) replays the previous branch message B-CNT times.
//!
//! Under N-Trace 1.0 ([`DecoderConfig::spec`]) the `ecall`/`ebreak`/`c.ebreak` that takes an
//! exception, or at which the hart enters Debug Mode, is not in I-CNT; the decoder reports it
//! as executed all the same (in the range before the Trap or End element), so 1.0 and rc7
//! streams of one run give one PC list (crates/ntrace/README.md, "N-Trace 1.0 and 1.0.0-rc7").
//!
//! In SiFive's dialect ([`DecoderConfig::codec`]'s [`Dialect::Sifive`]; crates/ntrace/README.md,
//! "SiFive dialect") ResourceFull RCODE 8/9 are runs of branch outcomes queued with the HIST
//! bits, In-Circuit Trace (TCODE 34/35) and DataAcquisition (TCODE 7) messages are
//! [`FlowElement::Event`]s (TCODE 34 updating the reference address), relative timestamps are
//! XORed, every synchronization resets the return stack, and any Ownership PROCESS is read.
//!
//! In HTM (a message with a HIST field) a direct conditional branch inside the I-CNT after the
//! HIST is used up has no recorded outcome: the walk stops before it with a loss, in both
//! dialects (README, "A branch past the HIST in HTM").
//!
//! Decoding starts at the first synchronization message (any message with SYNC and F-ADDR).
//! Problems are reported as [`FlowElement::Loss`] with their byte offset, once the next
//! synchronization message is found, with the number of bytes skipped to reach it;
//! [`DecodeStats::errors`] counts exactly those elements. Reserved and vendor-defined TCODEs,
//! RCODEs, EVCODEs and Ownership PROCESS encodings are no loss: they are stepped over
//! ([`FlowElement::Ignored`], 6.1). A loss is:
//! * bytes or messages that do not parse; Error messages (7.4);
//! * a stream that never synchronizes (empty, idles only, no synchronization message), one whose
//!   first bytes were lost (messages before the first synchronization: a wrapped buffer), and one
//!   without the end of trace: our encoder always ends with ProgTraceCorrelation (7.12; EVCODE 0,
//!   or 4 with trace disabled), so a stream that ends synchronized was cut and the instructions
//!   retired after its last message are unknown (NexRv's end of trace, README `--preset nexrv`
//!   item 9, sends none in some cases; such streams are reported too);
//! * code that does not match the trace: an invalid I-CNT (8.3.1), a walk that meets an
//!   uninferable jump, leaves the executable segments or meets the all-zeros illegal parcel,
//!   HIST bits left with no conditional branch for 2^20 instructions (a loop without branches
//!   such as `j .`: the walk would never end), a
//!   DirectBranch that does not end at a branch, an IndirectBranch(Hist) that does not end at an
//!   uninferable jump, a synchronization message whose F-ADDR is not where the walk leads. These
//!   catch a corrupted I-CNT, HIST or U-ADDR at the first message that cannot be about where the
//!   walk went, instead of walking on (N-Trace gives the decoder nothing else to check against;
//!   what stays undetected is another valid path, see `tests/campaign.rs`).

use crate::codec::mseo::{Deframer, RawMessage};
use crate::codec::{
    evcode, layout, parse, rcode, sync, tcode, Addr, Body, CodecConfig, Dialect, Message, Process,
};
use crate::insn::{Classifier, LinkRule};
use crate::options::Spec;
use rvtrace_flow::walk::{After, BlockRules, Cursor, SequentialJumps, WalkError};
use rvtrace_flow::{EventKind, FlowElement, FlowSink, LossReason, SyncReason, TraceDecoder};
use rvtrace_image::code::Code;
use rvtrace_image::space::{Position, Spaces};
use rvtrace_image::Image;
use rvtrace_isa::{CfClass, IsaConfig};
use std::collections::VecDeque;

/// Decoder options (the encoder options a decoder must know; N-Trace chapter 4).
#[derive(Clone, Copy, Debug)]
pub struct DecoderConfig {
    /// The byte format (SRC width).
    pub codec: CodecConfig,
    /// Decode only messages with this SRC (N-Trace 11.2); `None` decodes every message.
    pub src: Option<u16>,
    /// trTeInstExtendAddrMSB: addresses use the MSB extension (N-Trace 9.4).
    pub extend_addr_msb: bool,
    /// trTeInstEnAllJumps: direct jumps are reported as taken branches (N-Trace chapter 2 note).
    pub all_jumps: bool,
    /// Link registers for calls and returns.
    pub link: LinkRule,
    /// ISA (XLEN, Zcmp, Zcmt) of the traced hart.
    pub isa: IsaConfig,
    /// Largest I-CNT field accepted (default [`MAX_ICNT`]); the encoder's I-CNT counter width
    /// bounds it (`icnt-bits` in the sidecar: 8.3).
    pub max_icnt: u64,
    /// Largest B-CNT or HREPEAT replayed (default [`MAX_REPEAT`]).
    pub max_repeat: u64,
    /// The text of the specification the encoder followed where 1.0 and rc7 differ (which
    /// synchronizations reset the state; whether a trap's `ecall`/`ebreak` is in I-CNT).
    pub spec: Spec,
    /// Depth of the decoder's return-address stack (deeper calls drop the oldest entry):
    /// at least the encoder's (9.2), default [`MAX_STACK`].
    pub stack_depth: usize,
    /// Address width of the encoder: addresses are sign-extended from this bit (SiFive's
    /// `addrbits`; `None`: XLEN).
    pub addr_bits: Option<u8>,
    /// Width of the encoder's timestamp counter: a time that goes backwards wrapped (SiFive's
    /// `tsSize`; `None`: 64).
    pub tstamp_bits: Option<u8>,
}

impl DecoderConfig {
    /// Defaults for a hart: no SRC, no MSB extension, link registers x1/x5.
    pub fn new(isa: IsaConfig) -> Self {
        DecoderConfig {
            codec: CodecConfig::default(),
            src: None,
            extend_addr_msb: false,
            all_jumps: false,
            link: LinkRule::Spec,
            isa,
            max_icnt: MAX_ICNT,
            max_repeat: MAX_REPEAT,
            spec: Spec::V1_0,
            stack_depth: MAX_STACK,
            addr_bits: None,
            tstamp_bits: None,
        }
    }

    /// Whether a synchronizing message with this SYNC resets the encoder state: by the spec
    /// ([`Spec::sync_resets_encoder`]); in SiFive's dialect every one (its simple-counting
    /// return stack is cleared at every sync, SYNC 6 included).
    pub const fn sync_resets_encoder(&self, sync: u8) -> bool {
        matches!(self.codec.dialect, Dialect::Sifive) || self.spec.sync_resets_encoder(sync)
    }

    fn sifive(&self) -> bool {
        self.codec.dialect == Dialect::Sifive
    }

    /// Settings that contradict each other (a usage error): an SRC that does not fit its field.
    pub fn validate(&self) -> Result<(), crate::options::ConfigError> {
        match self.src {
            Some(id) => crate::options::check_src(id, self.codec.src_bits),
            None => Ok(()),
        }
    }

    /// The reference decoder's (NexRv) view of calls and returns (`--link-registers nexrv`):
    /// every `jal`/`jalr` writing a register is a call, only `ret` is a return; rc7's rules.
    pub const fn nexrv(mut self) -> Self {
        self.link = LinkRule::NexRv;
        self.spec = Spec::Rc7;
        self
    }
}

/// Counts from a decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Bytes read.
    pub bytes: u64,
    /// Messages (of the decoded SRC).
    pub messages: u64,
    /// Messages of other SRCs.
    pub other_src: u64,
    /// Instructions decoded.
    pub instructions: u64,
    /// Losses reported ([`FlowElement::Loss`] elements given to the sink: one count for the
    /// summary and the warnings).
    pub errors: u64,
    /// Bytes skipped after problems (up to the next synchronization message).
    pub skipped_bytes: u64,
    /// Messages stepped over ([`FlowElement::Ignored`]): reserved and vendor-defined TCODEs,
    /// RCODEs, EVCODEs and Ownership PROCESS encodings.
    pub ignored: u64,
}

/// Largest I-CNT accepted in one field; larger values are corrupt data (NTRACE_MAX_ICNT is 22
/// bits, N-Trace 6.2 Table 10; a little room is left for counters that overflow past it).
pub const MAX_ICNT: u64 = 1 << 24;
/// Instructions walked while looking for the branches of a HIST before giving up (a HIST-only
/// walk, or a message's walk with HIST bits left: its I-CNT cannot bound it, the walk may spin
/// in a loop without branches, `j .`, spending no bit).
const MAX_WALK_WITHOUT_BRANCH: u64 = 1 << 20;
/// Default depth of the decoder's return-address stack (deeper calls drop the oldest entry).
pub const MAX_STACK: usize = 1 << 16;
/// Largest B-CNT or HREPEAT replayed (NTRACE_MAX_BCNT and NTRACE_MAX_HREPEAT are 18 bits in the
/// ratified text).
pub const MAX_REPEAT: u64 = 1 << 20;

/// HIST bits waiting to be consumed, oldest first (N-Trace 8.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct HistQueue {
    /// The front pattern (without its stop-bit), in a register for the walk's every branch.
    pat: u64,
    /// Its bits not consumed yet (0: the queue is empty).
    left: u32,
    /// Its number of bits.
    n: u32,
    /// Times it is still to be repeated after this one.
    again: u64,
    /// The patterns after it: (pattern without its stop-bit, number of bits, times).
    chunks: VecDeque<(u64, u32, u64)>,
}

impl HistQueue {
    fn push(&mut self, hist: u64, repeat: u64) -> Result<(), LossReason> {
        if hist == 0 {
            return Err(LossReason::Malformed("HIST 0 has no stop-bit".into()));
        }
        let n = 63 - hist.leading_zeros();
        if n > 0 && repeat > 0 {
            if self.left == 0 {
                self.load(hist, n, repeat);
            } else {
                self.chunks.push_back((hist, n, repeat));
            }
        }
        Ok(())
    }

    fn load(&mut self, pat: u64, n: u32, times: u64) {
        self.pat = pat;
        self.n = n;
        self.left = n;
        self.again = times - 1;
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.left == 0
    }

    #[inline]
    fn pop(&mut self) -> Option<bool> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let bit = (self.pat >> self.left) & 1 != 0;
        if self.left == 0 {
            self.next_pattern();
        }
        Some(bit)
    }

    #[cold]
    fn next_pattern(&mut self) {
        if self.again > 0 {
            self.again -= 1;
            self.left = self.n;
        } else if let Some((pat, n, times)) = self.chunks.pop_front() {
            self.load(pat, n, times);
        }
    }

    fn clear(&mut self) {
        self.chunks.clear();
        self.left = 0;
    }

    /// The queue with what no later pop reads left out (the pattern of an empty queue), for
    /// comparing states.
    fn normalized(&self) -> HistQueue {
        if self.left == 0 {
            HistQueue::default()
        } else {
            self.clone()
        }
    }
}

/// How the last instruction of a walked I-CNT ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// DirectBranch: a taken direct conditional branch (or a direct jump with all-jumps).
    Direct,
    /// Next PC from an address field; B-TYPE says whether a trap was taken. `sync`: the field is
    /// a synchronization message's F-ADDR (the message need not be about a jump).
    Addr { addr: u64, btype: u8, sync: bool },
    /// ProgTraceCorrelation: execution stops after the last instruction.
    Stop,
}

/// The previous branch message, for RepeatBranch (N-Trace 7.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Repeat {
    icnt: u64,
    hist: Option<u64>,
    end: End,
}

/// The rules of [`Decoder::walk`]'s general step while HIST bits are left (N-Trace 11.1), for
/// [`Cursor::walk_blocks`]: runs are walked whole (only transfers take HIST bits; at most
/// [`MAX_WALK_WITHOUT_BRANCH`] instructions from a branch), each conditional
/// branch takes a bit, jumps with a static target take none (without all-jumps: the caller
/// checks), every instruction spends its half-words of the budget; the walk ends at the
/// transfer that leaves no bit and no budget, and stops where the bits run out.
struct HistBlocks<'s> {
    s: &'s mut Progress,
    /// The walk has an end (I-CNT): not HIST-only. Either way it is at most
    /// [`MAX_WALK_WITHOUT_BRANCH`] instructions from a branch while bits are left.
    has_end: bool,
    since_branch: u64,
}

impl BlockRules for HistBlocks<'_> {
    #[inline]
    fn run(&mut self, count: u64, halfwords: u64) -> bool {
        if self.since_branch + count > MAX_WALK_WITHOUT_BRANCH {
            return false;
        }
        self.s.budget -= halfwords as i64;
        self.since_branch += count;
        true
    }

    #[inline]
    fn branch(&mut self, halfwords: u64) -> Option<bool> {
        if self.since_branch + 1 > MAX_WALK_WITHOUT_BRANCH {
            return None;
        }
        self.s.budget -= halfwords as i64;
        self.since_branch = 0;
        // HIST bits are left (the walk stops when they run out).
        Some(self.s.hist.pop() == Some(true))
    }

    #[inline]
    fn jump(&mut self, _class: CfClass, halfwords: u64) -> bool {
        if self.since_branch + 1 > MAX_WALK_WITHOUT_BRANCH {
            return false;
        }
        self.s.budget -= halfwords as i64;
        self.since_branch += 1;
        true
    }

    #[inline]
    fn after(&mut self) -> After {
        if !self.s.hist.is_empty() {
            After::Go
        } else if self.has_end && self.s.budget == 0 {
            // The message's own end decides the next PC.
            After::Last
        } else {
            After::Stop
        }
    }
}

/// How [`Decoder::walk_blocks`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocks {
    /// At the walk's last instruction.
    Last,
    /// Somewhere after walking some instructions.
    Walked,
    /// Without walking any.
    Stuck,
}

/// Last instruction of a walk: where it was, and where execution would go without a message.
#[derive(Clone, Copy, Debug)]
struct Last {
    pc: u64,
    natural: Option<u64>,
}

/// The decoder, a [`rvtrace_flow::TraceDecoder`]: made with [`Decoder::new`] from its
/// options ([`DecoderConfig`], presets [`DecoderConfig::nexrv`]) and the image; feed it bytes
/// with [`push`](Decoder::push), then call [`finish`](Decoder::finish) (the inherent methods
/// return the protocol's [`DecodeStats`], the trait's the common counts).
pub struct Decoder<'a> {
    /// The walk over the image's block table (straight-line runs in one step), with the open
    /// range and the return stack; `cur.pc` is the next instruction to retire.
    cur: Cursor<'a>,
    cfg: DecoderConfig,
    deframer: Deframer,
    stats: DecodeStats,
    /// Everything else the decode depends on (one list: a chunk's state is a copy of it).
    s: Progress,
    /// The message being walked has a HIST field (HTM): a direct conditional branch inside its
    /// I-CNT with no HIST bit left has no recorded outcome.
    walk_htm: bool,
    /// The program's address spaces, when its files have scopes ([`Decoder::with_spaces`]),
    /// and the one walked.
    spaces: Option<(&'a Spaces, usize)>,
}

/// The decoder's state between messages, but for the walk (`Decoder::cur`), the deframer and
/// the counts: [`ChunkState`] is a copy of it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Progress {
    synced: bool,
    ever_synced: bool,
    ref_addr: u64,
    hist: HistQueue,
    budget: i64,
    repeat: Option<Repeat>,
    time: Option<u64>,
    loss: Option<(u64, LossReason)>,
    skipped_start: Option<u64>,
    ended: bool,
    /// A ProgTraceCorrelation came before the first synchronization: the trace starts disabled
    /// (8.6 Corner Cases), so a stream that never synchronizes after it lost nothing. Read only
    /// before the first synchronization (`finish`).
    starts_disabled: bool,
    /// The sink asked to stop ([`FlowSink::stop_requested`]).
    stopped: bool,
    /// `ref_addr` is an address of the trace (a synchronization or SiFive's In-Circuit Trace
    /// with sync gave it since the last loss), so an event's U-ADDR-like field decodes.
    ref_known: bool,
    /// SiFive's event messages (In-Circuit Trace, DataAcquisition) came: a trace without
    /// synchronization is an event trace, not a lost one.
    events: bool,
    /// The privilege and context the Ownership messages reported: they choose the address
    /// space ([`Decoder::with_spaces`]).
    position: Position,
}

impl<'a> Decoder<'a> {
    /// A decoder for the program in `image`.
    pub fn new(image: &'a Image, cfg: DecoderConfig) -> Self {
        Decoder::with_code(image, cfg, Decoder::code(image, &cfg))
    }

    /// The block table a decoder with `cfg` walks in `image` (built once, shared by the
    /// decoders of a chunked decode: [`Decoder::with_code`]).
    pub fn code(image: &Image, cfg: &DecoderConfig) -> Code {
        Classifier {
            isa: cfg.isa,
            link: cfg.link,
        }
        .code(image)
    }

    /// A decoder for the program in `image` with its block table `code` ([`Decoder::code`] of
    /// the same `image` and `cfg`).
    pub fn with_code(image: &'a Image, cfg: DecoderConfig, code: Code) -> Self {
        let cur = Cursor::new(
            code,
            image,
            cfg.isa.xlen.addr_mask(),
            SequentialJumps::RightBefore,
            cfg.stack_depth.max(1),
        );
        Decoder {
            cur,
            cfg,
            deframer: Deframer::new(),
            stats: DecodeStats::default(),
            s: Progress::default(),
            walk_htm: false,
            spaces: None,
        }
    }

    /// A decoder for a program of several address spaces (`rvtrace_image::space`; their block
    /// tables built with [`Decoder::code`]): it walks the space of the privilege and context
    /// the Ownership messages report (7.1; "Decoding trace of operating systems"), from the
    /// message after them on. Ownership follows every synchronizing message and every trap or
    /// trap return that changes privilege (7.1), before the flow in the new space is walked.
    pub fn with_spaces(spaces: &'a Spaces, cfg: DecoderConfig) -> Self {
        let i = spaces.index(None, None);
        let space = spaces.space(i);
        let mut d = Decoder::with_code(&space.image, cfg, space.code.clone());
        d.spaces = Some((spaces, i));
        d
    }

    /// The flow runs at `privilege` and in `context` from here on (`None`: as before): walk
    /// that address space's code.
    fn enter(&mut self, privilege: Option<u8>, context: Option<u64>) {
        self.s.position.report(privilege, context);
        if let Some((spaces, at)) = self.spaces {
            let i = spaces.index_at(&self.s.position);
            if i != at {
                let space = spaces.space(i);
                self.cur.set_space(space.code.clone(), &space.image);
                self.spaces = Some((spaces, i));
            }
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> DecodeStats {
        self.stats
    }

    /// Decode more bytes.
    pub fn push<S: FlowSink + ?Sized>(&mut self, data: &[u8], sink: &mut S) {
        if self.s.stopped {
            return;
        }
        // The deframer is taken out so that it can lend its messages to `on_raw`.
        let mut deframer = std::mem::take(&mut self.deframer);
        deframer.push_slice(data, |frame| {
            if self.s.stopped {
                return;
            }
            match frame {
                Ok(raw) => self.on_raw(raw, sink),
                Err(e) => self.lose(e.offset(), LossReason::Malformed(e.to_string()), sink),
            }
            self.s.stopped = sink.stop_requested();
        });
        self.deframer = deframer;
        self.stats.bytes += data.len() as u64;
    }

    /// End of the trace data: reports an unfinished message or an unresolved loss, and ends the
    /// flow with [`FlowElement::End`] (unless a ProgTraceCorrelation already did).
    pub fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> DecodeStats {
        if self.s.stopped || sink.stop_requested() {
            self.s.stopped = true;
            return self.stats;
        }
        if self.cfg.sifive() && self.s.synced && self.s.budget > 0 {
            self.walk_cut_tail(sink);
        }
        if let Some(e) = self.deframer.finish() {
            self.lose(e.offset(), LossReason::EndLost(e.to_string()), sink);
        }
        self.flush(sink);
        let end = self.stats.bytes;
        if let Some((offset, reason)) = self.s.loss.take() {
            self.stats.skipped_bytes += end - offset;
            let reason = reason.map_text(|t| format!("{t}; no synchronization message follows"));
            self.report_loss(offset, end - offset, reason, sink);
        } else if let Some(start) = self.s.skipped_start.take() {
            self.stats.skipped_bytes += end - start;
            let reason = LossReason::NoTrace("no synchronization message in the trace".into());
            self.report_loss(start, end - start, reason, sink);
        } else if !self.s.ever_synced && !self.s.starts_disabled && !self.s.events {
            // Nothing at all (empty, idles only): the encoder's first message is a
            // synchronization (8.6 Corner Cases), so this is not a trace of anything.
            self.stats.skipped_bytes += end;
            let reason = LossReason::NoTrace(match (end, self.cfg.src) {
                (0, _) => "the trace is empty (no synchronization message)".into(),
                (_, Some(src)) if self.stats.other_src > 0 => format!(
                    "no message with SRC {src} in the trace ({} messages of other SRCs: is the SRC ID right?)",
                    self.stats.other_src
                ),
                _ => "no message in the trace (no synchronization message)".into(),
            });
            self.report_loss(0, end, reason, sink);
        } else if self.s.synced {
            // Our encoder ends every trace with ProgTraceCorrelation (7.12: it "allows the
            // decoder to determine the PC where an execution or the trace actually stopped");
            // without it the trace was cut, and what retired after the last message is unknown.
            let reason = LossReason::EndLost(
                "the trace ends without ProgTraceCorrelation (the end of trace, N-Trace 7.12): \
                          it was cut, and the instructions after the last message are unknown"
                    .into(),
            );
            self.report_loss(end, 0, reason, sink);
        }
        if !self.s.ended || self.s.synced {
            sink.element(&FlowElement::End { offset: end });
        }
        self.s.synced = false;
        self.s.ended = true;
        self.stats
    }

    fn addr_mask(&self) -> u64 {
        self.cfg.isa.xlen.addr_mask()
    }

    fn full_addr(&self, a: &Addr) -> u64 {
        full_addr(&self.cfg, a)
    }

    fn flush<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        self.cur.ranges.flush(sink);
    }

    fn emit<S: FlowSink + ?Sized>(&mut self, sink: &mut S, e: FlowElement) {
        self.flush(sink);
        sink.element(&e);
    }

    /// Something went wrong at `offset`: stop decoding until the next synchronization message.
    fn lose<S: FlowSink + ?Sized>(&mut self, offset: u64, reason: LossReason, sink: &mut S) {
        self.flush(sink);
        if self.s.loss.is_none() {
            self.s.loss = Some((offset, reason));
        }
        self.s.synced = false;
        self.s.ref_known = false;
        self.reset_state();
    }

    /// Give the sink a [`FlowElement::Loss`] and count it: the one place losses are counted.
    fn report_loss<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        skipped: u64,
        reason: LossReason,
        sink: &mut S,
    ) {
        self.stats.errors += 1;
        self.emit(
            sink,
            FlowElement::Loss {
                offset,
                skipped: Some(skipped),
                reason,
            },
        );
    }

    fn reset_state(&mut self) {
        self.s.hist.clear();
        self.s.budget = 0;
        self.cur.stack.clear();
        self.cur.forget_prev();
        self.s.repeat = None;
    }

    fn on_raw<S: FlowSink + ?Sized>(&mut self, raw: &RawMessage, sink: &mut S) {
        let src_bits = self.cfg.codec.src_bits.min(12) as u32;
        if let (Some(want), true) = (self.cfg.src, src_bits > 0) {
            let src = raw.segment(0).map_or(0, |s| s.field(6, src_bits)) as u16;
            if src != want {
                self.stats.other_src += 1;
                return;
            }
        }
        self.stats.messages += 1;
        match parse(raw, &self.cfg.codec) {
            Ok(m) => self.on_message(&m, raw, sink),
            Err(e) => self.lose(raw.offset, LossReason::Malformed(e.to_string()), sink),
        }
    }

    /// Steps over `raw`, a message the decoder does not interpret (N-Trace 6.1: reserved and
    /// vendor-defined messages "should be ignored by decoders interested in program flow only";
    /// the same for a reserved or vendor-defined code in a field of a known message): the
    /// MSEO framing delimits it, so no synchronisation is lost. Reported as a
    /// [`FlowElement::Ignored`] with its fields, and counted.
    fn ignore<S: FlowSink + ?Sized>(&mut self, raw: &RawMessage, kind: String, sink: &mut S) {
        self.stats.ignored += 1;
        // Before the first synchronization a message stepped over is still a message the trace
        // had there (or a cut message's tail that reads as one), as for any other message.
        self.before_first_sync(raw.offset);
        let mut fields = String::new();
        for f in layout(raw, &self.cfg.codec).spans() {
            if !fields.is_empty() {
                fields.push(' ');
            }
            match f.value {
                Some(v) => fields.push_str(&format!("{}={v:#x}", f.name)),
                None => fields.push_str(&format!("{}=(wider than 64 bits)", f.name)),
            }
        }
        let offset = raw.offset;
        self.emit(
            sink,
            FlowElement::Ignored {
                offset,
                kind,
                fields,
            },
        );
    }

    /// A message at `offset` before the first synchronization: the trace's start may be lost
    /// (a wrapped buffer), reported when synchronization comes (the first such message's offset).
    fn before_first_sync(&mut self, offset: u64) {
        if !self.s.ever_synced && self.s.skipped_start.is_none() && self.s.loss.is_none() {
            self.s.skipped_start = Some(offset);
        }
    }

    fn on_message<S: FlowSink + ?Sized>(&mut self, m: &Message, raw: &RawMessage, sink: &mut S) {
        let offset = raw.offset;
        if m.body.sync().is_some() {
            return self.on_sync(m, offset, sink);
        }
        match m.body {
            Body::Ict { .. } | Body::DataAcquisition { .. } => {
                return self.on_event(m, offset, sink);
            }
            Body::ResourceFull {
                rcode: rcode::SIFIVE_NOT_TAKEN | rcode::SIFIVE_TAKEN,
                ..
            } if self.cfg.sifive() => {}
            Body::Ownership { process } if self.cfg.sifive() => {
                return self.on_sifive_ownership(m, process, offset, sink);
            }
            _ => return self.on_standard(m, raw, sink),
        }
        self.on_flow(m, offset, sink)
    }

    /// The messages N-Trace defines, and its rule for codes it does not.
    fn on_standard<S: FlowSink + ?Sized>(&mut self, m: &Message, raw: &RawMessage, sink: &mut S) {
        // Reserved and vendor-defined codes (N-Trace 6.1 "Fields in Messages", 7.8 RCODE,
        // 7.12 EVCODE, 7.1 PROCESS): stepped over, synchronised or not.
        match m.body {
            Body::Other { tcode } => {
                let what = reserved_or_vendor(tcode::is_vendor(tcode));
                return self.ignore(raw, format!("{what} TCODE {tcode}"), sink);
            }
            Body::ResourceFull { rcode, .. } if rcode > rcode::HIST_REPEAT => {
                let what = reserved_or_vendor(rcode >= rcode::VENDOR_FIRST);
                let kind = format!("ResourceFull with the {what} RCODE {rcode}");
                return self.ignore(raw, kind, sink);
            }
            Body::ProgTraceCorrelation { evcode, .. } if !evcode_defined(evcode) => {
                // Its I-CNT and HIST still end the flow: only the reason is unknown.
                let what = reserved_or_vendor(evcode >= evcode::VENDOR_FIRST);
                let kind = format!(
                    "ProgTraceCorrelation with the {what} EVCODE {evcode} (its I-CNT and HIST are walked)"
                );
                self.ignore(raw, kind, sink);
            }
            _ => {}
        }
        if let Body::Ownership { process } = m.body {
            let p = Process::from_field(process);
            if let Err(why) = check_process(&p) {
                return self.ignore(raw, format!("Ownership with a PROCESS of {why}"), sink);
            }
            let (privilege, context) = (p.ingress_priv(), (p.format >= 2).then_some(p.context));
            self.emit(
                sink,
                FlowElement::Context {
                    privilege: Some(privilege),
                    context,
                },
            );
            self.enter(Some(privilege), context);
            return self.time(m, false, sink);
        }
        self.on_flow(m, raw.offset, sink)
    }

    /// A message about the program flow (not a synchronization).
    fn on_flow<S: FlowSink + ?Sized>(&mut self, m: &Message, offset: u64, sink: &mut S) {
        if !self.s.synced {
            // N-Trace 7.4: messages were lost, also while trace was off (an encoder that closes
            // its trace before saying so: `Encoder::lost`).
            if let (Body::Error { etype, ecode }, true) = (m.body, self.s.ever_synced) {
                let reason = LossReason::Overflow(format!(
                    "Error message: ETYPE {etype} ECODE {ecode:#x} (trace messages were lost, N-Trace 7.4)"
                ));
                return self.lose(offset, reason, sink);
            }
            if let Body::ProgTraceCorrelation { .. } = m.body {
                if !self.s.ever_synced {
                    self.s.starts_disabled = true;
                }
                return; // trace disabled (again) before it started: nothing lost
            }
            self.before_first_sync(offset);
            return;
        }
        let r = match m.body {
            Body::DirectBranch { icnt } => {
                let rep = Repeat {
                    icnt,
                    hist: None,
                    end: End::Direct,
                };
                self.s.repeat = Some(rep);
                self.replay(rep, sink)
            }
            Body::IndirectBranch { btype, icnt, uaddr } => {
                self.indirect(btype, icnt, uaddr, None, sink)
            }
            Body::IndirectBranchHist {
                btype,
                icnt,
                uaddr,
                hist,
            } => self.indirect(btype, icnt, uaddr, Some(hist), sink),
            Body::ResourceFull {
                rcode,
                rdata0,
                rdata1,
            } => match rcode {
                rcode::ICNT => {
                    if rdata0 > self.cfg.max_icnt {
                        Err(LossReason::Malformed(format!("I-CNT {rdata0} is too large")))
                    } else {
                        self.s.budget += rdata0 as i64;
                        Ok(())
                    }
                }
                rcode::HIST => self.hist_only(rdata0, 1, sink),
                // SiFive: the next RDATA direct conditional branches not taken / taken, a one-bit
                // HIST repeated (README, "SiFive dialect"; only in the dialect, stepped over
                // otherwise).
                rcode::SIFIVE_NOT_TAKEN | rcode::SIFIVE_TAKEN => {
                    if rdata0 == 0 || rdata0 > self.cfg.max_repeat {
                        Err(LossReason::Malformed(format!(
                            "ResourceFull RCODE {rcode} with a count of {rdata0}"
                        )))
                    } else {
                        let bit = u64::from(rcode == rcode::SIFIVE_TAKEN);
                        self.hist_only(0b10 | bit, rdata0, sink)
                    }
                }
                rcode::HIST_REPEAT => {
                    let n = rdata1.unwrap_or(1);
                    if n > self.cfg.max_repeat {
                        Err(LossReason::Malformed(format!("HREPEAT {n} is too large")))
                    } else {
                        self.hist_only(rdata0, n, sink)
                    }
                }
                // Reserved and vendor-defined RCODEs were stepped over above.
                _ => Ok(()),
            },
            Body::RepeatBranch { bcnt } => match self.s.repeat {
                None => Err(LossReason::Mismatch(
                    "RepeatBranch without a previous branch message".into(),
                )),
                Some(_) if bcnt > self.cfg.max_repeat => Err(LossReason::Malformed(format!(
                    "B-CNT {bcnt} is too large"
                ))),
                Some(rep) => (0..bcnt).try_for_each(|_| self.replay(rep, sink)),
            },
            Body::ProgTraceCorrelation {
                icnt, hist, evcode, ..
            } => {
                let r = self.walk_message(icnt, hist, End::Stop, sink);
                if r.is_ok() {
                    if self.cfg.spec == Spec::V1_0 && evcode == crate::codec::evcode::DEBUG {
                        // The hart stopped at an `ebreak` (Debug Mode), which 1.0 leaves out of
                        // I-CNT (8.3.3): reported as the last instruction, as at a trap.
                        self.step_env_trap(sink);
                    }
                    self.time(m, false, sink);
                    self.emit(sink, FlowElement::End { offset });
                    self.s.synced = false;
                    self.s.ended = true;
                    self.reset_state();
                    return;
                }
                r
            }
            Body::Error { etype, ecode } => Err(LossReason::Overflow(format!(
                "Error message: ETYPE {etype} ECODE {ecode:#x} (trace messages were lost, N-Trace 7.4)"
            ))),
            Body::Other { .. }
            | Body::DataAcquisition { .. }
            | Body::Ict { .. }
            | Body::Ownership { .. }
            | Body::ProgTraceSync { .. }
            | Body::DirectBranchSync { .. }
            | Body::IndirectBranchSync { .. }
            | Body::IndirectBranchHistSync { .. } => Ok(()),
        };
        match r {
            Ok(()) => self.time(m, false, sink),
            Err(reason) => self.lose(offset, reason, sink),
        }
    }

    /// SiFive's Ownership ([`Dialect::Sifive`]): any PROCESS value is a message of the trace
    /// (software writes ITC stimulus 15/31 as Ownership in its "ownership" instrumentation
    /// mode), decoded where it decodes, else an [`EventKind::Process`] event with the raw value;
    /// an hcontext of 0, which SiFive sends after the scontext at every sync, keeps the scontext.
    fn on_sifive_ownership<S: FlowSink + ?Sized>(
        &mut self,
        m: &Message,
        process: u64,
        offset: u64,
        sink: &mut S,
    ) {
        let p = Process::from_field(process);
        let e = if check_process(&p).is_err() {
            FlowElement::Event {
                offset,
                kind: EventKind::Process,
                addr: None,
                value: Some(process),
            }
        } else {
            let keeps = p.format == Process::FORMAT_HCONTEXT && p.context == 0;
            FlowElement::Context {
                privilege: Some(p.ingress_priv()),
                context: (p.format >= 2 && !keeps).then_some(p.context),
            }
        };
        if let FlowElement::Context { privilege, context } = e {
            self.enter(privilege, context);
        }
        self.emit(sink, e);
        self.time(m, false, sink);
    }

    /// SiFive's event messages ([`Dialect::Sifive`]): In-Circuit Trace (TCODE 34, 35) and
    /// DataAcquisition (TCODE 7), reported as [`FlowElement::Event`]s whether the decoder is
    /// synchronized or not (an event trace has no synchronization). TCODE 34's `CKDATA0` is
    /// XOR-compressed like U-ADDR and updates the reference address; TCODE 35's is a full
    /// address; control with CKDF 0 has none. A TCODE 35 "trace on" or "exit debug" control
    /// synchronizes an unsynchronized decoder at its address (the message has no SYNC field; its
    /// control code says the same).
    fn on_event<S: FlowSink + ?Sized>(&mut self, m: &Message, offset: u64, sink: &mut S) {
        self.s.events = true;
        let (sync, cksrc, ckdf, ckdata0, ckdata1) = match m.body {
            Body::Ict {
                sync,
                cksrc,
                ckdf,
                ckdata0,
                ckdata1,
            } => (sync, cksrc, ckdf, ckdata0, ckdata1),
            Body::DataAcquisition { idtag, dqdata } => {
                let e = FlowElement::Event {
                    offset,
                    kind: EventKind::Write { tag: idtag },
                    addr: None,
                    value: Some(dqdata),
                };
                self.emit(sink, e);
                return self.time(m, false, sink);
            }
            _ => return,
        };
        // Control with CKDF 0 carries a code, CKSRC 12 (performance counters in the newer SiFive
        // decoder's output, "PPCx8") counter values: no address, the reference stays.
        let addr = if (cksrc == ict::CONTROL && ckdf == 0) || cksrc == ict::COUNTERS {
            None
        } else if sync {
            self.s.ref_addr = self.full_addr(&ckdata0);
            self.s.ref_known = true;
            Some(self.s.ref_addr)
        } else {
            self.s.ref_addr = (self.s.ref_addr ^ self.full_addr(&ckdata0)) & self.addr_mask();
            self.s.ref_known.then_some(self.s.ref_addr)
        };
        let (kind, value) = match cksrc {
            ict::CONTROL if ckdf == 0 => (EventKind::Control, Some(ckdata0.field)),
            ict::CONTROL => (EventKind::Control, ckdata1),
            ict::EXTERNAL_TRIGGER => (EventKind::ExternalTrigger, ckdata1),
            // CKDF 1 (event trace): CKDATA1 is the target XOR the call's address, and the
            // target is the next reference address (SiFive's decoder).
            ict::CALL => {
                let target = ckdata1.map(|d| (self.s.ref_addr ^ (d << 1)) & self.addr_mask());
                if let Some(t) = target {
                    self.s.ref_addr = t;
                }
                (EventKind::Call, target.filter(|_| addr.is_some()))
            }
            ict::EXCEPTION => (EventKind::Exception, ckdata1),
            ict::INTERRUPT => (EventKind::Interrupt, ckdata1),
            ict::CONTEXT => (EventKind::Context, ckdata1),
            ict::WATCHPOINT => (EventKind::Watchpoint, ckdata1),
            ict::PC_SAMPLE => (EventKind::PcSample, None),
            ict::COUNTERS => (EventKind::Other(ict::COUNTERS), Some(ckdata0.field)),
            c => (EventKind::Other(c), ckdata1),
        };
        self.emit(
            sink,
            FlowElement::Event {
                offset,
                kind,
                addr,
                value,
            },
        );
        let starts = matches!(ckdata1, Some(ict::TRACE_ON | ict::EXIT_DEBUG));
        if sync && cksrc == ict::CONTROL && starts && !self.s.synced {
            let code = if ckdata1 == Some(ict::TRACE_ON) {
                sync::TRACE_ENABLE
            } else {
                sync::EXIT_DEBUG
            };
            let start = Message {
                src: m.src,
                body: Body::ProgTraceSync {
                    sync: code,
                    icnt: 0,
                    faddr: ckdata0,
                },
                tstamp: m.tstamp,
            };
            return self.on_sync(&start, offset, sink);
        }
        self.time(m, sync, sink);
    }

    /// TSTAMP: absolute in synchronization messages, relative otherwise (N-Trace 8.5): added to
    /// the previous time, in SiFive's dialect combined with it by XOR.
    fn time<S: FlowSink + ?Sized>(&mut self, m: &Message, absolute: bool, sink: &mut S) {
        let Some(t) = m.tstamp else { return };
        let bits = self.cfg.tstamp_bits.filter(|&b| b < 64).map(u32::from);
        let mut time = match (absolute, self.s.time) {
            // A counter narrower than 64 bits: its wraps so far are kept (SiFive's decoder).
            (true, Some(prev)) if self.cfg.sifive() && bits.is_some() => {
                t | (prev & (u64::MAX << bits.unwrap_or(0)))
            }
            (true, _) => t,
            (false, Some(prev)) if self.cfg.sifive() => prev ^ t,
            (false, Some(prev)) => prev.wrapping_add(t),
            (false, None) => return,
        };
        if let (Some(b), Some(prev), true) = (bits, self.s.time, self.cfg.sifive()) {
            if time < prev {
                time = time.wrapping_add(1 << b);
            }
        }
        self.s.time = Some(time);
        self.emit(sink, FlowElement::Time { time });
    }

    fn indirect<S: FlowSink + ?Sized>(
        &mut self,
        btype: u8,
        icnt: u64,
        uaddr: Addr,
        hist: Option<u64>,
        sink: &mut S,
    ) -> Result<(), LossReason> {
        let addr = (self.s.ref_addr ^ self.full_addr(&uaddr)) & self.addr_mask();
        self.s.ref_addr = addr;
        let rep = Repeat {
            icnt,
            hist,
            end: End::Addr {
                addr,
                btype,
                sync: false,
            },
        };
        self.s.repeat = Some(rep);
        self.replay(rep, sink)
    }

    fn replay<S: FlowSink + ?Sized>(
        &mut self,
        rep: Repeat,
        sink: &mut S,
    ) -> Result<(), LossReason> {
        self.walk_message(rep.icnt, rep.hist, rep.end, sink)
    }

    fn on_sync<S: FlowSink + ?Sized>(&mut self, m: &Message, offset: u64, sink: &mut S) {
        let (sync, btype, icnt, faddr, hist) = match m.body {
            Body::ProgTraceSync { sync, icnt, faddr } => (sync, 0, icnt, faddr, None),
            Body::DirectBranchSync { sync, icnt, faddr } => (sync, 0, icnt, faddr, None),
            Body::IndirectBranchSync {
                sync,
                btype,
                icnt,
                faddr,
            } => (sync, btype, icnt, faddr, None),
            Body::IndirectBranchHistSync {
                sync,
                btype,
                icnt,
                faddr,
                hist,
            } => (sync, btype, icnt, faddr, Some(hist)),
            _ => return,
        };
        let addr = self.full_addr(&faddr);
        let was_synced = self.s.synced;
        if self.s.synced {
            let r = if let Body::DirectBranchSync { .. } = m.body {
                // A taken branch (7.5): its target must be F-ADDR.
                self.walk_message(icnt, hist, End::Direct, sink)
                    .and_then(|()| match self.cur.pc == addr {
                        true => Ok(()),
                        false => Err(LossReason::Mismatch(format!(
                            "DirectBranchSync F-ADDR {addr:#x} is not the target of the branch ({:#x})",
                            self.cur.pc
                        ))),
                    })
            } else {
                let end = End::Addr {
                    addr,
                    btype,
                    sync: true,
                };
                self.walk_message(icnt, hist, end, sink)
            };
            if let Err(reason) = r {
                self.lose(offset, reason, sink);
            }
        }
        let reason = if self.s.synced {
            if sync == sync::PERIODIC {
                SyncReason::Periodic
            } else {
                SyncReason::Other(sync)
            }
        } else if let Some((lost_at, why)) = self.s.loss.take() {
            let skipped = offset - lost_at;
            self.stats.skipped_bytes += skipped;
            self.report_loss(lost_at, skipped, why, sink);
            SyncReason::Recovery
        } else {
            if let Some(start) = self.s.skipped_start.take() {
                // The first bytes were lost (a wrapped buffer, a capture started late).
                self.stats.skipped_bytes += offset - start;
                let reason =
                    LossReason::StartLost("trace starts without a synchronization message".into());
                self.report_loss(start, offset - start, reason, sink);
            }
            SyncReason::Start
        };
        if !was_synced || self.cfg.sync_resets_encoder(sync) {
            self.reset_state();
        }
        self.emit(sink, FlowElement::Sync { addr, reason });
        self.s.synced = true;
        self.s.ever_synced = true;
        self.s.ended = false;
        self.cur.pc = addr;
        self.s.ref_addr = addr;
        self.s.ref_known = true;
        self.time(m, true, sink);
    }

    fn hist_only<S: FlowSink + ?Sized>(
        &mut self,
        hist: u64,
        repeat: u64,
        sink: &mut S,
    ) -> Result<(), LossReason> {
        self.s.hist.push(hist, repeat)?;
        self.walk(None, sink).map(|_| ()).map_err(LossReason::from)
    }

    fn walk_message<S: FlowSink + ?Sized>(
        &mut self,
        icnt: u64,
        hist: Option<u64>,
        end: End,
        sink: &mut S,
    ) -> Result<(), LossReason> {
        // Field values no encoder sends are damage; the rest is about where the walk leads.
        if icnt > self.cfg.max_icnt {
            return Err(LossReason::Malformed(format!("I-CNT {icnt} is too large")));
        }
        if let Some(h) = hist {
            self.s.hist.push(h, 1)?;
        }
        self.walk_htm = hist.is_some();
        self.walk_icnt(icnt, end, sink).map_err(LossReason::from)
    }

    /// The walk of a message's I-CNT (HIST queued) to its end.
    fn walk_icnt<S: FlowSink + ?Sized>(
        &mut self,
        icnt: u64,
        end: End,
        sink: &mut S,
    ) -> Result<(), Mismatch> {
        self.s.budget += icnt as i64;
        let last = self.walk(Some(end), sink)?;
        let last_class = last.map(|l| self.class_at(l.pc));
        if let Some(c) = last_class {
            // A run walked in one step is reported as plain instructions; its last may be an
            // `ecall` that the message's trap is about.
            self.cur.ranges.set_last_class(c, false);
        }
        if self.s.budget != 0 {
            return Err(Mismatch(format!(
                "I-CNT {icnt} ends {} half-words before the last branch of its HIST",
                -self.s.budget
            )));
        }
        self.s.budget = 0;
        match end {
            End::Addr { addr, btype, sync } => {
                if btype == 0 {
                    self.check_addr_end(last, last_class, addr, sync)?;
                } else {
                    // The trap: after the last retired instruction (ecall/ebreak: that one).
                    let epc = match last {
                        Some(l) if last_class == Some(CfClass::EnvTrap) => Some(l.pc),
                        Some(l) => l.natural,
                        None => Some(self.cur.pc),
                    };
                    // 1.0: the exception's `ecall`/`ebreak` is not in I-CNT but next. B-TYPE 1
                    // (exception or interrupt) is taken for an exception (README, "N-Trace 1.0
                    // and 1.0.0-rc7").
                    if self.cfg.spec == Spec::V1_0
                        && btype != crate::codec::btype::INTERRUPT
                        && last_class != Some(CfClass::EnvTrap)
                        && epc == Some(self.cur.pc)
                    {
                        self.step_env_trap(sink);
                    }
                    self.emit(
                        sink,
                        FlowElement::Trap {
                            cause: None,
                            interrupt: btype == 3,
                            tval: None,
                            epc,
                            handler: Some(addr),
                        },
                    );
                    self.cur.forget_prev();
                }
                self.cur.pc = addr;
            }
            End::Direct => match last {
                Some(l) if last_class.is_some_and(|c| c.is_branch()) || self.cfg.all_jumps => {
                    if let Some(t) = l.natural {
                        self.cur.pc = t;
                    }
                }
                Some(l) => {
                    return Err(Mismatch(format!(
                        "DirectBranch ends at {:#x}, which is not a direct conditional branch",
                        l.pc
                    )))
                }
                None => return Err(Mismatch("DirectBranch with I-CNT 0".into())),
            },
            End::Stop => {}
        }
        Ok(())
    }

    /// A trace cut after ResourceFull I-CNTs (SiFive's captures end where the buffer is full):
    /// the instructions they count retired, so they are walked up to the first one whose
    /// successor the trace does not give (a conditional branch without a HIST bit, an
    /// uninferable jump), as SiFive's decoder shows them; the loss at the end says the rest
    /// is unknown.
    fn walk_cut_tail<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        self.walk_htm = true;
        // Its end is where the walk stops: no message follows to check it against.
        let _ = self.walk(Some(End::Stop), sink);
        self.s.budget = 0;
    }

    /// N-Trace 1.0: an `ecall`/`ebreak`/`c.ebreak` that takes a trap or enters Debug Mode does
    /// not retire, so the I-CNT before the message about it stops before it (1.0 chapter 2, 8.3).
    /// When the walk stands at one, it is walked all the same: the flow reports a trapping
    /// `ecall` as executed, in the range before the Trap element (as for rc7 streams, whose
    /// I-CNT includes it). Its address, if it was one.
    fn step_env_trap<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> Option<u64> {
        let pc = self.cur.pc;
        let e = self.cur.decode(pc).ok()?;
        if e.class != CfClass::EnvTrap {
            return None;
        }
        let seq = pc.wrapping_add(u64::from(e.len)) & self.cur.mask();
        self.stats.instructions += 1;
        self.cur.advance(CfClass::EnvTrap, seq, false, seq, sink);
        Some(pc)
    }

    /// A message with an address and no trap: is the address one the walk can lead to?
    /// * IndirectBranch(Hist) (7.3, 7.10) is sent for an uninferable jump only, so its walk ends
    ///   at one;
    /// * a synchronization message's F-ADDR (7.5-7.7, 7.9) is the next instruction's address:
    ///   when the walk's last instruction has a known successor, it must be F-ADDR.
    ///
    /// A corrupted I-CNT or HIST that leads elsewhere is caught here instead of walking on.
    fn check_addr_end(
        &self,
        last: Option<Last>,
        last_class: Option<CfClass>,
        addr: u64,
        sync: bool,
    ) -> Result<(), Mismatch> {
        let uninferable = last_class.is_some_and(|c| c.is_uninferable_discon());
        if !sync {
            return match last {
                Some(_) if uninferable => Ok(()),
                Some(l) => Err(Mismatch(format!(
                    "IndirectBranch ends at {:#x}, which is not an uninferable jump",
                    l.pc
                ))),
                None => Err(Mismatch("IndirectBranch with I-CNT 0".into())),
            };
        }
        let next = match last {
            Some(_) if uninferable => None,
            Some(l) => l.natural,
            None => Some(self.cur.pc),
        };
        match next {
            Some(n) if n != addr => Err(Mismatch(format!(
                "F-ADDR {addr:#x} of the synchronization message is not where execution goes ({n:#x})"
            ))),
            _ => Ok(()),
        }
    }

    /// The common steps of [`walk`](Decoder::walk) while HIST bits are left, a block at a time
    /// ([`Cursor::walk_blocks`]) by the same rules as its general step ([`HistBlocks`]).
    #[inline]
    fn walk_blocks<S: FlowSink + ?Sized>(
        &mut self,
        has_end: bool,
        since_branch: &mut u64,
        last: &mut Option<Last>,
        sink: &mut S,
    ) -> Blocks {
        let mut rules = HistBlocks {
            s: &mut self.s,
            has_end,
            since_branch: *since_branch,
        };
        let w = self.cur.walk_blocks(&mut rules, sink);
        *since_branch = rules.since_branch;
        self.stats.instructions += w.instructions;
        match w.last {
            None => Blocks::Stuck,
            Some((pc, natural)) => {
                *last = Some(Last {
                    pc,
                    natural: Some(natural),
                });
                if w.ended {
                    Blocks::Last
                } else {
                    Blocks::Walked
                }
            }
        }
    }

    /// The class of the instruction at `pc` (for the end of a walk).
    fn class_at(&self, pc: u64) -> CfClass {
        self.cur.decode(pc).map_or(CfClass::None, |e| e.class)
    }

    /// Walk instructions: HIST bits first, then the I-CNT budget (N-Trace 11.1). `end` is `None`
    /// for a HIST-only walk (ResourceFull), which stops after the branch taking the last bit.
    ///
    /// Straight-line runs (no control transfer, from the block table) are walked in one step
    /// when they cannot end the walk: HIST bits left (only transfers take them) or a budget that
    /// covers the whole run. Everything else goes one instruction at a time.
    fn walk<S: FlowSink + ?Sized>(
        &mut self,
        end: Option<End>,
        sink: &mut S,
    ) -> Result<Option<Last>, Mismatch> {
        let mut last = None;
        let mut since_branch = 0u64;
        // Whether the end reads where the last instruction would go without the message
        // (`walk_icnt`: a DirectBranch's target, a trap's EPC); an uninferable jump's
        // sequential target is looked for only then.
        let needs_natural = match end {
            Some(End::Direct) => true,
            Some(End::Addr { btype, .. }) => btype != 0,
            Some(End::Stop) | None => false,
        };
        loop {
            let hist_empty = self.s.hist.is_empty();
            match end {
                None if hist_empty => break,
                Some(_) if hist_empty && self.s.budget <= 0 => break,
                _ => {}
            }
            if !hist_empty && !self.cfg.all_jumps {
                match self.walk_blocks(end.is_some(), &mut since_branch, &mut last, sink) {
                    Blocks::Last => break,
                    Blocks::Walked => continue,
                    Blocks::Stuck => {}
                }
            }
            let pc = self.cur.pc;
            // Only the length, class and static target leave the match (the walk's every step
            // goes through here).
            let (len, class, target) = match self.cur.code().ent(pc).copied() {
                Some(e) if e.len > 0 => {
                    if let Some(run) = self.cur.run(pc, &e) {
                        let hw = run.halfwords() as i64;
                        let whole = if hist_empty {
                            hw <= self.s.budget
                        } else {
                            since_branch + run.count <= MAX_WALK_WITHOUT_BRANCH
                        };
                        if whole {
                            self.s.budget -= hw;
                            since_branch += run.count;
                            self.stats.instructions += run.count;
                            let end = self.cur.advance_run(&run, sink);
                            last = Some(Last {
                                pc: run.last(),
                                natural: Some(end),
                            });
                            continue;
                        }
                    }
                    (e.len, e.class, self.cur.target(pc, &e))
                }
                // Outside the table (not in an executable segment, or crossing its end).
                _ => match self.cur.decode_outside(pc) {
                    Ok(e) => (e.len, e.class, self.cur.target(pc, &e)),
                    Err(e) => return Err(walk_error(e)),
                },
            };
            let hw = u64::from(len).div_ceil(2) as i64;
            if end.is_some() && hist_empty && hw > self.s.budget {
                return Err(Mismatch(format!(
                    "invalid I-CNT: {} half-word(s) left at the {}-byte instruction at {pc:#x} (N-Trace 8.4.1)",
                    self.s.budget, len
                )));
            }
            self.s.budget -= hw;
            since_branch += 1;
            if !hist_empty && since_branch > MAX_WALK_WITHOUT_BRANCH {
                return Err(Mismatch(format!(
                    "no direct conditional branch for the HIST bits after {since_branch} instructions from {pc:#x}"
                )));
            }
            let seq = pc.wrapping_add(u64::from(len)) & self.cur.mask();
            let takes_bit = class.is_branch()
                || (self.cfg.all_jumps && class.is_inferable() && target.is_some());
            let bit = if takes_bit { self.s.hist.pop() } else { None };
            if bit.is_some() {
                since_branch = 0;
            }
            let is_last = end.is_some() && self.s.hist.is_empty() && self.s.budget == 0;
            let mut taken = false;
            let natural = match class {
                CfClass::Branch => {
                    taken = match (bit, end) {
                        (Some(b), _) => b,
                        // BTM (11.1): the I-CNT's branches are not taken, but a DirectBranch's.
                        (None, _) if !self.walk_htm => is_last && end == Some(End::Direct),
                        // HTM: a synchronization's F-ADDR gives the branch ending its I-CNT.
                        (None, Some(End::Addr { addr, sync: true, .. })) if is_last => {
                            addr != seq && target == Some(addr)
                        }
                        // HTM: every retired branch adds a HIST bit (1.0 chapter 2, 8.2), so a
                        // branch past the HIST has no recorded outcome; "not taken" would be a
                        // guess (README, "A branch past the HIST in HTM").
                        (None, _) => {
                            return Err(Mismatch(format!(
                                "HTM: the direct conditional branch at {pc:#x} is inside the I-CNT with no HIST bit left: its outcome is not in the trace, the rest of the I-CNT ({} half-words) is unknown",
                                self.s.budget + hw
                            )))
                        }
                    };
                    Some(if taken { target.unwrap_or(seq) } else { seq })
                }
                _ if class.is_inferable() => target,
                // N-Trace 9.2: every return pops (see `rvtrace_flow::walk`); 9.1: a sequential
                // jump's target comes first.
                _ if class.is_uninferable_discon() => {
                    let popped = if class.pops_return() {
                        self.cur.stack.pop()
                    } else {
                        None
                    };
                    if class == CfClass::TrapReturn || (is_last && !needs_natural) {
                        // Past the last instruction the message's address decides.
                        None
                    } else {
                        self.cur.sequential_target(pc).or(popped)
                    }
                }
                _ => Some(seq),
            };
            if class.pushes_return() {
                self.cur.stack.push(seq);
            }
            self.stats.instructions += 1;
            // Without a next PC the walk stays: the message's end decides, or it is a loss.
            self.cur
                .advance(class, seq, taken, natural.unwrap_or(pc), sink);
            last = Some(Last { pc, natural });
            if is_last {
                // The message's own end decides the next PC.
                break;
            }
            if natural.is_none() {
                return Err(Mismatch(format!(
                    "uninferable jump at {pc:#x} inside an I-CNT (no message reports its target)"
                )));
            }
        }
        Ok(last)
    }
}

/// The address an F-ADDR or U-ADDR field gives (N-Trace 8.1, with the MSB extension of 9.4
/// when configured).
pub(crate) fn full_addr(cfg: &DecoderConfig, a: &Addr) -> u64 {
    let ext = cfg.extend_addr_msb.then_some(cfg.isa.xlen);
    let mut v = a.value(ext) << 1;
    if let Some(b @ 1..=63) = cfg.addr_bits {
        let sh = 64 - u32::from(b);
        v = ((v << sh) as i64 >> sh) as u64;
    }
    v & cfg.isa.xlen.addr_mask()
}

/// Why the program does not match the trace: the text of a [`LossReason::Mismatch`].
struct Mismatch(String);

impl From<Mismatch> for LossReason {
    fn from(m: Mismatch) -> Self {
        LossReason::Mismatch(m.0)
    }
}

/// A walk that left the program, as N-Trace reports it.
#[cold]
fn walk_error(e: WalkError) -> Mismatch {
    Mismatch(match e {
        WalkError::Unmapped(a) => format!(
            "the trace runs into {a:#x}, which is not in an executable segment of the program image"
        ),
        WalkError::BadInstruction(a) => {
            format!("the trace runs into {a:#x}, which is not a valid instruction")
        }
    })
}

/// An Ownership PROCESS value that no hart sends (N-Trace 7.1 Table 12: FORMAT 1 is reserved,
/// FORMAT 0 has no CONTEXT; "All unused encodings [of V/PRV] are reserved": PRV 2, and V=1 with
/// PRV 3).
fn check_process(p: &Process) -> Result<(), &'static str> {
    match p {
        Process { format: 1, .. } => Err("reserved FORMAT 1"),
        Process { prv: 2, .. } => Err("reserved PRV 2"),
        Process {
            v: true, prv: 3, ..
        } => Err("reserved V=1 with PRV 3"),
        Process {
            format: Process::FORMAT_PRIV,
            context,
            ..
        } if *context != 0 => Err("FORMAT 0 with a CONTEXT"),
        _ => Ok(()),
    }
}

/// SiFive's In-Circuit Trace CKSRC and control codes (README, "SiFive dialect").
mod ict {
    /// CKSRC 0: trace control (CKDATA0, or CKDATA1 with an address in CKDATA0).
    pub const CONTROL: u8 = 0;
    /// CKSRC 8: external trigger.
    pub const EXTERNAL_TRIGGER: u8 = 8;
    /// CKSRC 9: inferable call (or call/return in an event trace).
    pub const CALL: u8 = 9;
    /// CKSRC 10: exception.
    pub const EXCEPTION: u8 = 10;
    /// CKSRC 11: interrupt.
    pub const INTERRUPT: u8 = 11;
    /// CKSRC 12: performance counter values (not in the public decoder; sifive/trace-decoder-tests
    /// `event-ppc` shows them as "PPCx8" with the address unchanged).
    pub const COUNTERS: u8 = 12;
    /// CKSRC 13: context.
    pub const CONTEXT: u8 = 13;
    /// CKSRC 14: watchpoint.
    pub const WATCHPOINT: u8 = 14;
    /// CKSRC 15: PC sample.
    pub const PC_SAMPLE: u8 = 15;
    /// Control code 2: trace on.
    pub const TRACE_ON: u64 = 2;
    /// Control code 4: exit from debug.
    pub const EXIT_DEBUG: u64 = 4;
}

/// How a code N-Trace does not define is named: reserved for the standard, or left to vendors.
const fn reserved_or_vendor(vendor: bool) -> &'static str {
    if vendor {
        "vendor-defined"
    } else {
        "reserved"
    }
}

/// EVCODE values N-Trace defines (7.12): 0 (Debug), 1 (low power), 4 (trace disabled); 2-3 are
/// reserved for data trace, 5-7 reserved, 8-15 vendor-defined.
const fn evcode_defined(evcode: u8) -> bool {
    matches!(evcode, 0 | 1 | 4)
}

impl TraceDecoder for Decoder<'_> {
    type ProtocolStats = DecodeStats;

    fn push<S: FlowSink + ?Sized>(&mut self, bytes: &[u8], sink: &mut S) {
        Decoder::push(self, bytes, sink)
    }

    fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> rvtrace_flow::DecodeStats {
        Decoder::finish(self, sink).into()
    }

    fn stats(&self) -> rvtrace_flow::DecodeStats {
        self.stats.into()
    }

    fn protocol_stats(&self) -> DecodeStats {
        self.stats
    }
}

impl From<DecodeStats> for rvtrace_flow::DecodeStats {
    fn from(s: DecodeStats) -> Self {
        rvtrace_flow::DecodeStats {
            bytes: s.bytes,
            messages: s.messages,
            instructions: s.instructions,
            losses: s.errors,
            skipped_bytes: s.skipped_bytes,
            ignored: s.ignored,
        }
    }
}

/// Decode a whole trace (the old way; the same as [`rvtrace_flow::decode_all`] with
/// [`Decoder::new`]).
pub fn decode<S: FlowSink + ?Sized>(
    image: &Image,
    cfg: DecoderConfig,
    data: &[u8],
    sink: &mut S,
) -> DecodeStats {
    let mut d = Decoder::new(image, cfg);
    d.push(data, sink);
    d.finish(sink)
}

/// `--link-registers auto`: the link rule that decodes a trace, found by trying. Decodes the
/// trace with each rule in turn, [`LinkRule::Spec`], [`LinkRule::X1Only`], [`LinkRule::NexRv`]
/// (the rest of `cfg` as given), and returns the first without a loss, else the one with the
/// fewest, with its count of losses. Streams made with the specification's rule decode at the
/// first try; `open` gives the trace from its start each time (it is read up to three times,
/// streaming).
pub fn find_link_rule<R: std::io::Read>(
    image: &Image,
    cfg: DecoderConfig,
    mut open: impl FnMut() -> std::io::Result<R>,
) -> std::io::Result<(LinkRule, u64)> {
    let mut best = (LinkRule::Spec, u64::MAX);
    for link in [LinkRule::Spec, LinkRule::X1Only, LinkRule::NexRv] {
        let mut d = Decoder::new(image, DecoderConfig { link, ..cfg });
        let n = rvtrace_flow::decode_read(&mut d, open()?, &mut |_: &FlowElement| {})?.losses;
        if n < best.1 {
            best = (link, n);
        }
        if n == 0 {
            break;
        }
    }
    Ok(best)
}

impl<'a> Decoder<'a> {
    /// A decoder whose input starts at byte `offset` of the trace, at a message's start (a
    /// chunk of a chunked decode, `rvtrace_flow::chunk`): offsets in its elements and counts
    /// are the trace's.
    pub fn at(image: &'a Image, cfg: DecoderConfig, code: Code, offset: u64) -> Self {
        let mut d = Decoder::with_code(image, cfg, code);
        d.deframer = Deframer::at(offset);
        d.stats.bytes = offset;
        d
    }
}

/// What an N-Trace decode depends on at a chunk boundary (`rvtrace_flow::chunk`): every field
/// of the decoder but its counts and its table.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkState {
    deframer: (u8, u64),
    /// The decoder's own state, normalized (equal when the decode from here on is).
    s: Progress,
    pc: u64,
    /// `None`: guessed.
    prev: Option<u64>,
    range: Option<(u64, u64, CfClass, Option<bool>)>,
    stack: rvtrace_flow::walk::ReturnStack,
}

impl rvtrace_flow::chunk::ChunkDecoder for Decoder<'_> {
    type State = ChunkState;

    fn drain<S: FlowSink + ?Sized>(&mut self, _sink: &mut S) {
        // Every complete message is decoded as its last byte comes.
    }

    fn begin_guess(&mut self) {
        // A synchronization that resets the encoder (`Spec::sync_resets_encoder`) forgets the
        // instruction before (so does the first one); the guess has nothing else the message
        // does not say.
        self.cur.ranges.continue_open();
    }

    fn guess_read(&self) -> bool {
        self.cur.guess_read()
    }

    fn state(&self) -> ChunkState {
        let mut s = self.s.clone();
        s.hist = s.hist.normalized();
        // Read only before the first synchronization.
        s.starts_disabled &= !s.ever_synced;
        s.events &= !s.ever_synced;
        ChunkState {
            deframer: self.deframer.boundary(),
            s,
            pc: self.cur.pc,
            prev: self.cur.prev_state(),
            range: self.cur.ranges.boundary(),
            stack: self.cur.stack.clone(),
        }
    }

    fn matches(actual: &ChunkState, guess: &ChunkState) -> bool {
        actual == guess
    }

    fn open_range(&self) -> (Option<(u64, u64)>, bool) {
        (self.cur.ranges.extent(), self.cur.ranges.continuing())
    }

    fn add_counts(base: &DecodeStats, end: &DecodeStats, start: &DecodeStats) -> DecodeStats {
        DecodeStats {
            bytes: base.bytes + end.bytes - start.bytes,
            messages: base.messages + end.messages - start.messages,
            other_src: base.other_src + end.other_src - start.other_src,
            instructions: base.instructions + end.instructions - start.instructions,
            errors: base.errors + end.errors - start.errors,
            skipped_bytes: base.skipped_bytes + end.skipped_bytes - start.skipped_bytes,
            ignored: base.ignored + end.ignored - start.ignored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(hist: u64, repeat: u64) -> Vec<bool> {
        let mut q = HistQueue::default();
        q.push(hist, repeat).unwrap();
        std::iter::from_fn(|| q.pop()).collect()
    }

    /// N-Trace 8.2 examples: the bit after the stop-bit is the first branch.
    #[test]
    fn hist_examples_8_3() {
        assert_eq!(bits(0x5, 1), [false, true]);
        assert_eq!(bits(0xF, 1), [true, true, true]);
        assert_eq!(bits(0x10, 1), [false, false, false, false]);
        assert_eq!(bits(0x1, 1), [false; 0]);
        assert!(HistQueue::default().push(0, 1).is_err());
    }

    /// `--addr-bits` (SiFive's `addrbits`, P550: 48): addresses are sign-extended from the
    /// encoder's top address bit, as Linux kernel addresses need.
    #[test]
    fn addr_bits_sign_extend() {
        let mut cfg = DecoderConfig::new(IsaConfig::new(rvtrace_isa::Xlen::Rv64));
        let kernel = Addr::plain(0x0000_ffff_ffc0_0000 >> 1);
        assert_eq!(full_addr(&cfg, &kernel), 0x0000_ffff_ffc0_0000);
        cfg.addr_bits = Some(48);
        assert_eq!(full_addr(&cfg, &kernel), 0xffff_ffff_ffc0_0000);
        assert_eq!(full_addr(&cfg, &Addr::plain(0x4000_0000)), 0x8000_0000);
    }

    /// N-Trace 9.3: 0x55555555 x 10 and 0x5 x 150 are the same 300 bits.
    #[test]
    fn hrepeat_example_9_3() {
        let a = bits(0x5555_5555, 10);
        assert_eq!(a.len(), 300);
        assert_eq!(a, bits(0x5, 150));
        assert_eq!(&a[..4], [false, true, false, true]);
    }
}
