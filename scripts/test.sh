#!/bin/sh
# The whole test suite: installs the tools the tests use (scripts/setup.sh), then runs every
# test of every crate, and checks formatting and lints.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -q -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
cargo test --workspace --all-targets
# `rvtrace query` needs the `query` feature (Apache DataFusion), out of the default build: its
# test and lints build in their own light profile (Cargo.toml, `query-test`).
cargo clippy -p rvtrace -p rvtrace-columnar --features query --all-targets --profile query-test -q -- -D warnings
cargo test -p rvtrace --features query --test query --profile query-test
