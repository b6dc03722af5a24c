#ifndef COPS_CORE_STEM_PAIRS_H_
#define COPS_CORE_STEM_PAIRS_H_

// Content-stem pairs: the evidence that finds a heavy revision after its word 3-grams are
// gone. A person who rewrites a passage changes function words, inflections and word order
// inside clauses, but keeps most of its content words, often side by side ("source code",
// "public licens"). A document's stem pairs are its consecutive content words (stop words of
// core/units.h dropped) reduced by LightStem(), taken two at a time, each pair a keyed hash
// (the index's secret key, like chunks and grams), sampled by that hash (kept when it is
// 0 mod ChunkingParams::stem_pairs, so a test and a registered text keep the same pairs)
// and stored 32 bits wide. A check counts the test's pairs that a registered document holds
// and that few registered documents hold (core/detect.h): pairs of a genre's boilerplate
// are held by many and count for nothing.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string>
#include <string_view>

namespace cops {

// Version of LightStem() and of the pair hash construction (core/fingerprint.cc). Bump when
// any pair of any input may change: an index records it (ChunkingParams::stem_version) and
// refuses to open under another.
//   1: -sses/-ies/-s, then -ingly/-edly/-ing/-ed/-ly stripped; a final doubled consonant
//      undoubled, a final 'e' dropped, a final 'y' made 'i'; pairs of XXH3 stem hashes
//      folded and finalized by keyed SipHash-2-4, the top 32 bits kept.
inline constexpr uint32_t kStemPairsVersion = 1;

// A light English stemmer for canonical (case-folded) words: "reached", "reaching" and
// "reaches" give "reach"; "studies" and "study" give "studi". Words of at most 3 letters are
// kept as they are. Writes into `out` (cleared first).
void LightStem(std::string_view canonical_word, std::string* out);
inline std::string LightStem(std::string_view canonical_word) {
  std::string s;
  LightStem(canonical_word, &s);
  return s;
}

}  // namespace cops

#endif  // COPS_CORE_STEM_PAIRS_H_
