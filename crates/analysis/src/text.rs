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
use crate::symbols::Symbols;
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink, FlowText};
use rvtrace_image::Image;
use rvtrace_isa::disasm::Disasm;
use rvtrace_isa::insn::{decode, Extensions};
use rvtrace_isa::IsaConfig;
use std::io::{self, Write};

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
/// elements between them.
pub struct TextTrace<'a, W: Write> {
    image: &'a Image,
    syms: &'a Symbols,
    isa: IsaConfig,
    out: W,
    err: Option<io::Error>,
}

impl<'a, W: Write> TextTrace<'a, W> {
    /// A trace of the program in `image` (its instructions) named with `syms`, written to `out`
    /// (buffer it: one write per line).
    pub fn new(image: &'a Image, syms: &'a Symbols, isa: IsaConfig, out: W) -> Self {
        TextTrace {
            image,
            syms,
            isa,
            out,
            err: None,
        }
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
            let (Some(bits), Some(len)) = (self.image.fetch(pc), insn_len_at(self.image, pc))
            else {
                // Not in the image: nothing to print, and no length to go on with.
                return writeln!(
                    self.out,
                    "{}  (not in the program: {} instructions from here)",
                    AddrSym::new(self.syms, pc),
                    count - k
                );
            };
            let bits = if len == 2 { bits & 0xffff } else { bits };
            let insn = decode(bits, self.isa.xlen, &Extensions::ALL);
            writeln!(
                self.out,
                "{}  {}",
                AddrSym::new(self.syms, pc),
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
                let mut t = FlowText::new(self.image, Vec::new());
                t.element(e);
                self.out.write_all(&t.finish()?)
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
        CallTrace {
            profiler: Profiler::new(image, syms, isa).with_stack_events(),
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
