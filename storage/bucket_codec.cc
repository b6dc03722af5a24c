#include "storage/bucket_codec.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>

#include "absl/strings/escaping.h"
#include "storage/codec.h"

namespace cops::bucket_codec {
namespace {

using storage_codec::GetVarint64;
using storage_codec::PutVarint64;

// Rests and document ids stay below 2^63, so that every delta shifted left by one (the flag
// bit) fits in 64 bits; in a kBucketValuePositionless value, documents below 2^62 (two flags).
constexpr uint64_t kMaxId = (uint64_t{1} << 63) - 1;
constexpr uint64_t kMaxPositionlessTagId = (uint64_t{1} << 62) - 1;

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

absl::Status Malformed(std::string_view key, const char* what) {
  return absl::DataLossError("postings bucket " + absl::BytesToHexString(absl::string_view(key.data(), key.size())) +
                             ": malformed value (" + what + ")");
}

// Whether a document's `count` postings in a group, the first `first`, are one without a
// position (ordinal, start and end 0), which kBucketValuePositionless writes as the document.
bool Positionless(const Posting& first, size_t count) {
  return count == 1 && first.ordinal == 0 && first.start == 0 && first.end == 0;
}

// Decides a value's tag from the documents it will hold: kBucketValuePositionless when one
// is positionless and every id fits the tag's two flag bits, else kBucketValue (explicit
// zeros, as before the tag).
class TagChooser {
 public:
  void AddDocument(const Posting& first, size_t count) {
    positionless_ |= Positionless(first, count);
    too_large_ |= first.doc_id > kMaxPositionlessTagId;
  }
  // A group's postings, sorted by (doc_id, ordinal).
  void Add(std::span<const Posting> postings) {
    for (size_t i = 0; i < postings.size();) {
      size_t j = i + 1;
      while (j < postings.size() && postings[j].doc_id == postings[i].doc_id) ++j;
      AddDocument(postings[i], j - i);
      i = j;
    }
  }
  uint8_t tag() const {
    return positionless_ && !too_large_ ? kBucketValuePositionless : kBucketValue;
  }

 private:
  bool positionless_ = false;
  bool too_large_ = false;
};

// One group: `postings` sorted by (doc_id, ordinal), in a value of tag `tag`.
void PutGroup(std::string* dst, uint8_t tag, uint64_t rest_delta, uint32_t beyond_cap,
              std::span<const Posting> postings) {
  const bool flagged = tag == kBucketValuePositionless;
  uint64_t listed = 0;
  for (size_t i = 0; i < postings.size(); ++i) {
    listed += i == 0 || postings[i].doc_id != postings[i - 1].doc_id;
  }
  const bool header = listed != 1 || beyond_cap != 0;
  PutVarint64(dst, rest_delta << 1 | (header ? 1 : 0));
  if (header) {
    PutVarint64(dst, listed);
    PutVarint64(dst, beyond_cap);
  }
  DocId prev_doc = 0;
  for (size_t i = 0; i < postings.size();) {
    size_t j = i + 1;
    while (j < postings.size() && postings[j].doc_id == postings[i].doc_id) ++j;
    const uint64_t n = j - i;
    const uint64_t delta = postings[i].doc_id - prev_doc;
    prev_doc = postings[i].doc_id;
    if (flagged && Positionless(postings[i], n)) {
      PutVarint64(dst, delta << 2 | 2);  // the document alone
      i = j;
      continue;
    }
    PutVarint64(dst, flagged ? delta << 2 | (n > 1 ? 1 : 0) : delta << 1 | (n > 1 ? 1 : 0));
    if (n > 1) PutVarint64(dst, n - 2);
    uint32_t prev_ordinal = 0;
    int64_t prev_start = 0;
    for (size_t k = i; k < j; ++k) {
      const Posting& p = postings[k];
      PutVarint64(dst, p.ordinal - prev_ordinal);
      PutVarint64(dst, ZigZag(static_cast<int64_t>(p.start) - prev_start));
      PutVarint64(dst, p.end - p.start);
      prev_ordinal = p.ordinal;
      prev_start = p.start;
    }
    i = j;
  }
}

// Varints over [*p, end), as storage_codec::GetVarint64 reads them; the one-byte case, most
// of a bucket's, inline (a lookup reads every group header of the buckets it touches).
bool ReadVarintSlow(const char** p, const char* end, uint64_t* v) {
  uint64_t result = 0;
  const char* q = *p;
  for (int shift = 0; shift <= 63 && q < end; shift += 7) {
    const uint64_t byte = static_cast<uint8_t>(*q++);
    if (shift == 63 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *p = q;
      *v = result;
      return true;
    }
  }
  return false;
}

inline bool ReadVarint(const char** p, const char* end, uint64_t* v) {
  const auto* q = reinterpret_cast<const uint8_t*>(*p);
  if (end - *p >= 10) {  // room for the longest: no bounds checks (a rest delta takes ~6)
    uint64_t result = 0;
    for (int i = 0; i < 9; ++i) {
      const uint64_t byte = q[i];
      result |= (byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        *p += i + 1;
        *v = result;
        return true;
      }
    }
    if (q[9] > 1) return false;
    *p += 10;
    *v = result | (uint64_t{q[9]} << 63);
    return true;
  }
  return ReadVarintSlow(p, end, v);
}

// Steps over `count` varints without decoding them: a varint ends at a byte below 0x80.
inline bool SkipVarints(const char** p, const char* end, uint64_t count) {
  const char* q = *p;
  while (count > 0) {
    if (q == end) return false;
    count -= static_cast<uint8_t>(*q++) < 0x80 ? 1 : 0;
  }
  *p = q;
  return true;
}

// Reads the groups of a value one at a time. REQUIRES: IsAddFragment(value).
class GroupScanner {
 public:
  explicit GroupScanner(std::string_view value)
      : p_(value.data() + 1),
        end_(value.data() + value.size()),
        flagged_(static_cast<uint8_t>(value[0]) == kBucketValuePositionless) {}
  bool done() const { return p_ == end_; }

