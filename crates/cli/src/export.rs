//! `rvtrace export`: a run or a decoded trace as Parquet tables (`flow`, `functions`,
//! `branches`; schema in crates/columnar/README.md). The tables are written by
//! `rvtrace-columnar`; this wires the analysis commands' input to them.

use crate::analysis::{self, InputArgs, Tee};
use crate::report::{self, CmdResult, Failure};
use rvtrace_columnar::{Outputs, Tables, Written};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

const EXPORT_HELP: &str = "\
Writes DIR/flow.parquet (one row per flow element, ranges split where they fall into another
function), DIR/functions.parquet (the flat profile `rvtrace profile` prints: self and total
instructions and calls per function) and DIR/branches.parquet (taken / not taken per
conditional branch), each row tagged with its hart (--hart). Row groups hold one hart's rows in
sequence order. The columns are described in crates/columnar/README.md; query the files with
`rvtrace query` (built with `--features query`), DataFusion, Spark, DuckDB or pyarrow.

INPUT is a binary ingress file (`rvtrace run --ingress`, recognised by its magic bytes), or a
trace decoded with --elf and the decoder options below (as `rvtrace decode` takes them; a
trace's sidecar TRACE.meta, written by `encode`, gives those not named). A trace's protocol is
--protocol's, else its sidecar's, else its bytes' (N-Trace messages, E-Trace te_inst_raw).
`-` reads stdin.

Exit status: 0 success; 1 trace lost while decoding or a damaged ingress file (the tables hold
what came before); 2 usage error; 125 an input cannot be read or a table cannot be written.";

/// The tables `rvtrace export` can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TableArg {
    /// Flow elements (`flow.parquet`).
    Flow,
    /// Per-function profile (`functions.parquet`).
    Functions,
    /// Branch statistics (`branches.parquet`).
    Branches,
}

/// Arguments of `rvtrace export`.
#[derive(clap::Args)]
#[command(after_help = EXPORT_HELP)]
pub struct ExportArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The directory to write the tables into (created if missing; files of the same names
    /// are replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// Which tables to write (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TableArg::Flow, TableArg::Functions, TableArg::Branches])]
    tables: Vec<TableArg>,
    /// The hart the trace is of (the `hart` column).
    #[arg(long, default_value_t = 0, value_name = "N")]
    hart: u32,
    /// Export every hart of a trace of several (N-Trace messages with SRC fields, E-Trace
    /// packets with srcIDs: needs --src-bits or the sidecar's): each SRC or srcID's messages
    /// decoded as one hart's trace, its rows tagged with it (the `hart` column), the files
    /// sorted by hart, then seq. All harts run the program of --elf. The trace is read once per
    /// hart (stdin is held in memory).
    #[arg(long, conflicts_with = "hart")]
    all_harts: bool,
    /// With --all-harts: decode the harts on up to N threads, each writing its tables into
    /// part files beside the outputs (`flow.parquet.hart3.part`), appended in hart order at the
    /// end (their row groups copied, not re-encoded) and removed.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "all_harts", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: u64,
}

type Out = BufWriter<File>;

fn create(path: &Path) -> Result<Out, Failure> {
    File::create(path)
        .map(|f| BufWriter::with_capacity(1 << 16, f))
        .map_err(|e| Failure::Tool(format!("{}: cannot create: {e}", path.display())))
}

fn close_one(w: Option<Out>, path: &Path) -> Result<(), Failure> {
    if let Some(w) = w {
        w.into_inner()
            .map_err(|e| Failure::io(format_args!("writing {}", path.display()), e.into_error()))?
            .sync_all()
            .map_err(|e| Failure::io(format_args!("writing {}", path.display()), e))?;
    }
    Ok(())
}

/// Closes the tables' files (flow, functions, branches: those written).
fn close<P: AsRef<Path>>(files: Outputs<Out>, paths: [P; 3]) -> Result<(), Failure> {
    let files = [files.flow, files.functions, files.branches];
    for (w, p) in files.into_iter().zip(paths) {
        close_one(w, p.as_ref())?;
    }
    Ok(())
}

/// Hart `hart`'s part of the table at `path` (`flow.parquet.hart3.part`).
fn part(path: &Path, hart: u16) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".hart{hart}.part"));
    PathBuf::from(p)
}

/// Part files, removed when dropped (however the export ends).
struct Parts(Vec<PathBuf>);

