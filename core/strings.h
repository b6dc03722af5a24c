#ifndef COPS_CORE_STRINGS_H_
#define COPS_CORE_STRINGS_H_

// String helpers over Debian's Abseil (20220623), whose absl::string_view is its own type,
// distinct from std::string_view, so absl::StrCat does not take a std::string_view.
// cops::StrCat / StrAppend are absl::StrCat / StrAppend that also take std::string_view
// pieces: the one way COPS concatenates text (numbers are formatted as absl::StrCat does).
//
// Thread-safety: pure functions.

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cops {
namespace strings_internal {

template <typename T>
decltype(auto) Piece(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(v.data(), v.size());
  } else {
    return (v);  // const T&
  }
}

}  // namespace strings_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  return absl::StrCat(strings_internal::Piece(args)...);
}

template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  absl::StrAppend(out, strings_internal::Piece(args)...);
}

// `s` with A-Z mapped to a-z; other bytes unchanged.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace cops

#endif  // COPS_CORE_STRINGS_H_
