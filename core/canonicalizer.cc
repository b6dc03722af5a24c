#include "core/canonicalizer.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uspoof.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <string>

// SSE2 is part of x86-64, so the block scanner needs no runtime CPU check; other targets
// take the per-byte scanner, which produces the same output.
#if defined(__SSE2__)
#include <emmintrin.h>
#define COPS_CANON_SSE2 1
#endif

namespace cops {
namespace {

// Byte classes of the ASCII fast path.
enum AsciiClass : uint8_t {
  kSep = 0,     // whitespace, controls, punctuation and symbols without sentence meaning
  kAlnum = 1,   // letters and digits
  kNewline = 2,
  kPeriod = 3,
  kStrongEnd = 4,  // '!' and '?'
  kHigh = 5,       // a non-ASCII lead or continuation byte: take the Unicode path
};

// The full per-word pipeline: NFKC_Casefold, TR39 skeleton, NFKC_Casefold.
class WordMapper {
 public:
  WordMapper() {
    UErrorCode status = U_ZERO_ERROR;
    nfkc_cf_ = icu::Normalizer2::getNFKCCasefoldInstance(status);
    if (U_FAILURE(status)) nfkc_cf_ = nullptr;
    status = U_ZERO_ERROR;
    spoof_ = uspoof_open(&status);
    if (U_FAILURE(status)) {
      if (spoof_ != nullptr) uspoof_close(spoof_);
      spoof_ = nullptr;
    }
    for (int c = 0; c < 128; ++c) {
      std::string mapped;
      if (std::isalnum(c)) {
        icu::UnicodeString s(static_cast<UChar>(c));
        Map(s, &mapped);
      }
      ascii_[c] = mapped;
      ascii_single_[c] = mapped.size() == 1 ? mapped[0] : 0;
      max_ascii_len_ = std::max(max_ascii_len_, mapped.size());
      if (mapped.size() <= kPackedBytes) {
        packed_[c].len = static_cast<uint8_t>(mapped.size());
        std::memcpy(packed_[c].bytes, mapped.data(), mapped.size());
      }
    }
    BuildBlockModel();
    for (char c = 'Z'; c >= 'A'; --c) {  // 'I' and 'l' share a skeleton: 'A'..'Z' win
      const icu::UnicodeString skeleton = Skeleton(icu::UnicodeString(static_cast<UChar>(c)));
      ascii_capital_by_skeleton_[std::u16string(skeleton.getBuffer(), skeleton.length())] = c;
    }
  }
  ~WordMapper() {
    if (spoof_ != nullptr) uspoof_close(spoof_);
  }

  // Appends the canonical UTF-8 form of `word` to `out` under normalization `version`.
  void Map(const icu::UnicodeString& word, std::string* out, uint32_t version = 2) const {
    if (nfkc_cf_ == nullptr) {
      word.toUTF8String(*out);
      return;
    }
    UErrorCode status = U_ZERO_ERROR;
    icu::UnicodeString folded =
        nfkc_cf_->normalize(version >= 3 ? UnfoldCapitalLookalikes(word) : word, status);
    if (U_FAILURE(status)) {
      word.toUTF8String(*out);
      return;
    }
    if (spoof_ != nullptr) {
      icu::UnicodeString skeleton;
      // uspoof_getSkeleton is const on the checker and safe to call concurrently.
      uspoof_getSkeletonUnicodeString(spoof_, 0, folded, skeleton, &status);
      if (U_SUCCESS(status)) {
        icu::UnicodeString refolded = nfkc_cf_->normalize(skeleton, status);
        if (U_SUCCESS(status)) folded = refolded;
      }
    }
    folded.toUTF8String(*out);
  }

  const std::string& Ascii(unsigned char c) const { return ascii_[c]; }

  // TR39 skeleton of `s` (empty when unavailable).
  icu::UnicodeString Skeleton(const icu::UnicodeString& s) const {
    icu::UnicodeString skeleton;
    if (spoof_ == nullptr) return skeleton;
    UErrorCode status = U_ZERO_ERROR;
    uspoof_getSkeletonUnicodeString(spoof_, 0, s, skeleton, &status);
    if (U_FAILURE(status)) skeleton.remove();
    return skeleton;
  }

