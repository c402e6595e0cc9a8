//! `--text FILE` and `--call-trace FILE` of `rvtrace decode ntrace|etrace`: the instruction
//! trace and the call trace of `rvtrace_analysis::text`, each to its own file, beside the
//! decode's other outputs.

use crate::report::{Failure, Output};
use rvtrace_analysis::symbols::Function;
use rvtrace_analysis::{CallTrace, Symbols, TextTrace};
use rvtrace_flow::{CfClass, FlowElement, FlowSink};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The text outputs of a decode.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TextArgs {
    /// Write every retired instruction to FILE: address, <symbol+offset>, disassembly (GNU
    /// objdump's), with traps, syncs, losses and time between them, and source lines when the
    /// ELF has DWARF (see `rvtrace text --help`).
    #[arg(long, value_name = "FILE")]
    text: Option<PathBuf>,
    /// Write the calls and returns to FILE, indented by call depth (as `perf script
    /// --call-trace`), from the shadow call stack `rvtrace profile` uses.
    #[arg(long, value_name = "FILE")]
    call_trace: Option<PathBuf>,
    /// No source lines in --text (shown by default when the ELF has DWARF line tables).
    #[arg(long, requires = "text")]
    no_lines: bool,
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
            no_lines: self.no_lines,
        }
    }

    /// The functions of every ELF file, when a text output is asked for.
    pub fn symbols(
        &self,
        elfs: &[PathBuf],
        images: &[rvtrace_image::ImageSpec],
    ) -> Result<Option<Symbols>, Failure> {
        if self.text.is_none() && self.call_trace.is_none() {
            return Ok(None);
        }
        let moved = image_functions(images)?;
        if let ([one], true) = (elfs, moved.is_empty()) {
            return Symbols::load(one)
                .map(Some)
                .map_err(|e| Failure::Tool(e.to_string()));
        }
        let mut all: Vec<Function> = moved;
        for e in elfs {
            all.extend_from_slice(Symbols::load(e).map_err(|e| e.to_string())?.functions());
        }
        Ok(Some(Symbols::from_functions(all)))
    }
}

/// The functions of the `--image` ELF files where they were loaded (raw binaries have none).
pub fn image_functions(images: &[rvtrace_image::ImageSpec]) -> Result<Vec<Function>, Failure> {
    let mut moved = Vec::new();
    for spec in images {
        // Read once: the magic says whether there are symbols, the same bytes give them.
        let name = spec.path.display().to_string();
        let bytes = std::fs::read(&spec.path).map_err(|e| Failure::io(&name, e))?;
        if spec.kind == rvtrace_image::SpecKind::Kallsyms {
            let text = String::from_utf8_lossy(&bytes);
            let syms = rvtrace_image::system::parse_kallsyms(&text, spec.at.unwrap_or(0))
                .map_err(|e| Failure::Tool(format!("{name}: {e}")))?;
            moved.extend(syms.into_iter().map(|s| Function {
                name: s.name,
                start: s.addr,
                end: s.addr.saturating_add(s.size.max(1)),
            }));
        } else if spec.kind == rvtrace_image::SpecKind::Code
            && rvtrace_image::ImageSpec::is_elf(&bytes)
        {
            let s = Symbols::from_elf(&bytes).map_err(|e| Failure::Tool(format!("{name}: {e}")))?;
            moved.extend(s.moved(spec.at.unwrap_or(0)).functions().iter().cloned());
        }
    }
    Ok(moved)
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
            let trace = TextTrace::new(image, syms, isa, out);
            let trace = if args.no_lines {
                trace.without_lines()
            } else {
                trace
            };
            t.text = Some((trace, p));
        }
        if let Some(p) = &args.call_trace {
            let out = BufWriter::with_capacity(1 << 16, Output::create(p)?);
            t.calls = Some((CallTrace::new(image, syms, isa, out), p));
        }
        Ok(t)
    }

    /// Whether no text output was asked for (then elements need not come here).
    pub fn is_off(&self) -> bool {
        self.text.is_none() && self.calls.is_none()
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

/// Hands `e` to `f`, out of line: a decode's sink calls its outputs that are rarely used (losses,
/// `--brstack`, `--text`) through this, so that the common path (a range for `--pcs`) keeps
/// their code and registers out of its way.
#[cold]
#[inline(never)]
fn cold_element(f: &mut impl FnMut(&FlowElement), e: &FlowElement) {
    f(e)
}

/// The sink of a decode on one thread (`decode ntrace|etrace` without `--jobs`): `--pcs`,
/// `--flow`, and `other` (the losses, `--brstack`, `--text`), which sees ranges only when
/// `other_ranges` (most elements are ranges: without it, they go to `--pcs` alone, through
/// [`FlowSink::range`], and to `--flow`). Each output gets every element it would get on its
/// own, in order.
pub struct DecodeSink<'o, P, F, O> {
    /// `--pcs`.
    pub pcs: Option<&'o mut P>,
    /// `--flow`.
    pub flow: Option<&'o mut F>,
    /// The other outputs.
    pub other: O,
    /// Whether `other` wants ranges too.
    pub other_ranges: bool,
}

