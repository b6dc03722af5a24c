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
// to windows-1252 (its superset in practice); undecidable input is windows-1252.
std::string DetectCharset(std::string_view bytes);

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
