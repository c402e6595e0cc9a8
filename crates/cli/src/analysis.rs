//! `rvtrace profile|coverage|autofdo`: what people look at after a trace, from any source (an
//! ingress file, or an N-Trace or E-Trace stream decoded with the program). The work is done by
//! `rvtrace-analysis`; this wires inputs and outputs.

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_analysis::export::{self, Unit};
use rvtrace_analysis::{
    autofdo, CallTrace, Counter, Coverage, Profiler, SpaceCounter, Symbols, System, TextTrace,
};
use rvtrace_decode::ingress::{self as source, SourceError, SourceStats};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::space::Scope;
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const INPUT_HELP: &str = "\
INPUT is a binary ingress file (`rvtrace run --ingress`, recognised by its magic bytes), or a
trace decoded with --elf and the decoder options below (as `rvtrace decode` takes them; a
trace's sidecar TRACE.meta, written by `encode`, gives those not named). A trace's protocol is
--protocol's, else its sidecar's, else its bytes' (N-Trace messages, E-Trace te_inst_raw).
`-` reads stdin. Counts are exact: every retired instruction of the trace.

Exit status: 0 success; 1 trace lost while decoding or a damaged ingress file (the outputs hold
what came before); 2 usage error; 125 an input cannot be read.";

/// The input every analysis command reads.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("program").required(true).multiple(true).args(["elf", "image"])))]
pub struct InputArgs {
    /// The ingress file or trace (`-` for stdin).
    pub(crate) input: PathBuf,
    /// The program's ELF file: symbols, DWARF line tables, instructions (or give the code with
    /// --image alone).
    #[arg(long, value_name = "ELF")]
    pub(crate) elf: Option<PathBuf>,
    /// More code the trace ran (firmware, libraries): its instructions, and its functions named
    /// (no line tables).
    #[command(flatten)]
    pub(crate) images: crate::trace_source::ImageArgs,
    /// Show at most N decoder warnings.
    #[arg(long, default_value_t = report::DEFAULT_MAX_WARNINGS, value_name = "N")]
    max_warnings: u64,
    #[command(flatten)]
    dec: crate::trace_source::TraceDecodeOpts,
    /// The command's own options, after the decoders', under a heading of their own (not the
    /// last decoder heading, which would otherwise go on).
    #[command(flatten, next_help_heading = "Output options")]
    _heading: OutputHeading,
}

/// No options: only the help heading of what follows [`InputArgs`] (see there).
#[derive(clap::Args)]
pub(crate) struct OutputHeading {}

/// `--weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WeightArg {
    /// Retired instructions.
    Instructions,
    /// The trace's time (ingress `time`, N-Trace/E-Trace timestamps).
    Time,
}

/// Arguments of `rvtrace profile`.
#[derive(clap::Args)]
#[command(after_help = INPUT_HELP)]
pub struct ProfileArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write folded stacks (`main;f;g 123`, as flamegraph.pl and inferno read them).
    #[arg(long, value_name = "FILE")]
    folded: Option<PathBuf>,
    /// Write a flame graph SVG.
    #[arg(long, value_name = "FILE")]
    flamegraph: Option<PathBuf>,
    /// Write a Firefox Profiler profile (JSON; open it at the profiler's web page with "Load a
    /// profile from file"): the run as a timeline (in the trace's time, else in instructions
    /// retired; at most 100,000 samples, each weighing what it stands for), frames with function,
    /// file:line and address.
    #[arg(long, value_name = "FILE")]
    firefox: Option<PathBuf>,
    /// Write the samples as `perf script` text with call chains (for `inferno-collapse-perf`,
    /// or with --perf-script-period for stackcollapse-perf.pl): one sample per call stack, its
    /// period the stack's weight.
    #[arg(long, value_name = "FILE")]
    perf_script: Option<PathBuf>,
    /// Split each stack of --perf-script into samples of period N (and one of the rest): for
    /// collapsers that count samples and ignore periods (stackcollapse-perf.pl).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "perf_script")]
    perf_script_period: u64,
    /// What the folded stacks, flame graph and Firefox profile weigh.
    #[arg(long, value_enum, default_value_t = WeightArg::Instructions)]
    weight: WeightArg,
    /// Functions in the flat profile (and 4x as many call-graph edges) on stdout (on stderr
    /// when an output file is stdout).
    #[arg(long, default_value_t = 25, value_name = "N")]
    top: usize,
    /// Fold inlined functions into the function they were inlined into (by default, when the
    /// ELF has DWARF, they are frames of their own, as `perf report --inline` shows them).
    #[arg(long)]
    no_inline: bool,
    /// One profile per process or per hart instead of one of the whole input. `process`: per
    /// address space (`--image FILE,priv=P,ctx=N`: the files the decoder walked there, named
    /// by them, as `ctx=1 user.elf (U)` or `kernel.elf`; without scoped files, one); each
    /// instruction counts in the space it ran in. `hart`: per hart of a trace of several (as
    /// `decode --all-harts` reads it: --src-bits or the sidecar). The folded stacks, flame
    /// graph and `perf script` samples begin with the process or hart (as perf folds a
    /// sample's command first).
    #[arg(long, value_enum, value_name = "process|hart")]
    by: Option<ByArg>,
}

