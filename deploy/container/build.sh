#!/usr/bin/env bash
# Builds the cops container image (deploy/container/Containerfile) with podman, on a Debian 12
# base image made here with debootstrap: no image registry is needed.
#
#   deploy/container/build.sh [IMAGE]      # default localhost/cops:latest
#
# The base (localhost/debian:bookworm) is made once from the Debian mirror this machine's
# apt uses, and reused. Needs root (debootstrap) and the Debian packages podman, buildah,
# debootstrap. Environment: COPS_BASE_IMAGE to use another Debian 12 base.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
image="${1:-localhost/cops:latest}"
base="${COPS_BASE_IMAGE:-localhost/debian:bookworm}"

for tool in podman debootstrap; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is not installed" >&2; exit 1; }
done

# The first Debian archive in this machine's apt sources (deb822 or one-line format).
debian_mirror() {
  local uri
  uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '{print $2}' | grep -E '/debian/?$' | head -1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null |
          awk '{print $2}' | grep -E '/debian/?$' | head -1 || true)
  fi
  [ -n "$uri" ] || { echo "build.sh: no Debian archive in /etc/apt sources" >&2; exit 1; }
  echo "$uri"
}

if ! podman image exists "$base"; then
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  echo "build.sh: debootstrap bookworm into $rootfs" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$(debian_mirror)"
  # apt in the image uses the same sources as this machine (security updates included).
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
    rm -f "$rootfs/etc/apt/sources.list"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import - "$base"
fi

podman build --build-arg "BASE=$base" -f "$root/deploy/container/Containerfile" -t "$image" "$root"
echo "build.sh: built $image" >&2
