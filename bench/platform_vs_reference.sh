#!/usr/bin/env bash
# platform_vs_reference.sh: rackbench's platform workloads beside the reference tools, on
# the same machine, in one run, alternating so that drift hits both sides alike.
#
#   crypto: `openssl speed -seconds $SECS rsa2048` (and `-multi 2`) beside
#           rackbench crypto rsa2048 with 1 and 2 threads.
#           openssl speed (1 process) divides by USER CPU time; -multi by wall time and
#           sums the children. rackbench reports both: signs_per_s (wall) and
#           signs_per_cpu_s (CPU time), so the 1-process ratio uses signs_per_cpu_s and
#           the -multi ratio uses signs_per_s.
#   net:    iperf3 TCP and UDP (1472 B and 60 B, -b 0) on loopback, server pinned to CPU 0
#           and client to CPU 1, beside rackbench net with receiver CPU 0, sender CPU 1;
#           like iperf3's client, the whole rackbench process runs under `taskset -c 1`
#           (the receiver it launches pins itself to CPU 0, --receiver-cpus).
#           TCP runs with the system's congestion control, and again with cubic (iperf3
#           -C cubic, rackbench --congestion cubic) when that default is another one: under
#           BBR, loopback throughput is set by BBR's pacing (an hrtimer per packet, costly
#           in a VM), not by how the tools move bytes. Not quite like for like: iperf3
#           (3.12) sets -C after its stream has connected, and a stream that started on BBR
#           keeps BBR's pacing after the switch, so its "cubic" is paced CUBIC; rackbench
#           sets it before connecting. CUBIC_AS_DEFAULT=1 (root) makes cubic the
#           system's default for each cubic pair, and puts the default back after it (and
#           on exit), so both tools run plain CUBIC from the first segment.
#
# The rackbench commands:
#   rackbench run crypto --tests rsa2048 --threads 1 --duration 3 --json   (taskset -c 1)
#   rackbench run crypto --tests rsa2048 --threads 2 --duration 3 --json
#   rackbench run net --tests tcp --duration 10 --sender-cpus 1 --receiver-cpus 0 --json
#                     [--congestion cubic]
#   rackbench run net --tests udp --udp-payload 1472,60 --rate 0 --duration 10 \
#                     --sender-cpus 1 --receiver-cpus 0 --json
# With USE_EXAMPLES=1 the same code runs through the workload crates' example binaries
# (crypto_speed, net_speed) against a `rackbench net serve` started here.
# The 1-process RSA pair runs pinned to CPU 1 (both tools); `-multi 2` and 2 threads use
# both CPUs. At the end: the median of each paired ratio over the REPS rounds (a VM drifts
# by 10-30% from minute to minute; a ratio within one round is what compares).
#
# Environment: SECS (crypto seconds, 3), NET_SECS (net seconds, 10), REPS (alternations, 8;
#   the TCP and UDP goals need at least 8 pairs and say INSUFFICIENT with fewer),
#   RACKBENCH (binary, target/release/rackbench), USE_EXAMPLES (1 = example binaries),
#   CUBIC_AS_DEFAULT (1: cubic as the system default during the cubic pairs, root only),
#   AA (1: each TCP round runs iperf3 a second time, right after the pair, and the summary
#   gives iperf3's paired ratio to itself: how far a TCP ratio strays with no difference
#   between the tools, the band to read the TCP goals in; each TCP GOAL line names it),
#   ZEROCOPY (1: each TCP round under the default congestion control also pairs iperf3 -Z
#   with rackbench --zerocopy, both sending by sendfile; information, no goal),
#   ONLY (the parts to run, comma-separated, of rsa,tcp,cubic,udp,paced; all but paced by
#   default: e.g. ONLY=tcp REPS=16 AA=1 runs 16 TCP pairs under the default congestion
#   control alone, about 8 minutes, and prints only the goals of what ran),
#   PACED (the rates of the paced part, default 500M,2G: per round and rate, iperf3 -b R
#   beside rackbench --rate R, TCP and UDP 1472 B; each end's CPU and UDP's loss at the
#   same offered load, with the paired ratio of the two ends' CPU together; information,
#   no goal: ONLY=paced REPS=4 takes about 6 minutes).
# Goals (printed as GOAL lines at the end): RSA within 5% of openssl speed; TCP at least
# iperf3's Gbit/s at no more CPU per Gbit/s; UDP at least iperf3's packets/s at no more
# sender CPU per packet (one datagram per send, as iperf3). UDP_BATCH=N also runs
# rackbench's --udp-batch N (sendmmsg) and UDP_GSO=N its --udp-gso N (one GSO buffer per
# send), and says how far beyond iperf3 each goes. Needs: openssl, iperf3, taskset, jq, python3; 2+ CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${SECS:-3}
NET_SECS=${NET_SECS:-10}
REPS=${REPS:-8}
ONLY=${ONLY:-rsa,tcp,cubic,udp}
ONLY=${ONLY// /}
for part in ${ONLY//,/ }; do
  case $part in rsa|tcp|cubic|udp|paced) ;; *) echo "ONLY=$ONLY: unknown part '$part'; choose from rsa,tcp,cubic,udp,paced (comma-separated)" >&2; exit 2;; esac