  // A group's rest and counts; nullptr on damage, else the reason is "".
  const char* Header(uint64_t* rest, uint64_t* listed, uint32_t* beyond_cap) {
    uint64_t v;
    if (!ReadVarint(&p_, end_, &v)) return "truncated group";
    const uint64_t delta = v >> 1;
    if (first_) {
      rest_ = delta;
      first_ = false;
    } else {
      if (delta == 0 || delta > kMaxId - rest_) return "groups out of order";
      rest_ += delta;
    }
    *listed = 1;
    *beyond_cap = 0;
    if ((v & 1) != 0) {
      uint64_t beyond;
      if (!ReadVarint(&p_, end_, listed) || !ReadVarint(&p_, end_, &beyond)) {
        return "truncated header";
      }
      // Each listed document takes at least 4 bytes: a cheap bound before any allocation.
      if (*listed > remaining() || beyond > UINT32_MAX) return "counts out of range";
      if (*listed == 0 && beyond == 0) return "empty group";
      *beyond_cap = static_cast<uint32_t>(beyond);
    }
    *rest = rest_;
    return "";
  }

  // Reads `listed` documents' postings, appending them to `out`.
  const char* Documents(uint64_t listed, std::vector<Posting>* out) {
    DocId doc = 0;
    for (uint64_t d = 0; d < listed; ++d) {
      uint64_t v;
      if (!ReadVarint(&p_, end_, &v)) return "truncated document";
      const uint64_t delta = flagged_ ? v >> 2 : v >> 1;
      if (delta == 0 || delta > (flagged_ ? kMaxPositionlessTagId : kMaxId) - doc) {
        return "documents out of order";
      }
      doc += delta;
      if (flagged_ && (v & 2) != 0) {  // positionless: the document alone
        if ((v & 1) != 0) return "positionless document with several postings";
        out->push_back(Posting{doc, 0, 0, 0});
        continue;
      }
      uint64_t n = 1;
      if ((v & 1) != 0) {
        if (!ReadVarint(&p_, end_, &n) || n > remaining()) return "bad posting count";
        n += 2;
      }
      uint64_t ordinal = 0;
      int64_t start = 0;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t d_ord, z_start, len;
        if (!ReadVarint(&p_, end_, &d_ord) || !ReadVarint(&p_, end_, &z_start) ||
            !ReadVarint(&p_, end_, &len)) {
          return "truncated posting";
        }
        // Ordinals and offsets stay in [0, UINT32_MAX]; a delta leaving it is damage.
        const int64_t d_start = UnZigZag(z_start);
        if (d_ord > UINT32_MAX - ordinal || d_start < -start ||
            d_start > int64_t{UINT32_MAX} - start ||
            len > UINT32_MAX - static_cast<uint64_t>(start + d_start)) {
          return "posting out of range";
        }
        ordinal += d_ord;
        start += d_start;
        out->push_back(Posting{doc, static_cast<uint32_t>(ordinal), static_cast<uint32_t>(start),
                               static_cast<uint32_t>(start + len)});
      }
    }
    return "";
  }

