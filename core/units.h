#ifndef COPS_CORE_UNITS_H_
#define COPS_CORE_UNITS_H_

// Units: words, sentences or paragraphs of a canonical text, after the paper's
// enhancements (drop numbers, drop short words, drop stop words, drop short sentences).
//
// Sentences end at '!', '?', other Unicode sentence terminators, blank lines, and at a
// single '.' unless the word before it is a known abbreviation ("dr", "e.g", "etc", ...)
// or a single character (initials "J. R. R. Tolkien", "U.S."), or the next word starts in
// lower case. Ellipses ("...", "…") and decimals ("3.14") never end a sentence.
// Paragraphs end at blank lines. Word filters apply inside sentences and paragraphs too.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/canonicalizer.h"
#include "core/params.h"

namespace cops {

struct Unit {
  uint32_t stream_begin = 0;  // [stream_begin, stream_end) in UnitStream::text
  uint32_t stream_end = 0;
  uint32_t input_begin = 0;   // byte span in the original input
  uint32_t input_end = 0;
  uint32_t words = 0;         // words kept in the unit
};

// The unit texts of a document laid out so that any run of consecutive units is one
// contiguous slice of `text`: units are separated by one ' ' (words) or '\n'
// (sentences, paragraphs; their words are separated by ' ').
struct UnitStream {
  std::string storage;    // backing store when the stream is not the canonical text itself
  std::string_view text;  // points into storage or into the CanonicalText
  std::vector<Unit> units;

  std::string_view UnitText(const Unit& u) const {
    return text.substr(u.stream_begin, u.stream_end - u.stream_begin);
  }
  // Units [b, e) as one slice. REQUIRES: b < e <= units.size().
  std::string_view Slice(uint32_t b, uint32_t e) const {
    return text.substr(units[b].stream_begin, units[e - 1].stream_end - units[b].stream_begin);
  }
};

// Fills `out` from `canon`. `out->text` may point into `canon`, which must outlive it.
void BuildUnits(const CanonicalText& canon, UnitKind kind, const Enhancements& enh,
                UnitStream* out);

// True when the canonical word is in the built-in English stop-word list.
bool IsStopWord(std::string_view canonical_word);
// That list, each word canonical (what IsStopWord() holds), in no particular order.
const std::vector<std::string>& CanonicalStopWords();

}  // namespace cops

#endif  // COPS_CORE_UNITS_H_