done
PACED=${PACED:-500M,2G}
PACED=${PACED// /}
for r in ${PACED//,/ }; do
  [[ $r =~ ^[0-9]+(\.[0-9]+)?[kKmMgG]?$ ]] && [[ ! $r =~ ^0+(\.0*)?[kKmMgG]?$ ]] \
    || { echo "PACED=$PACED: '$r' is not a rate above 0 like 500M or 2G" >&2; exit 2; }
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }
RB=${RACKBENCH:-target/release/rackbench}
EX=target/release/examples

for t in openssl iperf3 taskset jq python3; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install openssl iperf3 util-linux jq python3)"; exit 2; }
done
cargo build --release -q -p rackbench -p rackbench-crypto --example crypto_speed \
  -p rackbench-net --example net_speed 2>/dev/null \
  || { echo "cargo build --release failed; run it by hand to see why"; exit 2; }

if [ "${USE_EXAMPLES:-}" != 1 ] && "$RB" run crypto --help >/dev/null 2>&1 \
   && "$RB" run crypto --tests rsa512 --threads 1 --duration 0.1 --json >/dev/null 2>&1; then
  MODE=run
else
  MODE=examples
fi
echo "# rackbench via: $MODE   ($(date -u +%FT%TZ), $(nproc) CPUs, $(openssl version), $(iperf3 --version | head -1))"

TMP=$(mktemp -d)
SERVE_PID=""
CC_SYSCTL=/proc/sys/net/ipv4/tcp_congestion_control
CC_BEFORE=$(cat "$CC_SYSCTL" 2>/dev/null || true)
# The system's default congestion control put back as it was (CUBIC_AS_DEFAULT changes it).
restore_cc() { if [ -n "$CC_BEFORE" ] && [ "$(cat "$CC_SYSCTL")" != "$CC_BEFORE" ]; then echo "$CC_BEFORE" > "$CC_SYSCTL"; fi; }
cleanup() { [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; restore_cc; rm -rf "$TMP"; }
trap cleanup EXIT

# Pull one unlabelled (or end=...) metric out of the JSON of either mode.
metric() { # file name [end]
  python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
path, name, end = sys.argv[1], sys.argv[2], sys.argv[3]
def walk(x):
    if isinstance(x, dict):
        if x.get("name") == name and "value" in x:
            labels = x.get("labels") or {}
            if (end and labels.get("end") == end) or (not end and not labels):
                yield x["value"]
        for v in x.values(): yield from walk(v)
    elif isinstance(x, list):
        for v in x: yield from walk(v)
vals = []
for line in open(path):
    line = line.strip()
    if line.startswith("{") or line.startswith("["):
        try: vals += list(walk(json.loads(line)))
        except Exception: pass
if not vals:
    try: vals = list(walk(json.load(open(path))))
    except Exception: pass
print(vals[0] if vals else "nan")
PY
}
# Four decimals: the goals compare these, and a ratio rounded to 3 (0.9996 to 1.000)
# could pass a bound it misses.
ratio() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%.4f' % (a/b) if b else 'nan')" "$1" "$2"; }

rb_crypto() { # threads -> json file
  local pin=(); [ "$1" = 1 ] && pin=(taskset -c 1)
  if [ $MODE = run ]; then "${pin[@]}" "$RB" run crypto --tests rsa2048 --threads "$1" --duration "$SECS" --json -q > "$2"
  else "${pin[@]}" "$EX/crypto_speed" rsa2048 "$1" "$SECS" > "$2"; fi
}

UB1472C=(); UB60C=(); ZG=(); ZC=(); R1S=(); R1V=(); R2S=(); R2V=(); TG=(); TC=(); TGC=(); TCC=(); AAG=(); AAC=(); AAGC=(); AACC=(); U1472=(); U60=(); UC1472=(); UC60=(); UB1472=(); UB60=(); UG1472=(); UG60=()
declare -A PACED_CPU=() PACED_LOSS=()
if want rsa; then
echo
echo "## RSA 2048 (${SECS} s per operation)"
printf "%-34s %12s %12s\n" "" "sign/s" "verify/s"
os_1() { taskset -c 1 openssl speed -seconds "$SECS" rsa2048 2>/dev/null | awk '/^rsa 2048/ {print $6, $7}' > "$TMP/os1"; }
os_2() { openssl speed -multi 2 -seconds "$SECS" rsa2048 2>/dev/null | awk '/^rsa 2048/ {print $6, $7}' > "$TMP/os2"; }
for rep in $(seq "$REPS"); do
  # Alternating, as every other pair here: openssl first in odd rounds, rackbench in even.
  if [ $((rep % 2)) = 1 ]; then
    os_1; rb_crypto 1 "$TMP/rb1.json"; os_2; rb_crypto 2 "$TMP/rb2.json"
  else
    rb_crypto 1 "$TMP/rb1.json"; os_1; rb_crypto 2 "$TMP/rb2.json"; os_2
  fi
  read -r os1s os1v < "$TMP/os1"; read -r os2s os2v < "$TMP/os2"
  rb1s=$(metric "$TMP/rb1.json" signs_per_cpu_s); rb1v=$(metric "$TMP/rb1.json" verifies_per_cpu_s)
  rb1ws=$(metric "$TMP/rb1.json" signs_per_s)
  rb2s=$(metric "$TMP/rb2.json" signs_per_s); rb2v=$(metric "$TMP/rb2.json" verifies_per_s)
  printf "%-34s %12s %12s\n" "openssl speed (user CPU time)" "$os1s" "$os1v"
  printf "%-34s %12.1f %12.1f   (wall: %.1f sign/s)\n" "rackbench 1 thread (per CPU-s)" "$rb1s" "$rb1v" "$rb1ws"
  printf "%-34s %12s %12s\n" "  ratio rackbench/openssl" "$(ratio "$rb1s" "$os1s")" "$(ratio "$rb1v" "$os1v")"
  printf "%-34s %12s %12s\n" "openssl speed -multi 2 (wall)" "$os2s" "$os2v"
  printf "%-34s %12.1f %12.1f\n" "rackbench 2 threads (wall)" "$rb2s" "$rb2v"
  printf "%-34s %12s %12s\n" "  ratio rackbench/openssl" "$(ratio "$rb2s" "$os2s")" "$(ratio "$rb2v" "$os2v")"
  R1S+=("$(ratio "$rb1s" "$os1s")"); R1V+=("$(ratio "$rb1v" "$os1v")")
  R2S+=("$(ratio "$rb2s" "$os2s")"); R2V+=("$(ratio "$rb2v" "$os2v")")
done
fi

if want tcp || want cubic || want udp || want paced; then
  echo
  echo "## Loopback, receiver/server on CPU 0, sender/client on CPU 1 (${NET_SECS} s)"
fi
PORT_I=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PORT_R=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ $MODE = examples ] && { want tcp || want cubic || want udp; }; then
  taskset -c 0 "$RB" net serve --bind "127.0.0.1:$PORT_R" --cpus 0 -q > /dev/null &
  SERVE_PID=$!
  sleep 0.5
