#!/usr/bin/env bash
# Build the base image `debian:bookworm-slim` from Debian's packages, for machines that reach
# Debian's archive but no image registry. Every Dockerfile here starts `FROM
# debian:bookworm-slim`; once this image is tagged docker.io/library/debian:bookworm-slim
# those builds run unchanged and offline (apt-get inside them still reaches the archive).
# Where a registry is reachable, skip this and pull the official image instead.
#
#   containers/base-image.sh [--force]
#
# Like the official slim image: minbase variant, the bookworm, bookworm-updates and
# bookworm-security suites, no documentation, man pages or locales, no apt lists.
# Mirror: $CCBENCH_DEBIAN_MIRROR, else the host's configured Debian mirror, else deb.debian.org.
set -euo pipefail
cd "$(dirname "$0")"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/containers.conf}

TAG=docker.io/library/debian:bookworm-slim
if [ "${1:-}" != "--force" ] && podman image exists "$TAG"; then
  echo "base-image: $TAG exists (--force rebuilds it)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "base-image: run as root (debootstrap)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "base-image: apt-get install debootstrap" >&2; exit 1; }

host_mirror() {
  grep -hoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
    2>/dev/null | head -n1 | tr -d ' ' || true
}
MIRROR=${CCBENCH_DEBIAN_MIRROR:-$(host_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
MIRROR=${MIRROR%/}
SECURITY=${CCBENCH_DEBIAN_SECURITY_MIRROR:-${MIRROR}-security}

ROOTFS=$(mktemp -d /var/tmp/ccbench-rootfs.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT

# The slim image's dpkg filters, in place before debootstrap's second stage installs anything.
mkdir -p "$ROOTFS/etc/dpkg/dpkg.cfg.d"
cat > "$ROOTFS/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
CFG
echo "base-image: debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/dev/null

rm -f "$ROOTFS/etc/apt/sources.list"
cat > "$ROOTFS/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
# As the official image: no recommends unless asked, no apt caches left in layers.
cat > "$ROOTFS/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
echo 'APT::Install-Recommends "false";' > "$ROOTFS/etc/apt/apt.conf.d/docker-no-recommends"
find "$ROOTFS/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
rm -rf "$ROOTFS"/usr/share/{man,info,locale,groff,lintian}/* "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/log/*.log
: > "$ROOTFS/etc/hostname"
: > "$ROOTFS/etc/resolv.conf"

tar --numeric-owner -C "$ROOTFS" -c . \
  | podman import --change 'CMD ["bash"]' --message "debootstrap minbase bookworm ($MIRROR)" - "$TAG" >/dev/null
echo "base-image: $TAG $(podman image inspect --format '{{.Size}}' "$TAG" | numfmt --to=iec)"
