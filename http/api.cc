#include "http/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/batch_register.h"
#include "client/check_report.h"
#include "client/client.h"
#include "client/compare.h"
#include "client/document_json.h"
#include "client/html_report.h"
#include "convert/charset.h"
#include "convert/document_format.h"
#include "core/hash_key.h"
#include "core/receipt.h"
#include "core/status_macros.h"
#include "core/time_format.h"
#include "grpcpp/grpcpp.h"
#include "http/openapi.h"
#include "http/page.h"
#include "http/transport.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kJson[] = "application/json";

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// How deep a request's JSON body may nest. No field nests (the deepest is a list of strings):
// the limit is there because copying, comparing and printing a json value recurse, and half a
// million nested arrays (1 MB) exhausted a thread's stack.
constexpr int kMaxJsonDepth = 32;

// A request's JSON body: an object, or INVALID_ARGUMENT saying why not. The parser itself
// does not recurse; what nests deeper than kMaxJsonDepth is dropped as it is read (the
// callback), so no deep value is ever built.
absl::StatusOr<json> ParseJsonObject(const std::string& body) {
  bool too_deep = false;
  const json::parser_callback_t depth_limit = [&too_deep](int depth, json::parse_event_t event,
                                                          json&) {
    if (depth <= kMaxJsonDepth) return true;
    too_deep = true;
    // Keeping a key or a value of a container that is being dropped makes no difference.
    return event != json::parse_event_t::object_start && event != json::parse_event_t::array_start;
  };
  json j = json::parse(body, depth_limit, /*allow_exceptions=*/false);
  if (too_deep) {
    return absl::InvalidArgumentError("malformed JSON body: nested deeper than " +
                                      std::to_string(kMaxJsonDepth) + " levels");
  }
  if (j.is_discarded()) return absl::InvalidArgumentError("malformed JSON body: not a JSON object");
  if (!j.is_object()) {
    return absl::InvalidArgumentError("malformed JSON body: expected an object, got " +
                                      std::string(j.type_name()));
  }
  return j;
}

// ---------------------------------------------------------------- content types