impl Drop for Parts {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `--all-harts`: each hart's tables written on its own thread (up to `--jobs`) into part files,
/// then each table's parts appended in hart order into `files` (row groups copied as they are:
/// each hart's rows stay in their own row groups, in `seq` order). Returns whether every hart
/// decoded without loss, and the rows written.
fn all_harts(
    a: &ExportArgs,
    h: &analysis::Harts,
    files: Outputs<Out>,
    paths: [&Path; 3],
) -> Result<(bool, Written), Failure> {
    let dir = report::name(&a.output);
    let wanted = [
        files.flow.is_some(),
        files.functions.is_some(),
        files.branches.is_some(),
    ];
    let _parts = Parts(
        h.harts
            .iter()
            .flat_map(|&k| {
                (0..3)
                    .filter(|&i| wanted[i])
                    .map(move |i| part(paths[i], k))
            })
            .collect(),
    );
    let results = crate::harts::run(&h.harts, a.jobs, |k| {
        // A program per thread: the symbol tables' lazy parts are not shared between threads.
        let mut prog = analysis::program_system(&a.input)?;
        prog.enter_spaces(h.trace())?;
        let mine = paths.map(|p| part(p, k));
        let open = |i: usize| wanted[i].then(|| create(&mine[i])).transpose();
        let out = Outputs {
            flow: open(0)?,
            functions: open(1)?,
            branches: open(2)?,
        };
        let mut t = tables(&prog, out).map_err(|e| Failure::Tool(format!("{dir}: {e}")))?;
        let ok = h.feed(&a.input, &prog, k, &mut t.hart(k as u32))?;
        let (out, n) = t
            .finish()
            .map_err(|e| Failure::Tool(format!("writing into {dir}: {e}")))?;
        close(out, mine)?;
        Ok((ok, n))
    });
    let (mut ok, mut n) = (true, Written::default());
    for r in results {
        let (o, w) = r?;
        ok &= o;
        n.flow += w.flow;
        n.functions += w.functions;
        n.branches += w.branches;
        n.unwalked += w.unwalked;
    }
    let files = [files.flow, files.functions, files.branches];
    for (w, p) in files.into_iter().zip(paths) {
        let Some(w) = w else { continue };
        let parts = h
            .harts
            .iter()
            .map(|&k| {
                let q = part(p, k);
                File::open(&q).map_err(|e| Failure::io(format_args!("reading {}", q.display()), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (w, _) = rvtrace_columnar::concat::concat(w, &parts)
            .map_err(|e| Failure::Tool(format!("writing {}: {e}", p.display())))?;
        close_one(Some(w), p)?;
    }
    Ok((ok, n))
}

/// The tables of the program: of its address spaces when it has several.
fn tables<W: std::io::Write + Send>(
    prog: &analysis::Program,
    out: Outputs<W>,
) -> Result<Tables<'_, W>, rvtrace_columnar::TableError> {
    match &prog.system {
        Some(s) => Tables::in_system(s, prog.isa, out),
        None => Tables::new(&prog.image, &prog.syms, prog.isa, out),
    }
}

/// `rvtrace export`.
pub fn export(a: &ExportArgs) -> CmdResult {
    if report::is_std(&a.output) {
        return Err(Failure::Usage(
            "-o: the tables go into a directory, not stdout".into(),
        ));
    }
    let want = |t| a.tables.contains(&t);
    let path = |name: &str| a.output.join(format!("{name}.parquet"));
    let (flow_p, func_p, br_p) = (path("flow"), path("functions"), path("branches"));
    let mut outs: Vec<(&str, &Path)> = Vec::new();
    for (t, p) in [
        (TableArg::Flow, &flow_p),
        (TableArg::Functions, &func_p),
        (TableArg::Branches, &br_p),
    ] {
        if want(t) {
            outs.push(("-o", p));
        }
    }
    let mut ins = vec![a.input.input.as_path()];
    ins.extend(a.input.elf.as_deref());
    report::distinct(&ins, &outs)?;
    let mut prog = analysis::program_system(&a.input)?;
    // --all-harts: the trace read and its harts found before any file is made.
    let harts = match a.all_harts {
        true => Some(analysis::Harts::open(&a.input, &mut prog)?),
        false => None,
    };
    std::fs::create_dir_all(&a.output)
        .map_err(|e| Failure::Tool(format!("{}: cannot create: {e}", a.output.display())))?;
    let open = |t, p: &Path| want(t).then(|| create(p)).transpose();
    let files = Outputs {
        flow: open(TableArg::Flow, &flow_p)?,
        functions: open(TableArg::Functions, &func_p)?,
        branches: open(TableArg::Branches, &br_p)?,
    };
    let dir = report::name(&a.output);
    let (ok, n) = match &harts {
        Some(h) => all_harts(a, h, files, [&flow_p, &func_p, &br_p])?,
        None => {
            let o = analysis::open(&a.input, &mut prog)?;
            let mut tables =
                tables(&prog, files).map_err(|e| Failure::Tool(format!("{dir}: {e}")))?;
            let mut sink = tables.hart(a.hart);
            let mut tee = Tee::new(&a.input);
            tee.other = Some(&mut sink);
            let ok = analysis::feed_opened(&a.input, o, &prog, &mut tee)?;
            let (files, n) = tables
                .finish()
                .map_err(|e| Failure::Tool(format!("writing into {dir}: {e}")))?;
            close(files, [&flow_p, &func_p, &br_p])?;
            (ok, n)
        }
    };
    let mut text = Vec::new();
    if want(TableArg::Flow) {
        text.push(format!("{} flow rows", n.flow));
    }
    if want(TableArg::Functions) {
        text.push(format!("{} functions", n.functions));
    }
    if want(TableArg::Branches) {
        text.push(format!("{} branches", n.branches));
    }
    note!("{dir}: {}", text.join(", "));
    if n.unwalked > 0 {
        warn!(
            "{} ranges run outside the program's image: kept whole in flow, their inner branches are not in branches",
            n.unwalked
        );
    }
    Ok(report::status(ok))
}
