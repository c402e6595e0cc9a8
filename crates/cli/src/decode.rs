//! `rvtrace decode TRACE --elf PROG`: a trace of either protocol into the executed instruction
//! flow. The protocol and settings come from the decode layer (`rvtrace-decode`: `--protocol`,
//! the sidecar, the trace's bytes); `decode ntrace|etrace` name the protocol (the older
//! spelling). One command for both: the outputs, the summary, the hints after a loss.

use crate::parallel;
use crate::report::{self, CmdResult, Failure, Output, Warnings};
use rvtrace_decode::{Hint, Protocol};
use rvtrace_flow::{FlowElement, FlowSink, FlowText, LossReason, PcWriter};
use rvtrace_image::Image;
use std::io::Read;
use std::path::{Path, PathBuf};

const HELP: &str = "\
The trace's protocol is --protocol's, else its sidecar's (TRACE.meta, written by `encode`),
else its bytes' (N-Trace messages; E-Trace te_inst_raw; an encapsulated E-Trace needs its sidecar
or --protocol etrace). The settings the trace does not carry are the options', else the
sidecar's, else the defaults. `decode ntrace TRACE` and `decode etrace TRACE` name the protocol.

Without an output option (--pcs, --flow, --brstack, --text, --call-trace) or with --stats, the
summary is printed on stderr: bytes, messages or packets, instructions, losses, bytes skipped,
and bits per instruction (every byte of the trace, framing included; `rvtrace stats` splits
framing from payload).

Exit status: 0 success; 1 trace lost while decoding (the outputs hold the rest); 2 usage error;
125 an input cannot be read.";

/// `--pcs-format` of `decode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PcsFormat {
    /// One address per line, 0x + hex (as `rvtrace run --pcs` writes it).
    Text,
    /// The 8 bytes `RVTRPC64`, then each address as a u64, little-endian (`rvtrace compare`
    /// reads it; `numpy.fromfile(FILE, '<u8', offset=8)` too).
    Bin,
}

impl PcsFormat {
    /// The writer's format.
    pub(crate) fn flow(self) -> rvtrace_flow::PcFormat {
        match self {
            PcsFormat::Text => rvtrace_flow::PcFormat::Text,
            PcsFormat::Bin => rvtrace_flow::PcFormat::Bin,
        }
    }
}

/// Arguments of `rvtrace decode`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct DecodeArgs {
    /// The trace file (`-` for stdin). It is read as it is decoded, except stdin when it may be
    /// decoded more than once (N-Trace `--link-registers auto` without a sidecar, `--all-harts`):
    /// that is kept in memory.
    #[arg(required = true)]
    trace: Option<PathBuf>,
    /// The program: ELF file(s) with the traced code (repeatable). Default (E-Trace): the
    /// `object-files` of the --ucf file (relative to its directory), as the reference flow's
    /// decoder configuration names them.
    #[arg(long = "elf", value_name = "ELF")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    images: crate::trace_source::ImageArgs,
    /// Write every retired instruction address to FILE, one per line as 0x + hex (as
    /// `rvtrace run --pcs` does; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// The format of --pcs.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = PcsFormat::Text, requires = "pcs")]
    pcs_format: PcsFormat,
    /// Write the flow elements (ranges, traps, sync, loss, context, time) to FILE, one per line
    /// (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    flow: Option<PathBuf>,
    /// List the messages the decoder stepped over in the --flow output (`ignored at byte
    /// OFFSET: KIND: FIELDS`): reserved and vendor-defined messages and codes, which a decoder of
    /// the program flow ignores (N-Trace 6.1); each kind is also warned about once.
    #[arg(long, requires = "flow")]
    list_ignored: bool,
    /// Write the text of ITC prints to FILE (`-` for stdout; N-Trace `--dialect sifive`:
    /// DataAcquisition messages, SiFive's ITC stimulus writes): text prints of the print
    /// channel, "no load string" prints whose formats are the ELF's `#ident "N:format"`
    /// (`.comment`) strings, and `channel N value 0x...` for other writes.
    #[arg(long, value_name = "FILE")]
    itc_print: Option<PathBuf>,
    /// The ITC channel of text prints [default: the SiFive settings' print channel, else 0].
    #[arg(long, value_name = "N", requires = "itc_print",
          value_parser = clap::value_parser!(u32).range(0..32))]
    itc_channel: Option<u32>,
    /// Print the summary on stderr at the end (printed anyway without an output option).
    #[arg(long)]
    stats: bool,
    /// Print at most N loss warnings (the rest are counted at the end).
    #[arg(long, value_name = "N", default_value_t = report::DEFAULT_MAX_WARNINGS)]
    max_warnings: u64,
    /// Decode on N threads: the trace (read into memory) is cut at synchronization messages or
    /// packets and the chunks decoded in parallel; the output is the same as with one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: u64,
    /// Decode every hart of a trace of several (N-Trace messages with SRC fields, E-Trace
    /// packets with srcIDs: needs --src-bits or the sidecar's), each source's messages or
    /// packets as one hart's trace, on up to --jobs threads: `{hart}` in the paths of --pcs,
    /// --flow, --brstack, --text and --call-trace is replaced by the SRC or srcID (decimal), one
    /// file per hart; the summary has a line per hart.
    #[arg(long, conflicts_with = "id")]
    all_harts: bool,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
    #[command(flatten)]
    brstack: crate::brstack::BrstackDecodeArgs,
    #[command(flatten)]
    text: crate::text_out::TextArgs,
}

