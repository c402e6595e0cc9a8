//! `rvtrace stats`: what a trace costs (bits per instruction with and without framing, the
//! message or packet mix, synchronisation spacing, losses). The counting is in the protocol
//! crates (`rvtrace_ntrace::stats`, `rvtrace_etrace::stats`); the report type in
//! `rvtrace_flow::stats`.

use crate::report::{self, CmdResult, Failure, Output};
use std::io::{Read, Write};
use std::path::PathBuf;

const HELP: &str = "\
The trace is decoded with --elf and the decoder options of its protocol (its sidecar TRACE.meta
gives those not named; the protocol is --protocol's, else the sidecar's, else the bytes') for the
instruction count; the figures:

  bits/instruction with framing: every byte of the trace (N-Trace: MSEO bits and idle bytes
    included; E-Trace: te_inst_raw or encapsulation headers included);
  without: N-Trace MDO bits (6 of every 8 bits of a message byte), E-Trace te_inst payload bits;
  per TCODE (N-Trace) or format.subformat (E-Trace): count, bits without and with framing;
  sync spacing: instructions and bytes between synchronisation messages (N-Trace
    ProgTraceSync, DirectBranchSync, IndirectBranchSync, IndirectBranchHistSync) or packets
    (E-Trace format 3 subformats 0-2), min/mean/max;
  losses (decoder), idle bytes, Error messages, null packets, framing errors.

Exit status: 0 success; 1 trace lost while decoding; 2 usage error; 125 an input cannot be read.";

/// Arguments of `rvtrace stats`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct StatsArgs {
    /// The trace (`-` for stdin).
    input: PathBuf,
    /// The program's ELF file(s).
    #[arg(long, value_name = "ELF", required_unless_present = "image")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    images: crate::trace_source::ImageArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
}

/// `rvtrace stats`.
pub fn stats(a: &StatsArgs) -> CmdResult {
    let program = crate::trace_source::load_system(&a.elf, &a.images)?;
    let xlen = program
        .xlen
        .ok_or_else(|| Failure::Usage("no --elf or --image given".into()))?;
    // The trace is read as it is decoded (memory stays flat in its size); its first 64 KiB
    // tell its kind (and the E-Trace framing).
    let name = report::name(&a.input);
    let mut input = report::open_input(&a.input)?;
    let mut head = Vec::new();
    (&mut input)
        .take(1 << 16)
        .read_to_end(&mut head)
        .map_err(|e| Failure::io(&name, e))?;
    let trace = a.dec.resolve(&a.input, &head, head.len() < 1 << 16, xlen)?;
    let whole = std::io::Cursor::new(&head).chain(input);
    // Files with a privilege or context: decoded through the address spaces, as `decode`.
    let s = match program.scoped_files() {
        Some(files) => {
            let spaces = trace
                .spaces(files)
                .map_err(|e| Failure::Tool(e.to_string()))?;
            trace.stats_read_in(&spaces, whole)
        }
        None => trace.stats_read(&program.image, whole),
    };
    let what = trace.payload_words();
    let s = s.map_err(|e| Failure::io(format_args!("reading {name}"), e))?;
    let text = if a.json { s.json() } else { s.text(what) };
    let mut out = Output::stdout();
    out.write_all(text.as_bytes()).map_err(|e| out.fail(e))?;
    out.finish()?;
    if s.losses > 0 {
        warn!(
            "{}: trace lost {} times while decoding (`rvtrace decode` says where)",
            report::name(&a.input),
            s.losses
        );
    }
    Ok(report::status(s.losses == 0))
}
