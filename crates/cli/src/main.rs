//! `rvtrace`: the command-line tool. Thin: it parses arguments, wires the parts together and
//! reports errors; the work is done by the library crates.

#[macro_use]
mod report;
mod analysis;
mod boot;
mod brstack;
mod check;
mod compare;
mod convert;
mod decode;
mod dtb;
mod dump;
mod etrace;
mod export;
mod funnel;
mod harts;
mod isa_arg;
mod ntrace;
mod parallel;
mod perf;
mod progress;
mod query;
mod run;
mod snapshot;
mod stats;
mod tandem;
mod text_out;
mod trace_source;
mod transcode;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rvtrace",
    version,
    about = "RISC-V processor trace toolkit: run programs on a hart model, record and inspect trace streams",
    long_about = None,
    after_help = report::EXIT_STATUS_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a RISC-V ELF program on the hart model (QEMU `virt` machine, semihosting).
    Run(run::RunArgs),
    /// Write the device tree of the machine the hart model implements (as `run --sbi/--bios`
    /// passes it; check it with `dtc -I dtb -O dts`).
    Dtb(boot::DtbArgs),
    /// Run a bundled example program and show what it did.
    Example(run::ExampleArgs),
    /// Ingress-stream files (the retired-instruction records that drive trace encoders).
    Ingress {
        #[command(subcommand)]
        command: IngressCommand,
    },
    /// Print a trace (N-Trace or E-Trace, recognised) message by message (packet by packet),
    /// field by field, with byte offsets.
    Dump(Box<DumpCmd>),
    /// Encode an ingress stream into trace bytes.
    Encode {
        #[command(subcommand)]
        protocol: EncodeCommand,
    },
    /// Decode a trace (N-Trace or E-Trace, recognised), with the program's ELF files, into the
    /// executed instruction flow.
    Decode(Box<DecodeCmd>),
    /// Compare two instruction streams (PC lists, ingress files, decoded traces): the first
    /// divergence, with symbols, disassembly and where in each input it comes from.
    Compare(compare::CompareArgs),
    /// Profile a run: flat profile and call graph; folded stacks, flame graph, Firefox Profiler.
    Profile(analysis::ProfileArgs),
    /// Line, function and branch coverage of a run, as an lcov tracefile (needs DWARF).
    Coverage(analysis::CoverageArgs),
    /// An AutoFDO text sample profile of a run (for `create_llvm_prof --profiler=text`).
    Autofdo(analysis::AutofdoArgs),
    /// What a trace costs: bits per instruction with and without framing, message or packet
    /// mix, synchronisation spacing, losses.
    Stats(stats::StatsArgs),
    /// Re-encode an N-Trace trace as E-Trace or the reverse (decoded with the program).
    Transcode(transcode::TranscodeArgs),
    /// The run as text: every instruction with its symbol and disassembly, or (--call-trace)
    /// the calls and returns indented by depth.
    Text(analysis::TextArgs),
    /// Export a run or a decoded trace as Parquet tables: flow, per-function profile, branch
    /// statistics (for SQL: `rvtrace query`, DataFusion, Spark, DuckDB, pyarrow).
    Export(export::ExportArgs),
    /// SQL over Parquet tables written by `export` (Apache DataFusion; needs a build with
    /// `--features query`).
    Query(query::QueryArgs),
    /// Tandem-verification traces (Bluespec's draft trace protocol).
    Tandem {
        #[command(subcommand)]
        command: tandem::TandemCommand,
    },
}

/// `rvtrace dump TRACE`, or `dump ntrace|etrace TRACE` naming the protocol.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct DumpCmd {
    #[command(subcommand)]
    protocol: Option<DumpCommand>,
    #[command(flatten)]
    args: dump::DumpArgs,
}

#[derive(Subcommand)]
enum DumpCommand {
    /// An N-Trace (Nexus) MSEO/MDO byte stream: `dump --protocol ntrace`.
    Ntrace(dump::DumpArgs),
    /// E-Trace `te_inst` packets (encapsulated, or the reference flow's `te_inst_raw`): `dump
    /// --protocol etrace`.
    Etrace(dump::DumpArgs),
}

