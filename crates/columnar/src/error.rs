//! The one error type of writing tables ([`crate::Tables`]) and joining them
//! ([`crate::concat::concat`]).

use arrow_schema::ArrowError;
use parquet::errors::ParquetError;
use std::fmt;

/// Why a table could not be written or joined.
#[derive(Debug)]
#[non_exhaustive]
pub enum TableError {
    /// The Parquet writer or reader failed (including the output's I/O).
    Parquet(ParquetError),
    /// A batch of rows could not be built.
    Arrow(ArrowError),
    /// [`crate::concat::concat`] was given no part.
    NoParts,
    /// The parts given to [`crate::concat::concat`] have different schemas.
    SchemaDiffers,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Parquet(e) => e.fmt(f),
            TableError::Arrow(e) => e.fmt(f),
            TableError::NoParts => f.write_str("no table to concatenate"),
            TableError::SchemaDiffers => f.write_str("the parts of a table differ in their schema"),
        }
    }
}

impl std::error::Error for TableError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TableError::Parquet(e) => Some(e),
            TableError::Arrow(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ParquetError> for TableError {
    fn from(e: ParquetError) -> Self {
        TableError::Parquet(e)
    }
}

impl From<ArrowError> for TableError {
    fn from(e: ArrowError) -> Self {
        TableError::Arrow(e)
    }
}