  // Version 3: each non-ASCII capital letter that is confusable with an ASCII capital (the
  // same TR39 skeleton: Greek 'Τ' and 'T', Greek 'Ι' and 'I') becomes that ASCII capital,
  // and one whose skeleton is otherwise ASCII becomes the skeleton, before case folding.
  // Folding first would turn 'Τ' into 'τ', which no skeleton maps back to 't'. ASCII
  // letters are left alone: their own skeletons are not always themselves ('I' -> 'l').
  icu::UnicodeString UnfoldCapitalLookalikes(const icu::UnicodeString& word) const {
    if (spoof_ == nullptr) return word;
    icu::UnicodeString out;
    for (int32_t i = 0; i < word.length();) {
      const UChar32 c = word.char32At(i);
      i += U16_LENGTH(c);
      if (c >= 0x80 && (u_isupper(c) || u_istitle(c))) {
        const icu::UnicodeString skeleton = Skeleton(icu::UnicodeString(c));
        std::u16string key(skeleton.getBuffer(), skeleton.length());
        if (auto it = ascii_capital_by_skeleton_.find(key);
            it != ascii_capital_by_skeleton_.end()) {
          out.append(static_cast<UChar>(it->second));
          continue;
        }
        bool ascii = !skeleton.isEmpty();
        for (int32_t j = 0; ascii && j < skeleton.length(); ++j) ascii = skeleton[j] < 0x80;
        if (ascii) {
          out.append(skeleton);
          continue;
        }
      }
      out.append(c);
    }
    return out;
  }

  // The mappings of ASCII letters and digits as fixed-size records, so the fast path can
  // store kPackedBytes bytes unconditionally and advance by len (no per-byte branches).
  static constexpr size_t kPackedBytes = 4;
  struct Packed {
    char bytes[kPackedBytes] = {};
    uint8_t len = 0;
  };
  // False when some mapping is longer than kPackedBytes (not so with Debian's ICU; the
  // scanner then takes the generic path).
  bool PackedOk() const { return max_ascii_len_ <= kPackedBytes; }
  const Packed& AsciiPacked(unsigned char c) const { return packed_[c]; }
  // Longest canonical form of one ASCII letter or digit, in bytes.
  size_t MaxAsciiLen() const { return max_ascii_len_; }
  // The mapping of an ASCII letter or digit when it is one byte, else 0.
  char AsciiSingle(unsigned char c) const { return ascii_single_[c]; }

  // The ASCII mappings restated for a 16-byte block scanner: "lower-case A-Z, then replace
  // each byte in subst_from by subst_to"; bytes in `expand` map to other than one byte and
  // are written from the packed table. Built from (and checked against) the table above,
  // so both scanners agree by construction; BlockOk() is false when the table does not
  // fit this shape, and the per-byte scanner runs instead. Unused slots hold NUL, which is
  // never inside a word. Two slots each fit Debian's ICU 72 ("0" -> "o", "1" -> "l"; "m"
  // and "M" -> "rn"); every slot costs vector operations per word.
  static constexpr size_t kSlots = 2;
  struct BlockModel {
    bool ok = false;
    std::array<unsigned char, kSlots> subst_from{};
    std::array<unsigned char, kSlots> subst_to{};
    std::array<unsigned char, kSlots> expand{};
  };
  bool BlockOk() const { return block_.ok; }
  const BlockModel& Block() const { return block_; }

 private:
  // Skeleton of each ASCII capital -> that capital (version 3).
  std::map<std::u16string, char> ascii_capital_by_skeleton_;

  void BuildBlockModel() {
    size_t n_subst = 0, n_expand = 0;
    bool fits = PackedOk();
    for (int c = 0; c < 128 && fits; ++c) {
      if (!std::isalnum(c)) continue;
      const std::string& m = ascii_[c];
      const unsigned char lower = (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32)
                                                         : static_cast<unsigned char>(c);
      if (m.size() != 1) {
        if (n_expand == kSlots) fits = false;
        else block_.expand[n_expand++] = static_cast<unsigned char>(c);
      } else if (static_cast<unsigned char>(m[0]) != lower) {
        if (n_subst == kSlots) {
          fits = false;
        } else {
          block_.subst_from[n_subst] = static_cast<unsigned char>(c);
          block_.subst_to[n_subst++] = static_cast<unsigned char>(m[0]);
        }
      }
    }
    block_.ok = fits;
  }

