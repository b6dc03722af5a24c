#ifndef COPS_CONVERT_CHARSET_H_
#define COPS_CONVERT_CHARSET_H_

// Charset detection and decoding to UTF-8 with a byte-offset map (ICU converters,
// uchardet for detection). Used by the plain-text converter and by formats that carry
// text in a declared or unknown charset (email parts, HTML).
//
// Thread-safety: all functions are thread-safe (no shared state).

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "convert/text_builder.h"

namespace cops {

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code points past
// U+10FFFF).
bool IsValidUtf8(std::string_view bytes);

// The charset of `bytes` by BOM, UTF-8 validity, then uchardet: an ICU converter name
// such as "UTF-8", "UTF-16LE", "windows-1252", "Shift_JIS". Latin-1 guesses are widened
// to windows-1252 (its superset in practice), KOI8-R to KOI8-U, uchardet's "UHC" is
// windows-949; undecidable input is windows-1252.
std::string DetectCharset(std::string_view bytes);

// OK when `bytes` (the start of a document, not valid UTF-8) decoded as `charset` reads like
// text written in that charset. INVALID_ARGUMENT saying why not ("decoded as windows-1252:
// 18% symbols, control, unassigned or undecodable characters ...") when it reads like random
// or compressed bytes: more than 5% such characters (non-ASCII symbols such as "¤" or "©"
// count: real prose has few), most Latin letters outside ASCII (in real Latin-script text
// accented letters are a minority), lower-case letters followed by capitals in mid-word
// beyond what names like "McDonald" give, or, in a single-byte charset, a run of more than
// 32 non-ASCII characters without a space or an ASCII character (no word is that long).
// Looks at the first 16 KiB only; OK for fewer than kMinStatisticalTextBytes bytes (too few
// to judge, and uchardet often names the wrong charset for them). Random input of that size
// or more fails it (tests: NoRandomInputIsTakenForText).
absl::Status CheckDecodesAsText(std::string_view bytes, std::string_view charset);
inline constexpr size_t kMinStatisticalTextBytes = 64;

// Decodes `bytes` in `charset` (empty: DetectCharset) and appends the UTF-8 text to `out`,
// each character mapped to its original offset plus `base_offset`. A leading BOM is
// skipped; malformed sequences become U+FFFD. Returns the charset used.
// INVALID_ARGUMENT for an unknown charset name.
absl::StatusOr<std::string> DecodeToUtf8(std::string_view bytes, std::string_view charset,
                                         uint32_t base_offset, TextBuilder* out);

// Decodes all of `bytes` (charset empty: detect) into doc->text, untrimmed, with
// doc->segments mapping back to the bytes and doc->charset set. Falls back to detection
// when `charset` is unknown.
ConvertedDocument DecodeWithMap(std::string_view bytes, std::string_view charset);

// Convenience: decodes without an offset map. Unknown charsets fall back to detection.
std::string ToUtf8(std::string_view bytes, std::string_view charset);

}  // namespace cops

#endif  // COPS_CONVERT_CHARSET_H_
