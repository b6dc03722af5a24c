#ifndef COPS_CORE_MATCH_H_
#define COPS_CORE_MATCH_H_

// The decide step of the COPS operational test: from the postings of a test document's
// chunks to a violation report with evidence.
//
// Flow (the server's check path):
//   1. Fingerprinter::Fingerprint(test) -> DocumentFingerprint (optionally SampleChunks()).
//   2. storage looks up every chunk hash in one batch -> one PostingList per chunk.
//   3. MatchSet::Tally(...) counts matches per registered document.
//   4. storage reads the records of MatchSet::CandidateIds() (stored chunk counts, titles).
//   5. MatchSet::Decide(stored_chunks) -> Report.
//
// Thread-safety: value types; a MatchSet is used by one thread.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/exclusions.h"
#include "core/fingerprint.h"

namespace cops {

using DocId = uint64_t;

// Where a chunk occurs in a registered document.
struct Posting {
  DocId doc_id = 0;
  uint32_t ordinal = 0;  // chunk ordinal in the registered document
  uint32_t start = 0;    // byte span in the registered document's original input
  uint32_t end = 0;
  bool operator==(const Posting&) const = default;
};

// Everything the index knows about one chunk hash.
struct PostingList {
  // Number of distinct registered documents containing the chunk (for the paper's
  // "common chunks" enhancement).
  uint32_t doc_frequency = 0;
  std::vector<Posting> postings;  // ordered by doc_id, then ordinal
};

// on-wire and in reports: do not change values.
enum class DecisionFunction : uint8_t {
  kMatchRatio = 1,      // matched / test chunks >= threshold (the COPS default)
  kContainment = 2,     // matched / registered stored chunks >= threshold
  kMatchCount = 3,      // matched chunks >= min_count
  kOrderedMatches = 4,  // longest chain in the same order in both documents >= min_count
};

// Everything said of each decision function, in one place: its name in reports and on the
// command line, a short alias the command line accepts too, and its help text. The proto
// mapping, the CLI and the reports read this table; adding a function adds a row here, its
// decision in match.cc (Decide) and its value in proto/cops.proto.
struct DecisionFunctionInfo {
  DecisionFunction function;
  std::string_view name;
  std::string_view alias;  // empty: none
  std::string_view help;
};
inline constexpr DecisionFunctionInfo kDecisionFunctions[] = {
    {DecisionFunction::kMatchRatio, "match_ratio", "ratio",
     "matched / test chunks >= threshold (the default)"},
    {DecisionFunction::kContainment, "containment", "",
     "matched / registered chunks >= threshold"},
    {DecisionFunction::kMatchCount, "match_count", "count", "matched chunks >= min_count"},
    {DecisionFunction::kOrderedMatches, "ordered_matches", "ordered",
     "longest chain in the same order in both documents >= min_count"},
};

// Whether `value` is a DecisionFunction of the table (the range check of every boundary).
bool IsDecisionFunction(int value);
// The function's name ("match_ratio", ...), "unknown" outside the table.
std::string_view DecisionFunctionName(DecisionFunction f);
// A name or alias of the table, in any case; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<DecisionFunction> ParseDecisionFunction(std::string_view name);
// The names joined by `separator`, for help texts and error messages.
std::string DecisionFunctionNames(std::string_view separator = ", ");

// The share of a check's content-stem pairs a registered document whose pairs' order is
// unknown (registered before it was kept) must hold, all of them counted: the measured
// threshold of pairs without their order (docs/accuracy.md), or stem_pair_threshold if higher.
inline constexpr double kUnorderedStemPairThreshold = 0.10;

// CheckOptions::revision_share of a check that asks for heavy revisions (chosen on the P4P
// and same-genre dev sets, docs/accuracy.md).
inline constexpr double kHeavyRevisionShare = 0.04;

struct CheckOptions {
  DecisionFunction function = DecisionFunction::kMatchRatio;
  // For ratio and containment; REQUIRES: 0 < threshold <= 1. The default is measured in
  // docs/accuracy.md on the verified ratio (share of the test's word 3-grams found in a
  // registered document, in chained passages).
  double threshold = 0.08;
  uint32_t min_count = 10;  // for count and ordered matches; REQUIRES: >= 1
  // Ignore chunks found in more than this many registered documents (0 = no limit).
  uint32_t max_doc_frequency = 0;
  // A registered document is a candidate (CandidateIds(), reported by Decide()) when it
  // shares a passage of at least this many units with the test document, or when it already
  // passes a decision function computable without its stored chunk count (ratio, count,
  // ordered). Passage length counts units of the *test* document: a passage is a maximal
  // run of consecutive selected test chunks (in test.chunks order) that all match this
  // document, and it covers units [first chunk's unit_begin, last chunk's unit_end). With
  // mod-p or winnowing selection the units between two consecutive selected chunks were not
  // looked at; the passage assumes they match too (both neighbours do). Chunks dropped as
  // common (max_doc_frequency) neither match nor interrupt a passage. 0 = every document
  // with a match is a candidate.
  uint32_t min_passage_units = 8;
  // Matched passages shorter than this many units (words by default) are reported as
  // excluded (Exclusion::kShortMatch) and count for nothing: not in the ratios, not in the
  // decision (core/detect.h). 0 = every passage counts.
  uint32_t min_match_units = 0;
  // Verified checks: a document is a violation by its ratio or containment only when its
  // passages that count cover at least this many test units in all (their bridged gaps left
  // out), whatever the ratio (the count functions have min_count). A text of under 100 words
  // reaches the 0.08 threshold with one 8-word passage: a template's headings or a genre's
  // stock sentence. At 12, same-genre
  // false alarms on npm READMEs' dev part fell from 18 to 3, no DURIAN, short-set or P4P
  // document was lost and P4P's 30-80-word snippets lost 21 of 81 (none with content-stem
  // pairs, which decide on their own). Measured in docs/accuracy.md. 0 = any.
  uint32_t min_violation_units = 12;
  // Verified checks: a passage is the registered corpus's common text, and is reported as
  // excluded (Exclusion::kCommonPhrase) and counts for nothing, when some chunks that the
  // lookup found inside it (fully inside its test units) are held by at least this many
  // registered texts (PostingList::doc_frequency, known from the lookup: no extra read;
  // candidates with the same canonical text, one text registered in several collections,
  // count once: CandidateRecord::text_digest) or this many candidates' texts hold 4 in 5 of
  // its grams, the others, the rare chunks,
  // form no run free of common chunks that spans w + k - 1 test words the candidate holds
  // (core/detect.cc, RareRunUnits: winnowing stores a licence's chunks in only some of its
  // holders, so rare chunks are scattered through it, but the minimum of every such window
  // in all of them; with other selections one rare chunk is enough), and the candidate's
  // own text (chunks only it holds, 3-grams only it holds) covers less than a fifth of it or
  // fewer than w + k - 1 words: a copy of one of several documents made from one template is
  // its own text, though the template's fixed words, held by all of them, break every rare
  // run (kOwnTextPercent). At 3, a genre's notices that 3-9 registered documents hold (a
  // licence's grant, the GNU all-permissive notice) are common text; at 10 they counted.
  // Measured in docs/same-genre.md. A text copied into this many registered
  // documents counts against a further copy only with such rarer text (it is still shown,
  // struck through). Tests longer than kShortTestChunks look up their selection only: the
  // rule reads those chunks. 0 = off.
  uint32_t common_phrase_documents = 3;
  // Verified checks: a registered document that is no violation by its passages is one as a
  // heavy revision when the longest chain of 3-grams it shares with the test, advancing in
  // both texts whatever the gaps (core/verify.h, LongestSharedChain), covers revision_share
  // of the test's grams and of its own, and revision_min_grams of them; only grams that no
  // other candidate holds, that occur once in the test (a repeated line chains with itself), in
  // no phrase common in the language and on no short line (DocumentFingerprint::short_lines)
  // count. A person's rewrite keeps its source's order of ideas, and a few scattered 3-word
  // runs in it, after every 8-word passage is gone. At 0.04 (chosen on dev) it found every
  // held-out P4P revision (F1 0.899 -> 1.000) and added no npm README false alarm, but one
  // in 1,728 Debian checks: two manual pages written to one template, section by section,
  // look like a revision of each other, and no count of holders can tell (docs/accuracy.md).
  // The chain's runs are matches: they must cover min_violation_units test words, and none
  // counts where min_match_units exceeds a run's k words.
  // Off in core; copsd's checks ask for kHeavyRevisionShare unless the check or the operator
  // says not to (v1.CheckOptions.heavy_revisions, copsd --heavy-revisions=false).
  // 0 = off; REQUIRES: 0 <= revision_share <= 1.
  double revision_share = 0;
  uint32_t revision_min_grams = 6;
  // The chain must also reach this share of each text's grams, from its gram at revision_trim
  // of its length to the one at 1 - revision_trim: a rewrite revises a whole text, in its
  // order; a template's section that two texts share (a footer, installation steps) chains
  // in one place of each, and a stray 3-gram near either end of both texts does not make it
  // reach across them. 0.35 and 0.1 equal the untrimmed reach at 0.5 on every dev figure and
  // flag nothing on an npm walk no setting had seen (docs/accuracy.md).
  // REQUIRES: 0 <= revision_spread <= 1, 0 <= revision_trim < 0.5.
  double revision_spread = 0.35;
  double revision_trim = 0.1;
  // Indexes with content-stem pairs (ChunkingParams::stem_pairs, core/stem_pairs.h): a
  // registered document is also a violation when the share of the test's sampled pairs it
  // holds in order (the longest chain advancing in both texts), counting only pairs held by
  // fewer than stem_pair_max_documents registered documents, reaches stem_pair_threshold,
  // and it holds at least stem_pair_min_shared of them. A heavy revision keeps its source's
  // content words side by side, and its order of ideas, after its word 3-grams are gone; a
  // text of the same genre shares only pairs that many documents hold, and a text on the
  // same subject shares its pairs in any order. This adds to the decision above, never
  // replaces it. stem_pair_threshold 0 = off. Measured in docs/accuracy.md (0.10 without
  // the order: kUnorderedStemPairThreshold); REQUIRES: 0 <= stem_pair_threshold <= 1,
  // stem_pair_max_documents >= 2 (the document itself holds each pair it shares).
  double stem_pair_threshold = 0.06;
  uint32_t stem_pair_max_documents = 2;
  uint32_t stem_pair_min_shared = 2;
  // At most this many of the test's sampled pairs are looked up, those with the smallest
  // keyed hashes (an even, reproducible sample; a check of an index keeping every pair makes
  // only these, chosen by keyed fold: FingerprintOptions::max_stem_pairs), and the share is
  // of them: a seek per pair
  // looked up (~1,700 for 20 KB of prose uncapped) against a share estimated within about
  // 0.02 at 10%. Tests with fewer pairs (under ~450 words) are unaffected. 0 = all.
  // 256 kept every dev figure of docs/accuracy.md; 128 did not.
  uint32_t stem_pair_max_lookups = 256;
  uint32_t max_results = 20;  // 0 = no limit
  bool want_spans = true;

