//! How every command reports: exit statuses, lines on stderr, input and output paths.
//!
//! One place for the command line's conventions, so that all commands behave alike:
//! - exit statuses ([`EXIT_MISMATCH`], [`EXIT_USAGE`], [`EXIT_INSN_LIMIT`], [`EXIT_TOOL_ERROR`],
//!   [`EXIT_INTERRUPTED`]);
//! - `-` names stdout (for an output) or stdin (for an input) for every path option;
//! - a closed stdout (`rvtrace ... | head`) ends the command quietly with status 0
//!   ([`Failure::BrokenPipe`]);
//! - lines on stderr never panic, even when stderr is closed or full (`2>/dev/full`);
//! - a write error names the file being written;
//! - warnings start with `rvtrace: warning: ` and repeated ones are capped ([`Warnings`]);
//! - an output that would overwrite an input is refused before anything is truncated ([`distinct`]).

use rvtrace_flow::{FlowElement, LossReason};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status when a check found a difference or a decoder lost trace: the answer is "no".
pub const EXIT_MISMATCH: u8 = 1;
/// Exit status for a usage error (clap uses it for bad options; rvtrace's own option checks too).
pub const EXIT_USAGE: u8 = 2;
/// Exit status when `--max-insns` stopped the program (as `timeout` uses 124).
pub const EXIT_INSN_LIMIT: u8 = 124;
/// Exit status when rvtrace itself failed (bad input, I/O), as `env` and `xargs` use 125.
pub const EXIT_TOOL_ERROR: u8 = 125;
/// Exit status when Ctrl-C (SIGINT) stopped `run` (128 + 2, as shells report it); the output
/// files were finished.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit statuses, for `--help` and the README.
pub const EXIT_STATUS_HELP: &str = "Exit status: 0 success (for `run`: the program's own status); \
    1 a mismatch, or trace lost while decoding, or a damaged or cut input file (what came before \
    the damage was written); 2 a usage error; 124 --max-insns stopped the program; 125 rvtrace \
    itself failed (bad input, an I/O error, the program crashed the hart or is stuck in a trap \
    loop); 130 Ctrl-C stopped `run` (its output files are finished).";

/// Why a command did not finish normally.
#[derive(Debug)]
pub enum Failure {
    /// rvtrace failed: the message is printed as `rvtrace: error: MESSAGE`, exit status 125.
    Tool(String),
    /// A usage error found after parsing (an option out of range, a bad combination): exit 2.
    Usage(String),
    /// The reader of stdout went away (`| head`): quiet, exit status 0.
    BrokenPipe,
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Tool(s)
    }
}

impl From<rvtrace_etrace::encoder::EncodeError> for Failure {
    fn from(e: rvtrace_etrace::encoder::EncodeError) -> Failure {
        Failure::Tool(e.to_string())
    }
}

impl From<rvtrace_etrace::meta::MetaError> for Failure {
    fn from(e: rvtrace_etrace::meta::MetaError) -> Failure {
        Failure::Tool(e.to_string())
    }
}

impl From<rvtrace_sim::fdt::FdtError> for Failure {
    fn from(e: rvtrace_sim::fdt::FdtError) -> Failure {
        Failure::Tool(e.to_string())
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Failure {
        Failure::Tool(s.to_string())
    }
}

impl Failure {
    /// An I/O error on the file called `name`: a broken pipe is [`Failure::BrokenPipe`].
    pub fn io(name: impl fmt::Display, e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Tool(format!("{name}: {e}"))
        }
    }

    /// The exit status and the line to print (if any) for this failure.
    pub fn exit(self) -> ExitCode {
        match self {
            Failure::Tool(m) => {
                line(format_args!("rvtrace: error: {m}"));
                ExitCode::from(EXIT_TOOL_ERROR)
            }
            Failure::Usage(m) => {
                line(format_args!("rvtrace: error: {m}"));
                ExitCode::from(EXIT_USAGE)
            }
            Failure::BrokenPipe => ExitCode::SUCCESS,
        }
    }
}

/// What every command returns.
pub type CmdResult = Result<ExitCode, Failure>;

