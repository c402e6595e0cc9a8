//! Flow elements: what a trace decoder reports, in one type for every protocol (E-Trace, N-Trace),
//! modelled on OpenCSD's generic trace elements. Consumers (PC lists, profiles, coverage,
//! round-trip checks) take these and never look at packets.
//!
//! A decoder calls [`FlowSink::element`] for each element, in execution order. Instruction
//! execution comes as [`FlowElement::Range`]: a run of sequentially executed instructions, so a
//! decoder that moves one basic block per branch bit reports one element per block, not one per
//! instruction.
#![warn(missing_docs)]

use pctable::PcTable;
use rvtrace_image::Image;
use rvtrace_isa::insn_len;
pub use rvtrace_isa::CfClass;
use std::io::{self, Write};
use std::sync::Arc;

pub mod chunk;
pub mod pctable;
pub mod stats;
pub mod walk;

/// Why the decoder (re)gained synchronisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncReason {
    /// Start of trace (first sync in the stream, or after trace was enabled).
    Start,
    /// Periodic synchronisation (a resync timer or counter).
    Periodic,
    /// After trace loss or an error: the first sync point after it.
    Recovery,
    /// Any other reason the protocol gives (its own code).
    Other(u8),
}

/// Why trace was lost ([`FlowElement::Loss`]): what kind of trouble, and the text for people
/// (its `Display`, as warnings and flow text print it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// Bytes that do not parse as the protocol's messages or packets, or fields with reserved
    /// or impossible values: a damaged stream, or framing options that do not match it.
    Malformed(String),
    /// The encoder lost trace itself and said so (an N-Trace Error message, an E-Trace support
    /// packet with *qual_status* `trace_lost`).
    Overflow(String),
    /// The start of the trace is lost (data before the first synchronisation).
    StartLost(String),
    /// The end of the trace is lost (cut in a message or packet, or without the end of trace).
    EndLost(String),
    /// Nothing in the trace could be decoded (empty, or no synchronisation at all).
    NoTrace(String),
    /// The trace and the program disagree (a path that leaves the code, a message that cannot
    /// be about where the walk leads): a wrong program or decoder option, or damage that still
    /// parses.
    Mismatch(String),
}

impl LossReason {
    /// The text for people.
    pub fn text(&self) -> &str {
        match self {
            LossReason::Malformed(t)
            | LossReason::Overflow(t)
            | LossReason::StartLost(t)
            | LossReason::EndLost(t)
            | LossReason::NoTrace(t)
            | LossReason::Mismatch(t) => t,
        }
    }

    /// The same kind with the text changed by `f`.
    pub fn map_text(self, f: impl FnOnce(String) -> String) -> LossReason {
        match self {
            LossReason::Malformed(t) => LossReason::Malformed(f(t)),
            LossReason::Overflow(t) => LossReason::Overflow(f(t)),
            LossReason::StartLost(t) => LossReason::StartLost(f(t)),
            LossReason::EndLost(t) => LossReason::EndLost(f(t)),
            LossReason::NoTrace(t) => LossReason::NoTrace(f(t)),
            LossReason::Mismatch(t) => LossReason::Mismatch(f(t)),
        }
    }
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// One thing the decoder learned about the program's execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowElement {
    /// The decoder is synchronised: execution continues at `addr`.
    Sync {
        /// Address of the next instruction executed.
        addr: u64,
        /// Why.
        reason: SyncReason,
    },
    /// `count` instructions executed sequentially, the first at `start`, the last at `last`:
    /// each one before `last` went on to the next one in memory without a control transfer
    /// (it is no jump, no trap return and no taken branch, and no trap is reported after it).
    ///
    /// Where a range ends (the same for every decoder):
    /// * after every control transfer that is taken: a jump of any kind (call, return, table
    ///   jump, ...), a trap return, a taken conditional branch, even one whose target is the next
    ///   instruction in memory;
    /// * before every other element (trap, sync, context, time, loss, end, ignored).
    ///
    /// So a range ends at a not-taken branch, or at an instruction that is no control transfer,
    /// only when another kind of element follows it; and when two ranges follow each other with
    /// nothing between them, the first one's `last` transferred control and the second starts
    /// at its target ([`walk::Ranges`] builds ranges by these rules).
    Range {
        /// Address of the first instruction.
        start: u64,
        /// Address of the last instruction.
        last: u64,
        /// Number of instructions (at least 1).
        count: u64,
        /// Control-flow class of the instruction at `last`, as the decoder classified it
        /// ([`rvtrace_isa::classify`] of the program image at `last`, or the decoder's own link
        /// rules where an option changes them, such as N-Trace's `--link-registers nexrv`).
        class: CfClass,
        /// For a conditional branch at `last` (`class` is [`CfClass::Branch`]): whether it was
        /// taken. `None` for every other class, and for a branch whose outcome the trace does
        /// not give, which happens only when the next element is a [`FlowElement::Loss`] (the
        /// E-Trace packet that would have told was lost or damaged).
        taken: Option<bool>,
    },
    /// A trap (exception or interrupt) was taken. For an exception by a retired instruction
    /// (`ecall`, `ebreak`) that instruction is in the preceding range; for a fault, `epc` is the
    /// faulting instruction, which did not retire.
    Trap {
        /// Exception or interrupt code, if the protocol reports it.
        cause: Option<u64>,
        /// Interrupt (true) or exception.
        interrupt: bool,
        /// Trap value, if reported.
        tval: Option<u64>,
        /// Address of the instruction at which the trap was taken (`mepc`/`sepc`), if known.
        epc: Option<u64>,
        /// First instruction of the handler, if known.
        handler: Option<u64>,
    },
    /// Privilege and/or context (for example ASID or process id) from here on.
    Context {
        /// Privilege (ingress encoding: 0 U, 1 S, 3 M, 4 D, 5 VU, 6 VS), if reported.
        privilege: Option<u8>,
        /// Context value, if reported.
        context: Option<u64>,
    },
    /// Time (absolute, in the trace's time units) at this point of execution.
    Time {
        /// The time stamp.
        time: u64,
    },
    /// Trace data was lost or could not be decoded: execution between the last element and the
    /// next [`FlowElement::Sync`] is unknown.
    Loss {
        /// Byte offset in the trace where the problem was found.
        offset: u64,
        /// Bytes skipped before decoding resumed (if known).
        skipped: Option<u64>,
        /// What happened.
        reason: LossReason,
    },
    /// Tracing stopped (trace disabled, or the end of the trace data).
    End {
        /// Byte offset of the end.
        offset: u64,
    },
    /// Something the trace reports at this point of execution beside the flow, which does not
    /// change it: a vendor's event message (SiFive's In-Circuit Trace: a PC sample, a trigger, a
    /// watchpoint, a trap or context as an event, trace control) or an instrumentation write
    /// (SiFive's DataAcquisition of an ITC stimulus register).
    Event {
        /// Byte offset of the message.
        offset: u64,
        /// What it reports.
        kind: EventKind,
        /// The address it is about (a PC sample's PC, the instruction a trigger fired at), if any.
        addr: Option<u64>,
        /// Its value (a trigger ID, a trap cause, a context, a control code, the data written), if
        /// any.
        value: Option<u64>,
    },
    /// A message the decoder stepped over: one the protocol reserves or leaves to vendors, or a
    /// known one with a reserved or vendor-defined code in a field (N-Trace 6.1: such messages
    /// "should be ignored by decoders interested in program flow only. However decoders should
    /// provide an option to display/dump them and/or generate a warning"). It costs no
    /// synchronisation; [`DecodeStats::ignored`] counts these elements.
    Ignored {
        /// Byte offset of the message.
        offset: u64,
        /// What kind of message, the same text for every message of the kind (one warning per
        /// kind), e.g. `reserved TCODE 34`.
        kind: String,
        /// Its fields as the trace carries them, `NAME=value` separated by spaces.
        fields: String,
    },
}

