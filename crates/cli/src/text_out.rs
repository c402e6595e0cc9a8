//! `--text FILE` and `--call-trace FILE` of `rvtrace decode ntrace|etrace`: the instruction
//! trace and the call trace of `rvtrace_analysis::text`, each to its own file, beside the
//! decode's other outputs.

use crate::report::{Failure, Output};
use rvtrace_analysis::symbols::Function;
use rvtrace_analysis::{CallTrace, Symbols, TextTrace};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The text outputs of a decode.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TextArgs {
    /// Write every retired instruction to FILE: address, <symbol+offset>, disassembly (GNU
    /// objdump's), with traps, syncs, losses and time between them.
    #[arg(long, value_name = "FILE")]
    text: Option<PathBuf>,
    /// Write the calls and returns to FILE, indented by call depth (as `perf script
    /// --call-trace`), from the shadow call stack `rvtrace profile` uses.
    #[arg(long, value_name = "FILE")]
    call_trace: Option<PathBuf>,
}

impl TextArgs {
    /// The outputs asked for, for `report::distinct`.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        let mut v = Vec::new();
        if let Some(p) = &self.text {
            v.push(("--text", p.as_path()));
        }
        if let Some(p) = &self.call_trace {
            v.push(("--call-trace", p.as_path()));
        }
        v
    }

    /// These outputs with their paths mapped by `f` (one file per hart).
    pub fn map_paths(&self, f: impl Fn(&Path) -> PathBuf) -> Self {
        TextArgs {
            text: self.text.as_deref().map(&f),
            call_trace: self.call_trace.as_deref().map(&f),
        }
    }

    /// The functions of every ELF file, when a text output is asked for.
    pub fn symbols(&self, elfs: &[PathBuf]) -> Result<Option<Symbols>, Failure> {
        if self.text.is_none() && self.call_trace.is_none() {
            return Ok(None);
        }
        if let [one] = elfs {
            return Symbols::load(one).map(Some).map_err(Failure::Tool);
        }
        let mut all: Vec<Function> = Vec::new();
        for e in elfs {
            all.extend_from_slice(Symbols::load(e).map_err(Failure::Tool)?.functions());
        }
        Ok(Some(Symbols::from_functions(all)))
    }
}

type Out = BufWriter<Output>;

/// The sinks writing the text outputs.
pub struct TextOut<'a> {
    text: Option<(TextTrace<'a, Out>, &'a Path)>,
    calls: Option<(CallTrace<'a, Out>, &'a Path)>,
}

impl<'a> TextOut<'a> {
    /// Creates the files asked for in `args` (`syms` from [`TextArgs::symbols`]).
    pub fn new(
        args: &'a TextArgs,
        image: &'a Image,
        syms: Option<&'a Symbols>,
        xlen: Xlen,
    ) -> Result<Self, Failure> {
        let isa = IsaConfig::new(xlen);
        let mut t = TextOut {
            text: None,
            calls: None,
        };
        let Some(syms) = syms else {
            return Ok(t);
        };
        if let Some(p) = &args.text {
            let out = BufWriter::with_capacity(1 << 16, Output::create(p)?);
            t.text = Some((TextTrace::new(image, syms, isa, out), p));
        }
        if let Some(p) = &args.call_trace {
            let out = BufWriter::with_capacity(1 << 16, Output::create(p)?);
            t.calls = Some((CallTrace::new(image, syms, isa, out), p));
        }
        Ok(t)
    }

    /// Finishes every file.
    pub fn finish(self) -> Result<(), Failure> {
        let done = |r: std::io::Result<Out>, p: &Path| -> Result<(), Failure> {
            let w = r.map_err(|e| Failure::io(format_args!("writing {}", p.display()), e))?;
            let out = w.into_inner().map_err(|e| {
                Failure::io(format_args!("writing {}", p.display()), e.into_error())
            })?;
            out.finish()
        };
        if let Some((t, p)) = self.text {
            done(t.finish(), p)?;
        }
        if let Some((c, p)) = self.calls {
            done(c.finish().map(|(w, _)| w), p)?;
        }
        Ok(())
    }
}

impl FlowSink for TextOut<'_> {
    fn element(&mut self, e: &FlowElement) {
        if let Some((t, _)) = self.text.as_mut() {
            t.element(e);
        }
        if let Some((c, _)) = self.calls.as_mut() {
            c.element(e);
        }
    }
}
