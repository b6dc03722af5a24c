#ifndef COPS_CLIENT_COMPARE_H_
#define COPS_CLIENT_COMPARE_H_

// `cops compare PATH...` (issue 19): every document of a batch against every other, without
// registering anything, as MOSS and Dolos do for a class and a deduplicating corpus builder
// does for a collection. Runs on this machine, on our fingerprints and the detection
// pipeline: each document is converted (convert/converter.h), fingerprinted under the
// server's ChunkingParams (ServerChunkingParams(); the defaults without a server) with a
// key made from the batch's files (SHA-256 of each file's bytes, in sorted order: the same
// files give the same report, whatever their names and order), checked (core/detect.h)
// against an in-memory index of the documents before it (core/memory_index.h) and then
// added to it.
// Each pair is thus found once, from its later document, with the verified shares of both
// documents' text and the shared passages.
//
// Memory: the index (about 6 bytes per word of the batch for chunks, 4 for grams) plus each
// document's unit spans (8 bytes per word) and the pairs found; never two documents' texts
// at once, and no table of all pairs.
//
// Thread-safety: CompareFiles() may run concurrently with itself.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/converter.h"
#include "core/params.h"

namespace cops {

class Client;

struct CompareOptions {
  DocumentFormat format = DocumentFormat::kAuto;  // of every document
  // The chunking parameters to fingerprint with: the server's (ServerChunkingParams()), so
  // that the pairs are those the server would find; std::nullopt = ChunkingParams{}, the
  // defaults of a new index. key_id is ignored (the run has its own key, from its files).
  // Parameters without verification (verify_k 0) get kDefaultVerifyK-word grams here, which
  // compare needs to place passages.
  std::optional<ChunkingParams> params;
  // A pair is listed when it shares a passage of at least this many words, or, with
  // heavy_revisions, when its later document is a heavy revision of the earlier one: their
  // 3-grams in the order of both texts over 4% of each (CheckOptions::revision_share at
  // kHeavyRevisionShare, as copsd decides by default; docs/accuracy.md, "Ordered 3-grams").
  uint32_t min_passage_units = 8;
  bool heavy_revisions = true;
  // Documents converted and fingerprinted at once.
  int threads = 2;
};

struct ComparedDocument {
  std::string path;         // as given (or found below a directory given)
  absl::Status status;      // why it could not be compared (then it is in no pair)
  std::string format;       // the format parsed, e.g. "pdf"
  uint32_t words = 0;       // units after canonicalization
  uint64_t text_bytes = 0;  // of the extracted text
};

// A passage shared by a pair. Offsets are bytes of each document's extracted text
// (ExtractText(); the file itself for UTF-8 plain text), [start, end).
struct SharedPassage {
  uint32_t a_start = 0;
  uint32_t a_end = 0;
  uint32_t b_start = 0;
  uint32_t b_end = 0;
  uint32_t words = 0;  // of b the passage covers
};

struct DocumentPair {
  size_t a = 0;  // indices into Comparison::documents, a < b
  size_t b = 0;
  double a_in_b = 0;  // share of a's text found in b (verified word grams)
  double b_in_a = 0;  // share of b's text found in a
  // b is a heavy revision of a (CompareOptions::heavy_revisions); its passages then include
  // the chain's runs of 3 words and more.
  bool heavy_revision = false;
  std::vector<SharedPassage> passages;  // in b's order

  double Shared() const { return a_in_b > b_in_a ? a_in_b : b_in_a; }
};

struct Comparison {
  std::vector<ComparedDocument> documents;  // in input order
  // Pairs sharing a passage of min_passage_units words, or heavy revisions (CompareOptions):
  // by Shared() descending, then by
  // the smaller share descending, then by (a, b).
  std::vector<DocumentPair> pairs;
  // Documents linked by listed pairs (connected components of two or more), each in input
  // order; the largest first, then by first document.
  std::vector<std::vector<size_t>> clusters;
  std::string chunking;  // ChunkingParams::Describe() of the run (its key is not kept)
  // "server" when CompareOptions::params were given, "defaults" otherwise.
  std::string chunking_from;
  uint32_t verify_k = 0;
  uint32_t min_passage_units = 0;
  bool heavy_revisions = false;  // CompareOptions::heavy_revisions of the run
};

// Compares `paths` (files; see ExpandPaths() in client/batch_check.h). `progress(done,
// path)` is called after each document, on the calling thread. A document that cannot be
// read, converted, or has no words is kept with its status and compared with nothing.
// Errors: only INTERNAL when the fingerprinter cannot be set up.
absl::StatusOr<Comparison> CompareFiles(
    const std::vector<std::string>& paths, const CompareOptions& options,
    const std::function<void(size_t done, const std::string& path)>& progress = nullptr);

// The chunking parameters of `client`'s server: its GetStats chunking, or, for a caller
// not allowed statistics (owners, checkers), those a check of a one-word text reports (it
// matches nothing). Errors: the server's (UNAVAILABLE when unreachable), or INVALID_ARGUMENT
// when the description does not parse.
absl::StatusOr<ChunkingParams> ServerChunkingParams(Client* client);

// The text a document's passages index: the file converted as CompareFiles() converts it.
absl::StatusOr<ConvertedDocument> ExtractText(const std::string& path, DocumentFormat format);

// The pinned JSON of `cops compare --json` (issue 19), one object without newline:
// {"documents": [{"path", "format", "words", "text_bytes"} or {"path", "error"}],
//  "pairs": [{"a", "b", "a_in_b", "b_in_a", "heavy_revision", "passages": [{"a_start",
//  "a_end", "b_start", "b_end"}]}], "clusters": [[PATH...]], "corpus": [...], "params":
//  {"chunking", "chunking_from", "verify_k", "min_passage_units", "heavy_revisions"}}
// where `corpus_lines` are each document's check against the registered corpus as
// CheckJsonLine()/ErrorJsonLine() give them (empty when not checked). With
// `registered_lines` (`--register-into`), also "registered": the RegisterJsonLine() or
// ErrorJsonLine() of each document.
std::string CompareJson(const Comparison& comparison,
                        const std::vector<std::string>& corpus_lines,
                        const std::vector<std::string>* registered_lines = nullptr);

// The terminal form: the pair table, the clusters, and a one-line summary.
std::string CompareText(const Comparison& comparison);

}  // namespace cops

#endif  // COPS_CLIENT_COMPARE_H_
