// DOCX and ODT: a zip container (libzip, read from memory) holding one XML part with the
// body (word/document.xml, content.xml), streamed with libxml2's xmlTextReader. No entity
// substitution and no network, so XML entity tricks cannot expand or fetch anything; zip
// bombs are bounded by limits.max_uncompressed_bytes and limits.max_zip_entries.
//
// The body is compressed, so text has no byte map into the original (segments empty).

#include <libxml/xmlreader.h>
#include <zip.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/formats.h"
#include "convert/hidden_style.h"
#include "convert/text_builder.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {
namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
struct ReaderCloser {
  void operator()(xmlTextReader* r) const { xmlFreeTextReader(r); }
};

class OfficeReader {
 public:
  OfficeReader(DocumentFormat format, const ConvertContext& ctx)
      : name_(DocumentFormatName(format)), ctx_(ctx) {}

  absl::Status Error(absl::StatusCode code, std::string_view what) const {
    return absl::Status(code, StrCat(name_, ": ", what));
  }

  absl::Status Open(std::string_view input) {
    if (input.substr(0, 8) == std::string_view("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8)) {
      return Error(absl::StatusCode::kInvalidArgument,
                   "document is encrypted (password protected) or in the old binary format");
    }
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_buffer_create(input.data(), input.size(), 0, &error);
    if (src == nullptr) {
      zip_error_fini(&error);
      return Error(absl::StatusCode::kResourceExhausted, "cannot read the input");
    }
    zip_.reset(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
    if (zip_ == nullptr) {
      zip_source_free(src);
      std::string why = zip_error_strerror(&error);
      zip_error_fini(&error);
      return Error(absl::StatusCode::kInvalidArgument,
                   StrCat("not a readable zip archive (truncated or damaged: ", why, ")"));
    }
    zip_error_fini(&error);
    const zip_int64_t entries = zip_get_num_entries(zip_.get(), 0);
    if (entries < 0 || static_cast<uint64_t>(entries) > ctx_.limits.max_zip_entries) {
      return Error(absl::StatusCode::kResourceExhausted,
                   StrCat("archive has ", entries, " entries, more than the limit of ",
                          ctx_.limits.max_zip_entries));
    }
    return absl::OkStatus();
  }

  bool Has(const char* entry) const { return zip_name_locate(zip_.get(), entry, 0) >= 0; }

  // Reads one entry fully, counting against the decompression budget. NOT_FOUND when
  // the entry is missing.
  absl::StatusOr<std::string> Read(const char* entry) {
    zip_int64_t index = zip_name_locate(zip_.get(), entry, 0);
    if (index < 0) {
      return absl::NotFoundError(StrCat(name_, ": missing ", entry));
    }
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), index, 0, &st) == 0 && (st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
        st.encryption_method != ZIP_EM_NONE) {
      return Error(absl::StatusCode::kInvalidArgument, "document is encrypted");
    }
    std::unique_ptr<zip_file_t, ZipFileCloser> file(zip_fopen_index(zip_.get(), index, 0));
    if (file == nullptr) {
      const int code = zip_error_code_zip(zip_get_error(zip_.get()));
      if (code == ZIP_ER_NOPASSWD || code == ZIP_ER_WRONGPASSWD) {
        return Error(absl::StatusCode::kInvalidArgument, "document is encrypted");
      }
      return Error(absl::StatusCode::kInvalidArgument,
                   StrCat("cannot open ", entry, ": ", zip_strerror(zip_.get())));
    }
    std::string out;
    char buf[64 << 10];
    while (true) {
      zip_int64_t n = zip_fread(file.get(), buf, sizeof(buf));
      if (n < 0) {
        return Error(absl::StatusCode::kInvalidArgument,
                     StrCat(entry, " is damaged: ", zip_file_strerror(file.get())));
      }
      if (n == 0) break;
      inflated_ += static_cast<uint64_t>(n);
      if (inflated_ > ctx_.limits.max_uncompressed_bytes) {
        return Error(absl::StatusCode::kResourceExhausted,
                     StrCat("decompressed content exceeds the limit of ",
                            ctx_.limits.max_uncompressed_bytes, " bytes (zip bomb?)"));
      }
      out.append(buf, n);
      COPS_RETURN_IF_ERROR(ctx_.CheckDeadline(name_));
    }
    return out;
  }

