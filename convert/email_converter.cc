// Email (RFC 5322 / MIME) with gmime 3: the subject, then the readable body parts in order.
// multipart/alternative prefers text/plain and falls back to text/html; transfer encodings
// (base64, quoted-printable) are undone by gmime and charsets honoured; attachments that
// are documents (PDF, DOCX, ODT, HTML, text, Markdown, LaTeX) are converted in this same
// process (Convert() already sandboxes the whole email), or, for PDF, DOCX and ODT, by the
// context's sandbox (ConvertEmailInProcess), and reported as parts. Quoted reply lines
// and signatures can be left out (ConvertOptions).
//
// The body is decoded, so there is no byte map into the original (segments empty).

#include <gmime/gmime.h>

#include <mutex>
#include <string>

#include "convert/charset.h"
#include "convert/formats.h"
#include "convert/text_builder.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops {
namespace {

constexpr int kMaxMimeDepth = 32;

template <typename T>
struct GObjectPtr {
  T* p = nullptr;
  explicit GObjectPtr(T* v) : p(v) {}
  ~GObjectPtr() {
    if (p != nullptr) g_object_unref(p);
  }
  GObjectPtr(const GObjectPtr&) = delete;
  GObjectPtr& operator=(const GObjectPtr&) = delete;
};

std::string Lower(const char* s) { return s == nullptr ? "" : AsciiLower(s); }

// The decoded (transfer-encoding undone) bytes of a leaf part.
std::string PartBytes(GMimePart* part) {
  GMimeDataWrapper* content = g_mime_part_get_content(part);
  if (content == nullptr) return "";
  GObjectPtr<GMimeStream> mem(g_mime_stream_mem_new());
  g_mime_data_wrapper_write_to_stream(content, mem.p);
  GByteArray* bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem.p));
  return bytes == nullptr ? "" : std::string(reinterpret_cast<const char*>(bytes->data), bytes->len);
}

// The format an attachment is in, from its MIME type or file name (the table's
// mime_types and suffixes); kAuto when it is not a document we read (images, archives, ...).
// A binary format named either way wins over a textual one, and any other over plain text
// (a "notes.md" sent as text/plain is Markdown).
DocumentFormat AttachmentFormat(GMimeContentType* type, const std::string& filename) {
  const std::string mime = Lower(g_mime_content_type_get_mime_type(type));
  const std::string name = AsciiLower(filename);
  DocumentFormat found = DocumentFormat::kAuto;
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    if (!f.attachment) continue;
    bool named = false;
    for (std::string_view m : f.mime_types) named |= !m.empty() && mime == m;
    for (std::string_view suffix : f.suffixes) named |= !suffix.empty() && name.ends_with(suffix);
    if (!named) continue;
    if (!f.textual) return f.format;
    if (found == DocumentFormat::kAuto || found == DocumentFormat::kText) found = f.format;
  }
  return found;
}

class EmailWalker {
 public:
  EmailWalker(const ConvertContext& ctx, TextBuilder* out, ConvertedDocument* doc)
      : ctx_(ctx), out_(out), doc_(doc) {}

