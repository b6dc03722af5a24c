#ifndef COPS_CORE_STOCK_PHRASES_H_
#define COPS_CORE_STOCK_PHRASES_H_

// Phrases common in the language: word 4-grams that many unrelated writers use ("at the same
// time", "on the other hand", "for more information on", "if you want to"), no evidence of
// copying on their own. The list is core/stock_phrases.txt (one phrase per line, `#`
// comments), made by eval/make_stock_phrases.py from prose that Debian ships and no
// evaluation set uses (docs/accuracy.md), and compiled in by core/CMakeLists.txt. A check's
// fingerprint marks the runs of its words that such phrases cover (DocumentFingerprint::
// stock_runs); a verified passage inside one counts for nothing (core/detect.h).
//
// Thread-safety: pure functions; CanonicalStockPhrases() computes its result once per
// version, under a lock.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cops {

inline constexpr uint32_t kStockPhraseWords = 4;

// The text of core/stock_phrases.txt.
std::string_view StockPhrasesText();

// The phrases as canonical word units (core/canonicalizer.h under normalization `version`,
// core/units.h word units, no enhancements); a line that does not make exactly
// kStockPhraseWords words is left out.
const std::vector<std::array<std::string, kStockPhraseWords>>& CanonicalStockPhrases(
    uint32_t version);

}  // namespace cops

#endif  // COPS_CORE_STOCK_PHRASES_H_
