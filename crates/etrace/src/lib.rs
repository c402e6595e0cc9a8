//! E-Trace (Efficient Trace for RISC-V, `../shared/specs/etrace-v2.0`): the `te_inst` packet codec
//! with its encapsulation, and (with the `std` feature) the reference-flow configuration files,
//! the branch trace encoder and the decoder.
//!
//! * [`params`]: discovery parameters ([`Params`]) and run-time options ([`IOptions`]).
//! * [`codec`] (`no_std`): [`TeInst`] payloads of every format, sign-based compression,
//!   encapsulation (`etrace-encap`) and the reference flow's `te_inst_raw` framing.
//! * [`config`]: the reference flow's `.scf`/`.ucf` configuration files and [`config::TraceConfig`].
//! * [`code`]: the decoder's block table of the program.
//! * [`encoder`]: the branch trace encoder (`exampleAlgorithm.adoc`), rvtrace's and the
//!   reference flow's behaviour.
//! * [`dump`]: a packet stream as text (`rvtrace dump etrace`).
//! * [`decoder`]: the decoder (`decoder.adoc`), producing `rvtrace_flow::FlowElement`s.
//! * [`predict`]: the branch predictor and jump target cache both sides keep.
//! * [`options`]: the options both ends must agree on: the command line's arguments (`clap`
//!   feature), the sidecar's content and, resolved, the configuration.
//! * [`meta`]: the sidecar (`TRACE.meta`) with the encoder settings the trace does not carry.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
pub mod code;
pub mod codec;
#[cfg(feature = "std")]
pub mod config;
#[cfg(feature = "std")]
pub mod decoder;
#[cfg(feature = "std")]
pub mod dump;
#[cfg(feature = "std")]
pub mod encoder;
#[cfg(feature = "std")]
pub mod meta;
#[cfg(feature = "std")]
pub mod options;
pub mod params;
pub mod predict;
#[cfg(feature = "std")]
pub mod scan;
#[cfg(feature = "std")]
pub mod stats;

pub use codec::{CodecError, TeInst};
pub use params::{IOptions, Params};
