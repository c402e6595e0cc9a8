//! The Arrow schemas of the three tables (documented column by column in the crate's
//! README). One place: the writers build their arrays in this order, and readers (DataFusion,
//! Spark, pyarrow) see these names and types.

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// The version of the table layout, stored in each file's key-value metadata under
/// [`SCHEMA_KEY`]; raised when a column changes meaning or type.
pub const SCHEMA_VERSION: &str = "2";

/// The key of [`SCHEMA_VERSION`] in the Parquet files' key-value metadata.
pub const SCHEMA_KEY: &str = "rvtrace.schema";

/// A dictionary-encoded string column (few distinct values: kinds, classes, function names).
fn dict() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

/// `flow`: one row per flow element, a range split where it falls into another function.
pub fn flow() -> SchemaRef {
    use DataType::*;
    schema(vec![
        Field::new("hart", UInt32, false),
        Field::new("seq", UInt64, false),
        Field::new("kind", dict(), false),
        Field::new("retired", UInt64, false),
        Field::new("start", UInt64, true),
        Field::new("last", UInt64, true),
        Field::new("count", UInt64, true),
        Field::new("class", dict(), true),
        Field::new("taken", Boolean, true),
        Field::new("function", dict(), true),
        Field::new("cause", UInt64, true),
        Field::new("interrupt", Boolean, true),
        Field::new("tval", UInt64, true),
        Field::new("epc", UInt64, true),
        Field::new("handler", UInt64, true),
        Field::new("privilege", UInt8, true),
        Field::new("context", UInt64, true),
        Field::new("process", dict(), true),
        Field::new("time", UInt64, true),
        Field::new("reason", dict(), true),
        Field::new("message", Utf8, true),
        Field::new("offset", UInt64, true),
        Field::new("skipped", UInt64, true),
    ])
}

/// `functions`: the flat profile per hart, as `rvtrace profile` computes it.
pub fn functions() -> SchemaRef {
    use DataType::*;
    schema(vec![
        Field::new("hart", UInt32, false),
        Field::new("process", Utf8, true),
        Field::new("function", Utf8, false),
        Field::new("self_insns", UInt64, false),
        Field::new("total_insns", UInt64, false),
        Field::new("calls", UInt64, false),
        Field::new("self_time", UInt64, true),
        Field::new("total_time", UInt64, true),
    ])
}

/// `branches`: outcomes of each conditional branch per hart.
pub fn branches() -> SchemaRef {
    use DataType::*;
    schema(vec![
        Field::new("hart", UInt32, false),
        Field::new("process", Utf8, true),
        Field::new("pc", UInt64, false),
        Field::new("function", Utf8, false),
        Field::new("taken", UInt64, false),
        Field::new("not_taken", UInt64, false),
        Field::new("unknown", UInt64, false),
    ])
}
