#ifndef COPS_FUZZ_SERVICE_PARTS_H_
#define COPS_FUZZ_SERVICE_PARTS_H_

// What the fuzzers of the service's APIs (fuzz_service over gRPC, fuzz_http over HTTP) put
// beneath the CopyDetection service: a fresh data directory in /tmp, removed when the fuzzer
// exits; the index, converting in process with a 2 s budget; access control with
// authentication on and one owner of collection "a" without rate limits (its key in
// `owner_key`), where wrong keys never lock a caller out; the usage ledger and the audit
// sink. Built once per run and never destroyed (libFuzzer exits without unwinding).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "access/access_control.h"
#include "access/audit_sink.h"
#include "access/authorizer.h"
#include "access/usage_ledger.h"
#include "engine/index_generations.h"
#include "server/service.h"

namespace cops::fuzzing {

// Aborts the fuzzer, naming `what` and errno, unless `invariant` holds.
void Require(bool invariant, const char* what = "");

template <typename T>
T Must(absl::StatusOr<T> v) {
  Require(v.ok(), v.ok() ? "" : std::string(v.status().message()).c_str());
  return *std::move(v);
}

struct ServiceParts {
  // `name` names the data directory: /tmp/cops_fuzz_<name>_XXXXXX.
  explicit ServiceParts(const std::string& name);

  // A service over these parts that authenticates through `authorizer` (`access.get()`:
  // authentication on).
  std::unique_ptr<CopyDetectionService> Service(Authorizer* authorizer) const;

  std::string dir;
  std::unique_ptr<IndexGenerations> generations;
  std::unique_ptr<AccessControl> access;
  std::string owner_key;
  std::unique_ptr<UsageLedger> usage;
  std::unique_ptr<AuditSink> audit;
};

}  // namespace cops::fuzzing

#endif  // COPS_FUZZ_SERVICE_PARTS_H_
