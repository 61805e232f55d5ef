#!/usr/bin/env bash
# rackbench oltp (TPC-C) vs pgbench against one PostgreSQL cluster, same client count.
#
# Builds a TPC-C schema of WAREHOUSES with `rackbench oltp build --dir`, starts that cluster
# once (pg_ctl; as the postgres user when run as root), initialises a pgbench database
# (scale 10) in the same cluster, then alternates ROUNDS times: pgbench TPC-B-like,
# pgbench select-only, rackbench TPC-C (closed loop, no keying/think time), each with
# CLIENTS connections for SECONDS, the server pinned to SERVER_CPU (0) and the clients to
# CLIENT_CPU (1), which tool goes first alternating by round. Prints per tool the transactions/s, the load
# generator's CPU per transaction (user+sys of the whole client process from bash's
# `time`, divided by the transactions it completed), and rackbench's NOPM and TPM
# (medians over rounds). Goal: rackbench's CPU per transaction <= pgbench's TPC-B-like
# (the median of the ratios paired within each round).
#
# Usage: bench/oltp_vs_pgbench.sh [CLIENTS=4] [SECONDS=20] [WAREHOUSES=2] [ROUNDS=4]
# Env: RACKBENCH=path/to/rackbench (default target/release/rackbench). While `rackbench run`
# is not usable (results store missing), the script falls back to the workload's example
# runner target/release/examples/tpcc (same workload code, no store); OLTP_VIA_EXAMPLE=1
# forces that runner.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-4}
T=${2:-20}
W=${3:-2}
ROUNDS=${4:-4}
# Which tool goes first alternates by round: an even count puts each first equally often.
[ $((ROUNDS % 2)) = 0 ] || { ROUNDS=$((ROUNDS + 1)); echo "rounds: $ROUNDS (made even, so that each tool goes first as often)"; }
BIN=${RACKBENCH:-target/release/rackbench}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
EXAMPLE=target/release/examples/tpcc
[ -x "$BIN" ] || cargo build --release -q -p rackbench
PGBIN=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")")
PGBENCH=$(command -v pgbench 2>/dev/null || echo "$PGBIN/pgbench")
for t in "$PGBIN/pg_ctl" "$PGBIN/psql" "$PGBENCH"; do
  [ -x "$t" ] || { echo "missing $t (apt-get install postgresql postgresql-contrib)"; exit 2; }
done
command -v python3 >/dev/null || { echo "missing python3"; exit 2; }

TMP=$(mktemp -d)
chmod 755 "$TMP"
AS=()
[ "$(id -u)" = 0 ] && AS=(runuser -u postgres --)
"$BIN" -q oltp build --dir "$TMP/data" --warehouses "$W" >/dev/null
SOCK="$TMP/data-sock"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The server (postmaster and every backend it forks) on SERVER_CPU, the clients on CLIENT_CPU.
taskset -c "$SERVER_CPU" "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/data" -l "$SOCK/pg.log" -w -s \
  -o "-p $PORT -k $SOCK -c listen_addresses='' -c shared_buffers=256MB -c max_connections=100" start
stop() { "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/data" -m fast -w -s stop || true; rm -rf "$TMP"; }
trap stop EXIT
PG=(-h "$SOCK" -p "$PORT" -U postgres)
"$PGBIN/psql" "${PG[@]}" -q -d postgres -c "CREATE DATABASE pgb" >/dev/null
"$PGBENCH" "${PG[@]}" -i -s 10 -q pgb >/dev/null 2>&1
DSN="host=$SOCK port=$PORT user=postgres dbname=tpcc"
TIMEFORMAT='%3U %3S'

rackbench_tpcc() {
  if [ "${OLTP_VIA_EXAMPLE:-0}" != 1 ] && taskset -c "$CLIENT_CPU" "$BIN" run oltp --dsn "$DSN" --warehouses "$W" --vus "$C" --duration "$T" --rampup 0 \
       --check false --no-telemetry --json -q > "$TMP/rk.json" 2> "$TMP/rk.err"; then
    return 0
  fi
  [ "${OLTP_VIA_EXAMPLE:-0}" = 1 ] || grep -q "being written" "$TMP/rk.err" \
    || { cat "$TMP/rk.err" >&2; return 1; }
  [ -x "$EXAMPLE" ] || cargo build --release -q -p rackbench-oltp --example tpcc
  taskset -c "$CLIENT_CPU" "$EXAMPLE" dsn="$DSN" warehouses="$W" vus="$C" duration="$T" rampup=0 check=false \
    > "$TMP/rk.json" 2>/dev/null
}