// The media type of a Content-Type value, lower case, without parameters.
std::string MediaTypeOf(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  std::string out(t);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The raw document content types the API takes are those of the format table
// (convert/document_format.h); the values are the proto's.
std::optional<v1::DocumentFormat> FormatOfMediaType(std::string_view media_type) {
  const std::optional<DocumentFormat> format = DocumentFormatOfMimeType(media_type);
  if (!format.has_value()) return std::nullopt;
  return static_cast<v1::DocumentFormat>(*format);
}

// How a POST body is to be read: a document as is, multipart form data, or a JSON object.
enum class BodyKind { kRaw, kMultipart, kJson };

absl::StatusOr<BodyKind> BodyKindOf(const std::string& content_type) {
  const std::string media = MediaTypeOf(content_type);
  if (media == "multipart/form-data") return BodyKind::kMultipart;
  if (media == kJson) return BodyKind::kJson;
  if (FormatOfMediaType(media).has_value()) return BodyKind::kRaw;
  const std::string accepted = "multipart/form-data, application/json, " + DocumentMimeTypes();
  return absl::InvalidArgumentError(
      (media.empty() ? std::string("no Content-Type") : "unsupported Content-Type '" + media + "'") +
      ": send one of " + accepted);
}

// ---------------------------------------------------------------- framing

// INVALID_ARGUMENT for a request whose body length is ambiguous or malformed (RFC 9112,
// 6.3): several Content-Length values that differ, one that is not a decimal number, or a
// Content-Length beside Transfer-Encoding. A proxy in front that read the other length
// would see another request in the rest of the body (request smuggling).
absl::Status FramingRefusal(const httplib::Request& req) {
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (lengths == 0) return absl::OkStatus();
  if (req.has_header("Transfer-Encoding")) {
    return absl::InvalidArgumentError("a request with both Content-Length and Transfer-Encoding");
  }
  const std::string first = req.get_header_value("Content-Length");
  for (size_t i = 0; i < lengths; ++i) {
    const std::string value = req.get_header_value("Content-Length", i);
    if (value != first) {
      return absl::InvalidArgumentError(
          absl::StrCat("Content-Length given twice, as ", first, " and ", value));
    }
  }
  if (first.empty() ||
      !std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return absl::InvalidArgumentError("Content-Length '" + first.substr(0, 40) +
                                      "' is not a number of bytes");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- cross-site requests

// PERMISSION_DENIED for a browser's request from a page of another site that would change
// something (cross-site request forgery): a form or a plain-text POST needs no CORS
// preflight, and the browser adds the credentials it holds itself (a client certificate, or
// none against a copsd without authentication). Browsers name the request's site in
// Sec-Fetch-Site; older ones send Origin, compared with Host. Clients that are not browsers
// send neither and pass, as do GET and HEAD (the browser keeps the answer from the other
// site). The rule of Go's net/http CrossOriginProtection.
absl::Status CrossOriginRefusal(const httplib::Request& req) {
  if (req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS") {
    return absl::OkStatus();
  }
  const std::string site = req.get_header_value("Sec-Fetch-Site");
  if (!site.empty()) {
    if (site == "same-origin" || site == "none") return absl::OkStatus();
    return absl::PermissionDeniedError("cross-origin request refused: a page of another site (" +
                                       site + ") may not " + req.method + " here");
  }
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return absl::OkStatus();
  const size_t scheme_end = origin.find("://");
  const std::string host = absl::AsciiStrToLower(req.get_header_value("Host"));
  if (scheme_end != std::string::npos && !host.empty() &&
      absl::AsciiStrToLower(origin.substr(scheme_end + 3)) == host) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError("cross-origin request refused: a page of " + origin +
                                     " may not " + req.method + " here");
}

// ---------------------------------------------------------------- request fields

// A request's named values: query parameters and multipart text parts (strings), or the
// members of a JSON body (typed). Only names in the route's allow-list are accepted, so
// a misspelt option is an error rather than silently ignored.
class Fields {
 public:
  absl::Status Add(const std::string& name, json value, const std::set<std::string>& allowed) {
    if (!allowed.contains(name)) {
      std::string names;
      for (const std::string& n : allowed) names += (names.empty() ? "" : ", ") + n;
      return absl::InvalidArgumentError("unknown field '" + name + "' (this route takes: " +
                                        names + ")");
    }
    // Query parameters and form fields are bytes; every value ends up in a protobuf string
    // (UTF-8 by contract) and in JSON. A JSON body's parser has checked its own already.
    if (value.is_string() && !IsValidUtf8(value.get_ref<const std::string&>())) {
      return absl::InvalidArgumentError("field '" + name + "': not valid UTF-8");
    }
    if (values_.contains(name)) {
      if (!values_[name].is_array()) values_[name] = json::array({values_[name]});
      values_[name].push_back(std::move(value));
    } else {
      values_[name] = std::move(value);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<std::string>> String(const std::string& name) const {
    const json* v = Find(name);
    if (v == nullptr) return std::optional<std::string>();
    if (!v->is_string()) return Wrong(name, "a string", *v);
    return std::optional<std::string>(v->get<std::string>());
  }
  absl::StatusOr<std::vector<std::string>> Strings(const std::string& name) const {
    std::vector<std::string> out;
    const json* v = Find(name);
    if (v == nullptr) return out;
    const json list = v->is_array() ? *v : json::array({*v});
    for (const json& item : list) {
      if (!item.is_string()) return Wrong(name, "a string or an array of strings", *v);
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  absl::StatusOr<std::optional<double>> Number(const std::string& name) const {
    const json* v = Find(name);
    if (v == nullptr) return std::optional<double>();
    if (v->is_number()) return std::optional<double>(v->get<double>());
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return std::optional<double>(d);
    }
    return Wrong(name, "a number", *v);
  }
  absl::StatusOr<std::optional<uint64_t>> Unsigned(const std::string& name) const {
    const json* v = Find(name);
    if (v == nullptr) return std::optional<uint64_t>();
    if (v->is_number_unsigned()) return std::optional<uint64_t>(v->get<uint64_t>());
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      uint64_t n = 0;
      const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (end == s.data() + s.size() && error == std::errc()) return std::optional<uint64_t>(n);
      if (error == std::errc::result_out_of_range) {
        return absl::InvalidArgumentError("field '" + name + "': " + s +
                                          " is too large (at most 18446744073709551615)");
      }
    }
    return Wrong(name, "a non-negative integer", *v);
  }
  absl::StatusOr<std::optional<uint32_t>> Unsigned32(const std::string& name) const {
    COPS_ASSIGN_OR_RETURN(std::optional<uint64_t> v, Unsigned(name));
    if (v.has_value() && *v > UINT32_MAX) {
      return absl::InvalidArgumentError("field '" + name + "': " + std::to_string(*v) +
                                        " is too large (at most 4294967295)");
    }
    return v.has_value() ? std::optional<uint32_t>(static_cast<uint32_t>(*v)) : std::nullopt;
  }
  absl::StatusOr<std::optional<bool>> Bool(const std::string& name) const {
    const json* v = Find(name);
    if (v == nullptr) return std::optional<bool>();
    if (v->is_boolean()) return std::optional<bool>(v->get<bool>());
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s == "true" || s == "1") return std::optional<bool>(true);
      if (s == "false" || s == "0") return std::optional<bool>(false);
    }
    return Wrong(name, "true or false", *v);
  }

  // A digest of the values, for Idempotency-Key fingerprints.
  std::string Canonical() const { return values_.dump(); }

 private:
  const json* Find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() || it->is_null() ? nullptr : &*it;
  }
  static absl::Status Wrong(const std::string& name, const std::string& expected,
                            const json& got) {
    std::string shown = Dump(got);
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    return absl::InvalidArgumentError("field '" + name + "': expected " + expected + ", got " +
                                      shown);
  }

  json values_ = json::object();
};

// A document sent in a request: its bytes, name (file name or title) and format.
struct Upload {
  std::string name;
  std::string content;
  v1::DocumentFormat format = v1::DOCUMENT_FORMAT_AUTO;
};

struct ParsedBody {
  std::vector<Upload> files;
  Fields fields;
  std::string fingerprint;  // of everything the request asks, for Idempotency-Key
};

// The base64 of a JSON body's "content_base64" (RFC 4648, padding optional).
absl::StatusOr<std::string> DecodeBase64(const std::string& in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) {
      return absl::InvalidArgumentError("field 'content_base64': not base64");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// The files and fields of a POST body (see docs/api.md): a raw document with its
// Content-Type, multipart form data (parts named "file" are documents, the others fields),
// or a JSON object (fields, the document in "content" or "content_base64"); query parameters
// are fields in each case. `max_files` > 1 lets a request carry several documents.
absl::StatusOr<ParsedBody> ParseBody(const httplib::Request& req,
                                     const std::set<std::string>& allowed, size_t max_files) {
  ParsedBody body;
  for (const auto& [name, value] : req.params) {
    COPS_RETURN_IF_ERROR(body.fields.Add(name, value, allowed));
  }
  COPS_ASSIGN_OR_RETURN(const BodyKind kind, BodyKindOf(req.get_header_value("Content-Type")));
  std::optional<std::string> content;
  switch (kind) {
    case BodyKind::kRaw: {
      Upload u;
      u.content = req.body;
      u.format = *FormatOfMediaType(MediaTypeOf(req.get_header_value("Content-Type")));
      body.files.push_back(std::move(u));
      break;
    }
    case BodyKind::kMultipart:
      for (const auto& [name, part] : req.files) {
        if (name == "file") {
          Upload u;
          // The title unless one is given: a name that is not UTF-8 (curl sends a Latin-1
          // file name as it is) shows its bytes as U+FFFD, as `cops register` does.
          u.name = IsValidUtf8(part.filename) ? part.filename : ToUtf8(part.filename, "UTF-8");
          u.content = part.content;
          u.format = FormatOfMediaType(MediaTypeOf(part.content_type))
                         .value_or(v1::DOCUMENT_FORMAT_AUTO);
          body.files.push_back(std::move(u));
        } else {
          COPS_RETURN_IF_ERROR(body.fields.Add(name, part.content, allowed));
        }
      }
      break;
    case BodyKind::kJson: {
      COPS_ASSIGN_OR_RETURN(const json j, ParseJsonObject(req.body));
      for (const auto& [name, value] : j.items()) {
        COPS_RETURN_IF_ERROR(body.fields.Add(name, value, allowed));
      }
      COPS_ASSIGN_OR_RETURN(std::optional<std::string> text, body.fields.String("content"));
      COPS_ASSIGN_OR_RETURN(std::optional<std::string> b64, body.fields.String("content_base64"));
      if (text.has_value() == b64.has_value()) {
        return absl::InvalidArgumentError(
            "field 'content': a JSON body carries the document in exactly one of 'content' "
            "(text) or 'content_base64'");
      }
      Upload u;
      if (text.has_value()) {
        u.content = *std::move(text);
        u.format = v1::DOCUMENT_FORMAT_TEXT;
      } else {
        COPS_ASSIGN_OR_RETURN(u.content, DecodeBase64(*b64));
      }
      body.files.push_back(std::move(u));
      break;
    }
  }
  if (body.files.empty()) {
    return absl::InvalidArgumentError("field 'file': the request carries no document");
  }
  if (body.files.size() > max_files) {
    return absl::InvalidArgumentError("field 'file': this route takes one document, got " +
                                      std::to_string(body.files.size()));
  }
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> format, body.fields.String("format"));
  if (format.has_value()) {
    absl::StatusOr<v1::DocumentFormat> parsed = ParseFormatName(*format);
    if (!parsed.ok()) return absl::InvalidArgumentError("field 'format': " + std::string(parsed.status().message()));
    for (Upload& u : body.files) u.format = *parsed;
  }
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> title, body.fields.String("title"));
  for (size_t i = 0; i < body.files.size(); ++i) {
    Upload& u = body.files[i];
    if (u.name.empty()) u.name = title.value_or("document-" + std::to_string(i + 1));
  }
  std::string fingerprint = req.path + "\n" + body.fields.Canonical();
  for (const Upload& u : body.files) {
    fingerprint += "\n" + u.name + "\n" + std::to_string(u.format) + "\n" + Sha256Hex(u.content);
  }
  body.fingerprint = Sha256Hex(fingerprint);
  return body;
}

const std::set<std::string> kDocumentFields = {"title",          "author",      "collection",
                                               "format",         "external_id", "content",
                                               "content_base64", "receipt"};
const std::set<std::string> kCheckFields = {"collection",
                                            "format",
                                            "function",
                                            "threshold",
                                            "min_count",
                                            "max_results",
                                            "want_spans",
                                            "max_doc_frequency",
                                            "min_passage_units",
                                            "exclude_quotes",
                                            "exclude_references",
                                            "min_match_units",
                                            "min_violation_units",
                                            "heavy_revisions",
                                            "sample_size",
                                            "sample_seed",
                                            "min_log_sequence",
                                            "title",
                                            "content",
                                            "content_base64"};
const std::set<std::string> kJobFields = [] {
  std::set<std::string> fields = kCheckFields;
  fields.insert("callback_url");
  return fields;
}();

absl::StatusOr<v1::Document> DocumentOf(const Upload& u, const Fields& f) {
  v1::Document d;
  d.set_content(u.content);
  d.set_format(u.format);
  v1::DocumentMetadata* m = d.mutable_metadata();
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> title, f.String("title"));
  m->set_title(title.value_or(u.name));
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> author, f.String("author"));
  m->set_author(author.value_or(""));
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> collection, f.String("collection"));
  m->set_collection(collection.value_or(""));
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> external_id, f.String("external_id"));
  m->set_external_id(external_id.value_or(""));
  return d;
}

