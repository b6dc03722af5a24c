// libFuzzer entry for one converter (COPS_FUZZ_FORMAT, e.g. "pdf"), in-process path.
// Any crash, sanitizer report, hang or out-of-memory is a bug; its input goes into
// tests/convert as a regression test.
//
// DOCX and ODT are structure-aware: an input that is a zip archive (it starts "PK\3\4") goes
// to the converter as it is, which fuzzes the archive layer; any other input is taken as the
// document's XML parts, separated by NUL bytes, which the harness packs into a valid archive
// (libzip, as the converter reads it), so that mutations reach the XML parsing instead of
// breaking the archive. The parts, in order: DOCX word/document.xml, word/footnotes.xml,
// word/endnotes.xml; ODT content.xml, META-INF/manifest.xml, styles.xml (its named styles,
// which can hide text). scripts/fuzz-smoke.sh seeds
// both kinds (fuzz/fuzz_seeds.cc).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "convert/converter.h"
#include "convert/document_codec.h"
#include "convert/formats.h"
#include "tests/testing/documents.h"

namespace {

// `input` as an archive of the format's XML parts (see above).
std::string PackOfficeParts(cops::DocumentFormat format, std::string_view input) {
  static const std::vector<std::string> kDocxParts = {"word/document.xml",
                                                      "word/footnotes.xml", "word/endnotes.xml"};
  static const std::vector<std::string> kOdtParts = {"content.xml", "META-INF/manifest.xml",
                                                     "styles.xml"};
  const bool docx = format == cops::DocumentFormat::kDocx;
  const std::vector<std::string>& names = docx ? kDocxParts : kOdtParts;
  std::vector<std::pair<std::string, std::string>> entries;
  if (!docx) entries.emplace_back("mimetype", "application/vnd.oasis.opendocument.text");
  for (size_t i = 0; i < names.size(); ++i) {
    // The last part takes the rest, NUL bytes and all.
    const size_t end = i + 1 < names.size() ? input.find('\0') : std::string_view::npos;
    entries.emplace_back(names[i], std::string(input.substr(0, end)));
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  return cops::testing::MakeZip(entries, /*deflate=*/false);
}

}  // namespace

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
  std::string packed;
  if ((format == cops::DocumentFormat::kDocx || format == cops::DocumentFormat::kOdt) &&
      !input.starts_with("PK\x03\x04")) {
    packed = PackOfficeParts(format, input);
    input = packed;
  }
  if (format == cops::DocumentFormat::kAuto) {
    // copsd's own detection (no libmagic; charset statistics), which runs outside the sandbox.
    (void)cops::DetectFormatWithoutMagic(input);
  }
  auto doc = cops::ConvertInProcess(input, format, limits, options);
  if (doc.ok()) {
    // Exercise the map on the result; invariants must hold for any input.
    cops::OriginalOffsetWalker walker(*doc);  // the same answers, walking in text order
    for (uint32_t t = 0; t <= doc->text.size(); t += 1 + doc->text.size() / 16) {
      if (walker(t) != doc->OriginalOffset(t)) std::abort();
      (void)doc->PageOf(t);
    }
    for (const cops::ConvertedPart& p : doc->parts) {
      if (p.text_start > p.text_end || p.text_end > doc->text.size()) std::abort();
    }
    for (size_t i = 1; i < doc->segments.size(); ++i) {
      if (doc->segments[i].text_offset < doc->segments[i - 1].text_offset) std::abort();
    }
    // Words holding images index the text, in order, apart: the check maps them.
    uint32_t after = 0;
    for (const cops::ImageInWord& w : doc->image_in_word) {
      if (w.text_start < after || w.text_end <= w.text_start || w.text_end > doc->text.size() ||
          w.images == 0) {
        std::abort();
      }
      after = w.text_end;
    }
    // What the sandboxed worker sends back decodes to the same document.
    auto back = cops::DecodeResponse(cops::EncodeResponse(*doc));
    if (!back.ok() || back->text != doc->text || back->hidden.size() != doc->hidden.size() ||
        back->image_in_word.size() != doc->image_in_word.size()) {
      std::abort();
    }
  }
  return 0;
}
