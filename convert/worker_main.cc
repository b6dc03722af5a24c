// cops-convert-worker: converts one document read from stdin (request format in
// convert/document_codec.h) and writes the result to stdout. It limits its own CPU time
// and address space before touching the input; copsd enforces the wall clock.

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <new>
#include <string>

#include "convert/converter.h"
#include "convert/document_codec.h"
#include "core/strings.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

bool ReadAll(int fd, std::string* out, uint64_t cap) {
  char buf[64 << 10];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out->append(buf, n);
    if (out->size() > cap) return true;  // the size check reports it
  }
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

// Encoded before the memory limit applies: at the limit there is no memory to build it.
std::string* out_of_memory_response = nullptr;

[[noreturn]] void OnOutOfMemory() {
  WriteAll(STDOUT_FILENO, *out_of_memory_response);
  _exit(0);
}

int Run() {
  std::string request;
  // Header first, so the limits apply before the document is even read.
  if (!ReadAll(STDIN_FILENO, &request, uint64_t{1} << 32)) return 2;
  auto req = cops::DecodeRequest(request);
  if (!req.ok()) {
    WriteAll(STDOUT_FILENO, cops::EncodeResponse(req.status()));
    return 0;
  }
  out_of_memory_response =
      new std::string(cops::EncodeResponse(absl::ResourceExhaustedError(cops::StrCat(
          cops::DocumentFormatName(req->format), ": conversion exceeded the memory limit of ",
          req->limits.max_memory_bytes, " bytes"))));
  std::set_new_handler(OnOutOfMemory);
  rlimit cpu{};
  cpu.rlim_cur = req->limits.time_budget_ms / 1000 + 1;
  cpu.rlim_max = cpu.rlim_cur + 1;  // SIGXCPU at the soft limit, SIGKILL at the hard one
  setrlimit(RLIMIT_CPU, &cpu);
  if (!kAddressSanitizer && req->limits.max_memory_bytes > 0) {
    rlimit as{req->limits.max_memory_bytes, req->limits.max_memory_bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  absl::StatusOr<cops::ConvertedDocument> result =
      cops::ConvertInProcess(req->input, req->format, req->limits, req->options);
  return WriteAll(STDOUT_FILENO, cops::EncodeResponse(result)) ? 0 : 3;
}

}  // namespace

int main() {
  try {
    return Run();
  } catch (const std::exception& e) {
    // A library threw (poppler and libstdc++ may, e.g. std::bad_alloc at the memory limit).
    WriteAll(STDOUT_FILENO, cops::EncodeResponse(absl::ResourceExhaustedError(
                                std::string("converter failed: ") + e.what())));
    return 4;
  }
}
