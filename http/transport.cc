#include "http/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cops {
namespace {

using Clock = std::chrono::steady_clock;

// Set on the accepting thread while it turns away a connection the pool has no room for.
thread_local bool refuse_connection = false;
// Set by a handler (CloseAfterResponse) for the connection its worker serves.
thread_local bool close_after_response = false;

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

// A connection's socket as cpp-httplib reads and writes it, reads bounded by the current
// request's deadline.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, std::chrono::milliseconds write_timeout)
      : fd_(fd), write_timeout_(write_timeout) {}

  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  bool is_readable() const override {
    return Wait(fd_, POLLIN, std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::max(deadline_ - Clock::now(), Clock::duration(0))));
  }
  bool is_writable() const override { return Wait(fd_, POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;  // past the request's deadline: the connection ends
    for (;;) {
      const ssize_t n = recv(fd_, ptr, size, 0);
      if (n >= 0 || errno != EINTR) return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
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

 private:
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
};

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

}  // namespace

BoundedHttpServer::BoundedHttpServer(const HttpTransportOptions& options) : options_(options) {
  new_task_queue = [this] {
    return new BoundedPool(std::max<uint32_t>(options_.threads, 1),
                           options_.max_queued_connections);
  };
}

void BoundedHttpServer::CloseAfterResponse() { close_after_response = true; }

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  if (refuse_connection) {
    // Best effort and never blocking: the accepting thread must not wait on this client.
    [[maybe_unused]] const ssize_t sent =
        send(sock, BusyReply().data(), BusyReply().size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    Close(sock);
    return false;
  }
  DeadlineStream stream(sock, options_.write_timeout);
  bool ok = false;
  for (uint32_t served = 0; served < options_.max_requests_per_connection; ++served) {
    // Idle: the request's first byte must come within idle_timeout; from then on the
    // whole request within request_timeout. A stopping server ends idle connections.
    bool ready = false;
    for (auto until = Clock::now() + options_.idle_timeout;
         !ready && svr_sock_ != INVALID_SOCKET && Clock::now() < until;) {
      ready = Wait(sock, POLLIN,
                   std::min(kStopPoll, std::chrono::duration_cast<std::chrono::milliseconds>(
                                           until - Clock::now())));
    }
    if (!ready) break;
    stream.set_deadline(Clock::now() + options_.request_timeout);
    close_after_response = false;
    bool closed = false;
    const bool last =
        served + 1 == options_.max_requests_per_connection || svr_sock_ == INVALID_SOCKET;
    ok = process_request(stream, last, closed, nullptr);
    if (!ok || closed || close_after_response) break;
  }
  close_after_response = false;
  Close(sock);
  return ok;
}

}  // namespace cops
