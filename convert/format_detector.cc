// DetectFormat: the sniffing hooks of the format table (convert/document_format.h), given
// libmagic's MIME type: exact content signatures first (cheap and unambiguous), then MIME types
// and light text heuristics (for LaTeX and Markdown, which libmagic calls text/plain). Clean UTF-8 skips libmagic: its text rules cost ~2 ms per call (regular
// expressions compiled per match) and name only HTML, mail and TeX, which the structural
// checks here find themselves. DetectFormatWithoutMagic (copsd): the same without libmagic,
// which parses untrusted bytes, for input that is text; the rest goes to the worker to be
// sniffed there. CheckLooksLikeText: binary data is refused before those heuristics can call
// it Markdown.

#include <magic.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "convert/charset.h"
#include "convert/converter.h"
#include "convert/formats.h"
#include "core/strings.h"

namespace cops {
namespace {

struct MagicCloser {
  void operator()(magic_set* m) const { magic_close(m); }
};

// libmagic handles are not thread-safe and costly to load: one per thread.
std::string MagicMime(std::string_view input) {
  thread_local std::unique_ptr<magic_set, MagicCloser> cookie = [] {
    std::unique_ptr<magic_set, MagicCloser> m(magic_open(MAGIC_MIME_TYPE | MAGIC_NO_CHECK_COMPRESS |
                                                         MAGIC_NO_CHECK_ELF | MAGIC_NO_CHECK_TAR));
    if (m != nullptr && magic_load(m.get(), nullptr) != 0) m.reset();
    return m;
  }();
  if (cookie == nullptr) return "";
  // libmagic reads only the first bytes it needs; bound it anyway.
  std::string_view head = input.substr(0, 1 << 20);
  const char* mime = magic_buffer(cookie.get(), head.data(), head.size());
  return mime == nullptr ? "" : mime;
}

// MIME types libmagic gives binary files that no textual format can hold.
bool IsBinaryMime(std::string_view mime) {
  static constexpr std::array<std::string_view, 5> kBinaryTopTypes = {
      "image/", "audio/", "video/", "font/", "model/"};
  for (std::string_view top : kBinaryTopTypes) {
    if (mime.starts_with(top)) return true;
  }
  static constexpr std::array<std::string_view, 26> kBinaryTypes = {
      "application/x-executable", "application/x-sharedlib", "application/x-pie-executable",
      "application/x-object", "application/x-mach-binary", "application/x-dosexec",
      "application/zip", "application/gzip", "application/x-bzip2", "application/x-xz",
      "application/zstd", "application/x-7z-compressed", "application/x-rar",
      "application/vnd.rar", "application/x-tar", "application/x-iso9660-image",
      "application/vnd.sqlite3", "application/x-sqlite3", "application/pdf",
      "application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
      "application/java-archive", "application/x-java-applet", "application/wasm",
      "application/x-lzma"};
  for (std::string_view type : kBinaryTypes) {
    if (mime == type) return true;
  }
  return mime.starts_with("application/vnd.openxmlformats") ||
         mime.starts_with("application/vnd.oasis.opendocument");
}

// Bytes no text file holds: C0 controls other than tab, line breaks, form feed and ESC
// (ISO-2022 escapes), and DEL.
bool IsControlByte(unsigned char b) {
  if (b == 0x7F) return true;
  if (b >= 0x20) return false;
  return b != '\t' && b != '\n' && b != '\v' && b != '\f' && b != '\r' && b != 0x1B;
}

// Bytes no text file holds: counted in the first 64 KiB (`head`, not cut inside a UTF-8
// sequence).
size_t CountControlBytes(std::string_view head) {
  size_t controls = 0;
  size_t i = 0;
  // Eight bytes at a time while none is below 0x20 or DEL (most words of a text).
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  for (; i + 8 <= head.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, head.data() + i, 8);
    const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
    const uint64_t x = w ^ (kOnes * 0x7F);
    const uint64_t del = (x - kOnes) & ~x & kHigh;
    if ((below_space | del) == 0) continue;
    for (size_t j = i; j < i + 8; ++j) {
      controls += IsControlByte(static_cast<unsigned char>(head[j]));
    }
  }
  for (; i < head.size(); ++i) controls += IsControlByte(static_cast<unsigned char>(head[i]));
  return controls;
}

std::string_view TextHead(std::string_view input) {
  std::string_view head = input.substr(0, 64 << 10);
  // Do not cut a UTF-8 sequence in two (at most 3 continuation bytes).
  for (int i = 0; i < 3 && head.size() < input.size() &&
                  (static_cast<unsigned char>(input[head.size()]) & 0xC0) == 0x80;
       ++i) {
    head.remove_suffix(1);
  }
  return head;
}

}  // namespace

