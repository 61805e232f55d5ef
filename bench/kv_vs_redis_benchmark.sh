#!/usr/bin/env bash
# rackbench kv vs redis-benchmark on the same machine, same settings, alternately.
#
# One redis-server pinned to CPU 0; each client pinned to CPU 1 in turn; -c 50 -r 10000 -d 10
# -t set,get at -P 1 and -P 100, ROUNDS times. Prints ops/s, the client's CPU seconds per
# million operations (user+sys of the whole client process, from bash's `time`), and the
# ratios rackbench/redis-benchmark (medians of paired ratios over rounds), then GOAL lines:
# client CPU per operation <= 0.6x redis-benchmark's at both depths, and throughput at least
# its own at -P 1 where redis-benchmark's client is the bottleneck (checked from its CPU; N/A if not).
#
# Usage: bench/kv_vs_redis_benchmark.sh [ROUNDS=6] [REQUESTS=1000000] [DEPTHS="1 100"]
# (at -P 100 a test of 1M requests lasts ~0.4 s, so process start-up weighs on the CPU
# figure of both tools; use more requests there, e.g. REQUESTS=5000000 DEPTHS=100).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
# Which tool goes first alternates by round: an even count puts each first equally often.
[ $((ROUNDS % 2)) = 0 ] || { ROUNDS=$((ROUNDS + 1)); echo "rounds: $ROUNDS (made even, so that each tool goes first as often)"; }
N=${2:-1000000}
DEPTHS=${3:-"1 100"}
BIN=${RACKBENCH:-target/release/rackbench}
[ -x "$BIN" ] || cargo build --release -q -p rackbench
for t in redis-server redis-benchmark taskset python3; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install redis-server redis-tools util-linux python3)"; exit 2; }
done
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TMP=$(mktemp -d)
taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$TMP" --logfile "$TMP/redis.log" &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$TMP"' EXIT
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.1; done
export RACKBENCH_DB="$TMP/bench.sqlite"
TIMEFORMAT='%3U %3S %3R'

# One run of each tool at depth $1, its row(s) appended to $TMP/rows.
redis_benchmark_run() {
  cpu=$( { time taskset -c 1 redis-benchmark -p "$PORT" -c 50 -n "$N" -r 10000 -d 10 -P "$1" \
            -t set,get --csv -q > "$TMP/rb.csv"; } 2>&1 )
  python3 - "$TMP/rb.csv" "$cpu" "$N" "$1" redis-benchmark >> "$TMP/rows" <<'PY'
import csv, sys
path, cpu, n, p, tool = sys.argv[1:]
u, s, wall = map(float, cpu.split())
rows = {r[0]: float(r[1]) for r in csv.reader(open(path)) if r and r[0] in ("SET", "GET")}
for t in ("SET", "GET"):
  print(f"{tool},{p},{t},{rows[t]:.0f},{(u+s)/(2*int(n))*1e6:.3f},{(u+s)/wall:.3f}")
PY
}
# rackbench checks every GET's value against what its SET wrote, and its tests draw keys
# of their own: the values redis-benchmark left would read as mismatches (an invalid
# result, exit 1). Each rackbench run starts from an empty server, as its SET then GET
# would on one it launched; redis-benchmark checks nothing, so its runs need no flush.
flush() { redis-cli -p "$PORT" flushall >/dev/null; }
rackbench_run() {
  flush
  cpu=$( { time taskset -c 1 "$BIN" run kv --target "127.0.0.1:$PORT" -c 50 -n "$N" -r 10000 -d 10 -P "$1" \
            -t set,get --client-cpus 1 --no-telemetry --json -q > "$TMP/rk.json" 2> "$TMP/rk.err"; } 2>&1 )
  # What rackbench said (a warning) is shown, and kept out of bash's `time` figures.
  [ -s "$TMP/rk.err" ] && sed 's/^/  (rackbench said) /' "$TMP/rk.err" >&2
  python3 - "$TMP/rk.json" "$cpu" "$N" "$1" rackbench >> "$TMP/rows" <<'PY'
import json, sys
path, cpu, n, p, tool = sys.argv[1:]
u, s, wall = map(float, cpu.split())
run = json.load(open(path))
for r in run["results"]:
  ops = next(m["value"] for m in r["metrics"] if m["name"] == "ops_per_s" and not m.get("labels"))
  print(f"{tool},{p},{r['test'].upper()},{ops:.0f},{(u+s)/(2*int(n))*1e6:.3f},{(u+s)/wall:.3f}")
PY
}

# Alternating: redis-benchmark first in odd rounds, rackbench first in even ones (what
# ran just before moves a loopback figure by a few percent).
for P in $DEPTHS; do
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then redis_benchmark_run "$P"; rackbench_run "$P"
    else rackbench_run "$P"; redis_benchmark_run "$P"; fi
  done
done

