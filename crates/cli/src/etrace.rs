//! `rvtrace dump|encode|decode etrace`: E-Trace (`rvtrace-etrace`).
//!
//! The three commands share the option flags of [`TraceArgs`], so one command line serves the
//! encoder and the decoder; `encode` writes them into a sidecar `OUT.meta`
//! ([`rvtrace_etrace::meta`]) that `decode` and `dump` read by default (the command line wins).

use crate::report::{self, CmdResult, Failure};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rvtrace_etrace::codec::{looks_like_te_inst_raw, EncapConfig, Item, PacketReader};
use rvtrace_etrace::config::{ConfigInputs, Framing, Preset, TraceConfig};
use rvtrace_etrace::dump::option_names;
use rvtrace_etrace::meta::{sidecar_path, Settings};
use rvtrace_flow::LossReason;

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

/// Options shared by `dump`, `encode` and `decode etrace`: the settings both ends must agree on.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct TraceArgs {
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
    /// Report time in synchronisation packets.
    #[arg(long)]
    timestamps: bool,
    /// File framing (default: te_inst_raw with --preset reference, else encap; encap when an
    /// encapsulation width is given; when reading, te_inst_raw is also recognised by its header
    /// bytes).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Encapsulation: srcID width in bits, 0 to 16 (encapsulation.adoc) (default 0; implies
    /// --format encap).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=16))]
    srcid_bits: Option<u8>,
    /// Encapsulation: timestamp bytes, present when a header's extend bit is set (default 0;
    /// implies --format encap; at most 8).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u8).range(0..=8))]
    timestamp_bytes: Option<u8>,
    /// Encapsulation: width of the payload type field (default 0; implies --format encap; at
    /// most 8).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=8))]
    type_bits: Option<u8>,
    /// Encapsulation srcID (needs --srcid-bits): the hart's, written into every packet by
    /// `encode`; `decode`, `dump`, `stats` (and the analysis commands) read only the packets of
    /// this srcID [default: encode 0; the others every packet, `dump` naming each one's srcID].
    #[arg(long, value_name = "K")]
    srcid: Option<u16>,
}

/// Options of the encoder only.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct EncoderOnly {
    /// Send a synchronisation packet at least every N packets.
    #[arg(long, value_name = "N")]
    pub(crate) resync: Option<u64>,
    /// Width of the ingress itype (3 or 4; binary ingress files carry it).
    #[arg(long, value_name = "3|4", value_parser = clap::value_parser!(u8).range(3..=4))]
    pub(crate) itype_width: Option<u8>,
}

impl TraceArgs {
    fn encap(&self) -> EncapConfig {
        EncapConfig {
            srcid_bits: self.srcid_bits.unwrap_or(0),
            timestamp_bytes: self.timestamp_bytes.unwrap_or(0),
            type_bits: self.type_bits.unwrap_or(0),
            te_inst_type: 0,
        }
    }

    /// Whether an encapsulation width was given.
    fn encap_given(&self) -> bool {
        self.srcid_bits.is_some() || self.timestamp_bytes.is_some() || self.type_bits.is_some()
    }

    /// The framing the options ask for. Encapsulation widths imply `--format encap` (issue 9:
    /// ignoring them gave plain te_inst that the matching decode could not read); with
    /// `--format raw` they are a usage error (te_inst_raw has no srcID, timestamp or type).
    pub(crate) fn check_framing(&self) -> Result<(), Failure> {
        rvtrace_etrace::config::check_framing(
            self.format == Some(FormatArg::Raw),
            self.encap_given(),
        )
        .map_err(Failure::Usage)
    }

