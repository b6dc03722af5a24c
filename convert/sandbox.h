#ifndef COPS_CONVERT_SANDBOX_H_
#define COPS_CONVERT_SANDBOX_H_

// Runs one conversion in a child process (`cops-convert-worker`) so that a parser bug
// triggered by a hostile document (crash, hang, memory blow-up) fails that document only.
// The worker sets RLIMIT_CPU and RLIMIT_AS on itself before reading the input; the caller
// enforces the wall clock and SIGKILLs a worker that overruns it.
//
// Thread-safety: ConvertInWorker is thread-safe (posix_spawn, one socket pair per call).

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "convert/converter.h"

namespace cops {

// The worker executable: $COPS_CONVERT_WORKER, else cops-convert-worker next to
// /proc/self/exe, else where `cmake --install` puts it relative to the running executable
// (<bindir>/../libexec/cops/cops-convert-worker by default), else the build-tree path
// compiled in. Empty when none exists.
std::string ConvertWorkerPath();

// Conversions in a worker that went wrong on the worker's side, counted in this process
// since it started (copsd's metrics). A document the worker rejected (malformed, encrypted,
// too large) is neither.
struct ConvertWorkerCounts {
  uint64_t failures = 0;  // the worker crashed, could not start or returned no result
  uint64_t timeouts = 0;  // the worker was stopped at its wall-clock or CPU budget
};
ConvertWorkerCounts GetConvertWorkerCounts();

// See Convert() in converter.h for the error codes.
absl::StatusOr<ConvertedDocument> ConvertInWorker(std::string_view input, DocumentFormat format,
                                                  const ConvertLimits& limits,
                                                  const ConvertOptions& options);

}  // namespace cops

#endif  // COPS_CONVERT_SANDBOX_H_
