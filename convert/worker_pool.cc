#include "convert/worker_pool.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"
#include "convert/document_codec.h"
#include "convert/sandbox.h"
#include "convert/worker_process.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {

ConvertWorkerPool::ConvertWorkerPool(Options options) : options_(options) {}

ConvertWorkerPool::~ConvertWorkerPool() {
  std::vector<std::unique_ptr<WorkerProcess>> idle;
  {
    absl::MutexLock lock(&mu_);
    idle.swap(idle_);
  }
  // Each destructor kills and reaps its process.
}

uint64_t ConvertWorkerPool::started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> ConvertWorkerPool::Acquire(Deadline deadline,
                                                                          DocumentFormat format) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !idle_.empty() || alive_ < options_.max_workers;
  };
  const absl::Duration wait =
      absl::FromChrono(std::max(deadline - std::chrono::steady_clock::now(),
                                std::chrono::steady_clock::duration::zero()));
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), wait)) {
    return absl::ResourceExhaustedError(StrCat(DocumentFormatName(format), ": all ",
                                               options_.max_workers,
                                               " converter workers stayed busy past the time "
                                               "budget"));
  }
  if (!idle_.empty()) {
    std::unique_ptr<WorkerProcess> worker = std::move(idle_.back());
    idle_.pop_back();
    return worker;
  }
  ++alive_;
  return std::unique_ptr<WorkerProcess>();
}

void ConvertWorkerPool::Release(std::unique_ptr<WorkerProcess> worker, bool keep) {
  if (keep) {
    absl::MutexLock lock(&mu_);
    idle_.push_back(std::move(worker));
    return;
  }
  worker.reset();  // kills and reaps it before its slot frees up
  absl::MutexLock lock(&mu_);
  --alive_;
}

absl::StatusOr<ConvertedDocument> ConvertWorkerPool::Convert(std::string_view input,
                                                             DocumentFormat format,
                                                             const ConvertLimits& limits,
                                                             const ConvertOptions& options) {
  const Deadline budget_end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.time_budget_ms);
  const std::string header = EncodeRequestHeader(format, limits, options);
  for (int attempt = 0;; ++attempt) {
    COPS_ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker, Acquire(budget_end, format));
    const bool fresh = worker == nullptr;
    if (fresh) {
      absl::StatusOr<std::unique_ptr<WorkerProcess>> started =
          WorkerProcess::Start(ConvertWorkerPath(), format, /*one_document=*/false);
      if (!started.ok()) {
        Release(nullptr, /*keep=*/false);
        return started.status();
      }
      worker = *std::move(started);
      absl::MutexLock lock(&mu_);
      ++started_;
    }
    const Deadline deadline = fresh ? budget_end + kWorkerStartupGrace : budget_end;
    const WorkerProcess::Outcome outcome = worker->Exchange(
        header, input, deadline, /*half_close=*/false, MaxWorkerResponseBytes(limits));
    if (outcome == WorkerProcess::Outcome::kResponse) {
      absl::StatusOr<ConvertedDocument> doc = DecodeResponse(worker->response());
      // A worker that reported an error may have left its parser in any state (or is about
      // to exit, at the memory limit): a fresh one takes the next document.
      const bool keep = doc.ok() && worker->responses() < options_.max_uses;
      Release(std::move(worker), keep);
      return doc;
    }
    if (!fresh && attempt == 0 && outcome == WorkerProcess::Outcome::kEnded &&
        !worker->answered_anything()) {
      Release(std::move(worker), /*keep=*/false);  // it died while idle: one fresh try
      continue;
    }
    absl::Status status =
        worker->Finish(outcome == WorkerProcess::Outcome::kTimedOut, deadline, format, limits);
    Release(std::move(worker), /*keep=*/false);
    return status;
  }
}

}  // namespace cops
