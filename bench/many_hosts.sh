#!/usr/bin/env bash
# Many hosts on test hosts (network namespaces with an sshd each, scripts/testhosts.sh):
#
#  1. The agent's own CPU with telemetry at 1 Hz: a kv run at a low open-loop rate with
#     the servers on rbh1 and the generator on rbh2; the agent on rbh1 (which only samples,
#     answers heartbeats and keeps the servers) is read from outside, /proc/PID/stat
#     utime+stime over 20 s. Goal: under 1% of one core.
#  2. Start skew across three hosts: kv with the generators on rbh1, rbh2 and rbh3 behind
#     the start barrier, ROUNDS times; the spread of their actual starts on the
#     controller's clock (each host's clock corrected by its offset) and the latest wake-up
#     against the common start. Goal: the worst round under 1 ms.
#  3. kv with the generator in another namespace against the same run on one host, same
#     CPUs (redis-server on CPU 0, generator on CPU 1), alternating which runs first,
#     ROUNDS pairs: operations per second of generator CPU (the generator threads' own
#     getrusage, the same measure on both sides). Goal: the median paired ratio
#     remote/local at least 1. Beside it, redis-benchmark the same way (in rbh2 against a
#     redis-server in rbh1, and on this host over loopback; user+sys of the whole process):
#     what the veth and bridge path itself costs a client, whoever the client is.
#     While the script runs, the bridge does not hand packets to iptables (see
#     bench/testhosts_lib.sh).
#
# Usage: bench/many_hosts.sh [ROUNDS=6] [SECS=5]   (as root; brings the test hosts up and
# down itself when they are not up yet)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
# Which tool goes first alternates by round: an even count puts each first equally often.
[ $((ROUNDS % 2)) = 0 ] || { ROUNDS=$((ROUNDS + 1)); echo "rounds: $ROUNDS (made even, so that each tool goes first as often)"; }
SECS=${2:-5}
BIN=${RACKBENCH:-target/release/rackbench}
[ -x "$BIN" ] || cargo build --release -q -p rackbench
for t in ip python3 ssh; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install iproute2 python3 openssh-client)"; exit 2; }
done
# shellcheck source=bench/testhosts_lib.sh
source bench/testhosts_lib.sh
TMP=$(mktemp -d)
REDIS_PIDS=()
cleanup() {
  for p in "${REDIS_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  testhosts_restore; rm -rf "$TMP"
}
trap cleanup EXIT
testhosts_use
export RACKBENCH_DB="$TMP/bench.sqlite"
RB=("$BIN" -q)
SSH=(--ssh-config "$RB_SSH_CONFIG")

ticks() { # utime+stime of PID in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
agent_pid() { # the agent in namespace $1
  for p in $(ip netns pids "$1"); do
    if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q ' agent '; then echo "$p"; return; fi
  done
}

echo "== 1. agent CPU on the system under test, telemetry at 1 Hz"
"${RB[@]}" run kv -t get -c 4 --rate 1000 --duration 30 --sut rbh1 --loadgen rbh2 "${SSH[@]}" \
  --telemetry-interval 1 --json > "$TMP/idle.json" &
RUN=$!
pid=""
for _ in $(seq 100); do pid=$(agent_pid rbh1); [ -n "$pid" ] && break; sleep 0.1; done
sleep 5
t0=$(ticks "$pid"); s0=$(date +%s.%N)
sleep 20
t1=$(ticks "$pid"); s1=$(date +%s.%N)
wait $RUN || true
HZ=$(getconf CLK_TCK)
AGENT_PCT=$(python3 -c "print(100*($t1-$t0)/$HZ/($s1-$s0))")
printf 'agent on rbh1: %.3f%% of one core over %.1f s\n' "$AGENT_PCT" "$(python3 -c "print($s1-$s0)")"

echo "== 2. start skew across three generators (rbh1, rbh2, rbh3), $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  "${RB[@]}" run kv -t get -c 30 -n 60000 --loadgen rbh1,rbh2,rbh3 "${SSH[@]}" --no-telemetry --json > "$TMP/skew$r.json"
done
python3 - "$TMP" "$ROUNDS" > "$TMP/skew" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
spread, late = [], []
for r in range(1, n + 1):
    res = json.load(open(f"{d}/skew{r}.json"))["results"][0]
    m = {x["name"]: x["value"] for x in res["metrics"] if not x.get("labels")}
    spread.append(m["start_spread_s"] * 1e3); late.append(m["start_skew_max_s"] * 1e3)
print(max(spread), max(late))
for s, l in zip(spread, late):
    print(f"  start spread {s:.3f} ms, latest wake-up {l:.3f} ms")
PY
read -r SPREAD LATE < <(head -1 "$TMP/skew")
tail -n +2 "$TMP/skew"

echo "== 3. kv: generator in another namespace vs on this host, same CPUs, $ROUNDS pairs"
one() { # $1 = remote|local; prints ops/s and ops per generator CPU second
  if [ "$1" = remote ]; then
    "${RB[@]}" run kv -t get -c 50 --duration "$SECS" --sut rbh1 --loadgen rbh2 --server-cpus 0 --client-cpus 1 \
      "${SSH[@]}" --no-telemetry --json > "$TMP/k.json"
  else
    "${RB[@]}" run kv -t get -c 50 --duration "$SECS" --server-cpus 0 --client-cpus 1 --no-telemetry --json > "$TMP/k.json"
  fi
  python3 - "$TMP/k.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"][0]
m = {x["name"]: x["value"] for x in res["metrics"] if not x.get("labels")}
print(f"{m['ops_per_s']:.0f} {1e6 / m['loadgen_cpu_us_per_op']:.0f}")
PY
}
# The reference client: redis-benchmark, pinned the same way, against its own servers.
ip netns exec rbh1 taskset -c 0 redis-server --bind 10.77.0.1 --port 7379 --protected-mode no --save "" \
  --appendonly no --dir "$TMP" --logfile "$TMP/r1.log" --daemonize no & REDIS_PIDS+=($!)