  // Steps over `listed` documents' postings, checking only that their varints are there
  // (a lookup does not vouch for the groups it did not ask for).
  const char* Skip(uint64_t listed) {
    for (uint64_t d = 0; d < listed; ++d) {
      // The document varint's low bits (`several`, `positionless`) are its first byte's.
      if (p_ == end_) return "truncated document";
      if (flagged_ && (static_cast<uint8_t>(*p_) & 2) != 0) {  // the document alone
        if (!SkipVarints(&p_, end_, 1)) return "truncated document";
        continue;
      }
      uint64_t postings = 1;
      if ((static_cast<uint8_t>(*p_) & 1) != 0) {
        uint64_t n;
        if (!SkipVarints(&p_, end_, 1) || !ReadVarint(&p_, end_, &n) || n > remaining()) {
          return "bad posting count";
        }
        postings = n + 2;
      } else if (!SkipVarints(&p_, end_, 1)) {
        return "truncated document";
      }
      if (!SkipVarints(&p_, end_, 3 * postings)) return "truncated posting";
    }
    return "";
  }

 private:
  uint64_t remaining() const { return static_cast<uint64_t>(end_ - p_); }

  const char* p_;
  const char* end_;
  const bool flagged_;  // kBucketValuePositionless: two flag bits per document
  bool first_ = true;
  uint64_t rest_ = 0;
};

bool IsError(const char* reason) { return reason[0] != '\0'; }

// Decodes a value's or add fragment's groups; the reason on damage, else "".
const char* DecodeGroups(std::string_view value, std::vector<BucketGroup>* out) {
  out->clear();
  if (!IsAddFragment(value)) return "unknown tag";
  GroupScanner scan(value);
  while (!scan.done()) {
    BucketGroup g;
    uint64_t listed;
    const char* why = scan.Header(&g.rest, &listed, &g.beyond_cap);
    if (IsError(why)) return why;
    why = scan.Documents(listed, &g.postings);
    if (IsError(why)) return why;
    out->push_back(std::move(g));
  }
  return "";
}

uint32_t SaturatingAdd(uint32_t a, uint64_t b) {
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{a} + b, UINT32_MAX));
}

}  // namespace

absl::Status BucketLayout::Validate() const {
  if (bucket_bits < kMinBucketBits || bucket_bits > kMaxBucketBits) {
    return absl::InvalidArgumentError("postings bucket bits must be in [" +
                                      std::to_string(kMinBucketBits) + ", " +
                                      std::to_string(kMaxBucketBits) + "], not " +
                                      std::to_string(bucket_bits));
  }
  if (hash_bits < bucket_bits + 8 || hash_bits > 64) {
    return absl::InvalidArgumentError("postings hash bits must be in [" +
                                      std::to_string(bucket_bits + 8) + ", 64], not " +
                                      std::to_string(hash_bits));
  }
  return absl::OkStatus();
}

uint32_t BucketBitsFor(uint64_t documents) {
  // ~140 stored postings per 4 KB document (700 words, 1 in 5 chunks kept) and ~32
  // postings per bucket: four buckets per expected document. Against one bucket per
  // document, 0.4 more bytes per posting and half the lookup CPU (docs/performance.md).
  const uint32_t bits =
      documents <= 1 ? 2 : static_cast<uint32_t>(std::bit_width(documents - 1)) + 2;
  return std::clamp<uint32_t>(bits, 12, kMaxBucketBits);
}

