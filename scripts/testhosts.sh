#!/usr/bin/env bash
# Test hosts for the many-host tests: network namespaces on this machine, joined by veth
# pairs on a bridge, each running its own sshd with its own hostname. Run as root on Debian.
#
#   bash scripts/testhosts.sh up [N]   # N hosts, default 3 (1..200); idempotent
#   bash scripts/testhosts.sh down     # removes everything up made; fine when nothing exists
#   bash scripts/testhosts.sh status   # prints what exists
#
# Contract (what the Rust tests read)
# -----------------------------------
# scripts/test.sh exports RACKBENCH_TESTHOSTS_ENV=<state dir>/hosts.env after a successful
# `up`. When the hosts cannot be made (not root, or `ip netns` not permitted) it leaves
# RACKBENCH_TESTHOSTS_ENV unset and exports RACKBENCH_TESTHOSTS_SKIP=<one-line reason>;
# the many-host tests skip, printing that reason.
#
# State dir: ${RACKBENCH_TESTHOSTS_DIR:-/run/rackbench-testhosts} (an absolute path without
# whitespace, quotes, '$', '\' or '#'). It holds:
#   hosts.env            KEY="value" lines, shell syntax, values never contain '"', '$' or '\':
#                          RB_TESTHOSTS="rbh1 rbh2 rbh3"   host aliases, space-separated
#                          RB_SSH_CONFIG="<dir>/ssh_config"
#                          RB_KNOWN_HOSTS="<dir>/known_hosts"
#                          RB_TESTHOSTS_DIR="<dir>"
#                        and, for convenience:
#                          RB_TESTHOSTS_IPS="10.77.0.1 10.77.0.2 10.77.0.3"  (same order)
#                          RB_SSH_KEY="<dir>/id_ed25519"   client key, no passphrase
#                          RB_BADKEY_HOST="rbh1-badkey"
#                          RB_CONTROLLER_IP="10.77.0.254"  this (root) namespace on the bridge
#                          RB_TESTHOSTS_SKEW_S="0 3.5 -2.25"  each host's clock against this
#                            one's, seconds (same order): what its sessions read as the time
#   ssh_config           use as `ssh -F "$RB_SSH_CONFIG" rbhK CMD`. One block per host:
#                          Host rbhK 10.77.0.K: HostName 10.77.0.K, User root, IdentityFile id_ed25519,
#                          IdentitiesOnly yes, UserKnownHostsFile known_hosts,
#                          StrictHostKeyChecking yes, BatchMode yes, ForwardAgent no
#                        (so `ssh -F ... 10.77.0.K` works as well as the alias),
#                        plus `Host rbh1-badkey`: 10.77.0.1 checked against known_hosts.badkey,
#                        which holds an unrelated key, so ssh must refuse (host key mismatch).
#   known_hosts          one line per host: "rbhK,10.77.0.K ssh-ed25519 ..." (strict checking
#                        works whether a test connects by alias or by IP)
#   known_hosts.badkey   "rbh1-badkey,10.77.0.1 ssh-ed25519 <wrong key>"
#   id_ed25519(.pub), authorized_keys
#   hosts/rbhK/          sshd_config, ssh_host_ed25519_key(.pub), sshd.pid, sshd.log,
#                        bin/redis-server (a skewed host's: see Clocks)
#
# Clocks: the namespaces share this machine's clock, so by default host 2's sessions run
# 3.5 s ahead of it and host 3's 2.25 s behind (libfaketime, preloaded by sshd's SetEnv
# into every session: the agent and what it launches), as real hosts whose clocks were
# never synchronised would; the tests then check that rackbench measures each host's
# offset and places its samples and timings on the controller's clock. Only the wall
# clock is moved: the monotonic clock stays the machine's, as on a real host (a moved
# one would also move every timed wait, which the kernel measures on the real one).
# Other hosts: 0. TESTHOSTS_SKEW_S="S1 S2 ..." (seconds, per host in order) sets them;
# "0" for none (then libfaketime is not needed). On a skewed host, redis-server runs
# without libfaketime (it hangs at start under it; see `up`), so on the machine's clock.