namespace {

absl::Status CheckText(std::string_view input, DocumentFormat format, bool use_magic) {
  const DocumentFormatInfo* info = FindDocumentFormat(format);
  if (info == nullptr || !info->textual) return absl::OkStatus();
  std::string_view head = TextHead(input);
  const size_t controls = CountControlBytes(head);
  // Clean UTF-8 without control bytes is text: no charset detection, no libmagic (each costs
  // milliseconds); only suspicious input pays for them.
  if (controls == 0 && IsValidUtf8(head)) return absl::OkStatus();
  const std::string charset = DetectCharset(head);
  // Bytes that decode, but not into anything a person wrote: random or compressed data
  // without control bytes (high-bit bytes only) would otherwise pass as windows-1252, and
  // random bytes that start with a byte-order mark as UTF-16.
  if (charset.rfind("UTF-16", 0) == 0 || charset.rfind("UTF-32", 0) == 0) {
    const absl::Status decoded = CheckDecodesAsText(head, charset);
    if (decoded.ok()) return absl::OkStatus();
    return absl::InvalidArgumentError(StrCat(DocumentFormatName(format),
                                             ": input looks like random bytes (", decoded.message(),
                                             "); declare its real format"));
  }
  const bool binary = controls * 100 > head.size() || head.find('\0') != std::string_view::npos;
  const absl::Status decoded = binary ? absl::OkStatus() : CheckDecodesAsText(head, charset);
  const std::string mime = use_magic ? MagicMime(input) : "";
  if (binary || IsBinaryMime(mime)) {
    return absl::InvalidArgumentError(StrCat(
        DocumentFormatName(format), ": input looks like binary data (",
        mime.empty() ? "unknown type" : mime, ", ", controls, " control bytes in the first ",
        head.size(), "), not text; declare its real format or convert it first"));
  }
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(
        StrCat(DocumentFormatName(format), ": input looks like random or compressed bytes (",
               mime.empty() ? "unknown type" : mime, "; ", decoded.message(),
               "); declare its real format or convert it first"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLooksLikeText(std::string_view input, DocumentFormat format) {
  return CheckText(input, format, /*use_magic=*/true);
}

absl::Status CheckLooksLikeTextWithoutMagic(std::string_view input, DocumentFormat format) {
  return CheckText(input, format, /*use_magic=*/false);
}

namespace {

bool IsCleanUtf8(std::string_view head) {
  return CountControlBytes(head) == 0 && IsValidUtf8(head);
}

// `clean_text`: IsCleanUtf8(TextHead(input)), which callers may know already.
// REQUIRES for !use_magic: `input` is clean UTF-8 text or passes CheckText (kText).
DocumentFormat Detect(std::string_view input, bool use_magic, bool clean_text) {
  SniffedInput in;
  in.input = input;
  in.head = TextHead(input);
  const size_t start = in.head.find_first_not_of(" \t\r\n");
  in.trimmed = start == std::string_view::npos ? "" : in.head.substr(start);
  in.text_heuristics = clean_text || !use_magic;
  const std::string mime = in.text_heuristics ? "" : MagicMime(input);
  DocumentFormat likely = DocumentFormat::kText;  // the fallback
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    if (f.sniff == nullptr) continue;
    in.mime_matches = false;
    for (std::string_view m : f.mime_types) in.mime_matches |= !mime.empty() && mime == m;
    const Sniff sniffed = f.sniff(in);
    if (sniffed == Sniff::kCertain) return f.format;
    if (sniffed == Sniff::kLikely && likely == DocumentFormat::kText) likely = f.format;
  }
  return likely;
}

}  // namespace

DocumentFormat DetectFormat(std::string_view input) {
  return Detect(input, /*use_magic=*/true, IsCleanUtf8(TextHead(input)));
}

DocumentFormat DetectFormatWithoutMagic(std::string_view input) {
  const bool clean_text = IsCleanUtf8(TextHead(input));
  if (!clean_text && !input.starts_with("%PDF-") && !input.starts_with("PK\x03\x04") &&
      !CheckText(input, DocumentFormat::kText, /*use_magic=*/false).ok()) {
    return DocumentFormat::kAuto;
  }
  return Detect(input, /*use_magic=*/false, clean_text);
}

}  // namespace cops
