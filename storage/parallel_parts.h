#ifndef COPS_STORAGE_PARALLEL_PARTS_H_
#define COPS_STORAGE_PARALLEL_PARTS_H_

#include <atomic>
#include <cstddef>
#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace cops {

// Runs the parts of one call (e.g. the slices of a lookup batch) on the calling thread and
// a few worker threads, for latency when cores are idle.
//
// The caller always takes part in its own call and finishes every part nobody has started,
// so a call never waits for a worker to become free: when all workers are busy (a loaded
// server), Run costs about what running the parts in a loop would. Thread-safe: any number
// of threads may call Run at once.
class ParallelParts {
 public:
  // REQUIRES: workers >= 0. With 0 workers Run is a plain loop.
  explicit ParallelParts(int workers);
  ~ParallelParts();  // joins the workers; no Run may be in progress
  ParallelParts(const ParallelParts&) = delete;
  ParallelParts& operator=(const ParallelParts&) = delete;

  // Calls part(i) once for each i in [0, n), on this thread and idle workers, and returns
  // when every call has returned. `part` must be safe to call from several threads at once.
  void Run(size_t n, absl::FunctionRef<void(size_t)> part);

  int workers() const { return static_cast<int>(threads_.size()); }

 private:
  struct Job {
    Job(size_t n, absl::FunctionRef<void(size_t)> part) : n(n), part(part) {}
    const size_t n;
    const absl::FunctionRef<void(size_t)> part;
    std::atomic<size_t> next{0};  // next unclaimed part
    size_t finished = 0;          // guarded by ParallelParts::mu_
    int helpers = 0;              // workers inside RunParts; guarded by ParallelParts::mu_
  };

  // Claims and runs parts of `job` until none is left; returns how many it ran.
  static size_t RunParts(Job& job);
  void WorkerLoop();

  absl::Mutex mu_;
  std::deque<Job*> queue_ ABSL_GUARDED_BY(mu_);  // jobs that may have unclaimed parts
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace cops

#endif  // COPS_STORAGE_PARALLEL_PARTS_H_
