//! `rvtrace tandem ...`: tandem-verification traces. (Being built: issue for the tandem trace.)

use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rvtrace tandem` subcommands.
#[derive(Subcommand)]
pub enum TandemCommand {
    /// Print a tandem trace for people, one group per instruction.
    Dump {
        /// The trace file.
        file: PathBuf,
    },
}

/// Run a `rvtrace tandem` subcommand.
pub fn run(c: TandemCommand) -> Result<ExitCode, String> {
    match c {
        TandemCommand::Dump { file } => Err(format!(
            "{}: tandem trace support is not built yet",
            file.display()
        )),
    }
}
