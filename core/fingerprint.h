#ifndef COPS_CORE_FINGERPRINT_H_
#define COPS_CORE_FINGERPRINT_H_

// The whole ins-chunks / eval-chunks path of the COPS paper: raw UTF-8 bytes ->
// canonical text -> units -> enhancements -> chunks -> keyed hashes -> selection.
//
// Thread-safety: a Fingerprinter is immutable after Create(); Fingerprint() may be called
// from many threads at once (each with its own output object).

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/hash_key.h"
#include "core/params.h"

namespace cops {

using ChunkHash = uint64_t;

// One selected chunk of a document.
struct Chunk {
  ChunkHash hash = 0;
  // Position among *all* chunks of the document (before selection), 0-based; ordered
  // matching compares ordinals.
  uint32_t ordinal = 0;
  // Byte span [start, end) of the chunk in the input exactly as given to Fingerprint().
  uint32_t start = 0;
  uint32_t end = 0;
  // Units [unit_begin, unit_end) the chunk covers (after enhancements); passages merge
  // chunks whose unit ranges touch or overlap.
  uint32_t unit_begin = 0;
  uint32_t unit_end = 0;
};

// Bits kept of a verification gram's hash (core/verify.h), 2 bytes per word of a registered
// document. A test gram falsely matches a document of n distinct grams with probability
// n / 2^16 (10% for a 7,000-word paper), but verification counts only grams chained into
// passages, in order in both texts: two chance matches line up that way about once in
// 10^4 checks of a 3,000-word text against such a paper, adding one gram.
inline constexpr uint32_t kVerifyGramBits = 16;
inline constexpr uint32_t kVerifyGramMask = (1u << kVerifyGramBits) - 1;

// Byte span [start, end) of one unit in the input.
struct UnitSpan {
  uint32_t start = 0;
  uint32_t end = 0;
};

// Units [begin, end) of a document.
struct UnitRun {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const UnitRun&) const = default;
};

struct DocumentFingerprint {
  std::vector<Chunk> chunks;  // selected chunks, in document order
  // When every chunk was kept (FingerprintOptions::keep_all_chunks_up_to) and
  // FingerprintOptions::mark_selection is set: the indices into `chunks`, ascending, of the
  // chunks the selection keeps. A short test looks these up first (core/detect.h). Empty
  // otherwise.
  std::vector<uint32_t> selection;
  // The complete verification fingerprint when params.verify_k > 0 (else empty): grams[i]
  // is the keyed hash, kVerifyGramBits wide, of units [i, i + verify_k); a document of
  // fewer units than verify_k has one gram of all of them.
  std::vector<uint32_t> grams;
  // The sampled content-stem pairs when params.stem_pairs > 0 (core/stem_pairs.h), each the
  // top 32 bits of its keyed hash, sorted and distinct; else empty.
  std::vector<uint32_t> stem_pairs;
  // The same pairs in the order of their first occurrence in the text: where a registered
  // document keeps them, a check counts only the shared pairs that advance in both texts
  // (core/detect.h, step 5).
  std::vector<uint32_t> stem_pair_order;
  // Byte span of every unit (after enhancements) in the input, filled with grams when
  // FingerprintOptions::unit_spans is set.
  std::vector<UnitSpan> units;
  // With FingerprintOptions::stock_phrases: the maximal runs of units that phrases common in
  // the language cover (core/stock_phrases.h: each unit lies in one of the document's word
  // 4-grams on the list), ascending and disjoint; else empty.
  std::vector<UnitRun> stock_runs;
  // With FingerprintOptions::short_lines (and unit_spans): the units of the input's lines of
  // fewer than kShortLineUnits units (headings, labels, list items: a document kind's
  // skeleton), as maximal runs, ascending and disjoint; else empty.
  std::vector<UnitRun> short_lines;
  uint32_t total_chunks = 0;  // chunks before selection
  uint32_t total_units = 0;   // units after enhancements
  // SHA-256 of the canonical text: identity for exact duplicates. All zero unless
  // FingerprintOptions::content_digest.
  std::array<uint8_t, 32> sha256{};
  uint64_t input_bytes = 0;
  uint64_t canonical_bytes = 0;
  // Set by SampleChunks() when it dropped chunks; unsampled_chunks is chunks.size() before.
  bool sampled = false;
  uint32_t unsampled_chunks = 0;

  void Clear();  // keeps vector capacity, for reuse on the hot path
};

inline constexpr uint32_t kShortLineUnits = 6;

struct FingerprintOptions {
  // A document of at most this many chunks keeps every chunk, not the selection: a short
  // test text is then looked up in full, so a candidate is found when any one of its
  // chunks was stored (0 = always select).
  uint32_t keep_all_chunks_up_to = 0;
  // With keep_all_chunks_up_to: also fill DocumentFingerprint::selection.
  bool mark_selection = false;
  // Fill DocumentFingerprint::units (a check's passages need them; a registration does not).
  bool unit_spans = false;
  // Fill DocumentFingerprint::stock_runs (a check's verified passages need them). Only for
  // word units without enhancements (the list's words are such units); else left empty.
  bool stock_phrases = false;
  // With unit_spans: fill DocumentFingerprint::short_lines (CheckOptions::revision_share
  // needs them: engine/pipeline.h CheckPrint sets this for a check that asks for heavy
  // revisions, and no other check pays for it).
  bool short_lines = false;
  // Fill DocumentFingerprint::sha256 (a registration's duplicate identity; a check never
  // reads it, and hashing its canonical text cost ~2% of copsd's CPU per 20 KB check).
  bool content_digest = true;
  // Only the units' spans, total_units, the sizes and (content_digest) the digest: no chunks,
  // grams or pairs. What placing a passage in a registered text needs, at about half the
  // cost of the whole fingerprint.
  bool units_only = false;
  // With params.stem_pairs == 1 (every pair kept): at most this many distinct pairs are
  // made, those of the smallest keyed folds (an even sample no one without the key can
  // predict), and only they are hashed; 0 = all. A check looks up at most
  // CheckOptions::stem_pair_max_lookups pairs, and every registered text keeps all of its
  // pairs, so any keyed choice finds them: a 20 KB text has ~1,360 pairs, and making the
  // ones it does not look up was a sixth of what pairs added to a check (0.4 of 2.3 M
  // instructions, bench/check-instructions.sh).
  uint32_t max_stem_pairs = 0;
};

class Fingerprinter {
 public:
  // INVALID_ARGUMENT when params.Validate() fails or params.key_id != key.Id().
  static absl::StatusOr<std::unique_ptr<Fingerprinter>> Create(const ChunkingParams& params,
                                                               const HashKey& key);
  ~Fingerprinter();

  // Fills `out` (cleared first). Any bytes are accepted: invalid UTF-8 is replaced, never
  // rejected. Inputs of 4 GiB or more are INVALID_ARGUMENT (offsets are 32-bit).
  absl::Status Fingerprint(std::string_view input, DocumentFingerprint* out,
                           const FingerprintOptions& options = {}) const;

  const ChunkingParams& params() const;

 private:
  struct Rep;
  explicit Fingerprinter(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace cops

#endif  // COPS_CORE_FINGERPRINT_H_