    /// The sidecar settings for these options.
    pub(crate) fn settings(&self, enc: &EncoderOnly, cfg: &TraceConfig) -> Settings {
        let abs = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        };
        let (format, e) = match cfg.framing {
            Framing::Raw => ("raw", None),
            Framing::Encap(e) => ("encap", Some(e)),
        };
        Settings {
            preset: Some(
                match cfg.preset {
                    Preset::Rvtrace => "rvtrace",
                    Preset::Reference => "reference",
                }
                .into(),
            ),
            format: Some(format.into()),
            srcid_bits: e.map(|e| e.srcid_bits),
            timestamp_bytes: e.map(|e| e.timestamp_bytes),
            type_bits: e.map(|e| e.type_bits),
            xlen: Some(cfg.params.iaddress_width_p),
            itype_width: enc.itype_width,
            scf: abs(&self.scf),
            ucf: abs(&self.ucf),
            ..self.given()
        }
    }

    /// These options as sidecar settings (what the command line gave).
    fn given(&self) -> Settings {
        Settings {
            preset: self.preset.map(|p| {
                match p {
                    PresetArg::Rvtrace => "rvtrace",
                    PresetArg::Reference => "reference",
                }
                .into()
            }),
            format: self.format.map(|f| {
                match f {
                    FormatArg::Raw => "raw",
                    FormatArg::Encap => "encap",
                }
                .into()
            }),
            srcid_bits: self.srcid_bits,
            timestamp_bytes: self.timestamp_bytes,
            type_bits: self.type_bits,
            xlen: None,
            itype_width: None,
            full_address: self.full_address,
            implicit_exception: self.implicit_exception,
            sijump: self.sijump,
            implicit_return: self.implicit_return,
            return_stack: self.return_stack,
            branch_prediction: self.branch_prediction,
            jump_target_cache: self.jump_target_cache,
            timestamps: self.timestamps,
            scf: self.scf.clone(),
            ucf: self.ucf.clone(),
        }
    }

    /// These options completed by a sidecar's ([`Settings::completed_by`]; `side` is named in
    /// the warnings).
    fn merge(&self, m: &Settings, side: &Path) -> TraceArgs {
        let (s, warnings) = self.given().completed_by(m, &side.display().to_string());
        for w in warnings {
            warn!("{w}");
        }
        TraceArgs {
            preset: s.preset.as_deref().map(|p| match p {
                "reference" => PresetArg::Reference,
                _ => PresetArg::Rvtrace,
            }),
            format: s.format.as_deref().map(|f| match f {
                "raw" => FormatArg::Raw,
                _ => FormatArg::Encap,
            }),
            srcid_bits: s.srcid_bits,
            timestamp_bytes: s.timestamp_bytes,
            type_bits: s.type_bits,
            full_address: s.full_address,
            implicit_exception: s.implicit_exception,
            sijump: s.sijump,
            implicit_return: s.implicit_return,
            return_stack: s.return_stack,
            branch_prediction: s.branch_prediction,
            jump_target_cache: s.jump_target_cache,
            timestamps: s.timestamps,
            scf: s.scf,
            ucf: s.ucf,
            srcid: self.srcid,
        }
    }

    /// The options completed by the sidecar of `trace` (unless `no_meta`), and whether there
    /// was one.
    pub(crate) fn with_sidecar(
        &self,
        trace: &Path,
        no_meta: bool,
    ) -> Result<(TraceArgs, Option<Settings>), Failure> {
        if no_meta || report::is_std(trace) {
            return Ok((self.clone(), None));
        }
        match Settings::read(trace)? {
            Some(m) => Ok((self.merge(&m, &sidecar_path(trace)), Some(m))),
            None => Ok((self.clone(), None)),
        }
    }

    /// The configuration for address width `xlen_bits`; `data` (when reading) lets the framing
    /// be recognised; `enc` has the encoder's own options.
    pub(crate) fn config(
        &self,
        xlen_bits: u8,
        data: Option<&[u8]>,
        enc: &EncoderOnly,
    ) -> Result<TraceConfig, Failure> {
        let read = |p: &Option<PathBuf>| -> Result<Option<String>, String> {
            p.as_ref()
                .map(|p| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display())))
                .transpose()
        };
        let mut detected_raw = false;
        let framing = match self.format {
            Some(FormatArg::Raw) => Some(Framing::Raw),
            Some(FormatArg::Encap) => Some(Framing::Encap(self.encap())),
            None if self.encap_given() => Some(Framing::Encap(self.encap())),
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
            resync: enc.resync,
            timestamps: self.timestamps,
            itype_width: enc.itype_width,
            framing,
        };
        // What the options ask for is checked in one place, the library's: a refusal there is
        // a usage error.
        TraceConfig::build(&inputs)
            .and_then(|c| c.with_srcid(self.srcid))
            .map_err(Failure::Usage)
    }
}

