// libFuzzer entry for one converter (COPS_FUZZ_FORMAT, e.g. "pdf"), in-process path.
// Any crash, sanitizer report, hang or out-of-memory is a bug; its input goes into
// tests/convert as a regression test.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "convert/converter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cops::DocumentFormat format = [] {
    auto f = cops::ParseDocumentFormat(COPS_FUZZ_FORMAT);
    if (!f.ok()) std::abort();
    return *f;
  }();
  cops::ConvertLimits limits;
  limits.max_output_bytes = 4 << 20;
  limits.max_uncompressed_bytes = 16 << 20;
  limits.time_budget_ms = 5000;
  cops::ConvertOptions options;
  options.drop_headers_footers = size % 2 == 0;
  options.drop_quoted_lines = size % 3 == 0;
  options.drop_signature = size % 5 == 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto doc = cops::ConvertInProcess(input, format, limits, options);
  if (doc.ok()) {
    // Exercise the map on the result; invariants must hold for any input.
    for (uint32_t t = 0; t <= doc->text.size(); t += 1 + doc->text.size() / 16) {
      (void)doc->OriginalOffset(t);
      (void)doc->PageOf(t);
    }
    for (const cops::ConvertedPart& p : doc->parts) {
      if (p.text_start > p.text_end || p.text_end > doc->text.size()) std::abort();
    }
    for (size_t i = 1; i < doc->segments.size(); ++i) {
      if (doc->segments[i].text_offset < doc->segments[i - 1].text_offset) std::abort();
    }
  }
  return 0;
}
