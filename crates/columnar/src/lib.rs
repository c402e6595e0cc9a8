//! Decoded trace as columnar data: the flow of one or more harts, their per-function profiles
//! and branch statistics as Parquet tables ([`Tables`], schema in [`schema`] and the crate's
//! README), for SQL engines on one machine (`rvtrace query`, the module `query` with the feature
//! `query`: Apache DataFusion) or many (Spark reads the same files).
//!
//! ```no_run
//! use rvtrace_analysis::Symbols;
//! use rvtrace_columnar::{Outputs, Tables};
//! let mut image = rvtrace_image::Image::new();
//! let xlen = image.load_file("prog.elf".as_ref())?.xlen;
//! let syms = Symbols::load("prog.elf".as_ref())?;
//! let isa = rvtrace_isa::IsaConfig::new(xlen);
//! let out = Outputs {
//!     flow: Some(std::fs::File::create("flow.parquet")?),
//!     functions: Some(std::fs::File::create("functions.parquet")?),
//!     branches: None,
//! };
//! let mut t = Tables::new(&image, &syms, isa, out)?;
//! rvtrace_decode::ingress::ingress(std::fs::File::open("t.ingress")?, &image, isa, &mut t.hart(0))?;
//! let (_files, written) = t.finish()?;
//! println!("{} flow rows", written.flow);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod concat;
mod error;
#[cfg(feature = "query")]
pub mod query;
pub mod schema;
pub mod tables;

pub use error::TableError;
pub use tables::{HartSink, Outputs, Tables, Written};
