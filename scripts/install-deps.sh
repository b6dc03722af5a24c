#!/usr/bin/env bash
# Installs the Debian 12 packages COPS builds against, only when one is missing.
set -euo pipefail
PACKAGES=(
  cmake ninja-build g++ pkg-config git ca-certificates python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libssl-dev libspdlog-dev libicu-dev libcli11-dev
  nlohmann-json3-dev libxxhash-dev
  libpoppler-cpp-dev libgmime-3.0-dev libxml2-dev libzip-dev libmagic-dev libuchardet-dev
  clang libclang-rt-14-dev clang-tidy  # fuzz targets; scripts/lint.sh
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium  # renders the HTML report in tests/client/html_report_test.cc, scripts/report-example.sh
  wamerican
  python3.11-doc debian-handbook  # prose corpora of eval/make_set.py (docs/accuracy.md)
  mythes-en-us  # English thesaurus: synonyms for eval/make_short_set.py
  libmilter-dev  # cops-milter (milter/)
  postfix swaks  # tests/milter/postfix_integration_test.cc: a real MTA on loopback
  libsystemd-dev systemd  # sd_notify; systemd-analyze and systemd-sysusers check deploy/systemd
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
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
