#include "access/admission_control.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

namespace cops {
namespace {

std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

AdmissionControl::Permit::Permit(Permit&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

AdmissionControl::Permit& AdmissionControl::Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

AdmissionControl::Permit::~Permit() { Release(); }

void AdmissionControl::Permit::Release() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->Release(bytes_);
  bytes_ = 0;
}

AdmissionControl::AdmissionControl(AdmissionLimits limits) : limits_(limits) {}

bool AdmissionControl::HasRoom(uint64_t bytes) const {
  if (load_.calls >= limits_.max_calls) return false;
  return load_.calls == 0 || load_.bytes + bytes <= limits_.max_bytes;
}

std::string AdmissionControl::BusyMessage(uint64_t bytes,
                                          std::optional<absl::Duration> waited) const {
  std::string message = "server busy: ";
  if (load_.calls >= limits_.max_calls) {
    message += "checks and registrations at work " + std::to_string(load_.calls) + " (limit " +
               std::to_string(limits_.max_calls) + ")";
  } else {
    message += "a document of " + Mib(bytes) + " does not fit beside the " + Mib(load_.bytes) +
               " at work (limit " + Mib(limits_.max_bytes) + ")";
  }
  if (waited.has_value()) {
    message += " after waiting " + absl::FormatDuration(absl::Trunc(*waited, absl::Milliseconds(1)));
  } else {
    message += ", waiting " + std::to_string(load_.waiting) + " (limit " +
               std::to_string(limits_.max_waiting) + ")";
  }
  return message + "; retry later";
}

absl::StatusOr<AdmissionControl::Permit> AdmissionControl::Admit(uint64_t bytes,
                                                                 absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (!HasRoom(bytes)) {
    if (load_.waiting >= limits_.max_waiting) {
      ++load_.refused;
      return absl::ResourceExhaustedError(BusyMessage(bytes, std::nullopt));
    }
    ++load_.waiting;
    const absl::Time start = absl::Now();
    auto has_room = [this, bytes]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return HasRoom(bytes); };
    const bool room = mu_.AwaitWithDeadline(absl::Condition(&has_room),
                                            std::min(start + limits_.max_wait, deadline));
    --load_.waiting;
    if (!room) {
      ++load_.refused;
      return absl::ResourceExhaustedError(BusyMessage(bytes, absl::Now() - start));
    }
  }
  ++load_.calls;
  load_.bytes += bytes;
  ++load_.admitted;
  return Permit(this, bytes);
}

void AdmissionControl::Release(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  --load_.calls;
  load_.bytes -= bytes;
}

AdmissionLoad AdmissionControl::load() const {
  absl::MutexLock lock(&mu_);
  return load_;
}

}  // namespace cops
