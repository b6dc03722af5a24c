#ifndef COPS_CONVERT_STRING_VIEW_COMPAT_H_
#define COPS_CONVERT_STRING_VIEW_COMPAT_H_

// Debian's Abseil has its own absl::string_view, distinct from std::string_view: these
// bridge the two for absl::StrCat and friends.

#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace cops {

inline absl::string_view Absl(std::string_view s) { return {s.data(), s.size()}; }

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace cops

#endif  // COPS_CONVERT_STRING_VIEW_COMPAT_H_
