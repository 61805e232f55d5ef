#!/usr/bin/env bash
# rackbench http vs wrk on the same nginx (a reference script, not a test).
#
# One nginx (1 worker, a 1 KiB static file, access log off: the same configuration the
# http workload launches) pinned to CPU 0; wrk and `rackbench run http --target` pinned to
# CPU 1 in turn, same connections and duration, alternating, several rounds. Prints each
# run's requests/s and client CPU per request (user+sys of the whole client process from
# the shell's `times`, divided by the requests it completed), then the medians.
#
# Goals, printed as GOAL lines at the end: rackbench's client CPU per request at most 0.7x
# wrk's at equal requests/s (nginx is the limit, so both reach the same rate); N/A with
# NEIGHBOUR=1 (the goals are of a client with its CPU to itself).
# Each round runs the two back to back, wrk first in odd rounds and rackbench first in
# even ones, so their ratio within a round is the figure to read on a noisy machine (a VM's throughput drifts by 20% from minute to
# minute); the medians of those paired ratios are printed last.
#
# Usage: bench/http_vs_wrk.sh [ROUNDS] [CONNECTIONS] [DURATION_S] [FILE_BYTES]
# Environment: CLIENT_IO=auto|epoll|io_uring (rackbench's --client-io, default auto);
# NEIGHBOUR=1 keeps a CPU-bound process pinned to the client's CPU throughout, so both
# clients time-share their CPU with a busy neighbour (a loaded load-generator host): the
# requests/s then differ from run to run, and the CPU per request is the figure to read.
# Needs: nginx (apt-get install nginx-light), wrk (apt-get install wrk), jq, and a release
# build (cargo build --release -p rackbench) or RACKBENCH=/path/to/rackbench.
set -euo pipefail

ROUNDS=${1:-4}
# Which tool goes first alternates by round: an even count puts each first equally often.
[ $((ROUNDS % 2)) = 0 ] || { ROUNDS=$((ROUNDS + 1)); echo "rounds: $ROUNDS (made even, so that each tool goes first as often)"; }
CONNS=${2:-50}
DUR=${3:-10}
SIZE=${4:-1024}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CLIENT_IO=${CLIENT_IO:-auto}
NEIGHBOUR=${NEIGHBOUR:-0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RACKBENCH=${RACKBENCH:-$ROOT/target/release/rackbench}

for tool in nginx wrk jq taskset; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y nginx-light wrk jq util-linux)" >&2; exit 2; }
done
[ -x "$RACKBENCH" ] || { echo "no rackbench at $RACKBENCH: cargo build --release -p rackbench" >&2; exit 2; }

DIR=$(mktemp -d /tmp/rackbench-http-vs-wrk.XXXXXX)
chmod 755 "$DIR"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$DIR/www"
head -c "$SIZE" /dev/zero | tr '\0' 'x' > "$DIR/www/index.html"
chmod 755 "$DIR/www"; chmod 644 "$DIR/www/index.html"
cat > "$DIR/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $DIR/client_body_temp;
    proxy_temp_path $DIR/proxy_temp;
    fastcgi_temp_path $DIR/fastcgi_temp;
    uwsgi_temp_path $DIR/uwsgi_temp;
    scgi_temp_path $DIR/scgi_temp;
    types { text/html html; }
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 100000000; keepalive_timeout 300s;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        root $DIR/www;
        location / { }
    }
}
EOF
taskset -c "$SERVER_CPU" nginx -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/error.log" &
NGINX=$!
NEIGHBOUR_PID=
if [ "$NEIGHBOUR" = 1 ]; then
    taskset -c "$CLIENT_CPU" bash -c 'while :; do :; done' &
    NEIGHBOUR_PID=$!
fi
cleanup() {
    [ -z "$NEIGHBOUR_PID" ] || kill "$NEIGHBOUR_PID" 2>/dev/null || true
    kill "$NGINX" 2>/dev/null || true; wait "$NGINX" 2>/dev/null || true; rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 50); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/index.html" 2>/dev/null && break
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),0.2)" 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/index.html"

