//! Chunked and parallel decode: a trace cut at synchronisation points, the chunks decoded on
//! their own (on all cores, or by the workers of a distributed job), the flows stitched into the
//! one a decode from the start gives, element for element, with the same counts.
//!
//! # How a chunk is decoded
//!
//! A cut is a synchronisation message or packet ([`Cut`]: its offset and length, found by the
//! protocol's sync scan). Chunk 0 is the trace from its first byte to the end of the first
//! cut; chunk `i` starts at cut `i - 1` and ends at the end of cut `i` (or at the end of the
//! trace): the synchronisation message that ends a chunk is decoded by both chunks.
//!
//! * The chunk that *ends* with it decodes it as a decode from the start would: the walk up to
//!   it, its checks, its elements; its decoder's [`ChunkDecoder::state`] afterwards is the real
//!   state there ("A").
//! * The chunk that *starts* with it gives it to a fresh decoder positioned at its offset,
//!   throws that message's elements away, and takes the decoder's state as its guess of the
//!   state there ("G"); what a fresh decoder cannot know is marked as a guess
//!   ([`ChunkDecoder::begin_guess`]: the instruction walked before, the start of a range still
//!   open), and reading a guessed part marks the chunk ([`ChunkDecoder::guess_read`]).
//!
//! # Why the stitch is exact
//!
//! A decoder's output from a byte on is a function of its state there and the bytes. The stitch
//! takes a chunk's elements only when the previous chunk's real state at the boundary matches
//! its guess ([`ChunkDecoder::matches`]: every field equal, a guessed field matching any value)
//! and the chunk never read a guessed field; then its elements are those of a decode from the
//! start, except that a range open at the boundary is split there, which the stitch joins
//! (start and length from the previous chunk). Otherwise the chunk is decoded again, from the
//! real state (the previous chunk's decoder goes on): slower, never different. So a
//! synchronisation that does not reset the state the decode depends on (an N-Trace SYNC that
//! resets no encoder state, an E-Trace return stack kept across syncs, a trap handler learnt
//! before) costs speed, not exactness; the counts (`--stats`) are the sums of the chunks'.

use crate::{DecodeStats, FlowElement, FlowSink, TraceDecoder};

/// The chunk size the command line uses: large enough that the boundaries cost nothing (a
/// chunk holds thousands of synchronisation periods' worth of elements at most), small enough
/// that a few chunks per thread keep memory low.
pub const CHUNK_BYTES: u64 = 64 << 10;