/// `profile --by`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ByArg {
    /// Per address space.
    Process,
    /// Per hart.
    Hart,
}

/// Arguments of `rvtrace coverage`.
#[derive(clap::Args)]
#[command(after_help = INPUT_HELP)]
pub struct CoverageArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write the lcov tracefile (line, function and branch coverage; the ELF needs DWARF).
    #[arg(long, value_name = "FILE")]
    lcov: PathBuf,
    /// The test name of the tracefile (`TN:`).
    #[arg(long, default_value = "rvtrace", value_name = "NAME")]
    test_name: String,
    /// Rename source files that start with OLD to start with NEW instead (the program was built
    /// elsewhere, or from another directory); repeatable, the first match applies.
    #[arg(long, value_name = "OLD=NEW", value_parser = source_prefix)]
    source_prefix: Vec<(String, String)>,
    /// Keep only source files that match GLOB (`*` also matches `/`), after --source-prefix;
    /// repeatable.
    #[arg(long, value_name = "GLOB", value_parser = glob_pattern)]
    include: Vec<glob::Pattern>,
    /// Leave out source files that match GLOB, after --source-prefix; repeatable.
    #[arg(long, value_name = "GLOB", value_parser = glob_pattern)]
    exclude: Vec<glob::Pattern>,
    /// Keep source files that do not exist here. By default they are left out, so that genhtml
    /// (which reads every source file named) takes the tracefile as is: the C library's and
    /// libgcc's sources are named by the paths they were built at. Relative names are looked
    /// up from the current directory, as genhtml run here would.
    #[arg(long)]
    all_sources: bool,
}

/// `OLD=NEW` of `--source-prefix`.
fn source_prefix(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((old, new)) if !old.is_empty() => Ok((old.to_string(), new.to_string())),
        _ => Err("expected OLD=NEW with a non-empty OLD".into()),
    }
}

/// A `--include`/`--exclude` glob.
fn glob_pattern(v: &str) -> Result<glob::Pattern, String> {
    glob::Pattern::new(v).map_err(|e| e.to_string())
}

/// Arguments of `rvtrace autofdo`.
#[derive(clap::Args)]
#[command(after_help = INPUT_HELP)]
pub struct AutofdoArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write the profile to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// The profile's format (`--format` is E-Trace's file framing, as in `decode`).
    #[arg(long, value_enum, default_value_t = AutofdoFormat::Autofdo)]
    profile_format: AutofdoFormat,
}

/// `autofdo --profile-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AutofdoFormat {
    /// AutoFDO's text sample format, for `create_llvm_prof --profiler=text --profile=FILE`
    /// (its DWARF reader needs DWARF 4 in every unit before the program's).
    Autofdo,
    /// LLVM's text sample profile (line offsets, inlined calls from the DWARF), for
    /// `llvm-profdata merge --sample` and `clang -fprofile-sample-use=FILE`; any DWARF version.
    Llvm,
}

/// Arguments of `rvtrace text`.
#[derive(clap::Args)]
#[command(after_help = TEXT_HELP)]
pub struct TextArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write the call trace instead: calls and returns indented by call depth.
    #[arg(long)]
    call_trace: bool,
    /// No source lines (shown by default when the ELF has DWARF line tables).
    #[arg(long)]
    no_lines: bool,
    /// Write to FILE (`-`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    output: PathBuf,
    /// A trace of several harts (as `decode --all-harts` reads it: --src-bits or the
    /// sidecar): one timeline of every hart, each line `NS ns hart H: ...`, merged by the
    /// harts' time stamps (the last `time` before the line; ties to the lower hart, as the
    /// funnel orders them) and shown in nanoseconds of the timer (--timebase-hz). Lines before
    /// a hart's first time stamp come first, at 0. The text is held in memory: for a window of
    /// a trace.
    #[arg(long, conflicts_with = "call_trace")]
    all_harts: bool,
    /// The frequency of the timer the trace's time stamps count (the device tree's
    /// `/cpus/timebase-frequency`). Default: --dtb's, else 10000000 (QEMU virt's and `rvtrace
    /// run`'s).
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..))]
    timebase_hz: Option<u64>,
    /// A device tree blob (`rvtrace run --dump-dtb`, QEMU's `dumpdtb`) to read the timer's
    /// frequency from (`/cpus/timebase-frequency`).
    #[arg(long, value_name = "FILE", conflicts_with = "timebase_hz")]
    dtb: Option<PathBuf>,
}