/// What a [`FlowElement::Event`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A periodic sample of the PC (`addr`), not an instruction of the flow.
    PcSample,
    /// An external trigger fired (`value`: its ID, if given).
    ExternalTrigger,
    /// A watchpoint (trigger) fired (`value`: its ID, if given).
    Watchpoint,
    /// A call or return as an event (`value`: the target, if given).
    Call,
    /// An exception as an event (`value`: its cause).
    Exception,
    /// An interrupt as an event (`value`: its cause).
    Interrupt,
    /// A context change as an event (`value`: the context and its tag as the trace gives them).
    Context,
    /// Trace control (`value`: the code; SiFive's: 2 trace on, 3 trace off, 4 exit debug, 5 enter
    /// debug, 6 exit reset, 8 enter reset).
    Control,
    /// An Ownership PROCESS value that does not decode (`value`: the raw PROCESS).
    Process,
    /// A write to an instrumentation register (`value`: the data); `tag` is the trace's IDTAG
    /// (SiFive: the byte offset of the store in the ITC stimulus array).
    Write {
        /// The trace's tag of the register.
        tag: u64,
    },
    /// An event code the decoder does not name.
    Other(u8),
}

impl EventKind {
    /// The word the text output uses.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::PcSample => "pc-sample",
            EventKind::ExternalTrigger => "external-trigger",
            EventKind::Watchpoint => "watchpoint",
            EventKind::Call => "call",
            EventKind::Exception => "exception",
            EventKind::Interrupt => "interrupt",
            EventKind::Context => "context",
            EventKind::Control => "control",
            EventKind::Process => "process",
            EventKind::Write { .. } => "write",
            EventKind::Other(_) => "other",
        }
    }

    /// The event's code or tag and its value as text (`tag=0x0 value=0x2a`, `code=12`; empty
    /// when it has neither), as the flow text and the tables show them.
    pub fn details(self, value: Option<u64>) -> String {
        let mut parts = Vec::new();
        match self {
            EventKind::Write { tag } => parts.push(format!("tag={tag:#x}")),
            EventKind::Other(code) => parts.push(format!("code={code}")),
            _ => {}
        }
        if let Some(v) = value {
            parts.push(format!("value={v:#x}"));
        }
        parts.join(" ")
    }
}

/// Receives flow elements.
pub trait FlowSink {
    /// One element, in execution order.
    fn element(&mut self, e: &FlowElement);

    /// A [`FlowElement::Range`] given by its fields: the same as
    /// [`element`](FlowSink::element) of that range (the default builds it), for sinks that
    /// take ranges, most elements, without building and matching one ([`PcWriter`]).
    #[inline]
    fn range(&mut self, start: u64, last: u64, count: u64, class: CfClass, taken: Option<bool>) {
        self.element(&FlowElement::Range {
            start,
            last,
            count,
            class,
            taken,
        });
    }

    /// Whether the sink wants no more elements (it has what it needs). Decoders ask after each
    /// message or packet and then stop: the rest of the message in progress may still come,
    /// nothing after it, not even [`FlowElement::End`]; pushing more bytes or finishing then
    /// does nothing more. The default: never.
    #[inline]
    fn stop_requested(&self) -> bool {
        false
    }
}

impl<F: FnMut(&FlowElement)> FlowSink for F {
    fn element(&mut self, e: &FlowElement) {
        self(e)
    }
}

/// Collects elements into a vector (tests, small traces).
impl FlowSink for Vec<FlowElement> {
    fn element(&mut self, e: &FlowElement) {
        self.push(e.clone());
    }
}

/// Counts every trace decoder keeps, whatever its protocol ([`TraceDecoder::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Bytes of trace given to the decoder.
    pub bytes: u64,
    /// Messages (N-Trace) or `te_inst` packets (E-Trace) decoded.
    pub messages: u64,
    /// Instructions reported in [`FlowElement::Range`]s.
    pub instructions: u64,
    /// [`FlowElement::Loss`] elements reported (one count for warnings, summary and exit status).
    pub losses: u64,
    /// Bytes skipped after losses, as the losses report them.
    pub skipped_bytes: u64,
    /// [`FlowElement::Ignored`] elements reported: messages stepped over.
    pub ignored: u64,
}

/// One shape for every protocol's decoder: construct it from its options and the program image,
/// [`push`](TraceDecoder::push) the trace bytes as they come (in pieces of any size: the elements
/// do not depend on how the stream is cut), then [`finish`](TraceDecoder::finish) it.
/// [`decode_all`] does the three in one call.
pub trait TraceDecoder {
    /// The protocol's own counts (the common ones and its extras).
    type ProtocolStats: Copy + std::fmt::Debug;

