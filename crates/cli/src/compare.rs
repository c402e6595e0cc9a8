//! `rvtrace compare A B`: two retired-instruction streams, compared instruction by instruction in
//! lockstep (memory stays flat whatever their size). Each input is a PC list, a binary ingress
//! file (recognised by its magic bytes) or a trace decoded with the program's ELF
//! (`--trace-a`/`--trace-b`); decoding runs on its own thread and hands over PCs in small batches,
//! each with the byte offset of the message or packet that produced it.

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_flow::{
    addr_with_symbol, insn_len_at, FlowElement, FlowSink, PcBinReader, PCS_BIN_MAGIC,
};
use rvtrace_image::Image;
use rvtrace_ingress::binary::MAGIC;
use rvtrace_ingress::pcs::PcListReader;
use rvtrace_ingress::{IngressError, IngressReader, Xlen};
use rvtrace_isa::IsaConfig;
use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

const HELP: &str = "\
Inputs: a PC list (one address per line, 0x + hex: `rvtrace run --pcs`, NexRv PCONLY, `decode
--pcs`), a binary PC list (`decode --pcs-format bin`; recognised by its magic bytes), a binary
ingress file (`rvtrace run --ingress`, `rvtrace ingress convert`; recognised by
its magic bytes; records that retire nothing, traps, are skipped), or, with --trace-a/--trace-b,
a trace file decoded with --elf and the decoder options below (as `rvtrace decode` takes them).
`-` reads stdin (for one input). Other logs (Spike, QEMU, PCSEQ, CSV) can be turned into
ingress with `rvtrace ingress convert`.

Output (stdout): `equal: N instructions`, or the first divergence: its 0-based instruction index,
the last instructions both agree on, then each side's instruction there with symbol and
disassembly (from --elf) and where it comes from (line of a PC list, record of an ingress file,
byte offset of the message or packet of a trace). A stream that ends before the other diverges
at the index where it ended. Decoder losses are warnings.

Exit status: 0 equal; 1 a divergence (or trace lost while decoding); 2 usage error; 125 an input
cannot be read or decoded (malformed lines are reported with their line number).";

/// `--trace-a`, `--trace-b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// N-Trace messages (MSEO/MDO bytes).
    Ntrace,
    /// E-Trace te_inst packets (encapsulated or te_inst_raw).
    Etrace,
}

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
    /// A is a trace of this protocol, to decode.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    trace_a: Option<Protocol>,
    /// B is a trace of this protocol, to decode.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    trace_b: Option<Protocol>,
    /// Instructions of context shown before the divergence.
    #[arg(long, default_value_t = 5, value_name = "N")]
    context: usize,
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
        /// PCs of a record of several instructions, not yet returned.
        more: VecDeque<Item>,
    },
    Decoded {
        rx: Receiver<Msg>,
        buf: std::vec::IntoIter<Item>,
        losses: u64,
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
            })),
            Stream::PcsBin { r } => {
                Ok(r.next_pc()
                    .map_err(|e| Failure::io(name, e))?
                    .map(|(i, pc)| Item {
                        pc,
                        at: At::Entry(i),
                    }))
            }
            Stream::Ingress {
                r,
                index,
                image,
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
                    continue;
                }
                if rec.is_single_instruction() {
                    return Ok(Some(Item { pc: rec.iaddr, at }));
                }
                // Several instructions: walk them with the program.
                let (mut pc, end) = (rec.iaddr, rec.next_iaddr());
                while pc != end {
                    more.push_back(Item { pc, at });
                    let len = insn_len_at(image, pc).ok_or_else(|| {
                        Failure::Tool(format!(
                            "{name}: {at}: a block of {} half-words at {:#x}: no instruction at {pc:#x} in the ELF (give --elf)",
                            rec.iretire, rec.iaddr
                        ))
                    })?;
                    pc = pc.wrapping_add(len);
                    if more.len() as u64 > rec.iretire as u64 {
                        return Err(Failure::Tool(format!(
                            "{name}: {at}: the block at {:#x} does not end on an instruction boundary",
                            rec.iaddr
                        )));
                    }
                }
            },
            Stream::Decoded {
                rx,
                buf,
                losses,
                last_loss,
                warnings,
            } => loop {
                if let Some(i) = buf.next() {
                    return Ok(Some(i));
                }
                match rx.recv() {
                    Ok(Msg::Items(v)) => *buf = v.into_iter(),
                    Ok(Msg::Loss { offset, reason }) => {
                        *losses += 1;
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

    /// The message at `offset` is about to be decoded.
    fn begin(&mut self, offset: u64) {
        self.cur = offset;
    }

    /// The message decoded so far made the decoder count `count` instructions in all.
    fn end(&mut self, count: u64) {
        if count > self.counted {
            self.counted = count;
            self.ends.push_back((count, self.cur));
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
        });
        if self.batch.len() >= 4096 {
            self.flush();
        }
    }
}

impl FlowSink for Handover<'_> {
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

/// Decodes an N-Trace file message by message (pushing each message's bytes on their own, so
/// the decoder's instruction count after it says what it produced).
fn decode_ntrace(
    path: &Path,
    image: &Image,
    cfg: rvtrace_ntrace::decoder::DecoderConfig,
    tx: SyncSender<Msg>,
) {
    use rvtrace_ntrace::codec::mseo::IDLE;
    use rvtrace_ntrace::decoder::Decoder;
    let mut h = Handover::new(image, tx, "message");
    let mut input = match report::open_input(path) {
        Ok(r) => r,
        Err(Failure::Tool(m) | Failure::Usage(m)) => return h.send(Msg::Failed(m)),
        Err(Failure::BrokenPipe) => return,
    };
    let mut dec = Decoder::new(image, cfg);
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = 0u64;
    let mut msg_start: Option<u64> = None;
    while !h.stop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                h.send(Msg::Failed(format!("cannot read: {e}")));
                return;
            }
        };
        let mut from = 0;
        for (i, &b) in buf[..n].iter().enumerate() {
            let at = pos + i as u64;
            if msg_start.is_none() && b != IDLE {
                msg_start = Some(at);
            }
            // MSEO = 11: the end of a message (or an idle byte), N-Trace 5.
            if b & 3 == 3 {
                h.begin(msg_start.take().unwrap_or(at));
                dec.push(&buf[from..=i], &mut h);
                h.end(dec.stats().instructions);
                from = i + 1;
                if h.stop {
                    return;
                }
            }
        }
        if from < n {
            h.begin(msg_start.unwrap_or(pos + from as u64));
            dec.push(&buf[from..n], &mut h);
            h.end(dec.stats().instructions);
        }
        pos += n as u64;
    }
    h.begin(pos);
    dec.finish(&mut h);
    h.end(dec.stats().instructions);
    h.flush();
}

