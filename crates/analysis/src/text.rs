//! Traces for people: every retired instruction with its symbol and disassembly
//! ([`TextTrace`]), and the calls and returns indented by call depth in the manner of
//! `perf script --call-trace` ([`CallTrace`]).
//!
//! The instruction trace prints one line per retired instruction,
//!
//! ```text
//! 0x80000204 <main+0x4>  add sp,sp,-16
//! ```
//!
//! the disassembly being [`rvtrace_isa::disasm`]'s (GNU objdump 2.40's dialect), and between them
//! the flow's other elements as [`rvtrace_flow::FlowText`] words them (`trap exception cause=11
//! epc=... handler=...`, `sync ...`, `context ...`, `time ...`, `loss at ...`, `end at ...`).
//! When the program has DWARF, a line before an instruction names its source position when
//! it changes, with the chain of inlined functions ([`source_line`]):
//!
//! ```text
//!   programs/src/inline.c:13 square (inlined into sum_squares at programs/src/inline.c:21, into main at programs/src/inline.c:55)
//! 0x80000262 <main+0x52>  mul a4,a4,a4
//! ```
//!
//! The call trace takes its calls and returns from the [`Profiler`]'s shadow stack
//! ([`StackEvent`]): the same classification (calls, returns, tail calls, `longjmp`, traps)
//! that builds the profile's call graph, so its call counts are the call graph's. As perf
//! prints a call trace (`perf script --call-trace` / `--call-ret-trace`: the target symbol
//! indented by four spaces per call level), one line per stack move:
//!
//! ```text
//!          123 call         main
//!          130 call             puts
//!          190 return           puts
//! ```
//!
//! with the number of instructions retired when it happened, the move (`call`, `tailcall`,
//! `trap`, `return`, `trapret`), and the function entered (for a return: the function left, at
//! its call's indentation). Losses and the end of the trace are lines of their own.

use crate::profile::{Profile, Profiler, StackEvent, StackOp};
use crate::symbols::{Line, Symbols};
use crate::system::{Place, System};
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink, FlowText};
use rvtrace_image::Image;
use rvtrace_isa::disasm::Disasm;
use rvtrace_isa::insn::{decode, Extensions};
use rvtrace_isa::IsaConfig;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::Arc;

/// `addr <symbol+0xoff>` (`<symbol>` at its first instruction; the address alone outside every
/// function), as the flow text names addresses.
pub struct AddrSym<'a> {
    syms: &'a Symbols,
    addr: u64,
}

impl<'a> AddrSym<'a> {
    /// `addr` named with `syms`.
    pub fn new(syms: &'a Symbols, addr: u64) -> Self {
        AddrSym { syms, addr }
    }
}

impl std::fmt::Display for AddrSym<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.addr;
        match self.syms.function_at(a) {
            Some(s) if s.start == a => write!(f, "{a:#x} <{}>", s.name),
            Some(s) => write!(f, "{a:#x} <{}+{:#x}>", s.name, a - s.start),
            None => write!(f, "{a:#x}"),
        }
    }
}

/// The instruction trace ([`FlowSink`]): one line per retired instruction, the flow's other
/// elements between them, and where the program has DWARF, a source line before each
/// instruction whose source position differs from the last one shown ([`source_line`]).
pub struct TextTrace<'a, W: Write> {
    /// The space the flow is in: its code and symbols.
    place: Place<'a>,
    isa: IsaConfig,
    out: W,
    err: Option<io::Error>,
    /// The source line of each address seen (by space; `None`: none), when lines are shown.
    lines: Option<LineCache>,
    /// The source line shown last.
    shown: Option<Arc<str>>,
}

/// The source line of each address seen, by space (`None`: none).
type LineCache = HashMap<(usize, u64), Option<Arc<str>>>;

