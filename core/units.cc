#include "core/units.h"

#include <unordered_set>

namespace cops {
namespace {

// Built-in lists, canonicalized once with the same rules as documents (skeletons may
// rewrite ASCII letters, so raw spellings would not match).
const std::unordered_set<std::string>& CanonicalSet(const char* const* words, size_t n) {
  auto* set = new std::unordered_set<std::string>();
  for (size_t i = 0; i < n; ++i) set->insert(CanonicalWord(words[i]));
  return *set;
}

constexpr const char* kStopWords[] = {
    "a",     "about", "above", "after", "again", "against", "all",   "am",    "an",
    "and",   "any",   "are",   "as",    "at",    "be",      "because", "been", "before",
    "being", "below", "between", "both", "but",  "by",      "can",   "could", "did",
    "do",    "does",  "doing", "down",  "during", "each",   "few",   "for",   "from",
    "further", "had", "has",   "have",  "having", "he",     "her",   "here",  "hers",
    "herself", "him", "himself", "his", "how",   "i",       "if",    "in",    "into",
    "is",    "it",    "its",   "itself", "just", "me",      "more",  "most",  "my",
    "myself", "no",   "nor",   "not",   "now",   "of",      "off",   "on",    "once",
    "only",  "or",    "other", "our",   "ours",  "ourselves", "out", "over",  "own",
    "same",  "she",   "should", "so",   "some",  "such",    "than",  "that",  "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to",  "too",   "under", "until",   "up",    "very",  "was",
    "we",    "were",  "what",  "when",  "where", "which",   "while", "who",   "whom",
    "why",   "will",  "with",  "would", "you",   "your",    "yours", "yourself",
    "yourselves"};

// Words that take a period without ending a sentence. Single characters are handled by
// the initials rule; "e.g." and "i.e." are two single-character words.
constexpr const char* kAbbreviations[] = {
    "mr",   "mrs",  "ms",   "dr",   "prof", "sr",   "jr",   "st",   "mt",   "rev",  "hon",
    "gen",  "col",  "capt", "lt",   "sgt",  "gov",  "sen",  "rep",  "pres", "vs",   "etc",
    "al",   "inc",  "ltd",  "co",   "corp", "no",   "nos",  "vol",  "vols", "fig",  "figs",
    "eq",   "eqs",  "ch",   "sec",  "pp",   "ed",   "eds",  "cf",   "viz",  "approx", "dept",
    "univ", "jan",  "feb",  "mar",  "apr",  "jun",  "jul",  "aug",  "sep",  "sept", "oct",
    "nov",  "dec",  "mon",  "tue",  "wed",  "thu",  "fri",  "sat",  "sun",  "ave",  "blvd",
    "rd",   "esp",  "est",  "ibid", "op",   "cit",  "ca",   "resp"};

const std::unordered_set<std::string>& StopWords() {
  static const auto& set = CanonicalSet(kStopWords, std::size(kStopWords));
  return set;
}
const std::unordered_set<std::string>& Abbreviations() {
  static const auto& set = CanonicalSet(kAbbreviations, std::size(kAbbreviations));
  return set;
}

bool Contains(const std::unordered_set<std::string>& set, std::string_view w) {
  // Debian's GCC 12 has no heterogeneous lookup for unordered_set; words are short.
  return set.count(std::string(w)) != 0;
}

bool EndsSentence(const CanonicalText& canon, size_t i) {
  const Token& t = canon.tokens[i];
  if (t.flags & (kTokenStrongEndAfter | kTokenParagraphAfter)) return true;
  if (!(t.flags & kTokenPeriodAfter)) return false;
  if (i + 1 == canon.tokens.size()) return true;
  if (t.flags & kTokenSingleChar) return false;  // initials, "U.S.", "e.g."
  const Token& next = canon.tokens[i + 1];
  if (!(next.flags & (kTokenUpper | kTokenNumber))) return false;
  return !Contains(Abbreviations(), canon.Word(t));
}

bool KeepWord(const CanonicalText& canon, const Token& t, const Enhancements& enh) {
  if (enh.drop_numbers && (t.flags & kTokenNumber)) return false;
  if (enh.min_word_chars > 0 && t.canon_end - t.canon_begin < enh.min_word_chars) {
    // Count code points, not bytes, of the canonical word.
    uint32_t chars = 0;
    for (char c : canon.Word(t)) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (chars < enh.min_word_chars) return false;
  }
  if (enh.drop_stop_words && Contains(StopWords(), canon.Word(t))) return false;
  return true;
}

}  // namespace

bool IsStopWord(std::string_view canonical_word) { return Contains(StopWords(), canonical_word); }

const std::vector<std::string>& CanonicalStopWords() {
  static const auto& list = *new std::vector<std::string>(StopWords().begin(), StopWords().end());
  return list;
}

void BuildUnits(const CanonicalText& canon, UnitKind kind, const Enhancements& enh,
                UnitStream* out) {
  out->storage.clear();
  out->units.clear();
  const bool filter_words =
      enh.drop_numbers || enh.min_word_chars > 0 || enh.drop_stop_words;

  if (kind == UnitKind::kWord) {
    out->units.reserve(canon.tokens.size());
    if (!filter_words) {
      // Canonical text already is the word stream: no copy.
      out->text = canon.text;
      for (const Token& t : canon.tokens) {
        out->units.push_back(Unit{t.canon_begin, t.canon_end, t.input_begin, t.input_end, 1});
      }
      return;
    }
    out->storage.reserve(canon.text.size());
    for (const Token& t : canon.tokens) {
      if (!KeepWord(canon, t, enh)) continue;
      if (!out->units.empty()) out->storage.push_back(' ');
      const uint32_t b = static_cast<uint32_t>(out->storage.size());
      out->storage.append(canon.Word(t));
      out->units.push_back(Unit{b, static_cast<uint32_t>(out->storage.size()), t.input_begin,
                                t.input_end, 1});
    }
    out->text = out->storage;
    return;
  }

  // Sentences or paragraphs.
  out->storage.reserve(canon.text.size());
  Unit cur;
  bool open = false;
  auto close = [&]() {
    if (!open) return;
    open = false;
    if (kind == UnitKind::kSentence && enh.min_sentence_words > 0 &&
        cur.words < enh.min_sentence_words) {
      // Drop the unit and its separator.
      size_t cut = cur.stream_begin > 0 ? cur.stream_begin - 1 : 0;
      out->storage.resize(cut);
      return;
    }
    cur.stream_end = static_cast<uint32_t>(out->storage.size());
    out->units.push_back(cur);
  };
  for (size_t i = 0; i < canon.tokens.size(); ++i) {
    const Token& t = canon.tokens[i];
    if (KeepWord(canon, t, enh)) {
      if (!open) {
        if (!out->storage.empty()) out->storage.push_back('\n');
        cur = Unit();
        cur.stream_begin = static_cast<uint32_t>(out->storage.size());
        cur.input_begin = t.input_begin;
        open = true;
      } else {
        out->storage.push_back(' ');
      }
      out->storage.append(canon.Word(t));
      cur.input_end = t.input_end;
      ++cur.words;
    }
    const bool end = kind == UnitKind::kSentence ? EndsSentence(canon, i)
                                                 : (t.flags & kTokenParagraphAfter) != 0;
    if (end) close();
  }
  close();
  out->text = out->storage;
}

}  // namespace cops
