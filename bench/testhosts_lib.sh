# Sourced by the bench scripts that run on the test hosts (scripts/testhosts.sh).
#
# testhosts_use: brings 3 test hosts up unless they are (and remembers to take them down
# again), sources their hosts.env, and stops the bridge from handing packets to iptables
# (net.bridge.bridge-nf-call-*=0): separate machines' NICs have no such hook, and no rule
# uses it here. testhosts_restore, from the script's exit trap, undoes both.
TESTHOSTS_OURS=0
TESTHOSTS_NF=()
testhosts_use() {
  local envf=${RACKBENCH_TESTHOSTS_DIR:-/run/rackbench-testhosts}/hosts.env
  if [ ! -f "$envf" ]; then
    bash scripts/testhosts.sh up 3 >/dev/null
    TESTHOSTS_OURS=1
  fi
  local k v
  for k in net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.bridge.bridge-nf-call-arptables; do
    v=$(sysctl -n "$k" 2>/dev/null) || continue
    TESTHOSTS_NF+=("$k=$v"); sysctl -q -w "$k=0"
  done
  # shellcheck disable=SC1090
  source "$envf"
}
testhosts_restore() {
  local kv
  for kv in "${TESTHOSTS_NF[@]}"; do sysctl -q -w "$kv" || true; done
  [ "$TESTHOSTS_OURS" -eq 0 ] || bash scripts/testhosts.sh down >/dev/null
}