# Network: bridge rbbr0 (10.77.0.254/24) in the root namespace; namespace rbhK has eth0
# (10.77.0.K/24, the peer of veth rbvK on the bridge) and lo, and no default route. The
# root namespace reaches the hosts directly over the bridge and the hosts reach each other
# over the bridge (layer 2), so no ip_forward, no routes, no NAT. sshd listens on
# 10.77.0.K:22 inside rbhK, so the root namespace's port 22 is never used.
#
# Remote sessions run as root with sshd's default PATH (no cargo dirs): tests should run
# the agent by absolute path. The namespaces share this machine's filesystem and users;
# only network and hostname differ. The names (rbh*, rbv*, rbbr0, 10.77.0.0/24) are
# fixed: one set of test hosts per machine at a time.
#
# Exit status of `up`: 0 ready; 3 namespaces cannot be made here (not root, or `ip netns`
# not permitted; the reason is printed); anything else: a real failure.
set -euo pipefail

DIR=${RACKBENCH_TESTHOSTS_DIR:-/run/rackbench-testhosts}
NS_PREFIX=rbh
VETH_PREFIX=rbv
# sshd's PATH for root's sessions (Debian's), which a skewed host's SetEnv PATH extends.
SESSION_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
BRIDGE=rbbr0
SUBNET=10.77.0
CONTROLLER_IP=$SUBNET.254
MARKER=.rackbench-testhosts

say() { echo "testhosts: $*"; }
die() { echo "testhosts: $*" >&2; exit 1; }
skip() { echo "testhosts: cannot create test hosts: $*" >&2; exit 3; }

check_dir() {
  case "$DIR" in
    /*) ;;
    *) die "RACKBENCH_TESTHOSTS_DIR must be an absolute path, got '$DIR'" ;;
  esac
  case "$DIR" in
    / | *[[:space:]\"\'\$\\\#]*) die "RACKBENCH_TESTHOSTS_DIR '$DIR' is / or has whitespace, quotes, \$, \\ or #" ;;
  esac
}

# Our namespaces and veths, whatever N the last `up` used. Only exact rbh<digits> and
# rbv<digits> names: nothing else is ever touched.
our_namespaces() {
  ip netns list 2>/dev/null | awk -v p="$NS_PREFIX" '$1 ~ "^" p "[0-9]+$" {print $1}' | sort -V
}
our_veths() {
  ip -o link show 2>/dev/null | awk -F': ' -v p="$VETH_PREFIX" '{sub(/@.*/, "", $2)} $2 ~ "^" p "[0-9]+$" {print $2}' | sort -V
}
have_bridge() { ip link show "$BRIDGE" >/dev/null 2>&1; }
# is_skewed SECONDS: a clock offset other than zero ("0", "0.0", "-0" are none).
is_skewed() { [ "$(awk -v s="$1" 'BEGIN { print (s + 0 != 0) }')" = 1 ]; }

# install_packages [EXTRA...]
install_packages() {
  local pkgs=(openssh-server openssh-client iproute2 "$@") missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  say "installing ${missing[*]}"
  # Keep the package's own sshd from starting on the root namespace's port 22: a
  # policy-rc.d that forbids starting services, only for this install, only if none exists.
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# rackbench testhosts: no service starts during this install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    ours=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq || rc=$?
  if [ "$rc" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  fi
  [ "$ours" -eq 1 ] && rm -f "$policy"
  [ "$rc" -eq 0 ] || die "apt-get failed (status $rc) installing ${missing[*]}"
  # Belt and braces: had anything started the packaged sshd just now, stop and disable it.
  if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
    service ssh stop >/dev/null 2>&1 || true
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
    fi
  fi
}

# True when process $1 is one of our sshds (its command line names our state dir).
is_our_sshd() {
  local cmdline
  cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ "$cmdline" == *sshd*"$DIR/hosts/"* ]]
}