const TEXT_HELP: &str = "\
The instruction trace has one line per retired instruction: its address, <symbol+offset> and
its disassembly as GNU objdump 2.40 prints it, with the flow's traps, syncs, losses, context and
time between them (worded as `decode --flow` words them). When the ELF has DWARF, a line
indented by two spaces gives the source position whenever it changes: `FILE:LINE`, and for
inlined code the function and the calls it was inlined into, as `addr2line -i -f` lists them
(`  f.c:13 square (inlined into sum at f.c:21, into main at f.c:55)`); --no-lines leaves them out. The call trace (--call-trace) has one
line per call, tail call, trap, return and trap return: the instructions retired by then, what
happened, and the function entered (for a return: the function left), indented by four spaces
per call level as `perf script --call-trace` indents; its moves are those of the shadow stack
`rvtrace profile` builds its call graph from.

INPUT is a binary ingress file (`rvtrace run --ingress`, recognised by its magic bytes), or a
trace decoded with --elf and the decoder options (as `rvtrace decode` takes them; a trace's
sidecar TRACE.meta gives those not named; its protocol is --protocol's, else the sidecar's, else
its bytes'). `-` reads stdin.

Exit status: 0 success; 1 trace lost while decoding or a damaged ingress file (the output holds
what came before); 2 usage error; 125 an input cannot be read.";

/// The program, read once.
pub(crate) struct Program {
    /// The files without a privilege or context.
    pub(crate) image: Image,
    /// Their symbols: `--elf`'s, and the `--image` files' at their load bias.
    pub(crate) syms: Symbols,
    pub(crate) isa: IsaConfig,
    /// Files with a scope and the symbols of each, until the trace says how its decoder walks
    /// them ([`Program::enter_spaces`]).
    scoped: Option<ScopedFiles>,
    /// The address spaces, when files have a scope ([`Program::enter_spaces`]).
    pub(crate) system: Option<System>,
}

/// Files with a scope, and the symbols of each.
type ScopedFiles = (Vec<(Scope, Image)>, Vec<Symbols>);

/// The program of a command that reads one address space: a file with a privilege or context
/// is a usage error.
pub(crate) fn program(input: &InputArgs) -> Result<Program, Failure> {
    load(input, false)
}

/// The program of a command that follows the flow through address spaces (`--image
/// FILE,priv=P,ctx=N`; [`Program::enter_spaces`]).
pub(crate) fn program_system(input: &InputArgs) -> Result<Program, Failure> {
    load(input, true)
}

/// What names the program in messages and outputs: --elf, else the first --image file.
pub(crate) fn program_name(input: &InputArgs) -> String {
    match (&input.elf, input.images.image.first()) {
        (Some(elf), _) => report::name(elf),
        (None, Some(spec)) => report::name(&spec.path),
        (None, None) => "rvtrace".into(),
    }
}

fn load(input: &InputArgs, spaces: bool) -> Result<Program, Failure> {
    if !spaces {
        if let Some(spec) = input.images.image.iter().find(|s| !s.scope.is_everywhere()) {
            return Err(crate::trace_source::one_space_error(spec));
        }
    }
    let elf: Vec<PathBuf> = input.elf.iter().cloned().collect();
    let p = crate::trace_source::load_system_symbols(&elf, &input.images)?;
    let xlen = p.xlen.unwrap_or(rvtrace_isa::Xlen::Rv64);
    let (everywhere, scoped_syms) = p.syms.unwrap_or_default();
    let mut main = Vec::new();
    for elf in &elf {
        let bytes = report::read_input(elf)?;
        // A core file (`run --code-snapshot`'s) has no symbols.
        if !rvtrace_image::system::is_core(&bytes) {
            main.push(
                Symbols::from_elf_or_debug(&bytes, elf, &input.images.debug_dir)
                    .map_err(|e| Failure::Tool(format!("{}: {e}", elf.display())))?,
            );
        }
    }
    let syms = Symbols::merge(main.into_iter().chain(everywhere));
    let scoped = (!p.scoped.is_empty()).then_some((p.scoped, scoped_syms));
    Ok(Program {
        image: p.image,
        syms,
        isa: IsaConfig::new(xlen),
        scoped,
        system: None,
    })
}

impl Program {
    /// With files of a scope: the address spaces, their code made as `trace`'s decoder walks
    /// it, each named with its files' symbols ([`System`]).
    pub fn enter_spaces(&mut self, trace: &rvtrace_decode::Trace) -> Result<(), Failure> {
        let Some((files, syms)) = self.scoped.take() else {
            return Ok(());
        };
        let mut all = vec![(Scope::default(), self.image.clone())];
        all.extend(files);
        let spaces = trace
            .spaces(all)
            .map_err(|e| Failure::Tool(e.to_string()))?;
        let mut file_syms = vec![self.syms.share()];
        file_syms.extend(syms);
        self.system = Some(System::with_spaces(spaces, &file_syms));
        Ok(())
    }

    /// The code of space `i` ([`System::image`]; the one image without spaces).
    fn image_of(&self, i: usize) -> &Image {
        self.system.as_ref().map_or(&self.image, |s| s.image(i))
    }

    /// The symbols of space `i` ([`System::syms`]).
    fn syms_of(&self, i: usize) -> &Symbols {
        self.system.as_ref().map_or(&self.syms, |s| s.syms(i))
    }

    /// A decoder of `trace` for this program: walking its address spaces when it has some
    /// (`src`: the hart to decode, else the options').
    fn decoder<'a>(
        &'a self,
        trace: &rvtrace_decode::Trace,
        src: Option<u16>,
    ) -> rvtrace_decode::Decoder<'a> {
        match self.system.as_ref().and_then(System::spaces) {
            Some(spaces) => trace.decoder_in(spaces, src),
            None => trace.decoder(&self.image),
        }
    }
}

