// PDF: poppler-cpp's text extraction in reading order, page by page. Lines are rejoined
// into paragraphs (a short line ending a sentence, or a blank line, ends one), words
// hyphenated across a line end are rejoined, and optionally lines repeated at the top or
// bottom of most pages (running headers, footers, page numbers) are dropped. Each page's
// text is tagged with its 1-based page number in the segments (PageOf()); a PDF has no
// byte map, so original offsets there are text offsets.
//
// Hidden text (ConvertedDocument::hidden): a word is hidden when its font size is at most
// kTinyFontPt (1 pt, as every format: hidden_style.h), or when the page rendered at screen
// resolution shows no ink inside the word's box (white text on a white page, render mode 3,
// text painted over by a shape). The page's words come from poppler's word list, in reading
// order; they are found again in the page's extracted text, which poppler lays out
// physically (columns side by side), and marked there.

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/formats.h"
#include "convert/hidden_style.h"
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

// Byte ranges [begin, end) of one line, sorted.
using LineRanges = std::vector<std::pair<size_t, size_t>>;

// Font sizes cost text_list as much again as its words, so they are asked for only on a page
// with a word box at most this high (points). A box spans the font's ascent and descent,
// about 0.9-1.3 times the size (but a font may declare neither: its box is then no guide).
constexpr double kTinyBoxPt = 2.0;
// Pixels whose channels differ by at most this (of 255) are one colour: near-white text on
// white (at most ~6% darker) shows no ink, light grey at 90% still does (measured: 24).
constexpr int kInkDifference = 16;
// Pages are judged at screen resolution (a Letter page is ~0.5 Mpx), where anti-aliased
// text leaves ink. Rendering costs ~5-10 ms a page, several times the text extraction, most
// of it fixed (poppler parses the page and its fonts again), and up to twice that at 72 dpi:
// so each page is first screened at half of it. A word that shows ink there shows it at 72 dpi too (coarser
// pixels only average more of it away); only pages with a word that shows none are rendered
// again (10 of the 597 pages of five Debian manuals; at 18 dpi, 36 of 53 pages of two).
constexpr double kScreenDpi = 36;
constexpr double kJudgeDpi = 72;
// Larger pages are rendered at a lower resolution to bound the image (16 MB).
constexpr double kMaxRenderPixels = 4e6;
// Words whose boxes would be lower than this many pixels are not judged by colour: at
// 72 dpi, 4 pt and up (a lone period of 3 pt leaves ink of 21, barely above kInkDifference).
constexpr double kMinGlyphPixels = 4;

// Consecutive hidden words of a page in reading order, with the words next to them on the
// same line (empty when none), which tell apart repeated words when the run is found again.
struct HiddenRun {
  std::vector<std::string> words;
  std::string before;
  std::string after;
};

std::string Utf8(const poppler::ustring& s) {
  const poppler::byte_array utf8 = s.to_utf8();
  return std::string(utf8.begin(), utf8.end());
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

std::string WithoutSpaces(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!IsSpace(c)) out.push_back(c);
  }
  return out;
}

// Whether the pixels of `img` whose centres lie inside `box` (points; `scale` pixels per
// point) are not all one colour. Sets *judged to false when the box covers no pixel.
bool ShowsInk(const poppler::image& img, const poppler::rectf& box, double scale,
              bool* judged) {
  const int x0 = std::max(0, static_cast<int>(std::ceil(box.left() * scale - 0.5)));
  const int y0 = std::max(0, static_cast<int>(std::ceil(box.top() * scale - 0.5)));
  const int x1 = std::min(img.width(), static_cast<int>(std::ceil(box.right() * scale - 0.5)));
  const int y1 = std::min(img.height(), static_cast<int>(std::ceil(box.bottom() * scale - 0.5)));
  *judged = x0 < x1 && y0 < y1;
  if (!*judged) return false;
  const auto* data = reinterpret_cast<const unsigned char*>(img.const_data());
  int lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
  for (int y = y0; y < y1; ++y) {
    const unsigned char* px =
        data + static_cast<size_t>(y) * img.bytes_per_row() + static_cast<size_t>(x0) * 4;
    for (int x = x0; x < x1; ++x, px += 4) {
      for (int c = 0; c < 3; ++c) {  // ARGB32 in native order; alpha is opaque on paper
        lo[c] = std::min<int>(lo[c], px[c]);
        hi[c] = std::max<int>(hi[c], px[c]);
        if (hi[c] - lo[c] > kInkDifference) return true;
      }
    }
  }
  return false;
}