  BlockModel block_;
  const icu::Normalizer2* nfkc_cf_ = nullptr;  // owned by ICU
  USpoofChecker* spoof_ = nullptr;
  std::array<std::string, 128> ascii_;
  std::array<char, 128> ascii_single_{};
  std::array<Packed, 128> packed_{};
  size_t max_ascii_len_ = 1;
};

const WordMapper& Mapper() {
  static const WordMapper* mapper = new WordMapper();  // never destroyed: used at exit too
  return *mapper;
}

constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x80) {
      t[c] = kHigh;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      t[c] = kAlnum;
    } else if (c == '\n') {
      t[c] = kNewline;
    } else if (c == '.') {
      t[c] = kPeriod;
    } else if (c == '!' || c == '?') {
      t[c] = kStrongEnd;
    } else {
      t[c] = kSep;
    }
  }
  return t;
}
constexpr std::array<uint8_t, 256> kClass = MakeClasses();

#if COPS_CANON_SSE2
// Bit i is set when byte i of `v` is an ASCII letter or digit. Bytes >= 0x80 are negative
// as signed chars and fail every range test.
inline uint32_t AlnumMask(__m128i v) {
  const __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
  const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                       _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
  const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(letter, digit)));
}

inline uint32_t DigitMask(__m128i v) {
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_and_si128(
      _mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)))));
}

inline uint32_t EqMask(__m128i v, char c) {
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
}

// min(set bits of x, 2). Gap counts are only compared with 1 and 2 (Gap::Flags()), so a
// block adding at most 2 keeps every comparison's outcome, and costs no population count.
inline uint32_t AtMostTwo(uint32_t x) {
  return static_cast<uint32_t>(x != 0) + static_cast<uint32_t>((x & (x - 1)) != 0);
}

inline __m128i Load16(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// WordMapper::BlockModel as vectors.
struct BlockMapper {
  explicit BlockMapper(const WordMapper::BlockModel& m) {
    for (size_t k = 0; k < WordMapper::kSlots; ++k) {
      from[k] = _mm_set1_epi8(static_cast<char>(m.subst_from[k]));
      to[k] = _mm_set1_epi8(static_cast<char>(m.subst_to[k]));
      expand[k] = _mm_set1_epi8(static_cast<char>(m.expand[k]));
    }
  }
  // The one-byte mappings of the 16 bytes at `v` (meaningful for letters and digits only).
  __m128i Map(__m128i v) const {
    const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
    __m128i out = _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
    for (size_t k = 0; k < WordMapper::kSlots; ++k) {
      const __m128i eq = _mm_cmpeq_epi8(v, from[k]);
      out = _mm_or_si128(_mm_andnot_si128(eq, out), _mm_and_si128(eq, to[k]));
    }
    return out;
  }
  // Bit i is set when byte i of `v` maps to other than one byte.
  uint32_t ExpandMask(__m128i v) const {
    __m128i any = _mm_cmpeq_epi8(v, expand[0]);
    for (size_t k = 1; k < WordMapper::kSlots; ++k) {
      any = _mm_or_si128(any, _mm_cmpeq_epi8(v, expand[k]));
    }
    return static_cast<uint32_t>(_mm_movemask_epi8(any));
  }
  __m128i from[WordMapper::kSlots];
  __m128i to[WordMapper::kSlots];
  __m128i expand[WordMapper::kSlots];
};
#endif  // COPS_CANON_SSE2

// Unicode classes of a non-ASCII code point, in the same terms as AsciiClass.
enum class CpClass { kSkip, kAlnum, kSep, kNewline, kParagraph, kPeriod, kEllipsis, kStrongEnd };

CpClass ClassifyCodePoint(UChar32 c) {
  if (c == 0x2026) return CpClass::kEllipsis;
  if (c == 0x2029) return CpClass::kParagraph;
  if (c == 0x2028 || c == 0x0085) return CpClass::kNewline;
  if (IsInvisibleCodePoint(static_cast<uint32_t>(c))) return CpClass::kSkip;
  const int8_t type = u_charType(c);
  switch (type) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK:
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return CpClass::kAlnum;
    default:
      break;
  }
  if (c == 0xFF0E || c == 0xFE52) return CpClass::kPeriod;  // fullwidth/small full stop
  if (u_hasBinaryProperty(c, UCHAR_S_TERM)) return CpClass::kStrongEnd;
  return CpClass::kSep;
}

