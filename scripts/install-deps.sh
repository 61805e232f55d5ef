#!/usr/bin/env bash
# Installs what rackbench needs on Debian/Ubuntu (run as root): the servers it launches
# (redis-server, nginx, PostgreSQL, MariaDB), the reference tools the bench scripts compare against
# (redis-benchmark, iperf3, wrk, pgbench, sysbench, openssl), liburing's headers for the
# io_uring floors of bench/floor.sh, headless Chromium for the report test, and a Rust
# toolchain when none is present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: run as root (or install sudo)" >&2; exit 2
  fi
fi

# tcsh and fish: login shells a test runs the remote commands under (fish and tcsh read quotes differently).
PKGS=(redis-server redis-tools nginx-light postgresql postgresql-contrib mariadb-server iperf3 wrk sysbench sysstat
      chromium libssl-dev pkg-config build-essential ca-certificates git procps util-linux
      dmidecode ethtool python3 jq liburing-dev tcsh fish)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian starts the packaged services; rackbench launches its own on free ports.
for svc in redis-server nginx postgresql mariadb; do
  $SUDO service "$svc" stop >/dev/null 2>&1 || true
done

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "install-deps: no Rust toolchain; installing Debian's rustc and cargo"
    $SUDO apt-get install -y -qq cargo rustc >/dev/null
  fi
fi
cargo --version
