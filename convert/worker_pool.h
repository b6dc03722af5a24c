#ifndef COPS_CONVERT_WORKER_POOL_H_
#define COPS_CONVERT_WORKER_POOL_H_

// A bounded pool of long-lived `cops-convert-worker` processes, for callers that convert
// documents all day (cops-milter's PDF, DOCX and ODT attachments): starting a process per
// document (ConvertInWorker, convert/sandbox.h) costs tens of milliseconds of exec and
// library loading, more than most conversions. Each document still runs under its own limits
// (the worker sets RLIMIT_CPU and RLIMIT_AS per request; the caller's wall clock kills it),
// and a worker that crashes, overruns its budget or reports an error is killed and replaced
// by a fresh process on a later request, so a hostile document fails that document only.
//
// Trade-off: a worker serves up to `max_uses` documents before it is replaced, so parser
// state (a slow leak, or an exploit that survived its document without crashing) lives that
// long; ConvertInWorker's process per document isolates each one completely.
//
// Thread-safety: thread-safe. At most `max_workers` conversions run at once; the others wait
// for a free worker within their time budget.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "convert/converter.h"

namespace cops {

class WorkerProcess;

class ConvertWorkerPool {
 public:
  struct Options {
    uint32_t max_workers = 2;  // processes at most (idle or busy); REQUIRES: > 0
    uint32_t max_uses = 256;   // documents a process converts before it is replaced; > 0
  };
  explicit ConvertWorkerPool(Options options);
  ~ConvertWorkerPool();  // kills the idle workers; REQUIRES: no Convert() is running
  ConvertWorkerPool(const ConvertWorkerPool&) = delete;
  ConvertWorkerPool& operator=(const ConvertWorkerPool&) = delete;

  // Converts in a pooled worker: the results and error codes of ConvertInWorker, and
  // RESOURCE_EXHAUSTED when no worker becomes free within limits.time_budget_ms. The worker
  // executable is ConvertWorkerPath() (convert/sandbox.h), looked up when a process starts.
  // A worker found dead before it answered (killed while idle) is replaced once, silently.
  absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                            const ConvertLimits& limits,
                                            const ConvertOptions& options);

  // Processes started since construction (for tests and logs).
  uint64_t started() const;

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  // An idle worker, or nullptr when the caller may start one (a slot is reserved for it);
  // RESOURCE_EXHAUSTED at `deadline`.
  absl::StatusOr<std::unique_ptr<WorkerProcess>> Acquire(Deadline deadline, DocumentFormat format);
  // Returns `worker` to the idle set (`keep`) or ends it and frees its slot.
  void Release(std::unique_ptr<WorkerProcess> worker, bool keep);

  const Options options_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<WorkerProcess>> idle_ ABSL_GUARDED_BY(mu_);
  uint32_t alive_ ABSL_GUARDED_BY(mu_) = 0;  // idle + busy + reserved slots
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cops

#endif  // COPS_CONVERT_WORKER_POOL_H_