/// The trace, read 64 KiB at a time as it is decoded (memory stays flat in its size). Stdin
/// (`-`) is read as it is decoded too, unless the decode must read it more than once: then it is
/// kept ([`TraceInput::keep_all`]).
struct TraceInput {
    path: PathBuf,
    /// For stdin: the bytes read from it so far (its first 64 KiB, or all of it).
    stdin: Option<Vec<u8>>,
    /// Whether `stdin` holds all of stdin.
    all: bool,
}

impl TraceInput {
    fn open(path: &Path) -> Result<TraceInput, Failure> {
        // Stdin unbuffered here: its own buffer is the one the decode goes on reading.
        let stdin = report::is_std(path)
            .then(|| report::read_head(&mut std::io::stdin(), 1 << 16, "stdin"))
            .transpose()?;
        Ok(TraceInput {
            path: path.to_path_buf(),
            stdin,
            all: false,
        })
    }

    /// The first `n` bytes, `n` at most 64 KiB (fewer if the trace is shorter).
    fn head(&self, n: usize) -> Result<Vec<u8>, Failure> {
        if let Some(data) = &self.stdin {
            return Ok(data[..data.len().min(n)].to_vec());
        }
        let mut v = Vec::new();
        report::open_input(&self.path)?
            .take(n as u64)
            .read_to_end(&mut v)
            .map_err(|e| format!("{}: cannot read: {e}", self.path.display()))?;
        Ok(v)
    }

    /// Keep all of stdin in memory (a decode that may read it more than once).
    fn keep_all(&mut self) -> Result<(), Failure> {
        if let (Some(data), false) = (&mut self.stdin, self.all) {
            std::io::stdin()
                .read_to_end(data)
                .map_err(|e| Failure::io("reading stdin", e))?;
            self.all = true;
        }
        Ok(())
    }

    /// The trace from its start (with progress on stderr when reading a file).
    fn reader(&self) -> Result<Box<dyn Read + '_>, Failure> {
        Ok(match &self.stdin {
            Some(data) if self.all => Box::new(&data[..]),
            Some(data) => Box::new((&data[..]).chain(std::io::stdin())),
            None => Box::new(report::open_input_progress(&self.path, "decode")?),
        })
    }

    /// All of the trace in memory.
    fn read_all(&mut self) -> Result<Vec<u8>, Failure> {
        match &self.stdin {
            Some(_) => {
                self.keep_all()?;
                Ok(self.stdin.clone().unwrap_or_default())
            }
            None => report::read_input(&self.path),
        }
    }

    /// The trace as the per-hart decodes read it (again for each hart).
    fn harts_trace(&self) -> crate::harts::Trace<'_> {
        match &self.stdin {
            Some(data) => crate::harts::Trace::Memory(data),
            None => crate::harts::Trace::File(&self.path),
        }
    }
}

