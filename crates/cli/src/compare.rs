//! `rvtrace compare A B`: two retired-instruction streams, compared instruction by instruction in
//! lockstep (memory stays flat whatever their size). Each input is a PC list, a binary ingress
//! file (recognised by its magic bytes) or a trace decoded with the program's ELF (its protocol
//! from `--trace-a`/`--trace-b`, `--protocol`, its sidecar or its bytes: the decode layer's);
//! decoding runs on its own thread and hands over PCs in small batches, each with the byte offset
//! of the message or packet that produced it.

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_decode::{Protocol, UnitSink};
use rvtrace_flow::{
    addr_with_symbol, insn_len_at, FlowElement, FlowSink, PcBinReader, PCS_BIN_MAGIC,
};
use rvtrace_image::Image;
use rvtrace_ingress::pcs::PcListReader;
use rvtrace_ingress::{IngressError, IngressReader, Record, Xlen};
use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

const HELP: &str = "\
Inputs: a PC list (one address per line, 0x + hex: `rvtrace run --pcs`, NexRv PCONLY, `decode
--pcs`), a binary PC list (`decode --pcs-format bin`; recognised by its magic bytes), a binary
ingress file (`rvtrace run --ingress`, `rvtrace ingress convert`; recognised by
its magic bytes; records that retire nothing, traps, are skipped), or a trace file decoded with
--elf and the decoder options below (as `rvtrace decode` takes them); a trace is recognised by
its sidecar (TRACE.meta) or its bytes (N-Trace messages, E-Trace te_inst_raw), or named with
--trace-a/--trace-b (or --protocol, for every input that is not a PC list or ingress file).
`-` reads stdin (for one input). Other logs (Spike, QEMU, PCSEQ, CSV) can be turned into
ingress with `rvtrace ingress convert`.

Output (stdout): `equal: N instructions`, or the first divergence: its 0-based instruction index,
the last instructions both agree on, then each side's instruction there with symbol and
disassembly (from --elf) and where it comes from (line of a PC list, record of an ingress file,
byte offset of the message or packet of a trace). A stream that ends before the other diverges
at the index where it ended. Decoder losses are warnings.

Two ingress files are compared record by record, every field but time (--fields chooses; a
block record counts as the records of its instructions, `ingressPort.adoc` \"Simplifications for
single-retirement\", so a block file equals the single-retirement file of the same run), trap
records included; a divergence names the fields that differ and shows both records.

--align: B starts later than A (a trace whose first sync is into A's run, or a file cut at its
start): the comparison starts where B joins A (`aligned: B starts at A's instruction N`);
indexes are B's; B's losses before its first instruction (a trace that starts without a
sync) are warnings but not a difference. Each place in A where B's first instruction appears is followed against B until
one is left that has matched 4096 instructions (or all of B): a path that repeats (a loop, a
recursion) is told apart by what follows it.

Exit status: 0 equal; 1 a divergence (or trace lost while decoding); 2 usage error; 125 an input
cannot be read or decoded (malformed lines are reported with their line number).";

/// Arguments of `rvtrace compare`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct CompareArgs {
    /// First stream (`-` for stdin).
    a: PathBuf,
    /// Second stream (`-` for stdin).
    b: PathBuf,
    /// The program's ELF file(s): symbols and disassembly in the report; needed to decode traces
    /// and to expand ingress records of several instructions.
    #[arg(long = "elf", value_name = "ELF")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    images: crate::trace_source::ImageArgs,
    /// A is a trace of this protocol, to decode.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    trace_a: Option<Protocol>,
    /// B is a trace of this protocol, to decode.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    trace_b: Option<Protocol>,
    /// Instructions of context shown before the divergence.
    #[arg(long, default_value_t = 5, value_name = "N")]
    context: usize,
    /// The fields of two ingress files to compare, comma-separated: iaddr, iretire, ilastsize,
    /// itype, cause, tval, priv, context, ctype, time, sijump, or `all` [default: all but time].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    fields: Vec<String>,
    /// B starts later than A: compare from where B's first instructions appear in A.
    #[arg(long)]
    align: bool,
    /// Show at most N decoder warnings per input.
    #[arg(long, default_value_t = report::DEFAULT_MAX_WARNINGS, value_name = "N")]
    max_warnings: u64,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
}

