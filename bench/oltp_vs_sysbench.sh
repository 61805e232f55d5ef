#!/usr/bin/env bash
# rackbench oltp (TPC-C) on MariaDB vs sysbench oltp_read_write, one server, same
# connections, alternating (issue 15).
#
# Starts one throwaway mariadbd here (mariadb-install-db into a temp dir; as the mysql user
# when run as root; loopback only, binary log off, the settings `rackbench run oltp --engine
# mariadb` gives its own launched server: innodb_buffer_pool_size 256M,
# innodb_flush_log_at_trx_commit 1), pinned to CPU 0. Loads a TPC-C build of WAREHOUSES
# (`rackbench oltp build --dsn mysql://root@127.0.0.1:PORT/tpcc`) and sysbench's tables
# (`sysbench oltp_read_write prepare`, 4 tables of TABLE_SIZE rows) into it, then runs
# PAIRS pairs, alternating which goes first: `rackbench run oltp --dsn ...` (closed loop,
# no keying/think time, no ramp-up) and `sysbench oltp_read_write run`, each with CONNS
# connections (--vus / --threads) for SECONDS, each pinned to CPU 1 with taskset.
#
# Client CPU is user+sys of the whole client process (bash's `time`, start-up included on
# both sides), divided by the transactions it completed: rackbench's stored per-type
# `transactions` metrics (summed), sysbench's "transactions:" line. The goal compares
# that: rackbench's median paired CPU per transaction <= sysbench's.
#
# The transactions differ in size, so read the per-transaction ratio with that in mind:
# - a sysbench oltp_read_write transaction is 20 SQL statements sent one by one (BEGIN,
#   10 point selects, 4 range selects, 2 updates, 1 delete, 1 insert, COMMIT; prepared
#   statements), i.e. 20 client round trips;
# - a rackbench TPC-C transaction is ONE round trip: a prepared `CALL neword/payment/...`
#   of a stored procedure that runs the transaction's ~10-60 statements inside the server
#   (as HammerDB does on MySQL/MariaDB).
# So the script also prints CPU per statement, two ways, from the server's own counters
# read before and after each run (the server is the same for both clients, so the count is
# alike): per statement the client sent (SHOW GLOBAL STATUS `Questions`: 1 per rackbench
# transaction plus its status polls, 20 per sysbench transaction) and per SQL statement
# the server executed (`Queries`, which also counts the statements run inside stored
# procedures, ~100 per TPC-C transaction on average, procedure steps included, so it is the
# looser of the two). rackbench stores no statement count of its own (its metrics are per
# transaction), hence the server's counters for both.
#
# Usage: bench/oltp_vs_sysbench.sh [CONNS=4] [SECONDS=15] [PAIRS=3] [WAREHOUSES=2] [TABLE_SIZE=100000]
# Env: RACKBENCH=path/to/rackbench (default target/release/rackbench), SERVER_CPU (0),
# CLIENT_CPU (1). Needs: mariadb-server, sysbench, taskset, python3 (as root:
# scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-4}
T=${2:-15}
PAIRS=${3:-3}
W=${4:-2}
ROWS=${5:-100000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BIN=${RACKBENCH:-target/release/rackbench}
[ -x "$BIN" ] || cargo build --release -q -p rackbench
MARIADBD=$(command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd)
for t in "$MARIADBD" mariadb-install-db mariadb sysbench taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install mariadb-server sysbench util-linux python3)"; exit 2; }
done