fi

iperf() { # extra args... -> json on stdout
  taskset -c 0 iperf3 -s -1 -p "$PORT_I" >/dev/null 2>&1 &
  local spid=$!
  # Until the server listens (a client too early fails, and the server would wait on);
  # not by connecting: a one-off server would take that for its one client.
  for _ in $(seq 50); do
    ss -Hltn "sport = :$PORT_I" 2>/dev/null | grep -q . && break
    sleep 0.1
  done
  taskset -c 1 iperf3 -c 127.0.0.1 -p "$PORT_I" -t "$NET_SECS" -J "$@" || kill "$spid" 2>/dev/null || true
  wait $spid 2>/dev/null || true
}
rb_net() { # test [congestion [more rackbench flags...]] -> json on stdout
  if [ $MODE = run ]; then
    local extra=()
    case $1 in udp*) extra=(--rate 0);; esac
    [ -n "${2:-}" ] && extra+=(--congestion "$2")
    extra+=("${@:3}")
    taskset -c 1 "$RB" run net --tests "$1" --duration "$NET_SECS" --sender-cpus 1 --receiver-cpus 0 "${extra[@]}" --json -q
  else
    "$EX/net_speed" "$1" "127.0.0.1:$PORT_R" "$NET_SECS" 1 0 0 ${2:+"$2"}
  fi
}
# TCP congestion controls to compare under: the system's, then cubic if that is another.
DEFAULT_CC=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo unknown)
CCS=()
want tcp && CCS+=("")
# Choosing one needs it loaded, and root or its name in the allowed list.
if want cubic && [ "$DEFAULT_CC" != cubic ] && grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null \
   && { [ "$(id -u)" = 0 ] || grep -qw cubic /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null; }; then
  CCS+=(cubic)
elif want cubic; then
  echo "ONLY names cubic, but it is this host's default ($DEFAULT_CC), or not loaded, or not allowed here: no cubic pairs" >&2
