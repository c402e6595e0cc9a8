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
