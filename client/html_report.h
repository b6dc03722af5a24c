#ifndef COPS_CLIENT_HTML_REPORT_H_
#define COPS_CLIENT_HTML_REPORT_H_

// The similarity report people read (`cops check --html`, `cops compare --html`; issue 19),
// after the reports editors know from iThenticate and teachers from MOSS/Dolos: one
// self-contained HTML page (inline style, no script, no network, no external assets).
//
// For each checked document: the overall similarity (share of its text inside matched
// passages), the sources ranked with their shares and a colour each, the document's text
// with each matched passage highlighted in its source's colour, each source's passages side
// by side with the registered text where the caller may read it (byte offsets otherwise),
// and the parameters of the check.
//
// Best-source allocation: each byte of the test text counts once, for the source that
// explains it best (sources taken by ratio, highest first; a passage's bytes already given
// to a better source are not given again), so twenty copies of one source do not add up to
// twenty times the same text. Each source shows its allocated share next to its ratio.
//
// Exclusions (docs/reports.md): excluded passages are allocated to no source; shares and the
// overall figure are of the text not excluded (CheckDocumentReply.excluded left out). The
// excluded parts are listed with their reasons, and in the text a matched passage that does
// not count is struck through in grey (<mark class=excluded data-excluded=REASON>), an
// excluded part nothing matched is grey (<span class=excluded ...>); side by side, an
// excluded passage says why.
//
// Every text from a document, a title, a path or the server is HTML-escaped (and invalid
// UTF-8 replaced), so hostile text is shown, never interpreted.
//
// Thread-safety: stateless functions; HtmlReport is not thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/compare.h"
#include "proto/cops.pb.h"

namespace cops {

// `text` with & < > " ' escaped and each invalid UTF-8 sequence replaced by U+FFFD.
std::string EscapeHtml(std::string_view text);

// The colour of the i-th ranked source ("#rrggbb", light enough for black text).
std::string SourceColour(size_t i);

// One passage of the test text given to one source by best-source allocation.
struct AllocatedRange {
  uint32_t start = 0;  // bytes of the test text, [start, end)
  uint32_t end = 0;
  int source = -1;     // index into reply.matches()
};

// Best-source allocation over `reply.matches()` (in reply order: ratio descending): the
// test text's matched byte ranges, sorted and disjoint, each with the source it counts for.
// Excluded spans (Span.excluded) count for no source.
// REQUIRES: spans index a text of `text_bytes` bytes (spans past it are cut).
std::vector<AllocatedRange> AllocatePassages(const v1::CheckDocumentReply& reply,
                                             uint32_t text_bytes);

// A registered document's text for the side-by-side view: its registered bytes when the
// caller may read them and its format has byte offsets (text, HTML, LaTeX, Markdown); else
// nullopt (the view then shows offsets only).
using RegisteredTextFn = std::function<std::optional<std::string>(uint64_t doc_id)>;
// The RegisteredTextFn of a server: Client::Get(doc_id, include_content) (any error means
// offsets only), remembering up to 256 documents.
RegisteredTextFn RegisteredTextFrom(Client* client);

// Builds one page of check reports, document by document.
class CheckHtmlReport {
 public:
  explicit CheckHtmlReport(RegisteredTextFn registered_text)
      : registered_text_(std::move(registered_text)) {}

  // Adds a checked document: its path, the bytes checked, and the reply.
  void Add(const std::string& path, const std::string& content,
           const v1::CheckDocumentReply& reply);
  // Adds a document that could not be checked.
  void AddError(const std::string& path, const absl::Status& error);

  // The whole page.
  std::string Finish() const;

 private:
  RegisteredTextFn registered_text_;
  std::string summary_rows_;  // one table row per document
  std::string sections_;      // one section per document
  size_t documents_ = 0;
};

// The page of a `cops compare` run: pair table (both shares), clusters, the shared passages
// of the first `max_pairs` pairs side by side (texts re-extracted with ExtractText()), and
// each document's check against the corpus when given (`corpus`: replies or errors in
// document order, empty when not checked).
std::string CompareHtmlReport(const Comparison& comparison, DocumentFormat format,
                              const std::vector<absl::StatusOr<v1::CheckDocumentReply>>& corpus,
                              size_t max_pairs = 200);

}  // namespace cops

#endif  // COPS_CLIENT_HTML_REPORT_H_
