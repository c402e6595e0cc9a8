//! `rvtrace dump|encode|decode ntrace`: N-Trace (`rvtrace-ntrace`).

use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::codec::CodecConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::insn::LinkRule;
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
    /// x1 and x5 (N-Trace Table 2).
    Spec,
    /// x1 only: `jal t0` is a plain jump, `jr t0` a plain indirect jump (how the conformance
    /// `variant-jalt0-as-jump` call-stack streams were made).
    X1,
    /// NexRv's objdump classification: every `jal`/`jalr` writing a register is a call, only
    /// `ret` is a return.
    Nexrv,
}

/// Options shared by `encode ntrace` and `decode ntrace` (the decoder needs only some of them;
/// it accepts the others so that the same option list works for both).
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
    #[arg(long, value_enum, default_value_t = LinkArg::Spec, value_name = "RULE")]
    link_registers: LinkArg,
}

/// Arguments of `rvtrace encode ntrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file (from `rvtrace run --ingress`).
    ingress: PathBuf,
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
pub fn dump(a: &DumpArgs) -> Result<ExitCode, String> {
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
                eprintln!(
                    "{} bytes, {} idles, {} messages, {} errors",
                    st.bytes, st.idles, st.messages, st.errors
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("{}: {e}", a.file.display())),
    }
}

fn not_yet(what: &str) -> Result<ExitCode, String> {
    Err(format!("{what}: N-Trace encoding is not built yet"))
}

/// `rvtrace encode ntrace`.
pub fn encode(a: &EncodeArgs) -> Result<ExitCode, String> {
    not_yet(&a.ingress.display().to_string())
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
pub fn decode(a: &DecodeArgs) -> Result<ExitCode, String> {
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
            eprintln!(
                "rvtrace: warning: {}: byte {offset}: {reason} ({} bytes skipped)",
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
            return Err(format!("{}: {e}", p.display()));
        }
        w.out.flush().map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if a.stats {
        eprintln!(
            "{} bytes, {} messages, {} instructions, {} errors, {} bytes skipped",
            st.bytes, st.messages, st.instructions, st.errors, st.skipped_bytes
        );
    }
    Ok(if losses > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
