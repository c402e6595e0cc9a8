//! `rvtrace dump|encode|decode ntrace`: N-Trace (`rvtrace-ntrace`).

use crate::report::CmdResult;
use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
use rvtrace_image::Image;
use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ingress::{IngressReader, Record};
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::codec::CodecConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Fifo, Mode, SyncUnit, TraceFilter};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `rvtrace dump ntrace`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The trace file: N-Trace messages as MSEO/MDO bytes (the NexRv `.bin` format).
    file: PathBuf,
    /// Width of the SRC field (trTeSrcBits), 0 when the stream has none.
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=12))]
    src_bits: u8,
    /// Print byte, idle, message and error counts on stderr at the end.
    #[arg(long)]
    stats: bool,
}

/// Which registers are link registers (for calls and returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LinkArg {
    /// `spec`; if the trace does not decode without loss that way, `x1` or `nexrv` when one of
    /// them does (a note on stderr says which was used).
    Auto,
    /// x1 and x5 (N-Trace Table 2).
    Spec,
    /// x1 only: `jal t0` is a plain jump, `jr t0` a plain indirect jump (how the conformance
    /// `variant-jalt0-as-jump` call-stack streams were made).
    X1,
    /// NexRv's objdump classification: every `jal`/`jalr` writing a register is a call, only
    /// `ret` is a return.
    Nexrv,
}

/// Options shared by `encode ntrace` and `decode ntrace`: the decoder needs only `--src-bits`,
/// `--src-id`, `--extend-addr-msb`, `--all-jumps` and `--link-registers`, and accepts the others so
/// that one option list works for both.
#[derive(clap::Args, Clone, Debug)]
struct TraceOpts {
    /// Width of the SRC field (trTeSrcBits), 0 for none (N-Trace 6.2).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=12))]
    src_bits: u8,
    /// SRC of this hart (trTeSrcID): the encoder writes it, the decoder decodes only its messages.
    #[arg(long, value_name = "K")]
    src_id: Option<u16>,
    /// trTeInstExtendAddrMSB: F-ADDR/U-ADDR with the MSB extension (N-Trace 8.2).
    #[arg(long)]
    extend_addr_msb: bool,
    /// trTeInstEnAllJumps: direct jumps are traced as taken branches.
    #[arg(long)]
    all_jumps: bool,
    /// Link registers for calls and returns (decoder).
    #[arg(long, value_enum, default_value_t = LinkArg::Auto, value_name = "RULE")]
    link_registers: LinkArg,
    /// XLEN for PCSEQ input (an ingress file says it in its header).
    #[arg(long, value_name = "32|64", value_parser = ["32", "64"])]
    xlen: Option<String>,
    /// BTM (DirectBranch / IndirectBranch) or HTM (IndirectBranchHist).
    #[arg(long, value_enum, default_value_t = ModeArg::Htm)]
    mode: ModeArg,
    /// Make the same choices as the named reference encoder.
    #[arg(long, value_enum)]
    preset: Option<PresetArg>,
    /// I-CNT counter width in bits, its most significant bit being the overflow flag (N-Trace
    /// 8.4.4); default 22 (NTRACE_MAX_ICNT).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(2..=24))]
    icnt_bits: Option<u8>,
    /// HIST register width in bits including the stop-bit (N-Trace 8.3.1); default 32
    /// (NTRACE_MAX_HIST).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(2..=32))]
    hist_bits: Option<u8>,
    /// trTeInstEnRepeatedHistory: repeated full HIST as ResourceFull RCODE 2 with HREPEAT (9.3).
    #[arg(long)]
    repeat_history: bool,
    /// RepeatBranch for identical consecutive branch messages (7.11).
    #[arg(long)]
    repeat_branch: bool,
    /// Implicit return with a stack of N full return addresses (9.2, mode 3; N at most 32).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    call_stack: Option<u32>,
    /// With --call-stack N: a counter of nested calls up to N instead of a stack (9.2, mode 1).
    #[arg(long, requires = "call_stack")]
    call_counter: bool,
    /// With --call-stack N: keep only the low BITS bits of each return address (9.2, mode 2).
    #[arg(long, value_name = "BITS", requires = "call_stack", conflicts_with = "call_counter",
          value_parser = clap::value_parser!(u32).range(2..=64))]
    call_stack_partial: Option<u32>,
    /// trTeInstEnSequentialJump: `lui`/`auipc` + indirect jump pairs are inferable (9.1; needs
    /// the ingress `sijump` signal).
    #[arg(long)]
    sequential_jumps: bool,
    /// Periodic synchronization (SYNC=2) every N units of --sync-mode (trTeInstSyncMax).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    sync_period: Option<u64>,
    /// Unit of --sync-period (trTeInstSyncMode).
    #[arg(long, value_enum, default_value_t = SyncModeArg::Messages)]
    sync_mode: SyncModeArg,
    /// TSTAMP fields: absolute in synchronization messages, relative elsewhere (8.7).
    #[arg(long)]
    timestamps: bool,
    /// Ownership messages after every synchronization and on privilege/context changes (7.1).
    #[arg(long)]
    ownership: bool,
    /// Report traps with B-TYPE 1 instead of 2 (exception) and 3 (interrupt).
    #[arg(long)]
    btype_compat: bool,
    /// A bounded output queue of N bytes: messages that do not fit are lost, then an Error
    /// message and a SYNC=7 synchronization follow (7.4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    fifo_bytes: Option<u32>,
    /// Bytes the trace port takes from the --fifo-bytes queue per retired instruction.
    #[arg(long, value_name = "BYTES", default_value_t = 0.25)]
    fifo_drain: f64,
    /// Trace only these privileges (comma-separated: u, s, m); trace stops with
    /// ProgTraceCorrelation EVCODE=4 and restarts with SYNC=5 (Table 26).
    #[arg(long, value_name = "LIST")]
    trace_priv: Option<String>,
    /// Trace only instructions with LO <= address < HI (hex).
    #[arg(long, value_name = "LO:HI")]
    trace_range: Option<String>,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ModeArg {
    /// Branch Trace Messaging: DirectBranch per taken branch, IndirectBranch.
    Btm,
    /// History Trace Messaging: branch outcomes in HIST, IndirectBranchHist.
    Htm,
}

