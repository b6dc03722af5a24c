#include "core/exclusions.h"

#include <algorithm>
#include <array>
#include <string>

namespace cops {
namespace {

// A quote still open this many bytes after its mark is unbalanced.
constexpr uint32_t kMaxQuoteBytes = 8 << 10;
// Longer lines are never a references heading.
constexpr size_t kMaxHeadingBytes = 80;

// The kinds of quotation, by opening mark.
enum class QuoteKind : uint8_t {
  kAscii,        // "..."
  kCurly,        // “...”
  kLow,          // „...“ or „...”
  kGuillemet,    // «...»
  kReversed,     // »...«
  kCorner,       // 「...」
  kWhiteCorner,  // 『...』
};

struct OpenQuote {
  QuoteKind kind;
  uint32_t pos;
};

// The quotation mark at text[i], its length in bytes; 0 when none.
enum class Mark : uint8_t {
  kNone,
  kAscii,
  kLeftDouble,   // “ U+201C
  kRightDouble,  // ” U+201D
  kLowDouble,    // „ U+201E
  kLeftAngle,    // « U+00AB
  kRightAngle,   // » U+00BB
  kLeftCorner,   // 「 U+300C
  kRightCorner,  // 」 U+300D
  kLeftWhite,    // 『 U+300E
  kRightWhite,   // 』 U+300F
};

Mark MarkAt(std::string_view t, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(t[i + k]); };
  if (t[i] == '"') {
    *len = 1;
    return Mark::kAscii;
  }
  if (b(0) == 0xC2 && i + 1 < t.size()) {
    *len = 2;
    if (b(1) == 0xAB) return Mark::kLeftAngle;
    if (b(1) == 0xBB) return Mark::kRightAngle;
    return Mark::kNone;
  }
  if (i + 2 >= t.size()) return Mark::kNone;
  *len = 3;
  if (b(0) == 0xE2 && b(1) == 0x80) {
    if (b(2) == 0x9C) return Mark::kLeftDouble;
    if (b(2) == 0x9D) return Mark::kRightDouble;
    if (b(2) == 0x9E) return Mark::kLowDouble;
  }
  if (b(0) == 0xE3 && b(1) == 0x80) {
    if (b(2) == 0x8C) return Mark::kLeftCorner;
    if (b(2) == 0x8D) return Mark::kRightCorner;
    if (b(2) == 0x8E) return Mark::kLeftWhite;
    if (b(2) == 0x8F) return Mark::kRightWhite;
  }
  return Mark::kNone;
}

bool IsSpaceByte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Whether the character before text[i] is a space (or the start, a no-break space).
bool SpaceBefore(std::string_view t, size_t i) {
  if (i == 0 || IsSpaceByte(t[i - 1])) return true;
  return i >= 2 && t[i - 2] == '\xC2' && t[i - 1] == '\xA0';
}

// Whether the character before text[i] lets an ASCII mark open a quote: a space, an
// opening bracket, a slash or a dash.
bool OpensAfter(std::string_view t, size_t i) {
  if (SpaceBefore(t, i)) return true;
  const char c = t[i - 1];
  if (c == '(' || c == '[' || c == '{' || c == '/') return true;
  return i >= 3 && t[i - 3] == '\xE2' && t[i - 2] == '\x80' &&
         (t[i - 1] == '\x93' || t[i - 1] == '\x94');
}

// Whether text[i] starts a space (or is the end).
bool SpaceAt(std::string_view t, size_t i) {
  if (i >= t.size() || IsSpaceByte(t[i])) return true;
  return i + 1 < t.size() && t[i] == '\xC2' && t[i + 1] == '\xA0';
}

// Whether the line break at text[i] ends a paragraph (only blanks before the next break).
bool ParagraphBreakAt(std::string_view t, size_t i) {
  for (size_t j = i + 1; j < t.size(); ++j) {
    if (t[j] == '\n') return true;
    if (t[j] != ' ' && t[j] != '\t' && t[j] != '\r') return false;
  }
  return false;
}

// Closes the innermost open quote of one of `kinds`: emits it and pops it with everything
// opened inside it (unbalanced). False when none is open.
template <size_t N>
bool CloseQuote(const std::array<QuoteKind, N>& kinds, uint32_t end, std::vector<OpenQuote>* stack,
                std::vector<ExcludedRange>* out) {
  for (size_t j = stack->size(); j-- > 0;) {
    if (std::find(kinds.begin(), kinds.end(), (*stack)[j].kind) == kinds.end()) continue;
    out->push_back({(*stack)[j].pos, end, Exclusion::kQuote});
    stack->resize(j);
    return true;
  }
  return false;
}

void FindInlineQuotes(std::string_view t, std::vector<ExcludedRange>* out) {
  std::vector<OpenQuote> stack;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\n') {
      if (!stack.empty() && ParagraphBreakAt(t, i)) stack.clear();
      continue;
    }
    size_t len = 0;
    const Mark mark = MarkAt(t, i, &len);
    if (mark == Mark::kNone) continue;
    const auto pos = static_cast<uint32_t>(i);
    const auto end = static_cast<uint32_t>(i + len);
    // Quotes open too long are unbalanced: the oldest are at the bottom.
    auto stale = std::find_if(stack.begin(), stack.end(),
                              [pos](const OpenQuote& q) { return pos - q.pos <= kMaxQuoteBytes; });
    stack.erase(stack.begin(), stale);
    auto open = [&](QuoteKind kind) { stack.push_back({kind, pos}); };
    switch (mark) {
      case Mark::kAscii: {
        const bool can_close = !SpaceBefore(t, i);
        const bool can_open = OpensAfter(t, i) && !SpaceAt(t, i + 1);
        if (can_close && CloseQuote(std::array{QuoteKind::kAscii}, end, &stack, out)) break;
        if (!can_open) break;
        // ASCII quotes cannot nest: an open one that this mark cannot close was unbalanced.
        for (size_t j = 0; j < stack.size(); ++j) {
          if (stack[j].kind == QuoteKind::kAscii) {
            stack.resize(j);
            break;
          }
        }
        open(QuoteKind::kAscii);
        break;
      }
      case Mark::kLeftDouble:  // closes „ (German), else opens (English)
        if (!CloseQuote(std::array{QuoteKind::kLow}, end, &stack, out)) open(QuoteKind::kCurly);
        break;
      case Mark::kRightDouble:
        CloseQuote(std::array{QuoteKind::kCurly, QuoteKind::kLow}, end, &stack, out);
        break;
      case Mark::kLowDouble:
        open(QuoteKind::kLow);
        break;
      case Mark::kLeftAngle:  // closes »...« (German), else opens «...» (French)
        if (!CloseQuote(std::array{QuoteKind::kReversed}, end, &stack, out)) {
          open(QuoteKind::kGuillemet);
        }
        break;
      case Mark::kRightAngle:
        if (!CloseQuote(std::array{QuoteKind::kGuillemet}, end, &stack, out)) {
          open(QuoteKind::kReversed);
        }
        break;
      case Mark::kLeftCorner:
        open(QuoteKind::kCorner);
        break;
      case Mark::kRightCorner:
        CloseQuote(std::array{QuoteKind::kCorner}, end, &stack, out);
        break;
      case Mark::kLeftWhite:
        open(QuoteKind::kWhiteCorner);
        break;
      case Mark::kRightWhite:
        CloseQuote(std::array{QuoteKind::kWhiteCorner}, end, &stack, out);
        break;
      case Mark::kNone:
        break;
    }
    i += len - 1;
  }
}

