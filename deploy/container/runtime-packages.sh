#!/usr/bin/env bash
# Prints the Debian packages that hold the shared libraries the given programs load, one a
# line: what the runtime image installs (Containerfile). Run where the programs were built.
#   deploy/container/runtime-packages.sh PROGRAM...
set -euo pipefail
# ldd: "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)". With a merged /usr the
# loader may name /lib/... where dpkg recorded /usr/lib/..., or the other way round, so each
# library is looked up under both names (one dpkg-query for all: it reads its database once).
mapfile -t libs < <(ldd "$@" | awk '/=> \// { print $3 }' | sort -u)
candidates=()
for lib in "${libs[@]}"; do
  candidates+=("$lib" "/usr$lib" "${lib#/usr}")
done
declare -A owner
while IFS= read -r line; do  # "libfoo1:amd64: /usr/lib/x86_64-linux-gnu/libfoo.so.1"
  owner["${line##*: }"]="${line%%:*}"
done < <(dpkg-query -S "${candidates[@]}" 2>/dev/null || true)
for lib in "${libs[@]}"; do
  package="${owner[$lib]:-${owner[/usr$lib]:-${owner[${lib#/usr}]:-}}}"
  if [ -z "$package" ]; then
    echo "runtime-packages.sh: no package owns $lib" >&2
    exit 1
  fi
  echo "$package"
done | sort -u
