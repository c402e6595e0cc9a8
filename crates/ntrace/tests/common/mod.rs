//! Helpers shared by several test files.

pub mod configs;
pub mod messages;
