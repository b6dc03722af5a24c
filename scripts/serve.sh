#!/usr/bin/env bash
# One command: install dependencies, build, and start copsd on its embedded default
# (RocksDB data dir ./data, gRPC on 127.0.0.1:7411, the HTTP/JSON API of docs/api.md on
# 127.0.0.1:7412). Extra args go to copsd.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" -DCOPS_BUILD_TESTS=OFF -DCOPS_BUILD_BENCH=OFF
exec "${COPS_BUILD_DIR:-$root/build}/server/copsd" --data-dir "${COPS_DATA_DIR:-$root/data}" \
  --http-listen "${COPS_HTTP_LISTEN:-127.0.0.1:7412}" "$@"