type TextOut = std::io::BufWriter<Output>;

/// Every sink of a command, with loss warnings.
pub(crate) struct Tee<'a> {
    profiler: Option<Profiler<'a>>,
    counter: Option<Counter<'a>>,
    text: Option<TextTrace<'a, TextOut>>,
    calls: Option<CallTrace<'a, TextOut>>,
    /// Another command's sink (`rvtrace export`).
    pub(crate) other: Option<&'a mut dyn FlowSink>,
    warnings: report::Warnings,
}

impl Tee<'_> {
    pub(crate) fn new(a: &InputArgs) -> Self {
        Tee {
            profiler: None,
            counter: None,
            text: None,
            calls: None,
            other: None,
            warnings: report::Warnings::new(report::name(&a.input), a.max_warnings),
        }
    }
}

impl FlowSink for Tee<'_> {
    fn element(&mut self, e: &FlowElement) {
        self.warnings.element(e);
        if let Some(p) = self.profiler.as_mut() {
            p.element(e);
        }
        if let Some(c) = self.counter.as_mut() {
            c.element(e);
        }
        if let Some(t) = self.text.as_mut() {
            t.element(e);
        }
        if let Some(c) = self.calls.as_mut() {
            c.element(e);
        }
        if let Some(o) = self.other.as_mut() {
            o.element(e);
        }
    }

    fn stop_requested(&self) -> bool {
        // A text output that failed (a closed pipe) stops the decode.
        self.text.as_ref().is_some_and(|t| t.stop_requested())
            || self.calls.as_ref().is_some_and(|c| c.stop_requested())
            || self.other.as_ref().is_some_and(|o| o.stop_requested())
    }
}

/// An input opened: its first bytes read, its trace resolved (`None`: an ingress file).
pub(crate) struct Opened {
    head: Vec<u8>,
    input: Box<dyn std::io::BufRead>,
    trace: Option<rvtrace_decode::Trace>,
}

/// Opens the input (`prog` gives the address width): the first 64 KiB tell what it is, an
/// ingress file, or a trace (of the protocol given, its sidecar's or its bytes'). With files
/// of a scope, a trace's address spaces are made ([`Program::enter_spaces`]); an ingress file
/// is a usage error then.
pub(crate) fn open(a: &InputArgs, prog: &mut Program) -> Result<Opened, Failure> {
    let name = report::name(&a.input);
    // Read as it is decoded (memory flat in the input's size). Progress through the input on
    // a terminal: a long trace takes a while.
    let mut input = report::open_input_progress(&a.input, "read")?;
    let head = report::read_head(&mut input, 1 << 16, &name)?;
    let trace = if a.dec.opts.protocol.is_none() && rvtrace_decode::kind::is_ingress(&head) {
        if prog.scoped.is_some() {
            return Err(Failure::Usage(format!(
                "{name}: an ingress file carries its PCs: --image priv= and ctx= (address                  spaces) are for a trace's decoder"
            )));
        }
        None
    } else {
        let all = head.len() < 1 << 16;
        let trace = a.dec.resolve(&a.input, &head, all, prog.isa.xlen)?;
        prog.enter_spaces(&trace)?;
        Some(trace)
    };
    Ok(Opened { head, input, trace })
}

/// Runs an opened input into `tee`; returns whether it was read whole without loss.
pub(crate) fn feed_opened(
    a: &InputArgs,
    o: Opened,
    prog: &Program,
    tee: &mut Tee,
) -> Result<bool, Failure> {
    let name = report::name(&a.input);
    let Opened { head, input, trace } = o;
    let whole = std::io::Read::chain(std::io::Cursor::new(head), input);
    let stats: SourceStats = match trace {
        None => match source::ingress(whole, &prog.image, prog.isa, tee) {
            Ok(s) => s,
            Err(SourceError::Ingress(e)) => {
                tee.warnings.finish();
                let _ = crate::run::damaged_input(&name, &e, None)?;
                return Ok(false);
            }
            Err(SourceError::Record(m)) => return Err(Failure::Tool(format!("{name}: {m}"))),
        },
        Some(trace) => {
            let st = rvtrace_flow::decode_read(&mut prog.decoder(&trace, None), whole, tee)
                .map_err(|e| Failure::io(format_args!("reading {name}"), e))?;
            st.into()
        }
    };
    tee.warnings.finish();
    Ok(stats.losses == 0)
}

/// A trace of several harts (N-Trace 6.2 SRC, the E-Trace encapsulation's *srcID*), read for
/// decoding hart by hart ([`Harts::feed`]).
pub(crate) struct Harts {
    /// The harts' SRCs or srcIDs, in increasing order.
    pub(crate) harts: Vec<u16>,
    /// All of standard input (read once per hart); `None` for a file, read again per hart.
    stdin: Option<Vec<u8>>,
    trace: rvtrace_decode::Trace,
}

