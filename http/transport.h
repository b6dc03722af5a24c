#ifndef COPS_HTTP_TRANSPORT_H_
#define COPS_HTTP_TRANSPORT_H_

// The connection layer of the HTTP API (http/api.h): cpp-httplib parses HTTP/1.1 and
// routes, this class owns the sockets. cpp-httplib 0.11 alone bounds each recv() by a read
// time-out but not a whole request, so a client sending a byte every few seconds (slowloris)
// keeps a worker forever, and its accept queue is unbounded. Here:
//   - `threads` workers serve connections; at most `max_queued_connections` more wait for one;
//     a connection beyond that gets 503 at once and is closed;
//   - a request's headers and body must arrive within `request_timeout` of its first byte,
//     else the connection is closed;
//   - a connection waits at most `idle_timeout` for its next request (its first included),
//     and serves at most `max_requests_per_connection` requests.
// The handler of a request may call CloseAfterResponse() (e.g. after refusing a body it did
// not read) so that the connection is not reused.
//
// Internal to the HTTP target: only http/*.cc include it (it exposes httplib.h).
//
// Thread-safety: configure before listen_after_bind(); stop() may be called from any thread.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "httplib.h"

namespace cops {

struct HttpTransportOptions {
  uint32_t threads = 8;                      // connections served at once
  uint32_t max_queued_connections = 64;      // accepted connections waiting for a worker
  std::chrono::milliseconds request_timeout{30000};  // one request's headers and body
  std::chrono::milliseconds idle_timeout{5000};      // waiting for a connection's next request
  std::chrono::milliseconds write_timeout{30000};    // one send() of a reply
  uint32_t max_requests_per_connection = 100;
};

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(const HttpTransportOptions& options);

  // Called by a handler: the connection closes after this response.
  static void CloseAfterResponse();

 private:
  // Replaces cpp-httplib's keep-alive loop with one that enforces the limits above; the
  // parsing and routing stay cpp-httplib's (process_request).
  bool process_and_close_socket(socket_t sock) override;

  const HttpTransportOptions options_;
};

}  // namespace cops

#endif  // COPS_HTTP_TRANSPORT_H_
