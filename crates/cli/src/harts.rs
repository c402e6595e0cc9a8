//! `decode ntrace|etrace --all-harts`: a trace of several harts (N-Trace 6.2 SRC, the E-Trace
//! encapsulation's *srcID*) decoded hart by hart, each to its own `--pcs`/`--flow`/`--brstack`/
//! `--text`/`--call-trace` files (`{hart}` in their paths), the harts spread over `--jobs` threads. The protocols differ only in how a
//! hart's decoder is made; the rest is here, once.
//!
//! The trace is read once to find its harts, then once more by each hart's decoder ([`Trace`]):
//! memory stays flat in the trace's size, as in a decode of one hart.

use crate::report::{self, Failure, Output, Warnings};
use rvtrace_flow::pctable::PcTable;
use rvtrace_flow::{FlowElement, FlowSink, FlowText, PcFormat, PcWriter, TraceDecoder};
use rvtrace_image::Image;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A trace of several harts, read from its start once per hart: a file is opened again each
/// time (the decoders stream it; after the first read it comes from the page cache), standard
/// input, which cannot be read twice, is held in memory.
#[derive(Clone, Copy, Debug)]
pub enum Trace<'a> {
    /// A file, by its path.
    File(&'a Path),
    /// All of standard input.
    Memory(&'a [u8]),
}

impl Trace<'_> {
    /// The trace from its start.
    pub fn reader(&self) -> Result<Box<dyn Read + '_>, Failure> {
        Ok(match *self {
            Trace::File(p) => Box::new(report::open_input(p)?),
            Trace::Memory(b) => Box::new(b),
        })
    }

    /// What the reads of the trace failed with, naming it.
    pub fn cannot_read(&self, e: std::io::Error) -> Failure {
        match self {
            Trace::File(p) => Failure::io(format_args!("{}: cannot read", p.display()), e),
            Trace::Memory(_) => Failure::io("reading stdin", e),
        }
    }
}

/// The placeholder replaced by the hart's number in output paths.
pub const PLACEHOLDER: &str = "{hart}";

/// `p` with [`PLACEHOLDER`] replaced by `hart` (decimal).
pub fn path(p: &Path, hart: u16) -> PathBuf {
    PathBuf::from(p.to_string_lossy().replace(PLACEHOLDER, &hart.to_string()))
}

/// The outputs of a decode per hart.
pub struct HartOutputs<'a> {
    /// The trace, as warnings name it.
    pub trace: &'a Path,
    /// How a hart is named in warnings and counts: `SRC` (N-Trace) or `srcID` (E-Trace).
    pub label: &'static str,
    /// `--pcs` with [`PLACEHOLDER`], and its format.
    pub pcs: Option<(&'a Path, PcFormat)>,
    /// `--flow` with [`PLACEHOLDER`].
    pub flow: Option<&'a Path>,
    /// `--list-ignored`.
    pub list_ignored: bool,
    /// The branch-stack output (`--brstack` with [`PLACEHOLDER`]).
    pub brstack: &'a crate::brstack::BrstackDecodeArgs,
    /// The text outputs (`--text`, `--call-trace` with [`PLACEHOLDER`]), and the ELF files
    /// and `--image` files whose functions they name (loaded by each hart's thread: the symbol
    /// tables' lazy parts are not shared between threads).
    pub text: (
        &'a crate::text_out::TextArgs,
        &'a [PathBuf],
        &'a [rvtrace_image::ImageSpec],
    ),
    /// The harts' address width (the branch stack's and the text's).
    pub xlen: rvtrace_isa::Xlen,
    /// `--max-warnings` (per hart).
    pub max_warnings: u64,
}

