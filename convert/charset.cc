#include "convert/charset.h"

#include <uchardet/uchardet.h>
#include <unicode/uchar.h>
#include <unicode/ucnv.h>
#include <unicode/uscript.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/strings.h"

namespace cops {
namespace {

struct UcnvCloser {
  void operator()(UConverter* c) const { ucnv_close(c); }
};
struct UchardetCloser {
  void operator()(uchardet* u) const { uchardet_delete(u); }
};

// Returns the BOM's charset and length, or {"", 0}.
std::pair<std::string_view, size_t> SniffBom(std::string_view b) {
  auto starts = [&](std::string_view p) { return b.substr(0, p.size()) == p; };
  if (starts("\xEF\xBB\xBF")) return {"UTF-8", 3};
  if (starts(std::string_view("\xFF\xFE\x00\x00", 4))) return {"UTF-32LE", 4};
  if (starts(std::string_view("\x00\x00\xFE\xFF", 4))) return {"UTF-32BE", 4};
  if (starts("\xFF\xFE")) return {"UTF-16LE", 2};
  if (starts("\xFE\xFF")) return {"UTF-16BE", 2};
  return {"", 0};
}

// BOM-less UTF-16 is recognised by NULs in every other byte of mostly-ASCII text.
std::string_view SniffUtf16(std::string_view b) {
  size_t n = std::min<size_t>(b.size(), 4096) & ~size_t{1};
  if (n < 4) return "";
  size_t even_nul = 0, odd_nul = 0;
  for (size_t i = 0; i < n; i += 2) {
    even_nul += b[i] == '\0';
    odd_nul += b[i + 1] == '\0';
  }
  const size_t pairs = n / 2;
  if (odd_nul * 10 >= pairs * 7 && even_nul * 10 < pairs) return "UTF-16LE";
  if (even_nul * 10 >= pairs * 7 && odd_nul * 10 < pairs) return "UTF-16BE";
  return "";
}

// The IANA spelling ("windows-1252", "Shift_JIS") when ICU knows one.
std::string IanaName(const std::string& name) {
  UErrorCode err = U_ZERO_ERROR;
  const char* iana = ucnv_getStandardName(name.c_str(), "IANA", &err);
  if (U_FAILURE(err) || iana == nullptr) {
    err = U_ZERO_ERROR;
    const char* canonical = ucnv_getCanonicalName(name.c_str(), "", &err);
    if (U_SUCCESS(err) && canonical != nullptr) {
      iana = ucnv_getStandardName(canonical, "IANA", &err);
    }
  }
  return U_SUCCESS(err) && iana != nullptr ? iana : name;
}

bool IsUtf8Name(std::string_view name) {
  std::string lower = AsciiLower(name);
  return lower == "utf-8" || lower == "utf8" || lower == "us-ascii" || lower == "ascii";
}

}  // namespace

bool IsValidUtf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
  const int32_t n = static_cast<int32_t>(bytes.size());
  int32_t i = 0;
  // Fast path over ASCII: eight bytes at a time, then one.
  while (i < n) {
    uint64_t word;
    if (n - i >= 8 && (std::memcpy(&word, s + i, 8), (word & 0x8080808080808080ULL) == 0)) {
      i += 8;
      continue;
    }
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    UChar32 c;
    U8_NEXT(s, i, n, c);
    if (c < 0) return false;
  }
  return true;
}

std::string DetectCharset(std::string_view bytes) {
  if (auto [bom, len] = SniffBom(bytes); len > 0) return std::string(bom);
  if (bytes.size() >= (uint64_t{1} << 31)) return "windows-1252";
  // Before the UTF-8 test: BOM-less UTF-16 of ASCII text is valid UTF-8 (NULs included).
  if (std::string_view u16 = SniffUtf16(bytes); !u16.empty()) return std::string(u16);
  if (IsValidUtf8(bytes)) return "UTF-8";
  std::unique_ptr<uchardet, UchardetCloser> ud(uchardet_new());
  // uchardet is the slowest step of plain-text conversion; 64 KB is plenty to decide.
  std::string_view sample = bytes.substr(0, 64 << 10);
  std::string result;
  if (uchardet_handle_data(ud.get(), sample.data(), sample.size()) == 0) {
    uchardet_data_end(ud.get());
    result = uchardet_get_charset(ud.get());
  }
  std::string lower = AsciiLower(result);
  if (lower.empty() || lower == "ascii" || lower == "iso-8859-1" || lower == "utf-8" ||
      lower == "iso-8859-15") {
    return "windows-1252";
  }
  // uchardet's name for Korean (EUC-KR and its Windows superset), which ICU does not know.
  if (lower == "uhc") return "windows-949";
  // KOI8-U is KOI8-R with Ukrainian and Belarusian letters in place of eight box-drawing
  // characters: reading Russian as KOI8-U loses nothing, Ukrainian read as KOI8-R does.
  if (lower == "koi8-r") return "KOI8-U";
  return IanaName(result);
}