// Scanner state of the separator run between two words.
struct Gap {
  // Line breaks and periods seen; the block scanner adds at most 2 per 16 bytes, which
  // Flags(), comparing with 1 and 2 only, cannot tell from the exact count.
  uint32_t newlines = 0;
  uint32_t periods = 0;
  bool strong = false;
  bool ellipsis = false;
  void Reset() { *this = Gap(); }
  uint8_t Flags() const {
    uint8_t f = 0;
    if (newlines >= 2) f |= kTokenParagraphAfter;
    if (strong) f |= kTokenStrongEndAfter;
    if (periods == 1 && !ellipsis) f |= kTokenPeriodAfter;
    return f;
  }
};

class Scanner {
 public:
  // Canonical text is written through text_.data() at pos_ into a buffer pre-sized for
  // the ASCII worst case (Ensure() grows it for the rare longer ICU mappings); Finish()
  // trims it. Per-byte push_back cost more than the table lookups themselves.
  Scanner(std::string_view in, CanonicalText* out, uint32_t version)
      : version_(version),
        in_(in),
        out_(out),
        text_(out->text),
        mapper_(Mapper())
#if COPS_CANON_SSE2
        ,
        block_(mapper_.Block())
#endif
  {
    text_.resize(in.size() * mapper_.MaxAsciiLen() + kSlack);
  }

  void Run() {
    const size_t n = in_.size();
    const unsigned char* s = reinterpret_cast<const unsigned char*>(in_.data());
    size_t i = 0;
    while (i < n) {
      const unsigned char b = s[i];
      switch (kClass[b]) {
        case kAlnum:
          if (in_word_ && unicode_) {
            AsciiAlnum(i, b);
            ++i;
          } else {
            i = AsciiWords(s, i, n);
          }
          break;
        case kNewline:
          EndWord();
          i = GapRun(s, i, n);
          break;
        case kPeriod:
          // '.' between digits stays inside a number ("3.14").
          if (in_word_ && last_digit_ && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') {
            AppendAsciiRaw(b);
            ++i;
            break;
          }
          EndWord();
          i = GapRun(s, i, n);
          break;
        case kStrongEnd:
          EndWord();
          i = GapRun(s, i, n);
          break;
        case kSep:
          if (b == ',' && in_word_ && last_digit_ && i + 1 < n && s[i + 1] >= '0' &&
              s[i + 1] <= '9') {
            AppendAsciiRaw(b);
            ++i;
            break;
          }
          EndWord();
          i = GapRun(s, i, n);
          break;
        default:
          i = NonAscii(s, i, n);
          break;
      }
    }
    EndWord();
    if (!out_->tokens.empty()) out_->tokens.back().flags |= gap_.Flags();
    text_.resize(pos_);
  }

 private:
  // Makes room for `extra` more bytes of canonical text at pos_.
  void Ensure(size_t extra) {
    if (pos_ + extra > text_.size()) text_.resize(std::max(2 * text_.size(), pos_ + extra));
  }