void EncodeBucketKey(char* dst, uint32_t bucket) {
  for (int i = 3; i >= 0; --i) {
    dst[i] = static_cast<char>(bucket & 0xff);
    bucket >>= 8;
  }
}

uint32_t DecodeBucketKey(const char* p) {
  uint32_t bucket = 0;
  for (int i = 0; i < 4; ++i) bucket = bucket << 8 | static_cast<uint8_t>(p[i]);
  return bucket;
}

std::string BucketKey(uint32_t bucket) {
  std::string k(4, '\0');
  EncodeBucketKey(k.data(), bucket);
  return k;
}

std::string EncodeAddFragment(std::span<const BucketPosting> postings) {
  std::string out;
  EncodeAddFragment(postings, &out);
  return out;
}

void EncodeAddFragment(std::span<const BucketPosting> postings, std::string* operand) {
  TagChooser chooser;  // per (rest, document) run, without copying the postings
  for (size_t i = 0; i < postings.size();) {
    size_t j = i + 1;
    while (j < postings.size() && postings[j].rest == postings[i].rest &&
           postings[j].posting.doc_id == postings[i].posting.doc_id) {
      ++j;
    }
    chooser.AddDocument(postings[i].posting, j - i);
    i = j;
  }
  const uint8_t tag = chooser.tag();
  std::string& out = *operand;
  out.assign(1, static_cast<char>(tag));
  thread_local std::vector<Posting> group;  // kept between calls: a window encodes many
  uint64_t prev_rest = 0;
  for (size_t i = 0; i < postings.size();) {
    size_t j = i;
    group.clear();
    for (; j < postings.size() && postings[j].rest == postings[i].rest; ++j) {
      group.push_back(postings[j].posting);
    }
    PutGroup(&out, tag, postings[i].rest - prev_rest, 0, group);
    prev_rest = postings[i].rest;
    i = j;
  }
}

std::string EncodeRemoveOperand(DocId doc, std::span<const uint64_t> rests) {
  std::string out(1, static_cast<char>(kBucketRemove));
  PutVarint64(&out, doc);
  PutVarint64(&out, rests.size());
  uint64_t prev = 0;
  for (uint64_t r : rests) {
    PutVarint64(&out, r - prev);
    prev = r;
  }
  return out;
}

absl::Status DecodeBucket(std::string_view value, std::string_view key,
                          std::vector<BucketGroup>* out) {
  const char* why = DecodeGroups(value, out);
  if (IsError(why)) {
    out->clear();
    return Malformed(key, why);
  }
  return absl::OkStatus();
}

std::string EncodeBucket(std::span<const BucketGroup> groups) {
  TagChooser chooser;
  for (const BucketGroup& g : groups) chooser.Add(g.postings);
  const uint8_t tag = chooser.tag();
  std::string out(1, static_cast<char>(tag));
  uint64_t prev_rest = 0;
  bool first = true;
  for (const BucketGroup& g : groups) {
    if (g.postings.empty() && g.beyond_cap == 0) continue;
    PutGroup(&out, tag, first ? g.rest : g.rest - prev_rest, g.beyond_cap, g.postings);
    prev_rest = g.rest;
    first = false;
  }
  return out;
}

absl::Status ForEachRest(std::string_view value, std::string_view key,
                         const std::function<void(uint64_t rest)>& fn) {
  if (!IsAddFragment(value)) return Malformed(key, "unknown tag");
  GroupScanner scan(value);
  while (!scan.done()) {
    uint64_t rest, listed;
    uint32_t beyond_cap;
    const char* why = scan.Header(&rest, &listed, &beyond_cap);
    if (IsError(why)) return Malformed(key, why);
    why = scan.Skip(listed);
    if (IsError(why)) return Malformed(key, why);
    fn(rest);
  }
  return absl::OkStatus();
}