    /// Decode more bytes of the trace, giving elements to `sink` as they are known.
    fn push<S: FlowSink + ?Sized>(&mut self, bytes: &[u8], sink: &mut S);

    /// End of the trace: reports what is unfinished (a cut message, a lost end) and the final
    /// [`FlowElement::End`]; returns the counts.
    fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> DecodeStats;

    /// Counts so far.
    fn stats(&self) -> DecodeStats;

    /// The protocol's own counts so far.
    fn protocol_stats(&self) -> Self::ProtocolStats;
}

/// Decode a whole trace `bytes` with `dec` into `sink`.
pub fn decode_all<D: TraceDecoder + ?Sized, S: FlowSink + ?Sized>(
    dec: &mut D,
    bytes: &[u8],
    sink: &mut S,
) -> DecodeStats {
    dec.push(bytes, sink);
    dec.finish(sink)
}

/// Decode a trace read from `input` with `dec` into `sink`, 64 KiB at a time (memory stays flat
/// in the trace's size).
pub fn decode_read<D: TraceDecoder + ?Sized, R: io::Read, S: FlowSink + ?Sized>(
    dec: &mut D,
    mut input: R,
    sink: &mut S,
) -> io::Result<DecodeStats> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if sink.stop_requested() {
            return Ok(dec.finish(sink));
        }
        match input.read(&mut buf) {
            Ok(0) => return Ok(dec.finish(sink)),
            Ok(n) => dec.push(&buf[..n], sink),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether segments of `image` overlap by virtual address.
fn overlaps(image: &Image) -> bool {
    let mut ranges: Vec<_> = image.segments().iter().map(|s| s.vaddr_range()).collect();
    ranges.sort_by_key(|r| r.start);
    ranges.windows(2).any(|w| w[1].start < w[0].end)
}

/// Length in bytes of the instruction at `pc` in `image`, or `None` if it is not mapped or has
/// an unknown length.
pub fn insn_len_at(image: &Image, pc: u64) -> Option<u64> {
    let parcel = image.read_u16(pc)?;
    match insn_len(parcel) {
        0 => None,
        n => Some(n as u64),
    }
}

/// The length of the instruction at offset `off` of a segment's bytes `data`, when its first
/// parcel is in them and is a 16- or 32-bit one (RISC-V Unprivileged "Expanded
/// Instruction-Length Encoding": bits [1:0] and [4:2] of the first byte tell); `None` for the
/// rest (the longer encodings, a parcel not in `data`: [`insn_len_at`] decides).
#[inline(always)]
pub(crate) fn short_len(data: &[u8], off: usize) -> Option<u64> {
    match data.get(off..off.checked_add(2)?)? {
        [b, _] if b & 3 != 3 => Some(2),
        [b, _] if b & 0x1c != 0x1c => Some(4),
        _ => None,
    }
}

/// Calls `f` with the address of every instruction of a range, walking `image` for lengths.
/// Returns an error naming the address if the image does not cover the range.
pub fn for_each_pc(
    image: &Image,
    start: u64,
    count: u64,
    mut f: impl FnMut(u64),
) -> Result<(), u64> {
    let mut pc = start;
    for k in 0..count {
        f(pc);
        if k + 1 < count {
            pc = pc.wrapping_add(insn_len_at(image, pc).ok_or(pc)?);
        }
    }
    Ok(())
}

/// The format of a PC list ([`PcWriter`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PcFormat {
    /// One address per line, `0x` + lower-case hex without leading zeros (the `rvtrace run
    /// --pcs` and NexRv PCONLY format).
    #[default]
    Text,
    /// [`PCS_BIN_MAGIC`] (8 bytes), then each address as a u64, little-endian: 8 bytes per
    /// instruction, no separators (`numpy.fromfile(f, '<u8', offset=8)` reads it).
    Bin,
}

/// The first 8 bytes of a binary PC list ([`PcFormat::Bin`]).
pub const PCS_BIN_MAGIC: [u8; 8] = *b"RVTRPC64";

/// A [`PcWriter`] writes its buffer out when it holds this many bytes or more: writes of at
/// least a `BufWriter`'s usual capacity (64 KiB) go straight through it, uncopied.
const PC_BUF: usize = 1 << 16;
/// Room for one line at most: `0x`, 16 digits, newline (and the 8-byte stores' slack).
const PC_LINE_MAX: usize = 24;
/// A [`PcWriter`]'s buffer has this many bytes past [`PC_BUF`].
const PC_SLACK: usize = 4096;

/// Writes every executed instruction address as a PC list ([`PcFormat`]), expanding ranges
/// with the program image: a range is copied out of a [`PcTable`] (every instruction's address
/// formatted once), else walked instruction by instruction.
pub struct PcWriter<'a, W: Write> {
    image: &'a Image,
    table: Arc<PcTable<'a>>,
    out: W,
    buf: Box<[u8]>,
    pos: usize,
    format: PcFormat,
    /// Whether the image's segments overlap (then every length comes from [`insn_len_at`],
    /// which knows which segment wins at an address).
    overlap: bool,
    /// Instructions written so far.
    pub count: u64,
    err: Option<io::Error>,
    /// The address spaces the flow moves between ([`PcWriter::with_spaces`]).
    spaces: Option<Box<SpaceTables<'a>>>,
}

/// A [`PcWriter`]'s address spaces: the table of each, made when the flow enters it, and where
/// the flow is.
struct SpaceTables<'a> {
    follower: rvtrace_image::space::Follower<'a>,
    tables: Vec<Option<Arc<PcTable<'a>>>>,
}

impl<'a, W: Write> PcWriter<'a, W> {
    /// A writer of the text format, expanding ranges with `image`.
    pub fn new(image: &'a Image, out: W) -> Self {
        Self::with_format(image, out, PcFormat::Text)
    }

    /// A writer of `format`, expanding ranges with `image`.
    pub fn with_format(image: &'a Image, out: W, format: PcFormat) -> Self {
        Self::with_table(Arc::new(PcTable::new(image, format)), out)
    }

