#include "storage/access_records.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace cops::access_records {
namespace {

using json = nlohmann::json;

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool FromHex(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

// Decoders parse without exceptions: a malformed value is DATA_LOSS naming the record.
absl::StatusOr<json> ParseJson(std::string_view value, std::string_view what) {
  json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(StrCat("access store: malformed ", what, " record"));
  }
  return j;
}

// The value of field `name`, or `fallback` when it is missing, of another type, or a number
// outside T's range (values were written by us: a mismatch means damage, on which get<>
// would throw, and a cast out of range is undefined behaviour).
template <typename T>
T Field(const json& j, const char* name, T fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else if constexpr (std::is_floating_point_v<T>) {
    return it->is_number() ? it->template get<T>() : fallback;
  } else {
    static_assert(std::is_integral_v<T>);
    if (it->is_number_unsigned()) {
      const auto v = it->template get<uint64_t>();
      return std::in_range<T>(v) ? static_cast<T>(v) : fallback;
    }
    if (it->is_number_integer()) {
      const auto v = it->template get<int64_t>();
      return std::in_range<T>(v) ? static_cast<T>(v) : fallback;
    }
    if (it->is_number_float()) {
      // [lowest, max + 1) of T, both exact as doubles (max itself is not, for 64 bits).
      const double v = it->template get<double>();
      const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
      const double lowest = std::is_signed_v<T> ? -end : 0.0;
      if (v >= lowest && v < end) return static_cast<T>(v);  // false for NaN too
    }
    return fallback;
  }
}

}  // namespace

std::string EncodePrincipal(const PrincipalRecord& r) {
  return json{{"name", r.name},
              {"role", r.role},
              {"collections", r.collections},
              {"created_us", r.created_unix_micros},
              {"rps", r.requests_per_second},
              {"burst", r.burst},
              {"max_documents", r.max_documents},
              {"max_bytes", r.max_bytes}}
      .dump();
}

std::string EncodeKey(const ApiKeyRecord& r) {
  return json{{"key_id", r.key_id},
              {"principal", r.principal},
              {"salt", ToHex(r.salt)},
              {"sha256", ToHex(r.hash)},
              {"created_us", r.created_unix_micros},
              {"revoked_us", r.revoked_unix_micros}}
      .dump();
}

std::string EncodeCollection(const CollectionRecord& r) {
  return json{{"name", r.name},
              {"show_titles_to_checkers", r.show_titles_to_checkers},
              {"keep_audit", r.keep_audit},
              {"template", r.template_source},
              {"created_us", r.created_unix_micros},
              {"retention_s", r.retention_seconds}}
      .dump();
}

std::string EncodeAudit(const AuditRecord& r) {
  return json{{"doc_id", r.doc_id},
              {"collection", r.collection},
              {"us", r.unix_micros},
              {"checker", r.checker},
              {"ratio", r.ratio},
              {"containment", r.containment},
              {"matched_chunks", r.matched_chunks},
              {"violation", r.violation},
              {"owner", r.owner},
              {"test_sha256", r.test_sha256}}
      .dump();
}

std::string EncodeUsage(const UsageRecord& r) {
  return json{{"documents", r.documents}, {"bytes", r.bytes}}.dump();
}

absl::StatusOr<PrincipalRecord> DecodePrincipal(std::string_view value) {
  COPS_ASSIGN_OR_RETURN(const json j, ParseJson(value, "principal"));
  PrincipalRecord r;
  r.name = Field<std::string>(j, "name", "");
  r.role = Field<uint8_t>(j, "role", 0);
  if (auto it = j.find("collections"); it != j.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (c.is_string()) r.collections.push_back(c.get<std::string>());
    }
  }
  r.created_unix_micros = Field<int64_t>(j, "created_us", 0);
  r.requests_per_second = Field<double>(j, "rps", 0);
  r.burst = Field<uint32_t>(j, "burst", 0);
  r.max_documents = Field<uint64_t>(j, "max_documents", 0);
  r.max_bytes = Field<uint64_t>(j, "max_bytes", 0);
  return r;
}

absl::StatusOr<ApiKeyRecord> DecodeKey(std::string_view value) {
  COPS_ASSIGN_OR_RETURN(const json j, ParseJson(value, "api key"));
  ApiKeyRecord r;
  r.key_id = Field<std::string>(j, "key_id", "");
  r.principal = Field<std::string>(j, "principal", "");
  if (!FromHex(Field<std::string>(j, "salt", ""), &r.salt) ||
      !FromHex(Field<std::string>(j, "sha256", ""), &r.hash)) {
    return absl::DataLossError(
        StrCat("access store: api key ", r.key_id, ": malformed salt or hash"));
  }
  r.created_unix_micros = Field<int64_t>(j, "created_us", 0);
  r.revoked_unix_micros = Field<int64_t>(j, "revoked_us", 0);
  return r;
}

absl::StatusOr<CollectionRecord> DecodeCollection(std::string_view value) {
  COPS_ASSIGN_OR_RETURN(const json j, ParseJson(value, "collection"));
  CollectionRecord r;
  r.name = Field<std::string>(j, "name", "");
  r.show_titles_to_checkers = Field<bool>(j, "show_titles_to_checkers", false);
  r.keep_audit = Field<bool>(j, "keep_audit", true);
  r.template_source = Field<bool>(j, "template", false);
  r.created_unix_micros = Field<int64_t>(j, "created_us", 0);
  r.retention_seconds = Field<int64_t>(j, "retention_s", 0);
  return r;
}

absl::StatusOr<AuditRecord> DecodeAudit(std::string_view value) {
  COPS_ASSIGN_OR_RETURN(const json j, ParseJson(value, "audit"));
  AuditRecord r;
  r.doc_id = Field<uint64_t>(j, "doc_id", 0);
  r.collection = Field<std::string>(j, "collection", "");
  r.unix_micros = Field<int64_t>(j, "us", 0);
  r.checker = Field<std::string>(j, "checker", "");
  r.ratio = Field<double>(j, "ratio", 0);
  r.containment = Field<double>(j, "containment", 0);
  r.matched_chunks = Field<uint32_t>(j, "matched_chunks", 0);
  r.violation = Field<bool>(j, "violation", false);
  r.owner = Field<std::string>(j, "owner", "");
  r.test_sha256 = Field<std::string>(j, "test_sha256", "");
  return r;
}

absl::StatusOr<UsageRecord> DecodeUsage(std::string_view value) {
  COPS_ASSIGN_OR_RETURN(const json j, ParseJson(value, "usage"));
  UsageRecord r;
  r.documents = Field<uint64_t>(j, "documents", 0);
  r.bytes = Field<uint64_t>(j, "bytes", 0);
  return r;
}

}  // namespace cops::access_records
