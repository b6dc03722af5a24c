// PDF: poppler-cpp's text extraction in reading order, page by page. Lines are rejoined
// into paragraphs (a short line ending a sentence, or a blank line, ends one), words
// hyphenated across a line end are rejoined, and optionally lines repeated at the top or
// bottom of most pages (running headers, footers, page numbers) are dropped. Each page's
// text is tagged with its 1-based page number in the segments (PageOf()); a PDF has no
// byte map, so original offsets there are text offsets.

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-page.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/formats.h"
#include "convert/text_builder.h"
#include "core/status_macros.h"

namespace cops {
namespace {

void SilentPoppler(const std::string&, void*) {}

// Typeset PDFs carry ligature glyphs (U+FB00..U+FB06) where other formats have letters.
std::string ExpandLigatures(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> kLigatures[] = {
      {"\xEF\xAC\x80", "ff"}, {"\xEF\xAC\x81", "fi"},  {"\xEF\xAC\x82", "fl"},
      {"\xEF\xAC\x83", "ffi"}, {"\xEF\xAC\x84", "ffl"}, {"\xEF\xAC\x85", "st"},
      {"\xEF\xAC\x86", "st"}};
  if (text.find("\xEF\xAC") == std::string::npos) return text;
  for (const auto& [from, to] : kLigatures) {
    size_t pos = 0;
    while ((pos = text.find(from, pos)) != std::string::npos) {
      text.replace(pos, from.size(), to);
      pos += to.size();
    }
  }
  return text;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    // Trim spaces, CR and form feeds poppler emits at page ends.
    size_t b = line.find_first_not_of(" \t\r\f");
    size_t e = line.find_last_not_of(" \t\r\f");
    lines.push_back(b == std::string::npos ? "" : line.substr(b, e - b + 1));
    pos = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// A line with digit runs folded, so "Page 3 of 9" and "Page 4 of 9" compare equal.
std::string Shape(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c >= '0' && c <= '9') {
      if (out.empty() || out.back() != '#') out.push_back('#');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

size_t FirstNonEmpty(const std::vector<std::string>& lines) {
  size_t i = 0;
  while (i < lines.size() && lines[i].empty()) ++i;
  return i;
}

// Removes the first/last line of each page when its shape recurs on at least 60% of the
// pages (and on at least 3).
void DropRepeatedMargins(std::vector<std::vector<std::string>>* pages) {
  if (pages->size() < 3) return;
  for (int pass = 0; pass < 2; ++pass) {  // 0: headers, 1: footers
    std::map<std::string, size_t> counts;
    for (const auto& lines : *pages) {
      if (lines.empty()) continue;
      const std::string& edge = pass == 0 ? lines[FirstNonEmpty(lines)] : lines.back();
      ++counts[Shape(edge)];
    }
    for (auto& lines : *pages) {
      if (lines.empty()) continue;
      const size_t idx = pass == 0 ? FirstNonEmpty(lines) : lines.size() - 1;
      const size_t n = counts[Shape(lines[idx])];
      if (n >= 3 && n * 10 >= pages->size() * 6) {
        lines.erase(lines.begin() + static_cast<long>(idx));
        while (!lines.empty() && lines.back().empty()) lines.pop_back();
      }
    }
  }
}

bool EndsWithHyphen(const std::string& s, size_t* cut) {
  // '-' after a letter, or a soft hyphen U+00AD, or U+2010 HYPHEN.
  if (s.size() >= 2 && s.back() == '-' && std::isalpha(static_cast<unsigned char>(s[s.size() - 2]))) {
    *cut = 1;
    return true;
  }
  if (s.size() >= 2 && s.compare(s.size() - 2, 2, "\xC2\xAD") == 0) {
    *cut = 2;
    return true;
  }
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xE2\x80\x90") == 0) {
    *cut = 3;
    return true;
  }
  return false;
}

bool StartsLowercase(const std::string& s) {
  return !s.empty() && s[0] >= 'a' && s[0] <= 'z';
}

bool EndsSentence(const std::string& s) {
  if (s.empty()) return false;
  const char c = s.back();
  return c == '.' || c == '!' || c == '?' || c == ':' || c == '"' ||
         (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xE2\x80\x9D") == 0);
}

// Appends one page's lines as paragraphs.
void EmitPage(const std::vector<std::string>& lines, uint32_t page, TextBuilder* out) {
  size_t longest = 0;
  for (const std::string& l : lines) longest = std::max(longest, l.size());
  bool joined_hyphen = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (line.empty()) {
      out->ParagraphBreak();
      continue;
    }
    const bool has_next = i + 1 < lines.size() && !lines[i + 1].empty();
    size_t cut = 0;
    const bool hyphen = has_next && EndsWithHyphen(line, &cut) && StartsLowercase(lines[i + 1]);
    if (hyphen) line.resize(line.size() - cut);
    if (!joined_hyphen && !out->text().empty() && out->text().back() != '\n' &&
        out->text().back() != ' ') {
      out->AppendUnmapped(" ");
    }
    out->Append(line, static_cast<uint32_t>(out->size()), page);
    joined_hyphen = hyphen;
    if (hyphen) continue;
    // A line clearly shorter than the page's text width that ends a sentence ends a
    // paragraph (the last line of a justified paragraph).
    if (EndsSentence(line) && line.size() * 4 < longest * 3) out->ParagraphBreak();
  }
  out->ParagraphBreak();
}

std::once_flag poppler_quiet_once;

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertPdf(std::string_view input, const ConvertContext& ctx) {
  std::call_once(poppler_quiet_once, [] { poppler::set_debug_error_function(SilentPoppler, nullptr); });
  if (input.substr(0, 1024).find("%PDF-") == std::string_view::npos) {
    return absl::InvalidArgumentError("pdf: not a PDF (no %PDF- header)");
  }
  if (input.size() > INT32_MAX) {
    return absl::ResourceExhaustedError("pdf: input too large for the PDF parser");
  }
  std::unique_ptr<poppler::document> pdf(
      poppler::document::load_from_raw_data(input.data(), static_cast<int>(input.size())));
  if (pdf == nullptr) {
    return absl::InvalidArgumentError("pdf: cannot parse the document (damaged or truncated)");
  }
  if (pdf->is_locked()) {
    return absl::InvalidArgumentError("pdf: document is encrypted (a password is required)");
  }
  const int pages = pdf->pages();
  if (pages <= 0) return absl::InvalidArgumentError("pdf: document has no pages");

  std::vector<std::vector<std::string>> page_lines;
  page_lines.reserve(pages);
  uint64_t total = 0;
  for (int i = 0; i < pages; ++i) {
    COPS_RETURN_IF_ERROR(ctx.CheckDeadline("pdf"));
    std::unique_ptr<poppler::page> page(pdf->create_page(i));
    if (page == nullptr) {
      page_lines.emplace_back();
      continue;
    }
    poppler::byte_array utf8 = page->text().to_utf8();
    std::string text = ExpandLigatures(std::string(utf8.begin(), utf8.end()));
    total += text.size();
    if (total > ctx.limits.max_output_bytes) return ctx.OutputTooLarge("pdf");
    page_lines.push_back(SplitLines(text));
  }
  if (ctx.options.drop_headers_footers) DropRepeatedMargins(&page_lines);

  TextBuilder out(ctx.limits.max_output_bytes);
  for (size_t i = 0; i < page_lines.size(); ++i) {
    EmitPage(page_lines[i], static_cast<uint32_t>(i + 1), &out);
  }
  if (out.overflowed()) return ctx.OutputTooLarge("pdf");
  ConvertedDocument doc;
  doc.format = DocumentFormat::kPdf;
  doc.charset = "UTF-8";
  out.Finish(&doc);
  return doc;
}

Sniff SniffPdf(const SniffedInput& in) {
  return in.mime_matches || in.input.starts_with("%PDF-") ? Sniff::kCertain : Sniff::kNo;
}

}  // namespace cops
