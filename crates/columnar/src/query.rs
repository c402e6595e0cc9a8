//! SQL over the Parquet tables with Apache DataFusion (feature `query`).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use futures::StreamExt;
use std::io::Write;
use std::path::PathBuf;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A text table with borders (the whole result is held to size the columns).
    Table,
    /// CSV with a header line (RFC 4180 quoting), written batch by batch as it comes.
    Csv,
}

/// Why a query failed.
#[derive(Debug)]
pub enum QueryError {
    /// Writing the result failed.
    Io(std::io::Error),
    /// A table could not be registered or read, or the SQL failed.
    Query(String),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Io(e) => write!(f, "writing the result: {e}"),
            QueryError::Query(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for QueryError {}

impl From<String> for QueryError {
    fn from(m: String) -> Self {
        QueryError::Query(m)
    }
}

/// Registers each `(name, path)` (a Parquet file, or a directory of them) as a table, runs
/// `sql` and writes the result to `out`. Returns the number of result rows.
pub fn run(
    tables: &[(String, PathBuf)],
    sql: &str,
    format: Format,
    out: &mut dyn Write,
) -> Result<u64, QueryError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .map_err(|e| format!("cannot start the query runtime: {e}"))?;
    rt.block_on(async {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
        for (name, path) in tables {
            let p = path
                .to_str()
                .ok_or_else(|| format!("{}: not a UTF-8 path", path.display()))?;
            ctx.register_parquet(name.as_str(), p, ParquetReadOptions::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let df = ctx.sql(sql).await.map_err(|e| e.to_string())?;
        let mut stream = df.execute_stream().await.map_err(|e| e.to_string())?;
        let io = QueryError::Io;
        let mut rows = 0u64;
        match format {
            Format::Table => {
                let mut batches = Vec::new();
                while let Some(b) = stream.next().await {
                    let b = b.map_err(|e| e.to_string())?;
                    rows += b.num_rows() as u64;
                    batches.push(b);
                }
                let schema = stream.schema();
                let text = if batches.is_empty() {
                    datafusion::arrow::util::pretty::pretty_format_batches(&[
                        RecordBatch::new_empty(schema),
                    ])
                } else {
                    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                }
                .map_err(|e| e.to_string())?;
                writeln!(out, "{text}").map_err(io)?;
            }
            Format::Csv => {
                let schema = stream.schema();
                let header: Vec<String> = schema
                    .fields()
                    .iter()
                    .map(|f| csv_field(f.name()))
                    .collect();
                writeln!(out, "{}", header.join(",")).map_err(io)?;
                let opts = FormatOptions::default().with_null("");
                while let Some(b) = stream.next().await {
                    let b = b.map_err(|e| e.to_string())?;
                    let fmts = b
                        .columns()
                        .iter()
                        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())?;
                    let mut line = String::new();
                    for r in 0..b.num_rows() {
                        line.clear();
                        for (i, f) in fmts.iter().enumerate() {
                            if i > 0 {
                                line.push(',');
                            }
                            line.push_str(&csv_field(&f.value(r).to_string()));
                        }
                        writeln!(out, "{line}").map_err(io)?;
                    }
                    rows += b.num_rows() as u64;
                }
            }
        }
        out.flush().map_err(io)?;
        Ok::<u64, QueryError>(rows)
    })
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180 2.6-2.7).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
