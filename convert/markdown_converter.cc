// Markdown (CommonMark-ish, line based): headings, list markers, block quotes, table
// pipes, fences, emphasis, code spans, links and images lose their markup and keep their
// text; reference definitions and inline HTML tags are dropped. Blank lines, headings,
// list items and thematic breaks end paragraphs. Text runs map back to byte offsets.

#include <string>
#include <vector>

#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/text_builder.h"

namespace cops {
namespace {

bool IsBlank(std::string_view l) { return l.find_first_not_of(" \t\r") == std::string_view::npos; }

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// "---", "***", "___" (3+ of one char, spaces allowed): a thematic break or setext line.
bool IsRule(std::string_view l, char* kind) {
  char k = 0;
  int n = 0;
  for (char c : l) {
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c != '-' && c != '*' && c != '_' && c != '=') return false;
    if (k != 0 && c != k) return false;
    k = c;
    ++n;
  }
  *kind = k;
  return n >= 3 || (k == '=' && n >= 1);
}

// A table delimiter row: only '|', '-', ':' and spaces, with at least one '-' and '|'.
bool IsTableDelimiter(std::string_view l) {
  bool dash = false, pipe = false;
  for (char c : l) {
    if (c == '-') dash = true;
    else if (c == '|') pipe = true;
    else if (c != ':' && c != ' ' && c != '\t' && c != '\r') return false;
  }
  return dash && pipe;
}

class MarkdownScanner {
 public:
  MarkdownScanner(const ConvertedDocument& src, TextBuilder* out) : s_(src.text), src_(src), out_(out) {}

  void Run() {
    size_t pos = 0;
    std::string fence;  // open code fence marker, empty when outside
    while (pos < s_.size() && !out_->overflowed()) {
      size_t end = s_.find('\n', pos);
      if (end == std::string_view::npos) end = s_.size();
      const size_t line_start = pos;
      std::string_view line = s_.substr(pos, end - pos);
      pos = end + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

      size_t indent = line.find_first_not_of(" \t");
      std::string_view body = indent == std::string_view::npos ? "" : line.substr(indent);
      if (!fence.empty()) {
        if (body.starts_with(fence)) {
          fence.clear();
          out_->ParagraphBreak();
        } else {
          out_->Append(line, Orig(line_start));
          out_->LineBreak();
        }
        continue;
      }
      if (body.starts_with("```") || body.starts_with("~~~")) {
        fence = std::string(body.substr(0, 3));
        out_->ParagraphBreak();
        continue;
      }
      if (IsBlank(line)) {
        out_->ParagraphBreak();
        continue;
      }
      char rule;
      if (IsRule(line, &rule)) {
        // Setext underline or thematic break: either way the paragraph ends here.
        out_->ParagraphBreak();
        continue;
      }
      if (IsTableDelimiter(line)) continue;
      size_t at = line_start + (indent == std::string_view::npos ? 0 : indent);
      // Reference definition "[id]: url".
      if (body.starts_with("[") && body.find("]:") != std::string_view::npos &&
          body.find("]:") == body.find(']')) {
        continue;
      }
      // Block quote markers.
      while (!body.empty() && body[0] == '>') {
        body.remove_prefix(1);
        ++at;
        while (!body.empty() && body[0] == ' ') {
          body.remove_prefix(1);
          ++at;
        }
      }
      bool heading = false;
      if (body.starts_with("#")) {
        size_t hashes = body.find_first_not_of('#');
        if (hashes != std::string_view::npos && hashes <= 6 && body[hashes] == ' ') {
          heading = true;
          body.remove_prefix(hashes + 1);
          at += hashes + 1;
          size_t last = body.find_last_not_of("# ");
          body = body.substr(0, last == std::string_view::npos ? 0 : last + 1);
          out_->ParagraphBreak();
        }
      }
      if (!heading) {
        size_t marker = ListMarker(body);
        if (marker > 0) {
          out_->ParagraphBreak();
          body.remove_prefix(marker);
          at += marker;
        }
      }
      Inline(body, at);
      if (heading) {
        out_->ParagraphBreak();
      } else {
        Space();
      }
    }
  }

 private:
  uint32_t Orig(size_t at) const { return src_.OriginalOffset(static_cast<uint32_t>(at)); }
  void Space() {
    const std::string& t = out_->text();
    if (!t.empty() && t.back() != ' ' && t.back() != '\n') out_->AppendUnmapped(" ");
  }

  // Length of a list marker ("- ", "* ", "+ ", "12. ", "3) ", with "[ ] " task boxes).
  static size_t ListMarker(std::string_view b) {
    size_t n = 0;
    if (b.size() >= 2 && (b[0] == '-' || b[0] == '*' || b[0] == '+') && b[1] == ' ') {
      n = 2;
    } else {
      size_t d = 0;
      while (d < b.size() && d < 9 && b[d] >= '0' && b[d] <= '9') ++d;
      if (d > 0 && d + 1 < b.size() && (b[d] == '.' || b[d] == ')') && b[d + 1] == ' ') {
        n = d + 2;
      }
    }
    if (n > 0) {
      std::string_view rest = b.substr(n);
      if (rest.starts_with("[ ] ") || rest.starts_with("[x] ") || rest.starts_with("[X] ")) {
        n += 4;
      }
    }
    return n;
  }