/// The chunk size the command line uses: [`CHUNK_BYTES`], or the environment variable
/// `RVTRACE_CHUNK_BYTES` when set (tests cut small traces into many chunks with it).
pub fn chunk_bytes() -> u64 {
    std::env::var("RVTRACE_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHUNK_BYTES)
}

/// A synchronisation point where a chunk may start: the byte offset of a synchronisation
/// message (N-Trace) or packet (E-Trace) and its length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Offset of its first byte.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

impl Cut {
    /// The offset after it.
    pub const fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// A protocol decoder that can decode a chunk on its own (see the module documentation).
pub trait ChunkDecoder: TraceDecoder + Sized {
    /// What the rest of a decode depends on at a boundary (everything but the counts).
    type State: Clone + std::fmt::Debug + Send;

    /// Decode every complete message or packet pushed so far (a chunk ends at one's end), without
    /// finishing the trace.
    fn drain<S: FlowSink + ?Sized>(&mut self, sink: &mut S);

    /// Mark what a decoder started at a cut cannot know as guessed (called after the cut's
    /// message is decoded).
    fn begin_guess(&mut self);

    /// Whether the decode read a guessed part of its start state.
    fn guess_read(&self) -> bool;

    /// The state now.
    fn state(&self) -> Self::State;

    /// Whether the real state `actual` is the guess `guess` (a guessed field matches any value).
    fn matches(actual: &Self::State, guess: &Self::State) -> bool;

    /// Fill in the guessed parts of the start state that later decoding still depends on from
    /// the real state `before` at the chunk's start (the chunk's own changes win): called on a
    /// chunk's decoder when the stitch takes it, so that it can go on as the real one.
    fn inherit(&mut self, _before: &Self::State) {}

    /// [`inherit`](ChunkDecoder::inherit) for a state: `state` (a chunk's end) completed with
    /// `before` (the real state at its start).
    fn complete(_state: &mut Self::State, _before: &Self::State) {}

    /// The open range's start and length as this decoder knows them, and whether it goes on
    /// from the previous chunk (`crate::walk::Ranges::continue_open`).
    fn open_range(&self) -> (Option<(u64, u64)>, bool);

    /// `base + end - start` for the protocol's counts (the counts of a chunk added to those
    /// before it).
    fn add_counts(
        base: &Self::ProtocolStats,
        end: &Self::ProtocolStats,
        start: &Self::ProtocolStats,
    ) -> Self::ProtocolStats;
}

/// `base + end - start` for the common counts (`bytes` are offsets: the end's).
fn add_common(base: &DecodeStats, end: &DecodeStats, start: &DecodeStats) -> DecodeStats {
    DecodeStats {
        bytes: base.bytes + end.bytes - start.bytes,
        messages: base.messages + end.messages - start.messages,
        instructions: base.instructions + end.instructions - start.instructions,
        losses: base.losses + end.losses - start.losses,
        skipped_bytes: base.skipped_bytes + end.skipped_bytes - start.skipped_bytes,
        ignored: base.ignored + end.ignored - start.ignored,
    }
}

/// Why a stitch cannot go on: the chunks were not given as [`Stitch::push`] needs them (a
/// caller's mistake, never the trace's: a damaged trace decodes, with losses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// The first chunk pushed starts at a cut, not at the trace's start.
    FirstNotAtStart,
    /// A chunk after the first starts at the trace's start.
    StartAfterFirst,
    /// A chunk must be decoded again and the previous chunk's decoder was not kept.
    NoDecoder,
    /// A chunk must be decoded again and the caller's `redo` could not.
    RedoFailed,
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ChunkError::FirstNotAtStart => "the first chunk must start at the trace's start",
            ChunkError::StartAfterFirst => "only the first chunk starts at the trace's start",
            ChunkError::NoDecoder => "a chunk must be decoded again and no decoder was kept",
            ChunkError::RedoFailed => "a chunk must be decoded again and could not be",
        })
    }
}

impl std::error::Error for ChunkError {}

/// One chunk decoded on its own ([`decode_chunk`], [`decode_chunk_to`]): its elements in
/// `head` and `body` (`P`: a vector of them, or a chunk's own output, e.g. its PC list
/// formatted on the worker), its states and counts at both ends.
pub struct ChunkFlow<D: ChunkDecoder, P = Vec<FlowElement>> {
    /// The bytes decoded: from the chunk's cut (or 0) to the end of the next cut (or the end).
    pub bytes: (u64, u64),
    /// When the chunk starts inside an open range (`start_open`), the elements after the
    /// starting cut up to the first range, that one included: the stitch may join that range
    /// to the one open before the cut. Empty otherwise.
    pub head: Vec<FlowElement>,
    /// The other elements after the starting cut, in order.
    pub body: P,
    /// The guessed state after the starting cut (`None`: chunk 0, decoded from the start).
    pub start: Option<D::State>,
    /// The open range at the start (the cut's instruction) when the guess has one.
    pub start_open: Option<(u64, u64)>,
    /// The counts after the starting cut.
    pub start_stats: (DecodeStats, D::ProtocolStats),
    /// The state at the end (after the next cut's message).
    pub end: D::State,
    /// The counts at the end.
    pub end_stats: (DecodeStats, D::ProtocolStats),
    /// The open range at the end, and whether it still goes on from before this chunk.
    pub end_open: (Option<(u64, u64)>, bool),
    /// The decode read a guessed part of its start state: it must be done again.
    pub guess_read: bool,
    /// The decoder, at the end (the stitch goes on with it when the next chunk must be decoded
    /// again). `None` when the caller did not keep it.
    pub decoder: Option<D>,
}

impl<D: ChunkDecoder> ChunkFlow<D> {
    /// All its elements after the starting cut, in order (`head`, then `body`).
    pub fn elements(&self) -> impl Iterator<Item = &FlowElement> {
        self.head.iter().chain(&self.body)
    }
}

/// Decode one chunk on its own: `bytes` are the trace's bytes from offset `from`; the chunk
/// starts at `start` (a cut at `from`, or `None` for the trace's start at `from` = 0) and ends
/// at the end of `bytes`, which is the end of the next cut unless `last` (then the trace is
/// finished). `dec` is a fresh decoder positioned at offset `from` (the protocol's
/// constructor: `rvtrace_ntrace::decoder::Decoder::at`, `rvtrace_etrace::decoder::Decoder::at`).
///
/// This is the call a worker of a distributed job makes per chunk; [`Stitch`] joins the
/// results in order.
pub fn decode_chunk<D: ChunkDecoder>(
    dec: D,
    bytes: &[u8],
    from: u64,
    start: Option<Cut>,
    last: bool,
) -> ChunkFlow<D> {
    decode_chunk_to(dec, bytes, from, start, last, Vec::new())
}

