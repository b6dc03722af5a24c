#include "convert/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "convert/document_codec.h"
#include "convert/formats.h"
#include "core/status_macros.h"
#include "core/strings.h"

extern char** environ;

namespace cops {
namespace {

constexpr char kWorkerName[] = "cops-convert-worker";

std::atomic<uint64_t> worker_failures{0};
std::atomic<uint64_t> worker_timeouts{0};
// Process start-up and library loading are not the document's fault.
constexpr auto kStartupGrace = std::chrono::milliseconds(1000);

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

absl::Status Errno(std::string_view what) {
  return absl::InternalError(StrCat("convert worker: ", what, ": ", std::strerror(errno)));
}

}  // namespace

ConvertWorkerCounts GetConvertWorkerCounts() {
  return {worker_failures.load(std::memory_order_relaxed),
          worker_timeouts.load(std::memory_order_relaxed)};
}

std::string ConvertWorkerPath() {
  if (const char* env = std::getenv("COPS_CONVERT_WORKER"); env != nullptr && *env != '\0') {
    return IsExecutable(env) ? env : "";
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, n);
    dir.resize(dir.rfind('/') + 1);
    std::string path = dir + kWorkerName;
    if (IsExecutable(path)) return path;
#ifdef COPS_CONVERT_WORKER_FROM_BINDIR
    // The installed layout; normalized so that logs show a plain path.
    path = std::filesystem::path(dir + COPS_CONVERT_WORKER_FROM_BINDIR).lexically_normal();
    if (IsExecutable(path)) return path;
#endif
  }
#ifdef COPS_CONVERT_WORKER_BUILD_PATH
  if (IsExecutable(COPS_CONVERT_WORKER_BUILD_PATH)) return COPS_CONVERT_WORKER_BUILD_PATH;
#endif
  return "";
}

absl::StatusOr<ConvertedDocument> ConvertInWorker(std::string_view input, DocumentFormat format,
                                                  const ConvertLimits& limits,
                                                  const ConvertOptions& options) {
  const std::string_view name = DocumentFormatName(format);
  const std::string path = ConvertWorkerPath();
  if (path.empty()) {
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    return absl::InternalError(
        StrCat(name, ": cannot find the ", kWorkerName, " executable (set COPS_CONVERT_WORKER)"));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Errno("socketpair");
  Fd parent(sv[0]), child(sv[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    errno = rc;
    return Errno("posix_spawn " + path);
  }
  child.Reset();
  fcntl(parent.get(), F_SETFL, fcntl(parent.get(), F_GETFL) | O_NONBLOCK);

  const auto deadline = std::chrono::steady_clock::now() + kStartupGrace +
                        std::chrono::milliseconds(limits.time_budget_ms);
  const std::string header = EncodeRequestHeader(format, limits, options);
  size_t written = 0;  // over header + input
  const size_t to_write = header.size() + input.size();
  bool write_done = false;
  std::string response;
  bool timed_out = false;
  char buf[64 << 10];
  while (true) {
    if (written == to_write && !write_done) {
      shutdown(parent.get(), SHUT_WR);
      write_done = true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{parent.get(), static_cast<short>(POLLIN | (write_done ? 0 : POLLOUT)), 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (!write_done && (pfd.revents & POLLOUT)) {
      std::string_view chunk = written < header.size()
                                   ? std::string_view(header).substr(written)
                                   : input.substr(written - header.size());
      ssize_t n = send(parent.get(), chunk.data(), std::min<size_t>(chunk.size(), 1 << 20),
                       MSG_NOSIGNAL);
      if (n > 0) {
        written += n;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        write_done = true;  // the worker stopped reading (it died or gave up)
      }
    }
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = recv(parent.get(), buf, sizeof(buf), 0);
      if (n > 0) {
        response.append(buf, n);
        // The response can be at most the text cap plus its map; more is a broken worker.
        if (response.size() > 4 * limits.max_output_bytes + (1 << 20)) break;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        break;  // EOF: the worker is done
      }
    }
  }
  parent.Reset();

  // Reap the worker; it has closed its end, so it exits promptly unless it hangs.
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (timed_out || std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      kill(pid, SIGKILL);  // not yet reaped, so the pid is still ours
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (timed_out) {
    worker_timeouts.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(StrCat(name, ": conversion exceeded the time budget of ",
                                               limits.time_budget_ms, " ms; worker killed"));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU || sig == SIGKILL) {
      worker_timeouts.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          StrCat(name, ": conversion exceeded the CPU budget of ", limits.time_budget_ms, " ms"));
    }
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    return absl::InvalidArgumentError(StrCat(
        name, ": the converter died on this document (signal ", sig, ": ", strsignal(sig),
        "; malformed input or memory limit of ", limits.max_memory_bytes, " bytes exceeded)"));
  }
  if (response.empty()) {
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    return absl::InternalError(StrCat(name, ": convert worker exited with status ",
                                      WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                      " without a result"));
  }
  return DecodeResponse(response);
}

namespace {

// Formats parsed by our own code only; everything else goes to the worker.
bool IsTrusted(DocumentFormat f) {
  return f == DocumentFormat::kText || f == DocumentFormat::kLatex ||
         f == DocumentFormat::kMarkdown;
}

}  // namespace

absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits,
                                          const ConvertOptions& options) {
  COPS_RETURN_IF_ERROR(CheckConvertInput(input, format, limits));
  if (format == DocumentFormat::kAuto) format = DetectFormat(input);
  if (limits.in_process || IsTrusted(format)) {
    return ConvertFormat(input, format, MakeConvertContext(limits, options));
  }
  return ConvertInWorker(input, format, limits, options);
}

absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits) {
  return Convert(input, format, limits, ConvertOptions{});
}

}  // namespace cops
