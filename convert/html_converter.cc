// HTML: libxml2's error-tolerant HTML parser driven through SAX (no tree is built), so a
// large or deeply nested page costs memory proportional to its text, not its DOM. The
// bytes are first decoded to UTF-8 ourselves (declared <meta> charset, else detection) so
// positions in the parser's buffer map back to the original bytes.

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/hidden_style.h"
#include "convert/text_builder.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {
namespace {

enum class Role { kInline, kBlock, kLine, kCell, kSkip, kPre };

Role RoleOf(const char* name) {
  static constexpr const char* kBlocks[] = {
      "p",      "div",    "h1",      "h2",       "h3",      "h4",     "h5",
      "h6",     "ul",     "ol",      "li",       "dl",      "dt",     "dd",
      "table",  "tr",     "blockquote", "section", "article", "header", "footer",
      "nav",    "aside",  "main",    "figure",   "figcaption", "address", "hr",
      "form",   "fieldset", "legend", "caption", "details", "summary", "body",
      "center", "thead",  "tbody",   "tfoot"};
  static constexpr const char* kSkips[] = {"script", "style", "head",  "template",
                                           "noscript", "svg", "math", "object",
                                           "iframe", "select", "textarea", "button", "title"};
  for (const char* b : kBlocks) {
    if (std::strcmp(name, b) == 0) return Role::kBlock;
  }
  for (const char* s : kSkips) {
    if (std::strcmp(name, s) == 0) return Role::kSkip;
  }
  if (std::strcmp(name, "br") == 0) return Role::kLine;
  if (std::strcmp(name, "td") == 0 || std::strcmp(name, "th") == 0) return Role::kCell;
  if (std::strcmp(name, "pre") == 0) return Role::kPre;
  return Role::kInline;
}

// Whether an element's attributes hide its text from a reader: the hidden attribute, or an
// inline style with display:none, visibility:hidden, a tiny font size (0, or at most 1pt), or white
// text (on the white page a reader sees; a style that also sets a background is not judged).
bool HidesText(const xmlChar** attrs) {
  if (attrs == nullptr) return false;
  for (size_t i = 0; attrs[i] != nullptr; i += 2) {
    const std::string name = AsciiLower(reinterpret_cast<const char*>(attrs[i]));
    if (name == "hidden") return true;
    if (name != "style" || attrs[i + 1] == nullptr) continue;
    std::string style;
    for (char c : AsciiLower(reinterpret_cast<const char*>(attrs[i + 1]))) {
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') style += c;
    }
    bool white = false, background = false;
    for (absl::string_view piece : absl::StrSplit(style, ';')) {
      const std::string_view decl(piece.data(), piece.size());
      const size_t colon = decl.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view key = decl.substr(0, colon), value = decl.substr(colon + 1);
      if (key == "display" && value.starts_with("none")) return true;
      if (key == "visibility" && value.starts_with("hidden")) return true;
      if (key == "font-size" && IsTinyFontSize(value)) return true;
      if (key == "color") white = IsWhiteColor(value);
      if (key == "background" || key == "background-color") background = true;
    }
    if (white && !background) return true;
  }
  return false;
}

struct HtmlState {
  htmlParserCtxtPtr ctxt = nullptr;
  const ConvertContext* convert = nullptr;
  const ConvertedDocument* decoded = nullptr;  // UTF-8 buffer -> original offsets
  TextBuilder* out = nullptr;
  int skip_depth = 0;
  int pre_depth = 0;
  // The open elements that hide their text (name, nesting depth at their start): an end
  // tag closes the innermost one of its name at or below the current depth.
  std::vector<std::pair<std::string, int>> hiding;
  int depth = 0;
  uint64_t events = 0;
  absl::Status status;

