#ifndef COPS_TESTS_TESTING_DOCUMENTS_H_
#define COPS_TESTS_TESTING_DOCUMENTS_H_

// Writers for small but real documents of every format, so converter tests, fuzz seeds
// and benchmarks need no committed binaries. Each writer emits the format by hand (PDF
// with a correct xref table) or through libzip (DOCX, ODT).
//
// Thread-safety: pure functions.

#include <string>
#include <utility>
#include <vector>

namespace cops::testing {

// A page is a list of lines; an empty line leaves a vertical gap.
using PdfPage = std::vector<std::string>;

// An entry of a PdfPage that is not a line: content-stream operators written as they are
// before the lines after it, e.g. PdfOperators("1 1 1 rg") for white text, "3 Tr" for
// invisible text, "/F1 1 Tf" for 1 pt text.
std::string PdfOperators(const std::string& operators);

// A PDF 1.4 file with one Helvetica text line per entry (UTF-8 input, Latin-1 subset),
// 11 pt, black. `encrypt` adds a Standard security handler whose user password is not empty, so a
// reader must ask for it.
std::string MakePdf(const std::vector<PdfPage>& pages, bool encrypt = false);

// Wraps paragraphs into lines of about `width` characters (no hyphenation).
PdfPage WrapLines(const std::vector<std::string>& paragraphs, size_t width = 70);

// Paragraphs wrapped and laid out on as many pages as they need.
std::string MakePdfFromParagraphs(const std::vector<std::string>& paragraphs);

// A zip archive of (name, content) entries, deflated, or stored when `deflate` is false
// (several times faster to write and read: fuzz/convert_fuzzer.cc packs every input).
std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& entries,
                    bool deflate = true);

// Minimal Word and OpenDocument text files, one paragraph per entry ("\t" becomes a tab
// element). Paragraphs must not contain XML metacharacters.
std::string MakeDocx(const std::vector<std::string>& paragraphs);
std::string MakeOdt(const std::vector<std::string>& paragraphs);
// Their body parts alone: word/document.xml and content.xml.
std::string DocxDocumentXml(const std::vector<std::string>& paragraphs);
std::string OdtContentXml(const std::vector<std::string>& paragraphs);

std::string Base64(std::string_view bytes);

// The same paragraphs in several formats, for cross-format comparisons.
std::string MakeHtml(const std::vector<std::string>& paragraphs);
std::string MakeText(const std::vector<std::string>& paragraphs);
std::string MakeLatex(const std::vector<std::string>& paragraphs);
std::string MakeMarkdown(const std::vector<std::string>& paragraphs);
std::string MakeEmail(const std::vector<std::string>& paragraphs);

// `n` paragraphs of pseudo-random English-like prose (deterministic in `seed`).
std::vector<std::string> Prose(size_t n, uint32_t seed = 1);

// A source, a person's heavy rewrite of it that keeps the content words side by side
// ("drip irrigation", "pressure regulator") but shares no run of 5 words, and a text on
// the same subject by someone else. Written for the content-stem pair tests. `reworded`:
// another rewrite, which keeps some of the source's 3-word runs in its order, one run of 6
// words and no passage of 8 (CheckOptions::revision_share, the heavy-revision rule).
struct HeavyRewrite {
  const char* source;
  const char* rewrite;
  const char* same_subject;
  const char* reworded;
};
extern const HeavyRewrite kDripIrrigation;

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_DOCUMENTS_H_
