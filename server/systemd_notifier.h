#ifndef COPS_SERVER_SYSTEMD_NOTIFIER_H_
#define COPS_SERVER_SYSTEMD_NOTIFIER_H_

// Tells the service manager copsd's state over systemd's notify protocol (sd_notify(3),
// libsystemd): a datagram per state change to the socket named by $NOTIFY_SOCKET, which
// systemd sets for a Type=notify unit (deploy/systemd/copsd.service). Without
// $NOTIFY_SOCKET every call does nothing, so copsd runs the same under any supervisor.
//
//   Ready()     READY=1 and STATUS=<status>: the index is open and the server listens.
//               When the manager asked for a watchdog ($WATCHDOG_USEC, and $WATCHDOG_PID
//               names this process or is unset) it also starts a thread that sends
//               WATCHDOG=1 every half interval until the notifier is destroyed.
//   Stopping()  STOPPING=1 and STATUS=draining: shutdown has begun (calls in flight drain).
//
// Thread-safety: Ready() is called once, before Stopping(); Stopping() may be called from
// any thread. Send errors are ignored: the service manager is advisory to the server.

#include <string_view>
#include <thread>

#include "absl/synchronization/notification.h"

namespace cops {

class SystemdNotifier {
 public:
  SystemdNotifier() = default;
  // Stops the watchdog thread.
  ~SystemdNotifier();
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  void Ready(std::string_view status);
  void Stopping();

 private:
  absl::Notification stop_watchdog_;
  std::thread watchdog_;
};

}  // namespace cops

#endif  // COPS_SERVER_SYSTEMD_NOTIFIER_H_
