// DetectFormat: a few exact content checks first (cheap and unambiguous), then libmagic's
// MIME type, then light text heuristics for LaTeX and Markdown that libmagic calls
// text/plain. Clean UTF-8 skips libmagic: its text rules cost ~2 ms per call (regular
// expressions compiled per match) and name only HTML, mail and TeX, which the structural
// checks here find themselves. DetectFormatWithoutMagic (copsd): the same without libmagic,
// which parses untrusted bytes, for input that is text; the rest goes to the worker to be
// sniffed there. CheckLooksLikeText: binary data is refused before those heuristics can call
// it Markdown.

#include <magic.h>

#include <array>
#include <memory>
#include <string>

#include "convert/charset.h"
#include "convert/converter.h"
#include "convert/formats.h"
#include "core/strings.h"

namespace cops {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
bool StartsWithIgnoreCase(std::string_view s, std::string_view lower_prefix) {
  return AsciiLower(s.substr(0, lower_prefix.size())) == lower_prefix;
}
bool EqualsIgnoreCase(std::string_view s, std::string_view lower) {
  return s.size() == lower.size() && AsciiLower(s) == lower;
}

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

bool LooksLikeZipOf(std::string_view input, std::string_view mimetype_or_entry) {
  if (!StartsWith(input, "PK\x03\x04")) return false;
  return input.substr(0, 64 << 10).find(mimetype_or_entry) != std::string_view::npos;
}

bool LooksLikeEmail(std::string_view head) {
  // RFC 5322 header block: several "Name: value" lines at the top including From or
  // Received and one of Subject/Date/Message-ID/MIME-Version.
  int fields = 0;
  bool from = false, other = false;
  size_t pos = 0;
  for (int line = 0; line < 40 && pos < head.size(); ++line) {
    size_t end = head.find('\n', pos);
    std::string_view l = head.substr(pos, end == std::string_view::npos ? head.npos : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 1;
    if (l.empty() || l == "\r") break;
    if (l[0] == ' ' || l[0] == '\t') continue;  // folded
    size_t colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    if (l.substr(0, colon).find(' ') != std::string_view::npos) {
      return line == 0 && StartsWith(l, "From ");  // mbox "From " line
    }
    ++fields;
    std::string_view name = l.substr(0, colon);
    from |= EqualsIgnoreCase(name, "from") || EqualsIgnoreCase(name, "received");
    other |= EqualsIgnoreCase(name, "subject") || EqualsIgnoreCase(name, "date") ||
             EqualsIgnoreCase(name, "message-id") ||
             EqualsIgnoreCase(name, "mime-version");
  }
  return fields >= 2 && from && other;
}

// libmagic's rule for HTML: one of these tags in the first 4 KiB, any case.
bool LooksLikeHtml(std::string_view head) {
  static constexpr std::array<std::string_view, 9> kTags = {
      "<!doctype html", "<html", "<head", "<body", "<title", "<script", "<style", "<table",
      "<a href="};
  const std::string lower = AsciiLower(head.substr(0, 4096));
  for (std::string_view tag : kTags) {
    if (lower.find(tag) != std::string::npos) return true;
  }
  return false;
}

bool LooksLikeLatex(std::string_view head) {
  return head.find("\\documentclass") != std::string_view::npos ||
         head.find("\\begin{document}") != std::string_view::npos ||
         (head.find("\\section{") != std::string_view::npos &&
          head.find("\\end{") != std::string_view::npos);
}

bool LooksLikeMarkdown(std::string_view head) {
  int signals = 0;
  size_t pos = 0;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    std::string_view l = head.substr(pos, end == std::string_view::npos ? head.npos : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 1;
    if (StartsWith(l, "# ") || StartsWith(l, "## ") ||
        StartsWith(l, "```") || StartsWith(l, "- [") ||
        l.find("](") != std::string_view::npos || l.find("**") != std::string_view::npos) {
      ++signals;
    }
  }
  return signals >= 2;
}

// MIME types libmagic gives binary files that no textual format can hold.
bool IsBinaryMime(std::string_view mime) {
  static constexpr std::array<std::string_view, 5> kBinaryTopTypes = {
      "image/", "audio/", "video/", "font/", "model/"};
  for (std::string_view top : kBinaryTopTypes) {
    if (StartsWith(mime, top)) return true;
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
  return StartsWith(mime, "application/vnd.openxmlformats") ||
         StartsWith(mime, "application/vnd.oasis.opendocument");
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
  for (char c : head) controls += IsControlByte(static_cast<unsigned char>(c));
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
  if (format != DocumentFormat::kText && format != DocumentFormat::kMarkdown &&
      format != DocumentFormat::kLatex && format != DocumentFormat::kHtml) {
    return absl::OkStatus();
  }
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
  std::string_view head = TextHead(input);
  size_t start = head.find_first_not_of(" \t\r\n");
  std::string_view trimmed = start == std::string_view::npos ? "" : head.substr(start);
  if (StartsWith(input, "%PDF-")) return DocumentFormat::kPdf;
  if (LooksLikeZipOf(input, "word/document.xml")) return DocumentFormat::kDocx;
  if (LooksLikeZipOf(input, "application/vnd.oasis.opendocument.text")) {
    return DocumentFormat::kOdt;
  }
  const std::string mime = clean_text || !use_magic ? "" : MagicMime(input);
  if (mime == "application/pdf") return DocumentFormat::kPdf;
  if (mime == "application/vnd.openxmlformats-officedocument.wordprocessingml.document") {
    return DocumentFormat::kDocx;
  }
  if (mime == "application/vnd.oasis.opendocument.text") return DocumentFormat::kOdt;
  if (mime == "text/html" || StartsWithIgnoreCase(trimmed, "<!doctype html") ||
      StartsWithIgnoreCase(trimmed, "<html") ||
      ((clean_text || !use_magic) && LooksLikeHtml(head))) {
    return DocumentFormat::kHtml;
  }
  if (mime == "message/rfc822" || LooksLikeEmail(head)) return DocumentFormat::kEmail;
  if (mime == "text/x-tex" || LooksLikeLatex(head)) return DocumentFormat::kLatex;
  if (LooksLikeMarkdown(head)) return DocumentFormat::kMarkdown;
  return DocumentFormat::kText;
}

}  // namespace

DocumentFormat DetectFormat(std::string_view input) {
  return Detect(input, /*use_magic=*/true, IsCleanUtf8(TextHead(input)));
}

DocumentFormat DetectFormatWithoutMagic(std::string_view input) {
  const bool clean_text = IsCleanUtf8(TextHead(input));
  if (!clean_text && !StartsWith(input, "%PDF-") && !StartsWith(input, "PK\x03\x04") &&
      !CheckText(input, DocumentFormat::kText, /*use_magic=*/false).ok()) {
    return DocumentFormat::kAuto;
  }
  return Detect(input, /*use_magic=*/false, clean_text);
}

}  // namespace cops