    /// A writer of the table's format, expanding ranges with its table (which writers on
    /// several threads can share: the table of each segment is made once).
    pub fn with_table(table: Arc<PcTable<'a>>, out: W) -> Self {
        let (image, format) = (table.image(), table.format());
        let mut w = PcWriter {
            image,
            table,
            out,
            // Room for one more line, or a range of the table, past PC_BUF.
            buf: vec![0u8; PC_BUF + PC_SLACK].into_boxed_slice(),
            pos: 0,
            format,
            overlap: overlaps(image),
            count: 0,
            err: None,
            spaces: None,
        };
        if format == PcFormat::Bin {
            w.buf[..8].copy_from_slice(&PCS_BIN_MAGIC);
            w.pos = 8;
        }
        w
    }

    /// A writer of `format` for a program of several address spaces
    /// ([`rvtrace_image::space`]): ranges are expanded with the code of the space that the
    /// flow's [`FlowElement::Context`] elements put it in, as the decoder walked them.
    pub fn with_spaces(spaces: &'a rvtrace_image::space::Spaces, out: W, format: PcFormat) -> Self {
        let follower = rvtrace_image::space::Follower::new(spaces);
        let table = Arc::new(PcTable::new(&follower.space().image, format));
        let mut tables = vec![None; spaces.len()];
        tables[follower.index()] = Some(table.clone());
        let mut w = Self::with_table(table, out);
        w.spaces = Some(Box::new(SpaceTables { follower, tables }));
        w
    }

    /// The flow reports its privilege and/or context: expand ranges in that space from here on.
    #[cold]
    fn context(&mut self, privilege: Option<u8>, context: Option<u64>) {
        let Some(st) = self.spaces.as_deref_mut() else {
            return;
        };
        let Some(i) = st.follower.report(privilege, context) else {
            return;
        };
        let (spaces, format) = (st.follower.spaces(), self.format);
        let table = st.tables[i]
            .get_or_insert_with(|| Arc::new(PcTable::new(&spaces.space(i).image, format)))
            .clone();
        self.image = table.image();
        self.overlap = overlaps(self.image);
        self.table = table;
    }

    /// Append one address.
    #[inline]
    pub fn push(&mut self, pc: u64) {
        if self.pos >= PC_BUF {
            self.flush_buf();
        }
        self.pos += match self.format {
            PcFormat::Text => put_hex_line(&mut self.buf[self.pos..], pc),
            PcFormat::Bin => {
                self.buf[self.pos..self.pos + 8].copy_from_slice(&pc.to_le_bytes());
                8
            }
        };
        self.count += 1;
    }

    fn flush_buf(&mut self) {
        write_out(&mut self.out, &self.buf[..self.pos], &mut self.err);
        self.pos = 0;
    }

    /// Flush and return the writer, or the first I/O error.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buf();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }

    /// A range of `count` instructions from `start`: copied from the table, else walked
    /// ([`walk_range`](Self::walk_range)); the error names the address whose length is unknown.
    #[inline(always)]
    fn range(&mut self, start: u64, count: u64) -> Result<(), u64> {
        let PcWriter {
            table,
            out,
            buf,
            pos,
            err,
            ..
        } = self;
        if let Some(b) = table.range(start, count) {
            // The buffer is written out once it holds PC_BUF bytes: a range that does not fit
            // in the slack past it goes out first.
            if *pos >= PC_BUF || *pos + b.len() > buf.len() {
                write_out(out, &buf[..*pos], err);
                *pos = 0;
            }
            if b.len() >= PC_BUF {
                // Straight out, uncopied (the buffer was just written out).
                write_out(out, b, err);
            } else {
                buf[*pos..*pos + b.len()].copy_from_slice(b);
                *pos += b.len();
            }
            self.count += count;
            return Ok(());
        }
        self.walk_range(start, count)
    }

    /// A range walked instruction by instruction: lengths read from the segment's bytes while
    /// the range stays in it, else from [`insn_len_at`]; the error names the address whose
    /// length is unknown.
    #[inline(never)]
    fn walk_range(&mut self, start: u64, count: u64) -> Result<(), u64> {
        match self.format {
            PcFormat::Text => self.range_as::<false>(start, count),
            PcFormat::Bin => self.range_as::<true>(start, count),
        }
    }

    /// [`walk_range`](Self::walk_range) in one format: as many lines as surely fit in the buffer are
    /// written without checking its room.
    fn range_as<const BIN: bool>(&mut self, start: u64, count: u64) -> Result<(), u64> {
        let seg = match self.overlap {
            false => self.image.segment_at(start),
            true => None,
        };
        let (base, data): (u64, &[u8]) = seg.map_or((0, &[]), |s| (s.vaddr, &s.data[..]));
        let image = self.image;
        // The length of the instruction at `pc`.
        let len = |pc: u64| -> Option<u64> {
            short_len(data, pc.wrapping_sub(base) as usize).or_else(|| insn_len_at(image, pc))
        };
        let mut pc = start;
        let mut left = count;
        // The text line of `pc` (`0x<hex>\n`, `n` bytes), kept from one address to the next:
        // where only the last digit changes (most steps of 2 or 4 bytes), only it is
        // rewritten.
        let mut line = [0u8; PC_LINE_MAX];
        let mut n = if BIN { 0 } else { put_hex_line(&mut line, pc) };
        while left > 0 {
            if self.pos >= PC_BUF {
                self.flush_buf();
            }
            // Line k starts at most k * PC_LINE_MAX bytes on and needs PC_LINE_MAX bytes of
            // room: the buffer has more than PC_BUF + PC_LINE_MAX.
            let fit = ((PC_BUF - self.pos) / PC_LINE_MAX + 1) as u64;
            let k_max = left.min(fit);
            let mut pos = self.pos;
            for k in 0..k_max {
                let room: &mut [u8; PC_LINE_MAX] = (&mut self.buf[pos..pos + PC_LINE_MAX])
                    .try_into()
                    .expect("PC_LINE_MAX bytes");
                if BIN {
                    room[..8].copy_from_slice(&pc.to_le_bytes());
                    pos += 8;
                } else {
                    *room = line;
                    pos += n;
                }
                if k + 1 < left {
                    match len(pc) {
                        Some(l) => {
                            let next = pc.wrapping_add(l);
                            if !BIN {
                                if next >> 4 == pc >> 4 {
                                    line[n - 2] = HEX_DIGITS[(next & 0xf) as usize];
                                } else {
                                    n = put_hex_line(&mut line, next);
                                }
                            }
                            pc = next;
                        }
                        None => {
                            self.pos = pos;
                            self.count += count - left + k + 1;
                            return Err(pc);
                        }
                    }
                }
            }
            self.pos = pos;
            left -= k_max;
        }
        self.count += count;
        Ok(())
    }
}

