#include "storage/codec.h"

#include <algorithm>
#include <cstring>

namespace cops::storage_codec {
namespace {

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

bool GetVarint32(std::string_view* in, uint32_t* v) {
  uint64_t x;
  if (!GetVarint64(in, &x) || x > UINT32_MAX) return false;
  *v = static_cast<uint32_t>(x);
  return true;
}

// Writes `v` at `p` as PutVarint64 does; returns the end. REQUIRES: 10 bytes of room.
char* WriteVarint64(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Room WriteDocPostings needs: a count, then three varints per posting of at most 33 bits
// (uint32 differences, and the zigzag of a difference of two uint32 starts).
size_t MaxDocPostingsBytes(size_t postings) { return 10 + 15 * postings; }

// Postings of one document, ordinal-delta and start-zigzag-delta coded. Written in place,
// not appended varint by varint: a registration encodes ~100 operands per document.
char* WriteDocPostings(char* dst, std::span<const Posting> postings) {
  dst = WriteVarint64(dst, postings.size());
  uint32_t prev_ordinal = 0;
  int64_t prev_start = 0;
  for (const Posting& p : postings) {
    dst = WriteVarint64(dst, p.ordinal - prev_ordinal);
    dst = WriteVarint64(dst, ZigZag(static_cast<int64_t>(p.start) - prev_start));
    dst = WriteVarint64(dst, p.end - p.start);
    prev_ordinal = p.ordinal;
    prev_start = p.start;
  }
  return dst;
}

void PutDocPostings(std::string* dst, std::span<const Posting> postings) {
  const size_t at = dst->size();
  dst->resize(at + MaxDocPostingsBytes(postings.size()));
  char* end = WriteDocPostings(dst->data() + at, postings);
  dst->resize(static_cast<size_t>(end - dst->data()));
}

bool GetDocPostings(std::string_view* in, DocId doc, std::vector<Posting>* out) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n == 0 || n > in->size()) return false;
  uint64_t ordinal = 0;
  int64_t start = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t d_ord, z_start, len;
    if (!GetVarint64(in, &d_ord) || !GetVarint64(in, &z_start) || !GetVarint64(in, &len)) {
      return false;
    }
    // ordinal and start stay in [0, UINT32_MAX]: a delta that would leave it (or wrap, or
    // overflow the signed sum) is damage, never a posting out of order.
    const int64_t d_start = UnZigZag(z_start);
    if (d_ord > UINT32_MAX - ordinal || d_start < -start || d_start > int64_t{UINT32_MAX} - start ||
        len > UINT32_MAX - static_cast<uint64_t>(start + d_start)) {
      return false;
    }
    ordinal += d_ord;
    start += d_start;
    out->push_back(Posting{doc, static_cast<uint32_t>(ordinal), static_cast<uint32_t>(start),
                           static_cast<uint32_t>(start + len)});
  }
  return true;
}

}  // namespace

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[10];
  dst->append(buf, static_cast<size_t>(WriteVarint64(buf, v) - buf));
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; shift <= 63 && i < static_cast<int>(in->size()); shift += 7, ++i) {
    uint64_t byte = static_cast<unsigned char>((*in)[i]);
    if (shift == 63 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s);
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > in->size()) return false;
  *s = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

