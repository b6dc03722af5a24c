#include "convert/converter.h"

#include <algorithm>
#include <array>
#include <optional>

#include "convert/formats.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {
const DocumentFormatInfo* FindDocumentFormat(DocumentFormat format) {
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    if (f.format == format) return &f;
  }
  return nullptr;
}

bool IsDocumentFormat(int value) {
  return value >= 0 && value <= UINT8_MAX &&
         FindDocumentFormat(static_cast<DocumentFormat>(value)) != nullptr;
}

std::string DocumentFormatNames(std::string_view separator) {
  std::string out;
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    if (!out.empty()) out += separator;
    out += f.name;
  }
  return out;
}

std::optional<DocumentFormat> DocumentFormatOfMimeType(std::string_view media_type) {
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    for (std::string_view m : f.mime_types) {
      if (!m.empty() && m == media_type) return f.format;
    }
  }
  return std::nullopt;
}

std::string DocumentMimeTypes(std::string_view separator) {
  std::string out;
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    for (std::string_view m : f.mime_types) {
      if (m.empty()) continue;
      if (!out.empty()) out += separator;
      out += m;
    }
  }
  return out;
}

bool SpansIndexExtractedText(DocumentFormat format) {
  const DocumentFormatInfo* f = FindDocumentFormat(format);
  return f != nullptr && f->offsets == ReportOffsets::kExtractedText;
}

ConvertContext MakeConvertContext(const ConvertLimits& limits, const ConvertOptions& options) {
  ConvertContext ctx;
  ctx.limits = limits;
  ctx.options = options;
  ctx.deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.time_budget_ms);
  return ctx;
}

absl::Status CheckConvertInput(std::string_view input, DocumentFormat format,
                        const ConvertLimits& limits) {
  const uint64_t cap = std::min<uint64_t>(limits.max_input_bytes, UINT32_MAX);
  if (input.size() > cap) {
    return absl::ResourceExhaustedError(StrCat(DocumentFormatName(format), ": input of ",
                                               input.size(), " bytes exceeds the limit of ", cap,
                                               " bytes"));
  }
  if (!IsDocumentFormat(static_cast<int>(format))) {
    return absl::InvalidArgumentError(StrCat("unknown document format ", static_cast<int>(format)));
  }
  return absl::OkStatus();
}

std::string_view DocumentFormatName(DocumentFormat f) {
  const DocumentFormatInfo* info = FindDocumentFormat(f);
  return info == nullptr ? "unknown" : info->name;
}

absl::StatusOr<DocumentFormat> ParseDocumentFormat(std::string_view name) {
  const std::string lower = AsciiLower(name);
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    if (lower == f.name) return f.format;
    for (std::string_view alias : f.aliases) {
      if (!alias.empty() && lower == alias) return f.format;
    }
  }
  return absl::InvalidArgumentError(
      StrCat("unknown document format \"", name, "\" (expected ", DocumentFormatNames(), ")"));
}

namespace {

// The segment containing text_offset, or nullptr when there is no map.
const OffsetSegment* FindSegment(const std::vector<OffsetSegment>& segments,
                                 uint32_t text_offset, const OffsetSegment** next) {
  *next = nullptr;
  if (segments.empty()) return nullptr;
  auto it = std::upper_bound(
      segments.begin(), segments.end(), text_offset,
      [](uint32_t t, const OffsetSegment& s) { return t < s.text_offset; });
  if (it != segments.end()) *next = &*it;
  if (it == segments.begin()) return &*it;  // before the first segment
  return &*(it - 1);
}

// text_offset's place in the original, given its segment and the one after (FindSegment).
uint32_t MapInSegment(const OffsetSegment* seg, const OffsetSegment* next, uint32_t text_offset) {
  if (seg == nullptr) return text_offset;
  if (text_offset <= seg->text_offset) return seg->original_offset;
  uint64_t original = uint64_t{seg->original_offset} + (text_offset - seg->text_offset);
  // A segment's text may be longer than its source (a byte that became a multi-byte
  // character): never run into the next segment's source.
  if (next != nullptr && next->original_offset > seg->original_offset &&
      original >= next->original_offset) {
    original = next->original_offset - 1;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(original, UINT32_MAX));
}

}  // namespace