/// Where an instruction came from in its input.
#[derive(Clone, Copy, Debug)]
enum At {
    /// 1-based line of a PC list.
    Line(u64),
    /// 0-based address of a binary PC list.
    Entry(u64),
    /// 0-based record of an ingress file.
    Record(u64),
    /// Byte offset of the message (N-Trace) or packet (E-Trace) that produced it.
    Byte(u64, &'static str),
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Line(n) => write!(f, "line {n}"),
            At::Entry(n) => write!(f, "address {n} of the binary list"),
            At::Record(n) => write!(f, "record {n}"),
            At::Byte(n, what) => write!(f, "{what} at byte {n:#x}"),
        }
    }
}

/// One retired instruction of a stream.
#[derive(Clone, Copy, Debug)]
struct Item {
    pc: u64,
    at: At,
    /// The instruction's ingress record (an ingress file's, of one instruction, or of a trap
    /// that retires nothing, when traps are kept).
    rec: Option<Record>,
}

/// A field of an ingress record that `--fields` can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Iaddr,
    Iretire,
    Ilastsize,
    Itype,
    Cause,
    Tval,
    Priv,
    Context,
    Ctype,
    Time,
    Sijump,
}

impl Field {
    const ALL: [Field; 11] = [
        Field::Iaddr,
        Field::Iretire,
        Field::Ilastsize,
        Field::Itype,
        Field::Cause,
        Field::Tval,
        Field::Priv,
        Field::Context,
        Field::Ctype,
        Field::Time,
        Field::Sijump,
    ];

    /// The name in `--fields`, as the text form names the field (`rvtrace_ingress::text`).
    fn name(self) -> &'static str {
        match self {
            Field::Iaddr => "iaddr",
            Field::Iretire => "iretire",
            Field::Ilastsize => "ilastsize",
            Field::Itype => "itype",
            Field::Cause => "cause",
            Field::Tval => "tval",
            Field::Priv => "priv",
            Field::Context => "context",
            Field::Ctype => "ctype",
            Field::Time => "time",
            Field::Sijump => "sijump",
        }
    }

    /// The field's value as the text form writes it.
    fn show(self, r: &Record) -> String {
        match self {
            Field::Iaddr | Field::Tval | Field::Context => format!("{:#x}", self.get(r)),
            Field::Priv => rvtrace_ingress::privilege::name(r.priv_)
                .map_or_else(|| r.priv_.to_string(), str::to_string),
            f => f.get(r).to_string(),
        }
    }

    fn get(self, r: &Record) -> u64 {
        match self {
            Field::Iaddr => r.iaddr,
            Field::Iretire => r.iretire as u64,
            Field::Ilastsize => r.ilastsize as u64,
            Field::Itype => r.itype.code() as u64,
            Field::Cause => r.cause,
            Field::Tval => r.tval,
            Field::Priv => r.priv_ as u64,
            Field::Context => r.context,
            Field::Ctype => r.ctype as u64,
            Field::Time => r.time,
            Field::Sijump => r.sijump as u64,
        }
    }

    /// The fields `--fields` names (empty: all but time).
    fn parse(list: &[String]) -> Result<Vec<Field>, Failure> {
        if list.is_empty() {
            return Ok(Field::ALL
                .into_iter()
                .filter(|&f| f != Field::Time)
                .collect());
        }
        let mut out = Vec::new();
        for name in list {
            if name == "all" {
                return Ok(Field::ALL.to_vec());
            }
            let f = Field::ALL
                .into_iter()
                .find(|f| f.name() == name.as_str())
                .ok_or_else(|| {
                    let names: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
                    Failure::Usage(format!(
                        "--fields: unknown field {name:?} (one of {}, all)",
                        names.join(", ")
                    ))
                })?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        Ok(out)
    }
}

/// What a decoder thread sends.
enum Msg {
    Items(Vec<Item>),
    Loss { offset: u64, reason: String },
    Failed(String),
}

/// One input, read one instruction at a time.
enum Stream<'a> {
    Pcs {
        r: PcListReader<Box<dyn BufRead>>,
    },
    PcsBin {
        r: PcBinReader<Box<dyn BufRead>>,
    },
    Ingress {
        r: IngressReader<Box<dyn BufRead>>,
        index: u64,
        image: &'a Image,
        /// Records that retire nothing (traps) are items too.
        traps: bool,
        /// PCs of a record of several instructions, not yet returned.
        more: VecDeque<Item>,
    },
    Decoded {
        rx: Receiver<Msg>,
        buf: std::vec::IntoIter<Item>,
        losses: u64,
        /// Losses before the first instruction (a trace that starts without a sync).
        leading: u64,
        /// An instruction was delivered.
        started: bool,
        last_loss: Option<(u64, String)>,
        warnings: report::Warnings,
    },
}

