//! `rvtrace tandem ...`: tandem-verification traces (Bluespec's draft trace protocol,
//! `tandem-trace-protocol-2018.txt`): `dump` prints one for people, `check` verifies one
//! against the hart model (chapter 3.1).

use crate::report::{self, CmdResult};
use clap::Subcommand;
use rvtrace_tandem::checker::{CheckOptions, Checker, RunEnd};
use rvtrace_tandem::meta::{Elements, Meta};
use rvtrace_tandem::Params;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The parameters chapter 3 leaves to the two sides to agree on. Without these options they come
/// from the trace's sidecar (`TRACE.meta`, written by `rvtrace run --tandem`), else from the ELF
/// (`check`), else RV64 (XLEN = FLEN = MLEN = 64).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ParamArgs {
    /// XLEN: 32 or 64.
    #[arg(long, value_name = "BITS")]
    xlen: Option<u32>,
    /// FLEN: 32 or 64 (0: no floating-point registers).
    #[arg(long, value_name = "BITS")]
    flen: Option<u32>,
    /// MLEN in bits (32, 34 or 64; fields round up to whole bytes). Default 64 for RV64, 32 for
    /// RV32.
    #[arg(long, value_name = "BITS")]
    mlen: Option<u32>,
}

/// `rvtrace tandem` subcommands.
#[derive(Subcommand)]
pub enum TandemCommand {
    /// Print a tandem trace for people, one group per instruction, and where malformed bytes
    /// start.
    Dump {
        /// The trace file (`-`: stdin).
        file: PathBuf,
        #[command(flatten)]
        params: ParamArgs,
    },
    /// Verify a tandem trace against the hart model (protocol chapter 3.1): apply each group to
    /// a shadow state, step the model one instruction, compare, report, resynchronise, go on.
    /// The trace must be of the ELF's program (its initial memory is compared with the ELF's)
    /// and whole (it must end with the program's exit, unless the run was stopped early).
    /// Exit status 0 when the trace verified, 1 for a mismatch, another program or a truncated
    /// trace, 125 when the trace is malformed (after a summary of what was checked before).
    Check {
        /// The trace file (`-`: stdin).
        file: PathBuf,
        /// The program the trace is of (loaded into the reference hart as `rvtrace run` does).
        #[arg(long, value_name = "ELF")]
        elf: PathBuf,
        /// Further ELF files loaded as with `rvtrace run --load` (repeatable).
        #[arg(long = "load", value_name = "ELF")]
        extra: Vec<PathBuf>,
        /// The hart's ISA, as given to `rvtrace run --isa` (default: by the ELF class, with
        /// everything the hart model implements).
        #[arg(long, value_name = "ISA")]
        isa: Option<String>,
        #[command(flatten)]
        params: ParamArgs,
        /// Elements the trace leaves out (a partial trace, chapter 3.2), comma separated: pc,
        /// insn, gpr, fpr, csr, priv, mem, eaddr, init, mtime. Default: what the sidecar says.
        #[arg(long, value_name = "LIST")]
        absent: Option<String>,
        /// Print at most N mismatches (all are counted).
        #[arg(long, value_name = "N", default_value_t = 100)]
        max_reports: u64,
        /// The run that wrote the trace was stopped before the program ended (as with `rvtrace
        /// run --max-insns`): the trace may end after any whole group. Default: what the
        /// sidecar's `end` says, else the trace must end with the program's exit.
        #[arg(long)]
        stopped_early: bool,
    },
}

/// The trace's parameters and absent elements: options, else the sidecar, else `default`.
fn resolve_meta(file: &Path, args: &ParamArgs, default: Meta) -> Result<Meta, String> {
    let mut m = if report::is_std(file) {
        default
    } else {
        Meta::read(file, &default)
            .map_err(|e| e.to_string())?
            .unwrap_or(default)
    };
    if let Some(x) = args.xlen {
        m.params.xlen = x;
        if args.mlen.is_none() {
            m.params.mlen = if x == 32 { 32 } else { 64 };
        }
    }
    if let Some(f) = args.flen {
        m.params.flen = f;
    }
    if let Some(ml) = args.mlen {
        m.params.mlen = ml;
    }
    m.params.validate().map_err(|e| e.to_string())?;
    Ok(m)
}

