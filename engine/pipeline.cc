#include "engine/pipeline.h"

#include <algorithm>
#include <string>

#include "core/detect.h"
#include "core/match.h"

namespace cops {

absl::Status ValidateInput(std::string_view content, DocumentFormat format, uint64_t max_bytes) {
  if (content.empty()) return absl::InvalidArgumentError("document is empty");
  if (content.size() > max_bytes) {
    return absl::ResourceExhaustedError("document of " + std::to_string(content.size()) +
                                        " bytes exceeds the server's limit of " +
                                        std::to_string(max_bytes) + " bytes");
  }
  if (!IsDocumentFormat(static_cast<int>(format))) {
    return absl::InvalidArgumentError("unknown document format " +
                                      std::to_string(static_cast<unsigned>(format)));
  }
  return absl::OkStatus();
}

absl::Status RegisterPrint(const Fingerprinter& fingerprinter, std::string_view text,
                           DocumentFingerprint* fp) {
  return fingerprinter.Fingerprint(text, fp, RegisterFingerprintOptions(fingerprinter.params()));
}

absl::Status CheckPrint(const Fingerprinter& fingerprinter, std::string_view text,
                        uint32_t sample_size, uint64_t sample_seed, const CheckOptions& check,
                        DocumentFingerprint* fp) {
  FingerprintOptions options = CheckFingerprintOptions(fingerprinter.params());
  options.max_stem_pairs = check.stem_pair_max_lookups;
  options.short_lines = check.revision_share > 0;
  absl::Status s = fingerprinter.Fingerprint(text, fp, options);
  if (!s.ok()) return s;
  if (sample_size > 0 && sample_size < fp->chunks.size()) {
    SampleChunks(sample_size, sample_seed, fp);
  }
  return absl::OkStatus();
}

void MapToOriginal(const ConvertedDocument& converted, size_t input_size, DocumentFingerprint* fp,
                   std::vector<ExcludedRange>* excluded) {
  // The identity map (UTF-8 plain text as sent: no segment, or one from 0 to 0): every span
  // is already in the input's bytes. A check of such a text skips a binary search per unit
  // and chunk end.
  const std::vector<OffsetSegment>& segs = converted.segments;
  const bool identity = segs.empty() || (segs.size() == 1 && segs[0].text_offset == 0 &&
                                         segs[0].original_offset == 0);
  if (identity && converted.text.size() <= input_size) return;
  const uint32_t limit = static_cast<uint32_t>(std::min<size_t>(input_size, UINT32_MAX));
  // Starts and ends each come in text order within a list: a walker each.
  OriginalOffsetWalker starts(converted);
  OriginalOffsetWalker ends(converted);
  auto map = [&](uint32_t* start, uint32_t* end) {
    const uint32_t s = starts(*start);
    // The exclusive end maps through the span's last byte, which always lies in it.
    const uint32_t e = *end > *start ? ends(*end - 1) + 1 : s;
    *start = std::min(s, limit);
    *end = std::clamp(e, *start, limit);
  };
  for (Chunk& c : fp->chunks) map(&c.start, &c.end);
  for (UnitSpan& u : fp->units) map(&u.start, &u.end);
  if (excluded != nullptr) {
    for (ExcludedRange& r : *excluded) map(&r.start, &r.end);
  }
}

std::vector<Manipulation> FindTextManipulation(const ConvertedDocument& converted,
                                               size_t input_size) {
  std::vector<Manipulation> found = FindManipulation(converted.text);
  if (!converted.hidden.empty()) {
    Manipulation hidden{ManipulationKind::kHiddenText, 0, {}};
    for (const HiddenText& h : converted.hidden) {
      AddManipulationRange({h.text_start, h.text_end}, 1, &hidden);
    }
    found.push_back(std::move(hidden));
  }
  if (!converted.image_in_word.empty()) {
    Manipulation images{ManipulationKind::kImageInWord, 0, {}};
    for (const ImageInWord& w : converted.image_in_word) {
      AddManipulationRange({w.text_start, w.text_end}, w.images, &images);
    }
    found.push_back(std::move(images));
  }
  const uint32_t limit = static_cast<uint32_t>(std::min<size_t>(input_size, UINT32_MAX));
  for (Manipulation& m : found) {
    for (TextRange& r : m.ranges) {
      const uint32_t s = converted.OriginalOffset(r.start);
      const uint32_t e = r.end > r.start ? converted.OriginalOffset(r.end - 1) + 1 : s;
      r.start = std::min(s, limit);
      r.end = std::clamp(e, r.start, limit);
    }
  }
  return found;
}

void AddMarkupQuotes(std::string_view original, DocumentFormat format, bool quotes,
                     std::vector<ExcludedRange>* excluded) {
  std::vector<ExcludedRange> blocks;
  if (quotes && format == DocumentFormat::kMarkdown) {
    blocks = FindBlockQuoteLines(original);
  } else if (quotes && format == DocumentFormat::kHtml) {
    blocks = FindHtmlBlockQuotes(original);
  }
  excluded->insert(excluded->end(), blocks.begin(), blocks.end());
  NormalizeRanges(excluded);
}

}  // namespace cops
