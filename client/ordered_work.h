#ifndef COPS_CLIENT_ORDERED_WORK_H_
#define COPS_CLIENT_ORDERED_WORK_H_

// Runs work(i) for i in [0, n) on a few threads and hands the results to the calling thread
// in order of i, holding at most `window` results that are computed but not yet taken:
// the shape of every batch of the client (checks over several streams, local conversion
// and fingerprinting for `cops compare`).
//
// Thread-safety: work() runs on the worker threads (concurrently with itself); deliver()
// runs on the calling thread.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace cops {

// `make_worker()` is called once per thread, on that thread, and returns its work function
// (so each thread can own per-thread state, e.g. a stream). REQUIRES: threads >= 1,
// window >= threads.
template <typename Result>
void RunOrdered(size_t n, int threads, size_t window,
                const std::function<std::function<Result(size_t)>()>& make_worker,
                const std::function<void(Result&)>& deliver) {
  absl::Mutex mu;
  size_t next = 0;       // guarded by mu: the next index to hand out
  size_t delivered = 0;  // guarded by mu: results taken by the caller
  std::map<size_t, Result> done;  // guarded by mu
  auto can_take = [&] { return next >= n || next < delivered + window; };
  auto next_ready = [&] { return !done.empty() && done.begin()->first == delivered; };

  std::vector<std::thread> workers;
  const int count = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(threads), 1,
                                                        std::max<size_t>(n, 1)));
  workers.reserve(static_cast<size_t>(count));
  for (int t = 0; t < count; ++t) {
    workers.emplace_back([&] {
      std::function<Result(size_t)> work = make_worker();
      for (;;) {
        size_t i = 0;
        {
          absl::MutexLock lock(&mu);
          mu.Await(absl::Condition(&can_take));
          if (next >= n) return;
          i = next++;
        }
        Result r = work(i);
        absl::MutexLock lock(&mu);
        done.emplace(i, std::move(r));
      }
    });
  }
  for (size_t i = 0; i < n; ++i) {
    Result r;
    {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&next_ready));
      auto it = done.begin();
      r = std::move(it->second);
      done.erase(it);
      ++delivered;
    }
    deliver(r);
  }
  for (std::thread& t : workers) t.join();
}

}  // namespace cops

#endif  // COPS_CLIENT_ORDERED_WORK_H_