# One round of each tool, its rows appended to $TMP/rows (with the round number).
pgbench_round() {
  for mode in tpcb select-only; do
    flag=(); [ "$mode" = select-only ] && flag=(-S)
    cpu=$( { time taskset -c "$CLIENT_CPU" "$PGBENCH" "${PG[@]}" -n -c "$C" -j 1 -T "$T" "${flag[@]}" pgb > "$TMP/pgb.out" 2>&1; } 2>&1 )
    python3 - "$TMP/pgb.out" "$cpu" "$mode" "$1" >> "$TMP/rows" <<'PY'
import re, sys
path, cpu, mode, rnd = sys.argv[1:]
text = open(path).read()
n = int(re.search(r"number of transactions actually processed: (\d+)", text).group(1))
tps = float(re.search(r"tps = ([\d.]+) \(without initial", text).group(1))
u, s = map(float, cpu.split())
print(f"{rnd},pgbench,{mode},{tps:.1f},{(u + s) / n * 1e6:.1f},,")
PY
  done
}
rackbench_round() {
  cpu=$( { time rackbench_tpcc; } 2>&1 )
  python3 - "$TMP/rk.json" "$cpu" "$1" >> "$TMP/rows" <<'PY'
import json, sys
path, cpu, rnd = sys.argv[1:]
doc = json.load(open(path))
res = doc["results"][0] if "results" in doc else doc
ms = res["metrics"]
def get(name):
    return next((m["value"] for m in ms if m["name"] == name and not m.get("labels")), float("nan"))
n = sum(m["value"] for m in ms if m["name"] == "transactions" and set(m.get("labels", {})) == {"txn"})
u, s = map(float, cpu.split())
print(f"{rnd},rackbench,tpcc,{get('txn_per_s'):.1f},{(u + s) / n * 1e6:.1f},{get('nopm'):.0f},{get('tpm'):.0f}")
PY
}
# Alternating: pgbench first in odd rounds, rackbench first in even ones.
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then pgbench_round "$r"; rackbench_round "$r"
  else rackbench_round "$r"; pgbench_round "$r"; fi
done

python3 - "$TMP/rows" "$C" "$T" "$W" <<'PY'
import statistics, sys
path, c, t, w = sys.argv[1:]
rows = [l.strip().split(",") for l in open(path) if l.strip()]
groups = {}
by_round = {}
for rnd, tool, test, tps, cpu, nopm, tpm in rows:
    groups.setdefault((tool, test), []).append((float(tps), float(cpu), nopm, tpm))
    by_round.setdefault(rnd, {})[(tool, test)] = float(cpu)
print(f"clients={c} seconds={t} warehouses={w} rounds={len(next(iter(groups.values())))} (medians)")
print(f"{'tool':<10} {'test':<12} {'txn/s':>9} {'client CPU us/txn':>18} {'NOPM':>8} {'TPM':>8}")
med = {}
for (tool, test), v in groups.items():
    tps = statistics.median(x[0] for x in v)
    cpu = statistics.median(x[1] for x in v)
    med[(tool, test)] = cpu
    nopm = statistics.median(float(x[2]) for x in v) if v[0][2] else None
    tpm = statistics.median(float(x[3]) for x in v) if v[0][3] else None
    print(f"{tool:<10} {test:<12} {tps:>9.1f} {cpu:>18.1f} {'' if nopm is None else f'{nopm:.0f}':>8} {'' if tpm is None else f'{tpm:.0f}':>8}")
# Paired within each round, then the median (a VM drifts from minute to minute).
pairs = [v[("rackbench", "tpcc")] / v[("pgbench", "tpcb")] for v in by_round.values()
         if ("rackbench", "tpcc") in v and ("pgbench", "tpcb") in v]
if pairs:
    r = statistics.median(pairs)
    print(f"CPU per transaction, rackbench TPC-C / pgbench TPC-B-like, median of {len(pairs)} paired rounds: {r:.2f}")
    print(f"GOAL oltp client CPU per transaction <= pgbench's TPC-B-like: {r:.3f} {'OK' if r <= 1.0 else 'SHORT'}")
else:
    print("GOAL oltp client CPU per transaction <= pgbench's TPC-B-like: no round has both figures INVALID")
PY