  absl::Status Validate() const;  // INVALID_ARGUMENT naming the bad field
};

// A maximal run of matched chunks (a passage, see CheckOptions::min_passage_units).
// Offsets are bytes into each document's original input. The registered span runs from the
// smallest start to the largest end of the postings used for the passage's chunks; when a
// chunk occurs several times in the registered document, the first posting at or after the
// previous chunk's ordinal is used.
struct Span {
  uint32_t test_start = 0;
  uint32_t test_end = 0;
  bool has_registered = false;
  uint32_t registered_start = 0;
  uint32_t registered_end = 0;
  uint32_t chunks = 0;  // matched chunks merged into this span
  uint32_t units = 0;   // units of the test document the span covers
  // Filled by callers that know the layout (a PDF's pages, 1-based); 0 = not paged.
  uint32_t test_first_page = 0;
  uint32_t test_last_page = 0;
  // Verified passages (core/detect.h): the registered document's units [begin, end) that
  // the passage covers (end may pass the last unit of a document shorter than verify_k
  // units); both 0 otherwise. A caller holding the registered text's unit spans places the
  // passage exactly with them (the byte span above is the stored chunks inside it).
  uint32_t registered_unit_begin = 0;
  uint32_t registered_unit_end = 0;
  // Why the passage does not count (core/exclusions.h); kNone when it counts.
  Exclusion excluded = Exclusion::kNone;
  // A run of the chain that made the document a heavy revision (CheckOptions::revision_share):
  // 3-word runs the two texts share in the same order, shown as evidence. Not a passage: it
  // counts in no ratio (excluded stays kNone, chunks 0).
  bool revision_run = false;
};

struct DocumentMatch {
  DocId doc_id = 0;
  uint32_t matched_chunks = 0;   // test chunks found in this document
  uint32_t ordered_matches = 0;  // longest same-order chain
  uint32_t stored_chunks = 0;    // the registered document's stored chunks
  double ratio = 0;              // matched_chunks / test chunks considered
  double containment = 0;        // registered chunks found in test / stored_chunks
  bool violation = false;        // passes the decision function
  // The document belongs to a template collection (CandidateRecord::template_source): its
  // passages are excluded (Exclusion::kTemplate) and it is never a violation.
  bool template_source = false;
  // Indexes with content-stem pairs: the test's sampled pairs this document holds that fewer
  // than CheckOptions::stem_pair_max_documents registered documents hold (of a document
  // holding enough of them, only its longest chain in the order of both texts, when its
  // order is known), and their share of the test's sampled pairs; whether they pass on their
  // own (stem_pair_threshold and stem_pair_min_shared), which makes the document a
  // violation.
  uint32_t stem_pairs_shared = 0;
  double stem_pair_share = 0;
  bool stem_pair_violation = false;
  // Verified checks (CheckOptions::revision_share): the 3-grams of the longest chain of
  // this document's own grams in the order of both texts, computed for documents that are
  // no violation by their passages and share enough grams (0 otherwise), and whether they
  // make it a violation as a heavy revision.
  uint32_t revision_grams = 0;
  bool revision_violation = false;
  // Whether steps 1-4 (the chunks and their passages) made it a violation, set by Detect():
  // violation == chunk_violation || revision_violation || stem_pair_violation. Tells a
  // reader which evidence flagged it.
  bool chunk_violation = false;
  std::vector<Span> spans;       // in test order; empty unless want_spans
};

struct Report {
  uint32_t total_chunks = 0;     // test chunks before selection
  uint32_t selected_chunks = 0;  // after selection (and sampling)
  uint32_t considered_chunks = 0;  // after dropping common chunks: the ratio's denominator
  uint32_t common_chunks_ignored = 0;
  bool sampled = false;
  // With test-time sampling: the binomial probability that the sampled decision differs
  // from the full one for the best match (paper appendix). 0 when not sampled.
  double sampling_error = 0;
  std::vector<DocumentMatch> matches;  // ratio descending, then doc_id; templates last
  bool violation = false;              // any match passes the decision
  // The parts of the test text that did not count (DetectOptions::excluded and the passages
  // shared with template documents), normalized (NormalizeRanges()), in the byte space of
  // the spans. Short matches are marked on their spans only.
  std::vector<ExcludedRange> excluded;
  // Set by Detect() (core/detect.h) when the matches were verified against complete
  // fingerprints: then "chunks" in the counts above and in each DocumentMatch are
  // verification grams (considered_chunks = the test's grams, matched_chunks = those found
  // in the document, stored_chunks = the document's grams); total_chunks and
  // selected_chunks still describe the candidate lookup.
  bool verified = false;
  // Content-stem pairs (core/stem_pairs.h): the test's sampled pairs looked up (at most
  // CheckOptions::stem_pair_max_lookups: the shares are of these), and whether the index
  // keeps pairs to compare them with (false: the evidence is unavailable, as for indexes
  // created without ChunkingParams::stem_pairs, and the decision rests on the rest).
  uint32_t stem_pairs = 0;
  bool stem_pairs_checked = false;
};

class MatchSet {
 public:
  // REQUIRES: postings.size() == test.chunks.size(), postings[i] belongs to test.chunks[i].
  static MatchSet Tally(const DocumentFingerprint& test, std::span<const PostingList> postings,
                        const CheckOptions& options);

