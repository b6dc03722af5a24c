#include "access/stream_watchdog.h"

#include <utility>

#include "grpcpp/server_context.h"
#include "logging/log_event.h"

namespace cops {

StreamWatchdog::Stream::Stream(Stream&& other) noexcept
    : watchdog_(std::exchange(other.watchdog_, nullptr)),
      entry_(std::exchange(other.entry_, nullptr)) {}

StreamWatchdog::Stream& StreamWatchdog::Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Release();
    watchdog_ = std::exchange(other.watchdog_, nullptr);
    entry_ = std::exchange(other.entry_, nullptr);
  }
  return *this;
}

StreamWatchdog::Stream::~Stream() { Release(); }

void StreamWatchdog::Stream::Release() {
  if (entry_ == nullptr) return;
  {
    // Under the lock: the watchdog never cancels a context whose handler has returned.
    absl::MutexLock lock(&watchdog_->mu_);
    watchdog_->entries_.erase(entry_);
  }
  delete entry_;
  entry_ = nullptr;
}

void StreamWatchdog::Stream::Touch() {
  if (entry_ == nullptr) return;
  absl::MutexLock lock(&watchdog_->mu_);
  entry_->last_message = absl::Now();
}

bool StreamWatchdog::Stream::ended() const {
  if (entry_ == nullptr) return false;
  absl::MutexLock lock(&watchdog_->mu_);
  return entry_->ended;
}

StreamWatchdog::StreamWatchdog(StreamLimits limits)
    : limits_(limits), thread_([this] { Run(); }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

StreamWatchdog::Stream StreamWatchdog::Watch(grpc::ServerContext* context) {
  const absl::Time now = absl::Now();
  auto* entry = new Entry{context, now, now};
  absl::MutexLock lock(&mu_);
  entries_.insert(entry);
  return Stream(this, entry);
}

uint64_t StreamWatchdog::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

absl::Time StreamWatchdog::ExpiryOf(const Entry& entry) const {
  absl::Time expiry = absl::InfiniteFuture();
  if (limits_.idle_timeout > absl::ZeroDuration()) {
    expiry = std::min(expiry, entry.last_message + limits_.idle_timeout);
  }
  if (limits_.max_age > absl::ZeroDuration()) {
    expiry = std::min(expiry, entry.opened + limits_.max_age);
  }
  return expiry;
}

void StreamWatchdog::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    absl::Time next = absl::InfiniteFuture();
    for (Entry* entry : entries_) {
      if (entry->ended) continue;
      const absl::Time expiry = ExpiryOf(*entry);
      if (expiry <= now) {
        entry->ended = true;
        ++ended_;
        const bool idle = limits_.idle_timeout > absl::ZeroDuration() &&
                          entry->last_message + limits_.idle_timeout <= now;
        LogEvent(LogLevel::kInfo, "stream_ended",
                 {{"peer", entry->context->peer()},
                  {"reason", idle ? "idle timeout" : "maximum age"},
                  {"open_seconds", std::to_string(absl::ToInt64Seconds(now - entry->opened))}});
        entry->context->TryCancel();
      } else {
        next = std::min(next, expiry);
      }
    }
    // Wakes at the next expiry, and at least once a second to see the streams watched
    // meanwhile: an expiry is acted on at most a second late.
    mu_.AwaitWithDeadline(absl::Condition(&stopping_),
                          std::min(next, absl::Now() + absl::Seconds(1)));
  }
}

}  // namespace cops
