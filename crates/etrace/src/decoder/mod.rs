//! The E-Trace instruction trace decoder: `decoder.adoc` ("Decoder pseudo code"), extended to the
//! optional modes of `branchTrace.adoc` (implicit return with a call counter or a return address
//! stack, sequentially inferable jumps, branch prediction, jump target cache, implicit exception),
//! with resynchronisation after lost or malformed packets.
//!
//! The decoder walks the program one basic block at a time ([`crate::code::Code`]) and reports
//! what executed as [`FlowElement`]s. Where this decoder departs from the pseudo code it says so
//! in a comment; the crate README lists the choices shared with rvtrace's encoder.
//!
//! One file per layer, each below the ones after it: `error` ([`DecodeError`]) and `config`
//! ([`DecoderConfig`]); `branches` (the branch queue) and `state` (what the decode depends on
//! between packets, [`ChunkState`]); `stream` (bytes to packets); this file (the [`Decoder`] and
//! its [`TraceDecoder`] impl); then the decoder's methods by concern: `packets` (the rules per
//! format), `resync` (losses and the wait for a sync packet), `traps`, `walk` (following the
//! execution path) and `chunk` (a chunked decode's decoder).

mod branches;
mod chunk;
mod config;
mod error;
mod packets;
mod resync;
mod state;
mod stream;
mod traps;
mod walk;

use rvtrace_flow::walk::{Cursor, SequentialJumps};
use rvtrace_flow::{FlowElement, FlowSink, TraceDecoder};
use rvtrace_image::space::Spaces;
use rvtrace_image::Image;

use crate::code::{Code, Ent};
use crate::codec::bits::mask;
use crate::codec::Item;
use crate::params::{IOptions, Params};

use self::config::stack_max;
pub use self::config::{DecoderConfig, Limits};
pub use self::error::DecodeError;
pub use self::state::ChunkState;
use self::state::Progress;
use self::stream::Stream;

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

/// The E-Trace decoder, a [`rvtrace_flow::TraceDecoder`]: made with [`Decoder::new`] from its
/// options ([`DecoderConfig`], presets [`DecoderConfig::from_config`],
/// [`DecoderConfig::reference_flow`]) and the image; feed it bytes with
/// [`push`](Decoder::push), then call [`finish`](Decoder::finish) (the inherent methods return
/// the protocol's [`DecodeStats`], the trait's the common counts; [`rvtrace_flow::decode_all`],
/// [`rvtrace_flow::decode_read`] do both). A caller that reads the packets itself (to know the
/// count at every packet, as `rvtrace stats` does) gives them one at a time with
/// [`Decoder::packet`] (and the ones that do not decode with [`Decoder::error`]), then ends with
/// [`Decoder::finish_at`] at the end's offset.
pub struct Decoder<'a> {
    /// The walk over the program's block table, with the open range and the return address
    /// stack: `cur.pc` is `decoder.adoc` `pc` (the last instruction reported), the instruction
    /// before it `last_pc`.
    cur: Cursor<'a>,
    params: Params,
    /// [`DecoderConfig::limits`].
    limits: Limits,
    /// [`DecoderConfig::keep_stack_across_syncs`].
    keep_stack_across_syncs: bool,
    /// [`DecoderConfig::reference_x5_jumps`].
    reference_x5_jumps: bool,
    /// Everything else the decode depends on between packets (one list: a chunk's state is a
    /// normalized copy of it).
    s: Progress,
    // Per-packet counters.
    jumps: u64,
    insns_at_packet: u64,
    /// Statistics.
    stats: DecodeStats,
    /// Bytes skipped, as the losses report them.
    skipped_bytes: u64,
    /// The end of the bytes read, or of the last packet or error given (by [`Decoder::packet`],
    /// [`Decoder::error`], [`Decoder::finish_at`]).
    bytes: u64,
    /// Framing and unread bytes.
    stream: Stream,
    /// Chunked decode (`rvtrace_flow::chunk`): losses were reported before this decoder's
    /// start (a fresh synchronisation is then a recovery).
    errors_before: bool,
    /// Chunked decode: a guessed part was read.
    guess_read: bool,
    /// The program's address spaces, when its files have scopes ([`Decoder::with_spaces`]),
    /// and the one walked (or to be walked from the address a sync packet reports).
    spaces: Option<(&'a Spaces, usize)>,
}

impl<'a> Decoder<'a> {
    /// A decoder of the byte stream of a trace described by `o`, for the program in `image`.
    pub fn new(image: &'a Image, o: DecoderConfig) -> Self {
        Decoder::with_code(image, o, Decoder::code(image, &o))
    }

    /// The block table a decoder with `o` walks in `image` (built once, shared by the
    /// decoders of a chunked decode: [`Decoder::with_code`]).
    pub fn code(image: &Image, o: &DecoderConfig) -> Code {
        Code::new(image, o.isa)
    }