fi
CUBIC_AS_DEFAULT=${CUBIC_AS_DEFAULT:-0}
if [ "$CUBIC_AS_DEFAULT" = 1 ] && { [ "$(id -u)" != 0 ] || [[ " ${CCS[*]} " != *" cubic "* ]]; }; then
  echo "CUBIC_AS_DEFAULT=1 needs root and a default other than cubic; running without it" >&2
  CUBIC_AS_DEFAULT=0
fi

if want paced && [ $MODE != run ]; then
  echo "ONLY names paced, which needs \`rackbench run\` (via $MODE): no paced pairs" >&2
fi

if [ "${ZEROCOPY:-0}" = 1 ] && { [ $MODE != run ] || ! want tcp; }; then
  echo "ZEROCOPY=1 pairs run beside the tcp pairs of \`rackbench run\` only (ONLY=$ONLY, via $MODE): none run" >&2
fi

# One reference run and one rackbench run, iperf3 first in odd rounds and rackbench first
# in even ones (what ran just before moves loopback figures by a few percent).
pair() { # round ref_out rb_out ref_cmd... -- rb_cmd...
  local round=$1 ref_out=$2 rb_out=$3; shift 3
  local ref=() rb=()
  while [ "$1" != -- ]; do ref+=("$1"); shift; done; shift
  rb=("$@")
  if [ $((round % 2)) = 1 ]; then "${ref[@]}" > "$ref_out"; "${rb[@]}" > "$rb_out"
  else "${rb[@]}" > "$rb_out"; "${ref[@]}" > "$ref_out"; fi
}

