#!/usr/bin/env bash
# Installs the Debian 12 packages COPS builds against, only when one is missing.
#   install-deps.sh               everything: build, tests, benchmarks, evaluation, deploy checks
#   install-deps.sh --build-only  what building copsd, cops and the worker needs (the image)
set -euo pipefail
PACKAGES=(
  cmake ninja-build g++ pkg-config git ca-certificates python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libssl-dev libspdlog-dev libicu-dev libcli11-dev
  nlohmann-json3-dev libxxhash-dev
  libpoppler-cpp-dev libgmime-3.0-dev libxml2-dev libzip-dev libmagic-dev libuchardet-dev
  libsystemd-dev  # sd_notify (deploy/systemd)
  libmilter-dev  # cops-milter (milter/)
  prometheus-cpp-dev  # copsd and cops-milter --metrics-listen
  libnats-dev  # copsd --log / --follow: the registration log on NATS JetStream (replication/)
  libcpp-httplib-dev  # copsd --http-listen: the HTTP/JSON API (docs/api.md)
  libcurl4-openssl-dev  # webhook deliveries: a bounded HTTP client (http/webhooks.cc; CURL::libcurl, also linked by fuzz_http)
  libseccomp-dev  # cops-convert-worker's system call filter (convert/worker_sandbox.h)
  libsodium-dev  # Ed25519 signing of registration receipts (core/receipt.cc)
)
if [ "${1:-}" != "--build-only" ]; then PACKAGES+=(
  clang libclang-rt-14-dev clang-tidy  # fuzz targets; scripts/lint.sh
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium  # renders the HTML report in tests/client/html_report_test.cc, scripts/report-example.sh
  chromium-driver python3-selenium  # tests/http/page_test.py drives the web page in Chromium
  wamerican
  python3.11-doc debian-handbook  # prose corpora of eval/make_set.py (docs/accuracy.md)
  mythes-en-us  # English thesaurus: synonyms for eval/make_short_set.py
  postfix swaks  # tests/milter/postfix_integration_test.cc: a real MTA on loopback
  systemd python3-yaml openssl  # tests/deploy: systemd-analyze, systemd-sysusers, manifests
  prometheus  # tests/deploy/metrics_test.py: promtool and a real scrape
  nats-server  # tests/replication, tests/replication/log_replica_test.cc: a real JetStream
  vim-runtime  # tests/convert/format_detector_test.cc: vim's tutor, real text in many charsets
  jq  # tests/client/cops_cli_test.cc runs docs/receipts.md's openssl check (jq, base64, openssl)
  curl  # tests/http/api_test.cc runs docs/api.md's curl examples
); fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# kubectl checks deploy/k8s; Debian's comes in kubernetes-client (any kubectl will do).
if [ "${1:-}" != "--build-only" ] && ! command -v kubectl >/dev/null; then
  missing+=(kubernetes-client)
fi
# npm (Debian's, unless Node.js came with its own) for the OpenAPI validator below.
if [ "${1:-}" != "--build-only" ] && ! command -v npm >/dev/null; then
  missing+=(npm)
fi
# The standard OpenAPI validator tests/http/api_test.cc runs, installed from npm into
# the project-local tools/npm (not in git); without a reachable registry that test skips.
install_openapi_validator() {
  local root
  root="$(cd "$(dirname "$0")/.." && pwd)"
  if [ "${1:-}" = "--build-only" ] || [ -x "$root/tools/npm/node_modules/.bin/swagger-cli" ]; then
    return 0
  fi
  npm install --no-audit --no-fund --silent --prefix "$root/tools/npm" \
    @apidevtools/swagger-cli@4.0.4 >&2 ||
    echo "install-deps: npm could not install the OpenAPI validator (offline?)" >&2
}
if [ ${#missing[@]} -eq 0 ]; then
  install_openapi_validator "${1:-}"
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Postfix installs unconfigured: the integration test runs it from its own config directory.
echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_openapi_validator "${1:-}"
