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
//!
//! A program and its trace (made by `rvtrace encode etrace` with its defaults) to the PCs of
//! the instructions executed (`examples/decode_pcs.rs` reads the settings from the sidecar):
//!
//! ```
//! # let run = rvtrace_testkit::run_test_program("recurse-rv64gc", 4);
//! # let program = rvtrace_testkit::test_program("recurse-rv64gc");
//! # let trace = std::env::temp_dir().join(format!("rvtrace-etrace-doc-{}.te", std::process::id()));
//! # let inputs = rvtrace_etrace::config::ConfigInputs { xlen_bits: 64, ..Default::default() };
//! # let defaults = rvtrace_etrace::config::TraceConfig::build(&inputs)?;
//! # std::fs::write(&trace, rvtrace_etrace::encoder::encode(&defaults, &run.records)?)?;
//! use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
//! use rvtrace_flow::{decode_all, for_each_pc, FlowElement};
//!
//! let mut image = rvtrace_image::Image::new();
//! let isa = rvtrace_isa::IsaConfig::new(image.load_file(&program)?.xlen);
//! let mut decoder = Decoder::new(&image, DecoderConfig::new(isa));
//! let mut pcs = Vec::new();
//! decode_all(&mut decoder, &std::fs::read(&trace)?, &mut |e: &FlowElement| {
//!     if let FlowElement::Range { start, count, .. } = e {
//!         for_each_pc(&image, *start, *count, |pc| pcs.push(pc)).unwrap();
//!     }
//! });
//! # std::fs::remove_file(&trace)?;
//! # assert_eq!(pcs, run.pcs);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
pub use params::{IOptions, OptionsLayout, Params};