 private:
  std::string_view name_;
  const ConvertContext& ctx_;
  std::unique_ptr<zip_t, ZipCloser> zip_;
  uint64_t inflated_ = 0;
};

// Element roles in the body XML.
enum class Tag { kOther, kParagraph, kText, kTab, kBreak, kSpace, kSkip };

// The value of attribute w:val of the reader's current element ("" when absent).
std::string ValAttribute(xmlTextReader* reader) {
  std::string out;
  if (xmlChar* v = xmlTextReaderGetAttribute(reader, BAD_CAST "w:val")) {
    out = AsciiLower(reinterpret_cast<const char*>(v));
    xmlFree(v);
  }
  return out;
}

// Whether a DOCX run property element (inside <w:rPr>) hides the run from a reader:
// <w:vanish/> (unless w:val turns it off), white text (<w:color w:val="FFFFFF"/>), or a
// tiny size (<w:sz w:val="2"/>, in half-points: 1pt), judged as every format judges them
// (convert/hidden_style.h).
bool HidesRun(const char* local, xmlTextReader* reader) {
  if (std::strcmp(local, "vanish") == 0 || std::strcmp(local, "specVanish") == 0) {
    const std::string v = ValAttribute(reader);
    return v != "0" && v != "false" && v != "off";
  }
  if (std::strcmp(local, "color") == 0) return IsWhiteColor("#" + ValAttribute(reader));
  if (std::strcmp(local, "sz") == 0) {
    const std::string v = ValAttribute(reader);
    return !v.empty() && std::atoi(v.c_str()) / 2.0 <= kTinyFontPt;
  }
  return false;
}

// DOCX elements that put a picture in the flow of a run: DrawingML, VML, an embedded object.
bool IsDocxPicture(const char* local) {
  return std::strcmp(local, "drawing") == 0 || std::strcmp(local, "pict") == 0 ||
         std::strcmp(local, "object") == 0;
}

Tag DocxTag(const char* local) {
  if (std::strcmp(local, "p") == 0) return Tag::kParagraph;
  if (std::strcmp(local, "t") == 0) return Tag::kText;
  if (std::strcmp(local, "tab") == 0) return Tag::kTab;
  if (std::strcmp(local, "br") == 0 || std::strcmp(local, "cr") == 0) return Tag::kBreak;
  // Deleted revisions and field codes are not what a reader sees.
  if (std::strcmp(local, "delText") == 0 || std::strcmp(local, "instrText") == 0) {
    return Tag::kSkip;
  }
  return Tag::kOther;
}

Tag OdtTag(const char* local) {
  if (std::strcmp(local, "p") == 0 || std::strcmp(local, "h") == 0) return Tag::kParagraph;
  if (std::strcmp(local, "tab") == 0) return Tag::kTab;
  if (std::strcmp(local, "line-break") == 0) return Tag::kBreak;
  if (std::strcmp(local, "s") == 0) return Tag::kSpace;
  if (std::strcmp(local, "annotation") == 0 || std::strcmp(local, "tracked-changes") == 0) {
    return Tag::kSkip;
  }
  return Tag::kOther;
}

// ODF namespaces, by which attributes are recognized: writers other than LibreOffice choose
// their own prefixes (docutils writes "ns2:name" for "style:name").
constexpr std::string_view kOdfStyle = "urn:oasis:names:tc:opendocument:xmlns:style:1.0";
constexpr std::string_view kOdfText = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";
constexpr std::string_view kOdfFo = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0";

// Calls f(namespace URI, local name, value) for each attribute of the reader's current
// element, then returns to the element. One walk costs less than a lookup per name.
template <typename F>
void ForEachAttribute(xmlTextReader* reader, F&& f) {
  if (xmlTextReaderMoveToFirstAttribute(reader) != 1) return;
  do {
    const xmlChar* ns = xmlTextReaderConstNamespaceUri(reader);
    const xmlChar* local = xmlTextReaderConstLocalName(reader);
    const xmlChar* value = xmlTextReaderConstValue(reader);
    if (ns != nullptr && local != nullptr && value != nullptr) {
      f(std::string_view(reinterpret_cast<const char*>(ns)),
        std::string_view(reinterpret_cast<const char*>(local)),
        std::string_view(reinterpret_cast<const char*>(value)));
    }
  } while (xmlTextReaderMoveToNextAttribute(reader) == 1);
  xmlTextReaderMoveToElement(reader);
}

