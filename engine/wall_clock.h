#ifndef COPS_ENGINE_WALL_CLOCK_H_
#define COPS_ENGINE_WALL_CLOCK_H_

// The default clock of the engine (registration times, expiries) and of the access-control
// pieces (AccessControl, UsageLedger, AuditSink),
// whose options take a replaceable clock so tests can move time by hand.

#include <chrono>
#include <cstdint>

namespace cops {

// Microseconds since the Unix epoch by the system clock.
inline int64_t WallClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace cops

#endif  // COPS_ENGINE_WALL_CLOCK_H_
