//! `rvtrace transcode`: an N-Trace trace re-encoded as E-Trace, or the reverse, through flow
//! elements: decode (the decoder options and sidecar as `decode`), turn the flow back into the
//! hart's ingress records (`rvtrace_decode::transcode`), encode with the other protocol's
//! library encoder. No temporary files; memory stays flat in the trace's size.

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_decode::transcode::{AdaptStats, EtraceOut, FlowIngress, IngressSink, NtraceOut};
use rvtrace_decode::Protocol;
use rvtrace_flow::{FlowElement, FlowSink, TraceDecoder};
use rvtrace_isa::IsaConfig;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const HELP: &str = "\
The trace is decoded with --elf and the decoder options of its protocol (its sidecar TRACE.meta
gives those not named), its instructions become the records a hart gives a trace encoder, and
these are encoded in the protocol of --to with the options of that protocol (the option group of
the output's protocol is the encoder's; defaults as `rvtrace encode`). OUT gets its sidecar
OUT.meta as `encode` writes it. What the input protocol does not carry is assumed, with a note:
N-Trace has no trap causes (cause 0 then; ecall/ebreak get theirs from the instruction) and no
privilege without Ownership messages (M then). Time stamps are kept when the input has them
(N-Trace output: automatic; E-Trace output: give --timestamps).

Trace lost in the input stays lost in the output: the instructions before the loss are closed
and the loss is said the output protocol's way (N-Trace: ProgTraceCorrelation EVCODE=4, an Error
message, ProgTraceSync SYNC=7; E-Trace: ended_rep/ended_ntr, then a support packet with
qual_status trace_lost), so that decoding the output reports the loss where it was.

Exit status: 0 success; 1 trace lost in the input (the output keeps the loss); 2 usage error;
125 an input cannot be read.";

/// The N-Trace encoder's own options (`--to ntrace`).
#[derive(clap::Args, Clone, Debug)]
struct NtraceEncodeOpts {
    /// BTM (DirectBranch / IndirectBranch) or HTM (IndirectBranchHist).
    #[arg(long, value_enum, default_value_t = ModeArg::Htm)]
    mode: ModeArg,
    /// Implicit return with a stack of N full return addresses (9.2; N at most 32).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    call_stack: Option<u32>,
    /// Repeated full HIST as ResourceFull RCODE 2 with HREPEAT (9.3).
    #[arg(long)]
    repeat_history: bool,
    /// Repeated history of any period: the shortest pattern repeating over the last one or two
    /// full HIST registers is counted in ResourceFull RCODE 2 (9.3; implies --repeat-history).
    #[arg(long)]
    hist_patterns: bool,
    /// RepeatBranch for identical consecutive branch messages (7.11).
    #[arg(long)]
    repeat_branch: bool,
    /// Periodic synchronization (SYNC=2) every N messages, 0 for none [default: 524288, as
    /// `encode ntrace`]
    #[arg(long, value_name = "N")]
    sync_period: Option<u64>,
    /// Ownership messages (privilege) after every synchronization and on changes (7.1).
    #[arg(long)]
    ownership: bool,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ModeArg {
    /// Branch Trace Messaging.
    Btm,
    /// History Trace Messaging.
    Htm,
}

/// The E-Trace encoder's own options (`--to etrace`; the shared ones are the E-Trace group).
#[derive(clap::Args, Clone, Debug)]
struct EtraceEncodeOpts {
    /// Send a synchronisation packet at least every N packets.
    #[arg(long, value_name = "N")]
    resync: Option<u64>,
    /// Width of the ingress itype the records are made with (3 or 4).
    #[arg(long, value_name = "3|4", default_value_t = 4,
          value_parser = clap::value_parser!(u8).range(3..=4))]
    itype_width: u8,
}

/// Arguments of `rvtrace transcode`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct TranscodeArgs {
    /// The trace to re-encode (`-` for stdin).
    input: PathBuf,
    /// The program's ELF file(s).
    #[arg(long, value_name = "ELF", required_unless_present = "image")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    images: crate::trace_source::ImageArgs,
    /// The protocol of the output.
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    to: Protocol,
    /// The output trace (`-` for stdout); its sidecar OUT.meta goes next to it.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Show at most N decoder warnings.
    #[arg(long, default_value_t = report::DEFAULT_MAX_WARNINGS, value_name = "N")]
    max_warnings: u64,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
    #[command(flatten, next_help_heading = "N-Trace encoder options (--to ntrace)")]
    nenc: NtraceEncodeOpts,
    #[command(flatten, next_help_heading = "E-Trace encoder options (--to etrace)")]
    eenc: EtraceEncodeOpts,
}