/// `--preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PresetArg {
    /// The reference C encoder's choices (NexRv in riscv-non-isa/tg-nexus-trace refcode).
    Nexrv,
}

/// `--input-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum InputFormat {
    /// Binary ingress file (`rvtrace run --ingress`).
    Ingress,
    /// NexRv PCSEQ text (`0xPC,<type><size>` per line; gzip-compressed when the name ends in `.gz`).
    Pcseq,
}

/// `--sync-mode` (trTeInstSyncMode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SyncModeArg {
    /// Count messages (1).
    Messages,
    /// Count hart clock cycles, the ingress `time` (2).
    Cycles,
    /// Count instruction half-words (3).
    Halfwords,
}

/// Arguments of `rvtrace encode ntrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The input: an ingress file (from `rvtrace run --ingress`), or NexRv PCSEQ text with
    /// `--input-format pcseq`.
    ingress: PathBuf,
    /// Output trace file (MSEO/MDO bytes, the NexRv `.bin` format).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Input format.
    #[arg(long, value_enum, default_value_t = InputFormat::Ingress)]
    input_format: InputFormat,
    /// Print counts and bits per instruction on stderr at the end.
    #[arg(long)]
    stats: bool,
    #[command(flatten)]
    opts: TraceOpts,
}

/// Arguments of `rvtrace decode ntrace`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The trace file: N-Trace messages as MSEO/MDO bytes.
    trace: PathBuf,
    /// The program: ELF file(s) with the traced code (repeatable).
    #[arg(long = "elf", value_name = "ELF", required = true)]
    elf: Vec<PathBuf>,
    /// Write every retired instruction address to FILE, one per line as 0x + hex (as
    /// `rvtrace run --pcs` does).
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// Write the flow elements (ranges, traps, sync, loss, context, time) to FILE, one per line.
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    /// Print counts on stderr at the end.
    #[arg(long)]
    stats: bool,
    #[command(flatten)]
    opts: TraceOpts,
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

fn create(path: &Path) -> Result<BufWriter<File>, String> {
    File::create(path)
        .map(|f| BufWriter::with_capacity(1 << 16, f))
        .map_err(|e| format!("{}: cannot create: {e}", path.display()))
}

