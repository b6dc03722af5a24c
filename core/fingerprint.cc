#include "core/fingerprint.h"

#include <openssl/evp.h>

#include <limits>

// Header-only use of libxxhash: inlined, so hashing a unit costs no library call.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/canonicalizer.h"
#include "core/siphash.h"
#include "core/units.h"

namespace cops {
namespace {

// Per-thread buffers reused across calls: the hot path allocates nothing per unit.
struct Scratch {
  CanonicalText canon;
  UnitStream stream;
  std::vector<uint64_t> unit_hashes;  // UnitHash() of every unit, little-endian words
  std::vector<Chunk> chunks;      // all chunks before selection
  std::vector<uint32_t> window;   // winnowing deque (indices into chunks)
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

void DocumentFingerprint::Clear() {
  chunks.clear();
  total_chunks = 0;
  total_units = 0;
  sha256 = {};
  input_bytes = 0;
  canonical_bytes = 0;
  sampled = false;
  unsampled_chunks = 0;
}

// Chunk hashes (normalization version 2). Each unit is hashed once with XXH3 seeded from
// the secret key; a chunk's hash is then a keyed SipHash-2-4 of one 64-bit word, the XXH3
// (seeded too) of the chunk's consecutive unit hashes. Hashing a 5-word shingle thus costs
// one short XXH3 over 40 bytes plus one SipHash block, instead of SipHash over the
// shingle's whole text; every input byte is hashed once, not k times.
//
// Soundness: SipHash-2-4 is a PRF, so the chunk hash is a keyed PRF of the 64-bit inner
// value, and so of the chunk as long as distinct chunks give distinct inner values
// (probability of a clash about 2^-64 per pair, the same as for the 64-bit output itself).
// Whoever lacks the key cannot predict which chunks are selected. Hashed breakpoints
// (strategy D) use the same keyed finalization of a unit's hash, so they stay keyed too.
struct Fingerprinter::Rep {
  ChunkingParams params;
  uint64_t k0;
  uint64_t k1;
  uint64_t unit_seed;   // XXH3 seed of unit texts, derived from the key
  uint64_t chunk_seed;  // XXH3 seed of a chunk's unit-hash sequence, derived from the key

