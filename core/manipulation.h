#ifndef COPS_CORE_MANIPULATION_H_
#define COPS_CORE_MANIPULATION_H_

// Text manipulation: tricks a writer uses to hide a copy from a detector that compares
// characters. Canonicalization (core/canonicalizer.h) already undoes look-alike letters and
// invisible characters, so they do not hide a copy from COPS; a check reports them too,
// since a reader should know the text was doctored ("text manipulation suspected").
// Converters report hidden text (white, tiny or display:none text in HTML, DOCX and ODT;
// white, \phantom or tiny text in LaTeX; white, invisible or tiny text in PDF) and images
// placed inside words (letters replaced by pictures) the same way (convert/converter.h).
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string_view>
#include <vector>

namespace cops {

// on-wire: values equal cops.v1.ManipulationKind (proto/cops.proto); do not change.
enum class ManipulationKind : uint8_t {
  kLookAlike = 1,    // letters of another script that look Latin (Cyrillic 'а'), fullwidth or
                     // mathematical letters, inside a word of Latin letters; folded
  kInvisible = 2,    // invisible characters (zero-width space and joiners, soft hyphen, BOM,
                     // word joiner, U+2800 braille blank) next to Latin letters or spaces;
                     // removed
  kHiddenText = 3,   // text the document hides from a reader (HTML display:none,
                     // visibility:hidden, font size <= 1pt, white on white; DOCX w:vanish,
                     // white colour, size <= 1pt; ODT the same by style, hidden fields and
                     // sections; LaTeX white, \phantom, \fontsize <= 1pt; PDF: 1 pt or
                     // below, or no ink on the rendered page); found by the converter
  kImageInWord = 4,  // an image inside a word, letters on both sides ("Pay<img>al": letters
                     // replaced by pictures of them); found by the HTML and DOCX/ODT
                     // converters
};

// "look_alike", "invisible", "hidden_text", "image_in_word"; "" outside the enum.
std::string_view ManipulationKindName(ManipulationKind k);

// Bytes [start, end) of the text.
struct TextRange {
  uint32_t start = 0;
  uint32_t end = 0;
  bool operator==(const TextRange&) const = default;
};

struct Manipulation {
  ManipulationKind kind = ManipulationKind::kLookAlike;
  // Occurrences: look-alike letters, invisible characters, hidden runs, images.
  uint32_t count = 0;
  // Where, in order, adjacent ones merged: words holding look-alikes, runs of invisible
  // characters, hidden runs, words holding images. At most kMaxManipulationRanges (count
  // still counts all).
  std::vector<TextRange> ranges;
};

inline constexpr size_t kMaxManipulationRanges = 100;

// The look-alike and invisible characters of `text` (UTF-8; invalid bytes are skipped), one
// Manipulation per kind found, in kind order; empty for clean text. Byte offsets are those
// of `text`.
std::vector<Manipulation> FindManipulation(std::string_view text);

// Adds `r` to `m` (count and ranges), merging it with the last range when they touch.
void AddManipulationRange(const TextRange& r, uint32_t count, Manipulation* m);

}  // namespace cops

#endif  // COPS_CORE_MANIPULATION_H_
