//! `rvtrace dump|encode|decode ntrace`: N-Trace (`rvtrace-ntrace`).

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ingress::{IngressReader, Record};
use rvtrace_isa::Xlen;
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::meta::{self, Meta};
use rvtrace_ntrace::options::{
    CallStack, EncoderConfig, Fifo, InputCaps, Mode, SyncUnit, TraceFilter,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What encoder and decoder must agree on (not in the stream; `encode` writes them into the
/// sidecar `OUT.meta`).
#[derive(clap::Args, Clone, Debug)]
struct SharedOpts {
    #[command(flatten)]
    src: rvtrace_decode::SrcOptions,
    /// trTeInstExtendAddrMSB: F-ADDR/U-ADDR with the MSB extension (N-Trace 9.4).
    #[arg(long)]
    extend_addr_msb: bool,
    /// trTeInstEnAllJumps: direct jumps are traced as taken branches.
    #[arg(long)]
    all_jumps: bool,
}

/// The encoder's own options (the decoder does not need them).
#[derive(clap::Args, Clone, Debug)]
struct EncodeOpts {
    /// XLEN for PCSEQ input (an ingress file says it in its header).
    #[arg(long, value_name = "32|64", value_parser = ["32", "64"])]
    xlen: Option<String>,
    /// BTM (DirectBranch / IndirectBranch) or HTM (IndirectBranchHist).
    #[arg(long, value_enum, default_value_t = ModeArg::Htm)]
    mode: ModeArg,
    /// Make the same choices as the named reference encoder.
    #[arg(long, value_enum)]
    preset: Option<PresetArg>,
    /// The N-Trace text to follow where 1.0 (ratified) and 1.0.0-rc7 differ: I-CNT of a trap's
    /// ecall/ebreak (1.0: left out), a periodic sync at an indirect jump (1.0:
    /// IndirectBranchSync), a full I-CNT in HTM with HIST bits (1.0: ResourceFull RCODE 0; rc7:
    /// SYNC=4), which syncs reset the state (1.0: all) [default: 1.0; rc7 with --preset nexrv]
    #[arg(long, value_enum, value_name = "SPEC")]
    spec: Option<rvtrace_ntrace::options::Spec>,
    /// I-CNT counter width in bits, its most significant bit being the overflow flag (N-Trace
    /// 8.3); default 22 (NTRACE_MAX_ICNT).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(2..=24))]
    icnt_bits: Option<u8>,
    /// HIST register width in bits including the stop-bit (N-Trace 8.2.1); default 32
    /// (NTRACE_MAX_HIST).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(2..=32))]
    hist_bits: Option<u8>,
    /// trTeInstEnRepeatedHistory: repeated full HIST as ResourceFull RCODE 2 with HREPEAT (9.3).
    #[arg(long)]
    repeat_history: bool,
    /// Repeated history of any period: the shortest pattern repeating over the last one or two
    /// full HIST registers is counted in ResourceFull RCODE 2 (9.3; implies --repeat-history).
    #[arg(long)]
    hist_patterns: bool,
    /// RepeatBranch for identical consecutive branch messages (7.11).
    #[arg(long)]
    repeat_branch: bool,
    /// Implicit return with a stack of N full return addresses (9.2, mode 3; N at most 32); in
    /// SiFive's dialect a counter of calls up to N (simple counting).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
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
    /// Periodic synchronization (SYNC=2) every N units of --sync-mode (trTeInstSyncMax), 0 for
    /// none [default: 524288 messages, the longest trTeInstSyncMax sets; none with --preset
    /// nexrv]
    #[arg(long, value_name = "N")]
    sync_period: Option<u64>,
    /// Unit of --sync-period (trTeInstSyncMode).
    #[arg(long, value_enum, default_value_t = SyncModeArg::Messages)]
    sync_mode: SyncModeArg,
    /// TSTAMP fields: absolute in synchronization messages, relative elsewhere (8.5).
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
    /// ProgTraceCorrelation EVCODE=4 and restarts with SYNC=5 (8.6).
    #[arg(long, value_name = "LIST")]
    trace_priv: Option<String>,
    /// Trace only instructions with LO <= address < HI (hex).
    #[arg(long, value_name = "LO:HI")]
    trace_range: Option<String>,
    /// The message set: standard N-Trace, or what SiFive's pre-1.0 encoders send (ResourceFull
    /// RCODE 8/9 runs of branch outcomes, XOR timestamps, --call-stack N as a counter of calls
    /// cleared at every sync; crates/ntrace/README.md "SiFive dialect") [default: standard]
    #[arg(long, value_enum, value_name = "DIALECT")]
    dialect: Option<rvtrace_ntrace::codec::Dialect>,
    /// A known SiFive part: the dialect, its SRC and timestamp widths and its implicit return
    /// (each option given explicitly wins).
    #[arg(long, value_enum, value_name = "PART")]
    hw: Option<rvtrace_ntrace::sifive::Hw>,
    /// Width of the timestamp counter: TSTAMP values modulo 2^N (SiFive's tsSize) [default: 64]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=64))]
    tstamp_bits: Option<u8>,
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
    /// The reference C encoder's choices (NexRv in riscv-non-isa/tg-nexus-trace refcode;
    /// N-Trace 1.0.0-rc7's rules).
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
    /// `--input-format pcseq`. Several ingress files (one per hart, `run --harts N --ingress
    /// 'h{hart}.ing'`) make one trace of several harts, the k-th file's messages with SRC k
    /// (needs --src-bits), merged in the order of the records' time as a trace funnel does;
    /// `decode --all-harts` splits it back.
    #[arg(required = true, num_args = 1..)]
    ingress: Vec<PathBuf>,
    /// Output trace file (MSEO/MDO bytes, the NexRv `.bin` format), `-` for stdout. The settings
    /// a decoder needs go into the sidecar `OUT.meta` next to it (not for stdout).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Input format.
    #[arg(long, value_enum, default_value_t = InputFormat::Ingress)]
    input_format: InputFormat,
    /// Print counts and bits per instruction on stderr at the end.
    #[arg(long)]
    stats: bool,
    /// The program's ELF file(s), for an ingress file of block records (`rvtrace run
    /// --ingress-blocks`): each block is then given to the encoder as its instructions, and the
    /// messages are those of the per-instruction stream. Without it a block is encoded as one
    /// record (I-CNT counts its half-words, N-Trace 8.3): the same messages, except that a
    /// timestamp at a block is the block's time (that of its last instruction), a periodic
    /// sync comes at a block's end, and FIFO drain is per record; --trace-range, --icnt-bits
    /// and --fifo-bytes need it.
    #[arg(long, value_name = "ELF")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    shared: SharedOpts,
    #[command(flatten)]
    opts: EncodeOpts,
}

/// A reader that notes whether it failed: a streaming dump's error is then known to come from
/// reading the trace, not from writing the text.
pub(crate) struct NoteReadError<'a, R> {
    pub(crate) inner: R,
    pub(crate) failed: &'a std::cell::Cell<bool>,
}

impl<R: Read> Read for NoteReadError<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let r = self.inner.read(buf);
        if r.as_ref()
            .is_err_and(|e| e.kind() != std::io::ErrorKind::Interrupted)
        {
            self.failed.set(true);
        }
        r
    }
}

