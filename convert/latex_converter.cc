// LaTeX: a single left-to-right scan (no recursion, so hostile nesting cannot exhaust the
// stack). The preamble, comments, math (inline, display and math environments) and
// commands are removed; the text arguments of sectioning, emphasis and similar commands
// are kept, as is the argument of any unknown command (losing a macro's name is better
// than losing its text); reference-like commands (\cite, \ref, \label, ...) are dropped
// with their arguments. Blank lines and sectioning end paragraphs. Every text run maps
// back to its byte offset in the source.
//
// Hidden text (ConvertedDocument::hidden) is followed as TeX scopes it, to the end of the
// group or environment: white text (\color, \textcolor; named, \definecolor'd, xcolor
// mixes such as black!0, and the rgb, RGB, HTML, gray, cmyk models), \phantom and its
// kin (typeset as blank space), and \fontsize of at most 1pt, judged as in HTML and DOCX
// (convert/hidden_style.h). White on a \colorbox or \fcolorbox of another colour is
// readable, as is any white in a document that sets a page colour or a beamer background
// canvas (no white is judged there).

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/hidden_style.h"
#include "convert/text_builder.h"
#include "core/strings.h"

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
  return OneOf(name, {"label", "includegraphics", "input", "include", "url", "vspace", "hspace",
                      "vspace*", "hspace*", "newcommand", "renewcommand", "providecommand",
                      "setlength", "addtolength", "setcounter", "usepackage", "documentclass",
                      "newenvironment", "renewenvironment", "pagestyle", "thispagestyle",
                      "addcontentsline", "bibitem", "hypersetup", "graphicspath", "index", "nocite",
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

// `arg` without the spaces and line breaks TeX ignores inside a colour or a size.
std::string WithoutSpaces(std::string_view arg) {
  std::string out;
  for (char c : arg) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') out += c;
  }
  return out;
}

class LatexScanner {
 public:
  LatexScanner(const ConvertedDocument& src, TextBuilder* out)
      : s_(src.text), src_(src), out_(out) {}

  void Run() {
    size_t begin = s_.find("\\begin{document}");
    const size_t body =
        begin == std::string_view::npos ? 0 : begin + std::strlen("\\begin{document}");
    // Colours defined, and a page colour set, in the preamble.
    end_ = body;
    for (std::string_view command : {"\\definecolor", "\\colorlet", "\\pagecolor"}) {
      for (size_t at = s_.find(command); at < body; at = s_.find(command, at + 1)) {
        pos_ = at;
        Command();
      }
    }
    // A dark beamer theme: white text on it is the ordinary case.
    if (s_.find("background canvas") != std::string_view::npos) coloured_page_ = true;
    pos_ = body;
    size_t end = s_.find("\\end{document}", pos_);
    end_ = end == std::string_view::npos ? s_.size() : end;
    while (pos_ < end_ && !out_->overflowed()) Step();
  }

 private:
  // How the text being scanned looks, as far as that hides it from a reader. TeX restores
  // it at the end of each group and environment.
  struct Look {
    bool white = false;       // \color{white}, \textcolor{white}{...}
    bool background = false;  // inside a \colorbox of another colour than white
    bool tiny = false;        // \fontsize of at most kTinyFontPt
    bool phantom = false;     // \phantom{...}: typeset as blank space
  };

  // What to do at the close of an open brace.
  struct Group {
    char action;  // kPlain, kCloseParagraph
    Look outer;   // the look to restore
  };

  bool Hidden() const {
    return look_.phantom || look_.tiny || (look_.white && !look_.background && !coloured_page_);
  }

  uint32_t Orig(size_t at) const { return src_.OriginalOffset(static_cast<uint32_t>(at)); }
  void Emit(std::string_view text, size_t at) {
    const uint32_t before = static_cast<uint32_t>(out_->size());
    out_->Append(text, Orig(at));
    if (Hidden()) out_->MarkHidden(before);
  }
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

  // The text of the {..} argument at pos_ (after spaces), moving past it; "" when there is
  // none.
  std::string_view ReadArgument() {
    SkipSpaces();
    if (pos_ >= end_ || s_[pos_] != '{') return "";
    const size_t open = pos_;
    SkipGroup('{', '}');
    return s_.substr(open + 1, pos_ > open + 1 ? pos_ - open - 2 : 0);
  }

  // The text of an optional [..] argument at pos_ (after spaces), moving past it; "" when
  // there is none.
  std::string_view ReadOptional() {
    const size_t save = pos_;
    SkipSpaces();
    if (pos_ >= end_ || s_[pos_] != '[') {
      pos_ = save;
      return "";
    }
    const size_t open = pos_;
    SkipGroup('[', ']');
    return s_.substr(open + 1, pos_ > open + 1 ? pos_ - open - 2 : 0);
  }

  // Opens the {..} argument at pos_ (after spaces) as a group whose text looks like `look`.
  void OpenArgumentWith(const Look& look) {
    SkipSpaces();
    if (pos_ >= end_ || s_[pos_] != '{') return;
    ++pos_;
    groups_.push_back({kPlain, look_});
    look_ = look;
  }

  // Whether xcolor's colour name `name` (no spaces) is white.
  bool NamedWhite(std::string_view name) const {
    return name == "white" || white_names_.count(std::string(name)) > 0;
  }

  // Whether the colour of a colour command's [model]{spec} arguments is white.
  bool IsWhite(std::string_view model, std::string_view spec) const {
    const std::string value = WithoutSpaces(spec);
    if (model.empty()) {
      // A name, or an xcolor mix "a!p" (p% of a, the rest white) or "a!p!b".
      const std::vector<std::string> parts = absl::StrSplit(value, '!');
      if (parts.size() == 1) return NamedWhite(value);
      if (parts.size() > 3) return false;
      const double percent = std::atof(std::string(parts[1]).c_str());
      const bool rest_white = parts.size() == 2 || NamedWhite(parts[2]);
      return (percent == 0 || NamedWhite(parts[0])) && (percent == 100 || rest_white);
    }
    if (model == "HTML") return IsWhiteColor(AsciiLower(StrCat("#", value)));
    double target;
    size_t components;
    if (model == "rgb") {
      target = 1, components = 3;
    } else if (model == "RGB") {
      target = 255, components = 3;
    } else if (model == "gray") {
      target = 1, components = 1;
    } else if (model == "cmyk") {
      target = 0, components = 4;
    } else {
      return false;
    }
    const std::vector<std::string> values = absl::StrSplit(value, ',');
    if (values.size() != components) return false;
    for (const std::string& v : values) {
      if (v.empty() || std::atof(v.c_str()) != target) return false;
    }
    return true;
  }

  // Whether a colour command's [model]{spec} arguments at pos_ are white, moving past them.
  bool ReadWhite() {
    const std::string_view model = ReadOptional();
    return IsWhite(model, ReadArgument());
  }

  // Handles the colour, phantom and font size commands that can hide text; false for any
  // other command.
  bool LookCommand(std::string_view name) {
    if (name == "color") {
      look_.white = ReadWhite();
    } else if (name == "textcolor") {
      Look look = look_;
      look.white = ReadWhite();
      OpenArgumentWith(look);
    } else if (name == "colorbox" || name == "fcolorbox") {
      if (name == "fcolorbox") {
        ReadOptional();
        ReadArgument();  // the frame's colour
      }
      Look look = look_;
      if (!ReadWhite()) look.background = true;
      OpenArgumentWith(look);
    } else if (name == "phantom" || name == "hphantom" || name == "vphantom") {
      Look look = look_;
      look.phantom = true;
      OpenArgumentWith(look);
    } else if (name == "fontsize") {
      std::string size = WithoutSpaces(ReadArgument());
      if (!size.empty() &&
          (std::isdigit(static_cast<unsigned char>(size.back())) || size.back() == '.')) {
        size += "pt";  // TeX's unit
      }
      look_.tiny = IsTinyFontSize(AsciiLower(size));
      ReadArgument();  // the baseline skip
    } else if (name == "definecolor") {
      const std::string colour(ReadArgument());
      const std::string_view model = ReadArgument();
      if (IsWhite(model, ReadArgument())) white_names_.insert(colour);
    } else if (name == "colorlet") {
      const std::string colour(ReadArgument());
      if (ReadWhite()) white_names_.insert(colour);
    } else if (name == "pagecolor") {
      if (!ReadWhite()) coloured_page_ = true;
    } else {
      return false;
    }
    return true;
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
          const uint32_t before = static_cast<uint32_t>(out_->size());
          Emit(s_.substr(letter, 1), start);
          out_->AppendUnmapped(mark);
          if (Hidden()) out_->MarkHidden(before);
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
      if (name == "begin") {
        environments_.push_back(look_);
        SkipArguments();  // e.g. \begin{tabular}{ll}
      } else if (!environments_.empty()) {
        look_ = environments_.back();
        environments_.pop_back();
      }
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
    if (LookCommand(name)) return;
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
        groups_.push_back({kCloseParagraph, look_});
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
        groups_.push_back({kPlain, look_});
        return;
      case '}':
        ++pos_;
        if (!groups_.empty()) {
          if (groups_.back().action == kCloseParagraph) out_->ParagraphBreak();
          look_ = groups_.back().outer;
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
  std::vector<Group> groups_;       // the open braces, innermost last
  std::vector<Look> environments_;  // the look at each open environment's \begin
  Look look_;
  std::set<std::string> white_names_;  // colours \definecolor'd or \colorlet as white
  bool coloured_page_ = false;         // white is readable anywhere (\pagecolor, beamer canvas)
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