  // Inline markup of one line's text starting at source offset `at`.
  void Inline(std::string_view t, size_t at) {
    size_t i = 0;
    size_t run = 0;  // start of pending literal text
    auto flush = [&](size_t upto) {
      if (upto > run) out_->Append(t.substr(run, upto - run), Orig(at + run));
    };
    while (i < t.size()) {
      const char c = t[i];
      if (c == '\\' && i + 1 < t.size() && std::ispunct(static_cast<unsigned char>(t[i + 1]))) {
        flush(i);
        run = i + 1;
        i += 2;
        continue;
      }
      if (c == '`') {
        size_t ticks = t.find_first_not_of('`', i) - i;
        if (i + ticks > t.size()) ticks = t.size() - i;
        size_t close = t.find(std::string(ticks, '`'), i + ticks);
        flush(i);
        if (close == std::string_view::npos) {
          run = i + ticks;
          i += ticks;
          continue;
        }
        out_->Append(t.substr(i + ticks, close - i - ticks), Orig(at + i + ticks));
        i = close + ticks;
        run = i;
        continue;
      }
      if (c == '*' || c == '~' || (c == '_' && Boundary(t, i))) {
        // Emphasis / strike-through delimiters vanish; intra-word '_' stays.
        size_t j = i;
        while (j < t.size() && t[j] == c) ++j;
        if (c == '*' && j - i == 1 && j < t.size() && t[j] == ' ' &&
            (i == 0 || t[i - 1] == ' ')) {
          ++i;  // a lone '*' between spaces is text
          continue;
        }
        flush(i);
        run = i = j;
        continue;
      }
      if (c == '!' && i + 1 < t.size() && t[i + 1] == '[') {
        flush(i);
        run = i = i + 1;
        continue;
      }
      if (c == '[') {
        // [text](url) or [text][ref]: keep text, drop the target.
        size_t close = t.find(']', i);
        if (close != std::string_view::npos && close + 1 < t.size() &&
            (t[close + 1] == '(' || t[close + 1] == '[')) {
          const char end_char = t[close + 1] == '(' ? ')' : ']';
          size_t target_end = t.find(end_char, close + 2);
          if (target_end != std::string_view::npos) {
            flush(i);
            Inline(t.substr(i + 1, close - i - 1), at + i + 1);
            i = target_end + 1;
            run = i;
            continue;
          }
        }
        flush(i);
        run = i = i + 1;
        continue;
      }
      if (c == ']') {
        flush(i);
        run = i = i + 1;
        continue;
      }
      if (c == '<') {
        // Autolink <http://...> keeps its URL; an HTML tag is dropped.
        size_t close = t.find('>', i);
        if (close != std::string_view::npos && i + 1 < t.size() &&
            (std::isalpha(static_cast<unsigned char>(t[i + 1])) || t[i + 1] == '/' ||
             t[i + 1] == '!')) {
          std::string_view inner = t.substr(i + 1, close - i - 1);
          flush(i);
          if (inner.find("://") != std::string_view::npos || inner.find('@') != std::string_view::npos) {
            out_->Append(inner, Orig(at + i + 1));
          }
          i = close + 1;
          run = i;
          continue;
        }
      }
      if (c == '|') {  // table cell separator: one space, cell padding trimmed
        size_t upto = i;
        while (upto > run && (t[upto - 1] == ' ' || t[upto - 1] == '\t')) --upto;
        flush(upto);
        Space();
        ++i;
        while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
        run = i;
        continue;
      }
      ++i;
    }
    flush(t.size());
  }

  // '_' is a delimiter only next to a word boundary (snake_case keeps its underscores).
  static bool Boundary(std::string_view t, size_t i) {
    const bool before = i == 0 || IsSpace(t[i - 1]) || std::ispunct(static_cast<unsigned char>(t[i - 1]));
    size_t j = i;
    while (j < t.size() && t[j] == '_') ++j;
    const bool after = j >= t.size() || IsSpace(t[j]) || std::ispunct(static_cast<unsigned char>(t[j]));
    return before || after;
  }

  std::string_view s_;
  const ConvertedDocument& src_;
  TextBuilder* out_;
};

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertMarkdown(std::string_view input,
                                                  const ConvertContext& ctx) {
  const ConvertedDocument src = DecodeWithMap(input, "");
  TextBuilder out(ctx.limits.max_output_bytes);
  MarkdownScanner(src, &out).Run();
  if (out.overflowed()) return ctx.OutputTooLarge("markdown");
  ConvertedDocument doc;
  doc.format = DocumentFormat::kMarkdown;
  doc.charset = src.charset;
  out.Finish(&doc);
  return doc;
}

Sniff SniffMarkdown(const SniffedInput& in) {
  // Two lines with Markdown's marks: headings, fences, task lists, links, emphasis.
  int signals = 0;
  std::string_view head = in.head;
  size_t pos = 0;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    std::string_view l = head.substr(pos, end == std::string_view::npos ? head.npos : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 1;
    if (l.starts_with("# ") || l.starts_with("## ") || l.starts_with("```") ||
        l.starts_with("- [") || l.find("](") != std::string_view::npos ||
        l.find("**") != std::string_view::npos) {
      ++signals;
    }
  }
  return signals >= 2 ? Sniff::kLikely : Sniff::kNo;
}

}  // namespace cops
