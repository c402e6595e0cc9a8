//! The tables the encoder and the decoder keep in step: the branch predictor and the jump
//! target cache (`branchTrace.adoc` `sec:branch-prediction`, `sec:jump-cache`). One copy, so
//! that both sides predict alike by construction.

use crate::codec::bits::mask;

/// Bits \[n:1\] of an address: the index of the branch predictor and of the jump target cache
/// (`branchTrace.adoc` `sec:branch-prediction`, `sec:jump-cache`).
#[inline]
pub fn table_index(addr: u64, size_p: u8) -> usize {
    ((addr >> 1) & mask(size_p as u32)) as usize
}

/// Branch predictor state after an outcome (`branchTrace.adoc` `sec:branch-prediction`: the MSB
/// is the prediction, the LSB the most recent outcome; a prediction must fail twice to change).
#[inline]
pub fn bpred_next(state: u8, taken: bool) -> u8 {
    match (state & 3, taken) {
        (0b00, false) => 0b00,
        (0b00, true) => 0b01,
        (0b01, false) => 0b00,
        (0b01, true) => 0b11,
        (0b11, true) => 0b11,
        (0b11, false) => 0b10,
        (0b10, true) => 0b11,
        (_, _) => 0b00,
    }
}

/// The state every predictor entry has after a synchronisation packet.
pub const BPRED_INIT: u8 = 0b01;