/// 0 when `ok`, else [`EXIT_MISMATCH`].
pub fn status(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_MISMATCH)
    }
}

/// Write one line on stderr. Never panics: a closed or full stderr loses the line, nothing more.
pub fn line(args: fmt::Arguments) {
    let mut e = io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.write_all(b"\n");
}

/// `rvtrace: warning: ...` on stderr (never panics).
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => {
        $crate::report::line(format_args!("rvtrace: warning: {}", format_args!($($t)*)))
    };
}

/// `rvtrace: note: ...` on stderr (never panics).
#[macro_export]
macro_rules! note {
    ($($t:tt)*) => {
        $crate::report::line(format_args!("rvtrace: note: {}", format_args!($($t)*)))
    };
}

/// A line on stderr as it is (never panics): summaries and statistics.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {
        $crate::report::line(format_args!($($t)*))
    };
}

/// Default of `--max-warnings`.
pub const DEFAULT_MAX_WARNINGS: u64 = 100;

/// Warnings printed as they happen, at most `max` of them; the rest are counted and the count is
/// printed by [`Warnings::finish`]. Memory stays flat however many there are.
#[derive(Debug)]
pub struct Warnings {
    label: String,
    max: u64,
    total: u64,
    /// Messages the decoder stepped over, by kind ([`Warnings::element`]).
    ignored: std::collections::BTreeMap<String, u64>,
}

impl Warnings {
    /// Warnings about `label` (usually the input file's name), showing at most `max`.
    pub fn new(label: impl fmt::Display, max: u64) -> Warnings {
        Warnings {
            label: label.to_string(),
            max,
            total: 0,
            ignored: Default::default(),
        }
    }

    /// The warnings a flow element calls for: a loss (each one, as [`Warnings::warn`]), or the
    /// first message of each kind the decoder stepped over (N-Trace 6.1: reserved and
    /// vendor-defined messages are ignored "and/or generate a warning"; the others are counted
    /// and summed up by [`Warnings::finish`]). Returns the element's loss reason, if it is one.
    pub fn element<'e>(&mut self, e: &'e FlowElement) -> Option<&'e LossReason> {
        match e {
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            } => {
                self.warn(rvtrace_flow::loss_text(*offset, *skipped, reason));
                Some(reason)
            }
            FlowElement::Ignored { offset, kind, .. } => {
                let n = self.ignored.entry(kind.clone()).or_insert(0);
                *n += 1;
                if *n == 1 {
                    line(format_args!(
                        "rvtrace: warning: {}: byte {offset:#x}: stepped over a message the \
                         decoder does not interpret: {kind} (later ones of the kind are counted)",
                        self.label
                    ));
                }
                None
            }
            _ => None,
        }
    }

    /// Report one warning (printed if fewer than `max` were printed so far).
    pub fn warn(&mut self, msg: impl fmt::Display) {
        self.total += 1;
        if self.total <= self.max {
            line(format_args!("rvtrace: warning: {}: {msg}", self.label));
        }
    }

    /// How many warnings were reported (printed or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Print how many warnings were not shown, if any, and how many messages of each kind were
    /// stepped over.
    pub fn finish(&self) {
        if !self.ignored.is_empty() {
            let kinds: Vec<String> = self
                .ignored
                .iter()
                .map(|(kind, n)| format!("{n} x {kind}"))
                .collect();
            line(format_args!(
                "rvtrace: note: {}: messages stepped over: {} (--flow FILE --list-ignored lists them)",
                self.label,
                kinds.join(", ")
            ));
        }
        if self.total > self.max {
            line(format_args!(
                "rvtrace: warning: {}: {} more warnings not shown (--max-warnings {})",
                self.label,
                self.total - self.max,
                self.max
            ));
        }
    }
}