/// Write `b` to `out` unless an error came before (then nothing more is written); keep the
/// first error.
fn write_out<W: Write>(out: &mut W, b: &[u8], err: &mut Option<io::Error>) {
    if err.is_none() {
        if let Err(e) = out.write_all(b) {
            *err = Some(e);
        }
    }
}

/// The lower-case hex digits.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

impl<W: Write> FlowSink for PcWriter<'_, W> {
    #[inline]
    fn element(&mut self, e: &FlowElement) {
        match *e {
            FlowElement::Range { start, count, .. } => {
                if let Err(pc) = PcWriter::range(self, start, count) {
                    self.unmapped(pc);
                }
            }
            FlowElement::Context { privilege, context } => self.context(privilege, context),
            _ => {}
        }
    }

    #[inline]
    fn range(&mut self, start: u64, _: u64, count: u64, _: CfClass, _: Option<bool>) {
        if let Err(pc) = PcWriter::range(self, start, count) {
            self.unmapped(pc);
        }
    }
}

impl<W: Write> PcWriter<'_, W> {
    /// A range ran into memory whose instruction length is unknown at `pc`.
    #[cold]
    fn unmapped(&mut self, pc: u64) {
        self.err.get_or_insert(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("instruction range runs into unmapped memory at {pc:#x}"),
        ));
    }
}

/// `0x1234 <func+0x10>`: an address with the symbol it falls in, when the image has one.
pub fn addr_with_symbol(image: &Image, addr: u64) -> String {
    format!("{addr:#x}{}", symbol_suffix(image, addr))
}

/// ` <func+0x10>` (` <func>` at its start): the symbol `addr` falls in, as objdump writes it
/// after an address; empty when the image has none there.
pub fn symbol_suffix(image: &Image, addr: u64) -> String {
    match image.symbol_at(addr) {
        Some((s, 0)) => format!(" <{}>", s.name),
        Some((s, off)) => format!(" <{}+{off:#x}>", s.name),
        None => String::new(),
    }
}

/// A loss for people, as warnings and flow text print it: `byte 0x2f: REASON (3 bytes skipped)`.
pub fn loss_text(offset: u64, skipped: Option<u64>, reason: impl std::fmt::Display) -> String {
    match skipped {
        Some(n) => format!("byte {offset:#x}: {reason} ({n} bytes skipped)"),
        None => format!("byte {offset:#x}: {reason}"),
    }
}

/// The name of a privilege level in the ingress encoding (0 U, 1 S, 3 M, 4 D, 5 VU, 6 VS).
pub fn privilege_name(p: u8) -> String {
    match p {
        0 => "U".into(),
        1 => "S".into(),
        3 => "M".into(),
        4 => "D".into(),
        5 => "VU".into(),
        6 => "VS".into(),
        p => p.to_string(),
    }
}

/// Writes flow elements as text for people, one per line, the same for every protocol
/// (`rvtrace decode ntrace|etrace --flow`): hexadecimal addresses with symbols, byte offsets in
/// hexadecimal.
///
/// ```text
/// sync 0x80000000 <_start> start
/// range 0x80000000 <_start> .. 0x8000000c <_start+0xc> (4 instructions)
/// trap exception cause=11 epc=0x80000010 <main+0x4> handler=0x80000100 <trap_entry>
/// context priv=M context=?
/// time 1234
/// loss at byte 0x2f: reason (3 bytes skipped)
/// end at byte 0x940
/// ```
pub struct FlowText<'a, W: Write> {
    image: &'a Image,
    out: W,
    /// Lines not yet written to `out` (written when more than [`FLOW_BUF`] bytes).
    buf: Vec<u8>,
    /// Symbol of recent addresses, direct-mapped by address: a range's start and last repeat
    /// in every loop, so most lookups are found here instead of searched.
    syms: Box<[SymSlot<'a>]>,
    /// Range lines written recently, direct-mapped by range: a loop's ranges repeat, so most
    /// range lines are one copy.
    lines: Box<[LineSlot]>,
    err: Option<io::Error>,
    /// Write [`FlowElement::Ignored`] elements ([`FlowText::with_ignored`]).
    ignored: bool,
    /// The address spaces the flow moves between ([`FlowText::with_spaces`]).
    follower: Option<rvtrace_image::space::Follower<'a>>,
}

/// One entry of [`FlowText`]'s range line cache: a range and its line (empty: `count` 0,
/// which no looked-up range has).
#[derive(Clone, Copy)]
struct LineSlot {
    start: u64,
    last: u64,
    count: u64,
    len: usize,
    text: [u8; LINE_MAX],
}

/// The slot of a range in [`FlowText`]'s range line cache.
#[inline(always)]
fn line_slot(start: u64, count: u64) -> usize {
    ((start >> 1) ^ count.wrapping_mul(0x9e37_79b9)) as usize & (LINE_SLOTS - 1)
}

/// Entries of [`FlowText`]'s range line cache (a power of two).
const LINE_SLOTS: usize = 2048;
/// The longest range line the cache keeps (longer ones are formatted every time).
const LINE_MAX: usize = 96;

/// One entry of [`FlowText`]'s symbol cache: an address and what [`Image::symbol_at`] gives for
/// it.
#[derive(Clone, Copy)]
struct SymSlot<'a> {
    addr: u64,
    sym: Option<(&'a rvtrace_image::Symbol, u64)>,
}

/// Entries of [`FlowText`]'s symbol cache (a power of two).
const SYM_SLOTS: usize = 4096;
/// [`FlowText`]'s buffer is written out past this many bytes.
const FLOW_BUF: usize = 1 << 16;

impl<'a, W: Write> FlowText<'a, W> {
    /// A writer naming addresses with the symbols of `image`. Cheap: the buffer and the caches
    /// are allocated by the first line that names an address (a sink that words one rare
    /// element at a time, as `rvtrace text` does between instructions, never pays for them).
    pub fn new(image: &'a Image, out: W) -> Self {
        FlowText {
            image,
            out,
            buf: Vec::new(),
            syms: Box::new([]),
            lines: Box::new([]),
            err: None,
            ignored: false,
            follower: None,
        }
    }

