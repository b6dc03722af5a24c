#include "convert/sandbox.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "convert/document_codec.h"
#include "convert/formats.h"
#include "convert/worker_process.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {
namespace {

constexpr char kWorkerName[] = "cops-convert-worker";

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

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
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker,
                        WorkerProcess::Start(ConvertWorkerPath(), format, /*one_document=*/true));
  const auto deadline = std::chrono::steady_clock::now() + kWorkerStartupGrace +
                        std::chrono::milliseconds(limits.time_budget_ms);
  // One request, then end of input: the worker answers and exits.
  const WorkerProcess::Outcome outcome =
      worker->Exchange(EncodeRequestHeader(format, limits, options), input, deadline,
                       /*half_close=*/true, MaxWorkerResponseBytes(limits));
  if (outcome != WorkerProcess::Outcome::kResponse) {
    return worker->Finish(outcome == WorkerProcess::Outcome::kTimedOut, deadline, format, limits);
  }
  worker->Close(deadline);
  return DecodeResponse(worker->response());
}

absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits,
                                          const ConvertOptions& options) {
  if (limits.in_process) return ConvertInProcess(input, format, limits, options);
  COPS_RETURN_IF_ERROR(CheckConvertInput(input, format, limits));
  // libmagic parses untrusted bytes too: only the worker runs it. Text is recognised here;
  // anything else detected as kAuto is sniffed (and converted or refused) in the worker.
  // (Detection has checked that text is text already.)
  const bool detected = format == DocumentFormat::kAuto;
  if (detected) format = DetectFormatWithoutMagic(input);
  // Formats parsed by our own code only (the table's sandboxed flag); the rest goes to the
  // worker, and so does input detection could not name (kAuto).
  if (const DocumentFormatInfo* f = FindDocumentFormat(format); f != nullptr && !f->sandboxed) {
    if (!detected) COPS_RETURN_IF_ERROR(CheckLooksLikeTextWithoutMagic(input, format));
    return ConvertFormat(input, format, MakeConvertContext(limits, options));
  }
  return ConvertInWorker(input, format, limits, options);
}

absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits) {
  return Convert(input, format, limits, ConvertOptions{});
}

}  // namespace cops