impl Stream<'_> {
    fn next(&mut self, name: &str) -> Result<Option<Item>, Failure> {
        let ing = |e: IngressError| match e {
            IngressError::Io(e) => Failure::io(name, e),
            e => Failure::Tool(format!("{name}: {e}")),
        };
        match self {
            Stream::Pcs { r } => Ok(r.next_pc().map_err(ing)?.map(|(line, pc)| Item {
                pc,
                at: At::Line(line),
                rec: None,
            })),
            Stream::PcsBin { r } => {
                Ok(r.next_pc()
                    .map_err(|e| Failure::io(name, e))?
                    .map(|(i, pc)| Item {
                        pc,
                        at: At::Entry(i),
                        rec: None,
                    }))
            }
            Stream::Ingress {
                r,
                index,
                image,
                traps,
                more,
            } => loop {
                if let Some(i) = more.pop_front() {
                    return Ok(Some(i));
                }
                let Some(rec) = r.next_record().map_err(ing)? else {
                    return Ok(None);
                };
                let at = At::Record(*index);
                *index += 1;
                if !rec.retires() {
                    if *traps && rec.is_trap() {
                        return Ok(Some(Item {
                            pc: rec.iaddr,
                            at,
                            rec: Some(rec),
                        }));
                    }
                    continue;
                }
                if rec.is_single_instruction() {
                    return Ok(Some(Item {
                        pc: rec.iaddr,
                        at,
                        rec: Some(rec),
                    }));
                }
                // Several instructions: walk them with the program, then give each its record.
                let (mut pc, end) = (rec.iaddr, rec.next_iaddr());
                let mut n = 0u64;
                while pc != end {
                    n += 1;
                    more.push_back(Item { pc, at, rec: None });
                    let len = insn_len_at(image, pc).ok_or_else(|| {
                        Failure::Tool(format!(
                            "{name}: {at}: a block of {} half-words at {:#x}: no instruction at {pc:#x} in the ELF (give --elf)",
                            rec.iretire, rec.iaddr
                        ))
                    })?;
                    pc = pc.wrapping_add(len);
                    if n > rec.iretire as u64 {
                        return Err(Failure::Tool(format!(
                            "{name}: {at}: the block at {:#x} does not end on an instruction boundary",
                            rec.iaddr
                        )));
                    }
                }
                // The records a single-retirement hart gives for them; none when the block's
                // ilastsize does not fit the program (the PCs are compared all the same).
                let mut k = more.len() - n as usize;
                let len_at = |a| insn_len_at(image, a).map(|l| l as u32);
                let _ = rec.split_block(len_at, |x| {
                    if let Some(it) = more.get_mut(k) {
                        it.rec = Some(x);
                    }
                    k += 1;
                });
            },
            Stream::Decoded {
                rx,
                buf,
                losses,
                leading,
                started,
                last_loss,
                warnings,
            } => loop {
                if let Some(i) = buf.next() {
                    *started = true;
                    return Ok(Some(i));
                }
                match rx.recv() {
                    Ok(Msg::Items(v)) => *buf = v.into_iter(),
                    Ok(Msg::Loss { offset, reason }) => {
                        *losses += 1;
                        *leading += !*started as u64;
                        warnings.warn(rvtrace_flow::loss_text(offset, None, &reason));
                        *last_loss = Some((offset, reason));
                    }
                    Ok(Msg::Failed(e)) => return Err(Failure::Tool(format!("{name}: {e}"))),
                    Err(_) => return Ok(None),
                }
            },
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Stream::Pcs { .. } => "PC list",
            Stream::PcsBin { .. } => "binary PC list",
            Stream::Ingress { .. } => "ingress",
            Stream::Decoded { .. } => "decoded trace",
        }
    }
}