// Lower case of ASCII, Latin-1 capitals (À..Þ) and Cyrillic capitals (А..Я), the letters of
// the heading names below; other bytes unchanged.
std::string LowerHeading(std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = static_cast<unsigned char>(out[i]);
    if (c >= 'A' && c <= 'Z') {
      out[i] = static_cast<char>(c + 32);
    } else if (i + 1 < out.size()) {
      auto d = static_cast<unsigned char>(out[i + 1]);
      if ((c == 0xC3 && d >= 0x80 && d <= 0x9E && d != 0x97) ||
          (c == 0xD0 && d >= 0x90 && d <= 0x9F)) {
        out[i + 1] = static_cast<char>(d + 0x20);
      } else if (c == 0xD0 && d >= 0xA0 && d <= 0xAF) {
        out[i] = '\xD1';
        out[i + 1] = static_cast<char>(d - 0x20);
      }
      if (c >= 0xC0) ++i;
    }
  }
  return out;
}

// A table, one line of names after another.
// clang-format off
constexpr std::string_view kReferenceHeadings[] = {
    "references", "reference list", "list of references", "references cited",
    "references and notes", "notes and references", "bibliography", "select bibliography",
    "selected bibliography", "works cited", "literature cited", "cited literature",
    "cited works", "sources cited", "literature", "literatur", "literaturverzeichnis",
    "literaturangaben", "quellenverzeichnis", "quellen", "bibliographie", "références",
    "références bibliographiques", "bibliografía", "referencias",
    "referencias bibliográficas", "bibliografia", "riferimenti bibliografici", "riferimenti",
    "referências", "referências bibliográficas", "literatuur", "literatuurlijst",
    "referenser", "litteratur", "bibliografie", "literatura", "список литературы",
    "литература", "参考文献"};