// The attribute `local` in namespace `ns` of the reader's current element, lower-cased
// unless !lower; nullopt when absent.
std::optional<std::string> OdfAttribute(xmlTextReader* reader, std::string_view ns,
                                        std::string_view local, bool lower = true) {
  std::optional<std::string> out;
  ForEachAttribute(reader, [&](std::string_view n, std::string_view l, std::string_view v) {
    if (n == ns && l == local) out = lower ? AsciiLower(v) : std::string(v);
  });
  return out;
}

// How ODT text looks, as far as that can hide it from a reader; judged as in HTML and DOCX
// (convert/hidden_style.h).
struct OdtLook {
  bool white = false;
  bool background = false;  // a coloured background behind the text: white is readable
  bool display_none = false;
  double size_pt = 12;  // LibreOffice's default, the base of a percentage at the top

  bool Hidden() const { return display_none || size_pt <= kTinyFontPt || (white && !background); }
};

// ODF styles (<style:style>, <style:default-style>) as far as their text and paragraph
// properties hide text. A style inherits what it does not set from its parent
// (style:parent-style-name), then from its family's default style, then from the text
// around it. Styles that cannot be found are taken as setting nothing.
class OdtStyles {
 public:
  // Feeds one element event (start or end) of a part whose styles sit in
  // <office:`container`>: "styles" in styles.xml (its automatic styles serve its own
  // headers and footers only), "automatic-styles" in content.xml.
  void Collect(std::string_view container, xmlTextReader* reader, const char* local, bool start,
               bool empty, int depth) {
    if (!start) {
      if (depth == style_depth_) style_depth_ = -1;
      if (depth == container_depth_) container_depth_ = -1;
      return;
    }
    if (container_depth_ < 0) {
      if (local == container && !empty) container_depth_ = depth;
      return;
    }
    const bool default_style = std::strcmp(local, "default-style") == 0;
    if (default_style || std::strcmp(local, "style") == 0) {
      std::string family, parent;
      std::optional<std::string> name;  // case-sensitive, as style references are
      ForEachAttribute(reader,
                       [&](std::string_view ns, std::string_view attr, std::string_view value) {
                         if (ns != kOdfStyle) return;
                         if (attr == "family") family = AsciiLower(value);
                         if (attr == "name") name = std::string(value);
                         if (attr == "parent-style-name") parent = std::string(value);
                       });
      if (!default_style && !name) return;
      current_ = &styles_[StrCat(family, "/", default_style ? "" : *name)];
      resolved_[kParagraph].clear();
      resolved_[kText].clear();
      *current_ = OdtStyle{};
      current_->parent = std::move(parent);
      style_depth_ = empty ? -1 : depth;
      return;
    }
    if (style_depth_ < 0) return;
    const bool text = std::strcmp(local, "text-properties") == 0;
    if (!text && std::strcmp(local, "paragraph-properties") != 0) return;
    bool window_colour = false;
    ForEachAttribute(reader, [&](std::string_view ns, std::string_view attr, std::string_view raw) {
      const std::string value = AsciiLower(raw);
      if (ns == kOdfFo && attr == "background-color") {
        current_->background = value != "transparent" && !IsWhiteColor(value);
      }
      if (!text) return;
      if (ns == kOdfFo && attr == "color") current_->white = IsWhiteColor(value);
      if (ns == kOdfStyle && attr == "use-window-font-color") window_colour = value == "true";
      if (ns == kOdfText && attr == "display") current_->display_none = value == "none";
      if (ns == kOdfFo && attr == "font-size") {
        if (value.ends_with('%')) {
          current_->size_percent = std::atof(value.c_str());
        } else if (IsTinyFontSize(value)) {
          current_->size_pt = 0;
        } else if (auto points = LengthInPoints(value)) {
          current_->size_pt = *points;
        }
      }
    });
    if (window_colour) current_->white = false;  // the automatic colour, whatever fo:color says
  }

  // Style families that text takes its look from.
  enum Family { kParagraph = 0, kText = 1 };

