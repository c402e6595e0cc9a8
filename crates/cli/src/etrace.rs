//! `rvtrace dump|encode|decode etrace`: E-Trace (`rvtrace-etrace`).
//!
//! The three commands share the option flags of [`TraceArgs`], so one command line serves the
//! encoder and the decoder.

use crate::report::CmdResult;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rvtrace_etrace::codec::{looks_like_te_inst_raw, EncapConfig, Item, PacketReader};
use rvtrace_etrace::config::{ConfigInputs, Framing, Preset, TraceConfig};

/// `--preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PresetArg {
    /// rvtrace's encoder (E-Trace v2.0 rules).
    Rvtrace,
    /// The reference flow's encoder_model.py, quirks included.
    Reference,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    /// The reference flow's te_inst_raw (1-byte header, message type 2 in the flow bits).
    Raw,
    /// RISC-V trace encapsulation (etrace-encap), see --srcid-bits, --timestamp-bytes, --type-bits.
    Encap,
}

/// Options shared by `dump`, `encode` and `decode etrace`.
#[derive(clap::Args, Clone, Debug)]
struct TraceArgs {
    /// Encoder behaviour and default parameters: rvtrace's, or the reference flow's
    /// (byte-identical te_inst_raw). Default: reference when reading a file recognised as
    /// te_inst_raw (no --format given), else rvtrace.
    #[arg(long, value_enum)]
    preset: Option<PresetArg>,
    /// Reference-flow static configuration file (.scf): the discovery parameters.
    #[arg(long, value_name = "FILE")]
    scf: Option<PathBuf>,
    /// Reference-flow user configuration file (.ucf): the run-time options.
    #[arg(long, value_name = "FILE")]
    ucf: Option<PathBuf>,
    /// Full address mode: absolute instead of differential addresses.
    #[arg(long)]
    full_address: bool,
    /// Implicit exception mode: omit the trap handler address.
    #[arg(long)]
    implicit_exception: bool,
    /// Treat sequentially inferable jumps as inferable.
    #[arg(long)]
    sijump: bool,
    /// Implicit return mode (a call counter unless --return-stack is given).
    #[arg(long)]
    implicit_return: bool,
    /// Implicit return with an N-entry return address stack (N a power of two).
    #[arg(long, value_name = "N")]
    return_stack: Option<u32>,
    /// Branch prediction with an N-entry predictor (format 0 subformat 0).
    #[arg(long, value_name = "N")]
    branch_prediction: Option<u32>,
    /// Jump target cache with N entries (format 0 subformat 1).
    #[arg(long, value_name = "N")]
    jump_target_cache: Option<u32>,
    /// Send a synchronisation packet at least every N packets.
    #[arg(long, value_name = "N")]
    resync: Option<u64>,
    /// Report time in synchronisation packets.
    #[arg(long)]
    timestamps: bool,
    /// Width of the ingress itype (3 or 4).
    #[arg(long, value_name = "3|4", value_parser = clap::value_parser!(u8).range(3..=4))]
    itype_width: Option<u8>,
    /// File framing (default: te_inst_raw with --preset reference, else encap; when reading,
    /// te_inst_raw is also recognised by its header bytes).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Encapsulation: srcID width in bits.
    #[arg(long, value_name = "BITS", default_value_t = 0)]
    srcid_bits: u8,
    /// Encapsulation: timestamp bytes (present when a header's extend bit is set).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    timestamp_bytes: u8,
    /// Encapsulation: width of the payload type field.
    #[arg(long, value_name = "BITS", default_value_t = 0)]
    type_bits: u8,
}

impl TraceArgs {
    fn encap(&self) -> EncapConfig {
        EncapConfig {
            srcid_bits: self.srcid_bits,
            timestamp_bytes: self.timestamp_bytes,
            type_bits: self.type_bits,
            te_inst_type: 0,
        }
    }