/// The summary line of a decode: the decoder's counts and bits per instruction (every byte).
fn summary(trace: &rvtrace_decode::Trace, st: &rvtrace_flow::DecodeStats) -> String {
    let bpi = crate::report::per_instruction(st.bytes * 8, st.instructions);
    format!(
        "{} bytes, {} {}s, {} instructions, {} errors, {} bytes skipped, {bpi:.3} bits/instruction",
        st.bytes,
        st.messages,
        trace.unit_name(),
        st.instructions,
        st.losses,
        st.skipped_bytes
    )
}

/// `rvtrace decode` (`forced`: the protocol `decode ntrace|etrace` names).
pub fn decode(a: &DecodeArgs, forced: Option<Protocol>) -> CmdResult {
    let Some(t) = &a.trace else {
        return Err(Failure::Usage(
            "give the trace (`rvtrace decode TRACE --elf PROG`)".into(),
        ));
    };
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    if let Some(p) = &a.pcs {
        outputs.push(("--pcs", p));
    }
    if let Some(p) = &a.flow {
        outputs.push(("--flow", p));
    }
    if let Some(p) = &a.itc_print {
        outputs.push(("--itc-print", p));
    }
    outputs.extend(crate::brstack::decode_outputs(&a.brstack));
    outputs.extend(a.text.outputs());
    crate::brstack::check_decode(&a.brstack)?;
    let mut dec = a.dec.clone();
    dec.opts.protocol = forced.or(dec.opts.protocol);
    let mut input = TraceInput::open(t)?;
    // The first bytes: what kind of file this is, its protocol, framing, and what the hints
    // look at.
    let head = input.head(1 << 16)?;
    let protocol = dec.protocol(t, &head, head.len() < 1 << 16)?;
    let side = (!report::is_std(t)).then_some(t.as_path());
    let mut elfs = a.elf.clone();
    // The --ucf's object-files are E-Trace's (an N-Trace sidecar is no E-Trace one).
    if elfs.is_empty() && protocol == Protocol::Etrace {
        elfs =
            rvtrace_decode::ucf_programs(side, &dec.opts).map_err(crate::trace_source::failure)?;
    }
    let mut images = a.images.clone();
    if elfs.is_empty() && images.image.is_empty() && images.sysroot.is_none() {
        // A SiFive settings file's `elf` or `image` (a raw binary at an address), relative to
        // the file (SiFive's decoder runs where it is), its `archsize` the width.
        let settings = dec
            .opts
            .sifive_settings()
            .map_err(crate::trace_source::failure)?;
        if let (Some(s), Some(file)) = (settings, dec.opts.sifive_settings.as_deref()) {
            let dir = file.parent().unwrap_or(Path::new(""));
            // `map`, `vdso` and `kmempath`: a process's files at their addresses, found beside
            // the settings file; the kernel's pages. Each process in its own address space.
            for (pid, map) in &s.maps {
                images.image.push(rvtrace_image::ImageSpec {
                    path: dir.join(map),
                    at: None,
                    scope: rvtrace_image::space::Scope {
                        privilege: None,
                        context: Some(*pid),
                    },
                    kind: rvtrace_image::SpecKind::Maps,
                });
            }
            if !s.maps.is_empty() {
                images.sysroot = Some(dir.to_path_buf());
                images.vdso = s.vdso.map(|v| dir.join(v));
            }
            if let Some(k) = s.kmempath {
                images.image.push(rvtrace_image::ImageSpec {
                    path: dir.join(k),
                    at: None,
                    scope: Default::default(),
                    kind: rvtrace_image::SpecKind::Pages,
                });
            }
            images.xlen = images.xlen.or(s.archsize.map(|a| a as u8));
            if let Some(elf) = s.elf {
                elfs.push(dir.join(elf));
            } else if let Some((raw, at)) = s.image {
                images.image.push(rvtrace_image::ImageSpec {
                    path: dir.join(raw),
                    at: Some(at),
                    scope: Default::default(),
                    kind: Default::default(),
                });
                images.xlen = images.xlen.or(s.archsize.map(|a| a as u8));
            }
        }
    }
    if elfs.is_empty() && images.image.is_empty() {
        return Err(Failure::Usage(match protocol {
            Protocol::Ntrace => "no program: give --elf or --image".into(),
            Protocol::Etrace => {
                "no program: give --elf or --image (or a --ucf naming object-files)".into()
            }
        }));
    }
    let mut inputs: Vec<&Path> = vec![t];
    inputs.extend(elfs.iter().map(PathBuf::as_path));
    inputs.extend(images.image.iter().map(|s| s.path.as_path()));
    report::distinct(&inputs, &outputs)?;
    let program = crate::trace_source::load_system(&elfs, &images)?;
    let xlen = program.xlen.unwrap_or(rvtrace_isa::Xlen::Rv64);
    let mut trace = dec.resolve_as(protocol, t, &head, xlen)?;
    // Files with a privilege or context: the decoder switches address spaces (issue 31).
    let spaces = match program.scoped_files() {
        Some(files) => Some(
            trace
                .spaces(files)
                .map_err(|e| Failure::Tool(e.to_string()))?,
        ),
        None => None,
    };
    if spaces.is_some() && !a.text.outputs().is_empty() {
        return Err(Failure::Usage(
            "--text and --call-trace name code of one address space: with priv= or ctx= \
             --image files, use `rvtrace text` (and `text --call-trace`)"
                .into(),
        ));
    }
    let image = program.image;
    for w in trace.support_warnings(&report::name(t), &head) {
        warn!("{w}");
    }
    // --all-harts: the harts' sources, and the first one's messages for the link rule's search.
    let mut harts = None;
    if a.all_harts {
        if trace.src_bits() == 0 {
            return Err(Failure::Usage(format!(
                "--all-harts needs --src-bits (the width of the {} field)",
                match protocol {
                    Protocol::Ntrace => "messages' SRC",
                    Protocol::Etrace => "packets' srcID",
                }
            )));
        }
        input.keep_all()?;
        let srcs = trace
            .sources(input.reader()?)
            .map_err(|e| format!("{}: cannot read: {e}", t.display()))?;
        if let rvtrace_decode::Config::Ntrace { cfg, .. } = &mut trace.config {
            cfg.src = srcs.first().copied();
        }
        harts = Some(srcs);
    }
    if trace.link_unknown() {
        input.keep_all()?;
        let input = &input;
        let open = || -> std::io::Result<Box<dyn Read + '_>> {
            Ok(match &input.stdin {
                Some(data) => Box::new(&data[..]),
                None => Box::new(std::fs::File::open(&input.path)?),
            })
        };
        let found = trace
            .find_link(&image, open)
            .map_err(|e| format!("{}: cannot read: {e}", t.display()))?;
        if let Some(link) = found.filter(|&l| l != rvtrace_ntrace::insn::LinkRule::Spec) {
            note!(
                "{}: decoded with --link-registers {}",
                t.display(),
                rvtrace_ntrace::meta::link_name(link)
            );
        }
    }
    let show_summary = a.stats || outputs.is_empty();
    if let Some(srcs) = harts {
        return decode_harts(
            a,
            t,
            (&image, spaces.as_ref()),
            &trace,
            &input,
            (&srcs, &elfs),
            &inputs,
            show_summary,
        );
    }
    let mut brstack = crate::brstack::FlowOut::new(&a.brstack, &image, xlen)?;
    let syms = a.text.symbols(&elfs, &images.image)?;
    let mut text = crate::text_out::TextOut::new(&a.text, &image, syms.as_ref(), xlen)?;
    let mut itc = match &a.itc_print {
        Some(p) => Some(ItcOut::new(a, &dec, &elfs, p)?),
        None => None,
    };
    let mut warnings = Warnings::new(t.display(), a.max_warnings);
    let mut first_loss: Option<LossReason> = None;
    let mut overflow = false;
    // Whether `other` wants ranges too (most elements are ranges: without it, they skip it).
    let other_ranges = brstack.is_some() || !text.is_off();
    // The losses (warnings) and the outputs that keep state across elements.
    let mut other = |e: &FlowElement| {
        // Printed as it happens (memory stays flat however many there are).
        if let Some(reason) = warnings.element(e) {
            overflow |= matches!(reason, LossReason::Overflow(_));
            first_loss.get_or_insert_with(|| reason.clone());
        }
        if let Some(b) = brstack.as_mut() {
            b.element(e);
        }
        if let Some(i) = itc.as_mut() {
            i.element(e);
        }
        text.element(e);
    };
    // Address spaces need the flow from the start (a chunk would not know its space).
    let (st, pcs_out, flow_out) = if a.jobs > 1 && spaces.is_none() {
        let data = input.read_all()?;
        let mut outs =
            parallel::Outputs::create(a.pcs.as_deref(), a.pcs_format.flow(), a.flow.as_deref())?;
        let keep =
            !crate::brstack::decode_outputs(&a.brstack).is_empty() || !a.text.outputs().is_empty();
        let parts = outs.parts(&image, keep, a.list_ignored);
        let st = trace
            .decode_parallel_to(
                &image,
                &data,
                rvtrace_flow::chunk::chunk_bytes(),
                a.jobs as usize,
                || parts.part(),
                |p| outs.write(p, &parts, &mut other),
            )
            .map_err(|e| format!("{}: {e}", t.display()))?;
        let (p, f) = outs.finish();
        (st, p, f)
    } else {
        let mut pcs = match (&a.pcs, &spaces) {
            (Some(p), Some(spaces)) => Some(PcWriter::with_spaces(
                spaces,
                Output::create(p)?,
                a.pcs_format.flow(),
            )),
            (Some(p), None) => Some(PcWriter::with_format(
                &image,
                Output::create(p)?,
                a.pcs_format.flow(),
            )),
            (None, _) => None,
        };
        let mut flow = match &a.flow {
            Some(p) => Some(
                match &spaces {
                    Some(spaces) => FlowText::with_spaces(spaces, Output::create(p)?),
                    None => FlowText::new(&image, Output::create(p)?),
                }
                .with_ignored(a.list_ignored),
            ),
            None => None,
        };
        let mut sink = crate::text_out::DecodeSink {
            pcs: pcs.as_mut(),
            flow: flow.as_mut(),
            other: &mut other,
            other_ranges,
        };
        let mut d = match &spaces {
            Some(spaces) => trace.decoder_in(spaces, None),
            None => trace.decoder(&image),
        };
        let st = rvtrace_flow::decode_read(&mut d, input.reader()?, &mut sink)
            .map_err(|e| format!("{}: cannot read: {e}", t.display()))?;
        (st, pcs.map(PcWriter::finish), flow.map(FlowText::finish))
    };
    warnings.finish();
    debug_assert_eq!(warnings.total(), st.losses, "one count of losses");
    for (out, p) in [(pcs_out, &a.pcs), (flow_out, &a.flow)] {
        if let (Some(out), Some(p)) = (out, p) {
            out.map_err(|e| Failure::io(format_args!("writing {}", p.display()), e))?
                .finish()?;
        }
    }
    if let Some(b) = brstack {
        b.finish()?;
    }
    if let Some(i) = itc {
        i.finish()?;
    }
    text.finish()?;
    if show_summary {
        say!("{}", summary(&trace, &st));
    }
    if let Some(first) = first_loss.filter(|_| st.losses > 0) {
        match trace.loss_hint(&image, spaces.as_ref(), side, &head, &first, overflow) {
            Some(Hint::Warning(w)) => warn!("{w}"),
            Some(Hint::Note(n)) => note!("{n}"),
            None => {}
        }
    }
    Ok(report::status(st.losses == 0))
}

