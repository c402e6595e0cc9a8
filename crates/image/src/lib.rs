//! Program image.
