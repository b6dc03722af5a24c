#ifndef COPS_CORE_PARAMS_H_
#define COPS_CORE_PARAMS_H_

// The parameters that decide which chunk hashes a document yields. Everything an index
// depends on lives here, so an index records ChunkingParams::Encode() at creation and
// refuses to open under parameters with another Fingerprint().
//
// Thread-safety: plain value type.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cops {

// The unit a document is split into before chunking.
// on-disk: do not change values.
enum class UnitKind : uint8_t {
  kWord = 1,
  kSentence = 2,
  kParagraph = 3,
};

// The COPS paper's four chunking strategies (section "chunking strategies").
// on-disk: do not change values.
enum class ChunkStrategy : uint8_t {
  kOneUnit = 1,            // A: every unit is a chunk.
  kNonOverlapping = 2,     // B: k consecutive units, chunks do not overlap.
  kOverlapping = 3,        // C: every run of k consecutive units (shingles).
  kHashedBreakpoints = 4,  // D: a unit whose keyed hash is 0 mod k ends a chunk.
};

// Which chunks of a document are kept (stored at registration, looked up at check).
// on-disk: do not change values.
enum class SelectionKind : uint8_t {
  kAll = 1,        // keep every chunk.
  kModP = 2,       // keep a chunk when its keyed hash is 0 mod p.
  kWinnowing = 3,  // keep the minimum hash of every window of w consecutive chunks.
};

// The paper's noise-reducing enhancements applied to units before chunking.
struct Enhancements {
  bool drop_numbers = false;        // drop word units that are numbers ("1995", "3.14").
  uint32_t min_word_chars = 0;      // drop word units shorter than this (0 = keep all).
  uint32_t min_sentence_words = 0;  // drop sentence units with fewer words (0 = keep all).
  bool drop_stop_words = false;     // drop English stop words ("the", "of", ...).

  bool operator==(const Enhancements&) const = default;
};

// Version of the canonicalization rules (normalization form, folding, confusable table)
// and of the chunk-hash construction. Bump whenever canonical text or any chunk hash of any
// input may change: an index records it and refuses to open under another version.
//   1: keyed SipHash-2-4 over each chunk's canonical text.
//   2: XXH3 (key-seeded) per unit, then keyed SipHash-2-4 of the XXH3 of a chunk's unit
//      hashes (core/fingerprint.cc). Canonical text is unchanged from version 1.
//   3: as 2, and a non-ASCII capital letter whose TR39 skeleton is ASCII is replaced by that
//      skeleton before case folding (Greek 'Τ' -> 'T' -> 't'; folding first made it 'τ',
//      which no skeleton maps back to 't'). Canonical text differs from version 2 only in
//      words holding such capitals.
// New indexes use kNormalizationVersion; an index keeps the version it was created with
// (each supported one is implemented) until a key rotation rebuilds it under the newest.
inline constexpr uint32_t kNormalizationVersion = 3;
inline constexpr uint32_t kOldestNormalizationVersion = 2;

// Words per verification gram (see ChunkingParams::verify_k) for new indexes.
inline constexpr uint32_t kDefaultVerifyK = 3;
// Registered documents of at most this many chunks keep all of them (see
// ChunkingParams::dense_chunks) in new indexes.
inline constexpr uint32_t kDefaultDenseChunks = 400;

struct ChunkingParams {
  UnitKind unit = UnitKind::kWord;
  ChunkStrategy strategy = ChunkStrategy::kOverlapping;
  // Units per chunk for strategies B and C; the breakpoint modulus for D. Ignored by A.
  // REQUIRES: 1 <= k <= 64.
  uint32_t k = 5;
  SelectionKind selection = SelectionKind::kWinnowing;
  // Modulus of kModP: about 1/p of all chunks are kept. REQUIRES: p >= 1.
  uint32_t p = 4;
  // Window of kWinnowing, in chunks: every run of w + k - 1 matching units (strategy C)
  // shares at least one kept hash. Keeps about 2/(w+1) of chunks. REQUIRES: w >= 1.
  uint32_t w = 8;
  Enhancements enhancements;
  uint32_t normalization_version = kNormalizationVersion;
  // Verification grams (core/verify.h): every run of verify_k consecutive units of a
  // registered document is kept, hashed, as its complete fingerprint, and candidates found
  // through the selected chunks are verified against it. 0 = no verification store (every
  // index created before it existed); else REQUIRES: unit == kWord, 2 <= verify_k <= 8.
  uint32_t verify_k = kDefaultVerifyK;
  // Registered documents of at most this many chunks store every chunk instead of the
  // selection (0 = always select). A short text that was heavily revised keeps few of its
  // source's chunks; its source is a candidate only if one of them was stored. Costs
  // postings for short documents only (a 300-word one stores ~300 instead of ~70).
  // REQUIRES: verify_k > 0 when non-zero (checks look short texts up in full only then).
  uint32_t dense_chunks = kDefaultDenseChunks;
  // Content-stem pairs (core/stem_pairs.h): every registered document's pairs whose keyed
  // hash is 0 mod stem_pairs are kept with the documents that hold them, and a check counts
  // the rare ones it shares with each document (core/detect.h). 0 = none kept (every index
  // created before they existed, and new ones unless asked for); 1 = every pair.
  // REQUIRES: 0 <= stem_pairs <= 64; verify_k > 0 when non-zero.
  uint32_t stem_pairs = 0;
  // The stemmer and pair-hash version the pairs were made with (kStemPairsVersion when
  // stem_pairs != 0, else 0). REQUIRES: one this build implements.
  uint32_t stem_version = 0;
  // Identifies the secret hashing key (HashKey::Id()); never the key itself.
  std::string key_id;

  bool operator==(const ChunkingParams&) const = default;

  // OK, or INVALID_ARGUMENT naming the first out-of-range field.
  absl::Status Validate() const;

  // Stable, versioned binary encoding (recorded in the index meta).
  std::string Encode() const;
  // INVALID_ARGUMENT on malformed input or an unknown encoding version.
  static absl::StatusOr<ChunkingParams> Decode(std::string_view encoded);

  // Stable 64-bit fingerprint of Encode(): equal iff every field is equal.
  uint64_t Fingerprint() const;

  // Human-readable one-liner, e.g. "unit=word strategy=overlapping k=5 selection=winnowing
  // w=8 drop_numbers=0 min_word_chars=0 min_sentence_words=0 stop_words=0 norm=1 key=ab12..".
  std::string Describe() const;

  // The parameters a Describe() line names (the inverse of Describe(): fields it leaves out
  // take their defaults, and verify_k and dense_chunks 0). INVALID_ARGUMENT naming the
  // first malformed or unknown field, or when the result fails Validate(). Lets a client
  // fingerprint as a server does from what the server reports (GetStats, CheckParams).
  static absl::StatusOr<ChunkingParams> ParseDescription(std::string_view description);

  // Names the fields that differ from `other`, e.g. "k: 5 vs 3; key_id: ab.. vs cd..";
  // empty when equal.
  std::string DiffWith(const ChunkingParams& other) const;
};

// Names used in configuration, JSON and reports ("word", "overlapping", "winnowing", ...).
std::string_view UnitKindName(UnitKind u);
std::string_view ChunkStrategyName(ChunkStrategy s);
std::string_view SelectionKindName(SelectionKind s);
absl::StatusOr<UnitKind> ParseUnitKind(std::string_view name);
absl::StatusOr<ChunkStrategy> ParseChunkStrategy(std::string_view name);
absl::StatusOr<SelectionKind> ParseSelectionKind(std::string_view name);

}  // namespace cops

#endif  // COPS_CORE_PARAMS_H_
