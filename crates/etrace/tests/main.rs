//! The integration tests of this crate, one module per file, built as one test binary:
//! each binary links and instantiates the workspace again, so one per crate keeps the
//! test build short (issue 28). Run one file's tests with `cargo test --test integration
//! FILE::`.

mod campaign;
mod cases;
mod common;
mod conformance_codec;
mod conformance_decode;
mod conformance_encode;
mod corner_cases;
mod cross_check;
mod decoder_shape;
mod encode_errors;
mod encoder_lost;
mod parallel;
mod robustness;
mod roundtrip;
mod stats_vectors;
mod streaming;