poppler::image RenderPage(const poppler::page& page, double dpi) {
  poppler::page_renderer renderer;
  // Anti-aliased glyphs leave grey pixels where thin strokes would miss every pixel centre.
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing);
  renderer.set_image_format(poppler::image::format_argb32);
  return renderer.render_page(&page, dpi, dpi);
}

// A one-line PDF in a standard font not embedded in it.
constexpr std::string_view kProbePdf =
    "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    "2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
    "3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 120 40] /Resources << /Font << /F1 "
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> /Contents 4 0 R >> endobj\n"
    "4 0 obj << /Length 34 >> stream\nBT /F1 20 Tf 10 12 Td (Ink) Tj ET\nendstream endobj\n"
    "trailer << /Root 1 0 R >>\n%%EOF\n";

// Whether this process renders text at all. Without a readable font (a worker under seccomp
// without Landlock may open no file, a host may have no fonts) every word would come out
// blank, i.e. hidden: then no word is judged by colour.
bool RendererDrawsText() {
  static const bool draws = [] {
    std::unique_ptr<poppler::document> probe(poppler::document::load_from_raw_data(
        kProbePdf.data(), static_cast<int>(kProbePdf.size())));
    if (probe == nullptr) return false;
    std::unique_ptr<poppler::page> page(probe->create_page(0));
    if (page == nullptr) return false;
    const poppler::image img = RenderPage(*page, kJudgeDpi);
    if (!img.is_valid() || img.format() != poppler::image::format_argb32) return false;
    bool judged = false;
    return ShowsInk(img, poppler::rectf(0, 0, 120, 40), 1.0, &judged);
  }();
  return draws;
}

// Whether two words sit on one text line: same direction, and the middle of one lies within
// the other across the line.
bool SameLine(const poppler::text_box& a, const poppler::text_box& b) {
  if (a.rotation() != b.rotation()) return false;
  const poppler::rectf ra = a.bbox(), rb = b.bbox();
  if (a.rotation() % 2 == 0) {
    const double mid = (rb.top() + rb.bottom()) / 2;
    return mid >= ra.top() && mid <= ra.bottom();
  }
  const double mid = (rb.left() + rb.right()) / 2;
  return mid >= ra.left() && mid <= ra.right();
}

// The extent of a word's box across its line (points): about its font size.
double LineHeight(const poppler::text_box& word) {
  const poppler::rectf box = word.bbox();
  return word.rotation() % 2 == 0 ? box.height() : box.width();
}

