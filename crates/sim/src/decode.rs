//! The hart's instruction decoder lives in [`rvtrace_isa::insn`], the one decoder rvtrace has
//! (shared with the disassembler, [`rvtrace_isa::disasm`]); re-exported here so the hart's code
//! names it as before.

pub use rvtrace_isa::insn::{decode, Extensions, Insn, Op};
