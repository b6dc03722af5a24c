#ifndef COPS_CONVERT_DOCUMENT_FORMAT_H_
#define COPS_CONVERT_DOCUMENT_FORMAT_H_

// The input formats, and every fact about each in one table (kDocumentFormats): its names,
// help text, MIME types and file name suffixes, its converter and its sniffing hook, where
// report offsets point, whether it is parsed in the sandbox and whether it must look like
// text. The proto mapping (protocol/), the CLI (client/), the HTTP API (http/), the
// converters, format detection and the check pipeline read it; none lists the formats
// itself. A new format is its value and row here and its converter,
// convert/<name>_converter.cc (which defines the converter and sniffing hook the row names).
//
// Thread-safety: constant data and plain functions.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cops {

// on-wire (proto DocumentFormat mirrors these values): do not change.
enum class DocumentFormat : uint8_t {
  kAuto = 0,  // detect from content
  kText = 1,
  kHtml = 2,
  kEmail = 3,
  kPdf = 4,
  kDocx = 5,
  kOdt = 6,
  kLatex = 7,
  kMarkdown = 8,
};

struct ConvertContext;     // convert/formats.h
struct ConvertedDocument;  // convert/converter.h

// What a sniffing hook sees of an input whose format is to be detected (DetectFormat).
struct SniffedInput {
  std::string_view input;    // all of it
  std::string_view head;     // its first 64 KiB, not cut inside a UTF-8 sequence
  std::string_view trimmed;  // `head` without leading white space
  // libmagic's MIME type is one of the row's mime_types (libmagic runs only on input that is
  // not clean UTF-8, and never in copsd: convert/formats.h, DetectFormatWithoutMagic).
  bool mime_matches = false;
  // Clean UTF-8 text, or no libmagic: structural text heuristics stand in for its MIME type.
  bool text_heuristics = false;
};

// A sniffing hook's answer. Detection takes the first kCertain row in table order (an exact
// signature: %PDF-, a zip container's entry), else the first kLikely one (heuristics and
// textual MIME types), else kText.
enum class Sniff : uint8_t { kNo, kLikely, kCertain };

// Where a check's report offsets point for a format.
enum class ReportOffsets : uint8_t {
  kInput,          // bytes of the input as sent (text formats: the converter keeps a byte map)
  kExtractedText,  // bytes of the extracted text (no map back to the input's bytes)
};

using FormatConverter = absl::StatusOr<ConvertedDocument> (*)(std::string_view input,
                                                              const ConvertContext& ctx);
using FormatSniffer = Sniff (*)(const SniffedInput& input);