    /// The configuration for address width `xlen_bits`; `data` (when reading) lets the framing
    /// be recognised.
    fn config(&self, xlen_bits: u8, data: Option<&[u8]>) -> Result<TraceConfig, String> {
        let read = |p: &Option<PathBuf>| -> Result<Option<String>, String> {
            p.as_ref()
                .map(|p| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display())))
                .transpose()
        };
        let mut detected_raw = false;
        let framing = match self.format {
            Some(FormatArg::Raw) => Some(Framing::Raw),
            Some(FormatArg::Encap) => Some(Framing::Encap(self.encap())),
            None => match data {
                Some(d) if looks_like_te_inst_raw(d) => {
                    detected_raw = true;
                    Some(Framing::Raw)
                }
                Some(_) => Some(Framing::Encap(self.encap())),
                None => None,
            },
        };
        let inputs = ConfigInputs {
            preset: match self.preset {
                Some(PresetArg::Rvtrace) => Preset::Rvtrace,
                Some(PresetArg::Reference) => Preset::Reference,
                None if detected_raw => Preset::Reference,
                None => Preset::Rvtrace,
            },
            xlen_bits,
            scf: read(&self.scf)?,
            ucf: read(&self.ucf)?,
            full_address: self.full_address,
            implicit_exception: self.implicit_exception,
            sijump: self.sijump,
            implicit_return: self.implicit_return,
            return_stack: self.return_stack,
            branch_prediction: self.branch_prediction,
            jump_target_cache: self.jump_target_cache,
            resync: self.resync,
            timestamps: self.timestamps,
            itype_width: self.itype_width,
            framing,
        };
        TraceConfig::build(&inputs)
    }
}

/// Arguments of `rvtrace dump etrace`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The trace file (te_inst_raw or encapsulated).
    file: PathBuf,
    /// Address width in bits when no --scf gives it.
    #[arg(long, value_name = "32|64", default_value_t = 64)]
    xlen: u8,
    /// Print packets as the reference flow's te_inst CSV instead.
    #[arg(long)]
    csv: bool,
    #[command(flatten)]
    trace: TraceArgs,
}

/// Arguments of `rvtrace encode etrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file: binary (from `rvtrace run --ingress`) or the reference flow's
    /// `encoder_input` CSV.
    ingress: PathBuf,
    /// The trace file to write.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Address width in bits for a CSV ingress when no --scf gives it (binary ingress files
    /// carry it).
    #[arg(long, value_name = "32|64")]
    xlen: Option<u8>,
    /// The program's ELF file(s), for --preset reference: instructions are then classified as
    /// the reference flow's post-iss does where it differs from the spec (`c.jr x5` is an other
    /// uninferable jump, itype 14, not a return), which matters in implicit return mode.
    #[arg(long, value_name = "ELF")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    trace: TraceArgs,
}

/// The reference flow's classification of a record (`post-iss`), where it differs from the
/// spec's (`ingressPort.adoc`, jump classes) that rvtrace's ingress follows: `c.jr x5` is a
/// return for the spec, an other uninferable jump for post-iss (its `is_return` only knows
/// `c.jr x1`). Trap returns, which post-iss also reports as uninferable jumps, are
/// discontinuities for the encoder anyway.
fn post_iss_itype(
    image: &rvtrace_image::Image,
    r: &rvtrace_ingress::Record,
) -> rvtrace_ingress::Record {
    use rvtrace_ingress::Itype;
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

/// Arguments of `rvtrace decode etrace`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The trace file (te_inst_raw or encapsulated).
    trace: PathBuf,
    /// The program's ELF file(s). Default: the `object-files` of the --ucf file (relative to
    /// its directory), as the reference flow's decoder configuration names them.
    #[arg(long, value_name = "ELF")]
    elf: Vec<PathBuf>,
    /// Write the retired-PC list (one `0x%x` per line, as `rvtrace run --pcs`).
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// Write the flow elements, one per line (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    #[command(flatten)]
    trace_args: TraceArgs,
}

