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
  if (load.calls != 0 || load.waiting != 0) return false;
  const uint64_t calls = load.admitted + load.refused;
  {
    absl::MutexLock lock(&mu_);
    if (calls == seen_calls_ && !follow_up_) return false;
    follow_up_ = calls != seen_calls_;
    seen_calls_ = calls;
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
