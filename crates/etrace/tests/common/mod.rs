//! Helpers shared by several test files.

pub mod case;
pub mod option_sets;
