#include "http/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "openssl/err.h"
#include "openssl/ssl.h"
#include "openssl/x509v3.h"

namespace cops {
namespace {

using Clock = std::chrono::steady_clock;

// Set on the accepting thread while it turns away a connection the pool has no room for.
thread_local bool refuse_connection = false;
// Set by a handler (CloseAfterResponse) for the connection its worker serves.
thread_local bool close_after_response = false;
// The verified client certificate's names of the connection this worker serves.
thread_local std::vector<std::string> peer_certificate_names;

// The reply to a connection beyond the limit, sent without waiting (the socket buffer of a
// new connection has room for it).
const std::string& BusyReply() {
  static const std::string reply = [] {
    const std::string body =
        R"({"code":"UNAVAILABLE","message":"too many connections: try again later"})";
    return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
           "Connection: close\r\nRetry-After: 1\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  return reply;
}

// How often an idle connection looks whether the server is stopping.
constexpr std::chrono::milliseconds kStopPoll{100};

int Millis(Clock::duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// Waits until `fd` has `events` or `timeout` passes; false on time-out or error.
bool Wait(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  const Clock::time_point until = Clock::now() + timeout;
  for (;;) {
    const int n = poll(&p, 1, Millis(until - Clock::now()));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

// The reply to a request whose line and headers exceed the limit.
std::string HeadersTooLargeReply(size_t limit) {
  const std::string body =
      R"({"code":"INVALID_ARGUMENT","message":"request headers over the limit of )" +
      std::to_string(limit) + R"( bytes"})";
  return "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A request's bytes up to the blank line that ends its headers, its request line included.
class HeaderBudget {
 public:
  size_t limit() const { return limit_; }
  void Reset(size_t limit) {
    limit_ = limit;
    bytes_ = 0;
    last_ = 0;
    in_headers_ = true;
  }
  // Counts bytes just read: false once the headers, not yet ended, pass the limit.
  bool Take(const char* data, size_t n) {
    for (size_t i = 0; i < n && in_headers_; ++i) {
      last_ = (last_ << 8) | static_cast<unsigned char>(data[i]);
      ++bytes_;
      if ((last_ & 0xFFFFFFFF) == 0x0D0A0D0A || (last_ & 0xFFFF) == 0x0A0A) {
        in_headers_ = false;
      } else if (bytes_ > limit_) {
        return false;
      }
    }
    return true;
  }

 private:
  size_t limit_ = 0;
  size_t bytes_ = 0;
  uint32_t last_ = 0;  // the last four bytes
  bool in_headers_ = false;
};

// A connection's socket as cpp-httplib reads and writes it, reads bounded by the current
// request's deadline. Reads are buffered as cpp-httplib's own SocketStream does: it reads
// header lines a byte at a time, which unbuffered cost a poll() and a recv() per byte (about
// 500 system calls for a request's headers).
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, std::chrono::milliseconds write_timeout)
      : fd_(fd), write_timeout_(write_timeout) {}

  // The next request starts: its deadline and its headers' limit.
  void StartRequest(Clock::time_point deadline, size_t max_header_bytes) {
    deadline_ = deadline;
    headers_.Reset(max_header_bytes);
  }
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // Whether the request was refused for its headers (431 sent): nothing more is read from
  // or written to it.
  bool refused() const { return refused_; }

  bool is_readable() const override {
    return pending_ > 0 ||
           Wait(fd_, POLLIN, std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::max(deadline_ - Clock::now(), Clock::duration(0))));
  }
  bool is_writable() const override { return Wait(fd_, POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (refused_) return -1;
    ssize_t taken = 0;
    if (pending_ == 0 && size >= sizeof(buffer_)) {
      taken = Receive(ptr, size);  // a body: straight through
    } else {
      if (pending_ == 0) {
        const ssize_t n = Receive(buffer_, sizeof(buffer_));
        if (n <= 0) return n;
        begin_ = 0;
        pending_ = static_cast<size_t>(n);
      }
      taken = static_cast<ssize_t>(std::min(size, pending_));
      std::memcpy(ptr, buffer_ + begin_, static_cast<size_t>(taken));
      begin_ += static_cast<size_t>(taken);
      pending_ -= static_cast<size_t>(taken);
    }
    if (taken > 0 && !headers_.Take(ptr, static_cast<size_t>(taken))) {
      Refuse();
      return -1;
    }
    return taken;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (refused_ || !is_writable()) return -1;
    for (;;) {
      const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || errno != EINTR) return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }
  bool buffered() const { return pending_ > 0; }

 private:
  // Sends the 431 reply (best effort) and stops the request.
  void Refuse() {
    const std::string reply = HeadersTooLargeReply(headers_.limit());
    write(reply.data(), reply.size());
    refused_ = true;
  }

  // recv() without blocking, waiting for data only when there is none; -1 past the
  // request's deadline (the connection ends).
  ssize_t Receive(char* ptr, size_t size) {
    for (;;) {
      const ssize_t n = recv(fd_, ptr, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!is_readable()) return -1;
    }
  }
  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      port = ntohs(in->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
      port = ntohs(in->sin6_port);
    }
    ip = text;
  }

