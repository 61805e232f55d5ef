#!/usr/bin/env bash
# TCP with several streams between two hosts, against iperf3: rackbench `run net --pairs
# 'rbh1>rbh3'` (sender in the test host rbh1 on CPU 1, receiver in rbh3 on CPU 0, started
# by the hosts' agents) and iperf3 the same way (`iperf3 -s` under taskset -c 0 in rbh3,
# `iperf3 -c -P STREAMS` under taskset -c 1 in rbh1), alternating which goes first, PAIRS
# pairs for each stream count. The test hosts are network namespaces joined by veths and a
# bridge (scripts/testhosts.sh): the sender's CPU also runs the receive path's softirq, as
# on loopback, but each stream crosses two veths.
#
# Per pair: Gbit/s received, and CPU per Gbit/s (both ends' whole process: iperf3's
# host_total + remote_total, rackbench's process_cpu_pct at each end). Goals, on the
# median of the paired ratios: Gbit/s at least iperf3's, CPU per Gbit/s at most iperf3's.
# OTHER=/path/to/rackbench adds a second build to every pair (e.g. an older one), and
# prints its ratios beside.
#
# Usage: bench/net_streams_vs_iperf3.sh [PAIRS=8] [SECS=4] [STREAMS="4"]
#   (as root; brings the test hosts up and down itself when they are not up yet)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-8}
[ $((PAIRS % 2)) = 0 ] || { PAIRS=$((PAIRS + 1)); echo "pairs: $PAIRS (made even, so that each tool goes first as often)"; }
SECS=${2:-4}
STREAMS=${3:-4}
BIN=${RACKBENCH:-target/release/rackbench}
[ -x "$BIN" ] || cargo build --release -q -p rackbench
OTHER=${OTHER:-}
for t in ip iperf3 python3 ssh taskset; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install iproute2 iperf3 python3 openssh-client util-linux)"; exit 2; }
done
# shellcheck source=bench/testhosts_lib.sh
source bench/testhosts_lib.sh
TMP=$(mktemp -d)
IPERF_PID=
cleanup() {
  [ -z "$IPERF_PID" ] || kill "$IPERF_PID" 2>/dev/null || true
  testhosts_restore; rm -rf "$TMP"
}
trap cleanup EXIT
testhosts_use
export RACKBENCH_DB="$TMP/bench.sqlite"
read -r SENDER_IP _ RECEIVER_IP <<< "$RB_TESTHOSTS_IPS"
ip netns exec rbh3 taskset -c 0 iperf3 -s -p 5299 >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5

# One rackbench run: "Gbit/s CPU%-per-Gbit/s" on stdout.
rb() { # bin streams
  "$1" -q run net --pairs 'rbh1>rbh3' --ssh-config "$RB_SSH_CONFIG" -t tcp --streams "$2" \
    --duration "$SECS" --sender-cpus 1 --receiver-cpus 0 --json > "$TMP/rb.json"
  python3 - "$TMP/rb.json" <<'PY'
import json, sys
found = {}
def walk(x):
    if isinstance(x, dict):
        if "name" in x and "value" in x:
            labels = x.get("labels") or {}
            key = (x["name"], labels.get("end", "") if set(labels) <= {"end"} else None)
            found.setdefault(key, x["value"])
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(json.load(open(sys.argv[1])))
g = found.get(("throughput_gbit_per_s", ""))
s, r = found.get(("process_cpu_pct", "sender")), found.get(("process_cpu_pct", "receiver"))
print(g, (s + r) / g if None not in (g, s, r) and g > 0 else "nan")
PY
}
ipf() { # streams
  ip netns exec rbh1 taskset -c 1 iperf3 -c "$RECEIVER_IP" -p 5299 -t "$SECS" -P "$1" -J > "$TMP/ip.json"
  python3 - "$TMP/ip.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["end"]
g = e["sum_received"]["bits_per_second"] / 1e9
c = e["cpu_utilization_percent"]
print(g, (c["host_total"] + c["remote_total"]) / g)
PY
}

echo "rackbench $("$BIN" --version 2>/dev/null | head -1), $(iperf3 --version | head -1), sender $SENDER_IP CPU 1 -> receiver $RECEIVER_IP CPU 0, ${SECS} s per test"
for s in $STREAMS; do
  echo
  echo "== TCP, $s stream(s), $PAIRS pairs"
  printf "%-5s %14s %14s %14s %14s %9s %9s\n" pair "iperf3 Gbit/s" "rb Gbit/s" "iperf3 %/Gbit" "rb %/Gbit" "Gbit x" "CPU x"
  : > "$TMP/ratios"
  for p in $(seq "$PAIRS"); do
    if [ $((p % 2)) = 1 ]; then i=$(ipf "$s"); r=$(rb "$BIN" "$s"); else r=$(rb "$BIN" "$s"); i=$(ipf "$s"); fi
    o=""; [ -z "$OTHER" ] || o=$(rb "$OTHER" "$s")
    read -r ig ic <<< "$i"; read -r rg rc <<< "$r"
    line=$(python3 -c "import sys; ig,ic,rg,rc=map(float,sys.argv[1:5]); print('%.4f %.4f' % (rg/ig, rc/ic))" "$ig" "$ic" "$rg" "$rc")
    oth=""
    if [ -n "$o" ]; then
      read -r og oc <<< "$o"
      oth=$(python3 -c "import sys; ig,ic,og,oc=map(float,sys.argv[1:5]); print('%.4f %.4f' % (og/ig, oc/ic))" "$ig" "$ic" "$og" "$oc")
    fi
    echo "$line $oth" >> "$TMP/ratios"
    printf "%-5s %14.2f %14.2f %14.2f %14.2f %9s %9s%s\n" "$p" "$ig" "$rg" "$ic" "$rc" ${line} "${oth:+   OTHER: $oth}"
  done
  python3 - "$TMP/ratios" "$s" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
s = sys.argv[2]
def med(k): return statistics.median(r[k] for r in rows)
g, c = med(0), med(1)
print(f"median paired ratios, {s} stream(s): Gbit/s {g:.3f} (min {min(r[0] for r in rows):.3f}, max {max(r[0] for r in rows):.3f}), CPU per Gbit/s {c:.3f}")
if len(rows[0]) == 4:
    print(f"  OTHER build: Gbit/s {med(2):.3f}, CPU per Gbit/s {med(3):.3f}")
print(f"GOAL tcp {s} stream(s) between hosts, Gbit/s >= 1x iperf3: {g:.3f} {'OK' if g >= 1 else 'SHORT'}")
print(f"GOAL tcp {s} stream(s) between hosts, CPU per Gbit/s <= 1x iperf3: {c:.3f} {'OK' if c <= 1 else 'SHORT'}")
PY
done