  uint64_t UnitHash(std::string_view s) const {
    return XXH3_64bits_withSeed(s.data(), s.size(), unit_seed);
  }
  // Keyed PRF of the units [b, e), given their UnitHash() values.
  uint64_t ChunkHash(const uint64_t* unit_hashes, uint32_t b, uint32_t e) const {
    const uint64_t inner = XXH3_64bits_withSeed(unit_hashes + b, (e - b) * sizeof(uint64_t),
                                                chunk_seed);
    return internal::SipHash24U64(k0, k1, inner);
  }
  void MakeChunks(const UnitStream& stream, Scratch* scratch) const;
  void Select(const std::vector<Chunk>& all, std::vector<Chunk>* kept, Scratch* scratch) const;
};

void Fingerprinter::Rep::MakeChunks(const UnitStream& s, Scratch* scratch) const {
  std::vector<Chunk>& chunks = scratch->chunks;
  chunks.clear();
  const uint32_t n = static_cast<uint32_t>(s.units.size());
  if (n == 0) return;
  std::vector<uint64_t>& uh = scratch->unit_hashes;
  uh.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t h = UnitHash(s.UnitText(s.units[i]));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    h = __builtin_bswap64(h);  // the chunk hash reads these words as bytes
#endif
    uh[i] = h;
  }
  const uint64_t* hashes = uh.data();
  auto add = [&](uint32_t b, uint32_t e) {
    Chunk c;
    c.hash = ChunkHash(hashes, b, e);
    c.ordinal = static_cast<uint32_t>(chunks.size());
    c.start = s.units[b].input_begin;
    c.end = s.units[e - 1].input_end;
    c.unit_begin = b;
    c.unit_end = e;
    chunks.push_back(c);
  };
  const uint32_t k = params.k;
  switch (params.strategy) {
    case ChunkStrategy::kOneUnit:
      chunks.reserve(n);
      for (uint32_t i = 0; i < n; ++i) add(i, i + 1);
      break;
    case ChunkStrategy::kNonOverlapping:
      chunks.reserve(n / k + 1);
      for (uint32_t i = 0; i < n; i += k) add(i, std::min(n, i + k));
      break;
    case ChunkStrategy::kOverlapping:
      if (n <= k) {
        add(0, n);  // a document shorter than one shingle is one chunk
        break;
      }
      chunks.reserve(n - k + 1);
      for (uint32_t i = 0; i + k <= n; ++i) add(i, i + k);
      break;
    case ChunkStrategy::kHashedBreakpoints: {
      // A unit whose keyed hash is 0 mod k ends a chunk; the hash depends on the unit alone,
      // so breakpoints do not move when text is inserted elsewhere. The unit hash goes
      // through the keyed SipHash finalization: XXH3's seed alone is not a PRF key, and
      // breakpoints are visible in the chunk spans.
      uint32_t begin = 0;
      for (uint32_t i = 0; i < n; ++i) {
        if (internal::SipHash24U64(k0, k1, hashes[i]) % k == 0) {
          add(begin, i + 1);
          begin = i + 1;
        }
      }
      if (begin < n) add(begin, n);
      break;
    }
  }
}

void Fingerprinter::Rep::Select(const std::vector<Chunk>& all, std::vector<Chunk>* kept,
                                Scratch* scratch) const {
  switch (params.selection) {
    case SelectionKind::kAll:
      kept->assign(all.begin(), all.end());
      return;
    case SelectionKind::kModP:
      for (const Chunk& c : all) {
        if (c.hash % params.p == 0) kept->push_back(c);
      }
      return;
    case SelectionKind::kWinnowing:
      break;
  }
  // Robust winnowing (Schleimer, Wilkerson, Aiken 2003): in every window of w consecutive
  // hashes keep the minimum, the rightmost one on ties; record it once. A monotone deque
  // of indices with strictly increasing hashes makes this O(n).
  const uint32_t n = static_cast<uint32_t>(all.size());
  if (n == 0) return;
  const uint32_t w = std::min(params.w, n);  // fewer chunks than w: one window
  std::vector<uint32_t>& dq = scratch->window;
  dq.assign(n, 0);
  uint32_t head = 0, tail = 0;  // dq[head, tail)
  int64_t last = -1;
  for (uint32_t i = 0; i < n; ++i) {
    while (tail > head && all[dq[tail - 1]].hash >= all[i].hash) --tail;
    dq[tail++] = i;
    if (dq[head] + w <= i) ++head;
    if (i + 1 >= w && static_cast<int64_t>(dq[head]) != last) {
      last = dq[head];
      kept->push_back(all[dq[head]]);
    }
  }
}

absl::StatusOr<std::unique_ptr<Fingerprinter>> Fingerprinter::Create(const ChunkingParams& params,
                                                                     const HashKey& key) {
  absl::Status st = params.Validate();
  if (!st.ok()) return st;
  if (params.key_id != key.Id()) {
    return absl::InvalidArgumentError("fingerprinter: params.key_id \"" + params.key_id +
                                      "\" does not name the given key (id " + key.Id() + ")");
  }
  auto rep = std::make_unique<Rep>();
  rep->params = params;
  rep->k0 = key.k0();
  rep->k1 = key.k1();
  // Seeds are keyed PRF outputs of fixed labels: independent of each other and of the
  // SipHash finalization's use of (k0, k1), whose inputs are 8-byte words, not labels.
  constexpr std::string_view kUnitLabel = "cops/v2/unit-seed";
  constexpr std::string_view kChunkLabel = "cops/v2/chunk-seed";
  rep->unit_seed = internal::SipHash24(rep->k0, rep->k1, kUnitLabel.data(), kUnitLabel.size());
  rep->chunk_seed = internal::SipHash24(rep->k0, rep->k1, kChunkLabel.data(), kChunkLabel.size());
  return std::unique_ptr<Fingerprinter>(new Fingerprinter(std::move(rep)));
}

Fingerprinter::Fingerprinter(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Fingerprinter::~Fingerprinter() = default;

const ChunkingParams& Fingerprinter::params() const { return rep_->params; }

absl::Status Fingerprinter::Fingerprint(std::string_view input, DocumentFingerprint* out) const {
  out->Clear();
  if (input.size() >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("document of " + std::to_string(input.size()) +
                                      " bytes: inputs must be smaller than 4 GiB");
  }
  Scratch& scratch = ThreadScratch();
  Canonicalize(input, &scratch.canon);
  BuildUnits(scratch.canon, rep_->params.unit, rep_->params.enhancements, &scratch.stream);
  rep_->MakeChunks(scratch.stream, &scratch);
  rep_->Select(scratch.chunks, &out->chunks, &scratch);
  out->total_chunks = static_cast<uint32_t>(scratch.chunks.size());
  out->total_units = static_cast<uint32_t>(scratch.stream.units.size());
  out->sha256 = Sha256(scratch.canon.text);
  out->input_bytes = input.size();
  out->canonical_bytes = scratch.canon.text.size();
  return absl::OkStatus();
}

}  // namespace cops
