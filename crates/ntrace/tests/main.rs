//! The integration tests of this crate, one module per file, built as one test binary:
//! each binary links and instantiates the workspace again, so one per crate keeps the
//! test build short (issue 28). Run one file's tests with `cargo test --test integration
//! FILE::`.
//! `campaign.rs` is a binary of its own: it counts the heap with a global allocator, and other
//! tests' allocations must not count.

mod cases;
mod common;
mod decode_vectors;
mod decoder_shape;
mod dump_vectors;
mod encode_vectors;
mod encoder_lost;
mod losses;
mod nexrv_vectors;
mod options;
mod outputs;
mod parallel;
mod roundtrip;
mod sifive;
mod sifive_encode;
mod spec_examples;
mod stats_vectors;
mod streaming;
