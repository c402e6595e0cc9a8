//! `rvtrace dump|encode|decode etrace`: E-Trace (`rvtrace-etrace`).
//!
//! The three commands share the option flags of [`TraceArgs`], so one command line serves the
//! encoder and the decoder; `encode` writes them into a sidecar `OUT.meta`
//! ([`rvtrace_etrace::meta`]) that `decode` and `dump` read by default (the command line wins).

use crate::report::{self, CmdResult, Failure};
use rvtrace_ntrace::options::TraceFilter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rvtrace_etrace::config::{Preset, TraceConfig};
use rvtrace_etrace::meta::sidecar_path;
use rvtrace_etrace::options::Options;

/// Options shared by `dump`, `encode` and `decode etrace`: the settings both ends must agree on
/// (one type with the sidecar's content, [`Options`]), and the source field.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct TraceArgs {
    #[command(flatten)]
    o: Options,
    #[command(flatten)]
    src: rvtrace_decode::SrcOptions,
}

/// Options of the encoder only.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct EncoderOnly {
    /// Send a synchronisation packet at least every N packets (the E-Trace encoder's resync
    /// period, in packets).
    #[arg(long = "sync-period", alias = "resync", value_name = "N")]
    pub(crate) resync: Option<u64>,
    /// Width of the ingress itype (3 or 4; binary ingress files carry it).
    #[arg(long, value_name = "3|4", value_parser = clap::value_parser!(u8).range(3..=4))]
    pub(crate) itype_width: Option<u8>,
}

impl TraceArgs {
    /// The options as given, the source field included.
    fn given(&self) -> Options {
        Options {
            srcid_bits: self.src.bits,
            srcid: self.src.id,
            ..self.o.clone()
        }
    }

    /// The framing asked for is consistent ([`Options::check_framing`]).
    pub(crate) fn check_framing(&self) -> Result<(), Failure> {
        self.given()
            .check_framing()
            .map_err(|e| Failure::Usage(e.to_string()))
    }
}

/// The configuration of `o` with the encoder's own options `enc`, for address width
/// `xlen_bits`; `data` (when reading) lets the framing be recognised. A refusal is a usage
/// error.
fn config(
    o: &Options,
    xlen_bits: u8,
    data: Option<&[u8]>,
    enc: &EncoderOnly,
) -> Result<TraceConfig, Failure> {
    Options {
        resync: enc.resync,
        itype_width: enc.itype_width.or(o.itype_width),
        ..o.clone()
    }
    .config(xlen_bits, data)
    .map_err(|e| Failure::Usage(e.to_string()))
}

/// A note when the ingress carries the context (`run --context asid`) and the trace will not:
/// without it a decoder cannot tell processes at the same addresses apart.
fn context_note(h: &rvtrace_ingress::IngressHeader, cfg: &TraceConfig) {
    if h.has_context && cfg.params.nocontext_p {
        note!(
            "the ingress carries the context (run --context) and the trace leaves it out \
             (nocontext_p=1, the default): for a decoder to follow processes, give --scf with \
             nocontext_p=0 and context_width_p=16"
        );
    }
}

/// `--xlen`: 32 or 64.
pub(crate) fn parse_xlen(s: &str) -> Result<u8, String> {
    match s {
        "32" => Ok(32),
        "64" => Ok(64),
        _ => Err("an address width is 32 or 64".into()),
    }
}

/// Arguments of `rvtrace encode etrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file: binary (from `rvtrace run --ingress`) or the reference flow's
    /// `encoder_input` CSV. Several binary ingress files (one per hart, `run --harts N
    /// --ingress 'h{hart}.ing'`) make one trace of several harts, the k-th file's packets with
    /// srcID k (needs --src-bits), merged in the order of the records' time as a trace funnel
    /// does; `decode --all-harts` splits it back.
    #[arg(required = true, num_args = 1..)]
    ingress: Vec<PathBuf>,
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
    /// Columns of a CSV input to skip (a simulator's `cycle`, say): their names, comma-separated
    /// or the option repeated. Any other unknown column is an error.
    #[arg(long = "csv-ignore", value_name = "COLUMN", value_delimiter = ',')]
    csv_ignore: Vec<String>,
    /// Trace only these privileges (comma-separated: u, s, m): at the first instruction outside
    /// them the last one inside is reported and a support packet says qualification ended
    /// (payload.adoc sec:qual-status); the next one inside starts with a synchronisation
    /// packet, as after a filter on real hardware (trTeInstFilters).
    #[arg(long, value_name = "LIST")]
    trace_priv: Option<String>,
    /// Trace only instructions with LO <= address < HI (hex), as --trace-priv.
    #[arg(long, value_name = "LO:HI")]
    trace_range: Option<String>,
    /// Print counts and bits per instruction (with and without framing) on stderr at the end.
    #[arg(long)]
    stats: bool,
    #[command(flatten)]
    trace: TraceArgs,
    #[command(flatten)]
    encoder: EncoderOnly,
}

