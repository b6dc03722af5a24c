#ifndef COPS_CONVERT_FORMATS_H_
#define COPS_CONVERT_FORMATS_H_

// Internal: what the in-process converters share (their context, the input checks) and the
// dispatch to them. The converters themselves are named by the format table
// (convert/document_format.h); Convert() and ConvertInProcess() (converter.h) dispatch to
// them after checking the input size.
//
// Thread-safety: every converter is safe to call from many threads.

#include <chrono>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/converter.h"

namespace cops {

struct ConvertContext {
  ConvertLimits limits;
  ConvertOptions options;
  std::chrono::steady_clock::time_point deadline;
  // Email: where PDF, DOCX and ODT attachments are converted; nullptr: here, in process.
  const SandboxConverter* sandbox = nullptr;

  // RESOURCE_EXHAUSTED "<format>: time budget of N ms exceeded" once past the deadline.
  absl::Status CheckDeadline(std::string_view format) const;
  // RESOURCE_EXHAUSTED "<format>: extracted text exceeds N bytes".
  absl::Status OutputTooLarge(std::string_view format) const;
  // `limits` with the time left before `deadline` as the budget (at least 1 ms), for a
  // nested conversion in another process.
  ConvertLimits LimitsLeft() const;
};

ConvertContext MakeConvertContext(const ConvertLimits& limits, const ConvertOptions& options);
// RESOURCE_EXHAUSTED when `input` exceeds limits.max_input_bytes (or 4 GiB: offsets are
// 32-bit); INVALID_ARGUMENT for a format value outside the enum.
absl::Status CheckConvertInput(std::string_view input, DocumentFormat format,
                               const ConvertLimits& limits);

// For copsd, which does not run libmagic on untrusted bytes (the worker does): the format
// DetectFormat would give to a PDF, a zip container, clean UTF-8 or input that passes
// CheckLooksLikeTextWithoutMagic as kText; kAuto for anything else (binary or random-looking
// bytes, which only libmagic can name).
DocumentFormat DetectFormatWithoutMagic(std::string_view input);
// CheckLooksLikeText (converter.h) without libmagic: refusals name the control bytes or the
// decoding statistics, not a MIME type, and binary MIME types are not looked for.
absl::Status CheckLooksLikeTextWithoutMagic(std::string_view input, DocumentFormat format);

// Dispatches on a concrete format (not kAuto) in this process: the row's converter.
absl::StatusOr<ConvertedDocument> ConvertFormat(std::string_view input, DocumentFormat format,
                                                const ConvertContext& ctx);

}  // namespace cops

#endif  // COPS_CONVERT_FORMATS_H_
