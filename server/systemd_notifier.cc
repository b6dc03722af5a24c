#include "server/systemd_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace cops {

SystemdNotifier::~SystemdNotifier() {
  if (watchdog_.joinable()) {
    stop_watchdog_.Notify();
    watchdog_.join();
  }
}

void SystemdNotifier::Ready(std::string_view status) {
  // unset_environment=0: the worker processes copsd spawns inherit NOTIFY_SOCKET, but with
  // NotifyAccess=main systemd ignores anything they might send.
  sd_notify(0, ("READY=1\nSTATUS=" + std::string(status)).c_str());
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0 && !watchdog_.joinable()) {
    // Half the interval, as sd_watchdog_enabled(3) advises: one late ping is not fatal.
    const absl::Duration period = absl::Microseconds(usec / 2);
    watchdog_ = std::thread([this, period] {
      do {
        sd_notify(0, "WATCHDOG=1");
      } while (!stop_watchdog_.WaitForNotificationWithTimeout(period));
    });
  }
}

void SystemdNotifier::Stopping() { sd_notify(0, "STOPPING=1\nSTATUS=draining"); }

}  // namespace cops
