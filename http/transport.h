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
//   - a request's line and headers hold at most `max_header_bytes` (cpp-httplib bounds each
//     line, not their number): beyond, 431 and the connection is closed, what the client
//     still sends read and dropped for a moment so that the reply reaches it;
//   - a connection waits at most `idle_timeout` for its next request (its first included),
//     and serves at most `max_requests_per_connection` requests.
// The handler of a request may call CloseAfterResponse() (e.g. after refusing a body it did
// not read) so that the connection is not reused.
//
// With TLS files (HttpTlsOptions) every connection is TLS (1.2 or later) from its first byte,
// its handshake bounded by request_timeout; with a client CA the handshake requires and
// verifies a client certificate (mutual TLS), and the names of that certificate are what
// PeerCertificateNames() shows the handlers of the connection's requests.
//
// Internal to the HTTP target: only http/*.cc include it (it exposes httplib.h).
//
// Thread-safety: configure before listen_after_bind(); stop() may be called from any thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "httplib.h"

namespace cops {

// PEM files of the listener's TLS, as copsd's --tls-cert, --tls-key, --tls-client-ca.
struct HttpTlsOptions {
  std::string cert_path;       // certificate chain ("" = plain HTTP)
  std::string key_path;        // its private key
  std::string client_ca_path;  // when set, clients must present a certificate it signed

  bool enabled() const { return !cert_path.empty(); }
};

struct HttpTransportOptions {
  uint32_t threads = 8;                      // connections served at once
  uint32_t max_queued_connections = 64;      // accepted connections waiting for a worker
  std::chrono::milliseconds request_timeout{30000};  // one request's headers and body
  std::chrono::milliseconds idle_timeout{5000};      // waiting for a connection's next request
  std::chrono::milliseconds write_timeout{30000};    // one send() of a reply
  uint32_t max_requests_per_connection = 100;
  HttpTlsOptions tls;
  size_t max_header_bytes = 64 << 10;  // a request's line and headers
};

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(const HttpTransportOptions& options);
  ~BoundedHttpServer() override;
  BoundedHttpServer(const BoundedHttpServer&) = delete;
  BoundedHttpServer& operator=(const BoundedHttpServer&) = delete;

  // Loads options.tls (nothing to do without it); call once, before listening.
  // INVALID_ARGUMENT naming the file and OpenSSL's reason when a file cannot be loaded, or
  // a key without its certificate (or the reverse).
  absl::Status LoadTls();

  // Called by a handler: the connection closes after this response.
  static void CloseAfterResponse();

  // For a handler: the names of the client certificate the TLS handshake of the request's
  // connection verified (subject alternative names: DNS, URI, e-mail; then the subject CN),
  // as gRPC names them; empty without mutual TLS.
  static const std::vector<std::string>& PeerCertificateNames();

 private:
  // Replaces cpp-httplib's keep-alive loop with one that enforces the limits above; the
  // parsing and routing stay cpp-httplib's (process_request).
  bool process_and_close_socket(socket_t sock) override;
  // The TLS handshake of a connection, then Serve() over it.
  bool ServeTls(socket_t sock);
  // The requests of one connection over `stream` (DeadlineStream or TlsStream,
  // transport.cc), within the limits; the caller closes the socket.
  template <typename Stream>
  bool Serve(socket_t sock, Stream& stream);

  const HttpTransportOptions options_;
  SSL_CTX* tls_ = nullptr;  // owned; set by LoadTls() before any connection
};

}  // namespace cops

#endif  // COPS_HTTP_TRANSPORT_H_