  void Stop(absl::Status s) {
    if (status.ok()) status = std::move(s);
    xmlStopParser(ctxt);
  }
  void Tick() {
    if ((++events & 1023) != 0) return;
    if (absl::Status s = convert->CheckDeadline("html"); !s.ok()) Stop(std::move(s));
  }
};

void OnStart(void* user, const xmlChar* name, const xmlChar** attrs) {
  auto* st = static_cast<HtmlState*>(user);
  st->Tick();
  ++st->depth;
  if (HidesText(attrs)) st->hiding.emplace_back(reinterpret_cast<const char*>(name), st->depth);
  // A picture a reader sees in the flow of the text, possibly of letters cut out of a word
  // ("Pay<img src=p.png>al"); the builder keeps those with a letter right on both sides.
  if (st->skip_depth == 0 && st->hiding.empty() &&
      (xmlStrcasecmp(name, BAD_CAST "img") == 0 || xmlStrcasecmp(name, BAD_CAST "svg") == 0)) {
    st->out->MarkImage();
  }
  switch (RoleOf(reinterpret_cast<const char*>(name))) {
    case Role::kSkip:
      ++st->skip_depth;
      break;
    case Role::kBlock:
      if (st->skip_depth == 0) st->out->ParagraphBreak();
      break;
    case Role::kPre:
      if (st->skip_depth == 0) st->out->ParagraphBreak();
      ++st->pre_depth;
      break;
    case Role::kLine:
      if (st->skip_depth == 0) st->out->LineBreak();
      break;
    case Role::kCell:
    case Role::kInline:
      break;
  }
}

void OnEnd(void* user, const xmlChar* name) {
  auto* st = static_cast<HtmlState*>(user);
  if (!st->hiding.empty() && st->hiding.back().second >= st->depth &&
      st->hiding.back().first == reinterpret_cast<const char*>(name)) {
    st->hiding.pop_back();
  }
  st->depth = std::max(0, st->depth - 1);
  switch (RoleOf(reinterpret_cast<const char*>(name))) {
    case Role::kSkip:
      st->skip_depth = std::max(0, st->skip_depth - 1);
      break;
    case Role::kBlock:
      if (st->skip_depth == 0) st->out->ParagraphBreak();
      break;
    case Role::kPre:
      st->pre_depth = std::max(0, st->pre_depth - 1);
      if (st->skip_depth == 0) st->out->ParagraphBreak();
      break;
    case Role::kCell:
      if (st->skip_depth == 0 && !st->out->text().empty() && st->out->text().back() != ' ' &&
          st->out->text().back() != '\n') {
        st->out->AppendUnmapped(" ");
      }
      break;
    case Role::kLine:
    case Role::kInline:
      break;
  }
}

void OnText(void* user, const xmlChar* chars, int len) {
  auto* st = static_cast<HtmlState*>(user);
  st->Tick();
  if (st->skip_depth > 0 || len <= 0) return;
  // The parser has just consumed this text: it ends about where the input cursor is
  // (exactly, unless it contained entity references).
  const xmlParserInputPtr in = st->ctxt->input;
  long end = in == nullptr ? 0 : static_cast<long>(in->cur - in->base) + in->consumed;
  const uint32_t at = static_cast<uint32_t>(std::max<long>(0, end - len));
  std::string_view text(reinterpret_cast<const char*>(chars), len);
  const uint32_t before = static_cast<uint32_t>(st->out->size());
  if (st->pre_depth > 0) {
    st->out->Append(text, st->decoded->OriginalOffset(at));
  } else {
    st->out->AppendCollapsed(text, at, 0, st->decoded);
  }
  if (!st->hiding.empty()) st->out->MarkHidden(before);
  if (st->out->overflowed()) st->Stop(st->convert->OutputTooLarge("html"));
}

void Silent(void*, const char*, ...) {}

// The charset a <meta> tag declares in the first few KB, or "".
std::string DeclaredCharset(std::string_view input) {
  std::string head = AsciiLower(input.substr(0, 8192));
  size_t pos = 0;
  while ((pos = head.find("charset", pos)) != std::string::npos) {
    pos += 7;
    size_t i = pos;
    while (i < head.size() && (head[i] == ' ' || head[i] == '=' || head[i] == '"' ||
                               head[i] == '\'')) {
      ++i;
    }
    size_t j = i;
    while (j < head.size() && (std::isalnum(static_cast<unsigned char>(head[j])) ||
                               head[j] == '-' || head[j] == '_' || head[j] == ':')) {
      ++j;
    }
    if (j > i && head.find('=', pos) < j) return head.substr(i, j - i);
  }
  return "";
}

std::once_flag xml_init_once;

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertHtml(std::string_view input, const ConvertContext& ctx) {
  std::call_once(xml_init_once, [] { xmlInitParser(); });
  // Decode to UTF-8 first, keeping the map to the original bytes.
  std::string charset;
  if (!IsValidUtf8(input)) {
    charset = DeclaredCharset(input);
    if (charset == "utf-8" || charset == "iso-8859-1" || charset == "us-ascii") charset = "";
  }
  ConvertedDocument decoded;
  {
    TextBuilder utf8(uint64_t{1} << 32);
    auto used = DecodeToUtf8(input, charset, 0, &utf8);
    if (!used.ok()) used = DecodeToUtf8(input, "", 0, &utf8);
    if (!used.ok()) return absl::InvalidArgumentError("html: cannot decode the input's charset");
    decoded.charset = *used;
    utf8.Finish(&decoded, /*trim=*/false);
  }
  if (decoded.text.size() > INT32_MAX) {
    return absl::ResourceExhaustedError("html: input too large for the parser");
  }

  ConvertedDocument doc;
  doc.format = DocumentFormat::kHtml;
  doc.charset = decoded.charset;
  if (decoded.text.empty()) return doc;

  TextBuilder out(ctx.limits.max_output_bytes);
  HtmlState st;
  st.convert = &ctx;
  st.decoded = &decoded;
  st.out = &out;
  htmlParserCtxtPtr parser = htmlCreateMemoryParserCtxt(decoded.text.data(),
                                                        static_cast<int>(decoded.text.size()));
  if (parser == nullptr) return absl::ResourceExhaustedError("html: cannot create a parser");
  st.ctxt = parser;
  xmlSAXHandler* sax = parser->sax;
  std::memset(sax, 0, sizeof(*sax));
  sax->startElement = OnStart;
  sax->endElement = OnEnd;
  sax->characters = OnText;
  sax->ignorableWhitespace = OnText;
  sax->warning = Silent;
  sax->error = Silent;
  sax->fatalError = Silent;
  parser->userData = &st;
  htmlCtxtUseOptions(parser, HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                 HTML_PARSE_IGNORE_ENC | HTML_PARSE_NOIMPLIED);
  xmlSwitchEncoding(parser, XML_CHAR_ENCODING_UTF8);
  htmlParseDocument(parser);
  htmlFreeParserCtxt(parser);
  COPS_RETURN_IF_ERROR(st.status);
  out.Finish(&doc);
  return doc;
}

namespace {

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

bool StartsWithIgnoreCase(std::string_view s, std::string_view lower_prefix) {
  return AsciiLower(s.substr(0, lower_prefix.size())) == lower_prefix;
}

}  // namespace

Sniff SniffHtml(const SniffedInput& in) {
  if (in.mime_matches || StartsWithIgnoreCase(in.trimmed, "<!doctype html") ||
      StartsWithIgnoreCase(in.trimmed, "<html") ||
      (in.text_heuristics && LooksLikeHtml(in.head))) {
    return Sniff::kLikely;
  }
  return Sniff::kNo;
}

}  // namespace cops