/// Decodes an E-Trace file packet by packet, read a window at a time (memory stays flat in its
/// size): from its start, or for stdin (`-`) `head` then the rest of stdin.
fn decode_etrace(
    path: &Path,
    head: Vec<u8>,
    image: &Image,
    xlen: Xlen,
    cfg: rvtrace_etrace::config::TraceConfig,
    tx: SyncSender<Msg>,
) {
    use rvtrace_etrace::codec::{read_trace_items, Item as PItem};
    use rvtrace_etrace::decoder::{Decoder, DecoderOptions};
    let mut h = Handover::new(image, tx, "packet");
    let input: Box<dyn Read> = if report::is_std(path) {
        Box::new(std::io::Cursor::new(head).chain(std::io::stdin().lock()))
    } else {
        match std::fs::File::open(path) {
            Ok(f) => Box::new(std::io::BufReader::with_capacity(1 << 16, f)),
            Err(e) => return h.send(Msg::Failed(format!("cannot open: {e}"))),
        }
    };
    let isa = IsaConfig::new(xlen);
    let mut dec = Decoder::with_options(image, DecoderOptions::from_config(&cfg, isa));
    let read = read_trace_items(input, &cfg, |off, item, _, _| {
        h.begin(off);
        match item {
            PItem::Packet(p) => dec.packet(off, &p, &mut h),
            PItem::Error(e) => dec.error(off, &e, &mut h),
            PItem::Other(_) => {}
        }
        h.end(dec.stats.instructions);
        !h.stop
    });
    let len = match read {
        Ok(n) => n,
        Err(e) => return h.send(Msg::Failed(format!("cannot read: {e}"))),
    };
    if h.stop {
        return;
    }
    h.begin(len);
    dec.finish(len, &mut h);
    h.end(dec.stats.instructions);
    h.flush();
}

/// What an undecoded input is, by its magic bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    Ingress,
    PcsBin,
    PcsText,
}