impl HartOutputs<'_> {
    /// The table the harts' PC lists share (`--pcs`' format).
    pub fn table<'i>(&self, image: &'i Image) -> Arc<PcTable<'i>> {
        let format = self.pcs.map_or(PcFormat::Text, |p| p.1);
        Arc::new(PcTable::new(image, format))
    }

    /// Checks the output paths before anything is written: each has [`PLACEHOLDER`] (a usage
    /// error otherwise), there is a hart, and no hart's file is an input or another output.
    pub fn check(&self, harts: &[u16], inputs: &[&Path]) -> Result<(), Failure> {
        let mut paths = vec![("--pcs", self.pcs.map(|p| p.0)), ("--flow", self.flow)];
        paths.extend(
            crate::brstack::decode_outputs(self.brstack)
                .into_iter()
                .chain(self.text.0.outputs())
                .map(|(o, p)| (o, Some(p))),
        );
        for &(opt, p) in &paths {
            if let Some(p) = p.filter(|p| !p.to_string_lossy().contains(PLACEHOLDER)) {
                return Err(Failure::Usage(format!(
                    "--all-harts writes one {opt} file per hart: put {PLACEHOLDER} in its path ({} has none)",
                    p.display()
                )));
            }
        }
        if harts.is_empty() {
            return Err(format!(
                "{}: no whole {} in the trace (no hart to decode)",
                self.trace.display(),
                if self.label == "SRC" {
                    "message"
                } else {
                    "packet"
                }
            )
            .into());
        }
        let outs: Vec<(&str, PathBuf)> = harts
            .iter()
            .flat_map(|&k| {
                paths
                    .iter()
                    .filter_map(move |(opt, p)| p.map(|p| (*opt, path(p, k))))
            })
            .collect();
        let outs: Vec<(&str, &Path)> = outs.iter().map(|(o, p)| (*o, p.as_path())).collect();
        report::distinct(inputs, &outs)
    }

    /// Decodes hart `hart`'s part of `trace` with `dec` (made to read that hart's messages or
    /// packets only) into its own files, the PC lists' text made once for all harts (`table`);
    /// its losses are warnings that name the hart. Returns the decoder's counts.
    pub fn decode<'i, D: TraceDecoder>(
        &self,
        (image, spaces): (&'i Image, Option<&'i rvtrace_image::space::Spaces>),
        table: &Arc<PcTable<'i>>,
        hart: u16,
        mut dec: D,
        trace: Trace<'_>,
    ) -> Result<(rvtrace_flow::DecodeStats, D::ProtocolStats), Failure> {
        let mut pcs = match (self.pcs, spaces) {
            (Some((p, format)), Some(spaces)) => Some(PcWriter::with_spaces(
                spaces,
                Output::create(&path(p, hart))?,
                format,
            )),
            (Some((p, _)), None) => Some(PcWriter::with_table(
                table.clone(),
                Output::create(&path(p, hart))?,
            )),
            (None, _) => None,
        };
        let mut flow = match self.flow {
            Some(p) => {
                let out = Output::create(&path(p, hart))?;
                let f = match spaces {
                    Some(spaces) => FlowText::with_spaces(spaces, out),
                    None => FlowText::new(image, out),
                };
                Some(f.with_ignored(self.list_ignored))
            }
            None => None,
        };
        let brstack = self.brstack.map_path(|p| path(p, hart));
        let mut brstack = crate::brstack::FlowOut::new(&brstack, image, self.xlen)?;
        let text = self.text.0.map_paths(|p| path(p, hart));
        let syms = text.symbols(self.text.1, self.text.2)?;
        let mut text = crate::text_out::TextOut::new(&text, image, syms.as_ref(), self.xlen)?;
        let mut warnings = Warnings::new(
            format_args!("{} {} {hart}", self.trace.display(), self.label),
            self.max_warnings,
        );
        let mut sink = |e: &FlowElement| {
            warnings.element(e);
            if let Some(w) = pcs.as_mut() {
                w.element(e);
            }
            if let Some(w) = flow.as_mut() {
                w.element(e);
            }
            if let Some(b) = brstack.as_mut() {
                b.element(e);
            }
            text.element(e);
        };
        let st = rvtrace_flow::decode_read(&mut dec, trace.reader()?, &mut sink);
        warnings.finish();
        let st = st.map_err(|e| trace.cannot_read(e))?;
        for (w, p) in [
            (pcs.map(PcWriter::finish), self.pcs.map(|p| p.0)),
            (flow.map(FlowText::finish), self.flow),
        ] {
            if let (Some(w), Some(p)) = (w, p) {
                let p = path(p, hart);
                w.map_err(|e| Failure::io(format_args!("writing {}", p.display()), e))?
                    .finish()?;
            }
        }
        if let Some(b) = brstack {
            b.finish()?;
        }
        text.finish()?;
        Ok((st, dec.protocol_stats()))
    }
}

/// Runs `one` for every hart of `harts` on up to `jobs` threads (each takes the next hart not
/// yet started); the results in the order of `harts`.
pub fn run<T: Send>(
    harts: &[u16],
    jobs: u64,
    one: impl Fn(u16) -> Result<T, Failure> + Sync,
) -> Vec<Result<T, Failure>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = (jobs as usize).clamp(1, harts.len().max(1));
    let mut results: Vec<Option<Result<T, Failure>>> = harts.iter().map(|_| None).collect();
    std::thread::scope(|sc| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&hart) = harts.get(k) else {
                            return done;
                        };
                        done.push((k, one(hart)));
                    }
                })
            })
            .collect();
        for w in workers {
            match w.join() {
                Ok(done) => done.into_iter().for_each(|(k, r)| results[k] = Some(r)),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Failure::Tool("a hart's decode did not run".into()))))
        .collect()
}
