#include "core/params.h"

#include <openssl/evp.h>

#include <charconv>
#include <cstring>
#include <string>

#include "core/status_macros.h"
#include "core/stem_pairs.h"
#include "core/strings.h"

namespace cops {
namespace {

// Encoding version of ChunkingParams::Encode(). on-disk: do not change meaning.
constexpr uint8_t kEncodingVersion = 1;
constexpr uint8_t kEncodingVersionVerify = 2;
constexpr uint8_t kEncodingVersionStemPairs = 3;

void PutU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) {
    if (in_.size() < 1) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    if (in_.size() < 4) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= uint32_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    *v = r;
    in_.remove_prefix(4);
    return true;
  }
  bool Bytes(uint32_t n, std::string* v) {
    if (in_.size() < n) return false;
    v->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

bool ValidUnit(uint8_t v) { return v >= 1 && v <= 3; }
bool ValidStrategy(uint8_t v) { return v >= 1 && v <= 4; }
bool ValidSelection(uint8_t v) { return v >= 1 && v <= 3; }

}  // namespace

absl::Status ChunkingParams::Validate() const {
  if (!ValidUnit(static_cast<uint8_t>(unit))) {
    return absl::InvalidArgumentError(
        StrCat("unit: unknown value ", static_cast<int>(unit)));
  }
  if (!ValidStrategy(static_cast<uint8_t>(strategy))) {
    return absl::InvalidArgumentError(
        StrCat("strategy: unknown value ", static_cast<int>(strategy)));
  }
  if (k < 1 || k > 64) {
    return absl::InvalidArgumentError(StrCat("k: ", k, " is outside [1, 64]"));
  }
  if (!ValidSelection(static_cast<uint8_t>(selection))) {
    return absl::InvalidArgumentError(
        StrCat("selection: unknown value ", static_cast<int>(selection)));
  }
  if (p < 1) return absl::InvalidArgumentError("p: must be >= 1");
  if (w < 1) return absl::InvalidArgumentError("w: must be >= 1");
  if (w > 1024) return absl::InvalidArgumentError(StrCat("w: ", w, " is above 1024"));
  if (normalization_version < kOldestNormalizationVersion ||
      normalization_version > kNormalizationVersion) {
    return absl::InvalidArgumentError(
        StrCat("normalization_version: ", normalization_version,
               " is not supported (this build implements ", kOldestNormalizationVersion,
               " to ", kNormalizationVersion, ")"));
  }
  if (verify_k != 0) {
    if (unit != UnitKind::kWord) {
      return absl::InvalidArgumentError("verify_k: verification needs word units (0 = off)");
    }
    if (verify_k < 2 || verify_k > 8) {
      return absl::InvalidArgumentError(StrCat("verify_k: ", verify_k, " is outside [2, 8]"));
    }
  }
  if (dense_chunks != 0 && verify_k == 0) {
    return absl::InvalidArgumentError("dense_chunks: needs verification (verify_k > 0)");
  }
  if (stem_pairs > 64) {
    return absl::InvalidArgumentError(StrCat("stem_pairs: ", stem_pairs, " is above 64"));
  }
  if (stem_pairs != 0 && verify_k == 0) {
    return absl::InvalidArgumentError("stem_pairs: needs verification (verify_k > 0)");
  }
  if (stem_pairs != 0 && stem_version != kStemPairsVersion) {
    return absl::InvalidArgumentError(
        StrCat("stem_version: ", stem_version, " is not supported (this build implements ",
               kStemPairsVersion, ")"));
  }
  if (stem_pairs == 0 && stem_version != 0) {
    return absl::InvalidArgumentError("stem_version: set without stem_pairs");
  }
  if (key_id.size() > 256) return absl::InvalidArgumentError("key_id: longer than 256 bytes");
  return absl::OkStatus();
}

// Layout (little-endian): u8 version=1, u8 unit, u8 strategy, u32 k, u8 selection, u32 p,
// u32 w, u8 drop_numbers, u32 min_word_chars, u32 min_sentence_words, u8 drop_stop_words,
// u32 normalization_version, u32 key_id length, key_id bytes. Version 2 appends u32
// verify_k and u32 dense_chunks; parameters without verification are written as version 1,
// so the encoding (and Fingerprint()) of every index created before verification existed
// is unchanged. Version 3 appends u32 stem_pairs and u32 stem_version to version 2; written
// only when stem_pairs != 0, for the same reason.
std::string ChunkingParams::Encode() const {
  std::string out;
  out.reserve(44 + key_id.size());
  PutU8(&out, stem_pairs != 0 ? kEncodingVersionStemPairs
              : verify_k == 0 ? kEncodingVersion
                              : kEncodingVersionVerify);
  PutU8(&out, static_cast<uint8_t>(unit));
  PutU8(&out, static_cast<uint8_t>(strategy));
  PutU32(&out, k);
  PutU8(&out, static_cast<uint8_t>(selection));
  PutU32(&out, p);
  PutU32(&out, w);
  PutU8(&out, enhancements.drop_numbers ? 1 : 0);
  PutU32(&out, enhancements.min_word_chars);
  PutU32(&out, enhancements.min_sentence_words);
  PutU8(&out, enhancements.drop_stop_words ? 1 : 0);
  PutU32(&out, normalization_version);
  PutU32(&out, static_cast<uint32_t>(key_id.size()));
  out.append(key_id);
  if (verify_k != 0 || stem_pairs != 0) {
    PutU32(&out, verify_k);
    PutU32(&out, dense_chunks);
  }
  if (stem_pairs != 0) {
    PutU32(&out, stem_pairs);
    PutU32(&out, stem_version);
  }
  return out;
}

absl::StatusOr<ChunkingParams> ChunkingParams::Decode(std::string_view encoded) {
  Reader r(encoded);
  uint8_t version = 0;
  if (!r.U8(&version)) return absl::InvalidArgumentError("chunking params: empty encoding");
  if (version != kEncodingVersion && version != kEncodingVersionVerify &&
      version != kEncodingVersionStemPairs) {
    return absl::InvalidArgumentError(
        StrCat("chunking params: unknown encoding version ", static_cast<int>(version)));
  }
  ChunkingParams p;
  uint8_t unit = 0, strategy = 0, selection = 0, drop_numbers = 0, stop = 0;
  uint32_t key_len = 0;
  bool ok = r.U8(&unit) && r.U8(&strategy) && r.U32(&p.k) && r.U8(&selection) &&
            r.U32(&p.p) && r.U32(&p.w) && r.U8(&drop_numbers) &&
            r.U32(&p.enhancements.min_word_chars) &&
            r.U32(&p.enhancements.min_sentence_words) && r.U8(&stop) &&
            r.U32(&p.normalization_version) && r.U32(&key_len) && r.Bytes(key_len, &p.key_id);
  p.verify_k = 0;
  p.dense_chunks = 0;
  if (ok && version >= kEncodingVersionVerify) {
    ok = r.U32(&p.verify_k) && p.verify_k != 0 && r.U32(&p.dense_chunks);
  }
  if (ok && version == kEncodingVersionStemPairs) {
    ok = r.U32(&p.stem_pairs) && p.stem_pairs != 0 && r.U32(&p.stem_version);
  }
  if (!ok) return absl::InvalidArgumentError("chunking params: truncated encoding");
  if (!r.done()) return absl::InvalidArgumentError("chunking params: trailing bytes");
  if (!ValidUnit(unit) || !ValidStrategy(strategy) || !ValidSelection(selection) ||
      drop_numbers > 1 || stop > 1) {
    return absl::InvalidArgumentError("chunking params: unknown enum value in encoding");
  }
  p.unit = static_cast<UnitKind>(unit);
  p.strategy = static_cast<ChunkStrategy>(strategy);
  p.selection = static_cast<SelectionKind>(selection);
  p.enhancements.drop_numbers = drop_numbers == 1;
  p.enhancements.drop_stop_words = stop == 1;
  return p;
}

uint64_t ChunkingParams::Fingerprint() const {
  // First 8 bytes (little-endian) of SHA-256 over the encoding: stable across builds.
  const std::string enc = Encode();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(enc.data(), enc.size(), md, &len, EVP_sha256(), nullptr);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{md[i]} << (8 * i);
  return v;
}

std::string ChunkingParams::Describe() const {
  std::string s = StrCat("unit=", UnitKindName(unit),
                               " strategy=", ChunkStrategyName(strategy), " k=", k,
                               " selection=", SelectionKindName(selection));
  if (selection == SelectionKind::kModP) StrAppend(&s, " p=", p);
  if (selection == SelectionKind::kWinnowing) StrAppend(&s, " w=", w);
  StrAppend(&s, " drop_numbers=", enhancements.drop_numbers ? 1 : 0,
                  " min_word_chars=", enhancements.min_word_chars,
                  " min_sentence_words=", enhancements.min_sentence_words,
                  " stop_words=", enhancements.drop_stop_words ? 1 : 0,
                  " norm=", normalization_version, " key=", key_id);
  if (verify_k != 0) StrAppend(&s, " verify_k=", verify_k);
  if (dense_chunks != 0) StrAppend(&s, " dense_chunks=", dense_chunks);
  if (stem_pairs != 0) StrAppend(&s, " stem_pairs=", stem_pairs, " stem_version=", stem_version);
  return s;
}

absl::StatusOr<ChunkingParams> ChunkingParams::ParseDescription(std::string_view description) {
  ChunkingParams p;
  p.verify_k = 0;
  p.dense_chunks = 0;
  while (!description.empty()) {
    const size_t space = description.find(' ');
    const std::string_view field = description.substr(0, space);
    description = space == std::string_view::npos ? "" : description.substr(space + 1);
    if (field.empty()) continue;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(
          StrCat("chunking description: '", field, "' is not key=value"));
    }
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    auto number = [&](uint32_t* out) -> absl::Status {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *out);
      if (ec != std::errc() || end != value.data() + value.size()) {
        return absl::InvalidArgumentError(
            StrCat("chunking description: ", key, "=", value, " is not a number"));
      }
      return absl::OkStatus();
    };
    auto flag = [&](bool* out) -> absl::Status {
      uint32_t v = 0;
      COPS_RETURN_IF_ERROR(number(&v));
      if (v > 1) {
        return absl::InvalidArgumentError(
            StrCat("chunking description: ", key, "=", value, " is not 0 or 1"));
      }
      *out = v == 1;
      return absl::OkStatus();
    };
    if (key == "unit") {
      COPS_ASSIGN_OR_RETURN(p.unit, ParseUnitKind(value));
    } else if (key == "strategy") {
      COPS_ASSIGN_OR_RETURN(p.strategy, ParseChunkStrategy(value));
    } else if (key == "selection") {
      COPS_ASSIGN_OR_RETURN(p.selection, ParseSelectionKind(value));
    } else if (key == "k") {
      COPS_RETURN_IF_ERROR(number(&p.k));
    } else if (key == "p") {
      COPS_RETURN_IF_ERROR(number(&p.p));
    } else if (key == "w") {
      COPS_RETURN_IF_ERROR(number(&p.w));
    } else if (key == "drop_numbers") {
      COPS_RETURN_IF_ERROR(flag(&p.enhancements.drop_numbers));
    } else if (key == "min_word_chars") {
      COPS_RETURN_IF_ERROR(number(&p.enhancements.min_word_chars));
    } else if (key == "min_sentence_words") {
      COPS_RETURN_IF_ERROR(number(&p.enhancements.min_sentence_words));
    } else if (key == "stop_words") {
      COPS_RETURN_IF_ERROR(flag(&p.enhancements.drop_stop_words));
    } else if (key == "norm") {
      COPS_RETURN_IF_ERROR(number(&p.normalization_version));
    } else if (key == "key") {
      p.key_id = std::string(value);
    } else if (key == "verify_k") {
      COPS_RETURN_IF_ERROR(number(&p.verify_k));
    } else if (key == "dense_chunks") {
      COPS_RETURN_IF_ERROR(number(&p.dense_chunks));
    } else if (key == "stem_pairs") {
      COPS_RETURN_IF_ERROR(number(&p.stem_pairs));
    } else if (key == "stem_version") {
      COPS_RETURN_IF_ERROR(number(&p.stem_version));
    } else {
      return absl::InvalidArgumentError(StrCat("chunking description: unknown field '", key, "'"));
    }
  }
  COPS_RETURN_IF_ERROR(p.Validate());
  return p;
}