  // A run of ASCII separators outside a word (spaces, punctuation, line breaks), starting
  // at s[i]: a tight loop that only counts what the sentence splitter needs. Outside a word
  // '.' and ',' never join digits, so no lookahead is needed here.
  size_t GapRun(const unsigned char* s, size_t i, size_t n) {
#if COPS_CANON_SSE2
    // 16 bytes at a time: the run ends at the first letter, digit or non-ASCII byte.
    for (; i + 16 <= n;) {
      const __m128i v = Load16(s + i);
      const uint32_t stop = AlnumMask(v) | static_cast<uint32_t>(_mm_movemask_epi8(v));
      const int len = std::countr_zero(stop | 0x10000u);
      const uint32_t run = (1u << len) - 1;
      gap_.newlines += AtMostTwo(EqMask(v, '\n') & run);
      gap_.periods += AtMostTwo(EqMask(v, '.') & run);
      gap_.strong = gap_.strong || ((EqMask(v, '!') | EqMask(v, '?')) & run) != 0;
      i += static_cast<size_t>(len);
      if (len < 16) return i;
    }
#endif
    for (; i < n; ++i) {
      const uint8_t c = kClass[s[i]];
      if (c == kSep) continue;
      if (c == kNewline) {
        ++gap_.newlines;
      } else if (c == kPeriod) {
        ++gap_.periods;
      } else if (c == kStrongEnd) {
        gap_.strong = true;
      } else {
        break;  // a word or a non-ASCII byte
      }
    }
    return i;
  }

  void StartWord(size_t i, bool upper) {
    if (!out_->tokens.empty()) {
      out_->tokens.back().flags |= gap_.Flags();
      Ensure(1);
      text_[pos_++] = ' ';
    }
    gap_.Reset();
    in_word_ = true;
    unicode_ = false;
    all_digits_ = true;
    chars_ = 0;
    word_input_begin_ = static_cast<uint32_t>(i);
    word_canon_begin_ = static_cast<uint32_t>(pos_);
    first_upper_ = upper;
  }

  void AsciiAlnum(size_t i, unsigned char b) {
    const bool digit = b >= '0' && b <= '9';
    if (!in_word_) StartWord(i, b >= 'A' && b <= 'Z');
    ++chars_;
    if (!digit) all_digits_ = false;
    last_digit_ = digit;
    if (unicode_) {
      raw_.append(static_cast<UChar>(b));
    } else {
      Append(mapper_.Ascii(b));
    }
    word_input_end_ = static_cast<uint32_t>(i + 1);
  }

  void Append(std::string_view bytes) {
    Ensure(bytes.size());
    std::memcpy(text_.data() + pos_, bytes.data(), bytes.size());
    pos_ += bytes.size();
  }

  // Alternating ASCII words and separator runs from s[i] (a letter or digit), without a
  // trip through Run()'s dispatch per word. Stops before a non-ASCII byte and before '.'
  // or ',' that may join digits, which Run() handles.
  size_t AsciiWords(const unsigned char* s, size_t i, size_t n) {
    for (;;) {
      i = AsciiRun(s, i, n);
      if (i >= n) return i;
      const unsigned char b = s[i];
      const uint8_t c = kClass[b];
      if (c == kHigh || ((b == '.' || b == ',') && last_digit_)) return i;
      EndWord();
      i = GapRun(s, i, n);
      if (i >= n || kClass[s[i]] != kAlnum) return i;
    }
  }

