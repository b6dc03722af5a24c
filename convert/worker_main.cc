// cops-convert-worker: converts the documents of the request frames read from stdin (format in
// convert/document_codec.h) and writes one response frame for each to stdout, until the end
// of its input. Before reading anything it confines itself (convert/worker_sandbox.h); it
// limits its own CPU time and address space before touching each input; the caller enforces
// the wall clock.
//
// Flags (set by WorkerProcess::Start):
//   --one-document        one request only: its CPU and memory limits become hard limits
//   --report-sandbox      write what of the sandbox could not be set up to stderr (which
//                         then goes to /dev/null like the libraries' messages)
//   --probe=open:PATH | --probe=socket   tests only: after entering the sandbox, try to open
//                         PATH for reading or to create a TCP socket, and exit 0 when that
//                         was allowed, 3 when refused

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "convert/converter.h"
#include "convert/document_codec.h"
#include "convert/worker_sandbox.h"
#include "core/strings.h"

namespace {

// ASan and TSan reserve terabytes of address space for their shadow memory, which an
// RLIMIT_AS of a few GiB refuses (TSan: "failed to allocate ... DTLS_NextBlock"): their
// builds convert without the memory limit.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerShadow = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerShadow = true;
#else
constexpr bool kSanitizerShadow = false;
#endif
#else
constexpr bool kSanitizerShadow = false;
#endif

// Reads exactly `n` bytes; false at end of input or on an error.
bool ReadExactly(int fd, size_t n, std::string* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, out->data() + got, n - got);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += r;
  }
  return true;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(n);
  }
  return true;
}

bool WriteFrame(const std::string& payload) {
  return WriteAll(STDOUT_FILENO, cops::EncodeFrameLength(payload.size()) + payload);
}

// Encoded (framed) before the memory limit applies: at the limit there is no memory to
// build it.
std::string* out_of_memory_frame = nullptr;

[[noreturn]] void OnOutOfMemory() {
  WriteAll(STDOUT_FILENO, *out_of_memory_frame);
  _exit(0);  // the heap may be in any state: the caller starts a fresh worker
}

// CPU time this process has used so far, whole seconds rounded up.
rlim_t CpuSecondsUsed() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<rlim_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1);
}

// Sets the soft limit, and the hard one too for a worker of one document: a long-lived
// worker raises the soft limit again for its next document (no process can raise a hard
// limit it lowered). The parent's wall clock stops a worker that ignores SIGXCPU.
bool one_document = false;
void SetLimit(int resource, rlim_t value) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0) return;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? value : std::min(value, limit.rlim_max);
  if (one_document) limit.rlim_max = limit.rlim_cur;
  setrlimit(resource, &limit);
}

// Serves requests until the end of its input: one (cops::ConvertInWorker) or many in turn
// (cops::ConvertWorkerPool). Each document gets its own CPU budget on top of what the worker
// has used so far, and the address-space limit it asks for.
int Run() {
  std::string frame, request;
  while (true) {
    if (!ReadExactly(STDIN_FILENO, sizeof(uint64_t), &frame)) return 0;  // end of requests
    const std::optional<uint64_t> size = cops::DecodeFrameLength(frame);
    if (!size.has_value() || *size > (uint64_t{1} << 32)) return 2;
    if (!ReadExactly(STDIN_FILENO, *size, &request)) return 2;
    auto req = cops::DecodeRequest(request);
    if (!req.ok()) {
      if (!WriteFrame(cops::EncodeResponse(req.status()))) return 3;
      continue;
    }
    const std::string oom = cops::EncodeResponse(absl::ResourceExhaustedError(cops::StrCat(
        cops::DocumentFormatName(req->format), ": conversion exceeded the memory limit of ",
        req->limits.max_memory_bytes, " bytes")));
    delete out_of_memory_frame;
    out_of_memory_frame = new std::string(cops::EncodeFrameLength(oom.size()) + oom);
    std::set_new_handler(OnOutOfMemory);
    SetLimit(RLIMIT_CPU, CpuSecondsUsed() + req->limits.time_budget_ms / 1000 + 1);
    if (!kSanitizerShadow && req->limits.max_memory_bytes > 0) {
      SetLimit(RLIMIT_AS, req->limits.max_memory_bytes);
    }
    absl::StatusOr<cops::ConvertedDocument> result =
        cops::ConvertInProcess(req->input, req->format, req->limits, req->options);
    if (!WriteFrame(cops::EncodeResponse(result))) return 3;
  }
}

// --probe: what a document that took over the parser could do from inside. Answers by exit
// status (it may not write files: RLIMIT_FSIZE is 0): 0 allowed, 3 refused, 2 unknown probe.
int Probe(std::string_view what) {
  int fd = -1;
  if (what.starts_with("open:")) {
    fd = open(std::string(what.substr(5)).c_str(), O_RDONLY | O_CLOEXEC);
  } else if (what == "socket") {
    fd = socket(AF_INET, SOCK_STREAM, 0);
  } else {
    return 2;
  }
  return fd >= 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  bool report = false;
  std::string_view probe;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--one-document") {
      one_document = true;
    } else if (arg == "--report-sandbox") {
      report = true;
    } else if (arg.starts_with("--probe=")) {
      probe = arg.substr(std::strlen("--probe="));
    }
  }
  // Opened before the sandbox forbids it: stderr goes here once the report is written.
  const int dev_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const cops::WorkerSandboxReport sandbox = cops::EnterWorkerSandbox();
  if (report && !sandbox.problems.empty()) {
    std::fprintf(stderr, "cops-convert-worker: sandbox incomplete (%s)%s\n",
                 sandbox.problems.c_str(),
                 sandbox.seccomp ? "; the seccomp filter still refuses sockets and exec" : "");
  }
  if (dev_null >= 0) dup2(dev_null, STDERR_FILENO);
  if (!probe.empty()) return Probe(probe);
  try {
    return Run();
  } catch (const std::exception& e) {
    // A library threw (poppler and libstdc++ may, e.g. std::bad_alloc at the memory limit).
    WriteFrame(cops::EncodeResponse(
        absl::ResourceExhaustedError(std::string("converter failed: ") + e.what())));
    return 4;
  }
}