for rep in $(seq "$REPS"); do
  for cc in "${CCS[@]}"; do
    label="TCP (${cc:-$DEFAULT_CC, the default})"
    printf "%-34s %10s %9s %9s %12s %6s\n" "$label" "Gbit/s" "snd CPU%" "rcv CPU%" "CPU%/Gbit" "retr"
    [ -n "$cc" ] && [ "$CUBIC_AS_DEFAULT" = 1 ] && echo cubic > "$CC_SYSCTL"
    pair "$rep" "$TMP/i_tcp.json" "$TMP/r_tcp.json" iperf ${cc:+-C "$cc"} -- rb_net tcp "$cc"
    restore_cc
    ig=$(jq '.end.sum_received.bits_per_second/1e9' "$TMP/i_tcp.json")
    ic=$(jq '.end.cpu_utilization_percent.host_total' "$TMP/i_tcp.json")
    is=$(jq '.end.cpu_utilization_percent.remote_total' "$TMP/i_tcp.json")
    rg=$(metric "$TMP/r_tcp.json" throughput_gbit_per_s)
    # Whole processes on both sides: iperf3's cpu_utilization_percent is getrusage(RUSAGE_SELF)
    # over the test, and so is rackbench's process_cpu_pct (its worker threads' own CPU,
    # sender_cpu_pct, leaves out control and telemetry).
    rc=$(metric "$TMP/r_tcp.json" process_cpu_pct sender); rs=$(metric "$TMP/r_tcp.json" process_cpu_pct receiver)
    ipg=$(python3 -c "print((${ic}+${is})/${ig})"); rpg=$(metric "$TMP/r_tcp.json" process_cpu_pct_per_gbit)
    # Segments the sender retransmitted (TCP_INFO on both): on loopback, reordering that
    # makes a run's congestion control back off.
    ir=$(jq '.end.sum_sent.retransmits // "nan"' "$TMP/i_tcp.json"); rr=$(metric "$TMP/r_tcp.json" retransmits)
    printf "%-34s %10.2f %9.1f %9.1f %12.2f %6.0f\n" "iperf3" "$ig" "$ic" "$is" "$ipg" "$ir"
    printf "%-34s %10.2f %9.1f %9.1f %12.2f %6.0f\n" "rackbench net tcp" "$rg" "$rc" "$rs" "$rpg" "$rr"
    printf "%-34s %10s %20s %12s\n" "  ratio rackbench/iperf3" "$(ratio "$rg" "$ig")" "" "$(ratio "$rpg" "$ipg")"
    if [ -z "$cc" ]; then TG+=("$(ratio "$rg" "$ig")"); TC+=("$(ratio "$rpg" "$ipg")")
    else TGC+=("$(ratio "$rg" "$ig")"); TCC+=("$(ratio "$rpg" "$ipg")"); fi
    if [ "${AA:-0}" = 1 ]; then
      # The A/A control: iperf3 again, set against its own run of this round.
      [ -n "$cc" ] && [ "$CUBIC_AS_DEFAULT" = 1 ] && echo cubic > "$CC_SYSCTL"
      iperf ${cc:+-C "$cc"} > "$TMP/i_tcp2.json"
      restore_cc
      ag=$(jq '.end.sum_received.bits_per_second/1e9' "$TMP/i_tcp2.json")
      apg=$(jq "(.end.cpu_utilization_percent.host_total+.end.cpu_utilization_percent.remote_total)/$ag" "$TMP/i_tcp2.json")
      printf "%-34s %10.2f %33.2f\n" "iperf3 again (A/A)" "$ag" "$apg"
      printf "%-34s %10s %20s %12s\n" "  ratio iperf3/iperf3" "$(ratio "$ag" "$ig")" "" "$(ratio "$apg" "$ipg")"
      if [ -z "$cc" ]; then AAG+=("$(ratio "$ag" "$ig")"); AAC+=("$(ratio "$apg" "$ipg")")
      else AAGC+=("$(ratio "$ag" "$ig")"); AACC+=("$(ratio "$apg" "$ipg")"); fi
    fi
    if [ "${ZEROCOPY:-0}" = 1 ] && [ -z "$cc" ] && [ $MODE = run ]; then
      # Both tools' sendfile path: iperf3 -Z beside rackbench --zerocopy (information).
      pair "$rep" "$TMP/i_tcpz.json" "$TMP/r_tcpz.json" iperf -Z -- rb_net tcp "" --zerocopy
      zg=$(jq '.end.sum_received.bits_per_second/1e9' "$TMP/i_tcpz.json")
      zpg=$(jq "(.end.cpu_utilization_percent.host_total+.end.cpu_utilization_percent.remote_total)/$zg" "$TMP/i_tcpz.json")
      rzg=$(metric "$TMP/r_tcpz.json" throughput_gbit_per_s); rzpg=$(metric "$TMP/r_tcpz.json" process_cpu_pct_per_gbit)
      printf "%-34s %10.2f %33.2f\n" "iperf3 -Z" "$zg" "$zpg"
      printf "%-34s %10.2f %33.2f\n" "rackbench net tcp --zerocopy" "$rzg" "$rzpg"
      printf "%-34s %10s %20s %12s\n" "  ratio rackbench/iperf3" "$(ratio "$rzg" "$zg")" "" "$(ratio "$rzpg" "$zpg")"
      ZG+=("$(ratio "$rzg" "$zg")"); ZC+=("$(ratio "$rzpg" "$zpg")")
    fi
  done
  if want paced && [ $MODE = run ]; then
    for r in ${PACED//,/ }; do
      # The same offered load from both tools (iperf3 -b; rackbench --rate): what it
      # costs each end, and what UDP loses, when neither sender is at its limit.
      printf "%-30s %10s %9s %9s %8s %11s\n" "paced $r per stream" "rcvd Gb/s" "snd CPU%" "rcv CPU%" "loss%" "CPU ratio"
      for t in tcp udp1472; do
        iargs=(-b "$r"); [ $t = udp1472 ] && iargs+=(-u -l 1472)
        pair "$rep" "$TMP/i_p.json" "$TMP/r_p.json" iperf "${iargs[@]}" -- \
          taskset -c 1 "$RB" run net --tests $t --rate "$r" --duration "$NET_SECS" --sender-cpus 1 --receiver-cpus 0 --json -q
        if [ $t = tcp ]; then ig=$(jq '.end.sum_received.bits_per_second/1e9' "$TMP/i_p.json"); il=nan; rl=nan
        else ig=$(jq '.end.sum.bits_per_second/1e9' "$TMP/i_p.json"); il=$(jq '.end.sum.lost_percent' "$TMP/i_p.json")
             rl=$(metric "$TMP/r_p.json" loss_pct); fi
        ic=$(jq '.end.cpu_utilization_percent.host_total' "$TMP/i_p.json"); is=$(jq '.end.cpu_utilization_percent.remote_total' "$TMP/i_p.json")
        rg=$(metric "$TMP/r_p.json" throughput_gbit_per_s)
        rc=$(metric "$TMP/r_p.json" process_cpu_pct sender); rs=$(metric "$TMP/r_p.json" process_cpu_pct receiver)
        cr=$(python3 -c "import sys; a,b,c,d=map(float,sys.argv[1:]); print('%.3f' % ((a+b)/(c+d)) if c+d else 'nan')" "$rc" "$rs" "$ic" "$is")
        printf "%-30s %10.3f %9.1f %9.1f %8.2f\n" "  iperf3 $t" "$ig" "$ic" "$is" "$il"
        printf "%-30s %10.3f %9.1f %9.1f %8.2f %11s\n" "  rackbench $t" "$rg" "$rc" "$rs" "$rl" "$cr"
        PACED_CPU["$t $r"]+="$cr "
        PACED_LOSS["$t $r"]+="$rl/$il "
      done
    done
  fi
  want udp || continue
  for len in 1472 60; do
    printf "%-26s %10s %10s %10s %8s %9s %9s %9s\n" "UDP $len B, -b 0" "sent Gb/s" "sent pk/s" "rcvd Gb/s" "loss%" "jitter" "snd CPU%" "rcv CPU%"
    pair "$rep" "$TMP/i_udp.json" "$TMP/r_udp.json" iperf -u -b 0 -l "$len" -- rb_net "udp$len"
    isg=$(jq '.end.sum_sent.bits_per_second/1e9' "$TMP/i_udp.json")
    isp=$(jq '.end.sum_sent.packets/.end.sum_sent.seconds' "$TMP/i_udp.json")
    irg=$(jq '.end.sum_received.bits_per_second/1e9' "$TMP/i_udp.json")
    il=$(jq '.end.sum_received.lost_percent' "$TMP/i_udp.json"); ij=$(jq '.end.sum_received.jitter_ms' "$TMP/i_udp.json")
    ic=$(jq '.end.cpu_utilization_percent.host_total' "$TMP/i_udp.json")
    is=$(jq '.end.cpu_utilization_percent.remote_total' "$TMP/i_udp.json")
    rsg=$(metric "$TMP/r_udp.json" throughput_gbit_per_s sender); rsp=$(metric "$TMP/r_udp.json" packets_per_s sender)
    rrg=$(metric "$TMP/r_udp.json" throughput_gbit_per_s)
    rl=$(metric "$TMP/r_udp.json" loss_pct); rj=$(metric "$TMP/r_udp.json" jitter_ms)
    rc=$(metric "$TMP/r_udp.json" process_cpu_pct sender); rs=$(metric "$TMP/r_udp.json" process_cpu_pct receiver)
    printf "%-26s %10.3f %10.0f %10.3f %8.2f %9.4f %9.1f %9.1f\n" "iperf3" "$isg" "$isp" "$irg" "$il" "$ij" "$ic" "$is"
    printf "%-26s %10.3f %10.0f %10.3f %8.2f %9.4f %9.1f %9.1f\n" "rackbench net udp$len" "$rsg" "$rsp" "$rrg" "$rl" "$rj" "$rc" "$rs"
    printf "%-26s %10s %10s %10s\n" "  ratio rackbench/iperf3" "$(ratio "$rsg" "$isg")" "$(ratio "$rsp" "$isp")" "$(ratio "$rrg" "$irg")"
    # CPU per packet, rackbench over iperf3: the sender's CPU% over its packets/s, and
    # both ends' (a receiver that took work off the sender would show in the second).
    cpp=$(python3 -c "import sys; rc,rsp,ic,isp=map(float,sys.argv[1:]); print('%.4f' % ((rc/rsp)/(ic/isp)) if rsp and isp and ic else 'nan')" "$rc" "$rsp" "$ic" "$isp")
    cpb=$(python3 -c "import sys; rc,rs,rsp,ic,is_,isp=map(float,sys.argv[1:]); print('%.4f' % (((rc+rs)/rsp)/((ic+is_)/isp)) if rsp and isp and ic+is_ else 'nan')" "$rc" "$rs" "$rsp" "$ic" "$is" "$isp")
    printf "%-26s %43s %9s\n" "  sender CPU per packet" "" "$cpp"
    printf "%-26s %43s %9s %9s\n" "  both ends' CPU per packet" "" "" "$cpb"
    if [ "$len" = 1472 ]; then U1472+=("$(ratio "$rsp" "$isp")"); UC1472+=("$cpp"); UB1472C+=("$cpb")
    else U60+=("$(ratio "$rsp" "$isp")"); UC60+=("$cpp"); UB60C+=("$cpb"); fi
    if [ "${UDP_BATCH:-0}" -gt 1 ] && [ $MODE = run ]; then
      # What iperf3 cannot do: several datagrams per system call (sendmmsg).
      taskset -c 1 "$RB" run net --tests "udp$len" --duration "$NET_SECS" --sender-cpus 1 --receiver-cpus 0 \
        --rate 0 --udp-batch "$UDP_BATCH" --json -q > "$TMP/r_udpb.json"
      rbp=$(metric "$TMP/r_udpb.json" packets_per_s sender)
      printf "%-26s %10s %10.0f   (%sx iperf3's packets/s)\n" "rackbench --udp-batch $UDP_BATCH" "" "$rbp" "$(ratio "$rbp" "$isp")"
      if [ "$len" = 1472 ]; then UB1472+=("$(ratio "$rbp" "$isp")"); else UB60+=("$(ratio "$rbp" "$isp")"); fi
    fi
    if [ "${UDP_GSO:-0}" -gt 1 ] && [ $MODE = run ]; then
      # Also beyond iperf3: one send(2) of a GSO buffer the kernel cuts into datagrams.
      taskset -c 1 "$RB" run net --tests "udp$len" --duration "$NET_SECS" --sender-cpus 1 --receiver-cpus 0 \
        --rate 0 --udp-gso "$UDP_GSO" --json -q > "$TMP/r_udpg.json"
      rgp=$(metric "$TMP/r_udpg.json" packets_per_s sender); rgl=$(metric "$TMP/r_udpg.json" loss_pct)
      printf "%-26s %10s %10.0f   (%sx iperf3's packets/s, loss %.1f%%)\n" "rackbench --udp-gso $UDP_GSO" "" "$rgp" "$(ratio "$rgp" "$isp")" "$rgl"
      if [ "$len" = 1472 ]; then UG1472+=("$(ratio "$rgp" "$isp")"); else UG60+=("$(ratio "$rgp" "$isp")"); fi
    fi
  done
done
# Rounds' ratios -> "N median min max" at full precision (awk's print keeps 6 digits, and
# rounding that again made a GOAL line read 1.004 beside a summary median of 1.003). A
# round whose figure is not a number (`nan`: a measurement that failed) makes all three
# nan, so no goal can pass on it (gawk reads "nan" as 0, which passes a "<=" goal).
stats() {
  printf "%s\n" "$@" | sort -g | awk 'NF == 0 { next }
    $1 !~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ { bad = 1; next }
    { a[++n] = $1 + 0 }
    END {
      if (bad || n == 0) { print n + 0, "nan", "nan", "nan"; exit }
      m = (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2;
      printf "%d %.17g %.17g %.17g\n", n, m, a[1], a[n] }'
}
summary() { # name values... -> "name: median (min..max) of N"
  local name=$1 n m lo hi; shift
  read -r n m lo hi < <(stats "$@")
  if [ "$m" = nan ]; then
    printf "  %-38s median nan  (%d of %d rounds have a figure)\n" "$name" "$n" "$#"
  else
    printf "  %-38s median %.3f  (min %.3f, max %.3f, %d rounds)\n" "$name" "$m" "$lo" "$hi" "$n"
  fi
}
echo
echo "## Paired ratios rackbench/reference, medians over $REPS rounds"
if want rsa; then
  summary "RSA-2048 sign, 1 process (CPU-s)" "${R1S[@]}"
  summary "RSA-2048 verify, 1 process (CPU-s)" "${R1V[@]}"
  summary "RSA-2048 sign, -multi 2 (wall)" "${R2S[@]}"
  summary "RSA-2048 verify, -multi 2 (wall)" "${R2V[@]}"
fi
if want tcp; then
  summary "TCP Gbit/s ($DEFAULT_CC)" "${TG[@]}"
  summary "TCP CPU% per Gbit/s ($DEFAULT_CC)" "${TC[@]}"
fi
if [ ${#ZG[@]} -gt 0 ]; then
  summary "TCP Gbit/s, --zerocopy vs -Z ($DEFAULT_CC)" "${ZG[@]}"
  summary "TCP CPU% per Gbit/s, --zerocopy vs -Z" "${ZC[@]}"
fi
# The A/A control (AA=1) beside each TCP goal: what the same ratio reads between two runs of iperf3.
aa_summary() { # label gbit_ratios... -- cpu_ratios...
  local label=$1 g=() c=(); shift
  while [ "$1" != -- ]; do g+=("$1"); shift; done; shift
  c=("$@")
  summary "A/A iperf3/iperf3 Gbit/s ($label)" "${g[@]}"
  summary "A/A iperf3/iperf3 CPU%/Gbit ($label)" "${c[@]}"
}
if [ ${#AAG[@]} -gt 0 ]; then aa_summary "$DEFAULT_CC" "${AAG[@]}" -- "${AAC[@]}"; fi
if [ ${#TGC[@]} -gt 0 ]; then
  summary "TCP Gbit/s (cubic)" "${TGC[@]}"
  summary "TCP CPU% per Gbit/s (cubic)" "${TCC[@]}"
  if [ ${#AAGC[@]} -gt 0 ]; then aa_summary cubic "${AAGC[@]}" -- "${AACC[@]}"; fi
fi
if want udp; then
  summary "UDP 1472 B packets/s sent" "${U1472[@]}"
  summary "UDP 1472 B sender CPU per packet" "${UC1472[@]}"
  summary "UDP 1472 B CPU per packet, both ends" "${UB1472C[@]}"
  summary "UDP 60 B packets/s sent" "${U60[@]}"
  summary "UDP 60 B sender CPU per packet" "${UC60[@]}"
  summary "UDP 60 B CPU per packet, both ends" "${UB60C[@]}"
fi
if [ ${#UB1472[@]} -gt 0 ]; then
  summary "UDP 1472 B packets/s, --udp-batch $UDP_BATCH" "${UB1472[@]}"
  summary "UDP 60 B packets/s, --udp-batch $UDP_BATCH" "${UB60[@]}"
fi
if [ ${#UG1472[@]} -gt 0 ]; then
  summary "UDP 1472 B packets/s, --udp-gso $UDP_GSO" "${UG1472[@]}"
  summary "UDP 60 B packets/s, --udp-gso $UDP_GSO" "${UG60[@]}"
fi
if [ ${#PACED_CPU[@]} -gt 0 ]; then
  for r in ${PACED//,/ }; do
    for t in tcp udp1472; do
      # shellcheck disable=SC2086 # one ratio per word
      summary "paced $r $t, CPU of both ends" ${PACED_CPU["$t $r"]}
    done
    echo "  paced $r udp1472 loss% rackbench/iperf3 by round: ${PACED_LOSS["udp1472 $r"]}"
  done
fi
echo
echo "Identical runs vary by up to +-30% on shared VMs (BASELINE.md): use REPS=8 and compare medians."
med() { local n m lo hi; read -r n m lo hi < <(stats "$@"); echo "$m"; }
goal() { # text value op bound [min_pairs [note]]: OK/SHORT, or INSUFFICIENT with fewer pairs
  python3 -c "import sys; t,v,op,b,m,n,note=sys.argv[1],float(sys.argv[2]),sys.argv[3],float(sys.argv[4]),int(sys.argv[5]),int(sys.argv[6]),sys.argv[7]; ok=(v>=b if op=='>=' else v<=b); verdict=(f'INSUFFICIENT ({n} pairs; the goal needs {m}: REPS={m})' if n<m else ('OK' if ok else 'SHORT')); print(f'GOAL {t}: median paired ratio {v:.3f} (goal {op} {b}) {verdict}' + (f'; {note}' if note else ''))" "$1" "$2" "$3" "$4" "${5:-1}" "$REPS" "${6:-}"
}
# The A/A band beside a TCP goal (AA=1): iperf3's paired ratio to itself, median (min-max).
# A rackbench ratio inside it differs from 1 by no more than iperf3 differs from itself.
aa_note() { # ratios...
  [ $# -gt 0 ] || return 0
  local n m lo hi
  read -r n m lo hi < <(stats "$@")
  if [ "$m" = nan ]; then printf "A/A iperf3/iperf3 nan (a round has no figure)"
  else printf "A/A iperf3/iperf3 %.3f (%.3f-%.3f)" "$m" "$lo" "$hi"; fi
}
if want rsa; then
  goal "RSA-2048 sign vs openssl speed, 1 process" "$(med "${R1S[@]}")" ">=" 0.95
  goal "RSA-2048 sign vs openssl speed -multi 2" "$(med "${R2S[@]}")" ">=" 0.95
fi
if want tcp; then
  goal "TCP Gbit/s vs iperf3 ($DEFAULT_CC, $REPS pairs)" "$(med "${TG[@]}")" ">=" 1.0 8 "$(aa_note "${AAG[@]}")"
  goal "TCP CPU per Gbit/s vs iperf3 ($DEFAULT_CC)" "$(med "${TC[@]}")" "<=" 1.0 8 "$(aa_note "${AAC[@]}")"
fi
if [ ${#TGC[@]} -gt 0 ]; then
  # iperf3's cubic stream is paced when the default paces, unless CUBIC_AS_DEFAULT=1
  # (see the top of this script).
  if [ "$CUBIC_AS_DEFAULT" = 1 ]; then how="both plain: cubic the default"; else how="iperf3's paced if $DEFAULT_CC paces"; fi
  goal "TCP Gbit/s vs iperf3 (cubic; $how, $REPS pairs)" "$(med "${TGC[@]}")" ">=" 1.0 8 "$(aa_note "${AAGC[@]}")"
  goal "TCP CPU per Gbit/s vs iperf3 (cubic)" "$(med "${TCC[@]}")" "<=" 1.0 8 "$(aa_note "${AACC[@]}")"
fi
if want udp; then
  goal "UDP 1472 B packets/s vs iperf3" "$(med "${U1472[@]}")" ">=" 1.0 8
  goal "UDP 1472 B sender CPU per packet vs iperf3" "$(med "${UC1472[@]}")" "<=" 1.0 8
  goal "UDP 1472 B CPU per packet of both ends vs iperf3" "$(med "${UB1472C[@]}")" "<=" 1.0 8
  goal "UDP 60 B packets/s vs iperf3" "$(med "${U60[@]}")" ">=" 1.0 8
  goal "UDP 60 B sender CPU per packet vs iperf3" "$(med "${UC60[@]}")" "<=" 1.0 8
  goal "UDP 60 B CPU per packet of both ends vs iperf3" "$(med "${UB60C[@]}")" "<=" 1.0 8
fi