  absl::Status Walk(GMimeObject* obj, int depth) {
    if (obj == nullptr) return absl::OkStatus();
    if (depth > kMaxMimeDepth) {
      return absl::InvalidArgumentError("email: MIME parts nested too deeply");
    }
    COPS_RETURN_IF_ERROR(ctx_.CheckDeadline("email"));
    if (GMIME_IS_MESSAGE_PART(obj)) {
      GMimeMessage* inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(obj));
      if (inner == nullptr) return absl::OkStatus();
      AddSubject(inner);
      return Walk(g_mime_message_get_mime_part(inner), depth + 1);
    }
    if (GMIME_IS_MULTIPART(obj)) {
      GMimeMultipart* multi = GMIME_MULTIPART(obj);
      GMimeContentType* type = g_mime_object_get_content_type(obj);
      const int n = g_mime_multipart_get_count(multi);
      if (type != nullptr && g_mime_content_type_is_type(type, "multipart", "alternative")) {
        return Walk(PickAlternative(multi), depth + 1);
      }
      for (int i = 0; i < n; ++i) {
        if (absl::Status s = Walk(g_mime_multipart_get_part(multi, i), depth + 1); !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    }
    if (GMIME_IS_PART(obj)) return Leaf(GMIME_PART(obj));
    return absl::OkStatus();
  }

  void AddSubject(GMimeMessage* message) {
    const char* subject = g_mime_message_get_subject(message);
    if (subject == nullptr || *subject == '\0') return;
    out_->ParagraphBreak();
    out_->AppendUnmapped(ToUtf8(subject, "UTF-8"));
    out_->ParagraphBreak();
  }

 private:
  static GMimeObject* PickAlternative(GMimeMultipart* multi) {
    const int n = g_mime_multipart_get_count(multi);
    GMimeObject* html = nullptr;
    for (int i = 0; i < n; ++i) {
      GMimeObject* child = g_mime_multipart_get_part(multi, i);
      GMimeContentType* type = g_mime_object_get_content_type(child);
      if (type == nullptr) continue;
      if (g_mime_content_type_is_type(type, "text", "plain")) return child;
      if (html == nullptr && g_mime_content_type_is_type(type, "text", "html")) html = child;
      if (html == nullptr && GMIME_IS_MULTIPART(child)) html = child;  // e.g. related
    }
    return html != nullptr ? html : (n > 0 ? g_mime_multipart_get_part(multi, 0) : nullptr);
  }

  // Plain body text without quoted lines / signature as the options ask.
  std::string FilterBody(const std::string& text) const {
    if (!ctx_.options.drop_quoted_lines && !ctx_.options.drop_signature) return text;
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + pos, end - pos);
      pos = end + 1;
      std::string_view bare = line;
      if (!bare.empty() && bare.back() == '\r') bare.remove_suffix(1);
      if (ctx_.options.drop_signature && (bare == "-- " || bare == "--")) break;
      if (ctx_.options.drop_quoted_lines) {
        size_t k = bare.find_first_not_of(" \t");
        if (k != std::string_view::npos && bare[k] == '>') continue;
      }
      out.append(line);
      out.push_back('\n');
    }
    return out;
  }

  void AppendDocument(const ConvertedDocument& part_doc, const std::string& name,
                      DocumentFormat format) {
    out_->ParagraphBreak();
    const uint32_t start = static_cast<uint32_t>(out_->size());
    out_->AppendUnmapped(part_doc.text);
    doc_->parts.push_back({name, format, start, static_cast<uint32_t>(out_->size())});
    out_->ParagraphBreak();
  }

  absl::Status Leaf(GMimePart* part) {
    GMimeObject* obj = GMIME_OBJECT(part);
    GMimeContentType* type = g_mime_object_get_content_type(obj);
    if (type == nullptr) return absl::OkStatus();
    const char* filename_c = g_mime_part_get_filename(part);
    const std::string filename = filename_c == nullptr ? "" : filename_c;
    const bool attachment = g_mime_part_is_attachment(part) || !filename.empty();
    const std::string charset = Lower(g_mime_content_type_get_parameter(type, "charset"));

    if (!attachment && g_mime_content_type_is_type(type, "text", "plain")) {
      std::string text = FilterBody(ToUtf8(PartBytes(part), charset));
      ConvertedDocument body;
      body.text = std::move(text);
      AppendDocument(body, "body", DocumentFormat::kText);
      return absl::OkStatus();
    }
    if (!attachment && g_mime_content_type_is_type(type, "text", "html")) {
      COPS_ASSIGN_OR_RETURN(ConvertedDocument html,
                            ConvertHtml(ToUtf8(PartBytes(part), charset), ctx_));
      html.text = FilterBody(html.text);
      AppendDocument(html, "body", DocumentFormat::kHtml);
      return absl::OkStatus();
    }
    if (!attachment) return absl::OkStatus();  // inline images and the like
    const DocumentFormat format = AttachmentFormat(type, filename);
    if (format == DocumentFormat::kAuto) return absl::OkStatus();
    std::string bytes = PartBytes(part);
    const DocumentFormatInfo& info = *FindDocumentFormat(format);
    // Our own parsers take UTF-8; C libraries (HTML, PDF, DOCX, ODT) find the charset.
    if (!info.sandboxed && !charset.empty()) bytes = ToUtf8(bytes, charset);
    // Formats read by C libraries from binary input go to the sandbox.
    auto converted = ctx_.sandbox != nullptr && info.sandboxed && !info.textual
                         ? (*ctx_.sandbox)(bytes, format, ctx_.LimitsLeft(), ctx_.options)
                         : ConvertFormat(bytes, format, ctx_);
    if (!converted.ok()) {
      // A damaged attachment does not spoil the message; time and size limits do, and so
      // does a sandbox that cannot run.
      const absl::StatusCode code = converted.status().code();
      if (code == absl::StatusCode::kResourceExhausted || code == absl::StatusCode::kInternal) {
        return converted.status();
      }
      return absl::OkStatus();
    }
    AppendDocument(*converted, filename.empty() ? "attachment" : filename, format);
    return absl::OkStatus();
  }

  const ConvertContext& ctx_;
  TextBuilder* out_;
  ConvertedDocument* doc_;
};

