#ifndef COPS_CONVERT_CONVERTER_H_
#define COPS_CONVERT_CONVERTER_H_

// Converters: the formats users send (plain text in any common charset, HTML, MIME email,
// PDF, DOCX, ODT, LaTeX, Markdown: the table of convert/document_format.h) turned into UTF-8
// text with paragraph breaks, plus a map from text offsets back to positions in the original
// bytes.
//
// Thread-safety: Convert() is safe to call from many threads.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "convert/document_format.h"

namespace cops {

struct ConvertLimits {
  uint64_t max_input_bytes = 64ull << 20;        // larger input: RESOURCE_EXHAUSTED
  uint64_t max_output_bytes = 64ull << 20;       // extracted text cap
  uint64_t max_uncompressed_bytes = 256ull << 20;  // zip-based formats (zip bombs)
  uint32_t time_budget_ms = 10000;                // per document
  uint64_t max_memory_bytes = 1ull << 30;         // worker process address space
  // Added: at most this many entries in a zip container (DOCX, ODT); more: RESOURCE_EXHAUSTED.
  uint32_t max_zip_entries = 10000;
  // Added: parse untrusted formats (HTML, email, PDF, DOCX, ODT) in this process instead of
  // the sandboxed worker. Only for the worker itself, fuzzers and benchmarks: a hostile
  // document may then crash or hang the caller.
  bool in_process = false;
};

// Added: what to leave out of the extracted text. Defaults keep everything.
struct ConvertOptions {
  bool drop_quoted_lines = false;  // email: lines starting with '>' (quoted replies)
  bool drop_signature = false;     // email: everything after a "-- " signature line
  // PDF: lines repeated at the top or bottom of most pages (running headers, footers,
  // page numbers). Trade-off: a genuinely repeated first/last line is lost too.
  bool drop_headers_footers = false;
  // Look for text hidden from a reader (ConvertedDocument::hidden). HTML, DOCX, ODT and
  // LaTeX find it as they parse, whatever this says, but ODT reads the common styles of its
  // styles.xml for it only when this is true (a named style made white; direct formatting
  // is in content.xml); PDF renders its pages with text for it, which makes its
  // conversion several times slower (docs/performance.md): registration, which reports no
  // manipulation, turns it off.
  bool find_hidden_text = true;
};

// A stretch of `text` that maps linearly onto the original bytes.
struct OffsetSegment {
  uint32_t text_offset = 0;      // start in ConvertedDocument::text
  uint32_t original_offset = 0;  // start in the original bytes
  uint32_t page = 0;             // 1-based PDF page, 0 when not paged
};

// Email reports one part per body text part (name "body", format text or html) and one per
// converted document attachment (its file name and format). Other formats report none.
struct ConvertedPart {  // e.g. an email attachment
  std::string name;
  DocumentFormat format = DocumentFormat::kText;
  uint32_t text_start = 0;  // [text_start, text_end) in ConvertedDocument::text
  uint32_t text_end = 0;
};

// Text the document hides from a reader (HTML display:none, visibility:hidden, the hidden
// attribute, font size <= 1pt, white text; DOCX w:vanish, white colour, size <= 1pt; ODT
// styles of white, <= 1pt or text:display="none" text, hidden-text and hidden-paragraph
// fields, hidden sections; LaTeX white text, \phantom, \fontsize <= 1pt; PDF words of 1 pt
// or below, or leaving no ink on the rendered page: white, render mode 3, painted over;
// thresholds in convert/hidden_style.h): bytes [text_start, text_end) of
// ConvertedDocument::text. The text stays in
// the extracted text (it is what was sent); the check reports it as manipulation
// (core/manipulation.h).
struct HiddenText {
  uint32_t text_start = 0;
  uint32_t text_end = 0;
};

// An image placed inside a word, letters or digits right before and after it ("Pay<img>al"
// in HTML, a picture run between two runs of one word in DOCX): writers replace letters by
// pictures of them, so the extracted text reads "Payal" and its word hashes miss the copy.
// Bytes [text_start, text_end) of ConvertedDocument::text are the word that held it, and
// `images` how many it held (one entry per word keeps the list no longer than the text's
// words, however many images a document piles up). Reported as manipulation too.
struct ImageInWord {
  uint32_t text_start = 0;
  uint32_t text_end = 0;
  uint32_t images = 0;
};

struct ConvertedDocument {
  DocumentFormat format = DocumentFormat::kText;  // the format actually parsed
  std::string text;                   // UTF-8; paragraphs separated by a blank line
  std::string charset;                // detected source charset for text formats
  std::vector<OffsetSegment> segments;  // sorted by text_offset; may be empty (no map)
  std::vector<ConvertedPart> parts;
  std::vector<HiddenText> hidden;  // in text order, not overlapping
  std::vector<ImageInWord> image_in_word;  // in text order, not overlapping