  // The look of the text of an element of style family `family` whose style is `name` (""
  // for none), inside text that looks like `outer`.
  OdtLook Apply(OdtLook look, Family family, std::string_view name) const {
    const OdtStyle& style = Resolved(family, name);
    if (style.white) look.white = *style.white;
    if (style.background) look.background = *style.background;
    if (style.display_none) look.display_none = *style.display_none;
    if (style.size_pt) look.size_pt = *style.size_pt;
    if (style.size_percent) look.size_pt *= *style.size_percent / 100;
    return look;
  }

 private:
  static constexpr size_t kMaxInheritance = 16;

  // What one style sets; unset properties are inherited.
  struct OdtStyle {
    std::string parent;
    std::optional<bool> white, background, display_none;
    std::optional<double> size_pt, size_percent;
  };

  // Style `name` of `family` with its ancestors and the family's default style folded in:
  // applying it is applying them, the most general first. Cached, as a body applies a few
  // styles many times; the cache is dropped whenever a style is collected.
  const OdtStyle& Resolved(Family family, std::string_view name) const {
    std::map<std::string, OdtStyle, std::less<>>& cache = resolved_[family];
    if (const auto it = cache.find(name); it != cache.end()) return it->second;
    const std::string_view family_name = family == kParagraph ? "paragraph" : "text";
    // The style and its ancestors, most specific first; a bounded walk ends a cycle.
    const OdtStyle* chain[kMaxInheritance + 1];
    size_t n = 0;
    for (std::string_view at = name; !at.empty() && n < kMaxInheritance;) {
      const auto it = styles_.find(StrCat(family_name, "/", at));
      if (it == styles_.end()) break;
      chain[n++] = &it->second;
      at = it->second.parent;
    }
    if (const auto it = styles_.find(StrCat(family_name, "/")); it != styles_.end()) {
      chain[n++] = &it->second;
    }
    OdtStyle folded;
    while (n > 0) {  // the most general first, so the specific ones override
      const OdtStyle& style = *chain[--n];
      if (style.white) folded.white = style.white;
      if (style.background) folded.background = style.background;
      if (style.display_none) folded.display_none = style.display_none;
      if (style.size_pt) {
        folded.size_pt = style.size_pt;
        folded.size_percent.reset();
      }
      if (style.size_percent) {
        folded.size_percent = folded.size_percent.value_or(100) * *style.size_percent / 100;
      }
    }
    return cache.emplace(std::string(name), std::move(folded)).first->second;
  }

  std::map<std::string, OdtStyle, std::less<>> styles_;  // "family/name"; "family/": default
  OdtStyle* current_ = nullptr;  // the style whose properties are being read
  int style_depth_ = -1;         // its element's depth while open, else -1
  int container_depth_ = -1;     // depth of <office:`container`> while open, else -1
  mutable std::map<std::string, OdtStyle, std::less<>> resolved_[2];  // by Family, by name
};

// Collects the common styles of ODT's styles.xml. A damaged styles.xml costs only the
// styles it would have given: the text is in content.xml.
absl::Status CollectOdtStyles(std::string_view xml, const ConvertContext& ctx, OdtStyles* styles) {
  std::unique_ptr<xmlTextReader, ReaderCloser> reader(xmlReaderForMemory(
      xml.data(), static_cast<int>(xml.size()), "styles.xml", nullptr,
      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_COMPACT));
  if (reader == nullptr) return absl::ResourceExhaustedError("odt: cannot create an XML reader");
  uint64_t nodes = 0;
  while (xmlTextReaderRead(reader.get()) == 1) {
    if ((++nodes & 4095) == 0) COPS_RETURN_IF_ERROR(ctx.CheckDeadline("odt"));
    const int type = xmlTextReaderNodeType(reader.get());
    if (type != XML_READER_TYPE_ELEMENT && type != XML_READER_TYPE_END_ELEMENT) continue;
    const bool start = type == XML_READER_TYPE_ELEMENT;
    styles->Collect("styles", reader.get(),
                    reinterpret_cast<const char*>(xmlTextReaderConstLocalName(reader.get())), start,
                    start && xmlTextReaderIsEmptyElement(reader.get()),
                    xmlTextReaderDepth(reader.get()));
  }
  return absl::OkStatus();
}