absl::Status CheckDecodesAsText(std::string_view bytes, std::string_view charset) {
  if (bytes.size() < kMinStatisticalTextBytes) {
    // Too few characters to judge, and too few for uchardet to name the charset reliably:
    // 51 bytes of Ukrainian in windows-1251 read as windows-1252 are all accented letters.
    return absl::OkStatus();
  }
  const std::string name(charset);
  UErrorCode err = U_ZERO_ERROR;
  std::unique_ptr<UConverter, UcnvCloser> conv(ucnv_open(name.c_str(), &err));
  if (U_FAILURE(err) || conv == nullptr) {
    return absl::InvalidArgumentError(StrCat("text: unknown charset \"", name, "\""));
  }
  const bool single_byte = ucnv_getMaxCharSize(conv.get()) == 1;
  // 16 KiB decide as well as 64 and cost a quarter; flush=false leaves a character cut at the
  // end undecoded instead of reporting it as malformed.
  std::string_view sample = bytes.substr(0, 16 << 10);
  std::vector<UChar> units(sample.size() + 1);
  UChar* target = units.data();
  const char* source = sample.data();
  ucnv_toUnicode(conv.get(), &target, units.data() + units.size(), &source,
                 sample.data() + sample.size(), nullptr, /*flush=*/false, &err);
  const int32_t length = static_cast<int32_t>(target - units.data());

  size_t chars = 0;        // all characters but white space
  size_t odd = 0;          // symbols, controls, unassigned or undecodable
  size_t ascii_latin = 0;  // Latin letters in ASCII ...
  size_t other_latin = 0;  // ... and outside it
  size_t letters = 0;
  size_t case_flips = 0;  // a capital right after a lower-case letter, one of them non-ASCII
  size_t run = 0, longest_run = 0;  // non-ASCII characters in a row
  UChar32 prev = ' ';
  for (int32_t i = 0; i < length;) {
    UChar32 c;
    U16_NEXT(units.data(), i, length, c);
    if (c < 0x80) {
      run = 0;
    } else {
      longest_run = std::max(longest_run, ++run);
    }
    if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || u_isUWhiteSpace(c)) {
      prev = c;
      run = 0;
      continue;
    }
    ++chars;
    const int8_t type = u_charType(c);
    switch (type) {
      case U_UNASSIGNED:
      case U_PRIVATE_USE_CHAR:
      case U_SURROGATE:
        ++odd;
        break;
      case U_CONTROL_CHAR:
        odd += c != 0x1B;  // ESC switches ISO-2022 character sets
        break;
      case U_MATH_SYMBOL:
      case U_MODIFIER_SYMBOL:
      case U_OTHER_SYMBOL:
      case U_OTHER_NUMBER:  // "½", "²": rare in prose, a sixteenth of the high bytes of 1252
        odd += c >= 0x80;
        break;
      default:
        // ICU's substitutes for undecodable bytes.
        odd += c == 0xFFFD || c == 0x1A;
        break;
    }
    if (u_isalpha(c)) {
      ++letters;
      UErrorCode script_err = U_ZERO_ERROR;
      if (uscript_getScript(c, &script_err) == USCRIPT_LATIN) {
        ++(c < 0x80 ? ascii_latin : other_latin);
      }
      if (u_isupper(c) && u_islower(prev) && (c >= 0x80 || prev >= 0x80)) ++case_flips;
    }
    prev = c;
  }
  // GB18030 gives nearly every byte pair a character: random pairs are mostly the rare ones
  // outside GB2312 (first byte or second below 0xA1), which Chinese prose hardly uses.
  size_t gb_pairs = 0, gb_rare = 0;
  if (AsciiLower(name).rfind("gb", 0) == 0) {
    for (size_t i = 0; i + 1 < sample.size(); ++i) {
      const auto lead = static_cast<unsigned char>(sample[i]);
      if (lead < 0x81) continue;
      const auto trail = static_cast<unsigned char>(sample[i + 1]);
      ++gb_pairs;
      gb_rare += lead < 0xA1 || trail < 0xA1;
      ++i;
    }
  }
  std::string why;
  if (gb_rare >= 2 && gb_rare * 10 > gb_pairs) {
    why = StrCat(gb_rare, " of its ", gb_pairs, " characters outside GB2312");
  } else if (odd >= 2 && odd * 20 > chars) {
    why = StrCat(odd * 100 / chars, "% symbols, control, unassigned or undecodable characters");
  } else if (other_latin > ascii_latin + 2) {
    why =
        StrCat(other_latin, " of its ", other_latin + ascii_latin, " Latin letters outside ASCII");
  } else if (case_flips >= 2 && case_flips * 20 > letters) {
    why = StrCat(case_flips, " capitals right after lower-case letters in ", letters, " letters");
  } else if (single_byte && longest_run > 32) {
    why = StrCat(longest_run, " non-ASCII characters in a row without a space");
  } else {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(StrCat("decoded as ", IanaName(name), ", it has ", why,
                                           ": random or compressed bytes, not text"));
}

