#include "server/heap_trimmer.h"

#include <utility>

namespace cops {

HeapTrimmer::HeapTrimmer(HeapTrimmerOptions options) : options_(std::move(options)) {
  if (options_.period != absl::InfiniteDuration()) thread_ = std::thread([this] { Run(); });
}

HeapTrimmer::~HeapTrimmer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool HeapTrimmer::Tick() {
  const AdmissionLoad load = options_.load();
  const uint64_t calls = load.admitted + load.refused;
  {
    absl::MutexLock lock(&mu_);
    // Quiet: no call came or ended since the last look, none at work or waiting now. A
    // server answering a call every few milliseconds is seldom busy at the instant of a look,
    // but never quiet for a whole period; trimming it (malloc_trim walks the whole heap
    // under the arenas' locks) would stall its checks.
    const bool quiet = load.calls == 0 && load.waiting == 0 && calls == looked_calls_;
    looked_calls_ = calls;
    if (!quiet) return false;
    if (calls == trimmed_calls_ && !follow_up_) return false;
    follow_up_ = calls != trimmed_calls_;
    trimmed_calls_ = calls;
  }
  if (options_.trim) options_.trim();
  return true;
}

void HeapTrimmer::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.period)) return;
    }
    Tick();
  }
}

}  // namespace cops