/// `--xlen`: 32 or 64.
fn parse_xlen(s: &str) -> Result<u8, String> {
    match s {
        "32" => Ok(32),
        "64" => Ok(64),
        _ => Err("an address width is 32 or 64".into()),
    }
}

/// Arguments of `rvtrace dump etrace`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The trace file (te_inst_raw or encapsulated; `-` for stdin).
    file: PathBuf,
    /// Address width in bits. Default: from --scf, the sidecar (FILE.meta) or --elf; else 64,
    /// with a warning.
    #[arg(long, value_name = "32|64", value_parser = parse_xlen)]
    xlen: Option<u8>,
    /// The program's ELF file, for the address width.
    #[arg(long, value_name = "ELF")]
    elf: Option<PathBuf>,
    /// Print packets as the reference flow's te_inst CSV instead.
    #[arg(long)]
    csv: bool,
    /// Do not read the sidecar FILE.meta that `encode` writes.
    #[arg(long)]
    no_meta: bool,
    #[command(flatten)]
    trace: TraceArgs,
}

/// Arguments of `rvtrace encode etrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file: binary (from `rvtrace run --ingress`) or the reference flow's
    /// `encoder_input` CSV.
    ingress: PathBuf,
    /// The trace file to write (and its sidecar OUT.meta with the settings the trace does not
    /// carry, which decode and dump read).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Address width in bits for a CSV ingress when no --scf gives it (binary ingress files
    /// carry it).
    #[arg(long, value_name = "32|64", value_parser = parse_xlen)]
    xlen: Option<u8>,
    /// The program's ELF file(s), for --preset reference: instructions are then classified as
    /// the reference flow's post-iss does where it differs from the spec (`c.jr x5` is an other
    /// uninferable jump, itype 14, not a return), which matters in implicit return mode.
    /// Needed for an ingress file of block records (`rvtrace run --ingress-blocks`): the
    /// encoder works on the instructions of each block, which the program tells.
    #[arg(long, value_name = "ELF")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    trace: TraceArgs,
    #[command(flatten)]
    encoder: EncoderOnly,
}