  const int fd_;
  const std::chrono::milliseconds write_timeout_;
  Clock::time_point deadline_ = Clock::now();
  char buffer_[4096];
  size_t begin_ = 0;    // of the bytes received and not yet read
  size_t pending_ = 0;
  HeaderBudget headers_;
  bool refused_ = false;
};

// OpenSSL's reason for the last failure on this thread (its error queue emptied).
std::string OpenSslError() {
  std::string reason;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof(text));
    if (!reason.empty()) reason += "; ";
    reason += text;
  }
  return reason.empty() ? "unknown OpenSSL error" : reason;
}

// A TLS connection's socket (non-blocking) as cpp-httplib reads and writes it: reads
// bounded by the current request's deadline, as DeadlineStream.
class TlsStream final : public httplib::Stream {
 public:
  TlsStream(SSL* ssl, int fd, std::chrono::milliseconds write_timeout)
      : ssl_(ssl), plain_(fd, write_timeout), fd_(fd), write_timeout_(write_timeout) {}

  void StartRequest(Clock::time_point deadline, size_t max_header_bytes) {
    deadline_ = deadline;
    plain_.set_deadline(deadline);
    headers_.Reset(max_header_bytes);
  }
  bool refused() const { return refused_; }

  bool is_readable() const override { return SSL_pending(ssl_) > 0 || plain_.is_readable(); }
  bool is_writable() const override { return plain_.is_writable(); }

  ssize_t read(char* ptr, size_t size) override {
    if (refused_) return -1;
    for (;;) {
      const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) {
        if (headers_.Take(ptr, static_cast<size_t>(n))) return n;
        const std::string reply = HeadersTooLargeReply(headers_.limit());
        write(reply.data(), reply.size());
        refused_ = true;
        return -1;
      }
      const int error = SSL_get_error(ssl_, n);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      if (!Retry(error, deadline_)) return -1;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (refused_) return -1;
    const Clock::time_point until = Clock::now() + write_timeout_;
    for (;;) {
      const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      if (!Retry(SSL_get_error(ssl_, n), until)) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    plain_.get_remote_ip_and_port(ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    plain_.get_local_ip_and_port(ip, port);
  }
  socket_t socket() const override { return fd_; }
  bool buffered() const { return SSL_pending(ssl_) > 0; }

  // Waits for what `error` (of an SSL call) needs until `until`; false when it is not a
  // wait (a failure) or the time is up.
  bool Retry(int error, Clock::time_point until) const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(until - Clock::now(), Clock::duration(0)));
    if (error == SSL_ERROR_WANT_READ) return left.count() > 0 && Wait(fd_, POLLIN, left);
    if (error == SSL_ERROR_WANT_WRITE) return left.count() > 0 && Wait(fd_, POLLOUT, left);
    return false;
  }