    /// A decoder for the program in `image` with its block table `code` ([`Decoder::code`] of
    /// the same `image` and `o`).
    pub fn with_code(image: &'a Image, o: DecoderConfig, code: Code) -> Self {
        let params = o.params;
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
            limits: o.limits,
            keep_stack_across_syncs: o.keep_stack_across_syncs,
            reference_x5_jumps: o.reference_x5_jumps,
            s: Progress::new(&params, o.options),
            jumps: 0,
            insns_at_packet: 0,
            stats: DecodeStats::default(),
            skipped_bytes: 0,
            bytes: 0,
            stream: Stream::new(o.framing, o.options, o.src),
            errors_before: false,
            guess_read: false,
            spaces: None,
        }
    }

    /// A decoder for a program of several address spaces (`rvtrace_image::space`; block tables
    /// built with [`Decoder::code`]): it walks the space of the `privilege` and `context` that
    /// the format 3 packets report (`te_inst` payload; without context, `nocontext_p`, files
    /// with a context never apply). A trap's handler is walked in the new space; after a sync
    /// packet that is no trap (an `xRET`, a context switch), the instructions up to the one it
    /// reports in the old, that one and what follows in the new.
    pub fn with_spaces(spaces: &'a Spaces, o: DecoderConfig) -> Self {
        let i = spaces.index(None, None);
        let space = spaces.space(i);
        let mut d = Decoder::with_code(&space.image, o, space.code.clone());
        d.spaces = Some((spaces, i));
        d
    }

    /// The address space of `privilege` and `context` (as a sync packet has them), if it is
    /// not the one walked.
    fn other_space(&self, privilege: u64, context: u64) -> Option<(&'a Spaces, usize)> {
        let (spaces, at) = self.spaces?;
        let context = (!self.params.nocontext_p).then_some(context);
        let i = spaces.index(u8::try_from(privilege).ok(), context);
        (i != at).then_some((spaces, i))
    }

    /// Walk the code of the space of `privilege` and `context` from here on.
    fn enter(&mut self, privilege: u64, context: u64) {
        // A switch left waiting by a walk that failed: the cursor walks the space `spaces` names.
        self.cur.settle_switch();
        if let Some((spaces, i)) = self.other_space(privilege, context) {
            let space = spaces.space(i);
            self.cur.set_space(space.code.clone(), &space.image);
            self.spaces = Some((spaces, i));
        }
    }

    /// Walk the code of the space of `privilege` and `context` from the instruction at `addr`
    /// on; the entry of that instruction there.
    fn enter_at(&mut self, addr: u64, privilege: u64, context: u64) -> Result<Ent, DecodeError> {
        self.cur.settle_switch();
        let Some((spaces, i)) = self.other_space(privilege, context) else {
            return Ok(*self.cur.entry(addr)?);
        };
        let space = spaces.space(i);
        self.cur
            .switch_on_arrival(addr, space.code.clone(), &space.image);
        self.spaces = Some((spaces, i));
        match space.code.ent(addr) {
            Some(e) if e.len > 0 => Ok(*e),
            Some(_) => Err(DecodeError::BadInstruction(addr)),
            None => Err(DecodeError::Unmapped(addr)),
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

    /// Counts so far.
    pub fn stats(&self) -> DecodeStats {
        self.stats
    }

    /// Decode more bytes.
    pub fn push<S: FlowSink + ?Sized>(&mut self, data: &[u8], sink: &mut S) {
        if self.s.stopped {
            return;
        }
        let mut st = self.take_stream();
        let (params, mut stopped) = (self.params, self.s.stopped);
        st.push(data, params, &mut stopped, &mut |at, it| {
            self.item(at, it, sink)
        });
        self.bytes = st.end();
        self.stream = st;
    }

    /// End of the trace data: decodes the bytes still waiting and ends the flow
    /// ([`Decoder::finish_at`] the end of the bytes pushed).
    pub fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> DecodeStats {
        if self.s.stopped || sink.stop_requested() {
            self.s.stopped = true;
            return self.stats;
        }
        let mut st = self.take_stream();
        let (params, mut stopped) = (self.params, self.s.stopped);
        let end = st.drain(params, &mut stopped, &mut |at, it| self.item(at, it, sink));
        self.stream = st;
        if !self.s.stopped {
            self.finish_at(end, sink);
        }
        self.stats
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
    // Input.

    /// Process the item the stream read at byte `at`; returns whether the sink asked to stop.
    fn item<S: FlowSink + ?Sized>(&mut self, at: u64, item: Item, sink: &mut S) -> bool {
        match item {
            Item::Packet(p) => self.packet(at, &p, sink),
            Item::Error(e) => self.error(at, &e, sink),
            Item::Other(_) => {}
        }
        self.s.stopped = sink.stop_requested();
        self.s.stopped
    }

    /// The stream state, taken out while its packets go to [`Decoder::item`] (put it back).
    fn take_stream(&mut self) -> Stream {
        self.stream.take()
    }
}

impl TraceDecoder for Decoder<'_> {
    type ProtocolStats = DecodeStats;

    fn push<S: FlowSink + ?Sized>(&mut self, data: &[u8], sink: &mut S) {
        Decoder::push(self, data, sink)
    }

    fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> rvtrace_flow::DecodeStats {
        Decoder::finish(self, sink);
        TraceDecoder::stats(self)
    }

    fn stats(&self) -> rvtrace_flow::DecodeStats {
        rvtrace_flow::DecodeStats {
            bytes: self.bytes,
            messages: self.stats.packets,
            instructions: self.stats.instructions,
            losses: self.stats.errors,
            skipped_bytes: self.skipped_bytes,
            // The E-Trace decoder steps over nothing: a reserved code is a loss.
            ignored: 0,
        }
    }

    fn protocol_stats(&self) -> DecodeStats {
        self.stats
    }
}