/// Hands a decoder's flow over to the comparing thread as PCs, each with the offset of the
/// message that produced it. The decoder's count of instructions after each message says which
/// instructions that message produced (ranges of several messages are emitted late, merged).
struct Handover<'a> {
    image: &'a Image,
    tx: SyncSender<Msg>,
    batch: Vec<Item>,
    /// (decoder instruction count at the end of a message, its offset), oldest first.
    ends: VecDeque<(u64, u64)>,
    /// Offset of the message being decoded.
    cur: u64,
    /// Instructions handed over so far.
    emitted: u64,
    /// The decoder's count at the end of the last message.
    counted: u64,
    /// The comparing thread stopped listening, or the flow cannot be expanded.
    stop: bool,
    /// "message" or "packet".
    unit: &'static str,
}

impl<'a> Handover<'a> {
    fn new(image: &'a Image, tx: SyncSender<Msg>, unit: &'static str) -> Self {
        Handover {
            unit,
            image,
            tx,
            batch: Vec::with_capacity(4096),
            ends: VecDeque::new(),
            cur: 0,
            emitted: 0,
            counted: 0,
            stop: false,
        }
    }

    fn send(&mut self, m: Msg) {
        if !self.stop && self.tx.send(m).is_err() {
            self.stop = true;
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() {
            let b = std::mem::replace(&mut self.batch, Vec::with_capacity(4096));
            self.send(Msg::Items(b));
        }
    }

    fn push(&mut self, pc: u64) {
        while self.ends.front().is_some_and(|e| e.0 <= self.emitted) {
            self.ends.pop_front();
        }
        let off = self.ends.front().map_or(self.cur, |e| e.1);
        self.emitted += 1;
        self.batch.push(Item {
            pc,
            at: At::Byte(off, self.unit),
            rec: None,
        });
        if self.batch.len() >= 4096 {
            self.flush();
        }
    }
}

impl UnitSink for Handover<'_> {
    fn begin(&mut self, offset: u64) {
        self.cur = offset;
    }

    fn end(&mut self, count: u64) {
        if count > self.counted {
            self.counted = count;
            self.ends.push_back((count, self.cur));
        }
    }
}

impl FlowSink for Handover<'_> {
    fn stop_requested(&self) -> bool {
        self.stop
    }

    fn element(&mut self, e: &FlowElement) {
        if self.stop {
            return;
        }
        match e {
            FlowElement::Range { start, count, .. } => {
                let mut pc = *start;
                for k in 0..*count {
                    self.push(pc);
                    if k + 1 < *count {
                        match insn_len_at(self.image, pc) {
                            Some(n) => pc = pc.wrapping_add(n),
                            None => {
                                self.flush();
                                self.send(Msg::Failed(format!(
                                    "decoded instructions run into unmapped memory at {pc:#x}"
                                )));
                                self.stop = true;
                                return;
                            }
                        }
                    }
                }
            }
            FlowElement::Loss { offset, reason, .. } => {
                self.flush();
                self.send(Msg::Loss {
                    offset: *offset,
                    reason: reason.to_string(),
                });
            }
            _ => {}
        }
    }
}

/// Decodes a trace (`head` then `rest`, from its start) on its own thread, message by message
/// or packet by packet ([`rvtrace_decode::Trace::decode_units`]), handing its PCs over.
fn decode_trace(
    trace: &rvtrace_decode::Trace,
    image: &Image,
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
    tx: SyncSender<Msg>,
) {
    let mut h = Handover::new(image, tx, trace.unit_name());
    let input = std::io::BufReader::with_capacity(1 << 16, std::io::Cursor::new(head).chain(rest));
    if let Err(e) = trace.decode_units(image, input, &mut h) {
        return h.send(Msg::Failed(format!("cannot read: {e}")));
    }
    h.flush();
}

/// What an input is: by its magic bytes, else a trace (its protocol given, its sidecar's or its
/// bytes'), else a PC list.
enum Sniffed {
    Ingress,
    PcsBin,
    PcsText,
    Trace(Protocol),
}

/// An input opened: its first 64 KiB (`head`), the rest to read, and what it is (`forced`: the
/// protocol `--trace-a`/`--trace-b` gives).
struct Opened {
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
    kind: Sniffed,
}