// clang-format on

std::string_view Trim(std::string_view s, std::string_view chars = " \t\r") {
  const size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

// The title a heading line carries: the argument of a LaTeX sectioning command, else the line
// without Markdown marks and section numbering.
std::string_view HeadingTitle(std::string_view line) {
  line = Trim(line);
  if (line.starts_with('\\')) {
    for (std::string_view cmd : {"\\section", "\\subsection", "\\chapter", "\\paragraph"}) {
      if (!line.starts_with(cmd)) continue;
      std::string_view rest = line.substr(cmd.size());
      if (rest.starts_with('*')) rest.remove_prefix(1);
      if (!rest.starts_with('{') || !rest.ends_with('}')) return {};
      return Trim(rest.substr(1, rest.size() - 2));
    }
    return {};
  }
  line = Trim(line, " \t\r#*_");
  // Section numbering: "7", "7.", "7.1", "VII.", "A." followed by a space.
  const size_t space = line.find(' ');
  if (space != std::string_view::npos) {
    const std::string_view first = line.substr(0, space);
    const bool numeric = first.find_first_not_of("0123456789.") == std::string_view::npos &&
                         first.find_first_of("0123456789") != std::string_view::npos;
    const bool roman =
        first.size() >= 2 && first.back() == '.' &&
        first.substr(0, first.size() - 1).find_first_not_of("IVXLC") == std::string_view::npos;
    const bool letter = first.size() == 2 && first[0] >= 'A' && first[0] <= 'Z' && first[1] == '.';
    if (numeric || roman || letter) line = Trim(line.substr(space + 1));
  }
  return Trim(line, " \t:.*_");
}

bool IsReferencesHeading(std::string_view line) {
  if (line.size() > kMaxHeadingBytes) return false;
  const std::string_view title = HeadingTitle(line);
  if (title.empty()) return false;
  // One space between words, whatever the line had.
  std::string words;
  for (char c : title) {
    if (c == ' ' || c == '\t') {
      if (!words.empty() && words.back() != ' ') words += ' ';
    } else {
      words += c;
    }
  }
  const std::string lower = LowerHeading(words);
  return std::find(std::begin(kReferenceHeadings), std::end(kReferenceHeadings), lower) !=
         std::end(kReferenceHeadings);
}

}  // namespace

std::string_view ExclusionName(Exclusion e) {
  switch (e) {
    case Exclusion::kNone:
      return "";
    case Exclusion::kQuote:
      return "quote";
    case Exclusion::kReferences:
      return "references";
    case Exclusion::kTemplate:
      return "template";
    case Exclusion::kShortMatch:
      return "short_match";
    case Exclusion::kCommonPhrase:
      return "common_phrase";
  }
  return "";
}

std::vector<ExcludedRange> FindBlockQuoteLines(std::string_view text) {
  std::vector<ExcludedRange> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t", start);
    if (first < end && text[first] == '>') {
      size_t stop = end;
      if (stop > start && text[stop - 1] == '\r') --stop;
      out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(stop), Exclusion::kQuote});
    }
    start = end + 1;
  }
  return out;
}

std::vector<ExcludedRange> FindQuotes(std::string_view text) {
  std::vector<ExcludedRange> out = FindBlockQuoteLines(text);
  FindInlineQuotes(text, &out);
  NormalizeRanges(&out);
  return out;
}

