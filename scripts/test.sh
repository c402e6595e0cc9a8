#!/bin/sh
# The whole test suite: installs the tools the tests use (scripts/setup.sh), then runs every
# test of every crate, and checks formatting and lints.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
# The lints cover `rvtrace query` too (the `query` feature, Apache DataFusion, out of the default
# build): one check of every crate, DataFusion's included, instead of a second one for it.
cargo clippy --workspace --all-targets --features rvtrace/query -q -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
cargo test --workspace --all-targets
# The crate documentation's examples (a decode to PCs per protocol, ...) run too.
cargo test --workspace --doc -q
# `rvtrace query`'s test builds in its own light profile (Cargo.toml, `query-test`).
cargo test -p rvtrace --features query --test query --profile query-test