absl::StatusOr<v1::CheckDocumentRequest> CheckRequestOf(const Upload& u, const Fields& f) {
  v1::CheckDocumentRequest r;
  r.set_content(u.content);
  r.set_format(u.format);
  COPS_ASSIGN_OR_RETURN(std::vector<std::string> collections, f.Strings("collection"));
  for (std::string& c : collections) r.add_collections(std::move(c));
  v1::CheckOptions* o = r.mutable_options();
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> function, f.String("function"));
  if (function.has_value()) {
    absl::StatusOr<v1::DecisionFunction> parsed = ParseFunctionName(*function);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError("field 'function': " + std::string(parsed.status().message()));
    }
    o->set_function(*parsed);
  }
  COPS_ASSIGN_OR_RETURN(std::optional<double> threshold, f.Number("threshold"));
  if (threshold.has_value()) o->set_threshold(*threshold);
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> min_count, f.Unsigned32("min_count"));
  if (min_count.has_value()) o->set_min_count(*min_count);
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> max_results, f.Unsigned32("max_results"));
  if (max_results.has_value()) o->set_max_results(*max_results);
  COPS_ASSIGN_OR_RETURN(std::optional<bool> want_spans, f.Bool("want_spans"));
  if (want_spans.has_value()) o->set_want_spans(*want_spans);
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> max_df, f.Unsigned32("max_doc_frequency"));
  o->set_max_doc_frequency(max_df.value_or(0));
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> passage, f.Unsigned32("min_passage_units"));
  if (passage.has_value()) o->set_min_passage_units(*passage);
  COPS_ASSIGN_OR_RETURN(std::optional<bool> quotes, f.Bool("exclude_quotes"));
  o->set_exclude_quotes(quotes.value_or(false));
  COPS_ASSIGN_OR_RETURN(std::optional<bool> references, f.Bool("exclude_references"));
  o->set_exclude_references(references.value_or(false));
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> min_match, f.Unsigned32("min_match_units"));
  o->set_min_match_units(min_match.value_or(0));
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> min_violation, f.Unsigned32("min_violation_units"));
  if (min_violation.has_value()) o->set_min_violation_units(*min_violation);
  COPS_ASSIGN_OR_RETURN(std::optional<bool> heavy_revisions, f.Bool("heavy_revisions"));
  if (heavy_revisions.has_value()) o->set_heavy_revisions(*heavy_revisions);
  COPS_ASSIGN_OR_RETURN(std::optional<uint32_t> sample_size, f.Unsigned32("sample_size"));
  o->set_sample_size(sample_size.value_or(0));
  COPS_ASSIGN_OR_RETURN(std::optional<uint64_t> sample_seed, f.Unsigned("sample_seed"));
  o->set_sample_seed(sample_seed.value_or(0));
  // Read your writes behind a router: the answer reflects the registration log up to this
  // event (a registration's doc_id, an unregistration's Cops-Log-Sequence).
  COPS_ASSIGN_OR_RETURN(std::optional<uint64_t> min_log_sequence, f.Unsigned("min_log_sequence"));
  if (min_log_sequence.has_value()) r.set_min_log_sequence(*min_log_sequence);
  return r;
}

// The `cops --json register` object of a registration, with its signed receipt (the
// receipt file's JSON, docs/receipts.md) under "receipt" when the service gave one.
std::string RegisterJson(const std::string& name, const v1::RegisterDocumentReply& reply) {
  json j = json::parse(RegisterJsonLine(name, reply));
  if (reply.has_receipt()) {
    const SignedReceipt receipt{reply.receipt().payload(), reply.receipt().signature(),
                                reply.receipt().key_id()};
    j["receipt"] = json::parse(EncodeReceiptFile(receipt), nullptr, false);
  }
  return Dump(j);
}

// ---------------------------------------------------------------- credentials