    /// A writer for a program of several address spaces ([`rvtrace_image::space`]): addresses
    /// are named with the symbols of the space the flow's [`FlowElement::Context`] elements
    /// put it in.
    pub fn with_spaces(spaces: &'a rvtrace_image::space::Spaces, out: W) -> Self {
        let follower = rvtrace_image::space::Follower::new(spaces);
        let mut t = FlowText::new(&follower.space().image, out);
        t.follower = Some(follower);
        t
    }

    /// The flow reports its privilege and/or context: name addresses in that space from here.
    #[cold]
    fn context(&mut self, privilege: Option<u8>, context: Option<u64>) {
        let Some(f) = self.follower.as_mut() else {
            return;
        };
        if f.report(privilege, context).is_some() {
            self.image = &f.space().image;
            if !self.syms.is_empty() {
                // The caches hold the other space's names.
                self.allocate_caches();
            }
        }
    }

    /// Also write a line for each message the decoder stepped over ([`FlowElement::Ignored`]:
    /// `ignored at byte OFFSET: KIND: FIELDS`), which is left out by default.
    pub fn with_ignored(mut self, on: bool) -> Self {
        self.ignored = on;
        self
    }

    /// Allocates the buffer and the caches.
    #[cold]
    fn allocate_caches(&mut self) {
        self.buf.reserve(FLOW_BUF + 4096);
        // Every slot starts as a true entry (of the last address), so none can mislead.
        self.syms = vec![
            SymSlot {
                addr: u64::MAX,
                sym: self.image.symbol_at(u64::MAX),
            };
            SYM_SLOTS
        ]
        .into_boxed_slice();
        self.lines = vec![
            LineSlot {
                start: 0,
                last: 0,
                count: 0,
                len: 0,
                text: [0; LINE_MAX],
            };
            LINE_SLOTS
        ]
        .into_boxed_slice();
    }

    /// Flush and return the writer, or the first I/O error.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buf();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn flush_buf(&mut self) {
        if self.err.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    /// [`Image::symbol_at`], through the cache.
    #[inline]
    fn symbol_at(&mut self, addr: u64) -> Option<(&'a rvtrace_image::Symbol, u64)> {
        let slot = &mut self.syms[(addr >> 1) as usize & (SYM_SLOTS - 1)];
        if slot.addr != addr {
            *slot = SymSlot {
                addr,
                sym: self.image.symbol_at(addr),
            };
        }
        slot.sym
    }

    /// Append [`addr_with_symbol`]'s text for `addr` to the buffer, formatted by hand.
    #[inline]
    fn put_addr(&mut self, addr: u64) {
        let sym = self.symbol_at(addr);
        put_hex(&mut self.buf, addr);
        if let Some((s, off)) = sym {
            self.buf.extend_from_slice(b" <");
            self.buf.extend_from_slice(s.name.as_bytes());
            if off != 0 {
                self.buf.push(b'+');
                put_hex(&mut self.buf, off);
            }
            self.buf.push(b'>');
        }
    }

    fn opt(&self, v: Option<u64>) -> String {
        v.map_or("?".into(), |a| addr_with_symbol(self.image, a))
    }

    /// A range's line into the buffer.
    fn range_line(&mut self, start: u64, last: u64, count: u64) {
        self.buf.extend_from_slice(b"range ");
        self.put_addr(start);
        self.buf.extend_from_slice(b" .. ");
        self.put_addr(last);
        self.buf.extend_from_slice(b" (");
        put_dec(&mut self.buf, count);
        self.buf.extend_from_slice(match count {
            1 => b" instruction)\n".as_slice(),
            _ => b" instructions)\n".as_slice(),
        });
    }

    /// One element's line into the buffer: ranges and syncs (nearly every line) by hand, the
    /// rare others with `write!`.
    fn write(&mut self, e: &FlowElement) -> io::Result<()> {
        if self.lines.is_empty()
            && matches!(e, FlowElement::Range { .. } | FlowElement::Sync { .. })
        {
            self.allocate_caches();
        }
        match e {
            FlowElement::Range {
                start, last, count, ..
            } => {
                let (start, last, count) = (*start, *last, *count);
                let at = self.buf.len();
                let slot = &self.lines[line_slot(start, count)];
                if slot.count == count && slot.start == start && slot.last == last && count != 0 {
                    // A copy of the whole slot (a fixed size: no call), cut to the line.
                    self.buf.extend_from_slice(&slot.text);
                    self.buf.truncate(at + slot.len);
                    return Ok(());
                }
                self.range_line(start, last, count);
                let line = &self.buf[at..];
                if line.len() <= LINE_MAX && count != 0 {
                    let slot = &mut self.lines[line_slot(start, count)];
                    (slot.start, slot.last, slot.count) = (start, last, count);
                    slot.len = line.len();
                    slot.text[..line.len()].copy_from_slice(line);
                }
                Ok(())
            }
            FlowElement::Sync { addr, reason } => {
                self.buf.extend_from_slice(b"sync ");
                self.put_addr(*addr);
                match reason {
                    SyncReason::Start => self.buf.extend_from_slice(b" start\n"),
                    SyncReason::Periodic => self.buf.extend_from_slice(b" periodic\n"),
                    SyncReason::Recovery => self.buf.extend_from_slice(b" recovery\n"),
                    SyncReason::Other(c) => writeln!(self.buf, " reason {c}")?,
                }
                Ok(())
            }
            FlowElement::Trap {
                interrupt,
                epc,
                handler,
                cause,
                tval,
            } => writeln!(
                self.buf,
                "trap {}{} epc={} handler={}{}",
                if *interrupt { "interrupt" } else { "exception" },
                cause.map_or(String::new(), |c| format!(" cause={c}")),
                self.opt(*epc),
                self.opt(*handler),
                tval.map_or(String::new(), |t| format!(" tval={t:#x}")),
            ),
            FlowElement::Context { privilege, context } => writeln!(
                self.buf,
                "context priv={} context={}",
                privilege.map_or("?".into(), privilege_name),
                context.map_or("?".into(), |c| format!("{c:#x}"))
            ),
            FlowElement::Time { time } => writeln!(self.buf, "time {time}"),
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            } => writeln!(self.buf, "loss at {}", loss_text(*offset, *skipped, reason)),
            FlowElement::End { offset } => writeln!(self.buf, "end at byte {offset:#x}"),
            FlowElement::Event {
                offset,
                kind,
                addr,
                value,
            } => {
                write!(self.buf, "event {}", kind.name())?;
                if let Some(a) = addr {
                    let a = self.opt(Some(*a));
                    write!(self.buf, " addr={a}")?;
                }
                let details = kind.details(*value);
                if !details.is_empty() {
                    write!(self.buf, " {details}")?;
                }
                writeln!(self.buf, " at byte {offset:#x}")
            }
            FlowElement::Ignored {
                offset,
                kind,
                fields,
            } => {
                if self.ignored {
                    writeln!(self.buf, "ignored at byte {offset:#x}: {kind}: {fields}")
                } else {
                    Ok(())
                }
            }
        }
    }
}