impl Opened {
    fn open(
        path: &Path,
        forced: Option<Protocol>,
        dec: &crate::trace_source::TraceDecodeOpts,
    ) -> Result<Opened, Failure> {
        let name = report::name(path);
        // stdin unbuffered here: what is not in `head` is read from it later.
        let mut rest: Box<dyn Read + Send> = if report::is_std(path) {
            Box::new(std::io::stdin())
        } else {
            Box::new(
                std::fs::File::open(path)
                    .map_err(|e| Failure::Tool(format!("{}: cannot open: {e}", path.display())))?,
            )
        };
        let head = report::read_head(&mut rest, 1 << 16, &name)?;
        let kind = match forced {
            Some(p) => Sniffed::Trace(p),
            None if rvtrace_decode::kind::is_ingress(&head) => Sniffed::Ingress,
            None if head.starts_with(&PCS_BIN_MAGIC) => Sniffed::PcsBin,
            None if rvtrace_decode::kind::is_text(&head) || head.is_empty() => Sniffed::PcsText,
            None => match dec.protocol(path, &head, head.len() < 1 << 16) {
                Ok(p) => Sniffed::Trace(p),
                Err(_) => Sniffed::PcsText,
            },
        };
        Ok(Opened { head, rest, kind })
    }

    /// The input from its start, for reading on this thread.
    fn reader(self) -> Box<dyn BufRead> {
        Box::new(std::io::BufReader::with_capacity(
            1 << 16,
            std::io::Cursor::new(self.head).chain(self.rest),
        ))
    }
}

/// One line of the report for instruction `index` at `pc`: the address with its symbol (as
/// every flow text shows it) and the disassembly.
fn show(image: &Image, xlen: u32, index: u64, pc: u64) -> String {
    let dis = image
        .fetch(pc)
        .map(|bits| rvtrace_isa::disasm::disasm(bits, pc, xlen).to_string())
        .unwrap_or_default();
    format!("{index:>10}  {:<40} {dis:<32}", addr_with_symbol(image, pc))
}

/// `rvtrace compare`.
pub fn compare(a: &CompareArgs) -> CmdResult {
    if report::is_std(&a.a) && report::is_std(&a.b) {
        return Err(Failure::Usage(
            "only one of A and B can be stdin (-)".into(),
        ));
    }
    let (image, xlen) = crate::trace_source::load_program(&a.elf, &a.images)?;
    let xlen = xlen.unwrap_or(Xlen::Rv64);
    let names = [report::name(&a.a), report::name(&a.b)];
    let image = &image;
    let paths = [(&a.a, a.trace_a), (&a.b, a.trace_b)];
    let opened = [
        Opened::open(paths[0].0, paths[0].1, &a.dec)?,
        Opened::open(paths[1].0, paths[1].1, &a.dec)?,
    ];
    // Two ingress files: compared record by record, trap records included.
    let records = opened.iter().all(|o| matches!(o.kind, Sniffed::Ingress));
    let fields = Field::parse(&a.fields)?;
    if !records && !a.fields.is_empty() {
        return Err(Failure::Usage(
            "--fields compares the records of two ingress files; an input is not one".into(),
        ));
    }
    std::thread::scope(|scope| -> CmdResult {
        let mut streams = Vec::new();
        for (k, ((path, _), opened)) in paths.into_iter().zip(opened).enumerate() {
            let s = match opened.kind {
                Sniffed::Trace(p) => {
                    if a.elf.is_empty() && a.images.image.is_empty() {
                        return Err(Failure::Usage(format!(
                            "{}: decoding a trace needs the program: give --elf (or --image)",
                            names[k]
                        )));
                    }
                    let trace = a.dec.resolve_as(p, path, &opened.head, xlen)?;
                    let (tx, rx) = sync_channel(8);
                    scope.spawn(move || decode_trace(&trace, image, opened.head, opened.rest, tx));
                    Stream::Decoded {
                        rx,
                        buf: Vec::new().into_iter(),
                        losses: 0,
                        leading: 0,
                        started: false,
                        last_loss: None,
                        warnings: report::Warnings::new(&names[k], a.max_warnings),
                    }
                }
                Sniffed::Ingress => {
                    let r = IngressReader::new(opened.reader())
                        .map_err(|e| Failure::Tool(format!("{}: {e}", names[k])))?;
                    Stream::Ingress {
                        r,
                        index: 0,
                        image,
                        traps: records,
                        more: VecDeque::new(),
                    }
                }
                Sniffed::PcsBin => Stream::PcsBin {
                    r: PcBinReader::new(opened.reader()).map_err(|e| Failure::io(&names[k], e))?,
                },
                Sniffed::PcsText => Stream::Pcs {
                    r: PcListReader::new(opened.reader()),
                },
            };
            streams.push(s);
        }
        let mut sb = streams.pop().unwrap_or_else(|| unreachable!());
        let mut sa = streams.pop().unwrap_or_else(|| unreachable!());
        let fields = if records { &fields[..] } else { &[] };
        let r = run(a, image, xlen, &names, fields, &mut sa, &mut sb);
        // Stop the decoder threads (they see the closed channel) before the scope joins them.
        drop(sa);
        drop(sb);
        r
    })
}

