// LaTeX: a single left-to-right scan (no recursion, so hostile nesting cannot exhaust the
// stack). The preamble, comments, math (inline, display and math environments) and
// commands are removed; the text arguments of sectioning, emphasis and similar commands
// are kept, as is the argument of any unknown command (losing a macro's name is better
// than losing its text); reference-like commands (\cite, \ref, \label, ...) are dropped
// with their arguments. Blank lines and sectioning end paragraphs. Every text run maps
// back to its byte offset in the source.

#include <cstring>
#include <string>
#include <vector>

#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/text_builder.h"

namespace cops {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool OneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

bool IsSectioning(std::string_view name) {
  std::string_view base = name;
  if (!base.empty() && base.back() == '*') base.remove_suffix(1);
  return OneOf(base, {"part", "chapter", "section", "subsection", "subsubsection", "paragraph",
                      "subparagraph", "title", "author", "date", "caption", "abstract"});
}

// Commands whose arguments are not running text.
bool DropsArguments(std::string_view name) {
  if (name.starts_with("cite") || name.ends_with("ref") || name.starts_with("bibliography")) {
    return true;
  }
  return OneOf(name, {"label", "includegraphics", "input", "include", "url", "vspace",
                      "hspace", "vspace*", "hspace*", "newcommand", "renewcommand",
                      "providecommand", "setlength", "addtolength", "setcounter",
                      "usepackage", "documentclass", "newenvironment", "renewenvironment",
                      "pagestyle", "thispagestyle", "addcontentsline", "bibitem", "color",
                      "definecolor", "hypersetup", "graphicspath", "index", "nocite",
                      "newtheorem", "numberwithin", "DeclareMathOperator", "maketitle",
                      "tableofcontents", "label*", "footnotemark", "linewidth", "textwidth"});
}

bool IsMathEnvironment(std::string_view env) {
  std::string_view base = env;
  if (!base.empty() && base.back() == '*') base.remove_suffix(1);
  return OneOf(base, {"equation", "align", "alignat", "gather", "multline", "eqnarray",
                      "displaymath", "math", "flalign", "split", "dmath"});
}

// Environments skipped whole: not prose.
bool IsSkippedEnvironment(std::string_view env) {
  return IsMathEnvironment(env) ||
         OneOf(env, {"comment", "tikzpicture", "thebibliography", "filecontents", "lstlisting",
                     "verbatim", "minted", "tabular-spec"});
}

// Combining mark for an accent command (\'e -> e + U+0301).
const char* CombiningMark(char accent) {
  switch (accent) {
    case '\'': return "\xCC\x81";
    case '`': return "\xCC\x80";
    case '^': return "\xCC\x82";
    case '"': return "\xCC\x88";
    case '~': return "\xCC\x83";
    case '=': return "\xCC\x84";
    case '.': return "\xCC\x87";
    default: return nullptr;
  }
}

class LatexScanner {
 public:
  LatexScanner(const ConvertedDocument& src, TextBuilder* out)
      : s_(src.text), src_(src), out_(out) {}

  void Run() {
    size_t begin = s_.find("\\begin{document}");
    pos_ = begin == std::string_view::npos ? 0 : begin + std::strlen("\\begin{document}");
    size_t end = s_.find("\\end{document}", pos_);
    end_ = end == std::string_view::npos ? s_.size() : end;
    while (pos_ < end_ && !out_->overflowed()) Step();
  }

 private:
  uint32_t Orig(size_t at) const { return src_.OriginalOffset(static_cast<uint32_t>(at)); }
  void Emit(std::string_view text, size_t at) { out_->Append(text, Orig(at)); }
  void Space() {
    const std::string& t = out_->text();
    if (!t.empty() && t.back() != ' ' && t.back() != '\n') out_->AppendUnmapped(" ");
  }

  // Skips a balanced {...} or [...] group starting at pos_ (which holds the opener).
  void SkipGroup(char open, char close) {
    int depth = 0;
    while (pos_ < end_) {
      char c = s_[pos_];
      if (c == '\\') {
        pos_ += 2;
        continue;
      }
      ++pos_;
      if (c == open) ++depth;
      if (c == close && --depth == 0) return;
    }
  }