// The API key of `Authorization: Bearer <key>` ("" without the header). UNAUTHENTICATED for
// another scheme or a key that cannot be one (it would not survive as call metadata).
absl::StatusOr<std::string> ApiKeyOf(const httplib::Request& req) {
  if (!req.has_header("Authorization")) return std::string();
  const std::string value = req.get_header_value("Authorization");
  std::string scheme = value.substr(0, 7);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") {
    return absl::UnauthenticatedError("expected 'Authorization: Bearer <API key>'");
  }
  std::string key = value.substr(7);
  while (!key.empty() && key.front() == ' ') key.erase(0, 1);
  while (!key.empty() && key.back() == ' ') key.pop_back();
  if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) {
        return c > ' ' && c < 127;
      })) {
    return absl::UnauthenticatedError("malformed API key (expected cops_<id>_<secret>)");
  }
  return key;
}

// Who owns a job or an Idempotency-Key: a digest of the caller's key (never the key).
// Without a key, the caller is its verified client certificate (mutual TLS) or nobody.
std::string OwnerTag(const std::string& api_key) {
  if (!api_key.empty()) return Sha256Hex("cops-http-owner\n" + api_key);
  std::string names;
  for (const std::string& name : BoundedHttpServer::PeerCertificateNames()) names += "\n" + name;
  return Sha256Hex("cops-http-certificate" + names);
}

// ---------------------------------------------------------------- replies

void Reply(httplib::Response& res, const StoredReply& r) {
  res.status = r.status;
  if (!r.location.empty()) res.set_header("Location", r.location);
  res.set_content(r.body, r.content_type.c_str());
}

StoredReply ErrorReply(const absl::Status& status) {
  return StoredReply{HttpStatusOf(status.code()), kJson, ErrorJson(status), ""};
}

void SendError(httplib::Response& res, const absl::Status& status) {
  Reply(res, ErrorReply(status));
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    res.set_header("WWW-Authenticate", "Bearer");
  }
  if (res.status == 429 || res.status == 503) res.set_header("Retry-After", "1");
}

bool WantsHtml(const httplib::Request& req) {
  return req.get_header_value("Accept").find("text/html") != std::string::npos;
}

// The routes that take a document body.
bool TakesDocument(const httplib::Request& req) {
  return req.method == "POST" &&
         (req.path == "/v1/documents" || req.path == "/v1/checks" || req.path == "/v1/jobs");
}

absl::StatusOr<uint64_t> DocIdOf(const std::string& text) {
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return absl::InvalidArgumentError("document id '" + text.substr(0, 40) +
                                      "' is not a number");
  }
  return std::stoull(text);
}

// HOST:PORT -> host and port ("[::1]:80" too).
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError("--http-listen '" + listen + "': expected HOST:PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port_text) > 65535) {
    return absl::InvalidArgumentError("--http-listen '" + listen + "': bad port");
  }
  return std::make_pair(host, std::stoi(port_text));
}

// The JSON of a job, as GET /v1/jobs/{id} answers it and a webhook delivers it.
std::string JobJson(const JobView& job) {
  json j = {{"id", job.id},
            {"state", JobStateName(job.state)},
            {"created_unix_micros", job.created_unix_micros}};
  if (job.finished_unix_micros != 0) j["finished_unix_micros"] = job.finished_unix_micros;
  if (job.state == JobState::kDone) j["result"] = json::parse(job.result, nullptr, false);
  if (job.state == JobState::kFailed) {
    j["error"] = {{"code", absl::StatusCodeToString(job.error.code())},
                  {"message", std::string(job.error.message())}};
  }
  return Dump(j);
}

json DeliveryJson(const WebhookDelivery& d) {
  json attempts = json::array();
  for (const WebhookAttempt& a : d.attempts) {
    json attempt = {{"unix_micros", a.unix_micros}};
    if (a.http_status != 0) attempt["http_status"] = a.http_status;
    if (!a.error.empty()) attempt["error"] = a.error;
    attempts.push_back(std::move(attempt));
  }
  json j = {{"number", d.number}, {"url", d.url}, {"state", d.state}, {"attempts", attempts}};
  if (d.next_attempt_unix_micros != 0) j["next_attempt_unix_micros"] = d.next_attempt_unix_micros;
  return j;
}

