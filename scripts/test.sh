#!/usr/bin/env bash
# The whole test suite: installs what is needed, checks formatting and lints, runs every
# test (real redis-server, nginx, PostgreSQL launched on loopback by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --no-fail-fast 2>&1 | tee /tmp/rackbench-test.log
status=${PIPESTATUS[0]}
# One closing line over all test binaries.
awk '/^test result:/ {p+=$4; f+=$6; i+=$8} END {printf "rackbench tests: %d passed, %d failed, %d skipped\n", p, f, i}' /tmp/rackbench-test.log
exit "$status"
