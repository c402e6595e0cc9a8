//! The decoder's block table of the program: [`rvtrace_image::code`], shared with the N-Trace
//! decoder.

pub use rvtrace_image::code::{Code, Ent};
