//! `rvtrace compare` (in progress).

use crate::report::CmdResult;

/// Arguments of `rvtrace compare`.
#[derive(clap::Args)]
pub struct CompareArgs {}

/// `rvtrace compare`.
pub fn compare(_a: &CompareArgs) -> CmdResult {
    Ok(std::process::ExitCode::SUCCESS)
}