// The look of the text inside an ODT body element that changes it, on top of `outer`:
// a paragraph or heading (its paragraph style, else the default one), a span or link with a
// text style, a section with text:display="none", a <text:hidden-text> field (hidden unless
// text:is-hidden="false"). nullopt for any other element.
std::optional<OdtLook> OdtElementLook(const char* local, xmlTextReader* reader,
                                      const OdtLook& outer, const OdtStyles& styles) {
  const bool paragraph = std::strcmp(local, "p") == 0 || std::strcmp(local, "h") == 0;
  if (paragraph || std::strcmp(local, "span") == 0 || std::strcmp(local, "a") == 0) {
    const std::optional<std::string> style =
        OdfAttribute(reader, kOdfText, "style-name", /*lower=*/false);
    if (!style && !paragraph) return std::nullopt;
    return styles.Apply(outer, paragraph ? OdtStyles::kParagraph : OdtStyles::kText,
                         style.value_or(""));
  }
  const bool hides = std::strcmp(local, "section") == 0
                         ? OdfAttribute(reader, kOdfText, "display") == "none"
                         : std::strcmp(local, "hidden-text") == 0 &&
                               OdfAttribute(reader, kOdfText, "is-hidden") != "false";
  if (!hides) return std::nullopt;
  OdtLook look = outer;
  look.display_none = true;
  return look;
}

