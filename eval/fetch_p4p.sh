#!/usr/bin/env bash
# Fetches the P4P paraphrase corpus (856 source/paraphrase pairs written and annotated by
# people, from the PAN-PC-10 plagiarism cases; Barrón-Cedeño et al., Computational
# Linguistics 39(4), 2013) as mirrored in github.com/iYUYUE/USim at a pinned commit, into a
# cache outside the repository: $COPS_DATA_DIR/p4p, else ~/.cache/cops/p4p. The corpus is
# free for research purposes; its redistribution terms are not stated, so it is never
# committed. Verifies SHA-256 and does nothing when the cache already matches.
# Usage: eval/fetch_p4p.sh            prints the cache folder on success
set -euo pipefail
commit=94a6ab01c1c778604781f5423a640c11650a1b4a
base="https://raw.githubusercontent.com/iYUYUE/USim/$commit/data/p4p"
dir="${COPS_DATA_DIR:+$COPS_DATA_DIR/p4p}"
dir="${dir:-$HOME/.cache/cops/p4p}"
# Line i of p4p_reference.txt is the original (a PAN-PC-10 source passage), line i of
# p4p_source.txt a person's paraphrase of it ("source" is USim's name for its input side).
declare -A sums=(
  [p4p_source.txt]=c704757fdec8d957121e3abe936918ddef7c98042639c690d1a0fabc3c0c5770
  [p4p_reference.txt]=190ac8bfed822943a7a90bd6bb69123140363ee8609e8c3dc191f9472982268f
)
matches() { [ -f "$dir/$1" ] && [ "$(sha256sum "$dir/$1" | cut -d' ' -f1)" = "${sums[$1]}" ]; }
mkdir -p "$dir"
for f in p4p_source.txt p4p_reference.txt; do
  matches "$f" && continue
  tmp="$(mktemp "$dir/.$f.XXXXXX")"
  if ! curl -fsSL --connect-timeout 10 --max-time 120 --retry 2 -o "$tmp" "$base/$f"; then
    rm -f "$tmp"
    echo "fetch_p4p: cannot download $base/$f" >&2
    exit 1
  fi
  got="$(sha256sum "$tmp" | cut -d' ' -f1)"
  if [ "$got" != "${sums[$f]}" ]; then
    rm -f "$tmp"
    echo "fetch_p4p: $f has SHA-256 $got, expected ${sums[$f]}" >&2
    exit 1
  fi
  mv "$tmp" "$dir/$f"
done
echo "$dir"
