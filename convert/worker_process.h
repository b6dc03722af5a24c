#ifndef COPS_CONVERT_WORKER_PROCESS_H_
#define COPS_CONVERT_WORKER_PROCESS_H_

// Internal to convert/: one `cops-convert-worker` child process and the framed exchange of a
// request and its response with it (convert/document_codec.h). ConvertInWorker
// (convert/sandbox.h, one process per document) and ConvertWorkerPool
// (convert/worker_pool.h, long-lived processes) are built on it, and share its counters
// (GetConvertWorkerCounts).
//
// Thread-safety: a WorkerProcess is used by one thread at a time.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/converter.h"

namespace cops {

class WorkerProcess {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Starts `path` (ConvertWorkerPath()) with one end of a socket pair as its stdin and
  // stdout, stderr to /dev/null, no other descriptor of this process, an empty environment
  // (copsd's may hold secrets such as COPS_HASH_KEY), and default signal dispositions and
  // mask. The worker confines itself before reading (convert/worker_sandbox.h);
  // `one_document` makes the CPU and memory limits of its one document hard. The first worker a
  // process starts shares its stderr, to report what of the sandbox the kernel refused (once per
  // process, not per document). INTERNAL, naming `format`, when `path` is empty or cannot be
  // started (counted as a worker failure).
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Start(const std::string& path,
                                                              DocumentFormat format,
                                                              bool one_document);
  ~WorkerProcess();  // kills and reaps the process unless Finish() did
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // How an exchange ended.
  enum class Outcome {
    kResponse,  // a whole response frame arrived: response() holds its payload
    kTimedOut,  // `deadline` passed first (the process is still running)
    kEnded,     // the process closed its end, or sent a frame longer than allowed
  };
  // Writes one request frame (`header` then `input`) and reads one response frame, all
  // before `deadline`. `half_close` shuts the write side after the request, so that a
  // one-shot worker exits once it has answered. A response longer than `max_response`
  // bytes ends the exchange as kEnded.
  Outcome Exchange(std::string_view header, std::string_view input, Deadline deadline,
                   bool half_close, uint64_t max_response);
  // The last exchange's response payload (kResponse), and whether any response byte
  // arrived at all (a worker that died before answering sent none).
  const std::string& response() const { return response_; }
  bool answered_anything() const { return received_ > 0; }
  // Exchanges that ended with a whole response.
  uint64_t responses() const { return responses_; }

  // Ends a process that gave no usable response: closes the socket, waits for the process
  // to exit until `deadline` and SIGKILLs it then (at once when `timed_out`). Returns how
  // the conversion of `format` under `limits` ended: RESOURCE_EXHAUSTED for `timed_out`, a
  // kill at the deadline or at the CPU limit (SIGXCPU, SIGKILL; counted as a timeout),
  // INVALID_ARGUMENT for a crash on another signal, INTERNAL for an exit without a result
  // (both counted as failures).
  absl::Status Finish(bool timed_out, Deadline deadline, DocumentFormat format,
                      const ConvertLimits& limits);
  // Ends a process that answered: closes the socket, waits until `deadline`, then kills.
  void Close(Deadline deadline);

  pid_t pid() const { return pid_; }

 private:
  WorkerProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  // Closes the socket and waits for the process until `deadline` (SIGKILL first when
  // `kill_now`), then SIGKILLs it, telling whether through `killed_at_deadline`; returns its
  // wait status. Does nothing once reaped.
  int Reap(Deadline deadline, bool kill_now, bool* killed_at_deadline);

  pid_t pid_;  // -1 once reaped
  int fd_;     // -1 once closed
  std::string response_;
  uint64_t received_ = 0;
  uint64_t responses_ = 0;
};

// Process start-up and library loading are not the document's fault: a freshly started
// worker gets this much more wall clock than the document's budget.
inline constexpr std::chrono::milliseconds kWorkerStartupGrace{1000};

// The largest response a conversion under `limits` can produce: the text cap plus its map.
uint64_t MaxWorkerResponseBytes(const ConvertLimits& limits);

}  // namespace cops

#endif  // COPS_CONVERT_WORKER_PROCESS_H_
