//! `rvtrace query`: SQL over the Parquet tables `rvtrace export` writes, with Apache DataFusion
//! (`rvtrace-columnar`'s feature `query`; this build has it only with `--features query`).

use crate::report::{self, CmdResult, Failure};
use std::path::PathBuf;

const QUERY_HELP: &str = "\
Every *.parquet file of each --dir becomes a table named after the file (flow, functions,
branches for `rvtrace export`'s output); --table NAME=PATH names one more (a file, or a
directory of files of one schema). Column names and types: crates/columnar/README.md.

Example (instructions per function per hart):
  rvtrace export t.ingress --elf prog.elf -o tables
  rvtrace query -d tables \"SELECT hart, function, SUM(count) AS insns FROM flow
      WHERE kind = 'range' GROUP BY hart, function ORDER BY hart, insns DESC\"

The command needs Apache DataFusion, which the default build leaves out (it is large): build
with `cargo build --release -p rvtrace --features query`.

Exit status: 0 success; 2 usage error; 125 a table cannot be read or the SQL fails.";

/// Result formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    /// A text table.
    Table,
    /// CSV with a header line.
    Csv,
}

/// Arguments of `rvtrace query`.
#[derive(clap::Args)]
#[command(after_help = QUERY_HELP)]
pub struct QueryArgs {
    /// The SQL statement (DataFusion's dialect, close to PostgreSQL's).
    sql: String,
    /// A directory of Parquet tables (`rvtrace export -o DIR`): each FILE.parquet is table FILE.
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// One more table: NAME=PATH (a Parquet file, or a directory of them).
    #[arg(short = 't', long = "table", value_name = "NAME=PATH")]
    tables: Vec<String>,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
}

/// The tables to register: every `*.parquet` of each directory, then the named ones.
fn tables(a: &QueryArgs) -> Result<Vec<(String, PathBuf)>, Failure> {
    let mut v = Vec::new();
    for d in &a.dirs {
        let rd = std::fs::read_dir(d)
            .map_err(|e| Failure::Tool(format!("{}: cannot read: {e}", d.display())))?;
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        for ent in rd {
            let p = ent
                .map_err(|e| Failure::Tool(format!("{}: cannot read: {e}", d.display())))?
                .path();
            if p.extension().is_some_and(|x| x == "parquet") && p.is_file() {
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    found.push((stem.to_string(), p.clone()));
                }
            }
        }
        if found.is_empty() {
            return Err(Failure::Tool(format!(
                "{}: no .parquet files (write them with `rvtrace export -o {}`)",
                d.display(),
                d.display()
            )));
        }
        found.sort();
        v.extend(found);
    }
    for t in &a.tables {
        let Some((name, path)) = t
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        else {
            return Err(Failure::Usage(format!("--table {t}: expected NAME=PATH")));
        };
        v.push((name.to_string(), PathBuf::from(path)));
    }
    for (i, (n, _)) in v.iter().enumerate() {
        if v[..i].iter().any(|(m, _)| m == n) {
            return Err(Failure::Usage(format!("table {n} is named twice")));
        }
    }
    Ok(v)
}

/// `rvtrace query`.
#[cfg(feature = "query")]
pub fn query(a: &QueryArgs) -> CmdResult {
    use rvtrace_columnar::query::{run, Format, QueryError};
    let t = tables(a)?;
    let format = match a.format {
        FormatArg::Table => Format::Table,
        FormatArg::Csv => Format::Csv,
    };
    let mut out = report::Output::stdout();
    run(&t, &a.sql, format, &mut out).map_err(|e| match e {
        QueryError::Io(e) => out.fail(e),
        QueryError::Query(m) => Failure::Tool(m),
    })?;
    out.finish()?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `rvtrace query` in a build without DataFusion: says how to get one.
#[cfg(not(feature = "query"))]
pub fn query(a: &QueryArgs) -> CmdResult {
    tables(a)?;
    let _ = report::status;
    Err(Failure::Tool(
        "this rvtrace was built without `rvtrace query` (Apache DataFusion is large); build it with `cargo build --release -p rvtrace --features query`".into(),
    ))
}