/// Sends the elements up to the first range to `head` (while it is `Some`), the rest to `body`.
struct Split<'a, P> {
    head: Option<&'a mut Vec<FlowElement>>,
    body: &'a mut P,
}

impl<P: FlowSink> FlowSink for Split<'_, P> {
    #[inline]
    fn element(&mut self, e: &FlowElement) {
        match &mut self.head {
            Some(h) => {
                h.push(e.clone());
                if matches!(e, FlowElement::Range { .. }) {
                    self.head = None;
                }
            }
            None => self.body.element(e),
        }
    }

    fn stop_requested(&self) -> bool {
        self.body.stop_requested()
    }
}

/// [`decode_chunk`] with the elements after the head given to `body` (a chunk's own output,
/// filled on the worker that decodes it; or a vector given back by the stitch, whose memory
/// is warm).
pub fn decode_chunk_to<D: ChunkDecoder, P: FlowSink>(
    mut dec: D,
    bytes: &[u8],
    from: u64,
    start: Option<Cut>,
    last: bool,
    mut body: P,
) -> ChunkFlow<D, P> {
    let mut rest = bytes;
    let mut start_state = None;
    let mut start_open = None;
    if let Some(cut) = start {
        let n = (cut.len as usize).min(bytes.len());
        let mut discard = |_: &FlowElement| {};
        dec.push(&bytes[..n], &mut discard);
        dec.drain(&mut discard);
        dec.begin_guess();
        start_state = Some(dec.state());
        start_open = dec.open_range().0;
        rest = &bytes[n..];
    }
    let start_stats = (dec.stats(), dec.protocol_stats());
    let mut head = Vec::new();
    let mut sink = Split {
        head: start_open.is_some().then_some(&mut head),
        body: &mut body,
    };
    dec.push(rest, &mut sink);
    if last {
        dec.finish(&mut sink);
    } else {
        dec.drain(&mut sink);
    }
    ChunkFlow {
        bytes: (from, from + bytes.len() as u64),
        head,
        body,
        start: start_state,
        start_open,
        start_stats,
        end: dec.state(),
        end_stats: (dec.stats(), dec.protocol_stats()),
        end_open: dec.open_range(),
        guess_read: dec.guess_read(),
        decoder: Some(dec),
    }
}

/// Joins chunks decoded on their own ([`decode_chunk`]), in order, into the flow of a decode
/// from the start (see the module documentation).
pub struct Stitch<D: ChunkDecoder> {
    /// The decoder whose state is the real one at the current boundary, when kept.
    carry: Option<D>,
    /// The real state at the boundary (the end of the last chunk taken).
    state: Option<D::State>,
    /// The real open range at the boundary (start, length).
    open: Option<(u64, u64)>,
    /// Counts up to the boundary, minus the carried decoder's own.
    base: (DecodeStats, D::ProtocolStats),
    /// Counts at the boundary.
    total: (DecodeStats, D::ProtocolStats),
    /// The range that goes on from before the carried decoder's start, while it does.
    prefix: Option<(u64, u64)>,
    /// Chunks decoded again because their guess did not hold.
    pub redone: u64,
    /// Chunks taken as decoded.
    pub taken: u64,
}

/// A sink that joins the first range it gets to a range begun before (see [`Stitch`]).
struct Join<'s, S: ?Sized> {
    prefix: Option<(u64, u64)>,
    sink: &'s mut S,
}

impl<S: FlowSink + ?Sized> FlowSink for Join<'_, S> {
    fn element(&mut self, e: &FlowElement) {
        match (self.prefix.take(), e) {
            (
                Some((start, n)),
                &FlowElement::Range {
                    count,
                    last,
                    class,
                    taken,
                    ..
                },
            ) => self.sink.element(&FlowElement::Range {
                start,
                last,
                count: n + count - 1,
                class,
                taken,
            }),
            (p, e) => {
                self.prefix = p;
                self.sink.element(e)
            }
        }
    }

    fn stop_requested(&self) -> bool {
        self.sink.stop_requested()
    }
}

