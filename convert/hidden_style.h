#ifndef COPS_CONVERT_HIDDEN_STYLE_H_
#define COPS_CONVERT_HIDDEN_STYLE_H_

// What makes styled text invisible to a reader, in one place so that every format judges
// it alike (ConvertedDocument::hidden): HTML and ODT read CSS-like values ("#ffffff",
// "0.5pt"), DOCX and LaTeX map theirs onto the same thresholds, PDF uses kTinyFontPt.
// Near-white colours are not white here: only PDF, which looks at the rendered ink, sees
// them.
//
// Thread-safety: pure functions.

#include <optional>
#include <string_view>

namespace cops {

// Text at or below this font size (points) is hidden: a 1pt glyph is a dot.
inline constexpr double kTinyFontPt = 1.0;

// An absolute CSS / XSL-FO length in points: "12pt", "0.5px" (a unitless number counts as
// px, as browsers take it), "0.03cm", "1mm", "0.01in", "1pc"; anything after the unit
// ("!important") is ignored. nullopt for relative ("%", "em") or unreadable lengths.
// REQUIRES: `value` is lower case without spaces.
std::optional<double> LengthInPoints(std::string_view value);

// Whether a CSS / XSL-FO font size hides text: 0 in any unit, or an absolute length of at
// most kTinyFontPt. REQUIRES: as LengthInPoints.
bool IsTinyFontSize(std::string_view value);

// Whether a CSS / XSL-FO colour is white: "white", "#fff", "#ffffff", "rgb(255,255,255...",
// optionally followed by "!important". REQUIRES: `value` is lower case without spaces.
bool IsWhiteColor(std::string_view value);

}  // namespace cops

#endif  // COPS_CONVERT_HIDDEN_STYLE_H_