/// The source position of the instruction at `addr`, as [`TextTrace`] shows it (indented by
/// two spaces): `FILE:LINE`, and when the code was inlined, the function it belongs to and the
/// chain of calls inlined, innermost first, as `addr2line -i -f` lists them:
///
/// ```text
///   programs/src/inline.c:13 square (inlined into sum_squares at programs/src/inline.c:21, into main at programs/src/inline.c:55)
/// ```
///
/// `None` when the DWARF gives `addr` no line.
pub fn source_line(syms: &Symbols, addr: u64) -> Option<String> {
    let frames = syms.frames_at(addr);
    let first = frames.first()?;
    let at = |l: &Line| format!("{}:{}", l.file, l.line);
    let mut s = format!("  {}", at(first.line.as_ref()?));
    if frames.len() > 1 {
        let _ = write!(s, " {} (inlined", first.function);
        for (k, f) in frames[1..].iter().enumerate() {
            let sep = if k == 0 { " into" } else { ", into" };
            let _ = write!(s, "{sep} {}", f.function);
            if let Some(l) = &f.line {
                let _ = write!(s, " at {}", at(l));
            }
        }
        s.push(')');
    }
    Some(s)
}

impl<'a, W: Write> TextTrace<'a, W> {
    /// A trace of the program in `image` (its instructions) named with `syms`, written to `out`
    /// (buffer it: one write per line).
    /// Source lines are shown when `syms` has DWARF line tables.
    pub fn new(image: &'a Image, syms: &'a Symbols, isa: IsaConfig, out: W) -> Self {
        Self::at(Place::one(image, syms), isa, out)
    }

    /// A trace of a program of several address spaces: each instruction read and named in the
    /// space the flow is in; source lines shown when any space's symbols have line tables.
    pub fn in_system(system: &'a System, isa: IsaConfig, out: W) -> Self {
        let lines = (0..system.len()).any(|i| system.syms(i).has_lines());
        let mut t = Self::at(Place::start(system), isa, out);
        t.lines = lines.then(HashMap::new);
        t
    }

    fn at(place: Place<'a>, isa: IsaConfig, out: W) -> Self {
        TextTrace {
            place,
            isa,
            out,
            err: None,
            lines: place.syms.has_lines().then(HashMap::new),
            shown: None,
        }
    }

    /// Without source lines (the trace is then the same as for a program without DWARF).
    pub fn without_lines(mut self) -> Self {
        self.lines = None;
        self
    }

    /// Writes the source line of `pc` if it is not the one shown last.
    fn source(&mut self, pc: u64) -> io::Result<()> {
        let Some(lines) = self.lines.as_mut() else {
            return Ok(());
        };
        let syms = self.place.syms;
        let line = lines
            .entry((self.place.index, pc))
            .or_insert_with(|| source_line(syms, pc).map(Arc::from));
        match line {
            Some(l) if self.shown.as_ref() != Some(l) => {
                writeln!(self.out, "{l}")?;
                self.shown = Some(l.clone());
            }
            Some(_) => {}
            // No line here: show the next known one even if it is the same as before.
            None => self.shown = None,
        }
        Ok(())
    }

    /// Takes what was written so far (a writer in memory: the text of the elements given
    /// since the last call), or the first I/O error.
    pub fn take_written(&mut self) -> io::Result<W>
    where
        W: Default,
    {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        Ok(std::mem::take(&mut self.out))
    }