impl<P: FlowSink, F: FlowSink, O: FnMut(&FlowElement)> DecodeSink<'_, P, F, O> {
    /// A range for `--flow` or `other`.
    #[inline(never)]
    fn range_to_others(&mut self, e: &FlowElement) {
        if let Some(f) = self.flow.as_deref_mut() {
            f.element(e);
        }
        if self.other_ranges {
            cold_element(&mut self.other, e);
        }
    }
}

impl<P: FlowSink, F: FlowSink, O: FnMut(&FlowElement)> FlowSink for DecodeSink<'_, P, F, O> {
    fn element(&mut self, e: &FlowElement) {
        if let Some(w) = self.pcs.as_deref_mut() {
            w.element(e);
        }
        if let Some(f) = self.flow.as_deref_mut() {
            f.element(e);
        }
        if self.other_ranges || !matches!(e, FlowElement::Range { .. }) {
            cold_element(&mut self.other, e);
        }
    }

    #[inline]
    fn range(&mut self, start: u64, last: u64, count: u64, class: CfClass, taken: Option<bool>) {
        if let Some(w) = self.pcs.as_deref_mut() {
            w.range(start, last, count, class, taken);
        }
        if self.flow.is_some() || self.other_ranges {
            self.range_to_others(&FlowElement::Range {
                start,
                last,
                count,
                class,
                taken,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DecodeSink;
    use rvtrace_flow::{CfClass, FlowElement, FlowSink, LossReason, SyncReason};

    /// What each output of a [`DecodeSink`] received.
    type Got = (Vec<FlowElement>, Vec<FlowElement>, Vec<FlowElement>);

    /// `elements` through a sink with the outputs asked for, ranges given by their fields
    /// (`FlowSink::range`, as decoders give them) or as elements.
    fn deliver(elements: &[FlowElement], outputs: (bool, bool, bool), by_fields: bool) -> Got {
        let (mut pcs, mut flow, mut other) = (Vec::new(), Vec::new(), Vec::new());
        let mut sink = DecodeSink {
            pcs: outputs.0.then_some(&mut pcs),
            flow: outputs.1.then_some(&mut flow),
            other: |e: &FlowElement| other.push(e.clone()),
            other_ranges: outputs.2,
        };
        for e in elements {
            match *e {
                FlowElement::Range {
                    start,
                    last,
                    count,
                    class,
                    taken,
                } if by_fields => sink.range(start, last, count, class, taken),
                _ => sink.element(e),
            }
        }
        (pcs, flow, other)
    }

    /// Ranges given by their fields reach every output as the elements do, and `other` gets
    /// every element but the ranges unless it asks for them.
    #[test]
    fn ranges_by_fields_equal_elements() {
        let range = |start: u64, taken: Option<bool>| FlowElement::Range {
            start,
            last: start + 8,
            count: 3,
            class: CfClass::Branch,
            taken,
        };
        let elements = vec![
            FlowElement::Sync {
                addr: 0x1000,
                reason: SyncReason::Start,
            },
            range(0x1000, Some(true)),
            range(0x2000, None),
            FlowElement::Loss {
                offset: 5,
                skipped: Some(2),
                reason: LossReason::Malformed("x".into()),
            },
            range(0x3000, Some(false)),
            FlowElement::End { offset: 9 },
        ];
        for k in 0..8 {
            let outputs = (k & 1 != 0, k & 2 != 0, k & 4 != 0);
            let got = deliver(&elements, outputs, true);
            assert_eq!(got, deliver(&elements, outputs, false), "{outputs:?}");
            let all = |on: bool| if on { elements.clone() } else { Vec::new() };
            assert_eq!(got.0, all(outputs.0));
            assert_eq!(got.1, all(outputs.1));
            let other: Vec<FlowElement> = elements
                .iter()
                .filter(|e| outputs.2 || !matches!(e, FlowElement::Range { .. }))
                .cloned()
                .collect();
            assert_eq!(got.2, other);
        }
    }
}
