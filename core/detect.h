#ifndef COPS_CORE_DETECT_H_
#define COPS_CORE_DETECT_H_

// The detection pipeline: from a test document's fingerprint to its finished Report. The
// server (server/copy_detector.cc) and the evaluation harness (eval/) both run it, over the
// RocksDB index and over an in-memory index, through the CandidateSource interface.
//
//   1. Candidates: the test's chunks are looked up in the sampled inverted index in one
//      batch (CandidateSource::Lookup) and MatchSet::Tally counts matches per document.
//      A short test (kShortTestChunks) keeps every chunk, and looks them up in two phases:
//      first its selection (DocumentFingerprint::selection), whose candidates go through
//      steps 2-3; then its other chunks except those more than k units inside the passages
//      just verified, and steps 1-4 run over both lookups (the first candidates are not
//      read again). An exact copy looks up about a quarter of its chunks; a document that
//      shares only chunks well inside a passage of an already verified document, and none
//      of the selection, is not found (the winnowing guarantee: a run of w + k - 1 shared
//      units always shares a selected chunk). CheckOptions::min_passage_units lets no other
//      chunk go unlooked-up: a passage counts from that many words of matched grams, gaps
//      left out, so it may hold no shared chunk, and the one chunk leading to its source may
//      lie outside the selection and outside every passage that counts.
//   2. Records: the candidates' records are read in one batch (CandidateSource::
//      ReadCandidates); documents the caller may not see are dropped here, before any limit.
//   3. Verification (indexes with ChunkingParams::verify_k > 0): the max_candidates best
//      candidates by sampled matches have their complete grams read in one batch
//      (CandidateSource::ReadGrams) and verified (core/verify.h). The verified ratio
//      (share of the test's grams found in the document), containment (share of the
//      document's grams found in the test) and passages replace the sampled figures and
//      decide the violation; a document that does not pass is one still as a heavy
//      revision when its longest chain of rare grams in the order of both texts covers
//      CheckOptions::revision_share of both (DocumentMatch::revision_violation); a document
//      neither passing nor sharing a passage of min_passage_units units is dropped.
//      Without verification the sampled ratios decide, as in the COPS paper.
//   4. The report is ordered by ratio, cut at max_results (violations kept first), and its
//      violation flag is set once, from what remains and what was cut.
//   5. Content-stem pairs (indexes with ChunkingParams::stem_pairs, CheckOptions::
//      stem_pair_threshold > 0, no DetectOptions::excluded): the test's sampled pairs are
//      looked up in one batch (CandidateSource::LookupStemPairs); a document holding
//      enough of the rare ones (CheckOptions) in the order of the test's text is a
//      violation too, added to the report when steps 1-4 did not find it (a second
//      candidate stage: a heavy revision may share no chunk with its source). The order:
//      of the documents holding enough rare pairs, the pairs' order in their texts is read
//      in one batch (CandidateSource::ReadStemPairOrder), and only the longest chain of
//      shared pairs advancing in both texts counts (a rewrite keeps its source's order of
//      ideas, a text on the same subject shares its pairs in any order); a document whose
//      order is unknown counts all its rare pairs against kUnorderedStemPairThreshold.
//      Template documents are left out. Pairs carry no positions in the test's bytes, so a
//      check with excluded parts of its text skips this step (Report::stem_pairs_checked
//      stays false).
//
// Exclusions (core/exclusions.h) are applied in step 3: the test's units inside
// DetectOptions::excluded, and then those inside the passages of template documents (which
// are verified first), do not count; a verification gram is excluded when any of its units
// is. Excluded grams still match, into passages reported with their reason (Span::excluded),
// but count for nothing: the ratios' denominator (considered_chunks) leaves them out, and a
// passage shorter than CheckOptions::min_match_units is excluded too. Without verification
// (verify_k == 0), excluded chunks are not looked up at all (their matches are not shown),
// short spans are marked and their chunks taken off the counts, and template documents are
// marked and never a violation, without excluding their text from the other documents.
//
// Thread-safety: Detect() is reentrant; it uses per-thread scratch.

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/fingerprint.h"
#include "core/match.h"
#include "core/verify.h"

