//! `rvtrace dump|encode|decode ntrace`: N-Trace. (Being built: issue for N-Trace.)

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `rvtrace dump ntrace`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The trace file.
    file: PathBuf,
}

/// Arguments of `rvtrace encode ntrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file (from `rvtrace run --ingress`).
    ingress: PathBuf,
}

/// Arguments of `rvtrace decode ntrace`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The trace file.
    trace: PathBuf,
}

fn not_yet(what: &str) -> Result<ExitCode, String> {
    Err(format!("{what}: N-Trace support is not built yet"))
}

/// `rvtrace dump ntrace`.
pub fn dump(a: &DumpArgs) -> Result<ExitCode, String> {
    not_yet(&a.file.display().to_string())
}

/// `rvtrace encode ntrace`.
pub fn encode(a: &EncodeArgs) -> Result<ExitCode, String> {
    not_yet(&a.ingress.display().to_string())
}

/// `rvtrace decode ntrace`.
pub fn decode(a: &DecodeArgs) -> Result<ExitCode, String> {
    not_yet(&a.trace.display().to_string())
}
