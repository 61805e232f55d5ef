#!/usr/bin/env bash
# floor.sh: how close each load generator is to the system-call floor of this kernel.
#
# The floor is bench/floor.c: a client that only sends a fixed request and receives a reply
# of known length on CONNS connections over one epoll (one send and one recv per batch of
# DEPTH requests, epoll_wait shared), nothing parsed, timed or recorded; the same over
# io_uring (-u: a receive per reply), to show whether batching the system calls across
# connections moves it; and over io_uring with a multishot receive per connection (-m),
# what rackbench's closed loop does where the kernel has it.
# Beside it, on the same server, alternating (the five in turn, the other way round in
# even rounds): rackbench and the reference tool, each the
# whole client process measured from outside (user+sys from bash's `time`, divided by the
# requests it completed), all pinned to CLIENT_CPU with the server on SERVER_CPU.
#
#   kv:   redis-server, GET of one 10-byte value, 50 connections, -P 1 and -P 100:
#         floor, floor -u, floor -m, rackbench run kv --target, redis-benchmark -t get
#   http: nginx (1 worker, 1 KiB file, as bench/http_vs_wrk.sh), 50 connections:
#         floor, floor -u, floor -m, rackbench run http --target, wrk -t1
#
# Prints per-round lines, then per case the medians and each tool's CPU per request over
# the floor's (paired within a round, median over rounds). Information, not a goal: the
# goals are in the other scripts; this one says where their figures sit.
#
# Usage: bench/floor.sh [ROUNDS=4] [SECS=5]
# Environment: SERVER_CPU (0), CLIENT_CPU (1), CONNS (50), RACKBENCH (binary).
# Needs: cc, redis-server, redis-benchmark, nginx, wrk, jq, taskset, python3;
# liburing-dev for the io_uring floor (scripts/install-deps.sh installs it; skipped, and said so, without it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-4}
# Which tool goes first alternates by round: an even count puts each first equally often.
[ $((ROUNDS % 2)) = 0 ] || { ROUNDS=$((ROUNDS + 1)); echo "rounds: $ROUNDS (made even, so that each tool goes first as often)"; }
SECS=${2:-5}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CONNS=${CONNS:-50}
BIN=${RACKBENCH:-target/release/rackbench}
for t in cc redis-server redis-cli redis-benchmark nginx wrk jq taskset python3; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install build-essential redis-server redis-tools nginx-light wrk jq util-linux python3)" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "no rackbench at $BIN: cargo build --release -p rackbench" >&2; exit 2; }

TMP=$(mktemp -d /tmp/rackbench-floor.XXXXXX)
chmod 755 "$TMP"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cc -O2 -o "$TMP/floor" bench/floor.c
URING=0
if cc -O2 -DWITH_URING -o "$TMP/floor-u" bench/floor.c -luring 2>/dev/null; then URING=1; else
  echo "(no liburing: the io_uring floor is skipped; apt-get install liburing-dev)"; fi
export RACKBENCH_DB="$TMP/results.sqlite"
TIMEFORMAT='%3U %3S'
ROWS="$TMP/rows"
: > "$ROWS"

# cpu_of CMD...: runs CMD with its output in $TMP/out, prints user+sys seconds.
cpu_of() { { time "$@" > "$TMP/out" 2>&1; } 2>&1 | awk '{print $1+$2}'; }
row() { echo "$1,$2,$3,$4,$5" >> "$ROWS"; printf "%-6s %-15s %3s %12.0f req/s %8.3f us CPU/req\n" "$1" "$2" "$3" "$(awk -v n="$4" -v s="$6" 'BEGIN{print n/s}')" "$(awk -v c="$5" -v n="$4" 'BEGIN{print c*1e6/n}')"; }
floor_row() { # CASE TOOL ROUND CPU
  local n; n=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' "$TMP/out")
  row "$1" "$2" "$3" "$n" "$4" "$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$TMP/out")"
}

