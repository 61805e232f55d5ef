#!/usr/bin/env bash
# The main job: installs what is needed, builds rackbench, runs a quick kv sweep on this
# host against redis-server instances rackbench launches and pins itself (instances 1,2 x
# pipeline 1,100 x SET,GET, a second each), stores the run, and writes its report.
# A second, not a count of requests: at pipeline 100, 200,000 requests last 60 ms, too
# short for CPU figures the kernel counts in 10 ms ticks, and for a steady rate.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -p rackbench
BIN=target/release/rackbench
OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export RACKBENCH_DB=${RACKBENCH_DB:-$OUT/results.sqlite}
set +e
"$BIN" run kv --label "$(hostname)" --instances 1,2 -P 1,100 -c 50 --duration 1 -r 10000 -d 10 -t set,get
rc=$?
set -e
"$BIN" runs | head -5
if "$BIN" report latest -o "$OUT/report.html" 2>/dev/null; then
  echo "report: $OUT/report.html (results store: $RACKBENCH_DB)"
else
  "$BIN" show latest
  echo "results store: $RACKBENCH_DB"
fi
exit $rc
