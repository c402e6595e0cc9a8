//! `rvtrace dump|encode|decode etrace`: E-Trace. (Being built: issue for E-Trace.)

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `rvtrace dump etrace`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The trace file.
    file: PathBuf,
}

/// Arguments of `rvtrace encode etrace`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// The ingress file (from `rvtrace run --ingress`).
    ingress: PathBuf,
}

/// Arguments of `rvtrace decode etrace`.
#[derive(clap::Args)]
pub struct DecodeArgs {
    /// The trace file.
    trace: PathBuf,
}

fn not_yet(what: &str) -> Result<ExitCode, String> {
    Err(format!("{what}: E-Trace support is not built yet"))
}

/// `rvtrace dump etrace`.
pub fn dump(a: &DumpArgs) -> Result<ExitCode, String> {
    not_yet(&a.file.display().to_string())
}

/// `rvtrace encode etrace`.
pub fn encode(a: &EncodeArgs) -> Result<ExitCode, String> {
    not_yet(&a.ingress.display().to_string())
}

/// `rvtrace decode etrace`.
pub fn decode(a: &DecodeArgs) -> Result<ExitCode, String> {
    not_yet(&a.trace.display().to_string())
}