std::vector<ExcludedRange> FindHtmlBlockQuotes(std::string_view html) {
  const std::string lower = LowerHeading(html);  // tag names in any case
  std::vector<ExcludedRange> out;
  constexpr std::string_view kOpen = "<blockquote", kClose = "</blockquote";
  auto is_tag_end = [&](size_t i) {
    return i >= lower.size() || lower[i] == '>' || IsSpaceByte(lower[i]) || lower[i] == '/';
  };
  size_t depth = 0, start = 0;
  for (size_t i = lower.find('<'); i != std::string::npos; i = lower.find('<', i + 1)) {
    const std::string_view at = std::string_view(lower).substr(i);
    if (at.starts_with(kOpen) && is_tag_end(i + kOpen.size())) {
      if (depth++ == 0) start = i;
    } else if (at.starts_with(kClose) && is_tag_end(i + kClose.size()) && depth > 0) {
      if (--depth == 0) {
        const size_t gt = lower.find('>', i);
        const size_t end = gt == std::string::npos ? lower.size() : gt + 1;
        out.push_back(
            {static_cast<uint32_t>(start), static_cast<uint32_t>(end), Exclusion::kQuote});
      }
    }
  }
  if (depth > 0) {
    out.push_back(
        {static_cast<uint32_t>(start), static_cast<uint32_t>(lower.size()), Exclusion::kQuote});
  }
  return out;
}

std::optional<ExcludedRange> FindReferences(std::string_view text) {
  std::optional<ExcludedRange> found;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (IsReferencesHeading(text.substr(start, end - start))) {
      found = ExcludedRange{static_cast<uint32_t>(start), static_cast<uint32_t>(text.size()),
                            Exclusion::kReferences};
    }
    start = end + 1;
  }
  constexpr std::string_view kBegin = "\\begin{thebibliography}";
  constexpr std::string_view kEnd = "\\end{thebibliography}";
  if (const size_t b = text.find(kBegin); b != std::string_view::npos) {
    const size_t e = text.find(kEnd, b);
    const auto end =
        static_cast<uint32_t>(e == std::string_view::npos ? text.size() : e + kEnd.size());
    const auto begin = static_cast<uint32_t>(b);
    if (!found) {
      found = ExcludedRange{begin, end, Exclusion::kReferences};
    } else {
      found->start = std::min(found->start, begin);
      found->end = std::max(found->end, end);
    }
  }
  return found;
}

std::vector<ExcludedRange> FindExclusions(std::string_view text, const TextExclusions& which) {
  std::vector<ExcludedRange> out;
  if (which.quotes) out = FindQuotes(text);
  if (which.references) {
    if (std::optional<ExcludedRange> r = FindReferences(text)) out.push_back(*r);
  }
  NormalizeRanges(&out);
  return out;
}

void NormalizeRanges(std::vector<ExcludedRange>* ranges) {
  std::erase_if(*ranges, [](const ExcludedRange& r) { return r.end <= r.start; });
  std::stable_sort(
      ranges->begin(), ranges->end(),
      [](const ExcludedRange& a, const ExcludedRange& b) { return a.start < b.start; });
  std::vector<ExcludedRange> out;
  out.reserve(ranges->size());
  for (ExcludedRange r : *ranges) {
    if (!out.empty()) {
      ExcludedRange& last = out.back();
      if (r.reason == last.reason && r.start <= last.end) {
        last.end = std::max(last.end, r.end);
        continue;
      }
      if (r.start < last.end) r.start = last.end;  // the first keeps the overlap
      if (r.end <= r.start) continue;
    }
    out.push_back(r);
  }
  *ranges = std::move(out);
}

void ExcludedUnits(std::span<const UnitSpan> units, std::span<const ExcludedRange> ranges,
                   std::vector<Exclusion>* out) {
  out->assign(units.size(), Exclusion::kNone);
  if (ranges.empty()) return;
  for (size_t i = 0; i < units.size(); ++i) {
    const UnitSpan& u = units[i];
    // The first range ending after the unit starts (ends increase: ranges are disjoint).
    auto it = std::upper_bound(ranges.begin(), ranges.end(), u.start,
                               [](uint32_t pos, const ExcludedRange& r) { return pos < r.end; });
    if (it != ranges.end() && it->start < std::max(u.end, u.start + 1)) (*out)[i] = it->reason;
  }
}

}  // namespace cops