 private:
  SSL* const ssl_;
  DeadlineStream plain_;  // waits and addresses only: the bytes go through ssl_
  const int fd_;
  const std::chrono::milliseconds write_timeout_;
  Clock::time_point deadline_ = Clock::now();
  HeaderBudget headers_;
  bool refused_ = false;
};

// The names of the verified peer certificate of `ssl`: SAN DNS, URI and e-mail entries,
// then the subject CN.
std::vector<std::string> CertificateNames(SSL* ssl) {
  std::vector<std::string> names;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    X509_free(cert);
    return names;
  }
  auto add = [&names](const unsigned char* data, int length) {
    if (data == nullptr || length <= 0) return;
    std::string name(reinterpret_cast<const char*>(data), static_cast<size_t>(length));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* san = sk_GENERAL_NAME_value(sans, i);
    if (san->type == GEN_DNS || san->type == GEN_URI || san->type == GEN_EMAIL) {
      add(ASN1_STRING_get0_data(san->d.ia5), ASN1_STRING_length(san->d.ia5));
    }
  }
  GENERAL_NAMES_free(sans);
  X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    add(ASN1_STRING_get0_data(cn), ASN1_STRING_length(cn));
  }
  X509_free(cert);
  return names;
}

// The plain reply to a plain HTTP request sent to the TLS listener (as nginx answers one).
const std::string& PlainToTlsReply() {
  static const std::string reply = [] {
    const std::string body =
        R"({"code":"INVALID_ARGUMENT","message":"plain HTTP sent to the HTTPS listener: use https://"})";
    return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
           "Connection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  return reply;
}

// cpp-httplib's accept loop hands each connection to this queue: `threads` workers and at
// most `max_queued` waiting connections; the accepting thread itself turns away the rest.
class BoundedPool final : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t max_queued) : threads_(threads), max_queued_(max_queued) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (busy_ + queue_.size() < threads_ + max_queued_) {
        queue_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    refuse_connection = true;
    fn();  // process_and_close_socket() sees the flag: 503 and close
    refuse_connection = false;
  }

  void shutdown() override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and every accepted connection served
        fn = std::move(queue_.front());
        queue_.pop_front();
        ++busy_;
      }
      fn();
      std::unique_lock<std::mutex> lock(mu_);
      --busy_;
    }
  }

  const size_t threads_;
  const size_t max_queued_;
  // std::mutex: cpp-httplib's TaskQueue contract is all this class touches, and the
  // condition variable needs one.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

void Close(socket_t sock) {
  shutdown(sock, SHUT_RDWR);
  close(sock);
}

// After a reply refusing a request that was not read whole: ends the sending side, then reads
// and drops what the client still sends, for a second or 4 MiB at most. Closing with unread
// bytes would send a reset, which can destroy the reply before the client reads it.
void LingerBeforeClose(socket_t sock) {
  shutdown(sock, SHUT_WR);
  const Clock::time_point until = Clock::now() + std::chrono::seconds(1);
  char sink[16 << 10];
  for (size_t dropped = 0; dropped < (4u << 20);) {
    const ssize_t n = recv(sock, sink, sizeof(sink), MSG_DONTWAIT);
    if (n > 0) {
      dropped += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
    const Clock::time_point now = Clock::now();
    if (now >= until ||
        !Wait(sock, POLLIN, std::chrono::duration_cast<std::chrono::milliseconds>(until - now))) {
      return;
    }
  }
}

}  // namespace

BoundedHttpServer::BoundedHttpServer(const HttpTransportOptions& options) : options_(options) {
  new_task_queue = [this] {
    return new BoundedPool(std::max<uint32_t>(options_.threads, 1),
                           options_.max_queued_connections);
  };
}

BoundedHttpServer::~BoundedHttpServer() { SSL_CTX_free(tls_); }