  // Registered documents worth reporting (sharing a passage >= min_passage_units).
  const std::vector<DocId>& CandidateIds() const;

  // REQUIRES: stored_chunks.size() == CandidateIds().size(), parallel to it.
  // Containment is distinct registered ordinals matched / stored_chunks, capped at 1
  // (0 when stored_chunks is 0). Report.violation is true when any candidate passes, also
  // one cut off by max_results.
  Report Decide(std::span<const uint32_t> stored_chunks) const;

 private:
  struct Rep;
  std::shared_ptr<const Rep> rep_;  // immutable after Tally(); copies share it
};

// Whether `m` passes the decision function of `o` (ratio, containment, count or ordered
// matches against the threshold or min_count).
bool Passes(const CheckOptions& o, const DocumentMatch& m);

// Test-time sampling: keeps n chunks of `fp` chosen reproducibly from `seed` (all when
// n == 0 or n >= size), in document order.
void SampleChunks(uint32_t n, uint64_t seed, DocumentFingerprint* fp);

// Binomial error of deciding "ratio >= threshold" from n samples when the true ratio is
// `true_ratio`: probability that the sampled decision differs from the exact one. The
// sampled decision is "X >= ceil(threshold * n)" with X ~ Binomial(n, true_ratio); the error
// is P(X < ceil(threshold * n)) when true_ratio >= threshold, else P(X >= ceil(threshold * n))
// (the paper's alpha and beta for one document). 1 when n == 0.
double SamplingError(uint32_t n, double threshold, double true_ratio);

}  // namespace cops

#endif  // COPS_CORE_MATCH_H_