absl::StatusOr<std::string> DecodeToUtf8(std::string_view bytes, std::string_view charset,
                                         uint32_t base_offset, TextBuilder* out) {
  std::string name = charset.empty() ? DetectCharset(bytes) : std::string(charset);
  auto [bom, bom_len] = SniffBom(bytes);
  // Without a BOM, DetectCharset says UTF-8 only of bytes it has validated whole.
  const bool validated = charset.empty() && bom_len == 0 && name == "UTF-8";
  if (bom_len > 0 && (charset.empty() || AsciiLower(bom).find(
                                             AsciiLower(name).substr(0, 6)) == 0)) {
    name = std::string(bom);
  } else {
    bom_len = 0;
  }
  bytes.remove_prefix(bom_len);
  base_offset += static_cast<uint32_t>(bom_len);

  if (IsUtf8Name(name) && (validated || IsValidUtf8(bytes))) {
    out->Append(bytes, base_offset);  // identity map
    return std::string("UTF-8");
  }

  UErrorCode err = U_ZERO_ERROR;
  std::unique_ptr<UConverter, UcnvCloser> conv(ucnv_open(name.c_str(), &err));
  if (U_FAILURE(err) || conv == nullptr) {
    return absl::InvalidArgumentError(StrCat("text: unknown charset \"", name, "\""));
  }
  // Decode in chunks; ICU reports, for every UTF-16 unit, the offset of the source
  // sequence that produced it (relative to the chunk's source start).
  constexpr size_t kChunk = 16 << 10;
  std::vector<UChar> target(kChunk);
  std::vector<int32_t> offsets(kChunk);
  const char* source = bytes.data();
  const char* const source_limit = bytes.data() + bytes.size();
  char utf8[U8_MAX_LENGTH];
  UChar pending_lead = 0;
  uint32_t pending_offset = 0;
  // Characters are gathered into runs that map linearly (ASCII in a single-byte charset)
  // so the builder sees one Append per run, not per character.
  std::string run;
  uint32_t run_orig = 0;
  auto emit = [&](std::string_view bytes, uint32_t at) {
    if (!run.empty() && at == run_orig + run.size()) {
      run.append(bytes);
      return;
    }
    out->Append(run, run_orig);
    run.assign(bytes);
    run_orig = at;
  };
  while (true) {
    const char* chunk_start = source;
    UChar* t = target.data();
    err = U_ZERO_ERROR;
    ucnv_toUnicode(conv.get(), &t, target.data() + target.size(), &source, source_limit,
                   offsets.data(), /*flush=*/true, &err);
    if (U_FAILURE(err) && err != U_BUFFER_OVERFLOW_ERROR) {
      return absl::InvalidArgumentError(
          StrCat("text: cannot decode as ", name, ": ", u_errorName(err)));
    }
    const size_t produced = static_cast<size_t>(t - target.data());
    const uint32_t chunk_base =
        base_offset + static_cast<uint32_t>(chunk_start - bytes.data());
    for (size_t i = 0; i < produced; ++i) {
      UChar32 c = target[i];
      uint32_t at = chunk_base + static_cast<uint32_t>(offsets[i] < 0 ? 0 : offsets[i]);
      if (pending_lead != 0) {
        if (U16_IS_TRAIL(c)) {
          c = U16_GET_SUPPLEMENTARY(pending_lead, c);
          at = pending_offset;
        } else {
          int32_t len = 0;
          U8_APPEND_UNSAFE(utf8, len, 0xFFFD);
          emit(std::string_view(utf8, len), pending_offset);
        }
        pending_lead = 0;
      } else if (U16_IS_LEAD(c)) {
        pending_lead = static_cast<UChar>(c);
        pending_offset = at;
        continue;
      }
      if (U_IS_SURROGATE(c)) c = 0xFFFD;
      int32_t len = 0;
      U8_APPEND_UNSAFE(utf8, len, c);
      emit(std::string_view(utf8, len), at);
    }
    if (err != U_BUFFER_OVERFLOW_ERROR) break;
  }
  if (pending_lead != 0) {
    int32_t len = 0;
    U8_APPEND_UNSAFE(utf8, len, 0xFFFD);
    emit(std::string_view(utf8, len), pending_offset);
  }
  out->Append(run, run_orig);
  return IanaName(name);
}

ConvertedDocument DecodeWithMap(std::string_view bytes, std::string_view charset) {
  ConvertedDocument doc;
  TextBuilder builder(~uint64_t{0});
  auto used = DecodeToUtf8(bytes, charset, 0, &builder);
  if (!used.ok()) {
    builder = TextBuilder(~uint64_t{0});
    used = DecodeToUtf8(bytes, "", 0, &builder);
  }
  doc.charset = used.ok() ? *used : "";
  builder.Finish(&doc, /*trim=*/false);
  return doc;
}

std::string ToUtf8(std::string_view bytes, std::string_view charset) {
  TextBuilder builder(~uint64_t{0});
  if (!DecodeToUtf8(bytes, charset, 0, &builder).ok()) {
    TextBuilder fallback(~uint64_t{0});
    (void)DecodeToUtf8(bytes, "", 0, &fallback);
    return fallback.text();
  }
  return builder.text();
}

}  // namespace cops