/// `--align` commits to a join when it is the only one left that has matched this many
/// instructions.
const ALIGN_MATCHED: u64 = 4096;
/// `--align` commits to the earliest join left when it holds this many items of A and B.
const ALIGN_HELD: usize = 1 << 20;

/// Whether an item is a retired instruction (not a trap record that retires nothing).
fn retires(i: &Item) -> bool {
    i.rec.is_none_or(|r| r.retires())
}

/// The fields of `fields` in which the records of `x` and `y` differ (none when either has no
/// record).
fn differing(fields: &[Field], x: &Item, y: &Item) -> Vec<Field> {
    match (x.rec, y.rec) {
        (Some(p), Some(q)) => fields
            .iter()
            .copied()
            .filter(|f| f.get(&p) != f.get(&q))
            .collect(),
        _ => Vec::new(),
    }
}

/// `--align`: where B joins A. Every place in A where B's first PC appears is a candidate,
/// followed PC by PC against B until it differs; the join is the one candidate left once it has
/// matched [`ALIGN_MATCHED`] instructions, or the one that matched all of B, or the earliest
/// left when A ends or [`ALIGN_HELD`] items are held (a code path that repeats, a loop or a
/// recursion, gives candidates that die later). Leaves A's items from the join in `qa` and B's
/// from its start in `qb`; returns the number of A's instructions before the join, `None` when
/// no candidate is left.
fn align(
    names: &[String; 2],
    sa: &mut Stream,
    sb: &mut Stream,
    qa: &mut VecDeque<Item>,
    qb: &mut VecDeque<Item>,
) -> Result<Option<u64>, Failure> {
    let Some(b0) = sb.next(&names[1])? else {
        return Ok(Some(0));
    };
    qb.push_back(b0);
    // Candidates, earliest first: (A's item index of the start, A's instructions before it).
    let mut cands: Vec<(u64, u64)> = Vec::new();
    // qa holds A's items from index `base` (the earliest candidate's start).
    let mut base = 0u64;
    let (mut ai, mut instrs) = (0u64, 0u64);
    let mut b_done = false;
    let chosen = loop {
        let Some(x) = sa.next(&names[0])? else {
            break cands.first().copied();
        };
        let mut complete = None;
        let mut k = 0;
        while k < cands.len() {
            let j = (ai - cands[k].0) as usize;
            while qb.len() <= j && !b_done {
                match sb.next(&names[1])? {
                    Some(i) => qb.push_back(i),
                    None => b_done = true,
                }
            }
            if j >= qb.len() {
                // All of B matched from this start.
                complete.get_or_insert(cands[k]);
                k += 1;
            } else if qb[j].pc == x.pc {
                k += 1;
            } else {
                cands.remove(k);
            }
        }
        if complete.is_some() {
            // A goes on after B's end: the comparison says so.
            qa.push_back(x);
            break complete;
        }
        if x.pc == b0.pc {
            cands.push((ai, instrs));
        }
        match cands.first() {
            None => {
                qa.clear();
                base = ai + 1;
            }
            Some(&(start, _)) => {
                while base < start {
                    qa.pop_front();
                    base += 1;
                }
                qa.push_back(x);
            }
        }
        ai += 1;
        if retires(&x) {
            instrs += 1;
        }
        if let [(start, _)] = cands[..] {
            if ai - start >= ALIGN_MATCHED {
                break cands.first().copied();
            }
        }
        if qa.len() + qb.len() >= ALIGN_HELD {
            break cands.first().copied();
        }
    };
    Ok(chosen.map(|(start, before)| {
        while base < start {
            qa.pop_front();
            base += 1;
        }
        before
    }))
}

