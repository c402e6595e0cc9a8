//! `rvtrace decode ntrace|etrace --jobs N`: the outputs that are a concatenation per element
//! (`--pcs` in both formats, `--flow`) are formatted by the thread that decodes each chunk into
//! its own buffer ([`Part`]); the calling thread writes the buffers in order ([`Outputs`]) and
//! hands the losses (warnings) and, for the outputs that keep state across elements
//! (`--brstack`, `--text`, `--call-trace`), every element to the command's own sink.

use crate::report::{Failure, Output};
use rvtrace_flow::pctable::PcTable;
use rvtrace_flow::{FlowElement, FlowSink, FlowText, PcFormat, PcWriter, PCS_BIN_MAGIC};
use rvtrace_image::Image;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What each chunk's [`Part`] holds: made on the decoding threads.
pub struct Parts<'a> {
    image: &'a Image,
    /// The PC list's table, shared by every chunk (built once, lazily per segment).
    pcs: Option<Arc<PcTable<'a>>>,
    flow: bool,
    /// `--list-ignored`: the flow text lists the messages stepped over.
    list_ignored: bool,
    keep: bool,
    /// Buffers written out, for the next parts (fresh memory costs a page fault per 4 KiB: as
    /// much system time as the formatting's user time).
    pool: Mutex<Vec<Vec<u8>>>,
}

impl<'a> Parts<'a> {
    /// An empty part for the next chunk.
    pub fn part(&self) -> Part<'a> {
        Part {
            pcs: self
                .pcs
                .as_ref()
                .map(|t| PcWriter::with_table(Arc::clone(t), self.buffer())),
            flow: self
                .flow
                .then(|| FlowText::new(self.image, self.buffer()).with_ignored(self.list_ignored)),
            elements: Vec::new(),
            keep: self.keep,
        }
    }

    fn buffer(&self) -> Vec<u8> {
        self.pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default()
    }

    fn recycle(&self, mut b: Vec<u8>) {
        b.clear();
        if let Ok(mut p) = self.pool.lock() {
            p.push(b);
        }
    }
}

/// One chunk's outputs, formatted in memory.
pub struct Part<'a> {
    pcs: Option<PcWriter<'a, Vec<u8>>>,
    flow: Option<FlowText<'a, Vec<u8>>>,
    /// Every element when the command keeps them (outputs with state across elements), else
    /// the losses only.
    elements: Vec<FlowElement>,
    keep: bool,
}

impl FlowSink for Part<'_> {
    #[inline]
    fn element(&mut self, e: &FlowElement) {
        if let Some(w) = self.pcs.as_mut() {
            w.element(e);
        }
        if let Some(w) = self.flow.as_mut() {
            w.element(e);
        }
        if self.keep || matches!(e, FlowElement::Loss { .. } | FlowElement::Ignored { .. }) {
            self.elements.push(e.clone());
        }
    }
}

/// An output file the parts are written to, with its first error.
struct Out {
    out: Output,
    err: Option<io::Error>,
}

impl Out {
    /// Write `r`'s bytes after the first `skip`; gives the buffer back.
    fn put(&mut self, r: io::Result<Vec<u8>>, skip: usize) -> Option<Vec<u8>> {
        let b = match r {
            Ok(b) => b,
            Err(e) => {
                self.err.get_or_insert(e);
                return None;
            }
        };
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(b.get(skip..).unwrap_or_default()) {
                self.err = Some(e);
            }
        }
        Some(b)
    }

    fn finish(self) -> io::Result<Output> {
        match self.err {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

/// The files `--pcs` and `--flow` of a parallel decode, written part by part in order.
pub struct Outputs {
    pcs: Option<(Out, PcFormat)>,
    flow: Option<Out>,
}

impl Outputs {
    /// Create the outputs asked for (`--pcs FILE` in `format`, `--flow FILE`).
    pub fn create(
        pcs: Option<&Path>,
        format: PcFormat,
        flow: Option<&Path>,
    ) -> Result<Outputs, Failure> {
        let open = |p: &Path| -> Result<Out, Failure> {
            Ok(Out {
                out: Output::create(p)?,
                err: None,
            })
        };
        let mut o = Outputs {
            pcs: pcs.map(open).transpose()?.map(|o| (o, format)),
            flow: flow.map(open).transpose()?,
        };
        if let Some((o, PcFormat::Bin)) = o.pcs.as_mut() {
            let _ = o.put(Ok(PCS_BIN_MAGIC.to_vec()), 0);
        }
        Ok(o)
    }

    /// The parts for these outputs; `keep`: every element is kept for `write`'s sink;
    /// `list_ignored`: the flow text lists the messages stepped over (`--list-ignored`).
    pub fn parts<'a>(&self, image: &'a Image, keep: bool, list_ignored: bool) -> Parts<'a> {
        Parts {
            image,
            pcs: self
                .pcs
                .as_ref()
                .map(|p| Arc::new(PcTable::new(image, p.1))),
            flow: self.flow.is_some(),
            list_ignored,
            keep,
            pool: Mutex::new(Vec::new()),
        }
    }

    /// Write a part (the next in the trace's order); its losses (or every element, when kept)
    /// go to `sink`. Always true: a write error is reported by [`Outputs::finish`], the decode
    /// goes on as with one thread.
    pub fn write(&mut self, p: Part<'_>, parts: &Parts<'_>, sink: &mut dyn FlowSink) -> bool {
        if let (Some((o, format)), Some(w)) = (self.pcs.as_mut(), p.pcs) {
            // Each part's binary PC list starts with the magic: the file has it once.
            let skip = match format {
                PcFormat::Bin => PCS_BIN_MAGIC.len(),
                PcFormat::Text => 0,
            };
            if let Some(b) = o.put(w.finish(), skip) {
                parts.recycle(b);
            }
        }
        if let (Some(o), Some(w)) = (self.flow.as_mut(), p.flow) {
            if let Some(b) = o.put(w.finish(), 0) {
                parts.recycle(b);
            }
        }
        for e in &p.elements {
            sink.element(e);
        }
        true
    }

    /// The `--pcs` and `--flow` outputs (to finish), or the first error of each.
    #[allow(clippy::type_complexity)]
    pub fn finish(self) -> (Option<io::Result<Output>>, Option<io::Result<Output>>) {
        (
            self.pcs.map(|(o, _)| o.finish()),
            self.flow.map(Out::finish),
        )
    }
}