absl::Status LookupInBucket(std::string_view value, std::string_view key,
                            std::span<const uint64_t> rests, std::span<PostingList* const> outs) {
  if (!IsAddFragment(value)) return Malformed(key, "unknown tag");
  GroupScanner scan(value);
  size_t i = 0;
  const size_t n = rests.size();
  while (i < n && !scan.done()) {
    uint64_t rest, listed;
    uint32_t beyond_cap;
    const char* why = scan.Header(&rest, &listed, &beyond_cap);
    if (IsError(why)) return Malformed(key, why);
    while (i < n && rests[i] < rest) ++i;
    if (i < n && rests[i] == rest) {
      PostingList* first = outs[i];
      first->postings.clear();
      why = scan.Documents(listed, &first->postings);
      if (IsError(why)) return Malformed(key, why);
      first->doc_frequency = SaturatingAdd(beyond_cap, listed);
      for (++i; i < n && rests[i] == rest; ++i) *outs[i] = *first;
    } else {
      why = scan.Skip(listed);
      if (IsError(why)) return Malformed(key, why);
    }
  }
  return absl::OkStatus();
}

namespace {

// One step of a merge under one rest: an add of a document's postings (pool[first, +count)),
// documents counted beyond the cap (count), or a document's removal.
struct MergeEvent {
  enum Kind : uint8_t { kAdd, kBeyond, kRemove };
  uint64_t rest;
  uint32_t op;  // application order: 0 the existing value, then the operands
  Kind kind;
  DocId doc;
  uint32_t first;
  uint32_t count;
};

// The rests a merge keeps: all of them, or those of a sorted list. Each operand asks about
// its rests in ascending order, from a fresh copy.
class RestFilter {
 public:
  RestFilter() = default;
  explicit RestFilter(std::span<const uint64_t> rests) : rests_(rests), all_(false) {}
  bool Keeps(uint64_t rest) {
    if (all_) return true;
    while (next_ < rests_.size() && rests_[next_] < rest) ++next_;
    return next_ < rests_.size() && rests_[next_] == rest;
  }
  // No rest from here on is kept.
  bool Exhausted() const { return !all_ && next_ == rests_.size(); }

 private:
  std::span<const uint64_t> rests_;
  size_t next_ = 0;
  bool all_ = true;
};

// Appends the events of a value or an add fragment under the rests `filter` keeps (the
// others' groups are stepped over); false on damage.
bool AddEvents(std::string_view value, uint32_t op, RestFilter filter,
               std::vector<MergeEvent>* events, std::vector<Posting>* pool) {
  if (!IsAddFragment(value)) return false;
  GroupScanner scan(value);
  while (!scan.done() && !filter.Exhausted()) {
    uint64_t rest, listed;
    uint32_t beyond;
    if (IsError(scan.Header(&rest, &listed, &beyond))) return false;
    if (!filter.Keeps(rest)) {
      if (IsError(scan.Skip(listed))) return false;
      continue;
    }
    if (beyond != 0) events->push_back({rest, op, MergeEvent::kBeyond, 0, 0, beyond});
    const size_t start = pool->size();
    if (IsError(scan.Documents(listed, pool))) return false;
    if (pool->size() > UINT32_MAX) return false;
    for (size_t i = start; i < pool->size();) {
      size_t j = i + 1;
      while (j < pool->size() && (*pool)[j].doc_id == (*pool)[i].doc_id) ++j;
      events->push_back({rest, op, MergeEvent::kAdd, (*pool)[i].doc_id, static_cast<uint32_t>(i),
                         static_cast<uint32_t>(j - i)});
      i = j;
    }
  }
  return true;
}

bool AddRemoveEvents(std::string_view op_value, uint32_t op, RestFilter filter,
                     std::vector<MergeEvent>* events) {
  op_value.remove_prefix(1);
  uint64_t doc, count;
  if (!GetVarint64(&op_value, &doc) || doc == 0 || doc > kMaxId ||
      !GetVarint64(&op_value, &count) || count > op_value.size()) {
    return false;
  }
  uint64_t rest = 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t delta;
    if (!GetVarint64(&op_value, &delta) || (k > 0 && delta == 0) || delta > kMaxId - rest) {
      return false;
    }
    rest += delta;
    if (filter.Keeps(rest)) events->push_back({rest, op, MergeEvent::kRemove, doc, 0, 0});
  }
  return op_value.empty();
}