fn read_file(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The address width a static configuration file gives, if any (so that `--xlen` need not be
/// repeated).
fn scf_width(scf: &Option<PathBuf>) -> Option<u8> {
    let text = std::fs::read_to_string(scf.as_ref()?).ok()?;
    let ini = rvtrace_etrace::config::Ini::parse(&text).ok()?;
    ini.get_any("iaddress_width_p")?.parse().ok()
}

/// `rvtrace dump etrace`.
pub fn dump(a: &DumpArgs) -> CmdResult {
    let data = read_file(&a.file)?;
    let xlen = scf_width(&a.trace.scf).unwrap_or(a.xlen);
    let cfg = a.trace.config(xlen, Some(&data))?;
    let (encap, raw) = match cfg.framing {
        Framing::Raw => (EncapConfig::TE_INST_RAW, true),
        Framing::Encap(e) => (e, false),
    };
    let p = cfg.params;
    let out = std::io::stdout().lock();
    let mut out = BufWriter::new(out);
    let io = |e: std::io::Error| format!("stdout: {e}");
    if a.csv {
        write!(out, "{}\r\n", rvtrace_etrace::codec::te_inst::CSV_HEADER).map_err(io)?;
    }
    let (mut packets, mut errors) = (0u64, 0u64);
    for (off, item) in PacketReader::new(&data, encap, raw, p, cfg.options) {
        match item {
            Item::Packet(pkt) if a.csv => {
                packets += 1;
                // CRLF, as the reference flow's Python csv writer ends its rows.
                write!(out, "{}\r\n", pkt.csv(&p)).map_err(io)?;
            }
            Item::Packet(pkt) => {
                packets += 1;
                writeln!(out, "{off:08x}  {:<4}  {}", pkt.kind(), pkt.fields(&p)).map_err(io)?;
            }
            Item::Other(f) if !a.csv => {
                writeln!(out, "{off:08x}  --    {f:?}").map_err(io)?;
            }
            Item::Other(_) => {}
            Item::Error(e) => {
                errors += 1;
                if !a.csv {
                    writeln!(out, "{off:08x}  ERROR {e}").map_err(io)?;
                }
            }
        }
    }
    out.flush().map_err(io)?;
    if !a.csv {
        say!(
            "{packets} packets, {errors} errors, {} bytes ({})",
            data.len(),
            match cfg.framing {
                Framing::Raw => "te_inst_raw",
                Framing::Encap(_) => "encapsulated",
            }
        );
    }
    Ok(if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::report::EXIT_MISMATCH)
    })
}

/// `rvtrace encode etrace`.
pub fn encode(a: &EncodeArgs) -> CmdResult {
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use rvtrace_ingress::etrace_csv::EtraceCsvReader;
    use rvtrace_ingress::IngressReader;
    use std::io::{BufRead, BufReader};
    let name = a.ingress.display().to_string();
    let file = std::fs::File::open(&a.ingress).map_err(|e| format!("{name}: {e}"))?;
    let mut input = BufReader::with_capacity(1 << 16, file);
    let is_csv = input
        .fill_buf()
        .map_err(|e| format!("{name}: {e}"))?
        .starts_with(b"itype");
    let out =
        std::fs::File::create(&a.output).map_err(|e| format!("{}: {e}", a.output.display()))?;
    let out = BufWriter::with_capacity(1 << 16, out);
    let mut records = 0u64;
    let mut image = rvtrace_image::Image::new();
    for e in &a.elf {
        image.load_file(e).map_err(|e| e.to_string())?;
    }
    let reclassify = !a.elf.is_empty();
    let mut damage = None;
    let (writer, stats) = if is_csv {
        let xlen = scf_width(&a.trace.scf).or(a.xlen).unwrap_or(64);
        let cfg = a.trace.config(xlen, None)?;
        let rd = EtraceCsvReader::new(input).map_err(|e| format!("{name}: {e}"))?;
        let reclassify = reclassify && cfg.preset == Preset::Reference;
        let mut enc = Encoder::new(&cfg, FrameWriter::new(out, &cfg))?;
        for r in rd {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    damage = Some(format!("{name}: {e}"));
                    break;
                }
            };
            if reclassify {
                enc.push(&post_iss_itype(&image, &r))?;
            } else {
                enc.push(&r)?;
            }
            records += 1;
        }
        let st = enc.stats;
        (enc.finish()?, st)
    } else {
        let mut rd = IngressReader::new(input).map_err(|e| format!("{name}: {e}"))?;
        let h = rd.header().clone();
        let xlen = scf_width(&a.trace.scf).unwrap_or(h.xlen.bits() as u8);
        let mut trace = a.trace.clone();
        if trace.itype_width.is_none() {
            trace.itype_width = Some(h.itype_width);
        }
        let cfg = trace.config(xlen, None)?;
        let reclassify = reclassify && cfg.preset == Preset::Reference;
        let mut enc = Encoder::new(&cfg, FrameWriter::new(out, &cfg))?;
        let mut batch = Vec::with_capacity(4096);
        loop {
            batch.clear();
            // A damaged input: encode the records before the damage, then report it.
            let n = match rd.read_batch(&mut batch, 4096) {
                Ok(n) => n,
                Err(e) => {
                    damage = Some(format!("{name}: {e}"));
                    break;
                }
            };
            if n == 0 {
                break;
            }
            for r in &batch {
                if reclassify {
                    enc.push(&post_iss_itype(&image, r))?;
                } else {
                    enc.push(r)?;
                }
            }
            records += n as u64;
        }
        let st = enc.stats;
        (enc.finish()?, st)
    };
    let (bytes, payload, packets) = (writer.bytes, writer.payload_bytes, writer.packets);
    writer
        .into_inner()
        .flush()
        .map_err(|e| format!("{}: {e}", a.output.display()))?;
    let _ = stats;
    say!(
        "{records} records, {packets} packets, {bytes} bytes ({payload} payload bytes, {:.3} bits/instr)",
        if records == 0 {
            0.0
        } else {
            payload as f64 * 8.0 / records as f64
        }
    );
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