taskset -c 0 redis-server --bind 127.0.0.1 --port 7379 --save "" --appendonly no --dir "$TMP" \
  --logfile "$TMP/r0.log" --daemonize no & REDIS_PIDS+=($!)
sleep 1
TIMEFORMAT='%3U %3S'
NREF=$((SECS * 60000))
ref() { # $1 = remote|local; prints ops/s and ops per client CPU s
  local cpu
  if [ "$1" = remote ]; then
    cpu=$( { time ip netns exec rbh2 taskset -c 1 redis-benchmark -h 10.77.0.1 -p 7379 -c 50 -n "$NREF" -t get -q --csv > "$TMP/rb.csv"; } 2>&1 )
  else
    cpu=$( { time taskset -c 1 redis-benchmark -h 127.0.0.1 -p 7379 -c 50 -n "$NREF" -t get -q --csv > "$TMP/rb.csv"; } 2>&1 )
  fi
  python3 - "$TMP/rb.csv" "$cpu" "$NREF" <<'PY'
import csv, sys
path, cpu, n = sys.argv[1:]
u, s = map(float, cpu.split())
ops = next(float(r[1]) for r in csv.reader(open(path)) if r and r[0] == "GET")
print(f"{ops:.0f} {int(n) / (u + s):.0f}")
PY
}
: > "$TMP/pairs"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then a=$(one remote); b=$(one local); c=$(ref remote); d=$(ref local)
  else b=$(one local); a=$(one remote); d=$(ref local); c=$(ref remote); fi
  echo "$a $b $c $d" >> "$TMP/pairs"
  echo "  round $r: rackbench remote $a local $b | redis-benchmark remote $c local $d   (ops/s, ops per client CPU s)"
done
python3 - "$TMP/pairs" "$AGENT_PCT" "$SPREAD" "$LATE" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
agent, spread, late = map(float, sys.argv[2:5])
tput = statistics.median(r[0] / r[2] for r in rows)
eff = statistics.median(r[1] / r[3] for r in rows)
ref_eff = statistics.median(r[5] / r[7] for r in rows)
print(f"rackbench kv remote/local: ops/s ratio {tput:.3f}, ops per generator CPU s ratio {eff:.3f} (medians of {len(rows)} paired rounds)")
print(f"redis-benchmark remote/local: ops per client CPU s ratio {ref_eff:.3f} (what the namespace path costs any client)")
# The same path costs every client about the same CPU per operation in absolute terms
# (the veth and bridge work of each request and reply runs on the sending CPU); a
# cheaper client loses a larger fraction of itself to it.
extra = statistics.median(1e6 / r[1] - 1e6 / r[3] for r in rows)
ref_extra = statistics.median(1e6 / r[5] - 1e6 / r[7] for r in rows)
print(f"client CPU added per operation by the namespace path: rackbench {extra:.2f} us, redis-benchmark {ref_extra:.2f} us")
print(f"GOAL agent CPU at 1 Hz < 1% of a core: {agent:.3f}% {'OK' if agent < 1 else 'SHORT'}")
worst = max(spread, late)
print(f"GOAL start skew across 3 hosts < 1 ms: worst {worst:.3f} ms {'OK' if worst < 1 else 'SHORT'}")
print(f"GOAL kv from another namespace per generator CPU >= on one host: ratio {eff:.3f} {'OK' if eff >= 1 else 'SHORT'}")
PY