/// True when `p` is `-` (stdin or stdout).
pub fn is_std(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// How a path is named in messages (`-` is "stdout"/"stdin" by context; callers pass the path).
pub fn name(p: &Path) -> String {
    p.display().to_string()
}

/// An output file or stdout (`-`), buffered. Write errors are named by the file
/// ([`Output::fail`]).
pub struct Output {
    name: String,
    out: Box<dyn Write>,
    /// [`Output::create_whole`]: the file being written beside the output, renamed onto it by
    /// [`Output::finish`] and removed when the output is dropped unfinished.
    partial: Option<(PathBuf, PathBuf)>,
}

impl Output {
    /// Create (truncate) `path`, or take stdout for `-`. What was written before a failure stays
    /// in the file (a `run` stopped by an error keeps the trace up to the stop).
    pub fn create(path: &Path) -> Result<Output, Failure> {
        if is_std(path) {
            return Ok(Output::stdout());
        }
        Output::file(path, None)
    }

    /// `path` (as messages name it), its bytes written to `partial.0` when given.
    fn file(path: &Path, partial: Option<(PathBuf, PathBuf)>) -> Result<Output, Failure> {
        let at = partial.as_ref().map_or(path, |p| p.0.as_path());
        let f = File::create(at)
            .map_err(|e| Failure::Tool(format!("{}: cannot create: {e}", path.display())))?;
        Ok(Output {
            name: path.display().to_string(),
            out: Box::new(BufWriter::with_capacity(1 << 16, f)),
            partial,
        })
    }

    /// Like [`Output::create`], but `path` appears only whole: the bytes go to a hidden file
    /// beside it, renamed onto `path` by [`Output::finish`]. A command that fails half way
    /// leaves no truncated file, and an existing `path` unchanged. For the converters, whose
    /// output is all or nothing. A `path` that exists and is not a regular file (a FIFO,
    /// `/dev/null`, a symbolic link) is written in place, as by [`Output::create`].
    pub fn create_whole(path: &Path) -> Result<Output, Failure> {
        let regular = match std::fs::symlink_metadata(path) {
            Ok(m) => m.file_type().is_file(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        let file_name = path.file_name().filter(|_| regular && !is_std(path));
        let Some(file_name) = file_name else {
            return Output::create(path);
        };
        let mut hidden = std::ffi::OsString::from(".");
        hidden.push(file_name);
        hidden.push(format!(".partial-{}", std::process::id()));
        let tmp = path.with_file_name(hidden);
        Output::file(path, Some((tmp, path.to_path_buf())))
    }

    /// Stdout, buffered.
    pub fn stdout() -> Output {
        Output {
            name: "stdout".into(),
            out: Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
            partial: None,
        }
    }

    /// The name used in messages: the path, or `stdout`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The failure for an I/O error while writing this output.
    pub fn fail(&self, e: io::Error) -> Failure {
        Failure::io(format_args!("writing {}", self.name), e)
    }

    /// Flush, naming the file on error; a [`Output::create_whole`] file is put in place.
    pub fn finish(mut self) -> Result<(), Failure> {
        self.out.flush().map_err(|e| self.fail(e))?;
        if let Some((tmp, path)) = self.partial.take() {
            if let Err(e) = std::fs::rename(&tmp, &path) {
                let _ = std::fs::remove_file(&tmp);
                return Err(self.fail(e));
            }
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.partial.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Read all of `path` (stdin for `-`).
pub fn read_input(path: &Path) -> Result<Vec<u8>, Failure> {
    let mut v = Vec::new();
    if is_std(path) {
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(|e| Failure::Tool(format!("stdin: cannot read: {e}")))?;
        return Ok(v);
    }
    std::fs::read(path).map_err(|e| Failure::Tool(format!("{}: cannot read: {e}", path.display())))
}

/// The first `n` bytes of `input` (fewer if it is shorter): what a command looks at to tell a
/// file's kind or framing before it reads the rest as it goes.
pub fn read_head(input: &mut dyn Read, n: u64, name: &str) -> Result<Vec<u8>, Failure> {
    let mut head = Vec::new();
    input
        .take(n)
        .read_to_end(&mut head)
        .map_err(|e| Failure::io(format_args!("reading {name}"), e))?;
    Ok(head)
}

/// Open `path` for buffered reading (stdin for `-`).
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead>, Failure> {
    if is_std(path) {
        return Ok(Box::new(BufReader::with_capacity(1 << 16, io::stdin())));
    }
    let f = File::open(path)
        .map_err(|e| Failure::Tool(format!("{}: cannot open: {e}", path.display())))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
}

/// [`open_input`] with progress on stderr (when it is a terminal) as the input is read; `what`
/// names the work ("decode", "encode", "check").
pub fn open_input_progress(path: &Path, what: &str) -> Result<Box<dyn BufRead>, Failure> {
    use crate::progress::ProgressRead;
    if is_std(path) {
        let r = ProgressRead::new(io::stdin(), what, None);
        return Ok(Box::new(BufReader::with_capacity(1 << 16, r)));
    }
    let f = File::open(path)
        .map_err(|e| Failure::Tool(format!("{}: cannot open: {e}", path.display())))?;
    let total = f.metadata().ok().map(|m| m.len());
    let r = ProgressRead::new(f, what, total);
    Ok(Box::new(BufReader::with_capacity(1 << 16, r)))
}

/// The identity of an existing file (device and inode on Unix, else its canonical path).
fn identity(p: &Path) -> Option<(u64, u64, PathBuf)> {
    let canon = std::fs::canonicalize(p).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&canon).ok()?;
        Some((m.dev(), m.ino(), PathBuf::new()))
    }
    #[cfg(not(unix))]
    {
        Some((0, 0, canon))
    }
}

/// Refuse before anything is created when an output path names an input file or another
/// output (a typo such as `-o prog.elf` must not destroy the program). `-` is never a conflict
/// between an input (stdin) and an output (stdout); two outputs to stdout are.
pub fn distinct(inputs: &[&Path], outputs: &[(&str, &Path)]) -> Result<(), Failure> {
    for (i, (opt, out)) in outputs.iter().enumerate() {
        if is_std(out) {
            if outputs[..i].iter().any(|(_, o)| is_std(o)) {
                return Err(Failure::Usage(format!(
                    "{opt} -: only one output can go to stdout"
                )));
            }
            continue;
        }
        let Some(id) = identity(out) else { continue };
        for inp in inputs {
            if !is_std(inp) && identity(inp).as_ref() == Some(&id) {
                return Err(Failure::Usage(format!(
                    "{opt} {}: that is an input file; refusing to overwrite it",
                    out.display()
                )));
            }
        }
        for (o2, prev) in &outputs[..i] {
            if !is_std(prev) && identity(prev).as_ref() == Some(&id) {
                return Err(Failure::Usage(format!(
                    "{opt} {}: the same file as {o2}",
                    out.display()
                )));
            }
        }
    }
    // Two outputs that do not exist yet but are spelled the same.
    for (i, (opt, out)) in outputs.iter().enumerate() {
        if !is_std(out) && outputs[..i].iter().any(|(_, o)| o == out) {
            return Err(Failure::Usage(format!(
                "{opt} {}: given for two outputs",
                out.display()
            )));
        }
    }
    Ok(())
}

/// The summary line of `encode --stats` (both protocols): `instructions` given to the encoder,
/// its `units` ("messages", "packets"), the trace's `bytes` and its `payload_bits` (without the
/// framing: N-Trace's MDO bits, E-Trace's te_inst payloads), bits per instruction with and
/// without framing, as `rvtrace stats` defines them.
pub fn encode_summary(
    instructions: u64,
    units: (u64, &str),
    bytes: u64,
    payload_bits: u64,
) -> String {
    let per = |bits| per_instruction(bits, instructions);
    format!(
        "{instructions} instructions, {} {}, {bytes} bytes, {:.3} bits/instruction with framing, {:.3} without",
        units.0,
        units.1,
        per(bytes * 8),
        per(payload_bits)
    )
}

/// `bits` per instruction of `instructions` (0 when there is none): every summary's figure.
pub fn per_instruction(bits: u64, instructions: u64) -> f64 {
    if instructions == 0 {
        0.0
    } else {
        bits as f64 / instructions as f64
    }
}

/// A hex number, `0x` or `0X` optional (addresses on the command line).
pub(crate) fn hex(v: &str) -> Option<u64> {
    let t = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    u64::from_str_radix(t, 16).ok()
}