TMP=$(mktemp -d)
chmod 755 "$TMP"
SRV=""
stop() {
  if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap stop EXIT
mkdir -p "$TMP/data" "$TMP/run"
USER_ARG=()
if [ "$(id -u)" = 0 ]; then
  chown mysql:mysql "$TMP/data" "$TMP/run"
  USER_ARG=(--user=mysql)
fi
mariadb-install-db --no-defaults --datadir="$TMP/data" "${USER_ARG[@]}" --auth-root-authentication-method=normal \
  --skip-test-db --skip-name-resolve > "$TMP/install.log" 2>&1 \
  || { cat "$TMP/install.log"; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$SERVER_CPU" "$MARIADBD" --no-defaults --datadir="$TMP/data" --socket="$TMP/run/mysqld.sock" \
  --pid-file="$TMP/run/mariadbd.pid" --port="$PORT" --bind-address=127.0.0.1 --skip-name-resolve \
  --skip-log-bin --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=1 --max-connections=200 \
  --log-error="$TMP/run/mariadbd.log" "${USER_ARG[@]}" > "$TMP/mariadbd.out" 2>&1 &
SRV=$!
MY=(mariadb --no-defaults -h 127.0.0.1 -P "$PORT" -u root)
for _ in $(seq 600); do "${MY[@]}" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
"${MY[@]}" -e 'SELECT 1' >/dev/null || { echo "mariadbd did not start"; tail "$TMP/run/mariadbd.log"; exit 1; }
"${MY[@]}" -e 'CREATE DATABASE tpcc; CREATE DATABASE sbtest'
export RACKBENCH_DB="$TMP/bench.sqlite"
DSN="mysql://root@127.0.0.1:$PORT/tpcc"
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root
    --mysql-db=sbtest --tables=4 --table-size="$ROWS")
echo "# $("${MY[@]}" -N -B -e 'SELECT VERSION()'), $(sysbench --version), $("$BIN" --version 2>/dev/null || echo rackbench);" \
  "server on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU; $(nproc) CPUs"
echo "# loading: TPC-C $W warehouses, sysbench 4 tables x $ROWS rows"
"$BIN" -q oltp build --dsn "$DSN" --warehouses "$W" >/dev/null
"${SB[@]}" --threads=2 prepare >/dev/null
TIMEFORMAT='%3U %3S'

counters() { # the server's Questions and Queries
  "${MY[@]}" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Queries')" \
    | awk '{v[$1] = $2} END {print v["Questions"], v["Queries"]}'
}

rackbench_run() { # prints: txn/s transactions cpu_s questions queries
  local before after cpu
  before=$(counters)
  cpu=$( { time taskset -c "$CLIENT_CPU" "$BIN" run oltp --dsn "$DSN" --warehouses "$W" --vus "$C" \
           --duration "$T" --rampup 0 --check false --client-cpus "$CLIENT_CPU" --no-telemetry --json -q \
           > "$TMP/rk.json" 2> "$TMP/rk.err"; } 2>&1 ) || { cat "$TMP/rk.err" >&2; exit 1; }
  after=$(counters)
  python3 - "$TMP/rk.json" "$cpu" "$before" "$after" <<'PY'
import json, sys
path, cpu, before, after = sys.argv[1:]
doc = json.load(open(path))
ms = (doc["results"][0] if "results" in doc else doc)["metrics"]
n = sum(m["value"] for m in ms if m["name"] == "transactions" and set(m.get("labels", {})) == {"txn"})
tps = next(m["value"] for m in ms if m["name"] == "txn_per_s" and not m.get("labels"))
u, s = map(float, cpu.split())
(q0, x0), (q1, x1) = (map(int, before.split()), map(int, after.split()))
print(f"{tps:.1f} {n:.0f} {u + s:.3f} {q1 - q0} {x1 - x0}")
PY
}

sysbench_run() { # prints: txn/s transactions cpu_s questions queries
  local before after cpu
  before=$(counters)
  cpu=$( { time taskset -c "$CLIENT_CPU" "${SB[@]}" --threads="$C" --time="$T" --report-interval=0 run \
           > "$TMP/sb.out" 2>&1; } 2>&1 ) || { cat "$TMP/sb.out" >&2; exit 1; }
  after=$(counters)
  python3 - "$TMP/sb.out" "$cpu" "$before" "$after" <<'PY'
import re, sys
path, cpu, before, after = sys.argv[1:]
text = open(path).read()
m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", text)
n, tps = int(m.group(1)), float(m.group(2))
u, s = map(float, cpu.split())
(q0, x0), (q1, x1) = (map(int, before.split()), map(int, after.split()))
print(f"{tps:.1f} {n} {u + s:.3f} {q1 - q0} {x1 - x0}")
PY
}

: > "$TMP/pairs"
echo "# $PAIRS pairs, $C connections, ${T}s each; client CPU in us per transaction / per statement sent / per SQL statement the server ran"
for r in $(seq "$PAIRS"); do
  if [ $((r % 2)) -eq 1 ]; then a=$(rackbench_run); b=$(sysbench_run)
  else b=$(sysbench_run); a=$(rackbench_run); fi
  echo "$a $b" >> "$TMP/pairs"
  python3 - "$r" "$a" "$b" <<'PY'
import sys
r, a, b = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def fig(v):
    tps, n, cpu, q, x = map(float, v)
    return tps, cpu * 1e6 / n, cpu * 1e6 / q, cpu * 1e6 / x, q / n, x / n
ra, sb = fig(a), fig(b)
for name, f in (("rackbench", ra), ("sysbench", sb)):
    print(f"  pair {r} {name:<9} {f[0]:8.1f} txn/s  {f[1]:8.1f} us/txn  {f[2]:6.2f} us/stmt sent ({f[4]:5.1f}/txn)"
          f"  {f[3]:6.2f} us/server stmt ({f[5]:5.1f}/txn)")
print(f"  pair {r} rackbench/sysbench CPU per transaction {ra[1] / sb[1]:.3f}, per statement sent {ra[2] / sb[2]:.3f},"
      f" per server statement {ra[3] / sb[3]:.3f}")
PY
done

python3 - "$TMP/pairs" "$C" "$T" "$W" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
c, t, w = sys.argv[2:]
def per(v, k):  # k: 1 per transaction, 3 per statement sent, 4 per server statement
    return v[2] * 1e6 / v[k]
med = lambda xs: statistics.median(list(xs))
rk_txn = med(per(r[:5], 1) for r in rows); sb_txn = med(per(r[5:], 1) for r in rows)
ratio_txn = med(per(r[:5], 1) / per(r[5:], 1) for r in rows)
ratio_sent = med(per(r[:5], 3) / per(r[5:], 3) for r in rows)
ratio_srv = med(per(r[:5], 4) / per(r[5:], 4) for r in rows)
print(f"medians of {len(rows)} pairs ({c} connections, {t} s, TPC-C {w} warehouses):")
print(f"  rackbench TPC-C:                {med(r[0] for r in rows):8.1f} txn/s  {rk_txn:8.1f} us client CPU/txn"
      f"  {med(per(r[:5], 3) for r in rows):6.2f} us/stmt sent  {med(per(r[:5], 4) for r in rows):6.2f} us/server stmt")
print(f"  sysbench oltp_read_write:       {med(r[5] for r in rows):8.1f} txn/s  {sb_txn:8.1f} us client CPU/txn"
      f"  {med(per(r[5:], 3) for r in rows):6.2f} us/stmt sent  {med(per(r[5:], 4) for r in rows):6.2f} us/server stmt")
print(f"  paired ratios rackbench/sysbench: per transaction {ratio_txn:.3f}, per statement sent {ratio_sent:.3f},"
      f" per server statement {ratio_srv:.3f}")
print("  (a TPC-C transaction is one CALL round trip running its statements in the server; a sysbench"
      " transaction is 20 statements sent one by one)")
print(f"GOAL rackbench client CPU per transaction <= sysbench's: median paired ratio {ratio_txn:.3f}"
      f" (rackbench {rk_txn:.1f} us, sysbench {sb_txn:.1f} us) {'OK' if ratio_txn <= 1.0 else 'SHORT'}")
PY