cmd_down() {
  check_dir
  local ns pid f v
  # sshds by pid file (also catches one whose namespace was already unmounted).
  for f in "$DIR"/hosts/*/sshd.pid; do
    [ -f "$f" ] || continue
    pid=$(tr -dc '0-9' <"$f")
    if [ -n "$pid" ] && is_our_sshd "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  # Everything still running inside our namespaces (sshd, sessions, test servers).
  for ns in $(our_namespaces); do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || break
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      sleep 0.1
    done
    [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || echo "testhosts: warning: processes remain in $ns" >&2
    ip netns del "$ns" 2>/dev/null || echo "testhosts: warning: could not delete namespace $ns" >&2
  done
  # Deleting a namespace deletes its end of the veth and with it ours; remove leftovers.
  for v in $(our_veths); do ip link del "$v" 2>/dev/null || true; done
  if have_bridge; then ip link del "$BRIDGE" 2>/dev/null || echo "testhosts: warning: could not delete $BRIDGE" >&2; fi
  if [ -d "$DIR" ]; then
    if [ -e "$DIR/$MARKER" ] || [ -z "$(ls -A "$DIR")" ]; then
      rm -rf -- "$DIR"
    else
      echo "testhosts: warning: $DIR is not ours (no $MARKER), left in place" >&2
    fi
  fi
  return 0
}

# Waits until something accepts TCP on $2:22 as seen from namespace $1 ("" = root namespace).
wait_port() {
  local ns=$1 ip=$2 _
  local probe="exec 3<>/dev/tcp/$ip/22 && head -c 7 <&3 | grep -q SSH-2.0"
  for _ in $(seq 1 50); do
    if [ -n "$ns" ]; then
      ip netns exec "$ns" timeout 2 bash -c "$probe" 2>/dev/null && return 0
    else
      timeout 2 bash -c "$probe" 2>/dev/null && return 0
    fi
    sleep 0.1
  done
  return 1
}

show_log() {
  local log=$DIR/hosts/$1/sshd.log
  [ -s "$log" ] && { echo "--- $log (tail)" >&2; tail -n 20 "$log" >&2; }
  return 0
}

cmd_up() {
  local n=${1:-3} k ns ip hd
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
    die "up: N must be 1..200, got '$n'"
  fi
  check_dir
  [ "$(id -u)" -eq 0 ] || skip "not root (uid $(id -u)); network namespaces need root"
  local skews=() skew env shm extra=()
  read -r -a skews <<<"${TESTHOSTS_SKEW_S:-0 3.5 -2.25}"
  for skew in "${skews[@]}"; do
    [[ "$skew" =~ ^[+-]?[0-9]+(\.[0-9]+)?$ ]] || die "TESTHOSTS_SKEW_S: '$skew' is not a number of seconds (e.g. \"0 3.5 -2.25\")"
    if is_skewed "$skew"; then extra=(libfaketime); fi
  done
  install_packages "${extra[@]}"
  command -v ip >/dev/null 2>&1 || die "no 'ip' command after installing iproute2"
  [ -x /usr/sbin/sshd ] || die "no /usr/sbin/sshd after installing openssh-server"

  cmd_down

  # Can we make network namespaces here at all (containers often forbid it)?
  local probe="${NS_PREFIX}probe$$" err
  if ! err=$(ip netns add "$probe" 2>&1); then
    skip "'ip netns add' not permitted: ${err//$'\n'/ }"
  fi
  ip netns del "$probe" 2>/dev/null || true

  # 10.77.0.0/24 must be ours alone in the root namespace.
  if ip -o -4 addr show | awk '{print $2, $4}' | grep -v "^$BRIDGE " | grep -q " ${SUBNET//./\\.}\."; then
    die "$SUBNET.0/24 is already used by another interface here: $(ip -o -4 addr show | grep " ${SUBNET//./\\.}\.")"
  fi
  # With UsePAM no, sshd refuses every login to a locked account ('!' in /etc/shadow).
  if [ "$(getent shadow root | cut -d: -f2 | cut -c1)" = "!" ]; then
    echo "testhosts: warning: root's password is locked ('!'); sshd (UsePAM no) will refuse root logins" >&2
  fi

  umask 022
  mkdir -p "$DIR/hosts"
  chmod 755 "$DIR"
  : >"$DIR/$MARKER"
  ssh-keygen -q -t ed25519 -N '' -C rackbench-testhosts-client -f "$DIR/id_ed25519"
  cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
  # The bad-key alias's known_hosts holds a key no sshd has.
  ssh-keygen -q -t ed25519 -N '' -C rackbench-testhosts-wrong -f "$DIR/wrong_host_key"
  : >"$DIR/known_hosts"
  mkdir -p /run/sshd && chmod 755 /run/sshd   # sshd's privilege separation directory

  # The bridge, in the root namespace. No STP, no forwarding delay: ports forward at once.
  ip link add "$BRIDGE" type bridge stp_state 0 forward_delay 0
  ip addr add "$CONTROLLER_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  local faketime redis
  faketime=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n1) || true
  redis=$(command -v redis-server 2>/dev/null) || true
  local hosts=() ips=() skewed=()
  for k in $(seq 1 "$n"); do
    ns=$NS_PREFIX$k ip=$SUBNET.$k hd=$DIR/hosts/$ns
    hosts+=("$ns") ips+=("$ip")
    skew=${skews[$((k - 1))]:-0}
    skew=${skew#+}
    env="" shm=""
    if is_skewed "$skew"; then
      [ -n "$faketime" ] || die "a skewed clock needs libfaketime (apt-get install libfaketime), or TESTHOSTS_SKEW_S=0"
      # "+3.5s" / "-2.25s": an offset from the real time, of the wall clock only.
      case "$skew" in -*) env="FAKETIME=${skew}s" ;; *) env="FAKETIME=+${skew}s" ;; esac
      env="SetEnv LD_PRELOAD=$faketime $env FAKETIME_DONT_FAKE_MONOTONIC=1"
      # libfaketime 0.9.10 shares a semaphore and a segment in /dev/shm between the
      # processes of a session, named by the pid of the first; a forked child of that
      # process unlinks them when it exits, and a process starting at that moment dies
      # with "sem_open failed" before main (about 1 in 150 here): an empty `uname -m`
      # in rackbench's probe, a `wc -c` that failed its copy check. It needs that
      # sharing only for features we do not use, and skips it, silently, when it cannot
      # create the semaphore: so this host's sshd gets a /dev/shm of its own, read-only.
      # The agent, redis-server, nginx and the load generators need no /dev/shm;
      # PostgreSQL does, and the tests run it on the first host, whose clock is not
      # skewed by default. The mount's complaint, if any, goes to the sshd log.
      # shellcheck disable=SC2016 # $3 is the inner sh's: the log
      shm='mount -t tmpfs -o ro,size=4k,mode=755 rackbench-noshm /dev/shm 2>>"$3" && '
      # redis-server hangs at start under libfaketime: jemalloc's first clock_gettime
      # enters libfaketime's init, which allocates, which enters jemalloc's init again
      # (libfaketime issue #130, not fixed upstream). On this host the redis-server found
      # first on PATH is one that drops the preload and runs the real one: a server's own
      # clock feeds no figure (the agent beside it, which times and samples, keeps the
      # skewed clock), so kv can put its servers on a host whose clock is off.
      if [ -n "$redis" ]; then
        mkdir -p "$hd/bin"
        printf '#!/bin/sh\n# rackbench test host %s: redis-server without libfaketime (see scripts/testhosts.sh)\nunset LD_PRELOAD\nexec %s "$@"\n' \
          "$ns" "$redis" >"$hd/bin/redis-server"
        chmod 755 "$hd/bin/redis-server"
        env="$env PATH=$hd/bin:$SESSION_PATH"
      fi
    fi
    skewed+=("$skew")
    # Host 2's cache is reached through a link, as on hosts whose ~/.cache is one (put
    # on a bigger disk): the agent runs there by the link's target, which is the path
    # a kill of a stopped agent must match.
    if [ "$k" = 2 ]; then
      mkdir -p -m 700 "$hd/cache.real"
      ln -sfn "$hd/cache.real" "$hd/cache"
      [ -n "$env" ] || env="SetEnv"
      env="$env XDG_CACHE_HOME=$hd/cache"
    fi
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Peer made in the root namespace under a temporary name (eth0 exists here), then moved.
    ip link add "$VETH_PREFIX$k" type veth peer name "${VETH_PREFIX}p$k"
    ip link set "${VETH_PREFIX}p$k" netns "$ns"
    ip -n "$ns" link set "${VETH_PREFIX}p$k" name eth0
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip link set "$VETH_PREFIX$k" master "$BRIDGE"
    ip link set "$VETH_PREFIX$k" up

    mkdir -p "$hd"
    ssh-keygen -q -t ed25519 -N '' -C "$ns" -f "$hd/ssh_host_ed25519_key"
    echo "$ns,$ip $(cut -d' ' -f1-2 "$hd/ssh_host_ed25519_key.pub")" >>"$DIR/known_hosts"
    cat >"$hd/sshd_config" <<EOF
# rackbench test host $ns (written by scripts/testhosts.sh)
ListenAddress $ip:22
HostKey $hd/ssh_host_ed25519_key
PidFile $hd/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
AllowAgentForwarding no
AllowTcpForwarding no
X11Forwarding no
PermitTunnel no
PermitUserRC no
PermitUserEnvironment no
StrictModes no
PrintMotd no
PrintLastLog no
UseDNS no
# Parallel tests open many connections at once; the default (10:30:100) drops some.
MaxStartups 200
MaxSessions 100
LogLevel VERBOSE
$env
EOF
    /usr/sbin/sshd -t -f "$hd/sshd_config" || die "sshd rejects $hd/sshd_config"
    # Own UTS namespace: the host's own hostname. Own mount namespace, a slave of the
    # one `ip netns exec` made: a skewed host's /dev/shm (above) stays its own, while
    # mounts and unmounts made here later (`ip netns del`) still reach it. sshd
    # daemonizes; the namespaces live on with it. -E: its log goes to a file (there is
    # no syslog in a namespace necessarily).
    # shellcheck disable=SC2016 # $1..$3 are the inner sh's arguments
    ip netns exec "$ns" unshare --uts --mount --propagation slave sh -c \
      "$shm"'hostname "$1" && exec /usr/sbin/sshd -f "$2" -E "$3"' sh "$ns" "$hd/sshd_config" "$hd/sshd.log" \
      </dev/null >/dev/null 2>&1 || { show_log "$ns"; die "sshd for $ns did not start"; }
  done

  echo "${hosts[0]}-badkey,${ips[0]} $(cut -d' ' -f1-2 "$DIR/wrong_host_key.pub")" >"$DIR/known_hosts.badkey"

  {
    echo "# rackbench test hosts (written by scripts/testhosts.sh); use: ssh -F $DIR/ssh_config rbhK CMD"
    for k in "${!hosts[@]}"; do
      ssh_block "${hosts[$k]} ${ips[$k]}" "${ips[$k]}" "$DIR/known_hosts"
    done
    echo "# Points at ${hosts[0]} but expects an unrelated host key: ssh must refuse."
    ssh_block "${hosts[0]}-badkey" "${ips[0]}" "$DIR/known_hosts.badkey"
  } >"$DIR/ssh_config"

  cat >"$DIR/hosts.env" <<EOF
# rackbench test hosts (written by scripts/testhosts.sh up $n)
RB_TESTHOSTS="${hosts[*]}"
RB_SSH_CONFIG="$DIR/ssh_config"
RB_KNOWN_HOSTS="$DIR/known_hosts"
RB_TESTHOSTS_DIR="$DIR"
RB_TESTHOSTS_IPS="${ips[*]}"
RB_SSH_KEY="$DIR/id_ed25519"
RB_BADKEY_HOST="${hosts[0]}-badkey"
RB_CONTROLLER_IP="$CONTROLLER_IP"
RB_TESTHOSTS_SKEW_S="${skewed[*]}"
EOF

  # Every host must answer over ssh with its own hostname and see only its own interfaces.
  local out failed=0
  for k in "${!hosts[@]}"; do
    ns=${hosts[$k]} ip=${ips[$k]}
    if ! wait_port "" "$ip"; then
      echo "testhosts: $ns: nothing answers on $ip:22" >&2; show_log "$ns"; failed=1; continue
    fi
    if ! out=$(timeout 20 ssh -F "$DIR/ssh_config" "$ns" 'hostname; cat /proc/net/dev' 2>&1); then
      echo "testhosts: $ns: ssh failed:" >&2; echo "$out" >&2; show_log "$ns"; failed=1; continue
    fi
    if [ "$(head -n1 <<<"$out")" != "$ns" ]; then
      echo "testhosts: $ns: hostname is '$(head -n1 <<<"$out")', expected '$ns'" >&2; failed=1; continue
    fi
    if ! grep -q '^ *eth0:' <<<"$out" || grep -q "^ *$BRIDGE:" <<<"$out"; then
      echo "testhosts: $ns: /proc/net/dev is not the namespace's own:" >&2; echo "$out" >&2; failed=1; continue
    fi
  done
  # Hosts reach each other over the bridge (a firewall on bridged traffic would stop this).
  if [ "$n" -ge 2 ] && [ "$failed" -eq 0 ] && ! wait_port "${hosts[0]}" "${ips[1]}"; then
    echo "testhosts: ${hosts[0]} cannot reach ${ips[1]}:22 over $BRIDGE" >&2
    if [ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" = 1 ]; then
      echo "testhosts: (br_netfilter is on: iptables FORWARD rules apply to bridged traffic)" >&2
    fi
    failed=1
  fi
  [ "$failed" -eq 0 ] || die "up: test hosts not reachable (state left in $DIR for inspection; run 'down')"
  # Each host's sessions read its skewed clock (within the ssh round trip's second), and
  # libfaketime shares nothing between them (a shell it loaded has FAKETIME_SHARED in its
  # environment when it made its semaphore: the read-only /dev/shm above prevents that).
  local before after out there shared
  for k in "${!hosts[@]}"; do
    before=$(date +%s.%N)
    out=$(timeout 20 ssh -F "$DIR/ssh_config" "${hosts[$k]}" 'echo "shared=${FAKETIME_SHARED:-}"; echo "now=$(date +%s.%N)"') \
      || die "${hosts[$k]}: ssh failed reading its clock"
    after=$(date +%s.%N)
    shared=$(sed -n 's/^shared=//p' <<<"$out") there=$(sed -n 's/^now=//p' <<<"$out")
    [ -z "$shared" ] || die "${hosts[$k]}: libfaketime shares a semaphore there ($shared): its processes can die at start; is /dev/shm read-only in its sshd's mount namespace?"
    awk -v b="$before" -v a="$after" -v t="$there" -v s="${skewed[$k]}" \
      'BEGIN { d = t - s; exit !(d >= b - 0.05 && d <= a + 0.05) }' \
      || die "${hosts[$k]}: its clock reads ${there:-nothing}, expected $before..$after moved by ${skewed[$k]} s"
    if [ -x "$DIR/hosts/${hosts[$k]}/bin/redis-server" ]; then
      timeout 20 ssh -F "$DIR/ssh_config" "${hosts[$k]}" 'redis-server --version' >/dev/null \
        || die "${hosts[$k]}: redis-server does not start there (its wrapper: $DIR/hosts/${hosts[$k]}/bin/redis-server)"
    fi
  done
  say "$n test hosts up: ${hosts[*]} (${ips[*]}), clocks ${skewed[*]} s off this one's; env: $DIR/hosts.env"
}

# ssh_block PATTERNS HOSTNAME KNOWN_HOSTS
ssh_block() {
  cat <<EOF

Host $1
  HostName $2
  User root
  Port 22
  IdentityFile $DIR/id_ed25519
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $3
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  CheckHostIP no
  BatchMode yes
  ForwardAgent no
  ForwardX11 no
  ClearAllForwardings yes
  ControlMaster no
  ControlPath none
  ConnectTimeout 10
  ServerAliveInterval 15
EOF
}

cmd_status() {
  check_dir
  local ns pids any=0 f pid
  echo "namespaces:"
  for ns in $(our_namespaces); do
    any=1
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    echo "  $ns: $(ip -n "$ns" -o -4 addr show dev eth0 2>/dev/null | awk '{print $4}') pids: ${pids:-none}"
  done
  [ "$any" -eq 1 ] || echo "  none"
  echo "bridge:"
  if have_bridge; then
    echo "  $BRIDGE: $(ip -o -4 addr show dev "$BRIDGE" | awk '{print $4}') ports: $(our_veths | tr '\n' ' ')"
  else
    echo "  none"
    [ -z "$(our_veths)" ] || echo "  stray veths: $(our_veths | tr '\n' ' ')"
  fi
  echo "sshd:"
  any=0
  for f in "$DIR"/hosts/*/sshd.pid; do
    [ -f "$f" ] || continue
    pid=$(tr -dc '0-9' <"$f")
    if [ -n "$pid" ] && is_our_sshd "$pid"; then
      echo "  $(basename "$(dirname "$f")"): pid $pid running"
    else
      echo "  $(basename "$(dirname "$f")"): not running (stale $f)"
    fi
    any=1
  done
  [ "$any" -eq 1 ] || echo "  none"
  echo "state dir:"
  if [ -d "$DIR" ]; then
    echo "  $DIR"
    [ -f "$DIR/hosts.env" ] && sed 's/^/    /' "$DIR/hosts.env"
  else
    echo "  none ($DIR)"
  fi
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) [ "$(id -u)" -eq 0 ] || die "down: run as root"; cmd_down; say "down" ;;
  status) cmd_status ;;
  *) echo "usage: $0 up [N] | down | status" >&2; exit 2 ;;
esac