impl<D: ChunkDecoder> Default for Stitch<D>
where
    D::ProtocolStats: Default,
{
    fn default() -> Self {
        Stitch {
            carry: None,
            state: None,
            open: None,
            base: Default::default(),
            total: Default::default(),
            prefix: None,
            redone: 0,
            taken: 0,
        }
    }
}

impl<D: ChunkDecoder> Stitch<D>
where
    D::ProtocolStats: Default,
{
    /// Nothing stitched yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the next chunk `c` (chunk 0 first). When its guess holds, its `head` goes to `sink`
    /// (a range open at the boundary joined to the one before) and its `body` is given back:
    /// the caller outputs it after what `sink` got. When the guess does not hold, `redo`
    /// decodes the chunk again: it gets the decoder kept from the previous chunk (if the chunk
    /// was made with one) and must push `c.bytes` after the starting cut into it, then drain it
    /// (or finish it for the last chunk), giving the elements to the sink it is passed; it
    /// returns false if it cannot. Then all the chunk's elements went to `sink`, and this gives
    /// back `None` (the chunk's body is dropped).
    pub fn push<P, S: FlowSink + ?Sized>(
        &mut self,
        c: ChunkFlow<D, P>,
        sink: &mut S,
        redo: impl FnOnce(&mut D, &mut dyn FlowSink) -> bool,
    ) -> Result<Option<P>, ChunkError> {
        // A range open at the boundary that the chunk closes is the last element of its head.
        let joins = |c: &ChunkFlow<D, P>| {
            c.end_open.1
                || matches!(c.head.iter().find(|e| matches!(e, FlowElement::Range { .. })),
                    Some(FlowElement::Range { start, .. }) if Some(*start) == c.start_open.map(|o| o.0))
        };
        let take = match (&self.state, &c.start) {
            (None, None) => true,
            (Some(actual), Some(guess)) => {
                !c.guess_read
                    && D::matches(actual, guess)
                    && match (self.open, c.start_open) {
                        (None, None) => true,
                        // The cut's instruction ends the open range in both.
                        (Some(_), Some((_, 1))) => joins(&c),
                        _ => false,
                    }
            }
            (None, Some(_)) => return Err(ChunkError::FirstNotAtStart),
            (Some(_), None) => return Err(ChunkError::StartAfterFirst),
        };
        if take {
            self.taken += 1;
            // The range open at the boundary goes on in this chunk: its first range, or (when
            // the chunk never closes it) the range open at its end.
            let join = match (self.open, c.start_open) {
                (Some(p), Some(_)) => Some(p),
                _ => None,
            };
            let first_is_join = join.is_some() && !c.end_open.1;
            let mut j = Join {
                prefix: if first_is_join { join } else { None },
                sink,
            };
            for e in &c.head {
                j.element(e);
            }
            self.open = match (c.end_open, join) {
                ((Some((_, n)), true), Some((s, m))) => Some((s, m + n - 1)),
                ((o, _), _) => o,
            };
            self.prefix = if c.end_open.1 { join } else { None };
            if c.start.is_some() {
                self.base = (
                    add_common(&self.total.0, &DecodeStats::default(), &c.start_stats.0),
                    D::add_counts(
                        &self.total.1,
                        &D::ProtocolStats::default(),
                        &c.start_stats.1,
                    ),
                );
            }
            self.total = (
                add_common(&self.base.0, &c.end_stats.0, &DecodeStats::default()),
                D::add_counts(&self.base.1, &c.end_stats.1, &D::ProtocolStats::default()),
            );
            let mut end = c.end;
            let mut carry = c.decoder;
            if let (Some(before), Some(_)) = (&self.state, &c.start) {
                D::complete(&mut end, before);
                if let Some(d) = carry.as_mut() {
                    d.inherit(before);
                }
            }
            self.state = Some(end);
            self.carry = carry;
        } else {
            self.redone += 1;
            let Some(mut d) = self.carry.take() else {
                return Err(ChunkError::NoDecoder);
            };
            let mut j = Join {
                prefix: self.prefix,
                sink,
            };
            if !redo(&mut d, &mut j) {
                return Err(ChunkError::RedoFailed);
            }
            self.prefix = if d.open_range().1 { self.prefix } else { None };
            self.open = match (d.open_range(), self.prefix) {
                ((Some((_, n)), true), Some((s, m))) => Some((s, m + n - 1)),
                ((o, _), _) => o,
            };
            self.total = (
                add_common(&self.base.0, &d.stats(), &DecodeStats::default()),
                D::add_counts(
                    &self.base.1,
                    &d.protocol_stats(),
                    &D::ProtocolStats::default(),
                ),
            );
            self.state = Some(d.state());
            self.carry = Some(d);
        }
        Ok(take.then_some(c.body))
    }

    /// The counts of everything stitched (those a decode from the start gives).
    pub fn stats(&self) -> (DecodeStats, D::ProtocolStats) {
        self.total
    }
}

