//! The integration tests of this crate, one module per file, built as one test binary:
//! each binary links and instantiates the workspace again, so one per crate keeps the
//! test build short (issue 28). Run one file's tests with `cargo test --test integration
//! FILE::`.

mod common;
mod extensions;
mod hostile;
mod pmu;
mod sse;
mod v3;
