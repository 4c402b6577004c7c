#!/usr/bin/env bash
# Install what ccbench needs on a Debian 12 machine, as root: Debian packages, the Python venv
# (.venv), the Rust agents (agents/target/release) and the BPF congestion controllers
# (agents/kernel/build). Safe to run again: it only adds what is missing and rebuilds what
# changed.
#
#   scripts/install.sh            everything: the embedded stack, the API, workers, the tests
#   scripts/install.sh --worker   a worker machine only: no PostgreSQL, Redis, Chromium or sshd
#                                 (the worker reaches the database, the broker and the API of
#                                 another machine: CCBENCH_DATABASE_URL, CCBENCH_BROKER_URL,
#                                 CCBENCH_API_URL, CCBENCH_WORKER_TOKEN)
set -euo pipefail
cd "$(dirname "$0")/.."

worker_only=false
for arg in "$@"; do
  case "$arg" in
    --worker) worker_only=true ;;
    *) echo "install.sh: unknown option $arg (use --worker for a worker machine)" >&2; exit 2 ;;
  esac
done

log() { printf '\033[1m[install]\033[0m %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: run as root (it installs Debian packages; experiments need root too)" >&2
  exit 1
fi

PACKAGES=(
  python3 python3-venv python3-dev build-essential pkg-config
  mininet iproute2 iptables nftables ethtool iperf3 iputils-ping procps psmisc util-linux
  clang-14 bpftool libbpf-dev
  openssh-client
)
if ! $worker_only; then
  # The embedded stack and the tests: servers, a browser for the page tests, sshd for the
  # hosts testbed's namespace hosts.
  PACKAGES+=(postgresql redis-server chromium chromium-driver openssh-server)
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # --no-install-recommends: Mininet must not pull Open vSwitch (ccbench does not use it).
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's postgresql and redis packages start system-wide servers where systemd runs;
# ccbench's tests start their own on free loopback ports and do not need those. Likewise
# openssh-server: the hosts-testbed tests run their own sshd per namespace "host"
# (tests/sshhosts.py), never the system service.

if ! command -v cargo >/dev/null 2>&1; then
  echo "install.sh: cargo not found. Install a current Rust toolchain (rustup) and re-run." >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  log "Python venv (.venv)"
  /usr/bin/python3 -m venv .venv
fi
log "Python packages (the versions in constraints.txt)"
extras='[dev]'
$worker_only && extras=''  # a worker needs no test or lint tools
.venv/bin/pip install -q --disable-pip-version-check -c constraints.txt -e ".$extras"

log "Rust agents (cargo build --release) and, with this kernel's BTF, the BPF controllers"
make -s agents  # the Makefile's recipe, also run before every `make test`
if [ ! -e /sys/kernel/btf/vmlinux ]; then
  log "no /sys/kernel/btf/vmlinux: BPF congestion controllers not built (runtime: bpf unavailable)"
fi
log "done: $(.venv/bin/ccbench --help >/dev/null && echo ccbench CLI ok), agents in agents/target/release"