  // A run of ASCII letters and digits on the fast path: one table lookup and one
  // fixed-size store per byte. Room is made once for the rest of the input, so the loop
  // needs no bounds check per byte (the buffer starts that large; only ICU mappings can
  // consume it faster than the input, and then Ensure() grows it here).
  [[gnu::always_inline]] size_t AsciiRun(const unsigned char* s, size_t i, size_t n) {
    if (!in_word_) StartWord(i, s[i] >= 'A' && s[i] <= 'Z');
    size_t j = i;
    bool digits = true;
#if COPS_CANON_SSE2
    if (mapper_.BlockOk()) {
      // 16 bytes at a time: the run's length from a bit mask, its mappings by vector
      // operations and 16-byte stores (the buffer has kSlack bytes of room past the
      // worst case), bytes that expand written one by one from the packed table. Loads
      // reach up to 31 bytes past j, so the last 31 bytes take the per-byte loop below.
      Ensure(mapper_.MaxAsciiLen() * (n - i) + kSlack);
      char* w = text_.data() + pos_;
      uint32_t non_digit = 0;
      while (j + 32 <= n) {
        const __m128i v = Load16(s + j);
        const int len = std::countr_zero(~AlnumMask(v));  // bit 16 and up are set
        const uint32_t run = (1u << len) - 1;
        if (s[i] <= '9') non_digit |= ~DigitMask(v) & run;  // else not a number anyway
        uint32_t expand = block_.ExpandMask(v) & run;
        size_t seg = j;  // input bytes [seg, j + len) are still to be written
        while (expand != 0) {
          const size_t at = j + static_cast<size_t>(std::countr_zero(expand));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(w), block_.Map(Load16(s + seg)));
          w += at - seg;
          const WordMapper::Packed& m = mapper_.AsciiPacked(s[at]);
          std::memcpy(w, m.bytes, WordMapper::kPackedBytes);
          w += m.len;
          seg = at + 1;
          expand &= expand - 1;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(w), block_.Map(Load16(s + seg)));
        w += j + static_cast<size_t>(len) - seg;
        j += static_cast<size_t>(len);
        if (len < 16) break;
      }
      digits = s[i] <= '9' && non_digit == 0;
      if (j + 32 <= n) {
        pos_ = static_cast<size_t>(w - text_.data());
        return FinishRun(s, i, j, digits);
      }
      for (; j < n && kClass[s[j]] == kAlnum; ++j) {
        const unsigned char b = s[j];
        digits = digits && b <= '9';
        const WordMapper::Packed& m = mapper_.AsciiPacked(b);
        std::memcpy(w, m.bytes, WordMapper::kPackedBytes);
        w += m.len;
      }
      pos_ = static_cast<size_t>(w - text_.data());
      return FinishRun(s, i, j, digits);
    }
#endif
    if (mapper_.PackedOk()) {
      constexpr size_t kW = WordMapper::kPackedBytes;
      Ensure(mapper_.MaxAsciiLen() * (n - i) + kW);
      char* w = text_.data() + pos_;
      for (; j < n && kClass[s[j]] == kAlnum; ++j) {
        const unsigned char b = s[j];
        digits = digits && b <= '9';
        const WordMapper::Packed& m = mapper_.AsciiPacked(b);
        std::memcpy(w, m.bytes, kW);
        w += m.len;
      }
      pos_ = static_cast<size_t>(w - text_.data());
    } else {
      for (; j < n && kClass[s[j]] == kAlnum; ++j) {
        digits = digits && s[j] <= '9';
        Append(mapper_.Ascii(s[j]));
      }
    }
    return FinishRun(s, i, j, digits);
  }

  // Word state after the ASCII run [i, j); returns j.
  size_t FinishRun(const unsigned char* s, size_t i, size_t j, bool digits) {
    chars_ += static_cast<uint32_t>(j - i);
    all_digits_ = all_digits_ && digits;
    last_digit_ = s[j - 1] <= '9';
    word_input_end_ = static_cast<uint32_t>(j);
    return j;
  }

  // Inner '.' or ',' of a number: kept verbatim in both paths.
  void AppendAsciiRaw(unsigned char b) {
    if (unicode_) {
      raw_.append(static_cast<UChar>(b));
    } else {
      Ensure(1);
      text_[pos_++] = static_cast<char>(b);
    }
  }

  size_t NonAscii(const unsigned char* s, size_t i, size_t n) {
    size_t next = i;
    UChar32 c;
    U8_NEXT(s, next, n, c);
    if (c < 0) c = 0xFFFD;  // invalid sequence: replaced, separates words
    switch (ClassifyCodePoint(c)) {
      case CpClass::kSkip:
        break;
      case CpClass::kAlnum: {
        if (!in_word_) StartWord(i, u_isupper(c) || u_istitle(c));
        if (!unicode_) SwitchToUnicode(s);
        raw_.append(c);
        ++chars_;
        const bool digit = u_charType(c) == U_DECIMAL_DIGIT_NUMBER;
        if (!digit) all_digits_ = false;
        last_digit_ = false;  // inner '.'/',' only between ASCII digits
        word_input_end_ = static_cast<uint32_t>(next);
        break;
      }
      case CpClass::kNewline:
        EndWord();
        ++gap_.newlines;
        break;
      case CpClass::kParagraph:
        EndWord();
        gap_.newlines += 2;
        break;
      case CpClass::kPeriod:
        EndWord();
        ++gap_.periods;
        break;
      case CpClass::kEllipsis:
        EndWord();
        gap_.ellipsis = true;
        break;
      case CpClass::kStrongEnd:
        EndWord();
        gap_.strong = true;
        break;
      case CpClass::kSep:
        EndWord();
        break;
    }
    return next;
  }

  // The word so far was ASCII: re-read it (including inner punctuation) as UTF-16 and let
  // ICU map the whole word when it ends.
  void SwitchToUnicode(const unsigned char* s) {
    unicode_ = true;
    raw_.remove();
    for (uint32_t j = word_input_begin_; j < word_input_end_; ++j) {
      if (s[j] < 0x80) raw_.append(static_cast<UChar>(s[j]));
      // Non-ASCII bytes before this point can only be skipped (ignorable) characters.
    }
    pos_ = word_canon_begin_;
  }

  // Inlined: it runs once per word and once per separator run; ICU words go out of line.
  [[gnu::always_inline]] void EndWord() {
    if (!in_word_) return;
    in_word_ = false;
    last_digit_ = false;
    if (unicode_ && !MapUnicodeWord()) return;
    Token t;
    t.canon_begin = word_canon_begin_;
    t.canon_end = static_cast<uint32_t>(pos_);
    t.input_begin = word_input_begin_;
    t.input_end = word_input_end_;
    t.flags = 0;
    if (first_upper_) t.flags |= kTokenUpper;
    if (all_digits_) t.flags |= kTokenNumber;
    if (chars_ == 1) t.flags |= kTokenSingleChar;
    out_->tokens.push_back(t);
  }

  // Appends the ICU mapping of raw_; false when the word mapped to nothing and was dropped.
  [[gnu::noinline]] bool MapUnicodeWord() {
    mapped_.clear();
    mapper_.Map(raw_, &mapped_, version_);
    unicode_ = false;
    if (mapped_.empty()) {
      // The word mapped to nothing: drop it and the separator before it.
      if (!out_->tokens.empty()) --pos_;
      return false;
    }
    Append(mapped_);
    return true;
  }

  // Room past the ASCII worst case for fixed-size stores (16-byte blocks, 4-byte records).
  static constexpr size_t kSlack = 64;

  const uint32_t version_;
  std::string_view in_;
  CanonicalText* out_;
  std::string& text_;  // out_->text, used as a buffer: bytes [0, pos_) are written
  size_t pos_ = 0;
  const WordMapper& mapper_;