// The client's address as gRPC writes a peer ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000").
std::string PeerOf(const httplib::Request& req) {
  const bool v6 = req.remote_addr.find(':') != std::string::npos;
  return (v6 ? "ipv6:[" + req.remote_addr + "]:" : "ipv4:" + req.remote_addr + ":") +
         std::to_string(req.remote_port);
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

std::string ErrorJson(const absl::Status& status) {
  return Dump({{"code", absl::StatusCodeToString(status.code())},
               {"message", std::string(status.message())}});
}

struct HttpApi::Impl {
  Impl(const HttpApiOptions& o, std::shared_ptr<grpc::Channel> c)
      : options(o),
        channel(std::move(c)),
        server(HttpTransportOptions{o.threads, o.max_queued_connections, o.request_timeout,
                                    o.idle_timeout, o.request_timeout, 100,
                                    HttpTlsOptions{o.tls_cert, o.tls_key, o.tls_client_ca}}),
        webhooks(o.webhooks),
        jobs(o.jobs),
        idempotent(o.idempotency_keep, nullptr, o.idempotency_max_bytes) {}

  // The caller's principal, where it must be known before work is accepted.
  absl::StatusOr<std::string> PrincipalOf(const httplib::Request& req) const {
    COPS_ASSIGN_OR_RETURN(std::string key, ApiKeyOf(req));
    if (!options.authenticate) return std::string();
    return options.authenticate(key, BoundedHttpServer::PeerCertificateNames(), PeerOf(req));
  }

  // A client of the service calling with `api_key` for the HTTP client at `peer` (PeerOf).
  std::unique_ptr<Client> ClientFor(const std::string& api_key, const std::string& peer = "") const {
    ClientOptions client;
    client.security.api_key = api_key;
    client.security.forwarded_peer = peer;
    // Called on the request's thread: its connection's verified client certificate.
    client.security.forwarded_certificate_names = BoundedHttpServer::PeerCertificateNames();
    client.timeout = options.call_timeout;
    return Client::OverChannel(channel, client);
  }

  // Refuses a request from its headers alone, before its body is read: wrong content type
  // (415), no length (411), too large (413), no API key (401). Returns false when refused
  // (`res` then holds the refusal).
  bool Admit(const httplib::Request& req, httplib::Response& res) const {
    absl::Status refusal = FramingRefusal(req);
    if (refusal.ok()) refusal = CrossOriginRefusal(req);
    int status = 0;
    if (refusal.ok() && req.path.starts_with("/v1/") && req.path != "/v1/openapi.json") {
      absl::StatusOr<std::string> key = ApiKeyOf(req);
      if (!key.ok()) {
        refusal = key.status();
      } else if (key->empty() && options.auth_required &&
                 BoundedHttpServer::PeerCertificateNames().empty()) {
        refusal = absl::UnauthenticatedError(
            "no credentials: send 'Authorization: Bearer <API key>'");
      }
    }
    if (refusal.ok() && TakesDocument(req)) {
      if (absl::StatusOr<BodyKind> kind = BodyKindOf(req.get_header_value("Content-Type"));
          !kind.ok()) {
        refusal = kind.status();
        status = 415;
      } else if (!req.has_header("Content-Length")) {
        refusal = absl::InvalidArgumentError(
            "a document body needs a Content-Length (chunked uploads are not taken)");
        status = 411;
      } else if (req.get_header_value<uint64_t>("Content-Length") > options.max_body_bytes) {
        refusal = absl::ResourceExhaustedError(
            "request body of " + req.get_header_value("Content-Length") +
            " bytes is over the limit of " + std::to_string(options.max_body_bytes) + " bytes");
        status = 413;
      }
    } else if (refusal.ok() && (req.method == "POST" || req.method == "PUT") &&
               !req.has_header("Content-Length")) {
      // cpp-httplib would read such a body until the client closes (RFC 9112 says it is
      // empty): the request would hang for request_timeout.
      refusal = absl::InvalidArgumentError(
          "a " + req.method + " needs a Content-Length (0 without a body; curl: -d '')");
      status = 411;
    }
    if (refusal.ok()) return true;
    SendError(res, refusal);
    if (status != 0) res.status = status;
    // The body was not read: the connection cannot carry another request.
    res.set_header("Connection", "close");
    BoundedHttpServer::CloseAfterResponse();
    return false;
  }

  // Runs `work` once per Idempotency-Key (when the request has one) and sends its reply.
  void Idempotent(const httplib::Request& req, httplib::Response& res, const std::string& key,
                  const std::string& fingerprint, const std::function<StoredReply()>& work) {
    const std::string idempotency_key = req.get_header_value("Idempotency-Key");
    if (idempotency_key.empty()) {
      Reply(res, work());
      return;
    }
    const std::string scope = OwnerTag(key) + "\n" + req.path + "\n" + idempotency_key;
    IdempotentReplies::Decision decision = idempotent.Begin(scope, fingerprint);
    if (!decision.refusal.ok()) {
      SendError(res, decision.refusal);
      if (absl::IsInvalidArgument(decision.refusal)) res.status = 422;
      return;
    }
    if (decision.replay.has_value()) {
      Reply(res, *decision.replay);
      res.set_header("Idempotent-Replayed", "true");
      return;
    }
    StoredReply reply = work();
    // Replies a retry could change (credentials, limits, availability) are not kept.
    if (reply.status >= 500 || reply.status == 429 || reply.status == 401 ||
        reply.status == 409) {
      idempotent.Abandon(scope);
    } else {
      idempotent.Finish(scope, reply);
    }
    Reply(res, reply);
  }

  void PostDocument(const httplib::Request& req, httplib::Response& res) {
    const std::string key = ApiKeyOf(req).value_or("");
    absl::StatusOr<ParsedBody> body = ParseBody(req, kDocumentFields, 1);
    if (!body.ok()) return SendError(res, body.status());
    Idempotent(req, res, key, body->fingerprint, [&]() -> StoredReply {
      absl::StatusOr<v1::Document> doc = DocumentOf(body->files[0], body->fields);
      if (!doc.ok()) return ErrorReply(doc.status());
      // receipt=false: the caller keeps none, and none is signed (omit_receipt).
      absl::StatusOr<std::optional<bool>> receipt = body->fields.Bool("receipt");
      if (!receipt.ok()) return ErrorReply(receipt.status());
      absl::StatusOr<v1::RegisterDocumentReply> reply =
          ClientFor(key, PeerOf(req))->Register(*doc, receipt->value_or(true));
      if (!reply.ok()) return ErrorReply(reply.status());
      return StoredReply{reply->created() ? 201 : 200, kJson,
                         RegisterJson(body->files[0].name, *reply),
                         "/v1/documents/" + std::to_string(reply->doc_id())};
    });
  }

  void GetDocument(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<uint64_t> id = DocIdOf(req.matches[1]);
    if (!id.ok()) return SendError(res, id.status());
    absl::StatusOr<v1::DocumentInfo> info = ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))->Get(*id);
    if (!info.ok()) return SendError(res, info.status());
    res.set_content(DocumentInfoJson(*info), kJson);
  }

  void DeleteDocument(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<uint64_t> id = DocIdOf(req.matches[1]);
    if (!id.ok()) return SendError(res, id.status());
    absl::StatusOr<v1::UnregisterDocumentReply> reply =
        ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))->Unregister(*id);
    if (!reply.ok()) return SendError(res, reply.status());
    // The unregistration's registration-log event, for a check's min_log_sequence (none
    // where the service keeps no log).
    if (reply->log_sequence() != 0) {
      res.set_header(kLogSequenceHeader, std::to_string(reply->log_sequence()));
    }
    res.status = 204;
  }

  void ListDocuments(const httplib::Request& req, httplib::Response& res) {
    Fields fields;
    for (const auto& [name, value] : req.params) {
      if (absl::Status s = fields.Add(name, value, {"page_token", "page_size", "collection"});
          !s.ok()) {
        return SendError(res, s);
      }
    }
    absl::StatusOr<std::optional<uint32_t>> size = fields.Unsigned32("page_size");
    absl::StatusOr<std::optional<std::string>> token = fields.String("page_token");
    absl::StatusOr<std::optional<std::string>> collection = fields.String("collection");
    for (const absl::Status& s : {size.status(), token.status(), collection.status()}) {
      if (!s.ok()) return SendError(res, s);
    }
    absl::StatusOr<v1::ListDocumentsReply> page =
        ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))
            ->List(size->value_or(0), token->value_or(""), collection->value_or(""));
    if (!page.ok()) return SendError(res, page.status());
    json docs = json::array();
    for (const v1::DocumentInfo& d : page->documents()) {
      docs.push_back(json::parse(DocumentInfoJson(d)));
    }
    res.set_content(Dump({{"documents", std::move(docs)},
                          {"next_page_token", page->next_page_token()}}),
                    kJson);
  }

  void PostCheck(const httplib::Request& req, httplib::Response& res) {
    const std::string key = ApiKeyOf(req).value_or("");
    absl::StatusOr<ParsedBody> body = ParseBody(req, kCheckFields, 1);
    if (!body.ok()) return SendError(res, body.status());
    const bool html = WantsHtml(req);
    Idempotent(req, res, key, body->fingerprint + (html ? "html" : ""), [&]() -> StoredReply {
      absl::StatusOr<v1::CheckDocumentRequest> request =
          CheckRequestOf(body->files[0], body->fields);
      if (!request.ok()) return ErrorReply(request.status());
      std::unique_ptr<Client> client = ClientFor(key, PeerOf(req));
      absl::StatusOr<v1::CheckDocumentReply> reply = client->Check(*request);
      if (!reply.ok()) return ErrorReply(reply.status());
      if (!html) return StoredReply{200, kJson, CheckJsonLine(*reply), ""};
      CheckHtmlReport report(RegisteredTextFrom(client.get()));
      report.Add(body->files[0].name, body->files[0].content, *reply);
      return StoredReply{200, "text/html; charset=utf-8", report.Finish(), ""};
    });
    if (html && res.get_header_value("Content-Type").starts_with("text/html")) {
      // The report is one self-contained page: no script, no other origin.
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                     "frame-ancestors 'none'");
    }
  }

  // A batch job: the documents compared with each other as `cops compare` does, and each
  // checked against the registered corpus.
  static absl::StatusOr<std::string> CompareBatch(Client* client, const std::vector<Upload>& files,
                                                  const v1::CheckDocumentRequest& options) {
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec) / ("cops-http-" + Sha256Hex(
        std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())).substr(0, 16));
    fs::create_directories(dir, ec);
    if (ec) return absl::InternalError("cannot create a work directory: " + ec.message());
    struct Cleanup {
      fs::path dir;
      ~Cleanup() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
      }
    } cleanup{dir};
    std::vector<std::string> paths;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string path = (dir / std::to_string(i)).string();
      std::ofstream out(path, std::ios::binary);
      out << files[i].content;
      if (!out.flush()) return absl::InternalError("cannot write " + path);
      paths.push_back(path);
    }
    CompareOptions compare;
    // One format for every file: the files' own when they agree, else each detected from
    // its bytes (a batch of a DOCX and a text file must not read both as DOCX).
    const bool one_format = std::all_of(files.begin(), files.end(), [&](const Upload& f) {
      return f.format == files[0].format;
    });
    compare.format = static_cast<DocumentFormat>(one_format ? files[0].format
                                                            : v1::DOCUMENT_FORMAT_AUTO);
    COPS_ASSIGN_OR_RETURN(compare.params, ServerChunkingParams(client));
    if (options.options().has_min_passage_units()) {
      compare.min_passage_units = options.options().min_passage_units();
    }
    COPS_ASSIGN_OR_RETURN(Comparison comparison, CompareFiles(paths, compare));
    std::vector<std::string> corpus;
    for (size_t i = 0; i < files.size(); ++i) {
      comparison.documents[i].path = files[i].name;  // the caller's names, not ours
      v1::CheckDocumentRequest request = options;
      request.set_content(files[i].content);
      request.set_format(files[i].format);
      absl::StatusOr<v1::CheckDocumentReply> reply = client->Check(request);
      corpus.push_back(reply.ok() ? CheckJsonLine(*reply, files[i].name)
                                  : ErrorJsonLine(files[i].name, reply.status()));
    }
    return CompareJson(comparison, corpus);
  }

  void PostJob(const httplib::Request& req, httplib::Response& res) {
    const std::string key = ApiKeyOf(req).value_or("");
    // A wrong key is 401 now, not a job that fails later.
    absl::StatusOr<std::string> principal = PrincipalOf(req);
    if (!principal.ok()) return SendError(res, principal.status());
    absl::StatusOr<ParsedBody> body = ParseBody(req, kJobFields, 1000);
    if (!body.ok()) return SendError(res, body.status());
    absl::StatusOr<std::string> callback = CallbackOf(*principal, body->fields);
    if (!callback.ok()) return SendError(res, callback.status());
    Idempotent(req, res, key, body->fingerprint, [&]() -> StoredReply {
      absl::StatusOr<v1::CheckDocumentRequest> request =
          CheckRequestOf(body->files[0], body->fields);
      if (!request.ok()) return ErrorReply(request.status());
      std::shared_ptr<Client> client = ClientFor(key, PeerOf(req));
      JobQueue::Work work;
      if (body->files.size() == 1) {
        work = [client, request = *std::move(request)]() -> absl::StatusOr<std::string> {
          COPS_ASSIGN_OR_RETURN(v1::CheckDocumentReply reply, client->Check(request));
          return CheckJsonLine(reply);
        };
      } else {
        request->clear_content();
        work = [client, request = *std::move(request),
                files = std::move(body->files)]() -> absl::StatusOr<std::string> {
          return CompareBatch(client.get(), files, request);
        };
      }
      JobQueue::Finished finished;
      if (!callback->empty()) {
        finished = [this, owner = OwnerTag(key), principal = *principal,
                    url = *callback](const JobView& job) {
          webhooks.Deliver(job.id, owner, principal, url, JobJson(job));
        };
      }
      absl::StatusOr<JobView> job = jobs.Submit(OwnerTag(key), std::move(work), finished);
      if (!job.ok()) return ErrorReply(job.status());
      return StoredReply{202, kJson, Dump({{"id", job->id}, {"state", JobStateName(job->state)}}),
                         "/v1/jobs/" + job->id};
    });
  }

  // The callback of a job: its callback_url, else the principal's registered URL, else "".
  // INVALID_ARGUMENT naming why a URL may not be called, or without a signing secret.
  absl::StatusOr<std::string> CallbackOf(const std::string& principal, const Fields& fields) const {
    COPS_ASSIGN_OR_RETURN(std::optional<std::string> url, fields.String("callback_url"));
    const std::optional<std::string> registered = webhooks.RegisteredUrl(principal);
    if (!url.has_value()) return registered.value_or("");
    if (!registered.has_value()) {
      return absl::InvalidArgumentError(
          "field 'callback_url': deliveries are signed with your webhook secret: create it "
          "first with PUT /v1/webhook");
    }
    absl::StatusOr<CallbackTarget> target = webhooks.Resolve(*url);
    if (!target.ok()) return absl::InvalidArgumentError(target.status().message());
    return *url;
  }

  void GetJob(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<JobView> job =
        jobs.Get(OwnerTag(ApiKeyOf(req).value_or("")), req.matches[1]);
    if (!job.ok()) return SendError(res, job.status());
    res.set_content(JobJson(*job), kJson);
  }

  // A job's deliveries outlive the job itself in a restart (jobs are memory only; the
  // deliveries are kept in the access store): the owner check is then the deliveries' own.
  void GetDeliveries(const httplib::Request& req, httplib::Response& res) {
    const std::string owner = OwnerTag(ApiKeyOf(req).value_or(""));
    absl::StatusOr<JobView> job = jobs.Get(owner, req.matches[1]);
    absl::StatusOr<std::vector<WebhookDelivery>> deliveries =
        webhooks.Deliveries(req.matches[1], owner);
    if (!job.ok() && !deliveries.ok()) return SendError(res, job.status());
    json list = json::array();
    // None yet (the job runs, or names no callback): an empty list.
    if (deliveries.ok()) {
      for (const WebhookDelivery& d : *deliveries) list.push_back(DeliveryJson(d));
    }
    res.set_content(Dump({{"deliveries", std::move(list)}}), kJson);
  }

  void ResendDelivery(const httplib::Request& req, httplib::Response& res) {
    const std::string owner = OwnerTag(ApiKeyOf(req).value_or(""));
    absl::StatusOr<JobView> job = jobs.Get(owner, req.matches[1]);
    absl::StatusOr<WebhookDelivery> delivery = webhooks.Resend(req.matches[1], owner);
    if (!delivery.ok()) {
      if (!job.ok()) return SendError(res, job.status());
      return SendError(res, absl::FailedPreconditionError(delivery.status().message()));
    }
    res.status = 202;
    res.set_content(Dump(DeliveryJson(*delivery)), kJson);
  }

  void PutWebhook(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<std::string> principal = PrincipalOf(req);
    if (!principal.ok()) return SendError(res, principal.status());
    Fields fields;
    if (!req.body.empty()) {
      if (MediaTypeOf(req.get_header_value("Content-Type")) != kJson) {
        SendError(res, absl::InvalidArgumentError("send the webhook as application/json"));
        res.status = 415;
        return;
      }
      const absl::StatusOr<json> j = ParseJsonObject(req.body);
      if (!j.ok()) return SendError(res, j.status());
      for (const auto& [name, value] : j->items()) {
        if (absl::Status s = fields.Add(name, value, {"url"}); !s.ok()) return SendError(res, s);
      }
    }
    absl::StatusOr<std::optional<std::string>> url = fields.String("url");
    if (!url.ok()) return SendError(res, url.status());
    absl::StatusOr<std::string> secret = webhooks.Register(*principal, url->value_or(""));
    if (!secret.ok()) {
      const absl::Status& s = secret.status();
      return SendError(res, absl::IsUnavailable(s) ? absl::InvalidArgumentError(s.message()) : s);
    }
    res.set_content(Dump({{"url", url->value_or("")}, {"secret", *secret}}), kJson);
  }

  void GetWebhook(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<std::string> principal = PrincipalOf(req);
    if (!principal.ok()) return SendError(res, principal.status());
    const std::optional<std::string> url = webhooks.RegisteredUrl(*principal);
    if (!url.has_value()) {
      return SendError(res, absl::NotFoundError("no webhook: create one with PUT /v1/webhook"));
    }
    res.set_content(Dump({{"url", *url}}), kJson);
  }

  void DeleteWebhook(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<std::string> principal = PrincipalOf(req);
    if (!principal.ok()) return SendError(res, principal.status());
    if (absl::Status s = webhooks.Unregister(*principal); !s.ok()) return SendError(res, s);
    res.status = 204;
  }

  void Health(const httplib::Request& req, httplib::Response& res) {
    absl::Status s = ClientFor("", PeerOf(req))->Health();
    if (!s.ok()) return SendError(res, s);
    res.set_content(R"({"status":"serving"})", kJson);
  }

  // ---------------------------------------------------------------- for the web page

  // GET /v1/session: whether a key is needed (a request without one reaches this only when
  // authentication is off or a client certificate came with it), who the caller is and by
  // which credential, and whether it may register documents and list their matches (an
  // owner or an admin: the ListMatches probe is allowed), and the defaults of a check that
  // does not say (its boxes start so). The page asks it first to know what to show; an
  // unknown key or certificate is 401.
  void Session(const httplib::Request& req, httplib::Response& res) {
    v1::ListMatchesRequest probe;
    probe.set_limit(1);
    absl::StatusOr<v1::ListMatchesReply> reply =
        ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))->ListMatches(probe);
    if (!reply.ok() && !absl::IsPermissionDenied(reply.status())) {
      return SendError(res, reply.status());
    }
    // Who the caller is, and by which credential: under mutual TLS a client certificate
    // that names a principal signs the page in without a key.
    const std::string key = ApiKeyOf(req).value_or("");
    std::string principal;
    if (options.authenticate) {
      absl::StatusOr<std::string> name = PrincipalOf(req);
      if (!name.ok()) return SendError(res, name.status());
      principal = *name;
    }
    const char* credential = !key.empty() ? "api_key"
                             : options.auth_required && !principal.empty() ? "certificate"
                                                                           : "none";
    res.set_content(Dump({{"auth_required", options.auth_required},
                          {"may_register", reply.ok()},
                          {"principal", principal},
                          {"credential", credential},
                          {"check_defaults", {{"heavy_revisions", options.heavy_revisions}}}}),
                    kJson);
  }

  // GET /v1/matches: `cops --json matches` (ListMatches).
  void ListMatches(const httplib::Request& req, httplib::Response& res) {
    Fields fields;
    for (const auto& [name, value] : req.params) {
      if (absl::Status s = fields.Add(name, value, {"doc_id", "since", "limit", "owner"});
          !s.ok()) {
        return SendError(res, s);
      }
    }
    absl::StatusOr<std::optional<uint64_t>> doc_id = fields.Unsigned("doc_id");
    absl::StatusOr<std::optional<uint32_t>> limit = fields.Unsigned32("limit");
    absl::StatusOr<std::optional<std::string>> since = fields.String("since");
    absl::StatusOr<std::optional<std::string>> owner = fields.String("owner");
    for (const absl::Status& s :
         {doc_id.status(), limit.status(), since.status(), owner.status()}) {
      if (!s.ok()) return SendError(res, s);
    }
    v1::ListMatchesRequest request;
    if (since->has_value()) {
      const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      // A time, or a duration back from now (as `cops matches --since`).
      absl::StatusOr<int64_t> ago = ParseDurationSeconds(**since);
      absl::StatusOr<int64_t> micros =
          ago.ok() ? absl::StatusOr<int64_t>(now - *ago * 1000000) : ParseTimeMicros(**since);
      if (!micros.ok()) {
        return SendError(res, absl::InvalidArgumentError(
                                  "field 'since': \"" + **since +
                                  "\" is neither a time (2025-06-01) nor a duration (30d)"));
      }
      request.set_since_unix_micros(*micros);
    }
    request.set_doc_id(doc_id->value_or(0));
    request.set_limit(limit->value_or(0));
    request.set_owner(owner->value_or(""));
    absl::StatusOr<v1::ListMatchesReply> reply =
        ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))->ListMatches(request);
    if (!reply.ok()) return SendError(res, reply.status());
    res.set_content(MatchesJson(*reply), kJson);
  }

  // GET /v1/documents/{id}/content: the registered bytes, for the side-by-side view of a
  // report (the service decides who may read them). Sent as a download, never rendered.
  void GetDocumentContent(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<uint64_t> id = DocIdOf(req.matches[1]);
    if (!id.ok()) return SendError(res, id.status());
    absl::StatusOr<v1::DocumentInfo> info =
        ClientFor(ApiKeyOf(req).value_or(""), PeerOf(req))->Get(*id, /*include_content=*/true);
    if (!info.ok()) return SendError(res, info.status());
    res.set_header("Content-Disposition", "attachment");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_content(info->content(), "application/octet-stream");
  }

  void RoutePage() {
    using Req = const httplib::Request&;
    using Res = httplib::Response&;
    for (const PageAsset& asset : PageAssets()) {
      server.Get(std::string(asset.path), [&asset](Req, Res res) {
        for (const auto& [name, value] : kPageHeaders) {
          res.set_header(std::string(name), std::string(value));
        }
        res.set_content(asset.body.data(), asset.body.size(),
                        std::string(asset.content_type).c_str());
      });
    }
    server.Get("/v1/session", [this](Req req, Res res) { Session(req, res); });
    server.Get("/v1/matches", [this](Req req, Res res) { ListMatches(req, res); });
    server.Get(R"(/v1/documents/([^/]+)/content)",
               [this](Req req, Res res) { GetDocumentContent(req, res); });
  }

  void Route() {
    using Req = const httplib::Request&;
    using Res = httplib::Response&;
    server.set_socket_options([](socket_t sock) {
      // Not SO_REUSEPORT (cpp-httplib's default): a second copsd on the same port must fail
      // to start rather than share the port silently.
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    // A reply's headers and body are two writes: without this, Nagle's algorithm holds the
    // body until the client's delayed ACK (~40 ms per request on Linux).
    server.set_tcp_nodelay(true);
    server.set_payload_max_length(options.max_body_bytes);
    server.set_pre_routing_handler([this](Req req, Res res) {
      return Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    // curl and others ask before sending a large body: refuse it without reading it.
    server.set_expect_100_continue_handler(
        [this](Req req, Res res) { return Admit(req, res) ? 100 : res.status; });
    server.set_error_handler(httplib::Server::HandlerWithResponse([](Req req, Res res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      absl::Status s;
      switch (res.status) {
        case 404:
          s = absl::NotFoundError("no route " + req.method + " " + req.path);
          break;
        case 413:
          s = absl::ResourceExhaustedError("request body over the limit");
          break;
        case 414:
        case 431:
          s = absl::InvalidArgumentError("request line or headers too long");
          break;
        case 400:
          s = absl::InvalidArgumentError("malformed HTTP request");
          break;
        default:
          s = absl::UnknownError("HTTP " + std::to_string(res.status));
      }
      const int status = res.status;
      SendError(res, s);
      res.status = status;
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([](Req, Res res, const std::exception_ptr&) {
      SendError(res, absl::InternalError("unexpected error"));
    });
    server.Get("/healthz", [this](Req req, Res res) { Health(req, res); });
    server.Get("/v1/openapi.json",
               [](Req, Res res) { res.set_content(std::string(OpenApiJson()), kJson); });
    server.Post("/v1/documents", [this](Req req, Res res) { PostDocument(req, res); });
    server.Get("/v1/documents", [this](Req req, Res res) { ListDocuments(req, res); });
    server.Get(R"(/v1/documents/([^/]+))", [this](Req req, Res res) { GetDocument(req, res); });
    server.Delete(R"(/v1/documents/([^/]+))",
                  [this](Req req, Res res) { DeleteDocument(req, res); });
    server.Post("/v1/checks", [this](Req req, Res res) { PostCheck(req, res); });
    server.Post("/v1/jobs", [this](Req req, Res res) { PostJob(req, res); });
    server.Get(R"(/v1/jobs/([^/]+))", [this](Req req, Res res) { GetJob(req, res); });
    server.Get(R"(/v1/jobs/([^/]+)/deliveries)",
               [this](Req req, Res res) { GetDeliveries(req, res); });
    server.Post(R"(/v1/jobs/([^/]+)/deliveries:resend)",
                [this](Req req, Res res) { ResendDelivery(req, res); });
    server.Put("/v1/webhook", [this](Req req, Res res) { PutWebhook(req, res); });
    server.Get("/v1/webhook", [this](Req req, Res res) { GetWebhook(req, res); });
    server.Delete("/v1/webhook", [this](Req req, Res res) { DeleteWebhook(req, res); });
    RoutePage();
  }

  const HttpApiOptions options;
  const std::shared_ptr<grpc::Channel> channel;
  BoundedHttpServer server;
  Webhooks webhooks;  // before the jobs, whose ends it delivers
  JobQueue jobs;
  IdempotentReplies idempotent;
  int port = 0;
  std::thread listener;
  std::once_flag stopped;
};

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(const HttpApiOptions& options,
                                                        std::shared_ptr<grpc::Channel> channel) {
  COPS_ASSIGN_OR_RETURN(const auto host_port, SplitHostPort(options.listen));
  auto impl = std::make_unique<Impl>(options, std::move(channel));
  COPS_RETURN_IF_ERROR(impl->server.LoadTls());
  COPS_RETURN_IF_ERROR(impl->webhooks.Load());
  impl->Route();
  if (host_port.second == 0) {
    impl->port = impl->server.bind_to_any_port(host_port.first);
  } else if (impl->server.bind_to_port(host_port.first, host_port.second)) {
    impl->port = host_port.second;
  }
  if (impl->port <= 0) {
    return absl::UnavailableError("cannot listen for HTTP on " + options.listen);
  }
  Impl* raw = impl.get();
  impl->listener = std::thread([raw] { raw->server.listen_after_bind(); });
  // Stop() before the accept loop runs would not reach it.
  while (!impl->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<HttpApi>(new HttpApi(std::move(impl)));
}

HttpApi::HttpApi(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpApi::~HttpApi() { Stop(); }

int HttpApi::port() const { return impl_->port; }

void HttpApi::Stop() {
  std::call_once(impl_->stopped, [this] {
    impl_->server.stop();
    if (impl_->listener.joinable()) impl_->listener.join();
    impl_->jobs.Shutdown();
    impl_->webhooks.Shutdown();
  });
}

}  // namespace cops