uint32_t ConvertedDocument::OriginalOffset(uint32_t text_offset) const {
  const OffsetSegment* next;
  const OffsetSegment* seg = FindSegment(segments, text_offset, &next);
  return MapInSegment(seg, next, text_offset);
}

uint32_t OriginalOffsetWalker::operator()(uint32_t text_offset) {
  if (segments_.empty()) return text_offset;
  const size_t n = segments_.size();
  if (after_ > 0 && segments_[after_ - 1].text_offset > text_offset) {
    // Backwards: search the segments before.
    after_ = static_cast<size_t>(
        std::upper_bound(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(after_),
                         text_offset,
                         [](uint32_t t, const OffsetSegment& s) { return t < s.text_offset; }) -
        segments_.begin());
  } else {
    // Forwards: a few steps, then a search of the rest.
    for (int steps = 0; after_ < n && segments_[after_].text_offset <= text_offset; ++steps) {
      if (steps == 8) {
        after_ = static_cast<size_t>(
            std::upper_bound(segments_.begin() + static_cast<ptrdiff_t>(after_), segments_.end(),
                             text_offset,
                             [](uint32_t t, const OffsetSegment& s) { return t < s.text_offset; }) -
            segments_.begin());
        break;
      }
      ++after_;
    }
  }
  // As FindSegment: before the first segment, the first is both the segment and the next.
  const OffsetSegment* next = after_ < n ? &segments_[after_] : nullptr;
  const OffsetSegment* seg = after_ == 0 ? &segments_[0] : &segments_[after_ - 1];
  return MapInSegment(seg, next, text_offset);
}

uint32_t ConvertedDocument::PageOf(uint32_t text_offset) const {
  const OffsetSegment* next;
  const OffsetSegment* seg = FindSegment(segments, text_offset, &next);
  return seg == nullptr ? 0 : seg->page;
}

absl::Status ConvertContext::CheckDeadline(std::string_view format) const {
  if (std::chrono::steady_clock::now() <= deadline) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      StrCat(format, ": time budget of ", limits.time_budget_ms, " ms exceeded"));
}

absl::Status ConvertContext::OutputTooLarge(std::string_view format) const {
  return absl::ResourceExhaustedError(
      StrCat(format, ": extracted text exceeds the limit of ", limits.max_output_bytes, " bytes"));
}

ConvertLimits ConvertContext::LimitsLeft() const {
  ConvertLimits left = limits;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  left.time_budget_ms = static_cast<uint32_t>(std::clamp<int64_t>(ms.count(), 1, UINT32_MAX));
  left.in_process = false;
  return left;
}

absl::StatusOr<ConvertedDocument> ConvertFormat(std::string_view input, DocumentFormat format,
                                                const ConvertContext& ctx) {
  const DocumentFormatInfo* f = FindDocumentFormat(format);
  if (f != nullptr && f->convert != nullptr) return f->convert(input, ctx);
  return absl::InvalidArgumentError(StrCat("unknown document format ", static_cast<int>(format)));
}

absl::StatusOr<ConvertedDocument> ConvertEmailInProcess(std::string_view input,
                                                        const ConvertLimits& limits,
                                                        const ConvertOptions& options,
                                                        const SandboxConverter& sandbox) {
  COPS_RETURN_IF_ERROR(CheckConvertInput(input, DocumentFormat::kEmail, limits));
  ConvertContext ctx = MakeConvertContext(limits, options);
  ctx.sandbox = &sandbox;
  return ConvertEmail(input, ctx);
}

absl::StatusOr<ConvertedDocument> ConvertInProcess(std::string_view input,
                                                   DocumentFormat format,
                                                   const ConvertLimits& limits,
                                                   const ConvertOptions& options) {
  COPS_RETURN_IF_ERROR(CheckConvertInput(input, format, limits));
  if (format == DocumentFormat::kAuto) format = DetectFormat(input);
  COPS_RETURN_IF_ERROR(CheckLooksLikeText(input, format));
  return ConvertFormat(input, format, MakeConvertContext(limits, options));
}

}  // namespace cops