/// `rvtrace encode etrace`.
pub fn encode(a: &EncodeArgs) -> CmdResult {
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use rvtrace_ingress::etrace_csv::EtraceCsvReader;
    use rvtrace_ingress::IngressReader;
    use std::io::BufRead;
    a.trace.check_framing()?;
    if a.ingress.len() > 1 {
        return encode_harts(a);
    }
    let ingress = &a.ingress[0];
    let name = ingress.display().to_string();
    let side = sidecar_path(&a.output);
    let mut outs = vec![("-o", a.output.as_path())];
    if !report::is_std(&a.output) {
        outs.push(("the sidecar", side.as_path()));
    }
    let mut ins: Vec<&Path> = vec![ingress.as_path()];
    ins.extend(a.elf.iter().map(|p| p.as_path()));
    report::distinct(&ins, &outs)?;
    let mut input = report::open_input_progress(ingress, "encode")?;
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
    let filter = crate::ntrace::trace_filter(a.trace_priv.as_deref(), a.trace_range.as_deref())?;
    let mut enc_opts = a.encoder.clone();
    let mut damage = None;
    let (writer, cfg) = if is_csv {
        let xlen = a.trace.o.scf_width().or(a.xlen).unwrap_or(64);
        let cfg = config(&a.trace.given(), xlen, None, &enc_opts)?;
        let ignore: Vec<&str> = a.csv_ignore.iter().map(String::as_str).collect();
        let mut rd =
            EtraceCsvReader::with_ignored(input, &ignore).map_err(|e| format!("{name}: {e}"))?;
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
            push_batch(
                &mut enc,
                &batch[..n],
                reclassify.then_some(&image),
                filter.as_ref(),
            )?;
            records += n as u64;
            pushed += n as u64;
        }
        (enc.finish()?, cfg)
    } else {
        if !a.csv_ignore.is_empty() {
            return Err(Failure::Usage(format!(
                "{name} is binary ingress, not CSV: --csv-ignore does not apply"
            )));
        }
        let mut rd = IngressReader::new(input).map_err(|e| format!("{name}: {e}"))?;
        let h = rd.header().clone();
        let xlen = a.trace.o.scf_width().unwrap_or(h.xlen.bits() as u8);
        if enc_opts.itype_width.is_none() {
            enc_opts.itype_width = Some(h.itype_width);
        }
        let cfg = config(&a.trace.given(), xlen, None, &enc_opts)?;
        context_note(&h, &cfg);
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
                push_batch(
                    &mut enc,
                    &batch,
                    reclassify.then_some(&image),
                    filter.as_ref(),
                )?;
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
                                let image = reclassify.then_some(&image);
                                res = push_one(&mut enc, &one, image, filter.as_ref());
                            }
                        })
                        .map_err(|e| format!("{name}: block record {}: {e}", records + 1))?;
                    res?;
                    pushed += k - 1;
                } else {
                    push_one(&mut enc, r, reclassify.then_some(&image), filter.as_ref())?;
                }
                records += 1;
                pushed += 1;
            }
        }
        (enc.finish()?, cfg)
    };
    let (bytes, payload, packets) = (writer.bytes, writer.payload_bytes, writer.packets);
    writer.into_inner().finish()?;
    let summary = || report::encode_summary(pushed, (packets, "packets"), bytes, payload * 8);
    finish_encode(a, &cfg, enc_opts.itype_width, summary, damage, records)
}