void EncodeFixed64BE(char* dst, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    dst[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

void PutFixed64BE(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64BE(buf, v);
  dst->append(buf, 8);
}

uint64_t DecodeFixed64BE(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string ChunkKey(ChunkHash hash) {
  std::string k;
  PutFixed64BE(&k, hash);
  return k;
}

std::string DocKey(DocId id) {
  std::string k;
  PutFixed64BE(&k, id);
  return k;
}

std::string EncodePostingList(const PostingList& list) {
  std::string out;
  PutVarint64(&out, list.doc_frequency);
  DocId prev_doc = 0;
  const auto& ps = list.postings;
  for (size_t i = 0; i < ps.size();) {
    size_t j = i;
    while (j < ps.size() && ps[j].doc_id == ps[i].doc_id) ++j;
    PutVarint64(&out, ps[i].doc_id - prev_doc);
    PutDocPostings(&out, std::span<const Posting>(ps.data() + i, j - i));
    prev_doc = ps[i].doc_id;
    i = j;
  }
  return out;
}

absl::Status DecodePostingList(std::string_view value, PostingList* out) {
  out->postings.clear();
  out->doc_frequency = 0;
  uint32_t df;
  if (!GetVarint32(&value, &df)) return absl::DataLossError("posting list: bad doc frequency");
  out->doc_frequency = df;
  DocId doc = 0;
  while (!value.empty()) {
    uint64_t delta;
    if (!GetVarint64(&value, &delta) || delta == 0 || delta > UINT64_MAX - doc ||
        !GetDocPostings(&value, doc + delta, &out->postings)) {
      return absl::DataLossError("posting list: malformed document entry");
    }
    doc += delta;
  }
  return absl::OkStatus();
}

void AppendAddOperand(std::string* dst, DocId doc, std::span<const Posting> postings) {
  const size_t at = dst->size();
  dst->resize(at + 1 + 10 + MaxDocPostingsBytes(postings.size()));
  char* p = dst->data() + at;
  *p++ = static_cast<char>(PostingOp::kAdd);
  p = WriteVarint64(p, doc);
  p = WriteDocPostings(p, postings);
  dst->resize(static_cast<size_t>(p - dst->data()));
}

std::string EncodeAddOperand(DocId doc, std::span<const Posting> postings) {
  std::string out;
  AppendAddOperand(&out, doc, postings);
  return out;
}

std::string EncodeRemoveOperand(DocId doc) {
  std::string out;
  out.push_back(static_cast<char>(PostingOp::kRemove));
  PutVarint64(&out, doc);
  return out;
}

bool MergePostings(const std::optional<std::string_view>& existing,
                   std::span<const std::string_view> operands, uint32_t max_postings,
                   std::string* out) {
  PostingList list;
  if (existing.has_value() && !DecodePostingList(*existing, &list).ok()) return false;
  auto& ps = list.postings;
  std::vector<Posting> added;
  for (std::string_view op : operands) {
    if (op.empty()) return false;
    const auto tag = static_cast<PostingOp>(op[0]);
    op.remove_prefix(1);
    uint64_t doc;
    if (!GetVarint64(&op, &doc) || doc == 0) return false;
    auto lo = std::lower_bound(ps.begin(), ps.end(), doc,
                               [](const Posting& p, DocId d) { return p.doc_id < d; });
    auto hi = lo;
    while (hi != ps.end() && hi->doc_id == doc) ++hi;
    if (tag == PostingOp::kAdd) {
      added.clear();
      if (!GetDocPostings(&op, doc, &added) || !op.empty()) return false;
      if (lo != hi) continue;  // already listed: a replayed add
      ++list.doc_frequency;
      if (max_postings == 0 || ps.size() + added.size() <= max_postings) {
        ps.insert(lo, added.begin(), added.end());
      }
    } else if (tag == PostingOp::kRemove) {
      if (!op.empty()) return false;
      if (lo != hi) {
        ps.erase(lo, hi);
        if (list.doc_frequency > 0) --list.doc_frequency;
      } else {
        // Counted but not listed (beyond the cap) unless every counted document is listed.
        size_t listed = 0;
        for (size_t i = 0; i < ps.size(); ++i) listed += (i == 0 || ps[i].doc_id != ps[i - 1].doc_id);
        if (list.doc_frequency > listed) --list.doc_frequency;
      }
    } else {
      return false;
    }
  }
  *out = EncodePostingList(list);
  return true;
}

std::string EncodeDocumentRecord(const DocumentRecord& r) {
  std::string out;
  out.push_back(static_cast<char>(kDocumentRecordV1));
  PutLengthPrefixed(&out, r.title);
  PutLengthPrefixed(&out, r.author);
  PutLengthPrefixed(&out, r.owner);
  PutLengthPrefixed(&out, r.collection);
  PutLengthPrefixed(&out, r.external_id);
  PutLengthPrefixed(&out, r.format);
  PutVarint64(&out, ZigZag(r.registered_unix_micros));
  out.append(reinterpret_cast<const char*>(r.sha256.data()), r.sha256.size());
  PutVarint64(&out, r.total_chunks);
  PutVarint64(&out, r.stored_chunks);
  PutVarint64(&out, r.size_bytes);
  if (r.expires_unix_micros != 0 || r.not_before_unix_micros != 0) {
    PutVarint64(&out, ZigZag(r.expires_unix_micros));
    PutVarint64(&out, ZigZag(r.not_before_unix_micros));
  }
  return out;
}

absl::Status DecodeDocumentRecord(DocId id, std::string_view in, DocumentRecord* out) {
  auto bad = [id](const char* what) {
    return absl::DataLossError("document " + std::to_string(id) + ": malformed record (" + what + ")");
  };
  if (in.empty()) return bad("empty");
  if (static_cast<uint8_t>(in[0]) != kDocumentRecordV1) return bad("unknown record version");
  in.remove_prefix(1);
  DocumentRecord r;
  r.id = id;
  std::string_view s[6];
  for (auto& f : s) {
    if (!GetLengthPrefixed(&in, &f)) return bad("strings");
  }
  r.title = s[0];
  r.author = s[1];
  r.owner = s[2];
  r.collection = s[3];
  r.external_id = s[4];
  r.format = s[5];
  uint64_t micros;
  if (!GetVarint64(&in, &micros)) return bad("time");
  r.registered_unix_micros = UnZigZag(micros);
  if (in.size() < r.sha256.size()) return bad("sha256");
  std::memcpy(r.sha256.data(), in.data(), r.sha256.size());
  in.remove_prefix(r.sha256.size());
  if (!GetVarint32(&in, &r.total_chunks) || !GetVarint32(&in, &r.stored_chunks) ||
      !GetVarint64(&in, &r.size_bytes)) {
    return bad("counts");
  }
  if (!in.empty()) {  // a record without a lifetime ends here
    uint64_t expires, not_before;
    if (!GetVarint64(&in, &expires) || !GetVarint64(&in, &not_before)) return bad("lifetime");
    r.expires_unix_micros = UnZigZag(expires);
    r.not_before_unix_micros = UnZigZag(not_before);
  }
  // Trailing bytes are fields of a later minor revision: ignored.
  *out = std::move(r);
  return absl::OkStatus();
}

namespace {
constexpr char kGramsV1 = 1;  // on-disk: do not change
static_assert(kVerifyGramBits == 16, "EncodeGrams writes 2 bytes per gram");
}  // namespace

std::string EncodeGrams(std::span<const uint32_t> grams) {
  std::string out;
  out.resize(1 + 2 * grams.size());
  out[0] = kGramsV1;
  char* p = out.data() + 1;
  for (uint32_t g : grams) {
    p[0] = static_cast<char>(g & 0xff);
    p[1] = static_cast<char>((g >> 8) & 0xff);
    p += 2;
  }
  return out;
}

absl::Status DecodeGrams(DocId id, std::string_view value, std::vector<uint32_t>* out) {
  if (value.empty() || value[0] != kGramsV1 || (value.size() - 1) % 2 != 0) {
    return absl::DataLossError("document " + std::to_string(id) +
                               ": malformed verification grams");
  }
  const size_t n = (value.size() - 1) / 2;
  out->resize(n);
  const auto* p = reinterpret_cast<const unsigned char*>(value.data()) + 1;
  for (size_t i = 0; i < n; ++i, p += 2) (*out)[i] = uint32_t{p[0]} | uint32_t{p[1]} << 8;
  return absl::OkStatus();
}

}  // namespace cops::storage_codec
