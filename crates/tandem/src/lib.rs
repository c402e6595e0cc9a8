//! Tandem-verification trace (`../shared/specs/tandem-trace-protocol-2018.txt`, Bluespec's
//! draft trace protocol): codec, dump, producer and checker.
//!
//! * [`codec`]: the records of chapter 2 with the parameters of chapter 3 (XLEN, FLEN, MLEN).
//! * [`dump`]: a trace for people, one group per instruction.
//! * [`meta`]: the sidecar that carries the parameters and, for a partial trace (3.2), the
//!   elements that are absent.
//! * [`producer`]: the hart model's observer that writes the trace of a run.
//! * [`checker`]: tandem verification of a trace against the hart model (3.1, 3.2).
//! * Instructions in reports are printed by the one disassembler, `rvtrace_isa::disasm`.

#![warn(missing_docs)]

pub mod checker;
pub mod codec;
pub mod dump;
pub mod meta;
pub mod producer;

pub use codec::{DecodeError, Params, ParamsError, Record};
pub use meta::{Elements, Meta, MetaError, RunEnd, UnknownElement};