impl Harts {
    /// Finds the harts of the trace `a` names (one streaming pass): it needs a source field
    /// (`--src-bits`, or the sidecar's), else a usage error.
    pub(crate) fn open(a: &InputArgs, prog: &mut Program) -> Result<Harts, Failure> {
        let name = report::name(&a.input);
        let stdin = match report::is_std(&a.input) {
            true => Some(report::read_input(&a.input)?),
            false => None,
        };
        let input = match &stdin {
            Some(d) => crate::harts::Trace::Memory(d),
            None => crate::harts::Trace::File(&a.input),
        };
        let mut head = Vec::new();
        std::io::Read::take(input.reader()?, 1 << 16)
            .read_to_end(&mut head)
            .map_err(|e| input.cannot_read(e))?;
        if a.dec.opts.protocol.is_none() && rvtrace_decode::kind::is_ingress(&head) {
            return Err(Failure::Usage(format!(
                "{name}: --all-harts reads a trace, not an ingress file"
            )));
        }
        let trace = a
            .dec
            .resolve(&a.input, &head, head.len() < 1 << 16, prog.isa.xlen)?;
        if trace.src_bits() == 0 {
            return Err(Failure::Usage(format!(
                "--all-harts needs --src-bits (the width of the {} field)",
                match trace.protocol {
                    rvtrace_decode::Protocol::Ntrace => "messages' SRC",
                    rvtrace_decode::Protocol::Etrace => "packets' srcID",
                }
            )));
        }
        prog.enter_spaces(&trace)?;
        let harts = trace
            .sources(input.reader()?)
            .map_err(|e| input.cannot_read(e))?;
        if harts.is_empty() {
            return Err(Failure::Tool(format!(
                "{name}: no whole message or packet in the trace (no hart to decode)"
            )));
        }
        Ok(Harts {
            harts,
            stdin,
            trace,
        })
    }

    /// The trace, resolved.
    pub(crate) fn trace(&self) -> &rvtrace_decode::Trace {
        &self.trace
    }

    /// Decodes hart `hart` (the other harts' messages or packets skipped) into `sink`, its
    /// losses warnings that name it; returns whether it decoded without loss.
    pub(crate) fn feed(
        &self,
        a: &InputArgs,
        prog: &Program,
        hart: u16,
        sink: &mut dyn FlowSink,
    ) -> Result<bool, Failure> {
        let input = match &self.stdin {
            Some(d) => crate::harts::Trace::Memory(d),
            None => crate::harts::Trace::File(&a.input),
        };
        let mut tee = Tee::new(a);
        tee.warnings = report::Warnings::new(
            format_args!(
                "{} {} {hart}",
                report::name(&a.input),
                self.trace.protocol.src_label()
            ),
            a.max_warnings,
        );
        tee.other = Some(sink);
        let mut dec = match prog.system.as_ref().and_then(System::spaces) {
            Some(spaces) => self.trace.decoder_in(spaces, Some(hart)),
            None => self.trace.harts(&prog.image).decoder(hart),
        };
        let st = rvtrace_flow::decode_read(&mut dec, input.reader()?, &mut tee);
        tee.warnings.finish();
        Ok(st.map_err(|e| input.cannot_read(e))?.losses == 0)
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut out = Output::create(path)?;
    out.write_all(bytes).map_err(|e| out.fail(e))?;
    out.finish()
}

/// The text for people: on stdout, or on stderr when a file output is stdout (`-`).
fn show(text: &str, outputs: &[&Path]) -> Result<(), Failure> {
    if outputs.iter().any(|p| report::is_std(p)) {
        for l in text.lines() {
            say!("{l}");
        }
        return Ok(());
    }
    let mut out = Output::stdout();
    out.write_all(text.as_bytes()).map_err(|e| out.fail(e))?;
    out.finish()
}

fn inputs(a: &InputArgs) -> Vec<&Path> {
    let mut v = vec![a.input.as_path()];
    v.extend(a.elf.as_deref());
    v.extend(a.images.image.iter().map(|s| s.path.as_path()));
    v
}

/// A profiler of the program (of its address spaces, when it has several).
fn profiler(prog: &Program) -> Profiler<'_> {
    match &prog.system {
        Some(s) => Profiler::in_system(s, prog.isa),
        None => Profiler::new(&prog.image, &prog.syms, prog.isa),
    }
}