# Children's CPU (user+sys, seconds) of one command, from bash's `times`.
cpu_of() { # prints "<cpu_s>"; the command's stdout in out.txt, its stderr in err.txt
    local out
    # The command's status is kept (times would hide it), and checked by the caller.
    out=$(bash -c '"$@" > "'"$DIR"'/out.txt" 2> "'"$DIR"'/err.txt"; echo $? > "'"$DIR"'/rc.txt"; times' _ "$@" | tail -1)
    # "0m1.234s 0m0.567s" -> 1.801
    echo "$out" | awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]); printf "%.3f\n", u[1]*60+u[2]+s[1]*60+s[2] }'
}

W_RPS=(); W_CPU=(); R_RPS=(); R_CPU=(); R_LOOP=(); P_RPS=(); P_CPU=()
printf "%-9s %5s %12s %16s %20s\n" tool round req_per_s client_us_per_req loadgen_us_per_req
# A run that failed, or had errors, gives no ratio: its requests are not the other's.
failed() { # TOOL WHY
    echo "$1 failed: $2" >&2
    head -n 20 "$DIR/out.txt" "$DIR/err.txt" >&2
    exit 1
}
# One run of each tool: its req/s and client CPU per request appended to its arrays.
wrk_run() {
    local cpu rps n us
    cpu=$(cpu_of taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DUR}s" "$URL")
    [ "$(cat "$DIR/rc.txt")" = 0 ] || failed wrk "exit status $(cat "$DIR/rc.txt")"
    # wrk counts non-2xx replies and socket errors among its requests.
    if grep -qE "Socket errors|Non-2xx" "$DIR/out.txt"; then
        failed wrk "$(grep -E "Socket errors|Non-2xx" "$DIR/out.txt")"
    fi
    rps=$(awk '/Requests\/sec/ {print $2}' "$DIR/out.txt")
    n=$(awk '/requests in/ {print $1}' "$DIR/out.txt")
    us=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.2f", c*1e6/n }')
    W_RPS+=("$rps"); W_CPU+=("$us")
    printf "%-9s %5s %12.0f %16s %20s\n" wrk "$1" "$rps" "$us" -
}
rackbench_run() {
    local cpu rps n us loop
    cpu=$(cpu_of taskset -c "$CLIENT_CPU" "$RACKBENCH" run http --target "$URL" \
        --connections "$CONNS" --threads 1 --duration "$DUR" --warmup 0 \
        --client-cpus "$CLIENT_CPU" --client-io "$CLIENT_IO" --no-telemetry --db "$DIR/results.db" --json --quiet)
    [ "$(cat "$DIR/rc.txt")" = 0 ] || failed rackbench "exit status $(cat "$DIR/rc.txt")"
    jq -e . "$DIR/out.txt" >/dev/null 2>&1 || failed rackbench "its output is not JSON"
    if [ -s "$DIR/err.txt" ]; then echo "rackbench said: $(head -c 300 "$DIR/err.txt")" >&2; fi
    if jq -e '[.results[0].flags[]?.code] | index("errors")' "$DIR/out.txt" >/dev/null; then
        failed rackbench "$(jq -r '.results[0].flags[] | select(.code=="errors") | .message' "$DIR/out.txt")"
    fi
    rps=$(jq -r '.results[0].metrics[] | select(.name=="requests_per_s" and (.labels|length)==0) | .value' "$DIR/out.txt")
    n=$(jq -r '.results[0].metrics[] | select(.name=="requests" and (.labels|length)==0) | .value' "$DIR/out.txt")
    loop=$(jq -r '.results[0].metrics[] | select(.name=="loadgen_cpu_us_per_op") | .value' "$DIR/out.txt")
    us=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.2f", c*1e6/n }')
    R_RPS+=("$rps"); R_CPU+=("$us"); R_LOOP+=("$loop")
    printf "%-9s %5s %12.0f %16s %20.2f\n" rackbench "$1" "$rps" "$us" "$loop"
}
for r in $(seq "$ROUNDS"); do
    # Alternating: wrk first in odd rounds, rackbench first in even ones.
    if [ $((r % 2)) = 1 ]; then wrk_run "$r"; rackbench_run "$r"
    else rackbench_run "$r"; wrk_run "$r"; fi
    P_RPS+=("$(awk -v a="${R_RPS[-1]}" -v b="${W_RPS[-1]}" 'BEGIN { printf "%.4f", a/b }')")
    P_CPU+=("$(awk -v a="${R_CPU[-1]}" -v b="${W_CPU[-1]}" 'BEGIN { printf "%.4f", a/b }')")