impl<W: Write> FlowSink for FlowText<'_, W> {
    fn element(&mut self, e: &FlowElement) {
        if self.err.is_none() {
            if let Err(err) = self.write(e) {
                self.err = Some(err);
            }
            if self.buf.len() > FLOW_BUF {
                self.flush_buf();
            }
        }
        if let FlowElement::Context { privilege, context } = *e {
            self.context(privilege, context);
        }
    }
}

/// Reads a binary PC list ([`PcFormat::Bin`]): the magic, then one address per 8 bytes.
pub struct PcBinReader<R: io::Read> {
    inner: R,
    /// 0-based index of the next address.
    index: u64,
}

impl<R: io::Read> PcBinReader<R> {
    /// A reader of `r`, which must start with [`PCS_BIN_MAGIC`].
    pub fn new(mut r: R) -> io::Result<Self> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if magic != PCS_BIN_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a binary PC list (no RVTRPC64 magic)",
            ));
        }
        Ok(PcBinReader { inner: r, index: 0 })
    }

    /// The next address with its 0-based index, `None` at the end; a list cut inside an
    /// address is an error (`UnexpectedEof`, naming the index).
    pub fn next_pc(&mut self) -> io::Result<Option<(u64, u64)>> {
        let mut b = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match self.inner.read(&mut b[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "binary PC list cut inside address {} ({got} of 8 bytes)",
                            self.index
                        ),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let i = self.index;
        self.index += 1;
        Ok(Some((i, u64::from_le_bytes(b))))
    }
}

/// Eight hex digits of `v` (lower case, most significant first) as the bytes of a u64 in
/// memory order: the nibbles spread one per byte, then `'0'` added, and `'a' - '0' - 10` more
/// to the bytes of 10 and above (no formatting machinery, no table).
#[inline]
fn hex8(v: u32) -> [u8; 8] {
    let mut x = u64::from(v);
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    // Nibble k (from the least significant) is in byte k: most significant first in memory.
    x = x.swap_bytes();
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (x + 0x3030_3030_3030_3030 + letters * (b'a' - b'0' - 10) as u64).to_le_bytes()
}

/// Writes `0x<hex>\n` (as `format!("{v:#x}\n")`) at the start of `out`, which must have room
/// for 24 bytes (the digits are stored 8 at a time); returns the line's length.
#[inline]
pub fn put_hex_line(out: &mut [u8], v: u64) -> usize {
    let digits = (64 - (v | 1).leading_zeros()).div_ceil(4) as usize;
    // The significant digits first: shift the leading zero nibbles out.
    let s = v << (4 * (16 - digits));
    let out = &mut out[..PC_LINE_MAX];
    out[0] = b'0';
    out[1] = b'x';
    out[2..10].copy_from_slice(&hex8((s >> 32) as u32));
    out[10..18].copy_from_slice(&hex8(s as u32));
    out[2 + digits] = b'\n';
    3 + digits
}

/// Append `0x<hex>\n` to `buf` ([`put_hex_line`]).
#[inline]
pub fn push_hex_line(buf: &mut Vec<u8>, v: u64) {
    let mut line = [0u8; PC_LINE_MAX];
    let n = put_hex_line(&mut line, v);
    buf.extend_from_slice(&line[..n]);
}

/// Append `0x<hex>` (as `format!("{v:#x}")`) to `buf` ([`put_hex_line`] without the newline).
#[inline]
pub fn put_hex(buf: &mut Vec<u8>, v: u64) {
    let mut line = [0u8; PC_LINE_MAX];
    let n = put_hex_line(&mut line, v);
    buf.extend_from_slice(&line[..n - 1]);
}