absl::Status BoundedHttpServer::LoadTls() {
  const HttpTlsOptions& tls = options_.tls;
  if (!tls.enabled()) {
    if (!tls.key_path.empty() || !tls.client_ca_path.empty()) {
      return absl::InvalidArgumentError("HTTPS: a key or client CA without a certificate");
    }
    return absl::OkStatus();
  }
  if (tls.key_path.empty()) return absl::InvalidArgumentError("HTTPS: a certificate without its key");
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("HTTPS: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  auto fail = [ctx](const std::string& what) {
    SSL_CTX_free(ctx);
    return absl::InvalidArgumentError("HTTPS: cannot load " + what + ": " + OpenSslError());
  };
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_path.c_str()) != 1) {
    return fail("certificate '" + tls.cert_path + "'");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_path.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return fail("private key '" + tls.key_path + "'");
  }
  if (!tls.client_ca_path.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_path.c_str());
    if (names == nullptr ||
        SSL_CTX_load_verify_locations(ctx, tls.client_ca_path.c_str(), nullptr) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      return fail("client CA '" + tls.client_ca_path + "'");
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  SSL_CTX_free(tls_);
  tls_ = ctx;
  return absl::OkStatus();
}

void BoundedHttpServer::CloseAfterResponse() { close_after_response = true; }

const std::vector<std::string>& BoundedHttpServer::PeerCertificateNames() {
  return peer_certificate_names;
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  if (refuse_connection) {
    // Best effort and never blocking: the accepting thread must not wait on this client.
    [[maybe_unused]] const ssize_t sent =
        send(sock, BusyReply().data(), BusyReply().size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    Close(sock);
    return false;
  }
  if (tls_ != nullptr) return ServeTls(sock);
  DeadlineStream stream(sock, options_.write_timeout);
  const bool ok = Serve(sock, stream);
  Close(sock);
  return ok;
}

bool BoundedHttpServer::ServeTls(socket_t sock) {
  // Non-blocking, so that neither the handshake nor a read waits past its deadline.
  fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
  SSL* ssl = SSL_new(tls_);
  bool ok = false;
  if (ssl != nullptr && SSL_set_fd(ssl, sock) == 1) {
    TlsStream stream(ssl, sock, options_.write_timeout);
    const Clock::time_point until = Clock::now() + options_.request_timeout;
    ERR_clear_error();
    int accepted = 0;
    while ((accepted = SSL_accept(ssl)) != 1 &&
           stream.Retry(SSL_get_error(ssl, accepted), until)) {
    }
    if (accepted == 1) {
      peer_certificate_names = CertificateNames(ssl);
      ok = Serve(sock, stream);
      peer_certificate_names.clear();
      SSL_shutdown(ssl);  // close_notify, best effort: the socket is non-blocking
    } else if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_HTTP_REQUEST) {
      [[maybe_unused]] const ssize_t sent = send(sock, PlainToTlsReply().data(),
                                                 PlainToTlsReply().size(), MSG_NOSIGNAL);
    }
    ERR_clear_error();
  }
  SSL_free(ssl);
  Close(sock);
  return ok;
}

template <typename S>
bool BoundedHttpServer::Serve(socket_t sock, S& stream) {
  bool ok = false;
  for (uint32_t served = 0; served < options_.max_requests_per_connection; ++served) {
    // Idle: the request's first byte must come within idle_timeout; from then on the
    // whole request within request_timeout. A stopping server ends idle connections.
    bool ready = stream.buffered();  // a pipelined request already decrypted
    for (auto until = Clock::now() + options_.idle_timeout;
         !ready && svr_sock_ != INVALID_SOCKET && Clock::now() < until;) {
      ready = Wait(sock, POLLIN,
                   std::min(kStopPoll, std::chrono::duration_cast<std::chrono::milliseconds>(
                                           until - Clock::now())));
    }
    if (!ready) break;
    stream.StartRequest(Clock::now() + options_.request_timeout, options_.max_header_bytes);
    close_after_response = false;
    bool closed = false;
    const bool last =
        served + 1 == options_.max_requests_per_connection || svr_sock_ == INVALID_SOCKET;
    ok = process_request(stream, last, closed, nullptr);
    if (stream.refused()) {
      LingerBeforeClose(sock);
      break;
    }
    if (!ok || closed || close_after_response) break;
  }
  close_after_response = false;
  return ok;
}

}  // namespace cops
