//! One table from several: the row groups of Parquet files of the same table (each written by
//! [`crate::Tables`], e.g. one per hart on its own thread) appended in order into one file, their
//! column chunks copied as they are (no decoding, no re-encoding; memory flat in their size).

use crate::TableError;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::file::writer::SerializedFileWriter;
use std::io::Write;
use std::sync::Arc;

/// Writes into `out` the row groups of `parts` (files of one table, same schema), in order; the
/// file's key-value metadata (the schema version, the Arrow schema) and the row groups' sort
/// order are the first part's. Returns `out` and the rows written.
pub fn concat<W: Write + Send, R: ChunkReader>(
    out: W,
    parts: &[R],
) -> Result<(W, u64), TableError> {
    let metas: Vec<ParquetMetaData> = parts
        .iter()
        .map(|p| {
            ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .parse_and_finish(p)
        })
        .collect::<Result<_, _>>()?;
    let Some(first) = metas.first() else {
        return Err(TableError::NoParts);
    };
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    for m in &metas[1..] {
        if m.file_metadata().schema_descr().root_schema_ptr() != schema {
            return Err(TableError::SchemaDiffers);
        }
    }
    let sorting = metas
        .iter()
        .find_map(|m| m.row_groups().first())
        .and_then(|rg| rg.sorting_columns().cloned());
    let props = WriterProperties::builder()
        .set_key_value_metadata(first.file_metadata().key_value_metadata().cloned())
        .set_sorting_columns(sorting)
        .build();
    let mut w = SerializedFileWriter::new(out, schema, Arc::new(props))?;
    let mut rows = 0u64;
    for (part, m) in parts.iter().zip(&metas) {
        for (g, rg) in m.row_groups().iter().enumerate() {
            let mut out = w.next_row_group()?;
            for (c, column) in rg.columns().iter().enumerate() {
                out.append_column(
                    part,
                    ColumnCloseResult {
                        bytes_written: column.compressed_size() as u64,
                        rows_written: rg.num_rows() as u64,
                        metadata: column.clone(),
                        bloom_filter: None,
                        column_index: m.column_index().and_then(|x| x.get(g)?.get(c).cloned()),
                        offset_index: m.offset_index().and_then(|x| x.get(g)?.get(c).cloned()),
                    },
                )?;
            }
            out.close()?;
            rows += rg.num_rows() as u64;
        }
    }
    Ok((w.into_inner()?, rows))
}
