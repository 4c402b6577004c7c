#!/usr/bin/env bash
# Build (once) and print the path of a deployment tool, cached outside the repository:
#   scripts/tools.sh helm | compose-check
# Helm comes from the Go module proxy (`go install`: 2.5-6 min cold on 2 cores, then instant).
# compose-check (containers/compose-check, on compose-go) validates docker-compose.yml as
# `docker compose config` does; rebuilt when its sources change (~10-35 s cold).
# The cache is $CCBENCH_TOOLS_DIR (default ~/.cache/ccbench-tools), one directory per version,
# so bumping a version below builds the new one beside the old. Concurrent calls for one tool
# wait for the first one's build (a lock per tool): CI starts the builds early in the
# background (.ci/run) and the tests' calls wait for them.
set -euo pipefail

HELM_VERSION=v3.21.4
TOOLS_DIR=${CCBENCH_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccbench-tools}
mkdir -p "$TOOLS_DIR"
exec 9>"$TOOLS_DIR/.lock-${1:-none}"
flock 9

case "${1:-}" in
  helm)
    bin="$TOOLS_DIR/helm-$HELM_VERSION/helm"
    if [ ! -x "$bin" ]; then
      command -v go >/dev/null || { echo "tools.sh: helm needs Go (go install)" >&2; exit 1; }
      echo "tools.sh: building helm $HELM_VERSION with go install (cached in $TOOLS_DIR)" >&2
      GOBIN="$(dirname "$bin")" GOFLAGS=-mod=mod nice go install -trimpath -ldflags="-s -w" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
    fi
    echo "$bin"
    ;;
  compose-check)
    src="$(cd "$(dirname "$0")/.." && pwd)/containers/compose-check"
    sum=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)
    bin="$TOOLS_DIR/compose-check-$sum/compose-check"
    if [ ! -x "$bin" ]; then
      command -v go >/dev/null || { echo "tools.sh: compose-check needs Go" >&2; exit 1; }
      echo "tools.sh: building compose-check (cached in $TOOLS_DIR)" >&2
      (cd "$src" && nice go build -trimpath -ldflags="-s -w" -o "$bin" .) >&2
    fi
    echo "$bin"
    ;;
  *)
    echo "usage: scripts/tools.sh helm | compose-check" >&2
    exit 2
    ;;
esac