/// `rvtrace profile`.
pub fn profile(a: &ProfileArgs) -> CmdResult {
    let mut outs: Vec<(&str, &Path)> = Vec::new();
    for (opt, p) in [
        ("--folded", &a.folded),
        ("--flamegraph", &a.flamegraph),
        ("--firefox", &a.firefox),
        ("--perf-script", &a.perf_script),
    ] {
        if let Some(p) = p {
            outs.push((opt, p));
        }
    }
    report::distinct(&inputs(&a.input), &outs)?;
    if a.by == Some(ByArg::Hart) && a.firefox.is_some() {
        return Err(Failure::Usage(
            "--firefox is a timeline of one flow: not with --by hart".into(),
        ));
    }
    let mut prog = program_system(&a.input)?;
    fn inline(p: Profiler<'_>, no: bool) -> Profiler<'_> {
        if no {
            p
        } else {
            p.with_inlines()
        }
    }
    let elf_name = program_name(&a.input);
    // The profiles: (process or hart, its space for symbols, profile).
    let mut parts: Vec<(Option<String>, usize, rvtrace_analysis::Profile)> = Vec::new();
    let mut timeline = None;
    let ok = if a.by == Some(ByArg::Hart) {
        let harts = Harts::open(&a.input, &mut prog)?;
        let mut ok = true;
        for &h in &harts.harts {
            let mut p = inline(profiler(&prog), a.no_inline);
            ok &= harts.feed(&a.input, &prog, h, &mut p)?;
            parts.push((Some(format!("hart {h}")), 0, p.profile()));
        }
        ok
    } else {
        let o = open(&a.input, &mut prog)?;
        let mut p = profiler(&prog);
        if a.firefox.is_some() {
            p = p.with_timeline();
        }
        let mut tee = Tee {
            profiler: Some(inline(p, a.no_inline)),
            ..Tee::new(&a.input)
        };
        let ok = feed_opened(&a.input, o, &prog, &mut tee)?;
        let p = tee.profiler.take();
        if let Some(p) = &p {
            if a.by == Some(ByArg::Process) {
                for (i, part) in p.profiles_by_space() {
                    let name = match &prog.system {
                        Some(s) => s.name(i).to_string(),
                        None => elf_name.clone(),
                    };
                    parts.push((Some(name), i, part));
                }
            } else {
                parts.push((None, 0, p.profile()));
            }
        }
        timeline = p.and_then(|p| p.timeline());
        ok
    };
    // The whole input's profile: each part under its name.
    let mut whole = rvtrace_analysis::Profile::default();
    for (name, _, p) in &parts {
        match name {
            Some(n) => whole.merge(&p.rooted(n)),
            None => whole.merge(p),
        }
    }
    let unit = match a.weight {
        WeightArg::Instructions => Unit::Instructions,
        WeightArg::Time => Unit::Time,
    };
    if unit == Unit::Time && !whole.has_time {
        return Err(Failure::Usage(format!(
            "--weight time: {} carries no time (record with timestamps: `encode ... --timestamps`)",
            report::name(&a.input.input)
        )));
    }
    let title = elf_name.clone();
    if let Some(f) = &a.folded {
        write_file(f, whole.folded(unit == Unit::Time).as_bytes())?;
    }
    if let Some(f) = &a.flamegraph {
        write_file(
            f,
            &export::flamegraph(&whole, unit, &title).map_err(|e| e.to_string())?,
        )?;
    }
    if let Some(f) = &a.firefox {
        write_file(
            f,
            export::firefox(&timeline.unwrap_or_default(), &prog.syms, unit, &title)
                .map_err(|e| e.to_string())?
                .as_bytes(),
        )?;
    }
    let syms_of = |i: usize| match &prog.system {
        Some(s) => s.syms(i),
        None => &prog.syms,
    };
    if let Some(f) = &a.perf_script {
        let name = program_name(&a.input);
        let stem = Path::new(&name)
            .file_stem()
            .map_or("rvtrace".into(), |s| s.to_string_lossy());
        let mut text = String::new();
        for (name, i, p) in &parts {
            let comm = name.as_deref().unwrap_or(&stem);
            text += &export::perf_script(p, syms_of(*i), unit, a.perf_script_period, comm, &title);
        }
        write_file(f, text.as_bytes())?;
    }
    let mut text = String::new();
    for (name, _, p) in &parts {
        match (name, a.by) {
            (Some(n), Some(ByArg::Process)) => text += &format!("process {n}:\n"),
            (Some(n), _) => text += &format!("{n}:\n"),
            (None, _) => {}
        }
        text += &p.report(a.top);
    }
    show(&text, &outs.iter().map(|o| o.1).collect::<Vec<_>>())?;
    Ok(report::status(ok))
}

/// Exact counts of the input: of each address space (one without scoped files).
fn counts(
    a: &InputArgs,
    prog: &mut Program,
) -> Result<(Vec<rvtrace_analysis::Counts>, bool), Failure> {
    let o = open(a, prog)?;
    let prog: &Program = prog;
    let mut tee = Tee::new(a);
    let ok;
    let c = match &prog.system {
        Some(s) => {
            let mut counter = SpaceCounter::new(s);
            tee.other = Some(&mut counter);
            ok = feed_opened(a, o, prog, &mut tee)?;
            drop(tee);
            counter.finish()
        }
        None => {
            tee.counter = Some(Counter::new(&prog.image));
            ok = feed_opened(a, o, prog, &mut tee)?;
            vec![tee.counter.take().map(Counter::finish).unwrap_or_default()]
        }
    };
    Ok((c, ok))
}

/// An error unless the program has DWARF line tables.
fn need_lines(prog: &Program, name: &str) -> Result<(), Failure> {
    if prog.syms.has_lines()
        || prog
            .scoped
            .as_ref()
            .is_some_and(|s| s.1.iter().any(Symbols::has_lines))
    {
        return Ok(());
    }
    Err(Failure::Tool(format!(
        "{name}: no DWARF line tables (build with -g and do not strip debug sections)"
    )))
}

/// `rvtrace coverage`.
pub fn coverage(a: &CoverageArgs) -> CmdResult {
    report::distinct(&inputs(&a.input), &[("--lcov", &a.lcov)])?;
    let mut prog = program_system(&a.input)?;
    need_lines(&prog, &program_name(&a.input))?;
    let (c, ok) = counts(&a.input, &mut prog)?;
    // Each space's code covered with its own symbols; a file in several spaces adds up.
    let mut cov = Coverage::new(&c[0], prog.image_of(0), prog.syms_of(0), prog.isa);
    for (i, c) in c.iter().enumerate().skip(1) {
        cov.merge(Coverage::new(
            c,
            prog.image_of(i),
            prog.syms_of(i),
            prog.isa,
        ));
    }
    // Which source files the tracefile names: mapped, chosen, and (by default) only those that
    // exist here.
    let (mut filtered, mut missing) = (Vec::new(), Vec::new());
    let rename = |file: &str| {
        a.source_prefix
            .iter()
            .find_map(|(old, new)| {
                file.strip_prefix(old.as_str())
                    .map(|rest| format!("{new}{rest}"))
            })
            .unwrap_or_else(|| file.to_string())
    };
    let left = cov.map_files(|file| {
        let name = rename(file);
        let chosen = (a.include.is_empty() || a.include.iter().any(|g| g.matches(&name)))
            && !a.exclude.iter().any(|g| g.matches(&name));
        if !chosen {
            filtered.push(name);
            None
        } else if !a.all_sources && !Path::new(&name).exists() {
            missing.push(name);
            None
        } else {
            Some(name)
        }
    });
    let s = cov.summary();
    let kept = cov.files().count();
    write_file(&a.lcov, cov.lcov(&a.test_name).as_bytes())?;
    let pct = |h: u64, f: u64| {
        if f == 0 {
            "no data found".to_string()
        } else {
            format!("{:.1}% ({h} of {f})", 100.0 * h as f64 / f as f64)
        }
    };
    let mut text = format!(
        "lines......: {}\nfunctions..: {}\nbranches...: {}\n",
        pct(s.lines_hit, s.lines_found),
        pct(s.functions_hit, s.functions_found),
        pct(s.branches_hit, s.branches_found)
    );
    // The missing file to name: `main`'s (the program's own, to be mapped), else the first.
    let main_file = (prog.syms.functions().iter())
        .find(|f| f.name == "main")
        .and_then(|f| prog.syms.line_at(f.start))
        .map(|l| rename(&l.file));
    let example = main_file
        .filter(|m| missing.contains(m))
        .or_else(|| missing.first().cloned())
        .unwrap_or_default();
    if !filtered.is_empty() || !missing.is_empty() {
        let files = |n: usize| {
            if n == 1 {
                "1 source file".to_string()
            } else {
                format!("{n} source files")
            }
        };
        let mut why = Vec::new();
        if !filtered.is_empty() {
            why.push(format!("{} by --include/--exclude", files(filtered.len())));
        }
        if !missing.is_empty() {
            why.push(format!(
                "{} that do not exist here (such as {example}; --all-sources keeps them, \
                 --source-prefix OLD=NEW maps them)",
                files(missing.len()),
            ));
        }
        text += &format!(
            "left out...: {}; their lines {}\n",
            why.join(", "),
            pct(left.lines_hit, left.lines_found)
        );
    }
    show(&text, &[&a.lcov])?;
    if kept == 0 && !missing.is_empty() {
        // Nothing of the program is here: most likely run from another directory.
        warn!(
            "none of the program's source files exists here (such as {example}): run from \
             the directory they are relative to, or give --source-prefix or --all-sources"
        );
        return Ok(report::status(false));
    }
    Ok(report::status(ok))
}

/// `rvtrace autofdo`.
pub fn autofdo(a: &AutofdoArgs) -> CmdResult {
    report::distinct(&inputs(&a.input), &[("-o", &a.output)])?;
    let mut prog = program(&a.input)?;
    if a.profile_format == AutofdoFormat::Llvm {
        need_lines(&prog, &program_name(&a.input))?;
        let (c, ok) = counts(&a.input, &mut prog)?;
        let c = &c[0];
        let text = autofdo::llvm(c, &prog.image, &prog.syms, prog.isa);
        write_file(&a.output, text.as_bytes())?;
        return Ok(report::status(ok));
    }
    let base = prog
        .syms
        .first_load_vaddr()
        .ok_or_else(|| Failure::Tool(format!("{}: no PT_LOAD segment", program_name(&a.input))))?;
    let (c, ok) = counts(&a.input, &mut prog)?;
    let (text, dropped) = autofdo::text(&c[0], &prog.image, base);
    if dropped > 0 {
        warn!("{dropped} ranges or branches below the first PT_LOAD ({base:#x}) cannot be written");
    }
    write_file(&a.output, text.as_bytes())?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        report::status(false)
    })
}

