//! E-Trace (Efficient Trace, `../shared/specs/etrace-v2.0`): codec, encapsulation, encoder, decoder.
#![cfg_attr(not(feature = "std"), no_std)]