fn run(
    a: &CompareArgs,
    image: &Image,
    xlen: Xlen,
    names: &[String; 2],
    fields: &[Field],
    sa: &mut Stream,
    sb: &mut Stream,
) -> CmdResult {
    let mut out = Output::stdout();
    let w = |out: &mut Output, text: String| -> Result<(), Failure> {
        writeln!(out, "{}", text.trim_end()).map_err(|e| out.fail(e))
    };
    let (mut qa, mut qb) = (VecDeque::new(), VecDeque::new());
    if a.align {
        match align(names, sa, sb, &mut qa, &mut qb)? {
            Some(n) => w(
                &mut out,
                format!("aligned: B starts at A's instruction {n}"),
            )?,
            None => {
                w(
                    &mut out,
                    "not aligned: B's start is nowhere in A".to_string(),
                )?;
                out.finish()?;
                return Ok(ExitCode::from(report::EXIT_MISMATCH));
            }
        }
    }
    let mut ctx: VecDeque<(u64, u64)> = VecDeque::with_capacity(a.context + 1);
    let mut index = 0u64;
    let (x, y, diff) = loop {
        let x = match qa.pop_front() {
            Some(i) => Some(i),
            None => sa.next(&names[0])?,
        };
        let y = match qb.pop_front() {
            Some(i) => Some(i),
            None => sb.next(&names[1])?,
        };
        match (x, y) {
            (Some(x), Some(y)) if x.pc == y.pc => {
                let diff = differing(fields, &x, &y);
                if !diff.is_empty() {
                    break (Some(x), Some(y), diff);
                }
                if !retires(&x) {
                    continue;
                }
                if a.context > 0 {
                    if ctx.len() == a.context {
                        ctx.pop_front();
                    }
                    ctx.push_back((index, x.pc));
                }
                index += 1;
            }
            (x, y) => break (x, y, Vec::new()),
        }
    };
    let bits = xlen.bits();
    let mut losses = 0;
    for (k, s) in [&*sa, &*sb].into_iter().enumerate() {
        if let Stream::Decoded {
            losses: n,
            leading,
            warnings,
            ..
        } = s
        {
            warnings.finish();
            losses += n;
            // --align: B is expected to start without a sync.
            if a.align && k == 1 {
                losses -= leading;
            }
        }
    }
    if x.is_none() && y.is_none() {
        w(&mut out, format!("equal: {index} instructions"))?;
        out.finish()?;
        if losses > 0 {
            warn!("the streams are equal, but {losses} trace losses were reported while decoding");
        }
        return Ok(report::status(losses == 0));
    }
    w(
        &mut out,
        format!(
            "A: {} ({})\nB: {} ({})",
            names[0],
            sa.kind(),
            names[1],
            sb.kind()
        ),
    )?;
    w(
        &mut out,
        format!("first divergence at instruction {index} (0-based)"),
    )?;
    if let (Some(p), Some(q)) = (x.and_then(|i| i.rec), y.and_then(|i| i.rec)) {
        let mut diff = diff;
        if p.iaddr != q.iaddr && !diff.contains(&Field::Iaddr) {
            diff.insert(0, Field::Iaddr);
        }
        if !fields.is_empty() && diff.is_empty() {
            diff = differing(
                fields,
                &x.unwrap_or_else(|| unreachable!()),
                &y.unwrap_or_else(|| unreachable!()),
            );
        }
        let shown: Vec<String> = diff
            .iter()
            .map(|f| format!("{} (A {}, B {})", f.name(), f.show(&p), f.show(&q)))
            .collect();
        if !shown.is_empty() {
            w(&mut out, format!("differs: {}", shown.join(", ")))?;
        }
    }
    for &(i, pc) in &ctx {
        w(&mut out, format!("   {}", show(image, bits, i, pc)))?;
    }
    for (side, item, s) in [("A", x, &*sa), ("B", y, &*sb)] {
        match item {
            Some(it) => {
                w(
                    &mut out,
                    format!("{side}  {}  ({})", show(image, bits, index, it.pc), it.at),
                )?;
                if let (false, Some(r)) = (fields.is_empty(), it.rec) {
                    w(&mut out, format!("   {side}: {r}"))?;
                }
            }
            None => w(
                &mut out,
                format!("{side}  {index:>10}  (end: {side} ends after {index} instructions)"),
            )?,
        }
        if let Stream::Decoded {
            last_loss: Some((off, why)),
            ..
        } = s
        {
            w(
                &mut out,
                format!(
                    "   {side}: trace was lost before this point, at {}",
                    rvtrace_flow::loss_text(*off, None, why)
                ),
            )?;
        }
    }
    out.finish()?;
    Ok(ExitCode::from(report::EXIT_MISMATCH))
}