/// A hart's instruction trace in memory, each piece with the last time stamp before it
/// (`text --all-harts`).
struct TimedText<'a> {
    text: TextTrace<'a, Vec<u8>>,
    time: u64,
    pieces: Vec<(u64, Vec<u8>)>,
}

impl FlowSink for TimedText<'_> {
    fn element(&mut self, e: &FlowElement) {
        self.text.element(e);
        if let FlowElement::Time { time } = *e {
            self.time = time;
        }
        if let Ok(w) = self.text.take_written() {
            if !w.is_empty() {
                self.pieces.push((self.time, w));
            }
        }
    }

    fn stop_requested(&self) -> bool {
        self.text.stop_requested()
    }
}

/// `text --all-harts`: every hart's instruction trace, merged by time stamp.
fn text_all_harts(a: &TextArgs, mut prog: Program) -> CmdResult {
    let hz = match (a.timebase_hz, &a.dtb) {
        (Some(hz), _) => hz,
        (None, Some(p)) => {
            let blob = report::read_input(p)?;
            crate::dtb::timebase_frequency(&blob)
                .map_err(|e| Failure::Tool(format!("{}: {e}", p.display())))?
        }
        (None, None) => rvtrace_sim::fdt::TIMEBASE_FREQUENCY.into(),
    };
    let harts = Harts::open(&a.input, &mut prog)?;
    let prog = &prog;
    let mut all: Vec<(u64, u16, usize, Vec<u8>)> = Vec::new();
    let mut ok = true;
    for &h in &harts.harts {
        let t = match &prog.system {
            Some(s) => TextTrace::in_system(s, prog.isa, Vec::new()),
            None => TextTrace::new(&prog.image, &prog.syms, prog.isa, Vec::new()),
        };
        let mut sink = TimedText {
            text: if a.no_lines { t.without_lines() } else { t },
            time: 0,
            pieces: Vec::new(),
        };
        ok &= harts.feed(&a.input, prog, h, &mut sink)?;
        all.extend(
            sink.pieces
                .into_iter()
                .enumerate()
                .map(|(k, (t, text))| (t, h, k, text)),
        );
    }
    // By time, then hart, then each hart's order.
    all.sort_unstable_by_key(|p| (p.0, p.1, p.2));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, Output::create(&a.output)?);
    let name = report::name(&a.output);
    let write = |out: &mut std::io::BufWriter<Output>| -> std::io::Result<()> {
        for (time, hart, _, text) in &all {
            let ns = u128::from(*time) * 1_000_000_000 / u128::from(hz);
            for line in text.split_inclusive(|&b| b == b'\n') {
                write!(out, "{ns} ns hart {hart}: ")?;
                out.write_all(line)?;
            }
        }
        Ok(())
    };
    write(&mut out).map_err(|e| Failure::io(format_args!("writing {name}"), e))?;
    let out = out
        .into_inner()
        .map_err(|e| Failure::io(format_args!("writing {name}"), e.into_error()))?;
    out.finish()?;
    Ok(report::status(ok))
}