/// `decode --itc-print`: the ITC prints of the DataAcquisition writes, as text.
struct ItcOut {
    printer: rvtrace_ntrace::sifive::ItcPrinter,
    out: Output,
    lines: Vec<String>,
    err: Option<std::io::Error>,
}

impl ItcOut {
    fn new(
        a: &DecodeArgs,
        dec: &crate::trace_source::TraceDecodeOpts,
        elfs: &[PathBuf],
        path: &Path,
    ) -> Result<ItcOut, Failure> {
        let settings = dec
            .opts
            .sifive_settings()
            .map_err(crate::trace_source::failure)?;
        let channel = a
            .itc_channel
            .or(settings.and_then(|s| s.itc_channel))
            .unwrap_or(0);
        let mut nls = Vec::new();
        for elf in elfs {
            let bytes = report::read_input(elf)?;
            if let Some(c) = rvtrace_image::elf_section(&bytes, ".comment") {
                nls.extend(rvtrace_ntrace::sifive::nls_formats(c));
            }
        }
        Ok(ItcOut {
            printer: rvtrace_ntrace::sifive::ItcPrinter::new(channel, nls),
            out: Output::create(path)?,
            lines: Vec::new(),
            err: None,
        })
    }

    fn element(&mut self, e: &FlowElement) {
        if let FlowElement::Event {
            kind: rvtrace_flow::EventKind::Write { tag },
            value: Some(v),
            ..
        } = e
        {
            self.printer.write(*tag, *v, &mut self.lines);
            self.write_lines();
        }
    }

