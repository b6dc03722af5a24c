#ifndef COPS_ENGINE_CANCELLATION_PROBE_H_
#define COPS_ENGINE_CANCELLATION_PROBE_H_

// Whether a call's client gave up or its deadline passed, cheap enough to ask between the
// steps of every check.
//
// grpc's ServerContext::IsCancelled() polls the call's completion queue: on a synchronous
// server that is a pollset wait that parks the thread on a futex while another thread
// polls. Asked three times per message of a CheckStream, it cost copsd 0.05-0.08 ms of
// CPU per unrelated ~3 KB mail message (0.27-0.30 against 0.22 ms without it, through
// cops-milter as bench/mail-gateway.sh sends them). A probe compares the deadline with the
// clock on every question and polls the completion queue only once the current piece of
// work (one check) has run for `poll_after`: a short check whose client left finishes and
// its reply is dropped; a long one stops at its next step, as before.
//
// Thread-safety: not thread-safe; one per call, used by the thread serving it.

#include <chrono>
#include <functional>

namespace cops {

class CancellationProbe {
 public:
  using Clock = std::chrono::system_clock;  // grpc's deadlines are on the system clock
  // Work shorter than this is never interrupted by a client's cancellation (deadlines
  // still are).
  static constexpr std::chrono::milliseconds kPollAfter{5};

  // `poll` asks the transport (ServerContext::IsCancelled); Clock::time_point::max() as
  // `deadline` means none.
  CancellationProbe(Clock::time_point deadline, std::function<bool()> poll,
                    std::chrono::nanoseconds poll_after = kPollAfter);

  // A new piece of work starts (the next message of a stream): the poll waits again.
  void Restart();
  // True once the deadline has passed, or once the work has run for poll_after and the
  // transport says the call is cancelled.
  bool Cancelled() const;

 private:
  const Clock::time_point deadline_;
  const std::function<bool()> poll_;
  const std::chrono::nanoseconds poll_after_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace cops

#endif  // COPS_ENGINE_CANCELLATION_PROBE_H_
