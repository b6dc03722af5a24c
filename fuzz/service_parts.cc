#include "fuzz/service_parts.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "spdlog/spdlog.h"

namespace cops::fuzzing {

void Require(bool invariant, const char* what) {
  if (invariant) return;
  std::fprintf(stderr, "fuzz: %s (errno %d: %s)\n", what, errno, std::strerror(errno));
  std::abort();
}

ServiceParts::ServiceParts(const std::string& name) {
  spdlog::set_level(spdlog::level::off);  // per request logging would be most of the run
  std::string tmpl = "/tmp/cops_fuzz_" + name + "_XXXXXX";
  Require(mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
  dir = tmpl;
  // One directory a run: removed at exit (libFuzzer's exit() runs atexit handlers).
  static std::string* removed_at_exit = new std::string(dir);
  std::atexit([] {
    std::error_code ignored;
    std::filesystem::remove_all(*removed_at_exit, ignored);
  });
  IndexGenerationsOptions index_options;
  index_options.data_dir = dir + "/data";
  index_options.detector.convert_limits.in_process = true;
  index_options.detector.convert_limits.time_budget_ms = 2000;
  generations = Must(IndexGenerations::Open(index_options));
  AccessControlOptions access_options;
  access_options.failure_limit = 1000000;  // a wrong key stays a wrong key, never a lock-out
  access = Must(OpenAccessControl(dir + "/data", /*bootstrap_admin=*/false, access_options));
  PrincipalRecord owner;
  owner.name = "owner";
  owner.role = static_cast<uint8_t>(Role::kOwner);
  owner.collections = {"a"};
  owner.requests_per_second = 1e9;
  owner.burst = 1000000000;
  owner_key = Must(access->CreatePrincipal(owner)).api_key;
  usage = std::make_unique<UsageLedger>(access->store());
  audit = std::make_unique<AuditSink>(AppendTo(access->store()), MatchesFrom(access->store()));
}

std::unique_ptr<CopyDetectionService> ServiceParts::Service(Authorizer* authorizer) const {
  return std::make_unique<CopyDetectionService>(generations.get(), authorizer, usage.get(),
                                                audit.get());
}

}  // namespace cops::fuzzing