#if COPS_CANON_SSE2
  const BlockMapper block_;
#endif
  Gap gap_;
  bool in_word_ = false;
  bool unicode_ = false;
  bool all_digits_ = true;
  bool last_digit_ = false;
  bool first_upper_ = false;
  uint32_t chars_ = 0;
  uint32_t word_input_begin_ = 0;
  uint32_t word_input_end_ = 0;
  uint32_t word_canon_begin_ = 0;
  icu::UnicodeString raw_;
  std::string mapped_;  // ICU output of the current word
};

}  // namespace

uint32_t CanonicalText::InputOffsetOf(uint32_t canon_pos) const {
  auto it = std::lower_bound(tokens.begin(), tokens.end(), canon_pos,
                             [](const Token& t, uint32_t pos) { return t.canon_end <= pos; });
  if (it == tokens.end()) return tokens.empty() ? 0 : tokens.back().input_end;
  return it->input_begin;
}

void Canonicalize(std::string_view input, CanonicalText* out, uint32_t version) {
  out->Clear();
  out->tokens.reserve(input.size() / 6 + 16);
  Scanner(input, out, version).Run();
}

std::string CanonicalWord(std::string_view word, uint32_t version) {
  CanonicalText t;
  Canonicalize(word, &t, version);
  return t.text;
}

bool IsInvisibleCodePoint(uint32_t c) {
  const UChar32 cp = static_cast<UChar32>(c);
  return u_charType(cp) == U_FORMAT_CHAR ||
         u_hasBinaryProperty(cp, UCHAR_DEFAULT_IGNORABLE_CODE_POINT);
}

}  // namespace cops