std::string ChunkingParams::DiffWith(const ChunkingParams& o) const {
  std::string s;
  auto add = [&s](std::string_view field, const auto& a, const auto& b) {
    if (a == b) return;
    if (!s.empty()) s.append("; ");
    StrAppend(&s, field, ": ", a, " vs ", b);
  };
  add("unit", UnitKindName(unit), UnitKindName(o.unit));
  add("strategy", ChunkStrategyName(strategy), ChunkStrategyName(o.strategy));
  add("k", k, o.k);
  add("selection", SelectionKindName(selection), SelectionKindName(o.selection));
  add("p", p, o.p);
  add("w", w, o.w);
  add("drop_numbers", int{enhancements.drop_numbers}, int{o.enhancements.drop_numbers});
  add("min_word_chars", enhancements.min_word_chars, o.enhancements.min_word_chars);
  add("min_sentence_words", enhancements.min_sentence_words,
      o.enhancements.min_sentence_words);
  add("drop_stop_words", int{enhancements.drop_stop_words},
      int{o.enhancements.drop_stop_words});
  add("normalization_version", normalization_version, o.normalization_version);
  add("key_id", key_id, o.key_id);
  add("verify_k", verify_k, o.verify_k);
  add("dense_chunks", dense_chunks, o.dense_chunks);
  add("stem_pairs", stem_pairs, o.stem_pairs);
  add("stem_version", stem_version, o.stem_version);
  return s;
}

