//! `rvtrace dump TRACE`: a trace of either protocol message by message (N-Trace) or packet by
//! packet (E-Trace), field by field, each line with the byte offset it comes from. The
//! protocol and the settings the trace does not carry come from the decode layer (as `decode`
//! finds them); `dump ntrace|etrace` name the protocol (the older spelling).

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_decode::{Config, Protocol};
use rvtrace_isa::Xlen;
use std::path::PathBuf;

const HELP: &str = "\
The trace's protocol is --protocol's, else its sidecar's (TRACE.meta, written by `encode`), else
its bytes'. N-Trace: one line per byte as NexRv's -dump prints it (TCODE and fields at the byte
where each ends), after the byte's offset (--nexrv: NexRv's text exactly). E-Trace: one line per
packet, its offset, format and fields, and the address it gives (--csv: the reference flow's
te_inst CSV). With --elf, every address a message or packet gives is resolved (N-Trace: U-ADDR
XOR the last address, as --lastip; E-Trace: a differential address added to the last) and named
by the program's symbols, as objdump names them: `=> 0x80000010 <main+0x10>`. On stderr: bytes,
messages or packets, errors.

Exit status: 0 success; 1 the trace has errors (malformed or cut messages or packets; the dump
shows where); 2 usage error; 125 the trace cannot be read.";

/// Arguments of `rvtrace dump`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct DumpArgs {
    /// The trace file (`-` for stdin).
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// E-Trace: the address width in bits. Default: from --scf, the sidecar (FILE.meta) or
    /// --elf; else 64, with a warning.
    #[arg(long, value_name = "32|64", value_parser = crate::etrace::parse_xlen)]
    xlen: Option<u8>,
    /// The program's ELF file: resolved addresses are shown with its symbols (N-Trace: implies
    /// --lastip); E-Trace: the address width when nothing else gives it.
    #[arg(long, value_name = "ELF")]
    elf: Option<PathBuf>,
    /// E-Trace: print packets as the reference flow's te_inst CSV instead.
    #[arg(long)]
    csv: bool,
    /// N-Trace: show the absolute address next to every F-ADDR/U-ADDR field (U-ADDR XOR the
    /// last address, N-Trace 8.1), as Intel ptdump's --lastip.
    #[arg(long)]
    lastip: bool,
    /// N-Trace: NexRv's `-dump` text exactly, without the byte offset that starts every line.
    #[arg(long, conflicts_with_all = ["lastip", "elf"])]
    nexrv: bool,
    /// The counts on stderr at the end (printed anyway; kept for scripts that give it).
    #[arg(long, hide = true)]
    stats: bool,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
}

/// `rvtrace dump` (`forced`: the protocol `dump ntrace|etrace` names).
pub fn dump(a: &DumpArgs, forced: Option<Protocol>) -> CmdResult {
    let Some(file) = &a.file else {
        return Err(Failure::Usage(
            "give the trace (`rvtrace dump TRACE`)".into(),
        ));
    };
    // Read as it is dumped (memory flat in the trace's size); the first 64 KiB tell its kind,
    // protocol and framing.
    let name = report::name(file);
    let mut input = report::open_input(file)?;
    let head = report::read_head(&mut input, 1 << 16, &name)?;
    let mut dec = a.dec.clone();
    dec.opts.protocol = forced.or(dec.opts.protocol);
    let protocol = dec.protocol(file, &head, head.len() < 1 << 16)?;
    let (image, elf_xlen) = match &a.elf {
        Some(e) => {
            let (image, xlen) = crate::trace_source::load_program(
                std::slice::from_ref(e),
                &crate::trace_source::ImageArgs::default(),
            )?;
            (Some(image), xlen)
        }
        None => (None, None),
    };
    let side = (!report::is_std(file) && !dec.opts.no_meta).then_some(file.as_path());
    let xlen = a
        .xlen
        .map(|x| if x == 32 { Xlen::Rv32 } else { Xlen::Rv64 })
        .or(side.and_then(|t| rvtrace_decode::sidecar_xlen(t, protocol)))
        .or(elf_xlen);
    let known = xlen.is_some() || dec.opts.etrace.scf.is_some();
    let trace = dec.resolve_as(protocol, file, &head, xlen.unwrap_or(Xlen::Rv64))?;
    let mut out = Output::stdout();
    let read_failed = std::cell::Cell::new(false);
    let whole = crate::ntrace::NoteReadError {
        inner: std::io::Read::chain(&head[..], input),
        failed: &read_failed,
    };
    let failed = |out: &Output, e| crate::ntrace::dump_failure(&name, read_failed.get(), out, e);
    let (summary, errors) = match &trace.config {
        Config::Ntrace { cfg, .. } => {
            let opts = rvtrace_ntrace::dump::DumpOptions {
                lastip: a.lastip || image.is_some(),
                image: image.as_ref(),
                extend_addr_msb: cfg.extend_addr_msb.then_some(cfg.isa.xlen),
                offsets: !a.nexrv,
            };
            let st = rvtrace_ntrace::dump::dump_read(whole, &cfg.codec, &opts, &mut out)
                .map_err(|e| failed(&out, e))?;
            (
                format!(
                    "{} bytes, {} idles, {} messages, {} errors",
                    st.bytes, st.idles, st.messages, st.errors
                ),
                st.errors,
            )
        }
        Config::Etrace { cfg, .. } => {
            if !known && !a.csv {
                warn!("{}: address width unknown (no sidecar, --xlen, --scf or --elf): assuming 64 bits", file.display());
            }
            let opts = rvtrace_etrace::dump::DumpOptions {
                csv: a.csv,
                image: image.as_ref(),
            };
            let st = rvtrace_etrace::dump::dump_read(whole, cfg, &opts, &mut out)
                .map_err(|e| failed(&out, e))?;
            (
                format!(
                    "{} packets, {} errors, {} bytes ({})",
                    st.packets,
                    st.errors,
                    st.bytes,
                    match cfg.framing {
                        rvtrace_etrace::config::Framing::Raw => "te_inst_raw",
                        rvtrace_etrace::config::Framing::Encap(_) => "encapsulated",
                    }
                ),
                st.errors,
            )
        }
    };
    out.finish()?;
    if !a.csv {
        say!("{summary}");
    }
    Ok(report::status(errors == 0))
}