// The converters and hooks the table names, defined in convert/<name>_converter.cc. Each
// converter returns a document with `format`, `text`, `segments` and `parts` filled, or an
// error whose message starts with the format name ("pdf: document is encrypted").
absl::StatusOr<ConvertedDocument> ConvertText(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertHtml(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertEmail(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertPdf(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertDocx(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertOdt(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertLatex(std::string_view input, const ConvertContext& ctx);
absl::StatusOr<ConvertedDocument> ConvertMarkdown(std::string_view input,
                                                  const ConvertContext& ctx);
Sniff SniffHtml(const SniffedInput& input);
Sniff SniffEmail(const SniffedInput& input);
Sniff SniffPdf(const SniffedInput& input);
Sniff SniffDocx(const SniffedInput& input);
Sniff SniffOdt(const SniffedInput& input);
Sniff SniffLatex(const SniffedInput& input);
Sniff SniffMarkdown(const SniffedInput& input);

struct DocumentFormatInfo {
  DocumentFormat format;
  std::string_view name;                    // in requests, records and on the command line
  std::array<std::string_view, 3> aliases;  // other names a client may send; empty: none
  std::string_view help;
  // Content-Type values the HTTP API takes for it (lower case, no parameters), also the
  // names libmagic and email attachments give it. The first is the format's own.
  std::array<std::string_view, 3> mime_types;
  // File name suffixes (lower case) that name it, for email attachments.
  std::array<std::string_view, 2> suffixes;
  FormatConverter convert;  // nullptr: kAuto (detected first)
  FormatSniffer sniff;      // nullptr: never detected by content (kText is the fallback)
  ReportOffsets offsets;
  // Parsed by C libraries (libxml2, gmime, poppler, libzip): in the sandboxed worker
  // process, never in copsd (convert/sandbox.h).
  bool sandboxed;
  // Input must look like text (CheckLooksLikeText refuses binary data declared as it).
  bool textual;
  // Read when an email carries it as an attachment.
  bool attachment;
};

inline constexpr DocumentFormatInfo kDocumentFormats[] = {
    {DocumentFormat::kAuto, "auto", {}, "detect from the content", {"application/octet-stream"},
     {}, nullptr, nullptr, ReportOffsets::kInput, true, false, false},
    {DocumentFormat::kText, "text", {"txt", "plain"}, "plain text in any charset",
     {"text/plain"}, {".txt"}, &ConvertText, nullptr, ReportOffsets::kInput, false, true, true},
    {DocumentFormat::kHtml, "html", {"htm"}, "HTML", {"text/html", "application/xhtml+xml"},
     {".html", ".htm"}, &ConvertHtml, &SniffHtml, ReportOffsets::kInput, true, true, true},
    {DocumentFormat::kEmail, "email", {"eml", "mail", "rfc822"},
     "a MIME message and its attachments", {"message/rfc822"}, {".eml"}, &ConvertEmail,
     &SniffEmail, ReportOffsets::kExtractedText, true, false, false},
    {DocumentFormat::kPdf, "pdf", {}, "PDF", {"application/pdf"}, {".pdf"}, &ConvertPdf,
     &SniffPdf, ReportOffsets::kExtractedText, true, false, true},
    {DocumentFormat::kDocx, "docx", {}, "Word (Office Open XML)",
     {"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}, {".docx"},
     &ConvertDocx, &SniffDocx, ReportOffsets::kExtractedText, true, false, true},
    {DocumentFormat::kOdt, "odt", {}, "OpenDocument text",
     {"application/vnd.oasis.opendocument.text"}, {".odt"}, &ConvertOdt, &SniffOdt,
     ReportOffsets::kExtractedText, true, false, true},
    {DocumentFormat::kLatex, "latex", {"tex"}, "LaTeX source",
     {"text/x-tex", "application/x-tex", "application/x-latex"}, {".tex"}, &ConvertLatex,
     &SniffLatex, ReportOffsets::kInput, false, true, true},
    {DocumentFormat::kMarkdown, "markdown", {"md"}, "Markdown", {"text/markdown"}, {".md"},
     &ConvertMarkdown, &SniffMarkdown, ReportOffsets::kInput, false, true, true},
};

// The row of `format`; nullptr for a value outside the table.
const DocumentFormatInfo* FindDocumentFormat(DocumentFormat format);
// Whether `value` is a DocumentFormat of the table (the range check of every boundary).
bool IsDocumentFormat(int value);
// The names joined by `separator`, for help texts and error messages.
std::string DocumentFormatNames(std::string_view separator = ", ");
std::string_view DocumentFormatName(DocumentFormat f);                      // "text", "pdf", ...
absl::StatusOr<DocumentFormat> ParseDocumentFormat(std::string_view name);  // "auto" too
// The format a media type (lower case, without parameters) names; std::nullopt for one no
// row lists. "application/octet-stream" is kAuto.
std::optional<DocumentFormat> DocumentFormatOfMimeType(std::string_view media_type);
// Every media type of the table, joined by `separator` (the HTTP API's error message).
std::string DocumentMimeTypes(std::string_view separator = ", ");
// Whether a check's report offsets for `format` index the extracted text rather than the
// input (PDF, DOCX, ODT, email).
bool SpansIndexExtractedText(DocumentFormat format);

}  // namespace cops

#endif  // COPS_CONVERT_DOCUMENT_FORMAT_H_