    fn write_lines(&mut self) {
        use std::io::Write;
        for l in self.lines.drain(..) {
            if self.err.is_none() {
                if let Err(e) = writeln!(self.out, "{l}") {
                    self.err = Some(e);
                }
            }
        }
    }

    fn finish(mut self) -> Result<(), Failure> {
        if let Some(l) = self.printer.finish() {
            self.lines.push(l);
        }
        self.write_lines();
        if let Some(e) = self.err.take() {
            return Err(self.out.fail(e));
        }
        self.out.finish()
    }
}

/// `decode --all-harts`: each source in `srcs` decoded on its own (the decoder skips the other
/// sources' messages or packets, N-Trace 6.2, E-Trace encapsulation srcID), to its own output
/// files, the harts on up to `--jobs` threads ([`crate::harts`]); warnings name the source, the
/// summary has a line per hart.
#[allow(clippy::too_many_arguments)]
fn decode_harts(
    a: &DecodeArgs,
    t: &Path,
    (image, spaces): (&Image, Option<&rvtrace_image::space::Spaces>),
    trace: &rvtrace_decode::Trace,
    input: &TraceInput,
    (srcs, elfs): (&[u16], &[PathBuf]),
    inputs: &[&Path],
    show_summary: bool,
) -> CmdResult {
    let label = trace.protocol.src_label();
    let outs = crate::harts::HartOutputs {
        trace: t,
        label,
        pcs: a.pcs.as_deref().map(|p| (p, a.pcs_format.flow())),
        flow: a.flow.as_deref(),
        list_ignored: a.list_ignored,
        brstack: &a.brstack,
        text: (&a.text, elfs, &a.images.image),
        xlen: trace.isa().xlen,
        max_warnings: a.max_warnings,
    };
    outs.check(srcs, inputs)?;
    let decoders = trace.harts(image);
    let table = outs.table(image);
    let results = crate::harts::run(srcs, a.jobs, |src| {
        let dec = match spaces {
            Some(spaces) => trace.decoder_in(spaces, Some(src)),
            None => decoders.decoder(src),
        };
        outs.decode((image, spaces), &table, src, dec, input.harts_trace())
    });
    let mut ok = true;
    for (src, r) in srcs.iter().zip(results) {
        let (st, _) = r?;
        ok &= st.losses == 0;
        if show_summary {
            say!("{label} {src}: {}", summary(trace, &st));
        }
    }
    Ok(report::status(ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_every_byte() {
        let trace = rvtrace_decode::resolve_as(
            Protocol::Ntrace,
            None,
            &[],
            &rvtrace_decode::DecodeOptions::default(),
            rvtrace_isa::Xlen::Rv64,
        )
        .unwrap();
        let st = rvtrace_flow::DecodeStats {
            bytes: 100,
            messages: 7,
            instructions: 400,
            losses: 1,
            skipped_bytes: 3,
            ignored: 0,
        };
        assert_eq!(
            summary(&trace, &st),
            "100 bytes, 7 messages, 400 instructions, 1 errors, 3 bytes skipped, 2.000 bits/instruction"
        );
    }
}
