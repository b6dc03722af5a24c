#!/usr/bin/env bash
# Static checks over COPS's own sources (not tests, benchmarks or generated code), using the
# compile commands of an existing build (scripts/build.sh; $COPS_BUILD_DIR or build/):
#   1. clang's thread-safety analysis (-Wthread-safety -Werror): every ABSL_GUARDED_BY member
#      is read and written under its absl::Mutex;
#   2. clang-tidy with the checks of .clang-tidy (bugprone-*, performance-*), warnings as errors.
# Usage: scripts/lint.sh [FILE...]   (default: every source of the build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
jobs="${COPS_JOBS:-$(nproc)}"
db="$build/compile_commands.json"
[[ -f "$db" ]] || { echo "lint: $db missing; run scripts/build.sh first" >&2; exit 2; }

# One "clang++ -fsyntax-only" command line per source (from the build's own flags) and the
# list of sources.
commands="$(mktemp)"
sources="$(mktemp)"
trap 'rm -f "$commands" "$sources"' EXIT
python3 - "$db" "$root" "$sources" "$@" > "$commands" <<'PY'
import json, shlex, sys
db, root, listing, only = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4:])
files = open(listing, "w")
own = ("core/", "storage/", "server/", "client/", "convert/", "eval/", "milter/")
for e in json.load(open(db)):
    rel = e["file"][len(root) + 1:] if e["file"].startswith(root + "/") else None
    if rel is None or not rel.startswith(own) or (only and rel not in only):
        continue
    args = shlex.split(e.get("command") or " ".join(map(shlex.quote, e["arguments"])))
    keep, i = [], 1
    while i < len(args):
        a = args[i]
        if a in ("-isystem", "-I", "-D", "-include"):
            keep += [a, args[i + 1]]; i += 2; continue
        if a.startswith(("-I", "-D", "-std=", "-isystem")):
            keep.append(a)
        i += 1
    cmd = ["clang++", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety"] + keep + [e["file"]]
    print("cd " + shlex.quote(e["directory"]) + " && " + " ".join(map(shlex.quote, cmd)))
    print(rel, file=files)
PY
count="$(wc -l < "$commands")"
[[ "$count" -gt 0 ]] || { echo "lint: no sources matched" >&2; exit 2; }

echo "lint: thread-safety analysis of $count sources"
xargs -d '\n' -P "$jobs" -I{} bash -c '{}' < "$commands"

echo "lint: clang-tidy over $count sources"
(cd "$root" && xargs -d '\n' -P "$jobs" -n 4 clang-tidy -p "$build" --quiet < "$sources") 2> >(grep -v "warnings generated\|Suppressed .* warnings\|Use -header-filter\|^$" >&2)
echo "lint: clean"
