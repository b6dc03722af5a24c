#ifndef COPS_ACCESS_ADMISSION_CONTROL_H_
#define COPS_ACCESS_ADMISSION_CONTROL_H_

// Admission control of the calls that do a document's work (checks, registrations, windows
// of a bulk registration): at most `max_calls` of them at work at once, holding at most
// `max_bytes` of document content between them. A check or registration needs many times
// its content in working memory (docs/operations.md, "Limits"), so a burst is shed here with
// RESOURCE_EXHAUSTED before that memory is allocated, instead of every call slowing down and
// the process growing until the burst ends.
//
// A call that finds no room waits for it, at most `max_wait` and not past its own deadline,
// among at most `max_waiting` waiting calls; a call beyond those is refused at once. Waiting
// is not first-come first-served: a call that fits goes first, so a large document may wait
// out its time while smaller ones pass.
//
// What it does not bound: the requests gRPC has read but not yet handed to a handler (the
// sync API reads a unary request whole before the handler runs). Streams per connection, the
// message size limit and gRPC's memory quota bound those (server/main.cc BuildServer).
//
// Thread-safety: thread-safe; a Permit may be released on any thread.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cops {

struct AdmissionLimits {
  uint32_t max_calls = 4;  // calls at work at once; REQUIRES > 0
  // Document bytes of the calls at work at once; REQUIRES > 0. A call larger than this is let
  // in when no other call is at work (the document size limit bounds it on its own).
  uint64_t max_bytes = 64ull << 20;
  uint32_t max_waiting = 8;  // calls waiting for room at once; 0 = refuse at once when full
  absl::Duration max_wait = absl::Seconds(1);  // longest wait for room
};

// The state of an AdmissionControl, for metrics and tests.
struct AdmissionLoad {
  uint32_t calls = 0;    // at work
  uint64_t bytes = 0;    // document bytes of the calls at work
  uint32_t waiting = 0;  // waiting for room
  uint64_t admitted = 0;  // since start
  uint64_t refused = 0;   // since start (RESOURCE_EXHAUSTED)
};

class AdmissionControl {
 public:
  // A call's room at work; gives it back when destroyed. Move-only; a default-constructed
  // Permit holds nothing.
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&& other) noexcept;
    Permit& operator=(Permit&& other) noexcept;
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit();

   private:
    friend class AdmissionControl;
    Permit(AdmissionControl* owner, uint64_t bytes) : owner_(owner), bytes_(bytes) {}
    void Release();

    AdmissionControl* owner_ = nullptr;
    uint64_t bytes_ = 0;
  };

  explicit AdmissionControl(AdmissionLimits limits);
  AdmissionControl(const AdmissionControl&) = delete;
  AdmissionControl& operator=(const AdmissionControl&) = delete;

  // Lets a call of `bytes` document bytes start work, waiting for room until
  // min(now + max_wait, deadline). RESOURCE_EXHAUSTED naming the limit that is reached when
  // there is no room by then, or at once when max_waiting calls already wait.
  absl::StatusOr<Permit> Admit(uint64_t bytes, absl::Time deadline);

  AdmissionLoad load() const;
  const AdmissionLimits& limits() const { return limits_; }

 private:
  bool HasRoom(uint64_t bytes) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The refusal of a call of `bytes` that `waited` (or did not wait), naming the limit it met.
  std::string BusyMessage(uint64_t bytes, std::optional<absl::Duration> waited) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Release(uint64_t bytes);

  const AdmissionLimits limits_;
  mutable absl::Mutex mu_;
  AdmissionLoad load_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cops

#endif  // COPS_ACCESS_ADMISSION_CONTROL_H_