#[derive(Subcommand)]
enum EncodeCommand {
    /// N-Trace encoder (N-Trace chapters 8-10).
    Ntrace(ntrace::EncodeArgs),
    /// E-Trace encoder (E-Trace branch trace algorithm).
    Etrace(etrace::EncodeArgs),
}

/// `rvtrace decode TRACE`, or `decode ntrace|etrace TRACE` naming the protocol.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct DecodeCmd {
    #[command(subcommand)]
    protocol: Option<DecodeCommand>,
    #[command(flatten)]
    args: decode::DecodeArgs,
}

#[derive(Subcommand)]
enum DecodeCommand {
    /// The N-Trace decoder (N-Trace chapter 11): `decode --protocol ntrace`.
    Ntrace(decode::DecodeArgs),
    /// The E-Trace decoder (E-Trace decoder.adoc): `decode --protocol etrace`.
    Etrace(decode::DecodeArgs),
}

#[derive(Subcommand)]
enum IngressCommand {
    /// Print an ingress file for people, one record per line, then a summary.
    Dump {
        /// The binary ingress file (as written by `rvtrace run --ingress`).
        file: std::path::PathBuf,
        /// Leave time out (no `time=`): the dump of a file with time then diffs cleanly with
        /// that of one without (an imported E-Trace CSV); the `#` header lines name the source.
        #[arg(long)]
        no_time: bool,
    },
    /// Convert another tool's log or another format into ingress (or PCSEQ, CSV, text):
    /// retired-PC lists, Spike and QEMU logs (with the program's ELF), PCSEQ, E-Trace CSV, text.
    Convert(convert::ConvertArgs),
    /// Check every record against the program and the ingress port's rules (itype, flow,
    /// sizes, traps, privilege, context): the first violations with record, disassembly and
    /// rule, exit 1.
    Check(check::CheckArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(mut args) => {
            args.one_hart_paths();
            run::run(&args)
        }
        Command::Example(args) => run::example(&args),
        Command::Dtb(args) => boot::dtb(&args),
        Command::Ingress {
            command: IngressCommand::Dump { file, no_time },
        } => run::ingress_dump(&file, !no_time),
        Command::Ingress {
            command: IngressCommand::Convert(a),
        } => convert::convert(&a),
        Command::Ingress {
            command: IngressCommand::Check(a),
        } => check::check(&a),
        Command::Compare(a) => compare::compare(&a),
        Command::Dump(cmd) => match cmd.protocol {
            Some(DumpCommand::Ntrace(a)) => dump::dump(&a, Some(rvtrace_decode::Protocol::Ntrace)),
            Some(DumpCommand::Etrace(a)) => dump::dump(&a, Some(rvtrace_decode::Protocol::Etrace)),
            None => dump::dump(&cmd.args, None),
        },
        Command::Encode { protocol } => match protocol {
            EncodeCommand::Ntrace(a) => ntrace::encode(&a),
            EncodeCommand::Etrace(a) => etrace::encode(&a),
        },
        Command::Decode(cmd) => match cmd.protocol {
            Some(DecodeCommand::Ntrace(a)) => {
                decode::decode(&a, Some(rvtrace_decode::Protocol::Ntrace))
            }
            Some(DecodeCommand::Etrace(a)) => {
                decode::decode(&a, Some(rvtrace_decode::Protocol::Etrace))
            }
            None => decode::decode(&cmd.args, None),
        },
        Command::Profile(a) => analysis::profile(&a),
        Command::Coverage(a) => analysis::coverage(&a),
        Command::Autofdo(a) => analysis::autofdo(&a),
        Command::Transcode(a) => transcode::transcode(&a),
        Command::Stats(a) => stats::stats(&a),
        Command::Text(a) => analysis::text(&a),
        Command::Export(a) => export::export(&a),
        Command::Query(a) => query::query(&a),
        Command::Tandem { command } => tandem::run(command),
    };
    match result {
        Ok(code) => code,
        Err(f) => f.exit(),
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks over every command (duplicate names, groups, defaults).
    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
