//! Helpers shared by several test files.

pub mod rewriting_loop;
pub mod stop_every;
