#ifndef COPS_CORE_CANONICALIZER_H_
#define COPS_CORE_CANONICALIZER_H_

// Canonical text: the form of a document that copies with cosmetic changes share.
//
// Rules (normalization version 2; version 3 adds one step, below; see kNormalizationVersion
// in core/params.h):
//   - Input is any bytes. Invalid UTF-8 sequences become U+FFFD, which separates words.
//   - A word (token) is a maximal run of letters, marks and digits; '.' or ',' between two
//     digits stays inside the word ("3.14", "1,000"). Everything else separates words.
//   - Format and default-ignorable characters (zero-width space/joiners, soft hyphen, bidi
//     controls, BOM) are removed without separating: "in<ZWSP>visible" is one word.
//   - Each word is mapped by NFKC_Casefold, then the Unicode TR39 confusable skeleton (ICU
//     uspoof_getSkeleton), then NFKC_Casefold again, so "Pаypal" with a Cyrillic 'а' and
//     "paypal" are the same word. Note that skeletons also map some ASCII letters and
//     digits (e.g. "m" -> "rn", "0" -> "o"); canonical text is for hashing, not display.
//     Version 3 first replaces each non-ASCII capital letter whose skeleton is ASCII by
//     that skeleton (Greek 'Τ' -> 'T'), which folding alone would make an unmappable 'τ'.
//   - Canonical text is the mapped words joined by single spaces: whitespace and
//     punctuation runs fold away. What the sentence splitter needs from the dropped
//     punctuation is kept as Token flags.
//   - Pure-ASCII words never call ICU: a 128-entry table built once from the same ICU
//     pipeline maps them, so both paths agree by construction.
//
// Offsets: every Token records its byte range in the canonical text and in the input, so
// any span of whole words maps back to the exact original bytes (InputOffset*()).
//
// Thread-safety: Canonicalize() is a pure function and may run on many threads at once.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cops {

// Flags of a Token. Sentence information describes the separator run *after* the token.
enum TokenFlag : uint8_t {
  kTokenUpper = 1,          // first character of the original word is upper/title case
  kTokenNumber = 2,         // the word is made of digits (and inner '.' or ',') only
  kTokenSingleChar = 4,     // the original word is one character ("J", "U", "e")
  kTokenPeriodAfter = 8,    // a single '.' follows (not an ellipsis)
  kTokenStrongEndAfter = 16,  // '!', '?' or another sentence terminator follows
  kTokenParagraphAfter = 32,  // a blank line (two or more line breaks) follows
};

struct Token {
  uint32_t canon_begin = 0;  // [canon_begin, canon_end) in CanonicalText::text
  uint32_t canon_end = 0;
  uint32_t input_begin = 0;  // [input_begin, input_end) in the original input bytes
  uint32_t input_end = 0;
  uint8_t flags = 0;
};

struct CanonicalText {
  std::string text;            // words joined by ' '
  std::vector<Token> tokens;   // in order; tokens[i+1].canon_begin == tokens[i].canon_end+1

  void Clear() {
    text.clear();
    tokens.clear();
  }
  std::string_view Word(const Token& t) const {
    return std::string_view(text).substr(t.canon_begin, t.canon_end - t.canon_begin);
  }
  // Input byte offset where the word containing (or following) canonical offset `pos`
  // begins; input size-equivalent (last token's input_end) past the end.
  uint32_t InputOffsetOf(uint32_t canon_pos) const;
};

// Fills `out` (cleared first) with the canonical form of `input`.
// `version` is a supported normalization version (core/params.h), 2 or 3.
// REQUIRES: input.size() < 4 GiB.
void Canonicalize(std::string_view input, CanonicalText* out, uint32_t version = 3);

// Whether canonicalization removes code point `c` without separating words (format and
// default-ignorable characters: zero-width space and joiners, soft hyphen, bidi controls,
// BOM). The manipulation scan (core/manipulation.h) reports what this removes.
bool IsInvisibleCodePoint(uint32_t c);

// Canonical form of a single word, e.g. for word lists (stop words, abbreviations).
std::string CanonicalWord(std::string_view word, uint32_t version = 3);

}  // namespace cops

#endif  // COPS_CORE_CANONICALIZER_H_