/// Arguments of `rvtrace decode etrace`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The trace file (te_inst_raw or encapsulated; `-` for stdin).
    trace: PathBuf,
    /// The program's ELF file(s). Default: the `object-files` of the --ucf file (relative to
    /// its directory), as the reference flow's decoder configuration names them.
    #[arg(long, value_name = "ELF")]
    elf: Vec<PathBuf>,
    /// Write the retired-PC list (one `0x%x` per line, as `rvtrace run --pcs`; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// The format of --pcs.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = crate::ntrace::PcsFormat::Text, requires = "pcs")]
    pcs_format: crate::ntrace::PcsFormat,
    /// Write the flow elements, one per line (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    /// Show at most N loss warnings (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = report::DEFAULT_MAX_WARNINGS)]
    max_warnings: u64,
    /// Do not read the sidecar TRACE.meta that `encode` writes.
    #[arg(long)]
    no_meta: bool,
    /// Decode on N threads: the trace (read into memory) is cut at synchronisation packets
    /// (format 3) and the chunks decoded in parallel; the output is the same as with one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: u64,
    /// Decode every hart of a trace of several (packets with srcIDs: needs --srcid-bits), each
    /// srcID's packets as one hart's trace, on up to --jobs threads: `{hart}` in the paths of
    /// --pcs, --flow, --brstack, --text and --call-trace is replaced by the srcID (decimal), one
    /// file per hart; the counts are printed per hart.
    #[arg(long, conflicts_with = "srcid")]
    all_harts: bool,
    #[command(flatten)]
    trace_args: TraceArgs,
    #[command(flatten)]
    brstack: crate::brstack::BrstackDecodeArgs,
    #[command(flatten)]
    text: crate::text_out::TextArgs,
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
    // Read as it is dumped (memory flat in the trace's size); the first 64 KiB tell its kind
    // and framing.
    let name = report::name(&a.file);
    let mut input = report::open_input(&a.file)?;
    let head = report::read_head(&mut input, 1 << 16, &name)?;
    crate::kind::check(&a.file, &head, crate::kind::Expected::Etrace)?;
    a.trace.check_framing()?;
    let (trace, meta) = a.trace.with_sidecar(&a.file, a.no_meta)?;
    let elf_xlen = match &a.elf {
        Some(e) => {
            let mut image = rvtrace_image::Image::new();
            Some(image.load_file(e).map_err(|e| e.to_string())?.xlen.bits() as u8)
        }
        None => None,
    };
    let xlen = match a
        .xlen
        .or(scf_width(&trace.scf))
        .or(meta.as_ref().and_then(|m| m.xlen))
        .or(elf_xlen)
    {
        Some(x) => x,
        None => {
            if !a.csv {
                warn!("{}: address width unknown (no sidecar, --xlen, --scf or --elf): assuming 64 bits", a.file.display());
            }
            64
        }
    };
    let cfg = trace.config(xlen, Some(&head), &EncoderOnly::default())?;
    let mut out = report::Output::stdout();
    let read_failed = std::cell::Cell::new(false);
    let whole = crate::ntrace::NoteReadError {
        inner: std::io::Read::chain(&head[..], input),
        failed: &read_failed,
    };
    let st = rvtrace_etrace::dump::dump_read(whole, &cfg, a.csv, &mut out)
        .map_err(|e| crate::ntrace::dump_failure(&name, read_failed.get(), &out, e))?;
    let (packets, errors) = (st.packets, st.errors);
    out.finish()?;
    if !a.csv {
        say!(
            "{packets} packets, {errors} errors, {} bytes ({})",
            st.bytes,
            match cfg.framing {
                Framing::Raw => "te_inst_raw",
                Framing::Encap(_) => "encapsulated",
            }
        );
    }
    Ok(report::status(errors == 0))
}

