#!/bin/sh
# The whole test suite: installs the tools the tests use (scripts/setup.sh), then runs every
# test of every crate, and checks formatting and lints.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -q -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
# Every test, `rvtrace query`'s included (the `query` feature, Apache DataFusion, out of the
# default build; its crates build unoptimized, Cargo.toml [profile.test.package."*"]). The benches
# are left out: without `--bench` they do nothing (clippy --all-targets checks that they build).
cargo test --workspace --lib --bins --tests --examples --features rvtrace/query
# The crate documentation's examples (a decode to PCs per protocol, ...) run too.
cargo test --workspace --doc --features rvtrace/query -q
