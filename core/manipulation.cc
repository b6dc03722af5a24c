#include "core/manipulation.h"

#include <algorithm>

#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/utf8.h>

#include "core/canonicalizer.h"

namespace cops {
namespace {

bool IsAsciiLetter(UChar32 c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

// Letters that pass for Latin ones: scripts with Latin homoglyphs (TR39 confusables), and
// the fullwidth and mathematical alphanumeric forms of Latin letters.
bool LooksLatin(UChar32 c) {
  if ((c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A)) return true;
  if (c >= 0x1D400 && c <= 0x1D6A3) return true;
  if (!u_isalpha(c)) return false;
  UErrorCode err = U_ZERO_ERROR;
  switch (uscript_getScript(c, &err)) {
    case USCRIPT_CYRILLIC:
    case USCRIPT_GREEK:
    case USCRIPT_ARMENIAN:
    case USCRIPT_CHEROKEE:
    case USCRIPT_COPTIC:
      return U_SUCCESS(err);
    default:
      return false;
  }
}

// Invisible characters a writer inserts into Latin text: those canonicalization removes,
// and U+2800 (braille blank), which renders as a space but is a symbol.
bool IsInvisible(UChar32 c) {
  return c == 0x2800 || IsInvisibleCodePoint(static_cast<uint32_t>(c));
}

bool IsLatinContext(UChar32 c) {
  return c < 0x80 || (u_isalpha(c) && [c] {
           UErrorCode err = U_ZERO_ERROR;
           return uscript_getScript(c, &err) == USCRIPT_LATIN;
         }());
}

}  // namespace

std::string_view ManipulationKindName(ManipulationKind k) {
  switch (k) {
    case ManipulationKind::kLookAlike:
      return "look_alike";
    case ManipulationKind::kInvisible:
      return "invisible";
    case ManipulationKind::kHiddenText:
      return "hidden_text";
    case ManipulationKind::kImageInWord:
      return "image_in_word";
  }
  return "";
}

void AddManipulationRange(const TextRange& r, uint32_t count, Manipulation* m) {
  m->count += count;
  if (!m->ranges.empty() && m->ranges.back().end >= r.start) {
    m->ranges.back().end = std::max(m->ranges.back().end, r.end);
  } else if (m->ranges.size() < kMaxManipulationRanges) {
    m->ranges.push_back(r);
  }
}

std::vector<Manipulation> FindManipulation(std::string_view text) {
  // Both kinds need a non-ASCII character: most texts end here.
  if (std::none_of(text.begin(), text.end(), [](char ch) { return ch & 0x80; })) return {};
  Manipulation look{ManipulationKind::kLookAlike, 0, {}};
  Manipulation invisible{ManipulationKind::kInvisible, 0, {}};
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(std::min<size_t>(text.size(), INT32_MAX));
  // The current word (a run of letters, digits, marks and invisible characters): its
  // bytes, whether it has ASCII letters, and its look-alike letters.
  int32_t word_start = -1, word_end = 0;
  bool word_ascii = false;
  uint32_t word_look = 0;
  auto end_word = [&] {
    if (word_start >= 0 && word_ascii && word_look > 0) {
      AddManipulationRange({static_cast<uint32_t>(word_start), static_cast<uint32_t>(word_end)},
                           word_look, &look);
    }
    word_start = -1;
    word_ascii = false;
    word_look = 0;
  };
  // The last visible code point before the current one (0 at the start).
  UChar32 before = 0;
  for (int32_t i = 0; i < n;) {
    const int32_t at = i;
    if (s[i] < 0x80) {  // ASCII without ICU
      const UChar32 a = s[i++];
      before = a;
      if (!(IsAsciiLetter(a) || (a >= '0' && a <= '9'))) {
        end_word();
        continue;
      }
      if (word_start < 0) word_start = at;
      word_end = i;
      word_ascii = word_ascii || IsAsciiLetter(a);
      continue;
    }
    UChar32 c = 0;
    U8_NEXT(s, i, n, c);
    if (c < 0) continue;  // invalid UTF-8
    if (IsInvisible(c)) {
      // Flagged between Latin letters, digits, spaces or punctuation: the next visible
      // code point decides, and the start or end of the text counts as Latin.
      int32_t j = i;
      UChar32 after = 0;
      while (j < n) {
        U8_NEXT(s, j, n, after);
        if (after >= 0 && !IsInvisible(after)) break;
        after = 0;
      }
      if (IsLatinContext(before) && IsLatinContext(after)) {
        AddManipulationRange({static_cast<uint32_t>(at), static_cast<uint32_t>(i)}, 1,
                             &invisible);
      }
      if (c == 0x2800) end_word();  // a blank: it separates words
      continue;
    }
    before = c;
    const bool letter = u_isalnum(c) || u_getIntPropertyValue(c, UCHAR_GENERAL_CATEGORY_MASK) &
                                            U_GC_M_MASK;
    if (!letter) {
      end_word();
      continue;
    }
    if (word_start < 0) word_start = at;
    word_end = i;
    if (IsAsciiLetter(c)) word_ascii = true;
    if (LooksLatin(c)) ++word_look;
  }
  end_word();
  std::vector<Manipulation> out;
  if (look.count > 0) out.push_back(std::move(look));
  if (invisible.count > 0) out.push_back(std::move(invisible));
  return out;
}

}  // namespace cops