/// Append `v` in decimal (as `format!("{v}")`) to `buf`.
#[inline]
pub fn put_dec(buf: &mut Vec<u8>, mut v: u64) {
    // u64::MAX has 20 digits; written from the end.
    let mut d = [0u8; 20];
    let mut i = d.len();
    loop {
        i -= 1;
        d[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&d[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Symbols as `riscv64-unknown-elf-nm` lists them for this test program: `_start` at
    /// 0x80000000, `main` at 0x80000200.
    #[test]
    fn flow_text_names_symbols() {
        let mut image = Image::new();
        let elf = include_bytes!("../../../programs/elf/recurse-rv64gc.elf");
        image.load_bytes("recurse", elf).unwrap();
        let mut w = FlowText::new(&image, Vec::new());
        for e in [
            FlowElement::Sync {
                addr: 0x8000_0000,
                reason: SyncReason::Start,
            },
            FlowElement::Range {
                start: 0x8000_0200,
                last: 0x8000_0210,
                count: 5,
                class: CfClass::None,
                taken: None,
            },
            FlowElement::Trap {
                cause: Some(11),
                interrupt: false,
                tval: None,
                epc: Some(0x8000_0202),
                handler: None,
            },
            FlowElement::Context {
                privilege: Some(3),
                context: None,
            },
            FlowElement::Loss {
                offset: 0x2f,
                skipped: Some(3),
                reason: LossReason::Malformed("bad".into()),
            },
            FlowElement::End { offset: 0x940 },
        ] {
            w.element(&e);
        }
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "sync 0x80000000 <_start> start\n\
             range 0x80000200 <main> .. 0x80000210 <main+0x10> (5 instructions)\n\
             trap exception cause=11 epc=0x80000202 <main+0x2> handler=?\n\
             context priv=M context=?\n\
             loss at byte 0x2f: bad (3 bytes skipped)\n\
             end at byte 0x940\n"
        );
    }

    /// The range line cache against the lines formatted with `format!`: ranges repeated (hits),
    /// the same start and count with another last, counts 0 and 1, addresses near symbols
    /// and far from them, lines longer than a slot.
    #[test]
    fn flow_text_cache_is_invisible() {
        let mut image = Image::new();
        let elf = include_bytes!("../../../programs/elf/recurse-rv64gc.elf");
        image.load_bytes("recurse", elf).unwrap();
        let mut x = rvtrace_testkit::Rng(99);
        let mut ranges: Vec<(u64, u64, u64)> = Vec::new();
        for _ in 0..3000 {
            let r = x.next_u64();
            let range = match r % 8 {
                // An earlier range again, or with another last.
                0..=2 if !ranges.is_empty() => {
                    let (s, l, c) = ranges[(r >> 8) as usize % ranges.len()];
                    match r % 8 {
                        0 => (s, l ^ 2, c),
                        _ => (s, l, c),
                    }
                }
                3 => (x.next_u64(), x.next_u64(), x.next_u64()),
                _ => {
                    let s = 0x8000_0000 + (r >> 20) % 0x800 * 2;
                    (s, s + (r >> 40) % 64, (r >> 50) % 3)
                }
            };
            ranges.push(range);
        }
        let mut w = FlowText::new(&image, Vec::new());
        let mut want = String::new();
        let mut long = 0;
        for &(start, last, count) in &ranges {
            w.element(&FlowElement::Range {
                start,
                last,
                count,
                class: CfClass::None,
                taken: None,
            });
            let line = format!(
                "range {} .. {} ({count} instruction{})\n",
                addr_with_symbol(&image, start),
                addr_with_symbol(&image, last),
                if count == 1 { "" } else { "s" }
            );
            long += (line.len() > LINE_MAX) as u32;
            want.push_str(&line);
        }
        assert!(long > 10, "{long} lines longer than a slot");
        assert_eq!(String::from_utf8(w.finish().unwrap()).unwrap(), want);
    }

    /// The fast formatter against `format!("{:#x}")`: edge values, every nibble boundary
    /// (2^k, 2^k - 1), RV32 addresses and random values of every width.
    #[test]
    fn hex_line_equals_format() {
        let mut vals = vec![0, 1, 9, 10, 15, 16, u64::MAX, u32::MAX as u64, 0x8000_0000];
        for k in 0..64 {
            vals.extend([1u64 << k, (1u64 << k) - 1, (1u64 << k) | 0xa]);
        }
        let mut x = rvtrace_testkit::Rng(0x1234_5678_9abc_def1);
        for _ in 0..20_000 {
            let r = x.next_u64();
            vals.push(r);
            vals.push(r >> (r % 64));
            vals.push(r as u32 as u64);
        }
        let mut fast = Vec::new();
        let mut slow = String::new();
        for v in vals {
            push_hex_line(&mut fast, v);
            slow.push_str(&format!("{v:#x}\n"));
        }
        assert_eq!(String::from_utf8(fast).unwrap(), slow);
    }

    /// The writer's expansion of ranges (lengths from the segment's bytes) against
    /// [`for_each_pc`], both formats; the binary list reads back the same addresses.
    #[test]
    fn pc_writer_formats_agree() {
        let mut image = Image::new();
        let elf = include_bytes!("../../../programs/elf/recurse-rv64gc.elf");
        image.load_bytes("recurse", elf).unwrap();
        let text_seg = image.segments().iter().find(|s| s.is_executable()).unwrap();
        let (lo, hi) = (text_seg.vaddr, text_seg.vaddr + text_seg.data.len() as u64);
        let mut x = rvtrace_testkit::Rng(77);
        let mut want = Vec::new();
        let mut text = PcWriter::new(&image, Vec::new());
        let mut bin = PcWriter::with_format(&image, Vec::new(), PcFormat::Bin);
        for _ in 0..300 {
            // A run from a random instruction boundary of the first bytes, up to 40 long.
            let mut start = lo;
            for _ in 0..x.next_u64() % 200 {
                start += insn_len_at(&image, start).unwrap();
            }
            let count = 1 + x.next_u64() % 40;
            let mut n = 0;
            let mut pc = start;
            while n < count && pc < hi - 4 {
                n += 1;
                pc += insn_len_at(&image, pc).unwrap();
            }
            for_each_pc(&image, start, n, |pc| want.push(pc)).unwrap();
            let e = FlowElement::Range {
                start,
                last: 0,
                count: n,
                class: CfClass::None,
                taken: None,
            };
            text.element(&e);
            bin.element(&e);
        }
        let text = String::from_utf8(text.finish().unwrap()).unwrap();
        let lines: Vec<String> = want.iter().map(|p| format!("{p:#x}")).collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), lines);
        let bin = bin.finish().unwrap();
        assert_eq!(bin.len(), 8 + 8 * want.len());
        let mut r = PcBinReader::new(&bin[..]).unwrap();
        for (i, &pc) in want.iter().enumerate() {
            assert_eq!(r.next_pc().unwrap(), Some((i as u64, pc)));
        }
        assert_eq!(r.next_pc().unwrap(), None);
        // Cut inside the last address, and a file that is no binary list.
        let mut r = PcBinReader::new(&bin[..bin.len() - 3]).unwrap();
        let mut err = None;
        for _ in 0..=want.len() {
            if let Err(e) = r.next_pc() {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err.unwrap().kind(), io::ErrorKind::UnexpectedEof);
        assert!(PcBinReader::new(&b"0x80000000\n"[..]).is_err());
    }

    /// A range that runs into unmapped memory is an error of the writer, not a panic.
    #[test]
    fn pc_writer_unmapped() {
        let mut image = Image::new();
        let elf = include_bytes!("../../../programs/elf/recurse-rv64gc.elf");
        image.load_bytes("recurse", elf).unwrap();
        let mut w = PcWriter::new(&image, Vec::new());
        w.element(&FlowElement::Range {
            start: 0x10,
            last: 0x10,
            count: 3,
            class: CfClass::None,
            taken: None,
        });
        assert_eq!(w.finish().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn hex_lines() {
        let mut b = Vec::new();
        for v in [0, 1, 0xf, 0x10, 0x8000_0000, u64::MAX] {
            push_hex_line(&mut b, v);
        }
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "0x0\n0x1\n0xf\n0x10\n0x80000000\n0xffffffffffffffff\n"
        );
    }
}