// Streams the body XML into `out`. In DOCX text lives only inside <w:t>; in ODT any text
// inside a paragraph counts, and `styles` (required for ODT, unused for DOCX) collects
// content.xml's automatic styles on the way (ODF puts them before the body).
absl::Status ExtractBody(std::string_view xml, DocumentFormat format, const char* part,
                         const ConvertContext& ctx, TextBuilder* out, OdtStyles* styles = nullptr) {
  const std::string_view name = DocumentFormatName(format);
  const bool docx = format == DocumentFormat::kDocx;
  std::unique_ptr<xmlTextReader, ReaderCloser> reader(xmlReaderForMemory(
      xml.data(), static_cast<int>(xml.size()), part, nullptr,
      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_COMPACT));
  if (reader == nullptr) {
    return absl::ResourceExhaustedError(StrCat(name, ": cannot create an XML reader"));
  }
  int in_text = 0;     // DOCX: inside <w:t>
  bool run_hidden = false;  // DOCX: the current run's properties hide it
  int in_run_props = 0;     // DOCX: inside <w:rPr> of a run
  // ODT: the open paragraphs (<text:p>, <text:h>; a note's paragraphs nest in another),
  // each with where its text starts and whether a <text:hidden-paragraph> field hides it.
  std::vector<std::pair<uint32_t, bool>> paras;
  // ODT: the look of the text inside open elements that change it (styled paragraphs and
  // spans, hidden sections and fields), innermost last, with their depths.
  std::vector<std::pair<int, OdtLook>> looks;
  int skip_depth = -1; // depth of a skipped element, -1 when not skipping
  // Pictures in the flow of the text, which may stand for letters cut out of a word: DOCX
  // w:drawing holding a wp:inline (a wp:anchor floats beside the text wherever its run
  // sits), w:pict, w:object; ODT draw:frame anchored as a character holding a draw:image
  // (other anchors float too). The depth of the open container (-1: none), and whether its
  // picture was counted, so that what it nests (VML shapes, an ODT frame's alternative
  // images) counts once. A DOCX mc:Fallback repeats its mc:Choice's picture for older
  // readers: not counted.
  int image_depth = -1;
  bool image_marked = false;
  int fallback_depth = -1;
  uint64_t nodes = 0;
  int rc;
  while ((rc = xmlTextReaderRead(reader.get())) == 1) {
    if ((++nodes & 4095) == 0) {
      COPS_RETURN_IF_ERROR(ctx.CheckDeadline(name));
    }
    const int type = xmlTextReaderNodeType(reader.get());
    const int depth = xmlTextReaderDepth(reader.get());
    if (skip_depth >= 0) {
      if (type == XML_READER_TYPE_END_ELEMENT && depth == skip_depth) skip_depth = -1;
      continue;
    }
    if (type == XML_READER_TYPE_ELEMENT || type == XML_READER_TYPE_END_ELEMENT) {
      const char* local = reinterpret_cast<const char*>(xmlTextReaderConstLocalName(reader.get()));
      const Tag tag = docx ? DocxTag(local) : OdtTag(local);
      const bool start = type == XML_READER_TYPE_ELEMENT;
      const bool empty = start && xmlTextReaderIsEmptyElement(reader.get());
      if (docx && std::strcmp(local, "r") == 0) run_hidden = false;  // a run starts or ends
      if (docx && std::strcmp(local, "rPr") == 0 && !empty) in_run_props += start ? 1 : -1;
      if (docx && start && in_run_props > 0 && HidesRun(local, reader.get())) run_hidden = true;
      if (!docx) {
        styles->Collect("automatic-styles", reader.get(), local, start, empty, depth);
        if (!start && !looks.empty() && looks.back().first == depth) looks.pop_back();
        if (start && !empty) {
          if (std::optional<OdtLook> look = OdtElementLook(
                  local, reader.get(), looks.empty() ? OdtLook{} : looks.back().second, *styles)) {
            looks.emplace_back(depth, *look);
          }
        }
        if (start && std::strcmp(local, "hidden-paragraph") == 0 && !paras.empty() &&
            OdfAttribute(reader.get(), kOdfText, "is-hidden") != "false") {
          paras.back().second = true;
        }
      }
      if (!start && depth == image_depth) image_depth = -1;
      if (!start && depth == fallback_depth) fallback_depth = -1;
      if (start && fallback_depth < 0) {
        if (docx && std::strcmp(local, "Fallback") == 0) {
          if (!empty) fallback_depth = depth;
        } else if (image_depth < 0 && (docx ? IsDocxPicture(local)
                                            : !paras.empty() && std::strcmp(local, "frame") == 0)) {
          image_marked = docx && std::strcmp(local, "drawing") != 0;  // w:pict, w:object
          if (image_marked) out->MarkImage();
          // A floating ODT frame: taken as counted, so that its images are not.
          if (!docx) {
            image_marked = OdfAttribute(reader.get(), kOdfText, "anchor-type") != "as-char";
          }
          if (!empty) image_depth = depth;
        } else if (std::strcmp(local, docx ? "inline" : "image") == 0 && !image_marked &&
                   (image_depth >= 0 || (!docx && !paras.empty()))) {
          out->MarkImage();
          image_marked = image_depth >= 0;  // an ODT image outside a frame stands alone
        }
      }
      switch (tag) {
        case Tag::kSkip:
          if (start && !empty) skip_depth = depth;
          break;
        case Tag::kParagraph:
          if (start && !empty) paras.emplace_back(static_cast<uint32_t>(out->size()), false);
          if (!start && !paras.empty()) {
            if (paras.back().second) out->MarkHidden(paras.back().first);
            paras.pop_back();
          }
          if (!start || empty) out->ParagraphBreak();
          break;
        case Tag::kText:
          if (start && !empty) ++in_text;
          if (!start) --in_text;
          break;
        case Tag::kTab:
          if (start) out->AppendUnmapped("\t");
          break;
        case Tag::kBreak:
          if (start) out->LineBreak();
          break;
        case Tag::kSpace:
          if (start) {
            int count = 1;
            if (xmlChar* c = xmlTextReaderGetAttribute(reader.get(), BAD_CAST "text:c")) {
              count = std::clamp(std::atoi(reinterpret_cast<char*>(c)), 1, 1000);
              xmlFree(c);
            }
            out->AppendUnmapped(std::string(count, ' '));
          }
          break;
        case Tag::kOther:
          break;
      }
    } else if (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE ||
               type == XML_READER_TYPE_CDATA) {
      if (docx ? in_text > 0 : !paras.empty()) {
        const char* value = reinterpret_cast<const char*>(xmlTextReaderConstValue(reader.get()));
        const uint32_t before = static_cast<uint32_t>(out->size());
        if (value != nullptr) out->AppendUnmapped(value);
        if (docx ? run_hidden : !looks.empty() && looks.back().second.Hidden()) {
          out->MarkHidden(before);
        }
      }
    }
    if (out->overflowed()) return ctx.OutputTooLarge(name);
  }
  if (rc < 0) {
    return absl::InvalidArgumentError(
        StrCat(name, ": ", part, " is not well-formed XML (damaged or truncated document)"));
  }
  return absl::OkStatus();
}