# --- kv
RPORT=$(free_port)
taskset -c "$SERVER_CPU" redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no \
  --daemonize no --dir "$TMP" --logfile "$TMP/redis.log" &
PIDS+=($!)
until redis-cli -p "$RPORT" ping >/dev/null 2>&1; do sleep 0.1; done
# rackbench's keys are key:NNNNNNNNNNNN with the key's digits as the value: -r 1 is key 0.
redis-cli -p "$RPORT" set key:000000000000 0000000000 >/dev/null
redis-cli -p "$RPORT" set key:__rand_int__ 0000000000 >/dev/null
printf '*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000000\r\n' > "$TMP/get.req"
GET_REPLY=17 # $10\r\n0000000000\r\n
# One client's run of a round (its row added); the order of the five is turned round in
# even rounds, so that none always runs first (or last) on a host whose speed drifts.
kv_floor() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor" 127.0.0.1 "$RPORT" "$CONNS" "$P" "$SECS" "$TMP/get.req" "$GET_REPLY")
  floor_row "kv-P$P" floor "$r" "$c"
}
kv_uring() {
  [ "$URING" = 1 ] || return 0
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor-u" -u 127.0.0.1 "$RPORT" "$CONNS" "$P" "$SECS" "$TMP/get.req" "$GET_REPLY")
  floor_row "kv-P$P" floor-io_uring "$r" "$c"
}
kv_multishot() {
  [ "$URING" = 1 ] || return 0
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor-u" -m 127.0.0.1 "$RPORT" "$CONNS" "$P" "$SECS" "$TMP/get.req" "$GET_REPLY")
  floor_row "kv-P$P" floor-multishot "$r" "$c"
}
kv_rackbench() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$BIN" run kv --target "127.0.0.1:$RPORT" -c "$CONNS" -r 1 -d 10 -P "$P" \
        -t get --duration "$SECS" --client-cpus "$CLIENT_CPU" --no-telemetry --json -q)
  n=$(jq -r '.results[0].metrics[] | select(.name=="requests" and (.labels|length)==0) | .value' "$TMP/out")
  s=$(jq -r '.results[0].metrics[] | select(.name=="measured_duration_s" and (.labels|length)==0) | .value' "$TMP/out")
  row "kv-P$P" rackbench "$r" "$n" "$c" "$s"
}
kv_reference() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" redis-benchmark -p "$RPORT" -c "$CONNS" -n "$N" -d 10 -P "$P" -t get --csv -q)
  rps=$(python3 -c 'import csv,sys; print(next(float(r[1]) for r in csv.reader(open(sys.argv[1])) if r and r[0]=="GET"))' "$TMP/out")
  row "kv-P$P" redis-benchmark "$r" "$N" "$c" "$(awk -v n="$N" -v r="$rps" 'BEGIN{print n/r}')"
}
# in_order ROUND FN...: the functions in order, or the other way round in even rounds.
in_order() {
  local round=$1; shift
  local fns=("$@") i
  if [ $((round % 2)) = 1 ]; then for i in "${fns[@]}"; do "$i"; done
  else for ((i = ${#fns[@]} - 1; i >= 0; i--)); do "${fns[$i]}"; done; fi
}
for P in 1 100; do
  # redis-benchmark runs a count of requests: about SECS seconds' worth.
  N=$(( P == 1 ? 120000 * SECS : 2000000 * SECS ))
  for r in $(seq "$ROUNDS"); do
    in_order "$r" kv_floor kv_uring kv_multishot kv_rackbench kv_reference
  done
done

# --- http
HPORT=$(free_port)
mkdir -p "$TMP/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$TMP/www/index.html"
chmod 755 "$TMP/www"; chmod 644 "$TMP/www/index.html"
cat > "$TMP/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $TMP/nginx.pid;
error_log $TMP/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $TMP/cb; proxy_temp_path $TMP/pt; fastcgi_temp_path $TMP/ft;
    uwsgi_temp_path $TMP/ut; scgi_temp_path $TMP/st;
    types { text/html html; }
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 100000000; keepalive_timeout 300s;
    server { listen 127.0.0.1:$HPORT backlog=4096; root $TMP/www; location / { } }
}
EOF
taskset -c "$SERVER_CPU" nginx -p "$TMP" -c "$TMP/nginx.conf" -e "$TMP/error.log" &
PIDS+=($!)
URL="http://127.0.0.1:$HPORT/index.html"
printf 'GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$HPORT" > "$TMP/http.req"
# The reply's length, read off one real reply (its Date header has a fixed width).
HTTP_REPLY=$(python3 - "$HPORT" "$TMP/http.req" <<'PY'
import socket, sys, time
for _ in range(50):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1); break
    except OSError:
        time.sleep(0.1)
s.sendall(open(sys.argv[2], "rb").read())
data = b""
while b"\r\n\r\n" not in data:
    data += s.recv(65536)
head, _, body = data.partition(b"\r\n\r\n")
length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")))
while len(body) < length:
    body += s.recv(65536)
print(len(head) + 4 + length)
PY
)
http_floor() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor" 127.0.0.1 "$HPORT" "$CONNS" 1 "$SECS" "$TMP/http.req" "$HTTP_REPLY")
  floor_row http floor "$r" "$c"
}
http_uring() {
  [ "$URING" = 1 ] || return 0
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor-u" -u 127.0.0.1 "$HPORT" "$CONNS" 1 "$SECS" "$TMP/http.req" "$HTTP_REPLY")
  floor_row http floor-io_uring "$r" "$c"
}
http_multishot() {
  [ "$URING" = 1 ] || return 0
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$TMP/floor-u" -m 127.0.0.1 "$HPORT" "$CONNS" 1 "$SECS" "$TMP/http.req" "$HTTP_REPLY")
  floor_row http floor-multishot "$r" "$c"
}
http_rackbench() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" "$BIN" run http --target "$URL" --connections "$CONNS" --threads 1 \
        --duration "$SECS" --warmup 0 --client-cpus "$CLIENT_CPU" --no-telemetry --json --quiet)
  n=$(jq -r '.results[0].metrics[] | select(.name=="requests" and (.labels|length)==0) | .value' "$TMP/out")
  rps=$(jq -r '.results[0].metrics[] | select(.name=="requests_per_s" and (.labels|length)==0) | .value' "$TMP/out")
  row http rackbench "$r" "$n" "$c" "$(awk -v n="$n" -v r="$rps" 'BEGIN{print n/r}')"
}
http_reference() {
  c=$(cpu_of taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${SECS}s" "$URL")
  n=$(awk '/requests in/ {print $1}' "$TMP/out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$TMP/out")
  row http wrk "$r" "$n" "$c" "$(awk -v n="$n" -v r="$rps" 'BEGIN{print n/r}')"
}
for r in $(seq "$ROUNDS"); do
  in_order "$r" http_floor http_uring http_multishot http_rackbench http_reference
done

python3 - "$ROWS" <<'PY'
import statistics, sys
rows = [l.strip().split(",") for l in open(sys.argv[1]) if l.strip()]
per = {}
for case, tool, rnd, n, cpu in rows:
    per.setdefault(case, {}).setdefault(tool, {})[rnd] = float(cpu) * 1e6 / float(n)
print()
print("client CPU per request (us), median over rounds, and over the epoll floor's (paired by round):")
for case, tools in per.items():
    floor = tools["floor"]
    parts = []
    for tool, by_round in tools.items():
        med = statistics.median(by_round.values())
        ratio = statistics.median(v / floor[r] for r, v in by_round.items() if r in floor)
        parts.append(f"{tool} {med:.3f} ({ratio:.2f}x)")
    print(f"  {case:<7} " + ", ".join(parts))
PY
