#!/usr/bin/env bash
# Build ccbench's images with podman (or IMAGE_TOOL=docker):
#   containers/build.sh [api|worker|postgres|redis ...]     (default: all four)
# Tags: ccbench/<name>:$CCBENCH_IMAGE_TAG (default: the version in pyproject.toml), plus :latest.
# Labels: org.opencontainers.image.version (pyproject version) and .revision (git commit).
# Makes the base image first where it is missing (containers/base-image.sh, podman only).
# Prints each image's build time and size.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/containers/containers.conf}
TOOL=${IMAGE_TOOL:-podman}

VERSION=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
VCS_REF=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then VCS_REF="$VCS_REF-dirty"; fi
TAG=${CCBENCH_IMAGE_TAG:-$VERSION}

# A CA bundle the RUN steps trust for PyPI and crates.io (a build secret: not stored in any
# layer). Default: the build machine's own bundle, so a build trusts what its machine trusts.
CA_BUNDLE=${CCBENCH_BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
secret=()
if [ -s "$CA_BUNDLE" ]; then secret=(--secret "id=ca-bundle,src=$CA_BUNDLE"); fi

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(api worker postgres redis)

if [ "$TOOL" = podman ]; then containers/base-image.sh; fi

for name in "${images[@]}"; do
  case "$name" in
    api | worker) file=containers/Dockerfile; target=(--target "$name") ;;
    postgres | redis) file=containers/$name.Dockerfile; target=() ;;
    *) echo "build.sh: unknown image '$name' (api, worker, postgres, redis)" >&2; exit 2 ;;
  esac
  start=$(date +%s)
  # --network=host: RUN steps reach the package registries without a network namespace, a
  # bridge or firewall rules of their own on the build machine.
  nice "$TOOL" build --network=host -f "$file" "${target[@]}" "${secret[@]}" \
    --build-arg VERSION="$VERSION" --build-arg VCS_REF="$VCS_REF" \
    -t "ccbench/$name:$TAG" -t "ccbench/$name:latest" .
  size=$("$TOOL" image inspect --format '{{.Size}}' "ccbench/$name:$TAG")
  echo "build.sh: ccbench/$name:$TAG built in $(( $(date +%s) - start )) s, $(numfmt --to=iec "$size")"
done