std::string_view UnitKindName(UnitKind u) {
  switch (u) {
    case UnitKind::kWord: return "word";
    case UnitKind::kSentence: return "sentence";
    case UnitKind::kParagraph: return "paragraph";
  }
  return "unknown";
}

std::string_view ChunkStrategyName(ChunkStrategy s) {
  switch (s) {
    case ChunkStrategy::kOneUnit: return "one_unit";
    case ChunkStrategy::kNonOverlapping: return "non_overlapping";
    case ChunkStrategy::kOverlapping: return "overlapping";
    case ChunkStrategy::kHashedBreakpoints: return "hashed_breakpoints";
  }
  return "unknown";
}

std::string_view SelectionKindName(SelectionKind s) {
  switch (s) {
    case SelectionKind::kAll: return "all";
    case SelectionKind::kModP: return "mod_p";
    case SelectionKind::kWinnowing: return "winnowing";
  }
  return "unknown";
}

absl::StatusOr<UnitKind> ParseUnitKind(std::string_view name) {
  for (UnitKind u : {UnitKind::kWord, UnitKind::kSentence, UnitKind::kParagraph}) {
    if (name == UnitKindName(u)) return u;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown unit \"", name, "\" (want word, sentence or paragraph)"));
}

absl::StatusOr<ChunkStrategy> ParseChunkStrategy(std::string_view name) {
  for (ChunkStrategy s : {ChunkStrategy::kOneUnit, ChunkStrategy::kNonOverlapping,
                          ChunkStrategy::kOverlapping, ChunkStrategy::kHashedBreakpoints}) {
    if (name == ChunkStrategyName(s)) return s;
  }
  // The paper's letters are accepted too.
  if (name == "A") return ChunkStrategy::kOneUnit;
  if (name == "B") return ChunkStrategy::kNonOverlapping;
  if (name == "C") return ChunkStrategy::kOverlapping;
  if (name == "D") return ChunkStrategy::kHashedBreakpoints;
  return absl::InvalidArgumentError(StrCat(
      "unknown chunk strategy \"", name,
      "\" (want one_unit, non_overlapping, overlapping or hashed_breakpoints)"));
}

absl::StatusOr<SelectionKind> ParseSelectionKind(std::string_view name) {
  for (SelectionKind s : {SelectionKind::kAll, SelectionKind::kModP, SelectionKind::kWinnowing}) {
    if (name == SelectionKindName(s)) return s;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown selection \"", name, "\" (want all, mod_p or winnowing)"));
}

}  // namespace cops
