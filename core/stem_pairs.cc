#include "core/stem_pairs.h"

namespace cops {
namespace {

bool EndsWith(std::string_view w, std::string_view suffix) {
  return w.size() >= suffix.size() && w.substr(w.size() - suffix.size()) == suffix;
}

bool HasVowel(std::string_view w) { return w.find_first_of("aeiouy") != std::string_view::npos; }

// A constant array, not a braced list of literals: the list made a string_view (a strlen)
// of each suffix on every call, a measurable part of a check's stem pairs (core_bench
// BM_FingerprintCheck).
constexpr std::string_view kSuffixes[] = {"ingly", "edly", "ing", "ed", "ly"};

}  // namespace

void LightStem(std::string_view canonical_word, std::string* out) {
  std::string& w = *out;
  w.assign(canonical_word);
  if (w.size() <= 3) return;
  // Tests of the last letters first: most words end in none of the suffixes, and the
  // comparisons of every suffix were half of a check's stemming (core_bench BM_FingerprintCheck).
  if (w.back() == 's') {
    if (EndsWith(w, "sses")) {
      w.resize(w.size() - 2);
    } else if (EndsWith(w, "ies")) {
      w.resize(w.size() - 3);
      w += 'y';
    } else if (!EndsWith(w, "ss") && !EndsWith(w, "us") && !EndsWith(w, "is")) {
      w.pop_back();
    }
  }
  // Every suffix ends in one of these letters.
  if (w.back() == 'y' || w.back() == 'g' || w.back() == 'd') {
    for (std::string_view suffix : kSuffixes) {
      if (EndsWith(w, suffix) && w.size() >= suffix.size() + 3 &&
          HasVowel(std::string_view(w).substr(0, w.size() - suffix.size()))) {
        w.resize(w.size() - suffix.size());
        // "stopped" -> "stopp" -> "stop"; "fall" and "miss" keep their pair.
        const size_t k = w.size();
        if (k >= 2 && w[k - 1] == w[k - 2] &&
            std::string_view("lsz").find(w[k - 1]) == std::string_view::npos) {
          w.pop_back();
        }
        break;
      }
    }
  }
  if (w.size() > 3 && w.back() == 'e') w.pop_back();    // "move", "moved", "moving" -> "mov"
  if (w.size() > 3 && w.back() == 'y') w.back() = 'i';  // "study", "studies" -> "studi"
}

}  // namespace cops