/// Opens `path` and tells what it is (by its magic bytes).
fn open_sniff(path: &Path) -> Result<(Box<dyn BufRead>, Sniffed), Failure> {
    let mut r = report::open_input(path)?;
    let head = r
        .fill_buf()
        .map_err(|e| Failure::io(report::name(path), e))?;
    let kind = if head.starts_with(&MAGIC) {
        Sniffed::Ingress
    } else if head.starts_with(&PCS_BIN_MAGIC) {
        Sniffed::PcsBin
    } else {
        Sniffed::PcsText
    };
    Ok((r, kind))
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
    if (a.trace_a.is_some() || a.trace_b.is_some()) && a.elf.is_empty() {
        return Err(Failure::Usage(
            "decoding a trace (--trace-a/--trace-b) needs the program: give --elf".into(),
        ));
    }
    let (image, xlen) = crate::trace_source::load_program(&a.elf)?;
    let xlen = xlen.unwrap_or(Xlen::Rv64);
    let names = [report::name(&a.a), report::name(&a.b)];
    let image = &image;
    std::thread::scope(|scope| -> CmdResult {
        let mut streams = Vec::new();
        for (k, (path, proto)) in [(&a.a, a.trace_a), (&a.b, a.trace_b)]
            .into_iter()
            .enumerate()
        {
            let s = match proto {
                Some(p) => {
                    let (tx, rx) = sync_channel(8);
                    let o = &a.dec;
                    match p {
                        Protocol::Ntrace => {
                            let cfg = o.ntrace_config(path, xlen)?;
                            scope.spawn(move || decode_ntrace(path, image, cfg, tx));
                        }
                        Protocol::Etrace => {
                            // The first 64 KiB tell the framing; the decoder thread reads
                            // the trace as it decodes it.
                            // (stdin unbuffered here: its own buffer is the one the thread
                            // goes on reading)
                            let head = if report::is_std(path) {
                                report::read_head(&mut std::io::stdin(), 1 << 16, &names[k])?
                            } else {
                                report::read_head(
                                    &mut report::open_input(path)?,
                                    1 << 16,
                                    &names[k],
                                )?
                            };
                            let cfg = o.etrace_config(path, &head, xlen)?;
                            scope.spawn(move || decode_etrace(path, head, image, xlen, cfg, tx));
                        }
                    }
                    Stream::Decoded {
                        rx,
                        buf: Vec::new().into_iter(),
                        losses: 0,
                        last_loss: None,
                        warnings: report::Warnings::new(&names[k], a.max_warnings),
                    }
                }
                None => {
                    let (r, kind) = open_sniff(path)?;
                    match kind {
                        Sniffed::Ingress => {
                            let r = IngressReader::new(r)
                                .map_err(|e| Failure::Tool(format!("{}: {e}", names[k])))?;
                            Stream::Ingress {
                                r,
                                index: 0,
                                image,
                                more: VecDeque::new(),
                            }
                        }
                        Sniffed::PcsBin => Stream::PcsBin {
                            r: PcBinReader::new(r).map_err(|e| Failure::io(&names[k], e))?,
                        },
                        Sniffed::PcsText => Stream::Pcs {
                            r: PcListReader::new(r),
                        },
                    }
                }
            };
            streams.push(s);
        }
        let mut sb = streams.pop().unwrap_or_else(|| unreachable!());
        let mut sa = streams.pop().unwrap_or_else(|| unreachable!());
        let r = run(a, image, xlen, &names, &mut sa, &mut sb);
        // Stop the decoder threads (they see the closed channel) before the scope joins them.
        drop(sa);
        drop(sb);
        r
    })
}

fn run(
    a: &CompareArgs,
    image: &Image,
    xlen: Xlen,
    names: &[String; 2],
    sa: &mut Stream,
    sb: &mut Stream,
) -> CmdResult {
    let mut out = Output::stdout();
    let mut ctx: VecDeque<(u64, u64)> = VecDeque::with_capacity(a.context + 1);
    let mut index = 0u64;
    let (x, y) = loop {
        let x = sa.next(&names[0])?;
        let y = sb.next(&names[1])?;
        match (x, y) {
            (Some(x), Some(y)) if x.pc == y.pc => {
                if a.context > 0 {
                    if ctx.len() == a.context {
                        ctx.pop_front();
                    }
                    ctx.push_back((index, x.pc));
                }
                index += 1;
            }
            (x, y) => break (x, y),
        }
    };
    let bits = xlen.bits();
    let mut losses = 0;
    for s in [&*sa, &*sb] {
        if let Stream::Decoded {
            losses: n,
            warnings,
            ..
        } = s
        {
            warnings.finish();
            losses += n;
        }
    }
    let w = |out: &mut Output, text: String| -> Result<(), Failure> {
        writeln!(out, "{}", text.trim_end()).map_err(|e| out.fail(e))
    };
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
    for &(i, pc) in &ctx {
        w(&mut out, format!("   {}", show(image, bits, i, pc)))?;
    }
    for (side, item, s) in [("A", x, &*sa), ("B", y, &*sb)] {
        match item {
            Some(it) => w(
                &mut out,
                format!("{side}  {}  ({})", show(image, bits, index, it.pc), it.at),
            )?,
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
