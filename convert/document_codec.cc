#include "convert/document_codec.h"

#include <cstring>

namespace cops {
namespace {

constexpr std::string_view kMagic = "COPSCVT1";

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutString(std::string* out, std::string_view s) {
  Put<uint64_t>(out, s.size());
  out->append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool GetString(std::string* s) {
    uint64_t n;
    if (!Get(&n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  std::string_view rest() const { return in_; }

 private:
  std::string_view in_;
};

absl::Status Malformed() { return absl::InternalError("convert worker: malformed response"); }

}  // namespace

std::string EncodeFrameLength(uint64_t payload_bytes) {
  std::string out;
  Put<uint64_t>(&out, payload_bytes);
  return out;
}

std::optional<uint64_t> DecodeFrameLength(std::string_view bytes) {
  uint64_t n;
  if (!Reader(bytes).Get(&n)) return std::nullopt;
  return n;
}

std::string EncodeRequestHeader(DocumentFormat format, const ConvertLimits& limits,
                                const ConvertOptions& options) {
  std::string out(kMagic);
  Put<uint8_t>(&out, static_cast<uint8_t>(format));
  Put<uint64_t>(&out, limits.max_input_bytes);
  Put<uint64_t>(&out, limits.max_output_bytes);
  Put<uint64_t>(&out, limits.max_uncompressed_bytes);
  Put<uint32_t>(&out, limits.time_budget_ms);
  Put<uint64_t>(&out, limits.max_memory_bytes);
  Put<uint32_t>(&out, limits.max_zip_entries);
  Put<uint8_t>(&out, (options.drop_quoted_lines ? 1 : 0) | (options.drop_signature ? 2 : 0) |
                         (options.drop_headers_footers ? 4 : 0) |
                         (options.find_hidden_text ? 0 : 8));
  return out;
}

absl::StatusOr<ConvertRequest> DecodeRequest(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError("convert worker: bad request header");
  }
  Reader r(bytes.substr(kMagic.size()));
  ConvertRequest req;
  uint8_t format, bits;
  if (!r.Get(&format) || !r.Get(&req.limits.max_input_bytes) ||
      !r.Get(&req.limits.max_output_bytes) || !r.Get(&req.limits.max_uncompressed_bytes) ||
      !r.Get(&req.limits.time_budget_ms) || !r.Get(&req.limits.max_memory_bytes) ||
      !r.Get(&req.limits.max_zip_entries) || !r.Get(&bits)) {
    return absl::InvalidArgumentError("convert worker: truncated request header");
  }
  req.format = static_cast<DocumentFormat>(format);
  req.limits.in_process = true;
  req.options.drop_quoted_lines = bits & 1;
  req.options.drop_signature = bits & 2;
  req.options.drop_headers_footers = bits & 4;
  req.options.find_hidden_text = (bits & 8) == 0;
  req.input = r.rest();
  return req;
}

std::string EncodeResponse(const absl::StatusOr<ConvertedDocument>& result) {
  std::string out;
  if (!result.ok()) {
    out.push_back('E');
    Put<uint32_t>(&out, static_cast<uint32_t>(result.status().code()));
    PutString(&out, std::string(result.status().message()));
    return out;
  }
  const ConvertedDocument& doc = *result;
  out.push_back('D');
  Put<uint8_t>(&out, static_cast<uint8_t>(doc.format));
  PutString(&out, doc.charset);
  PutString(&out, doc.text);
  Put<uint64_t>(&out, doc.segments.size());
  for (const OffsetSegment& s : doc.segments) {
    Put(&out, s.text_offset);
    Put(&out, s.original_offset);
    Put(&out, s.page);
  }
  Put<uint64_t>(&out, doc.parts.size());
  for (const ConvertedPart& p : doc.parts) {
    PutString(&out, p.name);
    Put<uint8_t>(&out, static_cast<uint8_t>(p.format));
    Put(&out, p.text_start);
    Put(&out, p.text_end);
  }
  Put<uint64_t>(&out, doc.hidden.size());
  for (const HiddenText& h : doc.hidden) {
    Put(&out, h.text_start);
    Put(&out, h.text_end);
  }
  Put<uint64_t>(&out, doc.image_in_word.size());
  for (const ImageInWord& w : doc.image_in_word) {
    Put(&out, w.text_start);
    Put(&out, w.text_end);
    Put(&out, w.images);
  }
  return out;
}

absl::StatusOr<ConvertedDocument> DecodeResponse(std::string_view bytes) {
  if (bytes.empty()) return Malformed();
  Reader r(bytes.substr(1));
  if (bytes[0] == 'E') {
    uint32_t code;
    std::string message;
    if (!r.Get(&code) || !r.GetString(&message) || code == 0 || code > 16) return Malformed();
    return absl::Status(static_cast<absl::StatusCode>(code), message);
  }
  if (bytes[0] != 'D') return Malformed();
  ConvertedDocument doc;
  uint8_t format;
  uint64_t n;
  if (!r.Get(&format) || !r.GetString(&doc.charset) || !r.GetString(&doc.text) || !r.Get(&n) ||
      n > r.rest().size() / 12) {
    return Malformed();
  }
  doc.format = static_cast<DocumentFormat>(format);
  doc.segments.resize(n);
  for (OffsetSegment& s : doc.segments) {
    if (!r.Get(&s.text_offset) || !r.Get(&s.original_offset) || !r.Get(&s.page)) {
      return Malformed();
    }
  }
  if (!r.Get(&n) || n > r.rest().size() / 17) return Malformed();
  doc.parts.resize(n);
  for (ConvertedPart& p : doc.parts) {
    uint8_t f;
    if (!r.GetString(&p.name) || !r.Get(&f) || !r.Get(&p.text_start) || !r.Get(&p.text_end)) {
      return Malformed();
    }
    p.format = static_cast<DocumentFormat>(f);
  }
  if (!r.Get(&n) || n > r.rest().size() / 8) return Malformed();
  doc.hidden.resize(n);
  for (HiddenText& h : doc.hidden) {
    if (!r.Get(&h.text_start) || !r.Get(&h.text_end) || h.text_end < h.text_start ||
        h.text_end > doc.text.size()) {
      return Malformed();
    }
  }
  if (!r.Get(&n) || n > r.rest().size() / 12) return Malformed();
  doc.image_in_word.resize(n);
  for (ImageInWord& w : doc.image_in_word) {
    if (!r.Get(&w.text_start) || !r.Get(&w.text_end) || !r.Get(&w.images) ||
        w.text_end < w.text_start || w.text_end > doc.text.size()) {
      return Malformed();
    }
  }
  return doc;
}

}  // namespace cops
