#include "storage/parallel_parts.h"

#include <algorithm>

namespace cops {

ParallelParts::ParallelParts(int workers) {
  threads_.reserve(static_cast<size_t>(std::max(0, workers)));
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

ParallelParts::~ParallelParts() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

size_t ParallelParts::RunParts(Job& job) {
  size_t ran = 0;
  for (size_t i = job.next.fetch_add(1, std::memory_order_relaxed); i < job.n;
       i = job.next.fetch_add(1, std::memory_order_relaxed)) {
    job.part(i);
    ++ran;
  }
  return ran;
}

void ParallelParts::Run(size_t n, absl::FunctionRef<void(size_t)> part) {
  if (n == 0) return;
  if (n == 1 || threads_.empty()) {
    for (size_t i = 0; i < n; ++i) part(i);
    return;
  }
  Job job(n, part);
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(&job);
  }
  const size_t ran = RunParts(job);
  absl::MutexLock lock(&mu_);
  // Every part is claimed now: no worker may pick the job up any more.
  if (auto it = std::find(queue_.begin(), queue_.end(), &job); it != queue_.end()) queue_.erase(it);
  job.finished += ran;
  // The job lives on this stack frame: wait until the parts are done and no worker still
  // holds it.
  auto done = [&job]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return job.finished == job.n && job.helpers == 0;
  };
  mu_.Await(absl::Condition(&done));
}

void ParallelParts::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    auto has_work = [this]()
                        ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
    mu_.Await(absl::Condition(&has_work));
    if (stopping_) return;
    Job* job = queue_.front();
    ++job->helpers;
    // Enough hands for the parts left (the caller counts as one): later workers skip it.
    const size_t hands = static_cast<size_t>(job->helpers) + 1;
    if (job->next.load(std::memory_order_relaxed) + hands >= job->n) queue_.pop_front();
    mu_.Unlock();
    const size_t ran = RunParts(*job);
    mu_.Lock();
    job->finished += ran;
    --job->helpers;
  }
}

}  // namespace cops