// The hidden words of one page, as runs in reading order.
std::vector<HiddenRun> FindHiddenRuns(const poppler::page& page) {
  const std::vector<poppler::text_box> words = page.text_list();
  if (words.empty()) return {};
  std::vector<bool> hidden(words.size(), false);
  for (size_t i = 0; i < words.size(); ++i) hidden[i] = LineHeight(words[i]) <= kTinyBoxPt;
  if (std::find(hidden.begin(), hidden.end(), true) != hidden.end()) {
    // The same words again, in the same order, with their font sizes.
    const std::vector<poppler::text_box> sized =
        page.text_list(poppler::page::text_list_include_font);
    for (size_t i = 0; i < words.size(); ++i) {
      hidden[i] = hidden[i] && sized.size() == words.size() &&
                  sized[i].get_font_size() <= kTinyFontPt + 1e-3;
    }
  }
  // candidate[i]: word i showed no ink so far. A page that cannot be rendered keeps its text
  // unjudged rather than failing.
  std::vector<bool> candidate(words.size(), false);
  for (size_t i = 0; i < words.size(); ++i) candidate[i] = !hidden[i];
  const poppler::rectf area = page.page_rect(poppler::crop_box);
  const double area_pixels = area.width() * area.height();  // at 72 dpi: a pixel per point
  for (const double wanted_dpi : {kScreenDpi, kJudgeDpi}) {
    if (std::find(candidate.begin(), candidate.end(), true) == candidate.end()) break;
    if (!RendererDrawsText()) break;
    double dpi = wanted_dpi;
    const double pixels = area_pixels * (dpi / 72) * (dpi / 72);
    if (pixels > kMaxRenderPixels) dpi *= std::sqrt(kMaxRenderPixels / pixels);
    const double scale = dpi / 72;
    const poppler::image img = RenderPage(page, dpi);
    if (!img.is_valid() || img.format() != poppler::image::format_argb32) break;
    const bool last = wanted_dpi == kJudgeDpi;
    for (size_t i = 0; i < words.size(); ++i) {
      if (!candidate[i]) continue;
      bool judged = false;
      const bool ink = ShowsInk(img, words[i].bbox(), scale, &judged);
      if (ink) candidate[i] = false;
      if (last) {
        hidden[i] = judged && !ink && LineHeight(words[i]) * scale >= kMinGlyphPixels;
      }
    }
  }
  std::vector<HiddenRun> runs;
  for (size_t i = 0; i < words.size(); ++i) {
    if (!hidden[i]) continue;
    HiddenRun run;
    if (i > 0 && SameLine(words[i - 1], words[i])) {
      run.before = WithoutSpaces(ExpandLigatures(Utf8(words[i - 1].text())));
    }
    size_t j = i;
    for (; j < words.size() && hidden[j]; ++j) {
      std::string word = WithoutSpaces(ExpandLigatures(Utf8(words[j].text())));
      if (!word.empty()) run.words.push_back(std::move(word));
    }
    if (j < words.size() && SameLine(words[j - 1], words[j])) {
      run.after = WithoutSpaces(ExpandLigatures(Utf8(words[j].text())));
    }
    if (!run.words.empty()) runs.push_back(std::move(run));
    i = j;
  }
  return runs;
}

// A page's text without its whitespace, with the line and byte of each character: words are
// found in it whatever spaces and line breaks the layout put between and inside them.
class PageChars {
 public:
  explicit PageChars(const std::vector<std::string>& lines) {
    for (size_t l = 0; l < lines.size(); ++l) {
      for (size_t b = 0; b < lines[l].size(); ++b) {
        if (IsSpace(lines[l][b])) continue;
        chars_.push_back(lines[l][b]);
        where_.emplace_back(l, b);
      }
    }
    claimed_.assign(chars_.size(), false);
  }

  // Finds `key` at or after `from`, not overlapping characters claimed before; npos if none.
  size_t Find(std::string_view key, size_t from) const {
    for (size_t pos = chars_.find(key, from); pos != std::string::npos;
         pos = chars_.find(key, pos + 1)) {
      if (std::none_of(claimed_.begin() + static_cast<long>(pos),
                       claimed_.begin() + static_cast<long>(pos + key.size()),
                       [](bool c) { return c; })) {
        return pos;
      }
    }
    return std::string::npos;
  }

  // Claims characters [begin, end) and adds their bytes to the ranges of their lines.
  void Claim(size_t begin, size_t end, std::vector<LineRanges>* ranges) {
    for (size_t i = begin; i < end; ++i) {
      claimed_[i] = true;
      const auto [line, byte] = where_[i];
      LineRanges& r = (*ranges)[line];
      if (!r.empty() && i > begin && where_[i - 1].first == line) {
        r.back().second = byte + 1;
      } else {
        r.emplace_back(byte, byte + 1);
      }
    }
  }

 private:
  std::string chars_;
  std::vector<std::pair<size_t, size_t>> where_;  // (line, byte) of each character
  std::vector<bool> claimed_;
};

