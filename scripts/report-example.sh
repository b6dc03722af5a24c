#!/usr/bin/env bash
# Makes docs/report-example.png, the screenshot of a real `cops check --html` report: a fresh
# copsd on loopback, examples/papers registered, an essay built from one paragraph of three of
# them (one lightly edited), a quotation from a fourth and text of its own checked with
# --exclude-quotes --html (the quotation is shown as excluded: docs/reports.md), and the page
# rendered by Debian's headless chromium.
#
#   scripts/report-example.sh [OUT.png]      (default docs/report-example.png)
#
# Needs copsd and cops built in ${COPS_BUILD_DIR:-build} and chromium (scripts/install-deps.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
out="$(realpath -m "${1:-$root/docs/report-example.png}")"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/server/copsd" --data-dir "$work/data" --listen 127.0.0.1:0 --port-file "$work/port" \
  --log-level warn >"$work/copsd.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
cops=("$build/client/cops" --server "127.0.0.1:$(cat "$work/port")")
"${cops[@]}" register "$root/examples/papers" >/dev/null
paragraph() {  # paragraph N of FILE (blank-line separated, 1-based)
  awk -v n="$2" 'BEGIN{RS=""} NR==n{print; exit}' "$root/examples/papers/$1"
}
{
  printf 'Coastal lives: notes for the local history seminar\n\n'
  printf 'This essay draws together the material the group collected on lighthouses, rivers and early communication along the coast, with the sources named in class.\n\n'
  paragraph lighthouse.txt 2
  printf '\nThe seminar discussed how isolated communities depended on such installations, and how their upkeep shaped local work and family life for generations.\n\n'
  paragraph river.txt 2
  printf '\n'
  paragraph telegraph.txt 2 | sed 's/horse/galloping horse/'
  printf '\nAs one baker put it, "%s"\n' "$(paragraph sourdough.txt 2 | sed 's/\. .*/./')"
  printf '\nIn conclusion, each of these systems changed how people along the coast lived, worked and talked to one another.\n'
} >"$work/essay.txt"
(cd "$work" && "${cops[@]}" check --exclude-quotes --html report.html essay.txt >/dev/null) ||
  [ $? -eq 1 ]
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1100,1500 --screenshot="$out" "file://$work/report.html" 2>/dev/null
echo "report-example: wrote $out"