/// `rvtrace encode etrace`.
pub fn encode(a: &EncodeArgs) -> CmdResult {
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use rvtrace_ingress::etrace_csv::EtraceCsvReader;
    use rvtrace_ingress::IngressReader;
    use std::io::BufRead;
    a.trace.check_framing()?;
    let name = a.ingress.display().to_string();
    let side = sidecar_path(&a.output);
    let mut outs = vec![("-o", a.output.as_path())];
    if !report::is_std(&a.output) {
        outs.push(("the sidecar", side.as_path()));
    }
    let mut ins: Vec<&Path> = vec![a.ingress.as_path()];
    ins.extend(a.elf.iter().map(|p| p.as_path()));
    report::distinct(&ins, &outs)?;
    let mut input = report::open_input_progress(&a.ingress, "encode")?;
    let is_csv = input
        .fill_buf()
        .map_err(|e| format!("{name}: {e}"))?
        .starts_with(b"itype");
    let mut records = 0u64;
    // Records given to the encoder: one per instruction or trap (a block record gives one per
    // instruction).
    let mut pushed = 0u64;
    let mut image = rvtrace_image::Image::new();
    for e in &a.elf {
        image.load_file(e).map_err(|e| e.to_string())?;
    }
    let reclassify = !a.elf.is_empty();
    let mut enc_opts = a.encoder.clone();
    let mut damage = None;
    let (writer, cfg) = if is_csv {
        let xlen = scf_width(&a.trace.scf).or(a.xlen).unwrap_or(64);
        let cfg = a.trace.config(xlen, None, &enc_opts)?;
        let mut rd = EtraceCsvReader::new(input).map_err(|e| format!("{name}: {e}"))?;
        // Created once the options are known to be good: a usage error leaves no file behind.
        let out = report::Output::create(&a.output)?;
        let reclassify = reclassify && cfg.preset == Preset::Reference;
        let mut enc = Encoder::new(&cfg, FrameWriter::new(out, &cfg))?;
        // Rows parsed in place into the batch.
        let mut batch = vec![rvtrace_ingress::Record::default(); 4096];
        loop {
            // A damaged input: encode the records before the damage, then report it.
            let n = match rd.read_into(&mut batch) {
                Ok(n) => n,
                Err(e) => {
                    damage = Some(format!("{name}: {e}"));
                    break;
                }
            };
            if n == 0 {
                break;
            }
            push_batch(&mut enc, &batch[..n], reclassify.then_some(&image))?;
            records += n as u64;
            pushed += n as u64;
        }
        (enc.finish()?, cfg)
    } else {
        let mut rd = IngressReader::new(input).map_err(|e| format!("{name}: {e}"))?;
        let h = rd.header().clone();
        let xlen = scf_width(&a.trace.scf).unwrap_or(h.xlen.bits() as u8);
        if enc_opts.itype_width.is_none() {
            enc_opts.itype_width = Some(h.itype_width);
        }
        let cfg = a.trace.config(xlen, None, &enc_opts)?;
        // Block records (header multi-retire): the encoder is given each block's instructions,
        // so the packets are those of the per-instruction stream, as E-Trace
        // exampleAlgorithm.adoc "Multiple retirement considerations" requires (this encoder's
        // implicit-return stop tracking and resync search look at every instruction's address,
        // which a block record does not give).
        let blocks = h.multi_retire;
        if blocks && a.elf.is_empty() {
            return Err(Failure::Usage(format!(
                "{name} holds block records (multi-retire): give the program with --elf"
            )));
        }
        let out = report::Output::create(&a.output)?;
        let reclassify = reclassify && cfg.preset == Preset::Reference;
        let mut enc = Encoder::new(&cfg, FrameWriter::new(out, &cfg))?;
        let mut batch = Vec::with_capacity(4096);
        let len_at = |pc| rvtrace_flow::insn_len_at(&image, pc).map(|n| n as u32);
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
            if !blocks {
                push_batch(&mut enc, &batch, reclassify.then_some(&image))?;
                records += n as u64;
                pushed += n as u64;
                continue;
            }
            for r in &batch {
                if blocks && !r.is_single_instruction() && r.retires() {
                    let mut res = Ok(());
                    let k = r
                        .split_block(len_at, |one| {
                            if res.is_ok() {
                                res = if reclassify {
                                    enc.push(&rvtrace_etrace::encoder::post_iss_itype(&image, &one))
                                } else {
                                    enc.push(&one)
                                };
                            }
                        })
                        .map_err(|e| format!("{name}: block record {}: {e}", records + 1))?;
                    res?;
                    pushed += k - 1;
                } else if reclassify {
                    enc.push(&rvtrace_etrace::encoder::post_iss_itype(&image, r))?;
                } else {
                    enc.push(r)?;
                }
                records += 1;
                pushed += 1;
            }
        }
        (enc.finish()?, cfg)
    };
    let (bytes, payload, packets) = (writer.bytes, writer.payload_bytes, writer.packets);
    writer.into_inner().finish()?;
    if !report::is_std(&a.output) {
        a.trace.settings(&enc_opts, &cfg).write(&a.output)?;
    }
    say!(
        "{records} records, {packets} packets, {bytes} bytes ({payload} payload bytes, {:.3} bits/instr)",
        if pushed == 0 {
            0.0
        } else {
            payload as f64 * 8.0 / pushed as f64
        }
    );
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

/// Encode a batch of records, passed through [`post_iss_itype`] when `image` is given.
///
/// [`post_iss_itype`]: rvtrace_etrace::encoder::post_iss_itype
fn push_batch<S: rvtrace_etrace::encoder::PacketSink>(
    enc: &mut rvtrace_etrace::encoder::Encoder<S>,
    batch: &[rvtrace_ingress::Record],
    image: Option<&rvtrace_image::Image>,
) -> Result<(), rvtrace_etrace::encoder::EncodeError> {
    match image {
        Some(image) => batch
            .iter()
            .try_for_each(|r| enc.push(&rvtrace_etrace::encoder::post_iss_itype(image, r))),
        None => enc.push_all(batch),
    }
}