# Each tool's fixed cost (start, connect, and for rackbench its host disclosure and stored
# run): the CPU of a run of 2,000 operations, median of 3. Printed beside the goal, with
# the per-operation CPU once it is taken off, so that the two parts are seen apart.
FIX_RK=(); FIX_RB=()
for r in 1 2 3; do
  FIX_RK+=("$( { time taskset -c 1 redis-benchmark -p "$PORT" -c 50 -n 1000 -r 10000 -d 10 -P 100 \
                  -t set,get --csv -q > /dev/null; } 2>&1 | awk '{print $1+$2}')")
  flush
  FIX_RB+=("$( { time taskset -c 1 "$BIN" run kv --target "127.0.0.1:$PORT" -c 50 -n 1000 -r 10000 -d 10 -P 100 \
                  -t set,get --client-cpus 1 --no-telemetry --json -q > /dev/null; } 2>&1 | awk '{print $1+$2}')")
done
export FIXED_RK="${FIX_RK[*]}" FIXED_RB="${FIX_RB[*]}" N

python3 - "$TMP/rows" <<'PY'
import os, statistics, sys
fix = {t: statistics.median(map(float, os.environ[v].split())) for t, v in (("redis-benchmark", "FIXED_RK"), ("rackbench", "FIXED_RB"))}
n_ops = 2 * int(os.environ["N"])
rows = [l.strip().split(",") for l in open(sys.argv[1]) if l.strip()]
seq = {}
busy = {}
for tool, p, test, ops, cpu, b in rows:
    seq.setdefault((tool, p, test), []).append((float(ops), float(cpu)))
    busy.setdefault((tool, p), []).append(float(b))
print(f"{'P':>4} {'test':<4} {'redis-benchmark ops/s':>22} {'rackbench ops/s':>16} {'ratio':>6} | {'r-b CPU s/Mop':>13} {'rackbench CPU':>13} {'ratio':>6}")
goals = []
for p in ("1", "100"):
    cpu_ratios, tput = [], []
    for t in ("SET", "GET"):
        a = seq.get(("redis-benchmark", p, t)); b = seq.get(("rackbench", p, t))
        if not a or not b: continue
        # Paired: round i of one tool against round i of the other, then the median.
        ops_r = [y[0] / x[0] for x, y in zip(a, b)]
        cpu_r = [y[1] / x[1] for x, y in zip(a, b)]
        ao = statistics.median(x for x, _ in a); bo = statistics.median(x for x, _ in b)
        ac = statistics.median(c for _, c in a); bc = statistics.median(c for _, c in b)
        print(f"{p:>4} {t:<4} {ao:>22,.0f} {bo:>16,.0f} {statistics.median(ops_r):>6.2f} | {ac:>13.3f} {bc:>13.3f} {statistics.median(cpu_r):>6.2f}")
        tput += ops_r
        if t == "SET":  # one CPU figure per run covers both tests
            cpu_r_all = cpu_r
    if tput:
        goals.append((p, statistics.median(cpu_r_all), statistics.median(tput)))
print("(ratio columns: medians of paired ratios rackbench/redis-benchmark; client CPU: user+sys of the whole client process per operation, both tests together;", max(len(v) for v in seq.values()), "rounds)")
print(f"fixed cost of one run (2,000 operations, median of 3): redis-benchmark {fix['redis-benchmark']*1e3:.0f} ms, rackbench {fix['rackbench']*1e3:.0f} ms CPU")
for p in ("1", "100"):
    a = [c for t in ("SET",) for _, c in seq.get(("redis-benchmark", p, t), [])]
    b = [c for t in ("SET",) for _, c in seq.get(("rackbench", p, t), [])]
    if a and b:
        # CPU s/Mop less the fixed cost spread over the run's operations.
        ma = statistics.median(a) - fix["redis-benchmark"] / n_ops * 1e6
        mb = statistics.median(b) - fix["rackbench"] / n_ops * 1e6
        print(f"  -P {p}: per-operation CPU without the fixed cost: redis-benchmark {ma:.3f}, rackbench {mb:.3f} s/Mop, ratio {mb/ma:.3f} (information, not a goal)")
for p, cpu, tput in goals:
    print(f"GOAL kv -P {p} client CPU per operation <= 0.6x redis-benchmark's: {cpu:.3f} {'OK' if cpu <= 0.6 else 'SHORT'}")
    if p == "1":
        # The goal holds where redis-benchmark's client is the bottleneck (BASELINE.md): its
        # process busy most of its one CPU over the whole command (start-up included).
        rb_busy = statistics.median(busy[("redis-benchmark", p)])
        if rb_busy >= 0.9:
            print(f"GOAL kv -P 1 throughput >= redis-benchmark's when client-bound (its client {rb_busy:.0%} of a CPU): {tput:.3f} {'OK' if tput >= 1.0 else 'SHORT'}")
        else:
            print(f"GOAL kv -P 1 throughput >= redis-benchmark's when client-bound: N/A (its client only {rb_busy:.0%} of a CPU: the server, not the client, bound it here)")
PY
