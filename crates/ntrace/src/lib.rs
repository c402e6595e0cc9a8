//! N-Trace (Nexus-based trace, `../shared/specs/ntrace-spec-1.0.0rc7.txt`; the ratified text is in
//! `ntrace-ratified/`): codec, encoder, decoder.
//!
//! * [`codec`]: MSEO/MDO transport and messages (`no_std`, no allocation).
//! * [`decoder`]: trace + program image -> flow elements (N-Trace chapter 11).
//! * [`encoder`]: ingress records -> messages (N-Trace chapters 8-10), options in [`options`].
//! * [`dump`]: text dump of a message stream, field by field (N-Trace 3.5 Table 6).
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod codec;
#[cfg(feature = "std")]
pub mod decoder;
#[cfg(feature = "std")]
pub mod dump;
#[cfg(feature = "std")]
pub mod encoder;
#[cfg(feature = "std")]
pub mod insn;
#[cfg(feature = "std")]
pub mod options;