std::once_flag gmime_init_once;

}  // namespace

absl::StatusOr<ConvertedDocument> ConvertEmail(std::string_view input, const ConvertContext& ctx) {
  std::call_once(gmime_init_once, [] { g_mime_init(); });
  GObjectPtr<GMimeStream> stream(g_mime_stream_mem_new_with_buffer(input.data(), input.size()));
  GObjectPtr<GMimeParser> parser(g_mime_parser_new_with_stream(stream.p));
  g_mime_parser_set_format(parser.p, GMIME_FORMAT_MESSAGE);
  GObjectPtr<GMimeMessage> message(g_mime_parser_construct_message(parser.p, nullptr));
  if (message.p == nullptr) {
    return absl::InvalidArgumentError("email: not a MIME message (no header block)");
  }
  GMimeHeaderList* headers = g_mime_object_get_header_list(GMIME_OBJECT(message.p));
  if (headers == nullptr || g_mime_header_list_get_count(headers) == 0) {
    return absl::InvalidArgumentError("email: message has no header fields");
  }
  ConvertedDocument doc;
  doc.format = DocumentFormat::kEmail;
  doc.charset = "UTF-8";
  TextBuilder out(ctx.limits.max_output_bytes);
  EmailWalker walker(ctx, &out, &doc);
  walker.AddSubject(message.p);
  if (absl::Status s = walker.Walk(g_mime_message_get_mime_part(message.p), 0); !s.ok()) {
    return s;
  }
  if (out.overflowed()) return ctx.OutputTooLarge("email");
  out.Finish(&doc);
  // Finish trims the tail: keep part ranges inside the text.
  const uint32_t size = static_cast<uint32_t>(doc.text.size());
  for (ConvertedPart& p : doc.parts) {
    p.text_start = std::min(p.text_start, size);
    p.text_end = std::min(p.text_end, size);
  }
  return doc;
}

namespace {

bool EqualsIgnoreCase(std::string_view s, std::string_view lower) {
  return s.size() == lower.size() && AsciiLower(s) == lower;
}

// RFC 5322 header block: several "Name: value" lines at the top including From or Received
// and one of Subject/Date/Message-ID/MIME-Version.
bool LooksLikeEmail(std::string_view head) {
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
      return line == 0 && l.starts_with("From ");  // mbox "From " line
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

}  // namespace

Sniff SniffEmail(const SniffedInput& in) {
  return in.mime_matches || LooksLikeEmail(in.head) ? Sniff::kLikely : Sniff::kNo;
}

}  // namespace cops
