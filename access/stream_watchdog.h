#ifndef COPS_ACCESS_STREAM_WATCHDOG_H_
#define COPS_ACCESS_STREAM_WATCHDOG_H_

// Ends streaming calls (CheckStream, RegisterDocuments) that sit idle or live too long. A
// stream's handler holds one of the server's few handler threads for as long as the stream
// is open, blocked in Read() while the client sends nothing; only cancelling the call
// (ServerContext::TryCancel) unblocks it. The watchdog does that from one thread of its own:
// a stream without a message for `idle_timeout`, or open for `max_age`, is cancelled (its
// client sees CANCELLED; what was done before stays done).
//
//   StreamWatchdog::Watch watch = watchdog->Watch(context);  // while the handler runs
//   while (stream->Read(&request)) { watch.Touch(); ... }
//
// Thread-safety: thread-safe. A Watch belongs to its handler's thread.

#include <cstdint>
#include <memory>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace grpc {
class ServerContext;
}

namespace cops {

struct StreamLimits {
  // A stream without a message for this long is ended; zero or less = never.
  absl::Duration idle_timeout = absl::Minutes(5);
  // A stream open this long is ended, busy or not; zero or less = never.
  absl::Duration max_age = absl::Hours(1);
};

class StreamWatchdog {
 private:
  struct Entry;

 public:
  // A stream under watch from Watch() until it is destroyed, which must happen before its
  // ServerContext goes (at the end of the handler). Move-only.
  class Stream {
   public:
    Stream() = default;  // watches nothing
    Stream(Stream&& other) noexcept;
    Stream& operator=(Stream&& other) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();

    // A message arrived: the idle time starts again.
    void Touch();
    // Whether the watchdog cancelled the call (why: the idle timeout or the maximum age).
    bool ended() const;

   private:
    friend class StreamWatchdog;
    Stream(StreamWatchdog* watchdog, Entry* entry) : watchdog_(watchdog), entry_(entry) {}
    void Release();

    StreamWatchdog* watchdog_ = nullptr;
    Entry* entry_ = nullptr;
  };

  explicit StreamWatchdog(StreamLimits limits);
  // Joins the thread. REQUIRES: no Stream outlives it.
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  // Watches `context`'s call from now on. `context` must outlive the returned Stream.
  Stream Watch(grpc::ServerContext* context);

  const StreamLimits& limits() const { return limits_; }
  // Streams cancelled so far (idle or too old), for logs and tests.
  uint64_t ended() const;

 private:
  struct Entry {
    grpc::ServerContext* context;
    absl::Time opened;
    absl::Time last_message;
    bool ended = false;
  };

  void Run();
  // When `entry` is to be ended, given the limits.
  absl::Time ExpiryOf(const Entry& entry) const;

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  std::set<Entry*> entries_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t ended_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace cops

#endif  // COPS_ACCESS_STREAM_WATCHDOG_H_