/// The end of `encode etrace` once the trace is written: its sidecar, `--stats`'s line
/// (`summary`), and a damaged input's report (`damage`, after `records` records).
fn finish_encode(
    a: &EncodeArgs,
    cfg: &TraceConfig,
    itype_width: Option<u8>,
    summary: impl FnOnce() -> String,
    damage: Option<String>,
    records: u64,
) -> CmdResult {
    if !report::is_std(&a.output) {
        let o = Options {
            itype_width,
            ..a.trace.given()
        };
        o.for_sidecar(cfg).write(&a.output)?;
    }
    if a.stats {
        say!("{}", summary());
    }
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

/// `encode etrace H0 H1 ...`: one trace of several harts (`crate::funnel`), the k-th file's
/// packets with srcID k, written as each hart's encoder makes them.
fn encode_harts(a: &EncodeArgs) -> CmdResult {
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use std::cell::RefCell;
    use std::rc::Rc;
    let n = a.ingress.len();
    // The encapsulation's srcID: at most 16 bits.
    let src = &a.trace.src;
    crate::funnel::check_sources(n, src.id, src.bits.unwrap_or(0), 16, "srcID")?;
    if !a.elf.is_empty() || !a.csv_ignore.is_empty() {
        return Err(Failure::Usage(
            "several harts are binary ingress files merged record by record: --elf and --csv-ignore do not apply".into(),
        ));
    }
    let ins: Vec<&Path> = a.ingress.iter().map(PathBuf::as_path).collect();
    let side = sidecar_path(&a.output);
    let mut outs = vec![("-o", a.output.as_path())];
    if !report::is_std(&a.output) {
        outs.push(("the sidecar", side.as_path()));
    }
    report::distinct(&ins, &outs)?;
    let mut inputs = crate::funnel::open(&a.ingress)?;
    let h = inputs[0].header.clone();
    let mut enc_opts = a.encoder.clone();
    if enc_opts.itype_width.is_none() {
        enc_opts.itype_width = Some(h.itype_width);
    }
    if let Some(i) = inputs
        .iter()
        .find(|i| i.header.itype_width != h.itype_width)
    {
        return Err(Failure::Usage(format!(
            "{} and {} have different itype widths",
            inputs[0].name, i.name
        )));
    }
    let xlen = a.trace.o.scf_width().unwrap_or(h.xlen.bits() as u8);
    let cfg = config(&a.trace.given(), xlen, None, &enc_opts)?;
    context_note(&h, &cfg);
    let filter = crate::ntrace::trace_filter(a.trace_priv.as_deref(), a.trace_range.as_deref())?;
    /// The one output every hart's packets go to, a packet at a time.
    struct Shared(Rc<RefCell<report::Output>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.borrow_mut().flush()
        }
    }
    let out = Rc::new(RefCell::new(report::Output::create(&a.output)?));
    let mut encoders = Vec::with_capacity(n);
    for k in 0..n {
        let c = cfg
            .with_srcid(Some(k as u16))
            .map_err(|e| Failure::Usage(e.to_string()))?;
        encoders.push(Encoder::new(&c, FrameWriter::new(Shared(out.clone()), &c))?);
    }
    let (records, damage) = crate::funnel::merge(&mut inputs, |k, rs| {
        push_batch(&mut encoders[k], rs, None, filter.as_ref())
    })?;
    let (mut bytes, mut payload, mut packets) = (0, 0, 0);
    for e in encoders {
        let w = e.finish()?;
        (bytes, payload, packets) = (
            bytes + w.bytes,
            payload + w.payload_bytes,
            packets + w.packets,
        );
    }
    let out = Rc::try_unwrap(out)
        .map_err(|_| "the harts' encoders still hold the output")?
        .into_inner();
    out.finish()?;
    let summary = || {
        let s = report::encode_summary(records, (packets, "packets"), bytes, payload * 8);
        format!("{n} harts: {s}")
    };
    finish_encode(a, &cfg, enc_opts.itype_width, summary, damage, records)
}

/// Encode a batch of records, passed through [`post_iss_itype`] when `image` is given.
///
/// [`post_iss_itype`]: rvtrace_etrace::encoder::post_iss_itype
fn push_batch<S: rvtrace_etrace::encoder::PacketSink>(
    enc: &mut rvtrace_etrace::encoder::Encoder<S>,
    batch: &[rvtrace_ingress::Record],
    image: Option<&rvtrace_image::Image>,
    filter: Option<&TraceFilter>,
) -> Result<(), rvtrace_etrace::encoder::EncodeError> {
    match (image, filter) {
        (None, None) => enc.push_all(batch),
        _ => batch
            .iter()
            .try_for_each(|r| push_one(enc, r, image, filter)),
    }
}

/// One record to the encoder: classified as post-iss does when `image` is given (the reference
/// preset), and, when `filter` leaves it out, the end of qualification instead
/// ([`Encoder::unqualified`](rvtrace_etrace::encoder::Encoder::unqualified)).
fn push_one<S: rvtrace_etrace::encoder::PacketSink>(
    enc: &mut rvtrace_etrace::encoder::Encoder<S>,
    r: &rvtrace_ingress::Record,
    image: Option<&rvtrace_image::Image>,
    filter: Option<&TraceFilter>,
) -> Result<(), rvtrace_etrace::encoder::EncodeError> {
    if filter.is_some_and(|f| !f.passes(r.iaddr, r.priv_)) {
        return enc.unqualified();
    }
    match image {
        Some(image) => enc.push(&rvtrace_etrace::encoder::post_iss_itype(image, r)),
        None => enc.push(r),
    }
}