/// A hint when decoding fails in a way that mismatched settings cause: the settings are not in
/// the trace, so the decoder cannot tell a damaged trace from a wrong option.
fn mismatch_hint(first_error: &LossReason, sidecar: bool, framing: &Framing) {
    // Packets that do not parse: the framing; a path that does not fit: the walk's settings.
    let framing_error = matches!(first_error, LossReason::Malformed(_));
    let cause = if framing_error {
        match framing {
            Framing::Raw => "--format (te_inst_raw was assumed)",
            Framing::Encap(_) => {
                "--format and the encapsulation widths --srcid-bits, --timestamp-bytes, --type-bits, or --timestamps"
            }
        }
    } else {
        "--branch-prediction, --jump-target-cache, --implicit-return/--return-stack or --preset (their sizes are not in the trace)"
    };
    if sidecar {
        note!("the trace's sidecar settings were used: the trace itself is damaged, or the sidecar belongs to another trace (likely settings: {cause})");
    } else {
        note!("no sidecar (TRACE.meta) was found: if the trace was encoded with other settings, the likely cause is {cause}");
    }
}

/// `rvtrace decode etrace`.
pub fn decode(a: &DecodeArgs) -> CmdResult {
    use rvtrace_etrace::decoder::{Decoder, DecoderOptions};
    use rvtrace_flow::{loss_text, FlowElement, FlowSink, FlowText, PcWriter};
    let mut outs = Vec::new();
    if let Some(p) = &a.pcs {
        outs.push(("--pcs", p.as_path()));
    }
    if let Some(p) = &a.flow {
        outs.push(("--flow", p.as_path()));
    }
    outs.extend(crate::brstack::decode_outputs(&a.brstack));
    outs.extend(a.text.outputs());
    crate::brstack::check_decode(&a.brstack)?;
    let mut ins: Vec<&Path> = vec![a.trace.as_path()];
    ins.extend(a.elf.iter().map(|p| p.as_path()));
    report::distinct(&ins, &outs)?;
    a.trace_args.check_framing()?;
    // The trace is read as it is decoded (memory stays flat in its size); its first 64 KiB
    // tell its kind, framing and options.
    let mut input = report::open_input_progress(&a.trace, "decode")?;
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut input, 1 << 16), &mut data)
        .map_err(|e| Failure::Tool(format!("{}: cannot read: {e}", a.trace.display())))?;
    crate::kind::check(&a.trace, &data, crate::kind::Expected::Etrace)?;
    let (targs, meta) = a.trace_args.with_sidecar(&a.trace, a.no_meta)?;
    let mut elfs = a.elf.clone();
    if elfs.is_empty() {
        if let Some(ucf) = &targs.ucf {
            let text =
                std::fs::read_to_string(ucf).map_err(|e| format!("{}: {e}", ucf.display()))?;
            let u = rvtrace_etrace::config::parse_ucf(&text)
                .map_err(|e| format!("{}: {e}", ucf.display()))?;
            let dir = ucf.parent().unwrap_or(Path::new("."));
            elfs = u.object_files.iter().map(|f| dir.join(f)).collect();
        }
    }
    if elfs.is_empty() {
        return Err(Failure::Usage(
            "no program: give --elf (or a --ucf naming object-files)".into(),
        ));
    }
    let mut image = rvtrace_image::Image::new();
    let mut xlen = None;
    for e in &elfs {
        let info = image.load_file(e).map_err(|e| e.to_string())?;
        xlen.get_or_insert(info.xlen);
    }
    let xlen = xlen.ok_or("no --elf given")?;
    if let Some(w) = meta.as_ref().and_then(|m| m.xlen) {
        if w != xlen.bits() as u8 && scf_width(&targs.scf).is_none() {
            warn!(
                "{}: the trace was encoded with {w}-bit addresses, the ELF is {}-bit",
                a.trace.display(),
                xlen.bits()
            );
        }
    }
    let cfg = targs.config(
        scf_width(&targs.scf).unwrap_or(xlen.bits() as u8),
        Some(&data),
        &EncoderOnly::default(),
    )?;
    let (encap, raw) = cfg.framing.reader();
    // The stream's support packet carries the run-time options (payload.adoc sec:format33): the
    // decoder follows it; say so when the command line or sidecar said otherwise.
    if let Some(sp) = PacketReader::new(&data, encap, raw, cfg.params, cfg.options)
        .only_src(cfg.srcid)
        .take(16)
        .find_map(|(_, i)| match i {
            Item::Packet(rvtrace_etrace::TeInst::Support(sp)) => Some(sp),
            _ => None,
        })
    {
        let so = rvtrace_etrace::IOptions::from_bits(sp.ioptions);
        if so != cfg.options {
            warn!(
                "{}: the trace's support packet gives the options {} (the command line or sidecar: {}); using the trace's",
                a.trace.display(),
                option_names(so),
                option_names(cfg.options)
            );
        }
        if so.branch_prediction && cfg.params.bpred_size_p == 0 {
            warn!("{}: the trace uses branch prediction but the predictor size is unknown: give --branch-prediction N", a.trace.display());
        }
        if so.jump_target_cache && cfg.params.cache_size_p == 0 {
            warn!("{}: the trace uses a jump target cache but its size is unknown: give --jump-target-cache N", a.trace.display());
        }
    }
    let isa = rvtrace_isa::IsaConfig::new(xlen);
    let dopts = DecoderOptions::from_config(&cfg, isa);
    let cannot_read = |e| Failure::Tool(format!("{}: cannot read: {e}", a.trace.display()));
    if a.all_harts {
        if encap.srcid_bits == 0 || raw {
            return Err(Failure::Usage(
                "--all-harts needs --srcid-bits (the width of the packets' srcID field)".into(),
            ));
        }
        // Standard input is held in memory (read once per hart); a file is read again.
        let mut all = data;
        let trace = if report::is_std(&a.trace) {
            std::io::Read::read_to_end(&mut input, &mut all).map_err(cannot_read)?;
            crate::harts::Trace::Memory(&all)
        } else {
            crate::harts::Trace::File(&a.trace)
        };
        let srcs =
            rvtrace_etrace::scan::sources(trace.reader()?, &cfg.framing).map_err(cannot_read)?;
        return decode_harts(a, &image, dopts, trace, (&srcs, &elfs), &ins);
    }
    let mut brstack = crate::brstack::FlowOut::new(&a.brstack, &image, xlen)?;
    let syms = a.text.symbols(&elfs)?;
    let mut text = crate::text_out::TextOut::new(&a.text, &image, syms.as_ref(), xlen)?;
    let mut warnings = report::Warnings::new(a.trace.display(), a.max_warnings);
    let mut first_error: Option<LossReason> = None;
    // The losses (warnings) and the outputs that keep state across elements.
    // Whether `other` wants ranges too (most elements are ranges: without it, they skip it).
    let other_ranges = brstack.is_some() || !text.is_off();
    let mut other = |e: &FlowElement| {
        if let Some(b) = brstack.as_mut() {
            b.element(e);
        }
        text.element(e);
        if let FlowElement::Loss {
            offset,
            skipped,
            reason,
        } = e
        {
            // Printed as it happens (memory stays flat however many there are).
            warnings.warn(loss_text(*offset, *skipped, reason));
            first_error.get_or_insert_with(|| reason.clone());
        }
    };
    let (st, pcs_out, flow_out) = if a.jobs > 1 {
        let mut all = data;
        std::io::Read::read_to_end(&mut input, &mut all).map_err(cannot_read)?;
        let mut outs = crate::parallel::Outputs::create(
            a.pcs.as_deref(),
            a.pcs_format.flow(),
            a.flow.as_deref(),
        )?;
        let keep =
            !crate::brstack::decode_outputs(&a.brstack).is_empty() || !a.text.outputs().is_empty();
        let parts = outs.parts(&image, keep);
        let (_, st, _) = rvtrace_etrace::scan::decode_parallel_to(
            &image,
            dopts,
            &all,
            rvtrace_flow::chunk::chunk_bytes(),
            a.jobs as usize,
            || parts.part(),
            |p| outs.write(p, &parts, &mut other),
        )
        .map_err(|e| format!("{}: {e}", a.trace.display()))?;
        let (p, f) = outs.finish();
        (st, p, f)
    } else {
        let mut pcs = match &a.pcs {
            Some(p) => Some(PcWriter::with_format(
                &image,
                report::Output::create(p)?,
                a.pcs_format.flow(),
            )),
            None => None,
        };
        let mut flow = match &a.flow {
            Some(p) => Some(FlowText::new(&image, report::Output::create(p)?)),
            None => None,
        };
        let mut sink = crate::text_out::DecodeSink {
            pcs: pcs.as_mut(),
            flow: flow.as_mut(),
            other: &mut other,
            other_ranges,
        };
        let mut dec = Decoder::with_options(&image, dopts);
        let whole = std::io::Read::chain(std::io::Cursor::new(&data), input);
        rvtrace_flow::decode_read(&mut dec, whole, &mut sink).map_err(cannot_read)?;
        (
            dec.stats,
            pcs.map(PcWriter::finish),
            flow.map(FlowText::finish),
        )
    };
    warnings.finish();
    for (out, name) in [(pcs_out, "writing --pcs"), (flow_out, "writing --flow")] {
        if let Some(out) = out {
            out.map_err(|e| Failure::io(name, e))?.finish()?;
        }
    }
    if let Some(b) = brstack {
        b.finish()?;
    }
    text.finish()?;
    say!(
        "{} packets, {} instructions, {} errors",
        st.packets,
        st.instructions,
        st.errors
    );
    // A lost start or end is no sign of mismatched settings.
    if let Some(e) = first_error.filter(|e| {
        !matches!(
            e,
            LossReason::StartLost(_) | LossReason::EndLost(_) | LossReason::Overflow(_)
        )
    }) {
        mismatch_hint(&e, meta.is_some(), &cfg.framing);
    }
    Ok(report::status(st.errors == 0))
}