/// Decoder losses as warnings, then the adapter.
struct Chain<'a, S: IngressSink> {
    adapter: FlowIngress<'a, S>,
    warnings: report::Warnings,
    losses: u64,
    /// N-Trace output: where its bytes go as they come.
    out: Option<Output>,
    write_error: Option<std::io::Error>,
}

impl<S: IngressSink> FlowSink for Chain<'_, S> {
    fn element(&mut self, e: &FlowElement) {
        if self.warnings.element(e).is_some() {
            self.losses += 1;
        }
        self.adapter.push(e);
    }

    fn stop_requested(&self) -> bool {
        self.write_error.is_some()
    }
}

/// Reads the whole input through `dec` into `chain`; `drain` takes the output bytes made so far.
fn run<S: IngressSink>(
    name: &str,
    head: &[u8],
    rest: impl Read,
    dec: &mut rvtrace_decode::Decoder,
    chain: &mut Chain<S>,
    mut drain: impl FnMut(&mut Chain<S>),
) -> Result<(), Failure> {
    let mut feed = |bytes: &[u8], chain: &mut Chain<S>| {
        dec.push(bytes, chain);
        drain(chain);
    };
    feed(head, chain);
    let mut rest = rest;
    let mut buf = vec![0u8; 1 << 16];
    while !chain.stop_requested() {
        match rest.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => feed(&buf[..n], chain),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::io(format_args!("reading {name}"), e)),
        }
    }
    dec.finish(chain);
    Ok(())
}

/// Notes on what was assumed.
fn conclude(name: &str, st: &AdaptStats) {
    if st.refused > 0 {
        warn!(
            "{name}: {} times the decoded path runs through what is no instruction of the program (a damaged trace?): written as lost trace",
            st.refused
        );
    }
    if st.assumed_causes > 0 {
        note!(
            "{name}: {} traps have no cause in the input (N-Trace does not carry it): written with cause 0",
            st.assumed_causes
        );
    }
    if st.assumed_privilege > 0 {
        note!(
            "{name}: {} instructions have no privilege in the input (N-Trace reports it only in Ownership messages, `encode ntrace --ownership`): M assumed",
            st.assumed_privilege
        );
    }
    if st.assumed_epcs > 0 {
        note!(
            "{name}: {} traps have no address in the input: taken after the instruction before them",
            st.assumed_epcs
        );
    }
    if st.gaps > 0 {
        warn!(
            "{name}: {} jumps in the input's flow that the program cannot make (written as the flow has them)",
            st.gaps
        );
    }
}

