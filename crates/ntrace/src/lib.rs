//! N-Trace (Nexus-based trace, `../shared/specs/ntrace-spec-1.0.0rc7.txt`): codec, encoder, decoder.
#![cfg_attr(not(feature = "std"), no_std)]