/// One chunk of a trace cut at `cuts`: what a worker needs to decode it ([`decode_chunk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The cut it starts at (`None`: the trace's start).
    pub start: Option<Cut>,
    /// Its bytes: from its cut (or 0) to the end of the next cut (or the trace's end).
    pub from: u64,
    /// See `from`.
    pub to: u64,
    /// The last chunk (its decode finishes the trace).
    pub last: bool,
}

impl Span {
    /// The bytes after the starting cut (what a chunk decoded again pushes).
    pub fn body(&self) -> (u64, u64) {
        (self.from + self.start.map_or(0, |c| c.len), self.to)
    }
}

/// The chunks of a trace of `len` bytes cut at `cuts` (in order): one more than the cuts.
pub fn spans(cuts: &[Cut], len: u64) -> Vec<Span> {
    (0..=cuts.len())
        .map(|k| {
            let start = (k > 0).then(|| cuts[k - 1]);
            Span {
                start,
                from: start.map_or(0, |c| c.offset),
                to: cuts.get(k).map_or(len, |c| c.end()),
                last: k == cuts.len(),
            }
        })
        .collect()
}

/// Cut points for chunks of about `chunk_bytes` bytes: the first cut at or after each multiple
/// of `chunk_bytes` (from `scan(from)`, the protocol's sync scan: the first synchronisation at
/// or after `from`), in order, without repeats.
pub fn cuts(len: u64, chunk_bytes: u64, mut scan: impl FnMut(u64) -> Option<Cut>) -> Vec<Cut> {
    let mut v: Vec<Cut> = Vec::new();
    let step = chunk_bytes.max(1);
    let mut at = step;
    while at < len {
        let from = v.last().map_or(at, |c| at.max(c.end()));
        match scan(from) {
            Some(c) => {
                at = (c.end() / step + 1) * step;
                v.push(c);
            }
            None => break,
        }
    }
    v
}

/// How many chunks each thread may have decoded ahead of the output (memory: that many chunks'
/// outputs per thread at most).
const AHEAD_PER_JOB: usize = 2;

/// Decode `bytes` (a whole trace) in chunks cut at `cuts` ([`cuts`]) on `jobs` threads, giving
/// the elements to `sink` in order: the same elements and counts as a decode from the start
/// with one decoder. `make(offset)` makes a fresh decoder positioned at `offset` (sharing the
/// program's block table). Memory: a few chunks' elements per thread. Returns the counts and
/// how many chunks were decoded again. Stops after the chunk during which `sink` asks to stop
/// ([`FlowSink::stop_requested`]).
pub fn decode_parallel<D, F, S>(
    bytes: &[u8],
    cuts: &[Cut],
    jobs: usize,
    make: F,
    sink: &mut S,
) -> Result<((DecodeStats, D::ProtocolStats), u64), ChunkError>
where
    D: ChunkDecoder + Send,
    D::State: Send,
    D::ProtocolStats: Default + Send,
    F: Fn(u64) -> D + Sync,
    S: FlowSink + ?Sized,
{
    // Element vectors go round: the output empties them, the next chunks fill them (fresh
    // memory would cost a page fault per 4 KiB).
    let pool = std::sync::Mutex::new(Vec::<Vec<FlowElement>>::new());
    let part = || {
        pool.lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default()
    };
    let write = |mut v: Vec<FlowElement>| {
        for e in &v {
            sink.element(e);
        }
        v.clear();
        if let Ok(mut p) = pool.lock() {
            p.push(v);
        }
        !sink.stop_requested()
    };
    decode_parallel_to(bytes, cuts, jobs, make, part, write)
}

