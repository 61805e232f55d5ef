#!/usr/bin/env bash
# rackbench's per-CPU telemetry vs mpstat, watching the same seconds of the same load.
#
# A redis-server pinned to CPU 0 and a rackbench kv test (client on CPU 1, SECS seconds)
# with its telemetry on; `mpstat -P ALL 1` runs at the same time. Both read /proc/stat, so
# over the same window they must agree to within what the windows' edges allow. The window
# is the span of mpstat's whole intervals inside the test; each of rackbench's samples is
# weighted by its overlap with it (the load is steady). Prints per CPU and field
# (%usr %sys %soft %iowait %idle) both figures and the difference, per round, then one GOAL
# line: the largest difference (median over rounds) at most 2 points.
#
# Usage: bench/telemetry_vs_mpstat.sh [ROUNDS=4] [SECS=10]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-4}
SECS=${2:-10}
BIN=${RACKBENCH:-target/release/rackbench}
[ -x "$BIN" ] || cargo build --release -q -p rackbench
for t in redis-server redis-cli mpstat taskset python3; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install redis-server redis-tools sysstat util-linux python3)"; exit 2; }
done
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TMP=$(mktemp -d)
taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$TMP" --logfile "$TMP/redis.log" &
SRV=$!
MP=
trap '[ -z "$MP" ] || kill $MP 2>/dev/null; kill $SRV 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.1; done
export RACKBENCH_DB="$TMP/bench.sqlite"

for r in $(seq "$ROUNDS"); do
  # mpstat's intervals count from its start: note the start to the nanosecond.
  date +%s.%N > "$TMP/mp_start.$r"
  LC_ALL=C mpstat -P ALL -o JSON 1 $((SECS + 3)) > "$TMP/mp.$r.json" &
  MP=$!
  sleep 1.2
  "$BIN" -q run kv --target "127.0.0.1:$PORT" -c 50 --duration "$SECS" -t get --client-cpus 1 >/dev/null
  wait "$MP"; MP=
  "$BIN" -q export latest -o "$TMP/rb.$r.json"
done

python3 - "$TMP" "$ROUNDS" <<'PY'
import datetime, json, re, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
FIELDS = ("usr", "sys", "soft", "iowait", "idle")
worst = []
for r in range(1, rounds + 1):
    m0 = float(open(f"{tmp}/mp_start.{r}").read())
    stats = json.load(open(f"{tmp}/mp.{r}.json"))["sysstat"]["hosts"][0]["statistics"]
    res = json.load(open(f"{tmp}/rb.{r}.json"))["runs"][0]["results"][0]
    # Nanoseconds cut to microseconds: fromisoformat before Python 3.11 takes no more.
    ts = re.sub(r"(\.\d{6})\d*", r"\1", res["started_at"].replace("Z", "+00:00"))
    t0 = datetime.datetime.fromisoformat(ts).timestamp()
    t1 = t0 + res["duration_s"]
    # mpstat's interval k (from 1) covers [m0 + k - 1, m0 + k], to its timer's drift.
    whole = [(m0 + k, s) for k, s in enumerate(stats, 1) if m0 + k - 1 >= t0 and m0 + k <= t1]
    if len(whole) < 3:
        print(f"round {r}: only {len(whole)} whole mpstat intervals inside the test; use more SECS")
        continue
    w0, w1 = whole[0][0] - 1, whole[-1][0]
    mp = {}
    for _, s in whole:
        for c in s["cpu-load"]:
            if c["cpu"] == "all":
                continue
            for f in FIELDS:
                mp.setdefault((int(c["cpu"]), f), []).append(c[f])
    mp = {k: statistics.fmean(v) for k, v in mp.items()}
    acc, wsum = {}, {}
    for smp in res["telemetry"]:
        end = t0 + smp["t_s"]; beg = end - smp["interval_s"]
        w = max(0.0, min(end, w1) - max(beg, w0))
        if w <= 0:
            continue
        for c in smp["cpus"]:
            if c["cpu"] < 0:
                continue
            for f in FIELDS:
                acc[(c["cpu"], f)] = acc.get((c["cpu"], f), 0.0) + w * c[f + "_pct"]
                wsum[(c["cpu"], f)] = wsum.get((c["cpu"], f), 0.0) + w
    rb = {k: acc[k] / wsum[k] for k in acc}
    print(f"round {r}: window {w1 - w0:.0f} s ({len(whole)} mpstat intervals)")
    print(f"  {'cpu':>3} {'field':<7} {'mpstat':>7} {'rackbench':>9} {'diff':>6}")
    d_max = 0.0
    for k in sorted(mp):
        if k not in rb:
            print(f"  {k[0]:>3} {k[1]:<7} {mp[k]:>7.2f} {'missing':>9}")
            d_max = float("inf")
            continue
        d = rb[k] - mp[k]
        d_max = max(d_max, abs(d))
        print(f"  {k[0]:>3} {k[1]:<7} {mp[k]:>7.2f} {rb[k]:>9.2f} {d:>+6.2f}")
    worst.append(d_max)
if not worst:
    print("GOAL per-CPU telemetry within 2 points of mpstat: no round had a window INVALID")
else:
    m = statistics.median(worst)
    print(f"largest difference per round (points): {' '.join(f'{x:.2f}' for x in worst)}")
    print(f"GOAL per-CPU telemetry within 2 points of mpstat (median of the rounds' largest difference): {m:.2f} {'OK' if m <= 2.0 else 'SHORT'}")
PY