/// The failure of a streaming dump: reading the trace `name` (when `read_failed`) or writing
/// `out`.
pub(crate) fn dump_failure(
    name: &str,
    read_failed: bool,
    out: &Output,
    e: std::io::Error,
) -> Failure {
    if read_failed {
        Failure::io(format_args!("reading {name}"), e)
    } else {
        out.fail(e)
    }
}

/// Where `encode` gets its records: puts a batch at the start of the vector (as long as it
/// likes), returns how many (0: the end of the input).
type BatchSource = Box<dyn FnMut(&mut Vec<Record>) -> Result<usize, String>>;

/// A note when the ingress carries the context (`run --context asid`) and the trace will not
/// (no Ownership messages): without it a decoder cannot tell processes at the same addresses
/// apart.
fn ownership_note(has_context: bool, ownership: bool) {
    if has_context && !ownership {
        note!(
            "the ingress carries the context (run --context) and the trace leaves it out: for \
             a decoder to follow processes, give --ownership"
        );
    }
}

/// `rvtrace encode ntrace`.
pub fn encode(a: &EncodeArgs) -> CmdResult {
    if a.ingress.len() > 1 {
        return encode_harts(a);
    }
    let ingress = &a.ingress[0];
    let inp = ingress.display();
    let mut source: BatchSource;
    // The input holds block records; they are expanded (with --elf).
    let (mut blocks, mut expanded) = (false, false);
    let (xlen, itype_width, has_sijump, has_time) = match a.input_format {
        InputFormat::Ingress => {
            let reader = report::open_input_progress(ingress, "encode")?;
            let mut r = IngressReader::new(reader).map_err(|e| format!("{inp}: {e}"))?;
            let h = r.header().clone();
            ownership_note(h.has_context, a.opts.ownership);
            let name = inp.to_string();
            blocks = h.multi_retire;
            if blocks && !a.elf.is_empty() {
                // Each block as its instructions, from the program.
                let mut image = rvtrace_image::Image::new();
                for e in &a.elf {
                    image.load_file(e).map_err(|e| e.to_string())?;
                }
                let mut raw = Vec::with_capacity(4096);
                let mut n = 0u64;
                source = Box::new(move |out| {
                    out.clear();
                    raw.clear();
                    r.read_batch(&mut raw, 4096)
                        .map_err(|e| format!("{name}: {e}"))?;
                    let len_at = |pc| rvtrace_flow::insn_len_at(&image, pc).map(|l| l as u32);
                    for b in &raw {
                        n += 1;
                        b.split_block(len_at, |one| out.push(one))
                            .map_err(|e| format!("{name}: block record {n}: {e}"))?;
                    }
                    Ok(out.len())
                });
                expanded = true;
            } else {
                source = Box::new(move |b| {
                    b.clear();
                    r.read_batch(b, 4096).map_err(|e| format!("{name}: {e}"))
                });
            }
            (h.xlen, h.itype_width, h.has_sijump, h.has_time)
        }
        InputFormat::Pcseq => {
            let text = rvtrace_ntrace::open_text(ingress)
                .map_err(|e| format!("{inp}: cannot open: {e}"))?;
            let mut r = PcseqReader::new(text);
            let name = inp.to_string();
            // Lines parsed in place into the batch (its length kept from call to call).
            source = Box::new(move |b| {
                b.resize(4096, Record::default());
                r.read_into(b).map_err(|e| format!("{name}: {e}"))
            });
            let xlen = match a.opts.xlen.as_deref() {
                Some("32") => Xlen::Rv32,
                _ => Xlen::Rv64,
            };
            (xlen, 4, false, false)
        }
    };
    let cfg = encoder_config(a, xlen)?;
    if blocks && !expanded {
        let per_insn = [
            ("--trace-range", a.opts.trace_range.is_some()),
            ("--icnt-bits", a.opts.icnt_bits.is_some()),
            ("--fifo-bytes", a.opts.fifo_bytes.is_some()),
        ];
        if let Some((opt, _)) = per_insn.iter().find(|o| o.1) {
            // A filter range can end inside a block, a narrow I-CNT overflow inside one, and
            // the FIFO drains per instruction: the encoder needs the block's instructions.
            return Err(Failure::Usage(format!(
                "{inp} holds block records (multi-retire): {opt} needs the program (--elf)"
            )));
        }
    }
    if !a.elf.is_empty() && !blocks {
        warn!("{inp}: no block records: --elf is not used");
    }
    // What the options ask for and what the input can serve are checked in the library.
    cfg.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    let caps = InputCaps {
        itype_width,
        sijump: has_sijump,
        time: has_time,
    };
    for w in cfg.check_input(caps).map_err(|e| format!("{inp}: {e}"))? {
        warn!("{inp}: {w}");
    }
    // ITC stimulus writes beside the ingress file (`run --itc`): DataAcquisition messages in
    // SiFive's dialect.
    let itc_path = rvtrace_ingress::itc::sidecar_path(ingress);
    let mut writes = Vec::new();
    if a.input_format == InputFormat::Ingress && itc_path.is_file() {
        let text = std::fs::read_to_string(&itc_path)
            .map_err(|e| format!("{}: cannot read: {e}", itc_path.display()))?;
        writes = rvtrace_ingress::itc::parse(&text)
            .map_err(|e| format!("{}: {e}", itc_path.display()))?;
        if !cfg.sifive() && !writes.is_empty() {
            warn!(
                "{}: {} ITC writes not encoded: DataAcquisition is SiFive's (--dialect sifive)",
                itc_path.display(),
                writes.len()
            );
            writes.clear();
        }
        if blocks && !expanded && !writes.is_empty() {
            return Err(Failure::Usage(format!(
                "{inp} holds block records (multi-retire): its ITC writes ({}) need the program (--elf)",
                itc_path.display()
            )));
        }
    }
    let mut writes = writes.into_iter().peekable();
    let mut retired = 0u64;
    report::distinct(&[ingress], &[("-o", &a.output)])?;
    let mut out = Output::create(&a.output)?;
    let mut enc = Encoder::new(cfg);
    let mut buf = Vec::with_capacity(1 << 16);
    // A damaged input: encode the records before the damage, then report it (issue 9 item 6).
    let mut damage = None;
    let mut records = 0u64;
    let mut batch = Vec::with_capacity(4096);
    loop {
        let n = match source(&mut batch) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        records += n as u64;
        if writes.peek().is_some() {
            enc.push_all_itc(&batch[..n], &mut writes, &mut retired, &mut buf);
        } else {
            enc.push_all(&batch[..n], &mut buf);
        }
        if buf.len() >= 1 << 15 {
            out.write_all(&buf).map_err(|e| out.fail(e))?;
            buf.clear();
        }
    }
    // Records that ran out before the hart stopped are no stop at an `ebreak` (1.0: EVCODE 4).
    let st = if damage.is_some() {
        enc.finish_cut(&mut buf)
    } else {
        enc.finish(&mut buf)
    };
    out.write_all(&buf).map_err(|e| out.fail(e))?;
    out.finish()?;
    if !report::is_std(&a.output) {
        // The settings a decoder needs, next to the trace (crates/ntrace/src/meta.rs). The
        // hart's ingress classifies calls and returns as N-Trace Table 2 does; PCSEQ as the
        // tool that wrote it did.
        let link = (a.input_format == InputFormat::Ingress).then_some(LinkRule::Spec);
        write_sidecar(&a.output, &cfg, link)?;
    }
    if a.stats {
        if blocks && !expanded {
            let bpi = crate::report::per_instruction(st.bytes * 8, st.instructions);
            // A block record counts once: instructions are not known without the program.
            say!(
                "{} block records, {} messages, {} bytes, {bpi:.3} bits/record (--elf counts instructions)",
                st.instructions,
                st.messages,
                st.bytes
            );
        } else {
            // The encoder writes no idle bytes: 6 MDO bits of every message byte are payload.
            say!(
                "{}",
                report::encode_summary(
                    st.instructions,
                    (st.messages, "messages"),
                    st.bytes,
                    st.bytes * 6
                )
            );
        }
    }
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

/// The encoder's configuration that `a`'s options give, for an input of address width `xlen`
/// (`--xlen` wins).
fn encoder_config(a: &EncodeArgs, xlen: Xlen) -> Result<EncoderConfig, Failure> {
    let xlen = match a.opts.xlen.as_deref() {
        Some("32") => Xlen::Rv32,
        Some(_) => Xlen::Rv64,
        None => xlen,
    };
    let mut cfg = EncoderConfig::new(xlen);
    if a.opts.preset == Some(PresetArg::Nexrv) {
        cfg = cfg.nexrv();
    }
    if let Some(spec) = a.opts.spec {
        cfg.spec = spec;
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
    cfg.repeat_history = a.opts.repeat_history || a.opts.hist_patterns;
    cfg.hist_patterns = a.opts.hist_patterns;
    cfg.repeat_branch = a.opts.repeat_branch;
    if let Some(hw) = a.opts.hw {
        hw.apply_to_encoder(&mut cfg);
    }
    if let Some(d) = a.opts.dialect {
        cfg.codec.dialect = d;
    }
    if let Some(b) = a.opts.tstamp_bits {
        cfg.tstamp_bits = b;
    }
    if let Some(n) = a.opts.call_stack {
        // SiFive's implicit return is simple counting (P550 README).
        let counter = a.opts.call_counter || (cfg.sifive() && a.opts.call_stack_partial.is_none());
        cfg.call_stack = if counter {
            CallStack::Counter { max: n }
        } else if let Some(bits) = a.opts.call_stack_partial {
            CallStack::Partial { depth: n, bits }
        } else {
            CallStack::Full { depth: n }
        };
    }
    cfg.sequential_jumps = a.opts.sequential_jumps;
    cfg.all_jumps = a.shared.all_jumps;
    cfg.extend_addr_msb = a.shared.extend_addr_msb;
    if let Some(n) = a.opts.sync_period {
        let unit = match a.opts.sync_mode {
            SyncModeArg::Messages => SyncUnit::Messages,
            SyncModeArg::Cycles => SyncUnit::Cycles,
            SyncModeArg::Halfwords => SyncUnit::Halfwords,
        };
        cfg.sync_period = (n != 0).then_some((unit, n));
    }
    cfg.timestamps = a.opts.timestamps;
    cfg.codec.src_bits = a.shared.src.bits.unwrap_or(cfg.codec.src_bits);
    if cfg.codec.src_bits > 12 {
        return Err(Failure::Usage(format!(
            "--src-bits {}: N-Trace's SRC field is at most 12 bits (trTeSrcBits)",
            cfg.codec.src_bits
        )));
    }
    cfg.src_id = a.shared.src.id.unwrap_or(0);
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
    cfg.filter = trace_filter(a.opts.trace_priv.as_deref(), a.opts.trace_range.as_deref())?;
    Ok(cfg)
}

/// The sidecar of the trace `output`: the settings of `cfg` a decoder needs
/// (crates/ntrace/src/meta.rs), with the rule that classified calls and returns (`link`).
fn write_sidecar(
    output: &Path,
    cfg: &EncoderConfig,
    link: Option<LinkRule>,
) -> Result<(), Failure> {
    let path = meta::sidecar_path(output);
    std::fs::write(&path, Meta::from_encoder(cfg, link).to_text())
        .map_err(|e| Failure::from(format!("{}: cannot write: {e}", path.display())))
}

/// `encode ntrace H0 H1 ...`: one trace of several harts (`crate::funnel`), the k-th file's
/// messages with SRC k.
fn encode_harts(a: &EncodeArgs) -> CmdResult {
    if a.input_format != InputFormat::Ingress {
        return Err(Failure::Usage(
            "several inputs are harts' ingress files: --input-format pcseq takes one".into(),
        ));
    }
    let n = a.ingress.len();
    // trTeSrcBits: at most 12.
    let src = &a.shared.src;
    crate::funnel::check_sources(n, src.id, src.bits.unwrap_or(0), 12, "SRC")?;
    if !a.elf.is_empty() {
        warn!("several harts are merged record by record: --elf is not used");
    }
    let ins: Vec<&Path> = a.ingress.iter().map(PathBuf::as_path).collect();
    report::distinct(&ins, &[("-o", &a.output)])?;
    let mut inputs = crate::funnel::open(&a.ingress)?;
    let base = encoder_config(a, inputs[0].header.xlen)?;
    ownership_note(inputs[0].header.has_context, a.opts.ownership);
    base.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    let mut encoders = Vec::with_capacity(n);
    for (k, i) in inputs.iter().enumerate() {
        let caps = InputCaps {
            itype_width: i.header.itype_width,
            sijump: i.header.has_sijump,
            time: i.header.has_time,
        };
        for w in base
            .check_input(caps)
            .map_err(|e| format!("{}: {e}", i.name))?
        {
            warn!("{}: {w}", i.name);
        }
        if rvtrace_ingress::itc::sidecar_path(&a.ingress[k]).is_file() {
            warn!(
                "{}: its ITC writes are not encoded with several harts",
                i.name
            );
        }
        encoders.push(Encoder::new(EncoderConfig {
            src_id: k as u16,
            ..base
        }));
    }
    let mut out = Output::create(&a.output)?;
    let mut buf = Vec::with_capacity(1 << 16);
    let (records, damage) = crate::funnel::merge(&mut inputs, |k, rs| {
        encoders[k].push_all(rs, &mut buf);
        if buf.len() >= 1 << 15 {
            out.write_all(&buf).map_err(|e| out.fail(e))?;
            buf.clear();
        }
        Ok::<(), Failure>(())
    })?;
    let (mut insns, mut messages, mut bytes) = (0u64, 0u64, 0u64);
    for mut e in encoders {
        let st = if damage.is_some() {
            e.finish_cut(&mut buf)
        } else {
            e.finish(&mut buf)
        };
        insns += st.instructions;
        messages += st.messages;
        bytes += st.bytes;
    }
    out.write_all(&buf).map_err(|e| out.fail(e))?;
    out.finish()?;
    if !report::is_std(&a.output) {
        write_sidecar(&a.output, &base, Some(LinkRule::Spec))?;
    }
    if a.stats {
        say!(
            "{n} harts: {}",
            report::encode_summary(insns, (messages, "messages"), bytes, bytes * 6)
        );
    }
    if let Some(e) = damage {
        return Ok(crate::run::input_damaged(&e, records));
    }
    Ok(ExitCode::SUCCESS)
}

/// The filter `--trace-priv` and `--trace-range` ask for (both encoders), `None` without them.
pub(crate) fn trace_filter(
    privs: Option<&str>,
    range: Option<&str>,
) -> Result<Option<TraceFilter>, String> {
    if privs.is_none() && range.is_none() {
        return Ok(None);
    }
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
        let hex = |v: &str| report::hex(v.trim());
        let (lo, hi) = r
            .split_once(':')
            .and_then(|(l, h)| Some((hex(l)?, hex(h)?)))
            .ok_or_else(|| format!("--trace-range {r:?}: expected LO:HI in hex"))?;
        f.range = Some((lo, hi));
    }
    Ok(Some(f))
}