    /// Flushes and returns the writer, or the first I/O error.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn range(&mut self, start: u64, count: u64) -> io::Result<()> {
        let mut pc = start;
        for k in 0..count {
            let image = self.place.image;
            let (Some(bits), Some(len)) = (image.fetch(pc), insn_len_at(image, pc)) else {
                // Not in the image: nothing to print, and no length to go on with.
                return writeln!(
                    self.out,
                    "{}  (not in the program: {} instructions from here)",
                    AddrSym::new(self.place.syms, pc),
                    count - k
                );
            };
            let bits = if len == 2 { bits & 0xffff } else { bits };
            self.source(pc)?;
            let insn = decode(bits, self.isa.xlen, &Extensions::ALL);
            writeln!(
                self.out,
                "{}  {}",
                AddrSym::new(self.place.syms, pc),
                Disasm::with_insn(insn, bits, pc, self.isa.xlen)
            )?;
            pc = pc.wrapping_add(len);
        }
        Ok(())
    }

    fn write(&mut self, e: &FlowElement) -> io::Result<()> {
        match *e {
            FlowElement::Range { start, count, .. } => self.range(start, count),
            _ => {
                // The flow text's words for everything else.
                let mut t = FlowText::new(self.place.image, Vec::new());
                t.element(e);
                self.out.write_all(&t.finish()?)?;
                if let FlowElement::Context { privilege, context } = *e {
                    self.place.report(privilege, context);
                }
                Ok(())
            }
        }
    }
}

impl<W: Write> FlowSink for TextTrace<'_, W> {
    fn element(&mut self, e: &FlowElement) {
        if self.err.is_none() {
            if let Err(err) = self.write(e) {
                self.err = Some(err);
            }
        }
    }

    fn stop_requested(&self) -> bool {
        self.err.is_some()
    }
}

/// The call trace ([`FlowSink`]): the [`Profiler`]'s stack moves as text. It also yields the
/// profile ([`CallTrace::finish`]).
pub struct CallTrace<'a, W: Write> {
    profiler: Profiler<'a>,
    events: Vec<StackEvent>,
    out: W,
    err: Option<io::Error>,
    /// Stack moves written.
    written: u64,
}

impl<'a, W: Write> CallTrace<'a, W> {
    /// A call trace of the program in `image` named with `syms`, written to `out`.
    pub fn new(image: &'a Image, syms: &'a Symbols, isa: IsaConfig, out: W) -> Self {
        Self::with_profiler(Profiler::new(image, syms, isa), out)
    }

    /// A call trace of a program of several address spaces, each function named in its own.
    pub fn in_system(system: &'a System, isa: IsaConfig, out: W) -> Self {
        Self::with_profiler(Profiler::in_system(system, isa), out)
    }

    fn with_profiler(profiler: Profiler<'a>, out: W) -> Self {
        CallTrace {
            profiler: profiler.with_stack_events(),
            events: Vec::new(),
            out,
            err: None,
            written: 0,
        }
    }

    /// Flushes the writer; returns it and the profile of the same flow.
    pub fn finish(mut self) -> io::Result<(W, Profile)> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok((self.out, self.profiler.profile()))
    }

    /// Stack moves written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn write(&mut self, e: &FlowElement) -> io::Result<()> {
        for ev in self.events.drain(..) {
            let (op, f) = match ev.op {
                StackOp::Call => ("call", ev.to),
                StackOp::TailCall => ("tailcall", ev.to),
                StackOp::Trap => ("trap", ev.to),
                StackOp::Return => ("return", ev.from),
                StackOp::TrapReturn => ("trapret", ev.from),
            };
            let name = f.map_or("?", |f| self.profiler.function_name(f));
            let indent = 4 * ev.depth.saturating_sub(1);
            writeln!(self.out, "{:>12} {op:<9}{:indent$}{name}", ev.index, "")?;
            self.written += 1;
        }
        match e {
            FlowElement::Loss { .. } | FlowElement::End { .. } => {
                let mut t = FlowText::new(self.profiler.image(), Vec::new());
                t.element(e);
                self.out.write_all(&t.finish()?)
            }
            _ => Ok(()),
        }
    }
}

impl<W: Write> FlowSink for CallTrace<'_, W> {
    fn element(&mut self, e: &FlowElement) {
        self.profiler.element(e);
        self.profiler.drain_stack_events(&mut self.events);
        if self.err.is_none() {
            if let Err(err) = self.write(e) {
                self.err = Some(err);
            }
        }
        self.events.clear();
    }

    fn stop_requested(&self) -> bool {
        self.err.is_some()
    }
}
