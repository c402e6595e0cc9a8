//! Tandem-verification trace (`../shared/specs/tandem-trace-protocol-2018.txt`): codec, producer, checker.