fn create(p: &Path) -> Result<Box<dyn Write>, String> {
    if p.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdout().lock()));
    }
    let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(Box::new(f))
}

/// `rvtrace decode etrace`.
pub fn decode(a: &DecodeArgs) -> CmdResult {
    use rvtrace_etrace::code::Code;
    use rvtrace_etrace::decoder::{decode_stream, Decoder};
    use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
    let data = read_file(&a.trace)?;
    let mut elfs = a.elf.clone();
    if elfs.is_empty() {
        if let Some(ucf) = &a.trace_args.ucf {
            let text =
                std::fs::read_to_string(ucf).map_err(|e| format!("{}: {e}", ucf.display()))?;
            let u = rvtrace_etrace::config::parse_ucf(&text)
                .map_err(|e| format!("{}: {e}", ucf.display()))?;
            let dir = ucf.parent().unwrap_or(Path::new("."));
            elfs = u.object_files.iter().map(|f| dir.join(f)).collect();
        }
    }
    if elfs.is_empty() {
        return Err("no program: give --elf (or a --ucf naming object-files)".into());
    }
    let mut image = rvtrace_image::Image::new();
    let mut xlen = None;
    for e in &elfs {
        let info = image.load_file(e).map_err(|e| e.to_string())?;
        xlen.get_or_insert(info.xlen);
    }
    let xlen = xlen.ok_or("no --elf given")?;
    let cfg = a.trace_args.config(xlen.bits() as u8, Some(&data))?;
    let (encap, raw) = match cfg.framing {
        Framing::Raw => (EncapConfig::TE_INST_RAW, true),
        Framing::Encap(e) => (e, false),
    };
    let isa = rvtrace_isa::IsaConfig {
        xlen,
        zcmp: false,
        zcmt: false,
    };
    let code = Code::new(&image, isa);
    let mut dec = Decoder::new(&code, &image, cfg.params, cfg.options);
    dec.keep_stack_across_syncs = cfg.preset == Preset::Reference;
    dec.reference_x5_jumps = cfg.preset == Preset::Reference;
    let mut pcs = match &a.pcs {
        Some(p) => Some(PcWriter::new(&image, BufWriter::new(create(p)?))),
        None => None,
    };
    let mut flow = match &a.flow {
        Some(p) => Some(BufWriter::new(create(p)?)),
        None => None,
    };
    let mut flow_err = None;
    let mut losses = Vec::new();
    let mut sink = |e: &FlowElement| {
        if let Some(w) = pcs.as_mut() {
            w.element(e);
        }
        if let Some(f) = flow.as_mut() {
            if let Err(err) = writeln!(f, "{e:?}") {
                flow_err.get_or_insert(err);
            }
        }
        if let FlowElement::Loss { offset, reason, .. } = e {
            losses.push(format!("offset {offset:#x}: {reason}"));
        }
    };
    decode_stream(&data, encap, raw, &mut dec, &mut sink);
    for l in &losses {
        warn!("{}: {l}", a.trace.display());
    }
    if let Some(w) = pcs {
        w.finish().map_err(|e| format!("--pcs: {e}"))?;
    }
    if let Some(mut f) = flow {
        if let Some(e) = flow_err {
            return Err(format!("--flow: {e}").into());
        }
        f.flush().map_err(|e| format!("--flow: {e}"))?;
    }
    let st = dec.stats;
    say!(
        "{} packets, {} instructions, {} errors",
        st.packets,
        st.instructions,
        st.errors
    );
    Ok(if st.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::report::EXIT_MISMATCH)
    })
}
