#include "convert/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "convert/document_codec.h"
#include "convert/sandbox.h"
#include "core/strings.h"

namespace cops {
namespace {

std::atomic<uint64_t> worker_failures{0};
std::atomic<uint64_t> worker_timeouts{0};

absl::Status Errno(std::string_view what) {
  return absl::InternalError(StrCat("convert worker: ", what, ": ", std::strerror(errno)));
}

int MillisLeft(WorkerProcess::Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

}  // namespace

ConvertWorkerCounts GetConvertWorkerCounts() {
  return {worker_failures.load(std::memory_order_relaxed),
          worker_timeouts.load(std::memory_order_relaxed)};
}

uint64_t MaxWorkerResponseBytes(const ConvertLimits& limits) {
  return 4 * limits.max_output_bytes + (1 << 20);
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(const std::string& path,
                                                                    DocumentFormat format,
                                                                    bool one_document) {
  if (path.empty()) {
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    return absl::InternalError(StrCat(DocumentFormatName(format),
                                      ": cannot find the cops-convert-worker executable "
                                      "(set COPS_CONVERT_WORKER)"));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    return Errno("socketpair");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDOUT_FILENO);
  static std::atomic<bool> reported{false};
  const bool report = !reported.exchange(true);
  if (!report) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Nothing else of the caller's: descriptors libraries opened without O_CLOEXEC (libmilter's
  // pipes, say) must not reach a process that parses hostile documents.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  // Nor the caller's signal mask and ignored signals (cops-milter blocks SIGTERM for
  // libmilter and ignores SIGPIPE): the worker starts with default dispositions.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv = {const_cast<char*>(path.c_str())};
  char one[] = "--one-document";
  char report_flag[] = "--report-sandbox";
  if (one_document) argv.push_back(one);
  if (report) argv.push_back(report_flag);
  argv.push_back(nullptr);
  char* no_environment[] = {nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), no_environment);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    worker_failures.fetch_add(1, std::memory_order_relaxed);
    errno = rc;
    return Errno("posix_spawn " + path);
  }
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, sv[0]));
}

WorkerProcess::~WorkerProcess() {
  Reap(std::chrono::steady_clock::now(), /*kill_now=*/true, nullptr);
}

WorkerProcess::Outcome WorkerProcess::Exchange(std::string_view header, std::string_view input,
                                               Deadline deadline, bool half_close,
                                               uint64_t max_response) {
  response_.clear();
  received_ = 0;
  const std::string prefix = EncodeFrameLength(header.size() + input.size()) + std::string(header);
  const size_t to_write = prefix.size() + input.size();
  size_t written = 0;
  bool write_done = false;
  std::string buffer;  // frame length + payload as it arrives
  std::optional<uint64_t> frame;
  char chunk_buf[64 << 10];
  while (true) {
    if (written == to_write && !write_done) {
      if (half_close) shutdown(fd_, SHUT_WR);
      write_done = true;
    }
    const int left = MillisLeft(deadline);
    if (left == 0) return Outcome::kTimedOut;
    pollfd pfd{fd_, static_cast<short>(POLLIN | (write_done ? 0 : POLLOUT)), 0};
    const int ready = poll(&pfd, 1, left);
    if (ready < 0 && errno != EINTR) return Outcome::kEnded;
    if (ready <= 0) continue;
    if (!write_done && (pfd.revents & POLLOUT)) {
      const std::string_view chunk = written < prefix.size()
                                         ? std::string_view(prefix).substr(written)
                                         : input.substr(written - prefix.size());
      const ssize_t n = send(fd_, chunk.data(), std::min<size_t>(chunk.size(), 1 << 20),
                             MSG_NOSIGNAL);
      if (n > 0) {
        written += n;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        write_done = true;  // the worker stopped reading (it died or gave up): read what it said
      }
    }
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(fd_, chunk_buf, sizeof(chunk_buf), 0);
      if (n > 0) {
        received_ += n;
        buffer.append(chunk_buf, n);
        if (!frame.has_value()) {
          frame = DecodeFrameLength(buffer);
          if (frame.has_value() && *frame > max_response) return Outcome::kEnded;
        }
        if (frame.has_value() && buffer.size() >= sizeof(uint64_t) + *frame) {
          response_ = buffer.substr(sizeof(uint64_t), *frame);
          ++responses_;
          return Outcome::kResponse;
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        return Outcome::kEnded;
      }
    }
  }
}

int WorkerProcess::Reap(Deadline deadline, bool kill_now, bool* killed_at_deadline) {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  int status = 0;
  if (pid_ < 0) return status;
  if (kill_now) kill(pid_, SIGKILL);  // not yet reaped, so the pid is still ours
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      if (killed_at_deadline != nullptr) *killed_at_deadline = true;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pid_ = -1;
  return status;
}

void WorkerProcess::Close(Deadline deadline) { Reap(deadline, /*kill_now=*/false, nullptr); }

absl::Status WorkerProcess::Finish(bool timed_out, Deadline deadline, DocumentFormat format,
                                   const ConvertLimits& limits) {
  const std::string_view name = DocumentFormatName(format);
  bool killed_at_deadline = false;
  const int status = Reap(deadline, /*kill_now=*/timed_out, &killed_at_deadline);
  if (timed_out || killed_at_deadline) {
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
  worker_failures.fetch_add(1, std::memory_order_relaxed);
  return absl::InternalError(StrCat(name, ": convert worker exited with status ",
                                    WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                    " without a result"));
}

}  // namespace cops
