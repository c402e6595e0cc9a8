//! Hart model.
