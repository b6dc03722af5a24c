#include "engine/cancellation_probe.h"

#include <utility>

namespace cops {

CancellationProbe::CancellationProbe(Clock::time_point deadline, std::function<bool()> poll,
                                     std::chrono::nanoseconds poll_after)
    : deadline_(deadline),
      poll_(std::move(poll)),
      poll_after_(poll_after),
      started_(std::chrono::steady_clock::now()) {}

void CancellationProbe::Restart() { started_ = std::chrono::steady_clock::now(); }

bool CancellationProbe::Cancelled() const {
  if (deadline_ != Clock::time_point::max() && Clock::now() >= deadline_) return true;
  if (std::chrono::steady_clock::now() - started_ < poll_after_) return false;
  return poll_();
}

}  // namespace cops