/// `rvtrace dump ntrace`.
pub fn dump(a: &DumpArgs) -> CmdResult {
    let data = read(&a.file)?;
    let cfg = CodecConfig {
        src_bits: a.src_bits,
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let r = rvtrace_ntrace::dump::dump(&data, &cfg, &mut out).and_then(|st| {
        out.flush()?;
        Ok(st)
    });
    match r {
        Ok(st) => {
            if a.stats {
                say!(
                    "{} bytes, {} idles, {} messages, {} errors",
                    st.bytes,
                    st.idles,
                    st.messages,
                    st.errors
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("{}: {e}", a.file.display()).into()),
    }
}

/// `rvtrace encode ntrace`.
pub fn encode(a: &EncodeArgs) -> CmdResult {
    let inp = a.ingress.display();
    let f = File::open(&a.ingress).map_err(|e| format!("{inp}: cannot open: {e}"))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, f);
    let mut source: Box<dyn FnMut() -> Result<Option<Record>, String>>;
    let (xlen, itype_width, has_sijump, has_time) = match a.input_format {
        InputFormat::Ingress => {
            let mut r = IngressReader::new(reader).map_err(|e| format!("{inp}: {e}"))?;
            let h = r.header().clone();
            let name = inp.to_string();
            source = Box::new(move || r.next_record().map_err(|e| format!("{name}: {e}")));
            (h.xlen, h.itype_width, h.has_sijump, h.has_time)
        }
        InputFormat::Pcseq => {
            let text = rvtrace_ntrace::open_text(&a.ingress)
                .map_err(|e| format!("{inp}: cannot open: {e}"))?;
            let mut r = PcseqReader::new(text);
            let name = inp.to_string();
            source = Box::new(move || r.next_record().map_err(|e| format!("{name}: {e}")));
            let xlen = match a.opts.xlen.as_deref() {
                Some("32") => Xlen::Rv32,
                _ => Xlen::Rv64,
            };
            (xlen, 4, false, false)
        }
    };
    let xlen = match a.opts.xlen.as_deref() {
        Some("32") => Xlen::Rv32,
        Some(_) => Xlen::Rv64,
        None => xlen,
    };
    let mut cfg = EncoderConfig::new(xlen);
    if a.opts.preset == Some(PresetArg::Nexrv) {
        cfg = cfg.nexrv();
    }
    cfg.mode = match a.opts.mode {
        ModeArg::Btm => Mode::Btm,
        ModeArg::Htm => Mode::Htm,
    };
    if let Some(b) = a.opts.icnt_bits {
        cfg.icnt_bits = b;
    }
    if let Some(b) = a.opts.hist_bits {
        cfg.hist_bits = b;
    }
    cfg.repeat_history = a.opts.repeat_history;
    cfg.repeat_branch = a.opts.repeat_branch;
    if let Some(n) = a.opts.call_stack {
        if itype_width != 4 {
            return Err(format!(
                "{inp}: --call-stack needs 4-bit itype (calls and returns); record with `rvtrace run --itype-width 4`"
            ).into());
        }
        cfg.call_stack = if a.opts.call_counter {
            CallStack::Counter { max: n }
        } else if let Some(bits) = a.opts.call_stack_partial {
            CallStack::Partial { depth: n, bits }
        } else {
            CallStack::Full { depth: n }
        };
    }
    if a.opts.sequential_jumps && !has_sijump {
        return Err(format!(
            "{inp}: --sequential-jumps needs the hart's sijump signal, which this input does not carry"
        ).into());
    }
    cfg.sequential_jumps = a.opts.sequential_jumps;
    cfg.all_jumps = a.opts.all_jumps;
    cfg.extend_addr_msb = a.opts.extend_addr_msb;
    cfg.sync_period = a.opts.sync_period.map(|n| {
        let unit = match a.opts.sync_mode {
            SyncModeArg::Messages => SyncUnit::Messages,
            SyncModeArg::Cycles => SyncUnit::Cycles,
            SyncModeArg::Halfwords => SyncUnit::Halfwords,
        };
        (unit, n)
    });
    cfg.timestamps = a.opts.timestamps;
    if a.opts.timestamps && !has_time {
        warn!("{inp}: the input carries no time; every TSTAMP will be 0");
    }
    cfg.codec.src_bits = a.opts.src_bits;
    cfg.src_id = a.opts.src_id.unwrap_or(0);
    if a.opts.src_bits < 16
        && u32::from(cfg.src_id) >= 1u32 << a.opts.src_bits
        && a.opts.src_id.is_some()
    {
        return Err(format!(
            "--src-id {} does not fit in --src-bits {}",
            cfg.src_id, a.opts.src_bits
        )
        .into());
    }
    cfg.ownership = a.opts.ownership;
    cfg.btype_compat = a.opts.btype_compat;
    if let Some(bytes) = a.opts.fifo_bytes {
        if !(a.opts.fifo_drain >= 0.0 && a.opts.fifo_drain < 1e6) {
            return Err(format!("--fifo-drain {}: not a byte count", a.opts.fifo_drain).into());
        }
        cfg.fifo = Some(Fifo {
            bytes,
            drain_per_record_256: (a.opts.fifo_drain * 256.0).round() as u32,
        });
    }
    if a.opts.trace_priv.is_some() || a.opts.trace_range.is_some() {
        cfg.filter = Some(parse_filter(
            a.opts.trace_priv.as_deref(),
            a.opts.trace_range.as_deref(),
        )?);
    }
    let out_name = a.output.display();
    let mut out = create(&a.output)?;
    let mut enc = Encoder::new(cfg);
    let mut buf = Vec::with_capacity(1 << 16);
    // A damaged input: encode the records before the damage, then report it (issue 9 item 6).
    let mut damage = None;
    let mut records = 0u64;
    loop {
        let r = match source() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        records += 1;
        enc.push(&r, &mut buf);
        if buf.len() >= 1 << 15 {
            out.write_all(&buf)
                .map_err(|e| format!("{out_name}: {e}"))?;
            buf.clear();
        }
    }
    let st = enc.finish(&mut buf);
    out.write_all(&buf)
        .and_then(|_| out.flush())
        .map_err(|e| format!("{out_name}: {e}"))?;
    if a.stats {
        let bpi = if st.instructions > 0 {
            st.bytes as f64 * 8.0 / st.instructions as f64
        } else {
            0.0
        };
        say!(
            "{} instructions, {} messages, {} bytes, {bpi:.3} bits/instruction",
            st.instructions,
            st.messages,
            st.bytes
        );
    }
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_filter(privs: Option<&str>, range: Option<&str>) -> Result<TraceFilter, String> {
    let mut f = TraceFilter::ALL;
    if let Some(list) = privs {
        f.privileges = 0;
        for p in list.split(',') {
            let code = rvtrace_ingress::privilege::from_name(p.trim())
                .ok_or_else(|| format!("--trace-priv {list:?}: unknown privilege {p:?}"))?;
            f.privileges |= 1 << code;
        }
    }
    if let Some(r) = range {
        let hex = |v: &str| {
            let t = v.trim();
            let t = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u64::from_str_radix(t, 16).ok()
        };
        let (lo, hi) = r
            .split_once(':')
            .and_then(|(l, h)| Some((hex(l)?, hex(h)?)))
            .ok_or_else(|| format!("--trace-range {r:?}: expected LO:HI in hex"))?;
        f.range = Some((lo, hi));
    }
    Ok(f)
}

/// Writes flow elements as text, one per line.
struct FlowText<W: Write> {
    out: W,
    err: Option<std::io::Error>,
}

fn priv_name(p: u8) -> String {
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

fn opt_hex(v: Option<u64>) -> String {
    v.map_or("?".into(), |v| format!("{v:#x}"))
}

impl<W: Write> FlowSink for FlowText<W> {
    fn element(&mut self, e: &FlowElement) {
        if self.err.is_some() {
            return;
        }
        let r = match e {
            FlowElement::Sync { addr, reason } => writeln!(self.out, "sync {addr:#x} {reason:?}"),
            FlowElement::Range { start, last, count } => {
                writeln!(self.out, "range {start:#x} {last:#x} {count}")
            }
            FlowElement::Trap {
                interrupt,
                epc,
                handler,
                cause,
                ..
            } => writeln!(
                self.out,
                "trap {} epc={} handler={}{}",
                if *interrupt { "interrupt" } else { "exception" },
                opt_hex(*epc),
                opt_hex(*handler),
                cause.map_or(String::new(), |c| format!(" cause={c}"))
            ),
            FlowElement::Context { privilege, context } => writeln!(
                self.out,
                "context priv={} context={}",
                privilege.map_or("?".into(), priv_name),
                opt_hex(*context)
            ),
            FlowElement::Time { time } => writeln!(self.out, "time {time}"),
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            } => writeln!(
                self.out,
                "loss at byte {offset}, {} bytes skipped: {reason}",
                skipped.map_or("?".into(), |s| s.to_string())
            ),
            FlowElement::End { offset } => writeln!(self.out, "end at byte {offset}"),
        };
        if let Err(e) = r {
            self.err = Some(e);
        }
    }
}

fn load_image(paths: &[PathBuf]) -> Result<(Image, Xlen), String> {
    let mut image = Image::new();
    let mut xlen = None;
    for p in paths {
        let info = image
            .load_file(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        xlen.get_or_insert(info.xlen);
    }
    Ok((image, xlen.unwrap_or(Xlen::Rv64)))
}

/// `rvtrace decode ntrace`.
pub fn decode(a: &DecodeArgs) -> CmdResult {
    let data = read(&a.trace)?;
    let (image, xlen) = load_image(&a.elf)?;
    let o = &a.opts;
    let mut cfg = DecoderConfig::new(IsaConfig {
        xlen,
        zcmp: false,
        zcmt: false,
    });
    cfg.codec.src_bits = o.src_bits;
    cfg.src = o.src_id.filter(|_| o.src_bits > 0);
    cfg.extend_addr_msb = o.extend_addr_msb;
    cfg.all_jumps = o.all_jumps;
    cfg.link = match o.link_registers {
        LinkArg::Spec => LinkRule::Spec,
        LinkArg::X1 => LinkRule::X1Only,
        LinkArg::Nexrv => LinkRule::NexRv,
        LinkArg::Auto => {
            // Count the losses of a decode with each rule; take the first without loss (or the
            // fewest). Streams made with the specification's x1/x5 rule decode at the first try.
            let losses = |link| {
                let mut n = 0u64;
                let mut sink = |e: &FlowElement| {
                    if let FlowElement::Loss { .. } = e {
                        n += 1;
                    }
                };
                rvtrace_ntrace::decoder::decode(
                    &image,
                    DecoderConfig { link, ..cfg },
                    &data,
                    &mut sink,
                );
                n
            };
            let mut best = (u64::MAX, LinkRule::Spec);
            for link in [LinkRule::Spec, LinkRule::X1Only, LinkRule::NexRv] {
                let n = losses(link);
                if n < best.0 {
                    best = (n, link);
                }
                if n == 0 {
                    break;
                }
            }
            if best.1 != LinkRule::Spec {
                note!(
                    "{}: decoded with --link-registers {}",
                    a.trace.display(),
                    if best.1 == LinkRule::X1Only {
                        "x1"
                    } else {
                        "nexrv"
                    }
                );
            }
            best.1
        }
    };
    let mut pcs = match &a.pcs {
        Some(p) => Some(PcWriter::new(&image, create(p)?)),
        None => None,
    };
    let mut flow = match &a.flow {
        Some(p) => Some(FlowText {
            out: create(p)?,
            err: None,
        }),
        None => None,
    };
    let mut losses = 0u64;
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss {
            offset,
            skipped,
            reason,
        } = e
        {
            losses += 1;
            warn!(
                "{}: byte {offset}: {reason} ({} bytes skipped)",
                a.trace.display(),
                skipped.map_or("?".into(), |s| s.to_string())
            );
        }
        if let Some(w) = pcs.as_mut() {
            w.element(e);
        }
        if let Some(w) = flow.as_mut() {
            w.element(e);
        }
    };
    let mut dec = Decoder::new(&image, cfg);
    dec.push(&data, &mut sink);
    let st = dec.finish(&mut sink);
    if let (Some(w), Some(p)) = (pcs, &a.pcs) {
        w.finish().map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let (Some(mut w), Some(p)) = (flow, &a.flow) {
        if let Some(e) = w.err.take() {
            return Err(format!("{}: {e}", p.display()).into());
        }
        w.out.flush().map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if a.stats {
        say!(
            "{} bytes, {} messages, {} instructions, {} errors, {} bytes skipped",
            st.bytes,
            st.messages,
            st.instructions,
            st.errors,
            st.skipped_bytes
        );
    }
    Ok(if losses > 0 {
        ExitCode::from(crate::report::EXIT_MISMATCH)
    } else {
        ExitCode::SUCCESS
    })
}