done

median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END { if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
echo
echo "medians of $ROUNDS rounds, $CONNS connections, ${DUR}s, ${SIZE}-byte file, nginx on CPU $SERVER_CPU, client on CPU $CLIENT_CPU (rackbench --client-io $CLIENT_IO)$([ "$NEIGHBOUR" = 1 ] && echo ", beside a busy neighbour"):"
printf "  wrk:       %10.0f req/s  %6.2f us client CPU per request\n" "$(median "${W_RPS[@]}")" "$(median "${W_CPU[@]}")"
printf "  rackbench: %10.0f req/s  %6.2f us client CPU per request (load loop alone: %.2f us)\n" \
    "$(median "${R_RPS[@]}")" "$(median "${R_CPU[@]}")" "$(median "${R_LOOP[@]}")"
printf "  paired ratios rackbench/wrk, median of %s rounds: req/s %.3f (min %.3f, max %.3f), client CPU per request %.3f\n" \
    "$ROUNDS" "$(median "${P_RPS[@]}")" "$(printf "%s\n" "${P_RPS[@]}" | sort -g | head -1)" \
    "$(printf "%s\n" "${P_RPS[@]}" | sort -g | tail -1)" "$(median "${P_CPU[@]}")"
ratio_rps=$(median "${P_RPS[@]}")
# "At equal requests/s": the CPU ratio is the median over the rounds whose two rates are
# within 3% of each other; with fewer than half such rounds there is no verdict.
EQUAL=()
for i in "${!P_RPS[@]}"; do
    if awk -v q="${P_RPS[$i]}" 'BEGIN { exit !(q >= 0.97 && q <= 1.03) }'; then EQUAL+=("${P_CPU[$i]}"); fi
done
echo "  rounds at equal requests/s (within 3%): ${#EQUAL[@]} of $ROUNDS"
if [ "${#EQUAL[@]}" -gt 0 ]; then ratio_cpu=$(median "${EQUAL[@]}"); else ratio_cpu=nan; fi
# The goals are of a client with its CPU to itself: beside a neighbour, figures only.
if [ "$NEIGHBOUR" = 1 ]; then
    awk -v r="$(median "${P_CPU[@]}")" -v q="$ratio_rps" 'BEGIN { printf "GOAL http client CPU per request <= 0.7x wrk'"'"'s: %.3f N/A (beside a busy neighbour; the goal is of a client CPU to itself)\nGOAL http requests/s at least equal to wrk'"'"'s: %.3f N/A (beside a busy neighbour)\n", r, q }'
    exit 0
fi
# The CPU goal holds at equal requests/s: judged only when the two rates are within 3%.
awk -v r="$ratio_cpu" -v n="${#EQUAL[@]}" -v all="$ROUNDS" 'BEGIN { printf "GOAL http client CPU per request <= 0.7x wrk'"'"'s at equal requests/s (median of the %d rounds within 3%%): %.3f %s\n", n, r, (2 * n < all ? "INVALID (requests/s differ in most rounds)" : (r <= 0.7 ? "OK" : "SHORT")) }'
awk -v r="$ratio_rps" 'BEGIN { printf "GOAL http requests/s at least equal to wrk'"'"'s (>= 0.97x, nginx-bound): %.3f %s\n", r, (r >= 0.97 ? "OK" : "SHORT") }'
