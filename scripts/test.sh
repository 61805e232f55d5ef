#!/usr/bin/env bash
# The whole test suite: installs what is needed, checks formatting and lints, runs every
# test (real redis-server, nginx, PostgreSQL launched on loopback by the tests; the
# many-host tests against test hosts made by scripts/testhosts.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

# Test hosts for the many-host tests: network namespaces with an sshd each (see the contract
# at the top of scripts/testhosts.sh). Always torn down on the way out, also on failure or
# ctrl-c, keeping the tests' exit status. Where they cannot be made (not root, `ip netns`
# not permitted) the many-host tests skip with the reason in RACKBENCH_TESTHOSTS_SKIP.
unset RACKBENCH_TESTHOSTS_ENV RACKBENCH_TESTHOSTS_SKIP
# The logs of this script go beside the build, not into /tmp.
mkdir -p target
testhosts_up=0
# shellcheck disable=SC2317 # invoked by the EXIT trap
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$testhosts_up" -eq 1 ]; then
    bash scripts/testhosts.sh down || echo "test.sh: warning: testhosts down failed" >&2
  fi
  [ -z "${test_tmp:-}" ] || rm -rf "$test_tmp"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ "$(id -u)" -ne 0 ]; then
  RACKBENCH_TESTHOSTS_SKIP="not root (uid $(id -u)): test hosts need network namespaces"
else
  testhosts_up=1
  th_rc=0
  bash scripts/testhosts.sh up 3 2>&1 | tee target/rackbench-testhosts.log || th_rc=${PIPESTATUS[0]}
  if [ "$th_rc" -eq 3 ]; then
    RACKBENCH_TESTHOSTS_SKIP=$(sed -n 's/^testhosts: cannot create test hosts: //p' target/rackbench-testhosts.log | tail -n1)
  elif [ "$th_rc" -ne 0 ]; then
    echo "test.sh: scripts/testhosts.sh up 3 failed (status $th_rc); see above" >&2
    exit "$th_rc"
  else
    export RACKBENCH_TESTHOSTS_ENV=${RACKBENCH_TESTHOSTS_DIR:-/run/rackbench-testhosts}/hosts.env
  fi
fi
if [ -n "${RACKBENCH_TESTHOSTS_SKIP:-}" ]; then
  export RACKBENCH_TESTHOSTS_SKIP
  echo "test.sh: many-host tests are skipped: ${RACKBENCH_TESTHOSTS_SKIP}"
fi

# The tests' temporary files go to a fresh directory of their own, so that what they
# leave behind is theirs and is found (below), whatever else uses /tmp. Not under target/:
# ssh's control sockets live in it, three levels down, and a Unix socket's path has at
# most 107 bytes.
# Open to all as /tmp is (sticky): launched servers run as their own users (postgres,
# mysql, nginx's workers) and must reach their files in it.
test_tmp=$(mktemp -d /tmp/rbt.XXXXXX)
chmod 1777 "$test_tmp"
status=0
TMPDIR="$test_tmp" cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/rackbench-test.log || status=${PIPESTATUS[0]}
tests_status=$status
# The kill tests leave what a rackbench killed outright leaves, on purpose; any next
# rackbench command cleans that up (engine::scratch), so run one.
sweep_db=$(TMPDIR="$test_tmp" mktemp -d)
TMPDIR="$test_tmp" ./target/debug/rackbench --db "$sweep_db/sweep.sqlite" runs >/dev/null 2>&1 || true
rm -rf "$sweep_db"
# After that, no rackbench directory may be left: a test (or a rackbench it ran) that
# leaks its scratch space fails the suite, named.
leftovers=$(find "$test_tmp" -mindepth 1 -maxdepth 1 \( -name 'rackbench-*' -o -name 'rackbench.*' \) -print)
if [ -n "$leftovers" ]; then
  echo "test.sh: the tests left these behind in their temporary directory:" >&2
  # With what each holds and whose it is (a scratch root's `owner` is "PID START BOOT"),
  # so that a leak that happens once can be traced.
  while IFS= read -r left; do
    echo "  $left ($(stat -c '%U %a' "$left"))" >&2
    ls -la "$left" 2>&1 | sed 's/^/    /' >&2
    for f in owner groups; do
      [ -f "$left/$f" ] && sed "s/^/    $f: /" "$left/$f" >&2
    done
    pid=$(awk '{print $1; exit}' "$left/owner" 2>/dev/null || true)
    [ -z "$pid" ] || ps -o pid,ppid,etime,args -p "$pid" 2>&1 | sed 's/^/    /' >&2 || true
  done <<< "$leftovers"
  [ "$status" -ne 0 ] || status=1
fi
# A test failed with the test hosts up: their sshds' logs (LogLevel VERBOSE) say what each
# host saw of it (a refused or dropped session, a command that failed there), and go with
# the hosts when they are torn down, so they are shown now; a copy stays beside the build.
if [ "$tests_status" -ne 0 ] && [ -n "${RACKBENCH_TESTHOSTS_ENV:-}" ]; then
  for log in "$(dirname "$RACKBENCH_TESTHOSTS_ENV")"/hosts/*/sshd.log; do
    [ -s "$log" ] || continue
    host=$(basename "$(dirname "$log")")
    cp "$log" "target/rackbench-testhost-$host-sshd.log"
    echo "--- $host: the last 40 lines of its sshd log (all of it: target/rackbench-testhost-$host-sshd.log)" >&2
    tail -n 40 "$log" >&2
  done
fi
# One closing line over all test binaries.
awk '/^test result:/ {p+=$4; f+=$6; i+=$8} END {printf "rackbench tests: %d passed, %d failed, %d skipped\n", p, f, i}' target/rackbench-test.log
[ -z "${RACKBENCH_TESTHOSTS_SKIP:-}" ] || echo "rackbench many-host tests skipped: ${RACKBENCH_TESTHOSTS_SKIP}"
exit "$status"