  // Maps a byte offset in `text` to the best known byte offset in the original input
  // (identity when the input was UTF-8 plain text). Returns text_offset when no map.
  uint32_t OriginalOffset(uint32_t text_offset) const;
  // 1-based page containing text_offset, 0 when not paged.
  uint32_t PageOf(uint32_t text_offset) const;
};

// ConvertedDocument::OriginalOffset for many offsets of one document: the same answers, but a
// call whose offset is not below the previous one walks forward from the previous segment
// instead of searching all of them (spans come in text order: a pass over a fingerprint's
// units costs one walk over the map). Holds a reference to `doc`.
class OriginalOffsetWalker {
 public:
  explicit OriginalOffsetWalker(const ConvertedDocument& doc) : segments_(doc.segments) {}
  uint32_t operator()(uint32_t text_offset);

 private:
  const std::vector<OffsetSegment>& segments_;
  size_t after_ = 0;  // the first segment starting after the last offset asked for
};

// Converts `input` declared as `format` (kAuto: detect). Errors name the format and the
// problem: INVALID_ARGUMENT (malformed, truncated, encrypted, unknown format),
// RESOURCE_EXHAUSTED (size, decompression or time limits). Untrusted binary formats are
// parsed in a sandboxed worker process so a hostile document cannot take the caller down.
absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits = {});

// Added: as above, with options. The worker executable `cops-convert-worker` is found, in
// order, at $COPS_CONVERT_WORKER, next to the running executable (/proc/self/exe), in the
// installed layout (<libexecdir>/cops, convert/sandbox.h), or in the build tree it was
// compiled in. Worker failures: a document that exceeds the CPU or
// wall-clock budget, or C++ allocation at the memory limit, is RESOURCE_EXHAUSTED; a worker
// that cannot be started is INTERNAL; a worker crash is INVALID_ARGUMENT (the document is
// hostile, or a C library such as poppler aborted at the memory limit: the message says so).
absl::StatusOr<ConvertedDocument> Convert(std::string_view input, DocumentFormat format,
                                          const ConvertLimits& limits,
                                          const ConvertOptions& options);

// Added: converts in this process, whatever limits.in_process says (used by the worker and
// the fuzzers). The time budget is checked between pages, entries and parts, not inside
// a library call.
absl::StatusOr<ConvertedDocument> ConvertInProcess(std::string_view input,
                                                   DocumentFormat format,
                                                   const ConvertLimits& limits = {},
                                                   const ConvertOptions& options = {});

// Added: converts one document in a sandbox: ConvertInWorker (convert/sandbox.h, a process
// per document) or ConvertWorkerPool::Convert (convert/worker_pool.h, long-lived processes).
using SandboxConverter = std::function<absl::StatusOr<ConvertedDocument>(
    std::string_view input, DocumentFormat format, const ConvertLimits& limits,
    const ConvertOptions& options)>;

// Added: an email converted in this process (gmime, and the text, HTML, Markdown and LaTeX
// converters for its body parts and attachments: all fuzzed, fuzz/convert_fuzzer.cc and
// fuzz/milter_fuzzer.cc) except its PDF, DOCX and ODT attachments, which C libraries parse
// from binary input: those go to `sandbox`, with the time left of limits.time_budget_ms.
// For callers that read much mail (cops-milter), for whom a process per message costs more
// than the rest of the work. Otherwise Convert(input, DocumentFormat::kEmail, limits,
// options): the same text, parts and errors. An attachment the sandbox rejects
// (INVALID_ARGUMENT: damaged, encrypted, or its parser crashed) is left out like any damaged
// attachment; RESOURCE_EXHAUSTED and INTERNAL (no worker) from the sandbox fail the message.
absl::StatusOr<ConvertedDocument> ConvertEmailInProcess(std::string_view input,
                                                        const ConvertLimits& limits,
                                                        const ConvertOptions& options,
                                                        const SandboxConverter& sandbox);

// Added: OK when `input` can be text of the textual format `format` (text, Markdown, LaTeX,
// HTML; other formats are not checked). INVALID_ARGUMENT naming what the input looks like
// (libmagic's MIME type and why) when it is binary data: more than 1% control bytes or a NUL
// in its first 64 KiB (tab, line breaks, form feed and ESC excepted; UTF-16/32 text is
// recognised first), a MIME type of an executable, archive, image, audio, video, font, PDF or
// office file, or bytes that decode in their detected charset into something no one wrote
// (random or compressed data: CheckDecodesAsText, convert/charset.h). Called by
// ConvertInProcess() after format detection, so a declared format is checked too, and (without
// libmagic) by Convert() for the formats it converts in process.
absl::Status CheckLooksLikeText(std::string_view input, DocumentFormat format);

// Added: the format `input` looks like (libmagic plus a few content checks); kText when
// nothing more specific is recognised. Never kAuto. Runs in the calling process (libmagic
// reads at most the first 1 MiB). Convert() does not call it: copsd recognises text without
// libmagic and leaves the rest to the worker, where libmagic runs sandboxed.
DocumentFormat DetectFormat(std::string_view input);

}  // namespace cops

#endif  // COPS_CONVERT_CONVERTER_H_