// Flat: every operand's entries (under the rests `filter` keeps) as events, sorted by
// (rest, operand) with each operand's order kept, then applied rest by rest; no per-group
// allocation (a read of a bucket with operands runs this, so it is on the lookup path
// until compaction).
bool MergeFiltered(const std::optional<std::string_view>& existing,
                   std::span<const std::string_view> operands, RestFilter filter,
                   uint32_t max_postings, std::string* out) {
  thread_local std::vector<MergeEvent> events;
  thread_local std::vector<Posting> pool;
  thread_local std::vector<const MergeEvent*> listed;
  thread_local std::vector<Posting> kept;  // the new value's postings, group after group
  struct Kept {
    uint64_t rest;
    uint32_t beyond;
    size_t end;  // in `kept`
  };
  thread_local std::vector<Kept> groups;
  events.clear();
  pool.clear();
  kept.clear();
  groups.clear();
  if (existing.has_value() && !AddEvents(*existing, 0, filter, &events, &pool)) return false;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string_view op = operands[i];
    if (op.empty()) return false;
    const auto tag = static_cast<uint8_t>(op[0]);
    const auto index = static_cast<uint32_t>(i + 1);
    if (IsAddFragment(op)) {
      if (!AddEvents(op, index, filter, &events, &pool)) return false;
    } else if (tag == kBucketRemove) {
      if (!AddRemoveEvents(op, index, filter, &events)) return false;
    } else {
      return false;
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const MergeEvent& a, const MergeEvent& b) {
    return a.rest != b.rest ? a.rest < b.rest : a.op < b.op;
  });
  TagChooser chooser;
  for (size_t i = 0; i < events.size();) {
    const uint64_t rest = events[i].rest;
    listed.clear();  // by doc
    uint64_t total = 0;
    uint32_t beyond = 0;
    for (; i < events.size() && events[i].rest == rest; ++i) {
      const MergeEvent& e = events[i];
      auto at = std::lower_bound(listed.begin(), listed.end(), e.doc,
                                 [](const MergeEvent* l, DocId d) { return l->doc < d; });
      const bool is_listed = at != listed.end() && (*at)->doc == e.doc;
      if (e.kind == MergeEvent::kAdd) {
        if (is_listed) continue;  // a replayed add
        // The existing value is kept whole (written under this cap or an earlier one).
        if (e.op == 0 || max_postings == 0 || total + e.count <= max_postings) {
          listed.insert(at, &e);
          total += e.count;
        } else {
          beyond = SaturatingAdd(beyond, 1);
        }
      } else if (e.kind == MergeEvent::kBeyond) {
        beyond = SaturatingAdd(beyond, e.count);
      } else if (is_listed) {
        total -= (*at)->count;
        listed.erase(at);
      } else if (beyond > 0) {
        --beyond;  // counted, not listed
      }
    }
    if (listed.empty() && beyond == 0) continue;
    const size_t begin = kept.size();
    for (const MergeEvent* l : listed) {
      kept.insert(kept.end(), pool.begin() + l->first, pool.begin() + l->first + l->count);
    }
    chooser.Add(std::span(kept).subspan(begin));
    groups.push_back({rest, beyond, kept.size()});
  }
  // The tag depends on every group kept, so they are written once all are known.
  const uint8_t tag = chooser.tag();
  out->assign(1, static_cast<char>(tag));
  uint64_t prev_rest = 0;
  size_t begin = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    PutGroup(out, tag, g == 0 ? groups[g].rest : groups[g].rest - prev_rest, groups[g].beyond,
             std::span(kept).subspan(begin, groups[g].end - begin));
    prev_rest = groups[g].rest;
    begin = groups[g].end;
  }
  if (pool.capacity() > (1u << 20)) {  // one huge bucket does not stay resident per thread
    pool = {};
    events = {};
    kept = {};
  }
  return true;
}

}  // namespace

bool MergeBucket(const std::optional<std::string_view>& existing,
                 std::span<const std::string_view> operands, uint32_t max_postings,
                 std::string* out) {
  return MergeFiltered(existing, operands, RestFilter(), max_postings, out);
}

