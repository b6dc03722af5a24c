#!/usr/bin/env bash
# Static checks over COPS's own sources (not tests, benchmarks or generated code), using the
# compile commands of an existing build (scripts/build.sh; $COPS_BUILD_DIR or build/), in one
# clang-tidy pass per source (parsing is most of the cost, so it is done once):
#   - clang's thread-safety analysis (-Wthread-safety, reported as
#     clang-diagnostic-thread-safety-*): every ABSL_GUARDED_BY member is read and written under
#     its absl::Mutex;
#   - the checks of .clang-tidy (bugprone-*, performance-*); every warning is an error.
# Usage: scripts/lint.sh [FILE...]   (default: every source of the build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
jobs="${COPS_JOBS:-$(nproc)}"
db="$build/compile_commands.json"
[[ -f "$db" ]] || { echo "lint: $db missing; run scripts/build.sh first" >&2; exit 2; }

# The sources to check.
sources="$(mktemp)"
trap 'rm -f "$sources"' EXIT
python3 - "$db" "$root" "$@" > "$sources" <<'PY'
import json, sys
db, root, only = sys.argv[1], sys.argv[2], set(sys.argv[3:])
own = ("core/", "storage/", "convert/", "engine/", "replication/", "logging/", "access/",
       "protocol/", "server/", "http/", "client/", "eval/", "milter/", "proto/")
for e in json.load(open(db)):
    rel = e["file"][len(root) + 1:] if e["file"].startswith(root + "/") else None
    if rel is not None and rel.startswith(own) and (not only or rel in only):
        print(rel)
PY
count="$(wc -l < "$sources")"
[[ "$count" -gt 0 ]] || { echo "lint: no sources matched" >&2; exit 2; }

echo "lint: clang-tidy (with thread-safety analysis) over $count sources"
(cd "$root" && xargs -d '\n' -P "$jobs" -n 4 clang-tidy -p "$build" --quiet \
  --extra-arg=-Wthread-safety < "$sources") 2> >(grep -v "warnings generated\|Suppressed .* warnings\|Use -header-filter\|^$" >&2)
echo "lint: clean"
