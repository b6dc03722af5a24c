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
#include <memory>
#include <string>

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

// Whether the reader's current element has attribute `name` equal to `value`.
bool AttributeIs(xmlTextReader* reader, const char* name, std::string_view value) {
  xmlChar* v = xmlTextReaderGetAttribute(reader, BAD_CAST name);
  const bool is = v != nullptr && value == reinterpret_cast<const char*>(v);
  xmlFree(v);
  return is;
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

// Streams the body XML into `out`. In DOCX text lives only inside <w:t>; in ODT any text
// inside a paragraph counts.
absl::Status ExtractBody(std::string_view xml, DocumentFormat format, const char* part,
                         const ConvertContext& ctx, TextBuilder* out) {
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
  int in_para = 0;     // ODT: inside <text:p>/<text:h>
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
      if (!start && depth == image_depth) image_depth = -1;
      if (!start && depth == fallback_depth) fallback_depth = -1;
      if (start && fallback_depth < 0) {
        if (docx && std::strcmp(local, "Fallback") == 0) {
          if (!empty) fallback_depth = depth;
        } else if (image_depth < 0 && (docx ? IsDocxPicture(local)
                                            : in_para > 0 && std::strcmp(local, "frame") == 0)) {
          image_marked = docx && std::strcmp(local, "drawing") != 0;  // w:pict, w:object
          if (image_marked) out->MarkImage();
          // A floating ODT frame: taken as counted, so that its images are not.
          if (!docx) image_marked = !AttributeIs(reader.get(), "text:anchor-type", "as-char");
          if (!empty) image_depth = depth;
        } else if (std::strcmp(local, docx ? "inline" : "image") == 0 && !image_marked &&
                   (image_depth >= 0 || (!docx && in_para > 0))) {
          out->MarkImage();
          image_marked = image_depth >= 0;  // an ODT image outside a frame stands alone
        }
      }
      switch (tag) {
        case Tag::kSkip:
          if (start && !empty) skip_depth = depth;
          break;
        case Tag::kParagraph:
          if (start && !empty) ++in_para;
          if (!start) --in_para;
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
      if (docx ? in_text > 0 : in_para > 0) {
        const char* value = reinterpret_cast<const char*>(xmlTextReaderConstValue(reader.get()));
        const uint32_t before = static_cast<uint32_t>(out->size());
        if (value != nullptr) out->AppendUnmapped(value);
        if (docx && run_hidden) out->MarkHidden(before);
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
  TextBuilder out(ctx.limits.max_output_bytes);
  COPS_RETURN_IF_ERROR(ExtractBody(xml, format, part, ctx, &out));
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