#[allow(clippy::too_many_arguments)]
fn check(
    file: &Path,
    elf: &Path,
    extra: &[PathBuf],
    isa: Option<&str>,
    params: &ParamArgs,
    absent: Option<&str>,
    max_reports: u64,
    stopped_early: bool,
) -> CmdResult {
    let mut image = rvtrace_image::Image::new();
    image.load_file(elf).map_err(|e| e.to_string())?;
    for p in extra {
        image.load_file(p).map_err(|e| e.to_string())?;
    }
    let xlen = image
        .files()
        .first()
        .map(|f| f.xlen)
        .unwrap_or(rvtrace_isa::Xlen::Rv64);
    let isa = isa
        .map(crate::isa_arg::parse_isa)
        .transpose()
        .map_err(crate::report::Failure::Usage)?;
    // Semihosting calls are not performed again: their results come from the trace (the
    // configuration has none).
    let cfg = crate::boot::config(xlen, isa, rvtrace_sim::counters::DEFAULT_HPM_COUNTERS);
    let mut hart = rvtrace_sim::Hart::new(&cfg);
    hart.load(&image).map_err(|e| e.to_string())?;
    let default = Meta::new(
        rvtrace_tandem::producer::default_params(&hart),
        Elements::NONE,
    );
    let mut meta = resolve_meta(file, params, default)?;
    if let Some(a) = absent {
        meta.absent = Elements::parse(a).map_err(|e| e.to_string())?;
    }
    let input = report::open_input_progress(file, "check")?;
    let mut opts = CheckOptions::new(meta.params, meta.absent);
    opts.run_end = if stopped_early {
        RunEnd::Stopped
    } else {
        meta.run_end.unwrap_or(RunEnd::Exit)
    };
    opts.groups = meta.groups;
    let mut checker = Checker::new(hart, &image, opts);
    let mut out = report::Output::stdout();
    let mut shown = 0u64;
    let mut write_err = None;
    let start = std::time::Instant::now();
    let r = checker.check(input, &mut |m| {
        let w = if shown < max_reports {
            writeln!(out, "{m}")
        } else if shown == max_reports {
            writeln!(
                out,
                "(further mismatches are counted, not shown: --max-reports)"
            )
        } else {
            Ok(())
        };
        if let (Err(e), None) = (w, &write_err) {
            write_err = Some(e);
        }
        shown += 1;
    });
    if let Some(e) = write_err {
        return Err(out.fail(e));
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    match r {
        Ok(summary) => {
            writeln!(
                out,
                "tandem check: {summary}\n  ({:.1} M instructions/s)",
                summary.checked as f64 / secs / 1e6
            )
            .map_err(|e| out.fail(e))?;
            out.finish()?;
            Ok(report::status(summary.passed()))
        }
        Err(e) => {
            // What was checked before the trace became unreadable.
            let s = checker.summary();
            writeln!(
                out,
                "tandem check: stopped at byte offset {} (malformed trace), having read {s}",
                s.bytes
            )
            .map_err(|e| out.fail(e))?;
            out.finish()?;
            Err(format!("{}: {e}", file.display()).into())
        }
    }
}

/// Run a `rvtrace tandem` subcommand.
pub fn run(c: TandemCommand) -> CmdResult {
    match c {
        TandemCommand::Check {
            file,
            elf,
            extra,
            isa,
            params,
            absent,
            max_reports,
            stopped_early,
        } => check(
            &file,
            &elf,
            &extra,
            isa.as_deref(),
            &params,
            absent.as_deref(),
            max_reports,
            stopped_early,
        ),
        TandemCommand::Dump { file, params } => {
            let meta = resolve_meta(&file, &params, Meta::new(Params::RV64, Elements::NONE))?;
            let bytes = report::read_input(&file)?;
            let mut out = report::Output::stdout();
            let r = rvtrace_tandem::dump::dump(&bytes, &meta.params, &mut out);
            match r {
                Ok(_) => {}
                Err(rvtrace_tandem::dump::DumpError::Io(e)) => return Err(out.fail(e)),
                Err(rvtrace_tandem::dump::DumpError::Malformed(e)) => {
                    out.finish()?;
                    return Err(format!("{}: {e}", file.display()).into());
                }
            }
            out.finish()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