/// `rvtrace transcode`.
pub fn transcode(a: &TranscodeArgs) -> CmdResult {
    let name = report::name(&a.input);
    let side = rvtrace_decode::sidecar_path(&a.output);
    let mut outs = vec![("-o", a.output.as_path())];
    if !report::is_std(&a.output) {
        outs.push(("the sidecar", side.as_path()));
    }
    let mut ins: Vec<&Path> = vec![a.input.as_path()];
    ins.extend(a.elf.iter().map(|p| p.as_path()));
    ins.extend(a.images.image.iter().map(|s| s.path.as_path()));
    report::distinct(&ins, &outs)?;

    let (image, xlen) = crate::trace_source::load_program(&a.elf, &a.images)?;
    let xlen = xlen.ok_or_else(|| Failure::Usage("no --elf or --image given".into()))?;
    let isa = IsaConfig::new(xlen);

    let mut input = report::open_input(&a.input)?;
    let mut head = Vec::new();
    (&mut input)
        .take(1 << 16)
        .read_to_end(&mut head)
        .map_err(|e| Failure::io(format_args!("reading {name}"), e))?;
    let protocol = a.dec.protocol(&a.input, &head, head.len() < 1 << 16)?;
    if protocol == a.to {
        return Err(Failure::Usage(
            "--to names the protocol of the input: transcode converts N-Trace to E-Trace and back (`encode` sets another protocol's options)".into(),
        ));
    }
    let trace = a.dec.resolve_as(protocol, &a.input, &head, xlen)?;
    let input_time = trace.has_time();
    let mut dec = trace.decoder(&image);
    let warnings = report::Warnings::new(name.clone(), a.max_warnings);

    // Losses: the input's (and paths refused), and those said in the output (one for several
    // with no instruction between them).
    let (losses, kept, bytes) = match a.to {
        Protocol::Ntrace => {
            use rvtrace_ntrace::options::{CallStack, EncoderConfig, InputCaps, Mode, SyncUnit};
            let mut cfg = EncoderConfig::new(xlen);
            cfg.mode = match a.nenc.mode {
                ModeArg::Btm => Mode::Btm,
                ModeArg::Htm => Mode::Htm,
            };
            if let Some(n) = a.nenc.call_stack {
                cfg.call_stack = CallStack::Full { depth: n };
            }
            cfg.repeat_history = a.nenc.repeat_history || a.nenc.hist_patterns;
            cfg.hist_patterns = a.nenc.hist_patterns;
            cfg.repeat_branch = a.nenc.repeat_branch;
            if let Some(n) = a.nenc.sync_period {
                cfg.sync_period = (n != 0).then_some((SyncUnit::Messages, n));
            }
            cfg.ownership = a.nenc.ownership;
            cfg.timestamps = input_time;
            a.dec
                .ntrace_given()
                .apply_to_encoder(&mut cfg)
                .map_err(|e| Failure::Usage(e.to_string()))?;
            cfg.validate().map_err(|e| Failure::Usage(e.to_string()))?;
            let caps = InputCaps {
                itype_width: 4,
                sijump: true,
                time: input_time,
            };
            for w in cfg
                .check_input(caps)
                .map_err(|e| Failure::Usage(e.to_string()))?
            {
                warn!("{w}");
            }
            let out = Output::create(&a.output)?;
            let sink = NtraceOut {
                enc: rvtrace_ntrace::encoder::Encoder::new(cfg),
                bytes: Vec::with_capacity(1 << 16),
            };
            let mut chain = Chain {
                adapter: FlowIngress::new(&image, isa, 4, sink),
                warnings,
                losses: 0,
                out: Some(out),
                write_error: None,
            };
            let drain = |c: &mut Chain<NtraceOut>| {
                let bytes = &mut c.adapter.sink_mut().bytes;
                if c.write_error.is_none() {
                    if let Some(o) = c.out.as_mut() {
                        if let Err(e) = o.write_all(bytes) {
                            c.write_error = Some(e);
                        }
                    }
                }
                bytes.clear();
            };
            run(&name, &head, input, &mut dec, &mut chain, drain)?;
            chain.warnings.finish();
            let Chain {
                adapter,
                losses,
                out,
                write_error,
                ..
            } = chain;
            let mut out = out.expect("made above");
            if let Some(e) = write_error {
                return Err(out.fail(e));
            }
            let (mut sink, st) = adapter.finish();
            conclude(&name, &st);
            let es = sink.enc.finish(&mut sink.bytes);
            out.write_all(&sink.bytes).map_err(|e| out.fail(e))?;
            out.finish()?;
            if !report::is_std(&a.output) {
                let m = rvtrace_ntrace::meta::Meta::from_encoder(
                    &cfg,
                    Some(rvtrace_ntrace::insn::LinkRule::Spec),
                );
                let path = rvtrace_ntrace::meta::sidecar_path(&a.output);
                std::fs::write(&path, m.to_text())
                    .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
            }
            (losses + st.refused, st.losses, es.bytes)
        }
        Protocol::Etrace => {
            use rvtrace_etrace::config::Preset;
            use rvtrace_etrace::encoder::{Encoder, FrameWriter};
            let o = rvtrace_etrace::options::Options {
                resync: a.eenc.resync,
                itype_width: Some(a.eenc.itype_width),
                ..a.dec.etrace_given()
            };
            let cfg = o
                .config(xlen.bits() as u8, None)
                .map_err(|e| Failure::Usage(e.to_string()))?;
            if input_time && cfg.params.notime_p {
                note!(
                    "{name}: the input's time stamps are left out (give --timestamps to keep them)"
                );
            }
            let out = Output::create(&a.output)?;
            let enc = Encoder::new(&cfg, FrameWriter::new(out, &cfg))?;
            let sink = EtraceOut {
                enc,
                post_iss: (cfg.preset == Preset::Reference).then_some(&image),
                error: None,
            };
            let mut chain = Chain {
                adapter: FlowIngress::new(&image, isa, a.eenc.itype_width, sink),
                warnings,
                losses: 0,
                out: None,
                write_error: None,
            };
            run(&name, &head, input, &mut dec, &mut chain, |_| {})?;
            chain.warnings.finish();
            let losses = chain.losses;
            let (sink, st) = chain.adapter.finish();
            if let Some(e) = sink.error {
                return Err(Failure::Tool(format!("{}: {e}", report::name(&a.output))));
            }
            conclude(&name, &st);
            let w = sink.enc.finish()?;
            let bytes = w.bytes;
            w.into_inner().finish()?;
            if !report::is_std(&a.output) {
                o.for_sidecar(&cfg).write(&a.output)?;
            }
            (losses + st.refused, st.losses, bytes)
        }
    };
    say!(
        "{} instructions, {bytes} bytes written, {kept} losses kept",
        dec.stats().instructions
    );
    Ok(report::status(losses == 0))
}
