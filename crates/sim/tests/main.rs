//! The integration tests of this crate, one module per file, built as one test binary:
//! each binary links and instantiates the workspace again, so one per crate keeps the
//! test build short (issue 28). Run one file's tests with `cargo test --test integration
//! FILE::`.

mod blocks;
mod common;
mod conformance;
mod counter_rules;
mod counters;
mod events;
mod htif_workload;
mod ingress_blocks;
mod ingress_fast;
mod pmp;
mod robustness;
mod smp;
mod stimecmp;
mod traploop;
mod triggers;
mod vm;