namespace cops {

// What the pipeline needs to know of one candidate document.
struct CandidateRecord {
  // False for a document that is unknown (unregistered since the lookup) or that the
  // caller may not see (collection filter): it is never reported.
  bool present = false;
  uint32_t stored_chunks = 0;  // the document's selected chunks in the sampled index
  // The document belongs to a template collection (a call for papers, a journal's LaTeX
  // template, an assignment's questions): its passages never count against the test, for
  // it or for any other document.
  bool template_source = false;
  // The first 8 bytes of the SHA-256 of the document's canonical text (DocumentRecord::sha256,
  // DocumentFingerprint::sha256); 0 = unknown. Candidates with the same digest are one text
  // registered more than once (in other collections): the common-phrase rule counts them as
  // one holder (CheckOptions::common_phrase_documents).
  uint64_t text_digest = 0;
};

// CandidateRecord::text_digest of a SHA-256.
uint64_t TextDigest(const std::array<uint8_t, 32>& sha256);

// The index the pipeline reads. Implementations must be safe for concurrent calls when the
// pipeline runs on several threads.
class CandidateSource {
 public:
  virtual ~CandidateSource() = default;
  // out->at(i) holds the postings of hashes[i] (empty when unknown); one batch.
  virtual absl::Status Lookup(std::span<const ChunkHash> hashes,
                              std::vector<PostingList>* out) const = 0;
  // out->at(i) describes ids[i]; one batch.
  virtual absl::Status ReadCandidates(std::span<const DocId> ids,
                                      std::vector<CandidateRecord>* out) const = 0;
  // out->at(i) holds the complete grams of ids[i] (DocumentFingerprint::grams at its
  // registration), empty when none are stored; one batch.
  virtual absl::Status ReadGrams(std::span<const DocId> ids,
                                 std::vector<std::vector<uint32_t>>* out) const = 0;
  // Content-stem pairs (ChunkingParams::stem_pairs): out->at(i) holds the registered
  // documents that hold pairs[i], ascending, when fewer than `max_documents` do; empty when
  // none or at least that many do (the pair is common). One batch. Returns false, with
  // `out` untouched, when the source keeps no pairs (an index created without them): the
  // evidence is then unavailable.
  virtual absl::StatusOr<bool> LookupStemPairs(std::span<const uint32_t> /*pairs*/,
                                               uint32_t /*max_documents*/,
                                               std::vector<std::vector<DocId>>* /*out*/) const {
    return false;
  }
  // Content-stem pairs: out->at(i) holds the pairs of ids[i] in the order of their first
  // occurrence in its text (DocumentFingerprint::stem_pair_order at its registration), empty
  // when the source does not know it (documents registered before the order was kept, or
  // without pairs). One batch.
  virtual absl::Status ReadStemPairOrder(std::span<const DocId> ids,
                                         std::vector<std::vector<uint32_t>>* out) const {
    out->assign(ids.size(), {});
    return absl::OkStatus();
  }
};

struct DetectOptions {
  CheckOptions check;
  // Verified candidates at most, the best by sampled matched chunks.
  uint32_t max_candidates = 200;
  VerifyOptions verify;
  // Parts of the test text that never count (core/exclusions.h), in the byte space of the
  // test's chunk and unit spans. REQUIRES: normalized (NormalizeRanges()).
  std::vector<ExcludedRange> excluded;
  // When set, receives the ids of the candidates the first stage found (before records
  // and verification): the evaluation measures the candidate stage's recall with it.
  std::vector<DocId>* candidates_out = nullptr;
};

// Test documents of at most this many chunks are looked up in full (every chunk, not the
// selection; in two phases, see step 1) when the index verifies: a short text then finds
// its source when any one of the source's stored chunks survives the revision.
inline constexpr uint32_t kShortTestChunks = 2000;

// How a test document is fingerprinted for Detect() under `params`.
FingerprintOptions CheckFingerprintOptions(const ChunkingParams& params);
// How a document is fingerprinted for registration under `params` (dense_chunks).
FingerprintOptions RegisterFingerprintOptions(const ChunkingParams& params);

// Runs the pipeline for `test`, fingerprinted under the index's `params` with
// CheckFingerprintOptions(params) (spans come out in the byte space of its chunks and
// units). REQUIRES: options.check.Validate() is OK. Errors: those of the source.
absl::StatusOr<Report> Detect(const DocumentFingerprint& test, const ChunkingParams& params,
                              const CandidateSource& source, const DetectOptions& options);

}  // namespace cops

#endif  // COPS_CORE_DETECT_H_