/// `decode etrace --all-harts`: each srcID in `srcs` decoded on its own (the decoder reads only
/// that srcID's packets), to its own `--pcs`/`--flow` files, the harts on up to `--jobs` threads
/// ([`crate::harts`]); warnings name the srcID, the counts are printed per hart.
fn decode_harts(
    a: &DecodeArgs,
    image: &rvtrace_image::Image,
    dopts: rvtrace_etrace::decoder::DecoderOptions,
    trace: crate::harts::Trace<'_>,
    (srcs, elfs): (&[u16], &[PathBuf]),
    inputs: &[&Path],
) -> CmdResult {
    use rvtrace_etrace::decoder::{Decoder, DecoderOptions};
    let outs = crate::harts::HartOutputs {
        trace: &a.trace,
        label: "srcID",
        pcs: a.pcs.as_deref().map(|p| (p, a.pcs_format.flow())),
        flow: a.flow.as_deref(),
        brstack: &a.brstack,
        text: (&a.text, elfs),
        xlen: dopts.isa.xlen,
        max_warnings: a.max_warnings,
    };
    outs.check(srcs, inputs)?;
    let code = rvtrace_etrace::code::Code::new(image, dopts.isa);
    let table = outs.table(image);
    let results = crate::harts::run(srcs, a.jobs, |src| {
        let o = DecoderOptions {
            src: Some(src),
            ..dopts
        };
        let dec = Decoder::with_code(image, o, code.clone());
        outs.decode(image, &table, src, dec, trace)
    });
    let mut ok = true;
    for (src, r) in srcs.iter().zip(results) {
        let (_, st) = r?;
        ok &= st.errors == 0;
        say!(
            "srcID {src}: {} packets, {} instructions, {} errors",
            st.packets,
            st.instructions,
            st.errors
        );
    }
    Ok(report::status(ok))
}