// DOCX and ODT share the zip reader: `format` is kDocx or kOdt.
absl::StatusOr<ConvertedDocument> ConvertOffice(std::string_view input, DocumentFormat format,
                                                const ConvertContext& ctx) {
  OfficeReader zip(format, ctx);
  COPS_RETURN_IF_ERROR(zip.Open(input));
  const bool docx = format == DocumentFormat::kDocx;
  const char* part = docx ? "word/document.xml" : "content.xml";
  if (!docx && zip.Has("META-INF/manifest.xml")) {
    COPS_ASSIGN_OR_RETURN(const std::string manifest, zip.Read("META-INF/manifest.xml"));
    if (manifest.find("encryption-data") != std::string::npos) {
      return zip.Error(absl::StatusCode::kInvalidArgument,
                       "document is encrypted (password protected)");
    }
  }
  if (docx && zip.Has("EncryptionInfo")) {
    return zip.Error(absl::StatusCode::kInvalidArgument, "document is encrypted");
  }
  if (!zip.Has(part)) {
    return zip.Error(absl::StatusCode::kInvalidArgument,
                     StrCat("archive has no ", part, " (not a ",
                            docx ? "Word" : "OpenDocument text", " document?)"));
  }
  COPS_ASSIGN_OR_RETURN(const std::string xml, zip.Read(part));
  if (xml.size() > INT32_MAX) {
    return zip.Error(absl::StatusCode::kResourceExhausted, "body XML too large");
  }
  // ODT text is hidden by its styles. content.xml's automatic styles (where direct
  // formatting lands) build on the common ones of styles.xml, which are read only when hidden
  // text is looked for: parsing them costs ~1.5 ms per 100 KB, registration does not need it.
  OdtStyles styles;
  if (!docx && ctx.options.find_hidden_text && zip.Has("styles.xml")) {
    COPS_ASSIGN_OR_RETURN(const std::string styles_xml, zip.Read("styles.xml"));
    if (styles_xml.size() <= INT32_MAX) {
      COPS_RETURN_IF_ERROR(CollectOdtStyles(styles_xml, ctx, &styles));
    }
  }
  TextBuilder out(ctx.limits.max_output_bytes);
  COPS_RETURN_IF_ERROR(ExtractBody(xml, format, part, ctx, &out, docx ? nullptr : &styles));
  // Word keeps footnotes and endnotes in parts of their own; a reader sees them after the
  // body text (ODT has them inline).
  for (const char* notes : {"word/footnotes.xml", "word/endnotes.xml"}) {
    if (!docx || !zip.Has(notes)) continue;
    COPS_ASSIGN_OR_RETURN(const std::string notes_xml, zip.Read(notes));
    if (notes_xml.size() > INT32_MAX) continue;
    out.ParagraphBreak();
    COPS_RETURN_IF_ERROR(ExtractBody(notes_xml, format, notes, ctx, &out));
  }
  ConvertedDocument doc;
  doc.format = format;
  doc.charset = "UTF-8";
  out.Finish(&doc);
  return doc;
}

// A zip container holding `entry` (an entry name, or the content of ODF's mimetype file) in
// its first 64 KiB.
bool LooksLikeZipOf(std::string_view input, std::string_view entry) {
  if (!input.starts_with("PK\x03\x04")) return false;
  return input.substr(0, 64 << 10).find(entry) != std::string_view::npos;
}

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertDocx(std::string_view input, const ConvertContext& ctx) {
  return ConvertOffice(input, DocumentFormat::kDocx, ctx);
}

absl::StatusOr<ConvertedDocument> ConvertOdt(std::string_view input, const ConvertContext& ctx) {
  return ConvertOffice(input, DocumentFormat::kOdt, ctx);
}

Sniff SniffDocx(const SniffedInput& in) {
  return in.mime_matches || LooksLikeZipOf(in.input, "word/document.xml") ? Sniff::kCertain
                                                                          : Sniff::kNo;
}

Sniff SniffOdt(const SniffedInput& in) {
  return in.mime_matches || LooksLikeZipOf(in.input, "application/vnd.oasis.opendocument.text")
             ? Sniff::kCertain
             : Sniff::kNo;
}

}  // namespace cops