/// [`decode_parallel`] with each chunk's output made on the thread that decodes it: `part()`
/// makes an empty output (a [`FlowSink`]: e.g. a PC list formatted into memory), the chunk's
/// elements go into it, and `write(part)` is called with the outputs in the trace's order
/// (on the calling thread; it returns false to stop). What the stitch itself gives (a range
/// joined across a boundary, a chunk decoded again) comes in parts of its own. So the parts
/// written, concatenated, are the output of a decode from the start, when the output of a
/// sequence of elements is the concatenation of the outputs of its pieces (a PC list, flow
/// text; not an output that keeps state across elements, which must take the elements). At
/// most `AHEAD_PER_JOB` chunks per thread are decoded ahead of the output.
pub fn decode_parallel_to<D, F, P, M, W>(
    bytes: &[u8],
    cuts: &[Cut],
    jobs: usize,
    make: F,
    part: M,
    mut write: W,
) -> Result<((DecodeStats, D::ProtocolStats), u64), ChunkError>
where
    D: ChunkDecoder + Send,
    D::State: Send,
    D::ProtocolStats: Default + Send,
    F: Fn(u64) -> D + Sync,
    P: FlowSink + Send,
    M: Fn() -> P + Sync,
    W: FnMut(P) -> bool,
{
    let spans = spans(cuts, bytes.len() as u64);
    let n = spans.len();
    let slice = |(a, b): (u64, u64)| &bytes[a as usize..b as usize];
    let run = |k: usize| {
        let c = spans[k];
        decode_chunk_to(
            make(c.from),
            slice((c.from, c.to)),
            c.from,
            c.start,
            c.last,
            part(),
        )
    };
    let mut st = Stitch::<D>::new();
    // Stitch chunk `k` and write its output; false: stop.
    let mut stitch = |k: usize, c: ChunkFlow<D, P>| -> Result<bool, ChunkError> {
        let span = spans[k];
        let body = slice(span.body());
        let mut own = part();
        let rest = st.push(c, &mut own, |d, s| {
            d.push(body, s);
            if span.last {
                d.finish(s);
            } else {
                d.drain(s);
            }
            true
        })?;
        Ok(write(own) && rest.is_none_or(&mut write))
    };
    if jobs <= 1 || n <= 1 {
        for k in 0..n {
            if !stitch(k, run(k))? {
                break;
            }
        }
        return Ok((st.stats(), st.redone));
    }
    let window = AHEAD_PER_JOB * jobs;
    let shared = std::sync::Mutex::new(Window::<ChunkFlow<D, P>> {
        done: std::collections::BTreeMap::new(),
        next: 0,
        written: 0,
        stop: false,
        panic: None,
    });
    let ready = std::sync::Condvar::new();
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let result = std::thread::scope(|sc| {
        for _ in 0..jobs.min(n) {
            sc.spawn(|| loop {
                // Claim the next chunk, waiting while the window is full.
                let k = {
                    let mut w = lock();
                    loop {
                        if w.stop || w.next >= n {
                            return;
                        }
                        if w.next < w.written + window {
                            w.next += 1;
                            break w.next - 1;
                        }
                        w = ready.wait(w).unwrap_or_else(|e| e.into_inner());
                    }
                };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(k)));
                let mut w = lock();
                match r {
                    Ok(c) => {
                        w.done.insert(k, c);
                    }
                    Err(p) => {
                        w.panic.get_or_insert(p);
                        w.stop = true;
                    }
                }
                ready.notify_all();
            });
        }
        let mut out = Ok(());
        for k in 0..n {
            let c = {
                let mut w = lock();
                loop {
                    if let Some(p) = w.panic.take() {
                        drop(w);
                        std::panic::resume_unwind(p);
                    }
                    if let Some(c) = w.done.remove(&k) {
                        w.written = k + 1;
                        ready.notify_all();
                        break c;
                    }
                    w = ready.wait(w).unwrap_or_else(|e| e.into_inner());
                }
            };
            match stitch(k, c) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    out = Err(e);
                    break;
                }
            }
        }
        lock().stop = true;
        ready.notify_all();
        out
    });
    result.map(|()| (st.stats(), st.redone))
}

/// The chunks decoded and not yet written ([`decode_parallel_to`]).
struct Window<T> {
    /// Decoded chunks by index.
    done: std::collections::BTreeMap<usize, T>,
    /// The next chunk to claim.
    next: usize,
    /// Chunks handed to the output (`0..written`).
    written: usize,
    /// No more chunks to claim.
    stop: bool,
    /// A worker's panic, for the calling thread to resume.
    panic: Option<Box<dyn std::any::Any + Send>>,
}