bool MergeBucketRests(const std::optional<std::string_view>& existing,
                      std::span<const std::string_view> operands,
                      std::span<const uint64_t> rests, uint32_t max_postings, std::string* out) {
  return MergeFiltered(existing, operands, RestFilter(rests), max_postings, out);
}

bool MergeBucketReference(const std::optional<std::string_view>& existing,
                          std::span<const std::string_view> operands, uint32_t max_postings,
                          std::string* out) {
  std::map<uint64_t, BucketGroup> groups;
  std::vector<BucketGroup> decoded;
  if (existing.has_value()) {
    if (IsError(DecodeGroups(*existing, &decoded))) return false;
    for (BucketGroup& g : decoded) {
      const uint64_t rest = g.rest;
      groups.emplace_hint(groups.end(), rest, std::move(g));
    }
  }
  for (std::string_view op : operands) {
    if (op.empty()) return false;
    const auto tag = static_cast<uint8_t>(op[0]);
    if (IsAddFragment(op)) {
      if (IsError(DecodeGroups(op, &decoded))) return false;
      for (BucketGroup& add : decoded) {
        BucketGroup& g = groups[add.rest];
        g.rest = add.rest;
        g.beyond_cap = SaturatingAdd(g.beyond_cap, add.beyond_cap);
        auto& ps = g.postings;
        const auto& in = add.postings;
        for (size_t i = 0; i < in.size();) {
          size_t j = i + 1;
          while (j < in.size() && in[j].doc_id == in[i].doc_id) ++j;
          const DocId doc = in[i].doc_id;
          auto lo = std::lower_bound(ps.begin(), ps.end(), doc,
                                     [](const Posting& p, DocId d) { return p.doc_id < d; });
          if (lo == ps.end() || lo->doc_id != doc) {  // else already listed: a replayed add
            if (max_postings == 0 || ps.size() + (j - i) <= max_postings) {
              ps.insert(lo, in.begin() + static_cast<std::ptrdiff_t>(i),
                        in.begin() + static_cast<std::ptrdiff_t>(j));
            } else {
              g.beyond_cap = SaturatingAdd(g.beyond_cap, 1);
            }
          }
          i = j;
        }
        if (g.postings.empty() && g.beyond_cap == 0) groups.erase(add.rest);
      }
    } else if (tag == kBucketRemove) {
      op.remove_prefix(1);
      uint64_t doc, count;
      if (!GetVarint64(&op, &doc) || doc == 0 || doc > kMaxId || !GetVarint64(&op, &count) ||
          count > op.size()) {
        return false;
      }
      uint64_t rest = 0;
      for (uint64_t k = 0; k < count; ++k) {
        uint64_t delta;
        if (!GetVarint64(&op, &delta) || (k > 0 && delta == 0) || delta > kMaxId - rest) {
          return false;
        }
        rest += delta;
        auto it = groups.find(rest);
        if (it == groups.end()) continue;
        auto& ps = it->second.postings;
        auto lo = std::lower_bound(ps.begin(), ps.end(), doc,
                                   [](const Posting& p, DocId d) { return p.doc_id < d; });
        auto hi = lo;
        while (hi != ps.end() && hi->doc_id == doc) ++hi;
        if (lo != hi) {
          ps.erase(lo, hi);
        } else if (it->second.beyond_cap > 0) {
          --it->second.beyond_cap;  // counted, not listed
        }
        if (ps.empty() && it->second.beyond_cap == 0) groups.erase(it);
      }
      if (!op.empty()) return false;
    } else {
      return false;
    }
  }
  decoded.clear();
  decoded.reserve(groups.size());
  for (auto& [rest, g] : groups) decoded.push_back(std::move(g));
  *out = EncodeBucket(decoded);
  return true;
}

bool CombineAddFragments(std::span<const std::string_view> operands, std::string* out) {
  // Adds only, none capped: what MergeBucket makes of them without a value, through the
  // same flat merge (a flush of several memtables runs this for nearly every bucket key it
  // writes, so the map of groups the reference merge builds cost it an allocation a group).
  for (std::string_view op : operands) {
    if (!IsAddFragment(op)) return false;
  }
  return MergeFiltered(std::nullopt, operands, RestFilter(), /*max_postings=*/0, out);
}

}  // namespace cops::bucket_codec