// Where the runs are in the page's lines: each run is looked for with the words beside it,
// then alone, first after the previous run (the usual order), then anywhere; a run not
// found whole is looked for word by word. What is not found (a line dropped as a running
// header, text poppler laid out differently) is not marked.
std::vector<LineRanges> LocateHiddenRuns(const std::vector<std::string>& lines,
                                         const std::vector<HiddenRun>& runs) {
  std::vector<LineRanges> ranges(lines.size());
  if (runs.empty()) return ranges;
  PageChars chars(lines);
  size_t cursor = 0;
  // Looks for `before + text + after`; on success claims `text` and moves the cursor past.
  auto place = [&](std::string_view before, const std::string& text,
                   std::string_view after) {
    std::string key(before);
    key += text;
    key += after;
    for (size_t from : {cursor, size_t{0}}) {
      const size_t pos = chars.Find(key, from);
      if (pos == std::string::npos) continue;
      const size_t begin = pos + before.size();
      chars.Claim(begin, begin + text.size(), &ranges);
      cursor = begin + text.size();
      return true;
    }
    return false;
  };
  for (const HiddenRun& run : runs) {
    std::string text;
    for (const std::string& w : run.words) text += w;
    if (place(run.before, text, run.after) || place(run.before, text, "") ||
        place("", text, run.after) || place("", text, "")) {
      continue;
    }
    for (const std::string& w : run.words) place("", w, "");
  }
  for (LineRanges& r : ranges) std::sort(r.begin(), r.end());
  return ranges;
}

// Appends `line`, marking the bytes in `hidden` (past its end: ignored) as hidden.
void AppendLine(std::string_view line, const LineRanges& hidden, uint32_t page,
                TextBuilder* out) {
  size_t pos = 0;
  for (auto [begin, end] : hidden) {
    begin = std::max(begin, pos);
    end = std::min(end, line.size());
    if (begin >= end) continue;
    out->Append(line.substr(pos, begin - pos), static_cast<uint32_t>(out->size()), page);
    const uint32_t mark = static_cast<uint32_t>(out->size());
    out->Append(line.substr(begin, end - begin), mark, page);
    out->MarkHidden(mark);
    pos = end;
  }
  out->Append(line.substr(pos), static_cast<uint32_t>(out->size()), page);
}

// Appends one page's lines as paragraphs, with the hidden bytes of each line.
void EmitPage(const std::vector<std::string>& lines, const std::vector<LineRanges>& hidden,
              uint32_t page, TextBuilder* out) {
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
    AppendLine(line, hidden[i], page, out);
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
  std::vector<std::vector<HiddenRun>> hidden_runs(pages);
  const auto search_hidden_until =
      ctx.deadline - std::chrono::milliseconds(ctx.limits.time_budget_ms / 2);
  uint64_t total = 0;
  for (int i = 0; i < pages; ++i) {
    COPS_RETURN_IF_ERROR(ctx.CheckDeadline("pdf"));
    std::unique_ptr<poppler::page> page(pdf->create_page(i));
    if (page == nullptr) {
      page_lines.emplace_back();
      continue;
    }
    std::string text = ExpandLigatures(Utf8(page->text()));
    total += text.size();
    if (total > ctx.limits.max_output_bytes) return ctx.OutputTooLarge("pdf");
    page_lines.push_back(SplitLines(text));
    // Pages without text cost no rendering. Past half the time budget the rest of the pages
    // are not searched: the text matters more than the flag, and a long document that
    // converted within its budget before must still do so.
    if (ctx.options.find_hidden_text && !page_lines.back().empty() &&
        std::chrono::steady_clock::now() < search_hidden_until) {
      hidden_runs[i] = FindHiddenRuns(*page);
    }
  }
  if (ctx.options.drop_headers_footers) DropRepeatedMargins(&page_lines);

  TextBuilder out(ctx.limits.max_output_bytes);
  for (size_t i = 0; i < page_lines.size(); ++i) {
    EmitPage(page_lines[i], LocateHiddenRuns(page_lines[i], hidden_runs[i]),
             static_cast<uint32_t>(i + 1), &out);
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
