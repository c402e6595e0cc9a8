//! The integration tests of this crate, one module per file, built as one test binary:
//! each binary links and instantiates the workspace again, so one per crate keeps the
//! test build short (issue 28). Run one file's tests with `cargo test --test integration
//! FILE::`.

mod analysis;
mod boot;
mod brstack;
mod cli;
mod common;
mod compare;
mod conventions;
mod convert;
mod etrace;
mod export;
mod harts;
mod ingress_blocks;
mod ingress_check;
mod kernel_trace;
mod linux;
mod ntrace;
mod parallel_decode;
mod programs;
mod query;
mod run;
mod sbi;
mod sbi_v3;
mod sse;
mod stats;
mod tandem;
mod transcode;