/// `rvtrace text`.
pub fn text(a: &TextArgs) -> CmdResult {
    report::distinct(&inputs(&a.input), &[("-o", &a.output)])?;
    let mut prog = program_system(&a.input)?;
    if a.all_harts {
        return text_all_harts(a, prog);
    }
    let o = open(&a.input, &mut prog)?;
    let prog = &prog;
    let out = std::io::BufWriter::with_capacity(1 << 16, Output::create(&a.output)?);
    let mut tee = Tee::new(&a.input);
    if a.call_trace {
        tee.calls = Some(match &prog.system {
            Some(s) => CallTrace::in_system(s, prog.isa, out),
            None => CallTrace::new(&prog.image, &prog.syms, prog.isa, out),
        });
    } else {
        let t = match &prog.system {
            Some(s) => TextTrace::in_system(s, prog.isa, out),
            None => TextTrace::new(&prog.image, &prog.syms, prog.isa, out),
        };
        tee.text = Some(if a.no_lines { t.without_lines() } else { t });
    }
    let ok = feed_opened(&a.input, o, prog, &mut tee)?;
    let w = match (tee.text.take(), tee.calls.take()) {
        (Some(t), _) => t.finish(),
        (None, Some(c)) => c.finish().map(|(w, _)| w),
        (None, None) => return Ok(report::status(ok)),
    };
    let name = report::name(&a.output);
    let w = w.map_err(|e| Failure::io(format_args!("writing {name}"), e))?;
    let out = w
        .into_inner()
        .map_err(|e| Failure::io(format_args!("writing {name}"), e.into_error()))?;
    out.finish()?;
    Ok(report::status(ok))
}