  void SkipSpaces() {
    while (pos_ < end_ && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }

  // Skips every [..] and {..} argument right after a command.
  void SkipArguments() {
    while (true) {
      size_t save = pos_;
      SkipSpaces();
      if (pos_ < end_ && s_[pos_] == '[') {
        SkipGroup('[', ']');
      } else if (pos_ < end_ && s_[pos_] == '{') {
        SkipGroup('{', '}');
      } else {
        pos_ = save;
        return;
      }
    }
  }

  void SkipOptional() {
    size_t save = pos_;
    SkipSpaces();
    if (pos_ < end_ && s_[pos_] == '[') {
      SkipGroup('[', ']');
    } else {
      pos_ = save;
    }
  }

  // Reads "{name}" after \begin or \end.
  std::string_view ReadEnvName() {
    SkipSpaces();
    if (pos_ >= end_ || s_[pos_] != '{') return "";
    size_t close = s_.find('}', pos_);
    if (close == std::string_view::npos || close >= end_) return "";
    std::string_view env = s_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    return env;
  }

  // Skips to just past `terminator` (or the end).
  void SkipPast(std::string_view terminator) {
    size_t at = s_.find(terminator, pos_);
    pos_ = (at == std::string_view::npos || at >= end_) ? end_ : at + terminator.size();
  }

  // Skips inline math after a '$' at pos_ (or "$$" display math).
  void SkipDollarMath() {
    const bool display = pos_ + 1 < end_ && s_[pos_ + 1] == '$';
    pos_ += display ? 2 : 1;
    while (pos_ < end_) {
      if (s_[pos_] == '\\') {
        pos_ += 2;
        continue;
      }
      if (s_[pos_] == '$') {
        pos_ += (display && pos_ + 1 < end_ && s_[pos_ + 1] == '$') ? 2 : 1;
        return;
      }
      ++pos_;
    }
  }

  void Command() {
    const size_t start = pos_;
    ++pos_;  // backslash
    if (pos_ >= end_) return;
    const char c = s_[pos_];
    if (!IsLetter(c)) {
      ++pos_;
      switch (c) {
        case '\\':
          SkipOptional();
          out_->LineBreak();
          return;
        case '(':
          SkipPast("\\)");
          return;
        case '[':
          SkipPast("\\]");
          return;
        case '%': case '&': case '$': case '#': case '_': case '{': case '}':
          Emit(s_.substr(pos_ - 1, 1), pos_ - 1);
          return;
        case ',': case ';': case ' ': case '!': case ':':
          Space();
          return;
        case '-':
          return;  // discretionary hyphen
        default:
          break;
      }
      if (const char* mark = CombiningMark(c)) {
        // \'e or \'{e}
        size_t letter = pos_;
        if (letter < end_ && s_[letter] == '{') ++letter;
        if (letter < end_ && IsLetter(s_[letter])) {
          Emit(s_.substr(letter, 1), start);
          out_->AppendUnmapped(mark);
          pos_ = letter + 1;
          if (pos_ < end_ && s_[pos_] == '}' && s_[letter - 1] == '{') ++pos_;
        }
      }
      return;
    }
    size_t name_end = pos_;
    while (name_end < end_ && IsLetter(s_[name_end])) ++name_end;
    if (name_end < end_ && s_[name_end] == '*') ++name_end;
    const std::string_view name = s_.substr(pos_, name_end - pos_);
    pos_ = name_end;

    if (name == "begin" || name == "end") {
      const std::string_view env = ReadEnvName();
      if (name == "begin" && IsSkippedEnvironment(env)) {
        SkipPast(std::string("\\end{") + std::string(env) + "}");
        return;
      }
      if (name == "begin") SkipArguments();  // e.g. \begin{tabular}{ll}
      if (env != "emph" && env != "center") out_->ParagraphBreak();
      return;
    }
    if (name == "par") {
      out_->ParagraphBreak();
      return;
    }
    if (name == "item") {
      out_->ParagraphBreak();
      SkipOptional();
      return;
    }
    if (name == "href") {  // \href{url}{text}: keep the text
      SkipSpaces();
      if (pos_ < end_ && s_[pos_] == '{') SkipGroup('{', '}');
      return;
    }
    if (DropsArguments(name)) {
      SkipArguments();
      return;
    }
    if (IsSectioning(name)) {
      out_->ParagraphBreak();
      SkipOptional();
      SkipSpaces();
      if (pos_ < end_ && s_[pos_] == '{') {
        ++pos_;
        groups_.push_back(kCloseParagraph);
      }
      return;
    }
    // Unknown or emphasis-like command: drop its name and options, keep brace text.
    SkipOptional();
  }

  void Step() {
    const char c = s_[pos_];
    switch (c) {
      case '%': {
        size_t nl = s_.find('\n', pos_);
        pos_ = nl == std::string_view::npos ? end_ : nl + 1;
        SkipSpaces();  // TeX drops the line end and the next line's indentation
        return;
      }
      case '\\':
        Command();
        return;
      case '$':
        SkipDollarMath();
        return;
      case '{':
        ++pos_;
        groups_.push_back(kPlain);
        return;
      case '}':
        ++pos_;
        if (!groups_.empty()) {
          if (groups_.back() == kCloseParagraph) out_->ParagraphBreak();
          groups_.pop_back();
        }
        return;
      case '~':  // non-breaking space
      case '&':  // table column separator
        ++pos_;
        Space();
        return;
      default:
        break;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      int newlines = 0;
      while (pos_ < end_ && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                             s_[pos_] == '\r')) {
        newlines += s_[pos_] == '\n';
        ++pos_;
      }
      if (newlines >= 2) {
        out_->ParagraphBreak();
      } else {
        Space();
      }
      return;
    }
    // Typographic ligatures of plain TeX input.
    if (s_.substr(pos_, 3) == "---") {
      Emit("\xE2\x80\x94", pos_);
      pos_ += 3;
      return;
    }
    if (s_.substr(pos_, 2) == "--") {
      Emit("\xE2\x80\x93", pos_);
      pos_ += 2;
      return;
    }
    if (s_.substr(pos_, 2) == "``") {
      Emit("\xE2\x80\x9C", pos_);
      pos_ += 2;
      return;
    }
    if (s_.substr(pos_, 2) == "''") {
      Emit("\xE2\x80\x9D", pos_);
      pos_ += 2;
      return;
    }
    // A run of ordinary characters.
    size_t run = pos_;
    while (run < end_ && !std::strchr("%\\${}~& \t\r\n-`'", s_[run])) ++run;
    if (run == pos_) ++run;  // a lone '-', '`' or '\''
    Emit(s_.substr(pos_, run - pos_), pos_);
    pos_ = run;
  }

  static constexpr char kPlain = 0;
  static constexpr char kCloseParagraph = 1;

  std::string_view s_;
  const ConvertedDocument& src_;
  TextBuilder* out_;
  size_t pos_ = 0;
  size_t end_ = 0;
  std::vector<char> groups_;  // what to do at each open brace's close
};

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertLatex(std::string_view input, const ConvertContext& ctx) {
  const ConvertedDocument src = DecodeWithMap(input, "");
  TextBuilder out(ctx.limits.max_output_bytes);
  LatexScanner(src, &out).Run();
  if (out.overflowed()) return ctx.OutputTooLarge("latex");
  ConvertedDocument doc;
  doc.format = DocumentFormat::kLatex;
  doc.charset = src.charset;
  out.Finish(&doc);
  return doc;
}

Sniff SniffLatex(const SniffedInput& in) {
  const std::string_view head = in.head;
  const bool latex = head.find("\\documentclass") != std::string_view::npos ||
                     head.find("\\begin{document}") != std::string_view::npos ||
                     (head.find("\\section{") != std::string_view::npos &&
                      head.find("\\end{") != std::string_view::npos);
  return in.mime_matches || latex ? Sniff::kLikely : Sniff::kNo;
}

}  // namespace cops
