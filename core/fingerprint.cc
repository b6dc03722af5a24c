#include "core/fingerprint.h"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

// Header-only use of libxxhash: inlined, so hashing a unit costs no library call.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/canonicalizer.h"
#include "core/scratch.h"
#include "core/siphash.h"
#include "core/status_macros.h"
#include "core/stem_pairs.h"
#include "core/stock_phrases.h"
#include "core/units.h"

namespace cops {
namespace {

// A slot of MakeStemPairs' open-addressing table of the distinct words of a text.
struct StemSlot {
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  static constexpr uint32_t kStopWord = kEmpty - 1;
  uint64_t unit_hash = 0;  // the word's UnitHash()
  uint32_t unit = kEmpty;  // a unit holding the word (its text compared on a hash match)
  uint32_t stem = 0;       // index in Scratch::word_stems, or kStopWord
};

// Per-thread buffers reused across calls: the hot path allocates nothing per unit.
struct Scratch {
  CanonicalText canon;
  UnitStream stream;
  std::vector<uint64_t> unit_hashes;  // UnitHash() of every unit
  std::vector<uint64_t> keyed_unit_hashes;  // their keyed finalization (strategy D)
  std::vector<uint64_t> gram_hashes;  // verification grams before truncation
  std::vector<uint64_t> stem_hashes;  // content stems' hashes, then their pairs' folds
  std::string stem;                   // LightStem() output
  std::vector<StemSlot> stem_memo;    // MakeStemPairs: each distinct word's stem, once
  std::vector<uint64_t> word_stems;   // stem hashes of the words stem_memo points to
  std::vector<Chunk> chunks;      // all chunks before selection
  std::vector<uint32_t> selected;  // indices of selected chunks, written without a branch
  std::vector<uint64_t> prefix_hash;  // winnowing: see Select()
  std::vector<uint64_t> suffix_hash;
  std::vector<uint32_t> prefix_min;
  std::vector<uint32_t> suffix_min;

  // Called after each use (core/scratch.h).
  void Trim() {
    const size_t bytes =
        CapacityBytes(canon.text) + CapacityBytes(canon.tokens) + CapacityBytes(stream.storage) +
        CapacityBytes(stream.units) + CapacityBytes(unit_hashes) +
        CapacityBytes(keyed_unit_hashes) + CapacityBytes(gram_hashes) +
        CapacityBytes(stem_hashes) + CapacityBytes(stem_memo) + CapacityBytes(word_stems) +
        CapacityBytes(chunks) +
        CapacityBytes(selected) + CapacityBytes(prefix_hash) + CapacityBytes(suffix_hash) +
        CapacityBytes(prefix_min) + CapacityBytes(suffix_min);
    if (bytes > kScratchSetKeepBytes) {
      Scratch empty;  // swapped, not assigned: a string assigned an empty one keeps its buffer
      std::swap(*this, empty);
      return;
    }
    ReleaseIfLarge(&canon.text);
    ReleaseIfLarge(&canon.tokens);
    ReleaseIfLarge(&stream.storage);
    ReleaseIfLarge(&stream.units);
    stream.text = {};  // may point into a released buffer
    ReleaseIfLarge(&unit_hashes);
    ReleaseIfLarge(&keyed_unit_hashes);
    ReleaseIfLarge(&gram_hashes);
    ReleaseIfLarge(&stem_hashes);
    ReleaseIfLarge(&stem_memo);
    ReleaseIfLarge(&word_stems);
    ReleaseIfLarge(&chunks);
    ReleaseIfLarge(&selected);
    ReleaseIfLarge(&prefix_hash);
    ReleaseIfLarge(&suffix_hash);
    ReleaseIfLarge(&prefix_min);
    ReleaseIfLarge(&suffix_min);
  }
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

void DocumentFingerprint::Clear() {
  chunks.clear();
  selection.clear();
  grams.clear();
  stem_pairs.clear();
  stem_pair_order.clear();
  units.clear();
  stock_runs.clear();
  short_lines.clear();
  total_chunks = 0;
  total_units = 0;
  sha256 = {};
  input_bytes = 0;
  canonical_bytes = 0;
  sampled = false;
  unsampled_chunks = 0;
}

// Chunk hashes (normalization version 2). Each unit is hashed once with XXH3 seeded from
// the secret key; a chunk's hash is then a keyed SipHash-2-4 of one 64-bit word, `inner`,
// that folds the chunk's consecutive unit hashes (and their count) with a multiply-xorshift
// chain. Hashing a 5-word shingle thus costs five multiplies plus one SipHash block,
// instead of SipHash over the shingle's whole text; every input byte is hashed once, not k
// times, and no library call is made per unit or chunk.
//
// Soundness: SipHash-2-4 is a PRF, so the chunk hash is a keyed PRF of `inner`, and so of
// the chunk as long as distinct chunks give distinct inner values. Unit hashes are keyed
// 64-bit values; each fold step is a bijection in the new unit hash for a fixed prefix and
// in the prefix for a fixed unit hash, so a clash between distinct chunks is about as
// likely (~2^-64 per pair) as one of the 64-bit outputs themselves.
// Whoever lacks the key cannot predict which chunks are selected. Hashed breakpoints
// (strategy D) use the same keyed finalization of a unit's hash, so they stay keyed too.
struct Fingerprinter::Rep {
  ChunkingParams params;
  uint64_t k0;
  uint64_t k1;
  uint64_t unit_seed;   // XXH3 seed of unit texts, derived from the key
  uint64_t chunk_seed;  // start of a chunk's fold, derived from the key
  uint64_t gram_seed;   // start of a verification gram's fold, derived from the key
  uint64_t stem_seed;   // start of a stem pair's fold, derived from the key
  uint64_t stock_seed;  // start of a stock phrase's fold, derived from the key
  // The stock phrases' folds (core/stock_phrases.h), open addressing, at most half full, 0 =
  // empty slot; empty when the params' units are not plain words.
  std::vector<uint64_t> stock_table;
  // The UnitHash() of every word of those phrases, the same way: a 4-gram is folded and looked
  // up only where four of them follow each other (about one position in six of prose), since
  // a probe of this smaller table costs less than a fold.
  std::vector<uint64_t> stock_words;
  // The UnitHash() of every stop word (core/units.h), the same way, when the params keep
  // stem pairs: MakeStemPairs() asks IsStopWord() only of a word whose hash is here, which
  // spares the other words (nine in ten of a text's distinct ones) a string hash and set probe.
  std::vector<uint64_t> stop_words;

  void BuildStockTable();
  void BuildStopTable();
  // Open addressing over values != 0 (keyed hashes; 0 is stored as 1).
  static void Insert(uint64_t v, std::vector<uint64_t>* table) {
    if (v == 0) v = 1;
    const size_t mask = table->size() - 1;
    size_t i = v & mask;
    while ((*table)[i] != 0 && (*table)[i] != v) i = (i + 1) & mask;
    (*table)[i] = v;
  }
  static bool Contains(const std::vector<uint64_t>& table, uint64_t v) {
    if (v == 0) v = 1;
    const size_t mask = table.size() - 1;
    for (size_t i = v & mask;; i = (i + 1) & mask) {
      if (table[i] == v) return true;
      if (table[i] == 0) return false;
    }
  }
  void MarkStockRuns(uint32_t units, const uint64_t* unit_hashes, DocumentFingerprint* out) const;

  uint64_t UnitHash(std::string_view s) const {
    return XXH3_64bits_withSeed(s.data(), s.size(), unit_seed);
  }
  // The fold of the units [b, e), given their UnitHash() values; Finalize() makes it the
  // chunk's keyed hash.
  uint64_t Inner(const uint64_t* unit_hashes, uint32_t b, uint32_t e) const {
    return Fold(chunk_seed, unit_hashes, b, e);
  }
  // The fold from `seed`: Inner() for chunks, MakeGrams() for verification grams.
  static uint64_t Fold(uint64_t seed, const uint64_t* unit_hashes, uint32_t b, uint32_t e) {
    uint64_t inner = seed ^ (e - b);  // the count: a chunk is no prefix of another
    for (uint32_t i = b; i < e; ++i) {
      // Odd multiplier (from XXH3's primes): invertible mod 2^64; the xorshift is
      // invertible too and carries high bits down so later multiplies mix them.
      inner = (inner ^ unit_hashes[i]) * 0x9E3779B185EBCA87ULL;
      inner ^= inner >> 29;
    }
    return inner;
  }
  // Replaces every value v[i] by SipHash24U64(k0, k1, v[i]), two at a time: done as a
  // separate pass so the SipHash chains of neighbouring chunks overlap.
  template <typename Get>
  void Finalize(size_t n, Get get) const {
    size_t i = 0;
    for (; i + 2 <= n; i += 2) internal::SipHash24U64x2(k0, k1, &get(i), &get(i + 1));
    if (i < n) get(i) = internal::SipHash24U64(k0, k1, get(i));
  }
  void MakeChunks(const UnitStream& stream, Scratch* scratch) const;
  // Verification grams over the unit hashes MakeChunks() left in scratch->unit_hashes: the
  // same fold from another key-derived seed, finalized by SipHash, truncated.
  void MakeGrams(const UnitStream& stream, bool unit_spans, Scratch* scratch,
                 DocumentFingerprint* out) const;
  // The sampled content-stem pairs of the word units (core/stem_pairs.h).
  // At most `max_pairs` of them with FingerprintOptions::max_stem_pairs (0 = all).
  void MakeStemPairs(const UnitStream& stream, uint32_t max_pairs, Scratch* scratch,
                     DocumentFingerprint* out) const;
  // The indices of the chunks of `all` the selection keeps, ascending, in
  // scratch->selected; returns how many.
  size_t SelectIndices(const std::vector<Chunk>& all, Scratch* scratch) const;
  void Select(const std::vector<Chunk>& all, std::vector<Chunk>* kept, Scratch* scratch) const {
    if (params.selection == SelectionKind::kAll) {
      kept->assign(all.begin(), all.end());
      return;
    }
    const size_t count = SelectIndices(all, scratch);
    kept->reserve(kept->size() + count);
    for (size_t i = 0; i < count; ++i) kept->push_back(all[scratch->selected[i]]);
  }
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
    uh[i] = h;
  }
  const uint64_t* hashes = uh.data();
  auto add = [&](uint32_t b, uint32_t e) {
    Chunk c;
    c.hash = Inner(hashes, b, e);  // finalized below
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
      std::vector<uint64_t>& keyed = scratch->keyed_unit_hashes;
      keyed.assign(uh.begin(), uh.end());
      Finalize(n, [&](size_t i) -> uint64_t& { return keyed[i]; });
      uint32_t begin = 0;
      for (uint32_t i = 0; i < n; ++i) {
        if (keyed[i] % k == 0) {
          add(begin, i + 1);
          begin = i + 1;
        }
      }
      if (begin < n) add(begin, n);
      break;
    }
  }
  Finalize(chunks.size(), [&](size_t i) -> uint64_t& { return chunks[i].hash; });
}

namespace {

// DocumentFingerprint::units: the byte span of every unit in the input.
void FillUnitSpans(const UnitStream& s, DocumentFingerprint* out) {
  out->units.resize(s.units.size());
  for (size_t i = 0; i < s.units.size(); ++i) {
    out->units[i] = {s.units[i].input_begin, s.units[i].input_end};
  }
}

}  // namespace

void Fingerprinter::Rep::MakeGrams(const UnitStream& s, bool unit_spans, Scratch* scratch,
                                  DocumentFingerprint* out) const {
  const uint32_t n = static_cast<uint32_t>(s.units.size());
  if (unit_spans) FillUnitSpans(s, out);
  if (n == 0) return;
  const uint32_t k = std::min(params.verify_k, n);
  const uint32_t grams = n - k + 1;
  std::vector<uint64_t>& folded = scratch->gram_hashes;
  folded.resize(grams);
  const uint64_t* uh = scratch->unit_hashes.data();
  for (uint32_t i = 0; i < grams; ++i) folded[i] = Fold(gram_seed, uh, i, i + k);
  Finalize(grams, [&](size_t i) -> uint64_t& { return folded[i]; });
  out->grams.resize(grams);
  for (uint32_t i = 0; i < grams; ++i) {
    out->grams[i] = static_cast<uint32_t>(folded[i] >> (64 - kVerifyGramBits));
  }
}

void Fingerprinter::Rep::MakeStemPairs(const UnitStream& s, uint32_t max_pairs, Scratch* scratch,
                                       DocumentFingerprint* out) const {
  std::vector<uint64_t>& h = scratch->stem_hashes;
  h.clear();
  // Prose repeats its words: each distinct word is looked up in the stop words, stemmed and
  // hashed once (in a 20 KB text about a third of the words are distinct), which made most
  // of a check's cost of making its pairs (core_bench BM_FingerprintCheck). The table is
  // keyed by the UnitHash() MakeChunks() left in scratch->unit_hashes and compares the
  // words themselves, so the pairs are exactly those of stemming every word.
  const uint32_t n = static_cast<uint32_t>(s.units.size());
  const uint64_t* unit_hashes = scratch->unit_hashes.data();
  std::vector<StemSlot>& memo = scratch->stem_memo;
  const size_t mask = std::bit_ceil(size_t{n} + n / 4 + 1) - 1;  // at most 80% full
  memo.assign(mask + 1, StemSlot{});
  std::vector<uint64_t>& stems = scratch->word_stems;
  stems.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t uh = unit_hashes[i];
    const std::string_view word = s.UnitText(s.units[i]);
    size_t j = uh & mask;
    while (memo[j].unit != StemSlot::kEmpty &&
           (memo[j].unit_hash != uh || s.UnitText(s.units[memo[j].unit]) != word)) {
      j = (j + 1) & mask;
    }
    StemSlot& slot = memo[j];
    if (slot.unit == StemSlot::kEmpty) {
      slot.unit_hash = uh;
      slot.unit = i;
      if (Contains(stop_words, uh) && IsStopWord(word)) {
        slot.stem = StemSlot::kStopWord;
      } else {
        LightStem(word, &scratch->stem);
        slot.stem = static_cast<uint32_t>(stems.size());
        stems.push_back(UnitHash(scratch->stem));
      }
    }
    if (slot.stem != StemSlot::kStopWord) h.push_back(stems[slot.stem]);
  }
  if (h.size() < 2) return;
  // Each pair's fold replaces its first stem's hash (read before it is overwritten).
  const uint32_t pairs = static_cast<uint32_t>(h.size() - 1);
  for (uint32_t i = 0; i < pairs; ++i) h[i] = Fold(stem_seed, h.data(), i, i + 2);
  h.resize(pairs);
  const uint64_t p = params.stem_pairs;
  if (p == 1 && max_pairs > 0 && pairs > max_pairs) {
    // The max_pairs distinct smallest folds, in text order (a fold's high bits are mixed
    // from keyed stem hashes and a keyed seed), before the costly finalization.
    std::vector<uint64_t>& sorted = stems;  // the words' stems are no longer needed
    sorted.assign(h.begin(), h.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted.size() > max_pairs) {
      const uint64_t last = sorted[max_pairs - 1];
      h.erase(std::remove_if(h.begin(), h.end(), [last](uint64_t f) { return f > last; }), h.end());
    }
  }
  Finalize(h.size(), [&](size_t i) -> uint64_t& { return h[i]; });
  // The low bits sample (test and registered texts keep the same pairs), the high bits are
  // stored: independent bits of one keyed hash.
  std::vector<uint32_t>& raw = out->stem_pair_order;  // text order, repeats included
  for (uint64_t v : h) {
    if (v % p == 0) raw.push_back(static_cast<uint32_t>(v >> 32));
  }
  // Sorted and distinct, and each pair at its first position: (pair, position) sorted
  // gives both, then the kept (position, pair) sorted gives the text order back.
  std::vector<uint64_t>& by_pair = h;  // the hashes are no longer needed
  by_pair.clear();
  for (uint32_t i = 0; i < raw.size(); ++i) by_pair.push_back(uint64_t{raw[i]} << 32 | i);
  std::sort(by_pair.begin(), by_pair.end());
  std::vector<uint64_t>& by_position = stems;
  by_position.clear();
  for (uint64_t v : by_pair) {
    const auto pair = static_cast<uint32_t>(v >> 32);
    if (!out->stem_pairs.empty() && out->stem_pairs.back() == pair) continue;
    out->stem_pairs.push_back(pair);
    by_position.push_back((v & 0xffffffffu) << 32 | pair);
  }
  std::sort(by_position.begin(), by_position.end());
  raw.clear();
  for (uint64_t v : by_position) raw.push_back(static_cast<uint32_t>(v));
}

void Fingerprinter::Rep::BuildStopTable() {
  if (params.stem_pairs == 0) return;
  const std::vector<std::string>& words = CanonicalStopWords();
  stop_words.assign(std::bit_ceil(words.size() * 2), 0);
  for (const std::string& w : words) Insert(UnitHash(w), &stop_words);
}

void Fingerprinter::Rep::BuildStockTable() {
  const Enhancements& e = params.enhancements;
  if (params.unit != UnitKind::kWord || params.verify_k == 0 || e.drop_numbers ||
      e.min_word_chars != 0 || e.drop_stop_words) {
    return;
  }
  const auto& phrases = CanonicalStockPhrases(params.normalization_version);
  if (phrases.empty()) return;
  stock_table.assign(std::bit_ceil(phrases.size() * 2), 0);
  // At most kStockPhraseWords distinct words a phrase: the table stays at most half full.
  stock_words.assign(std::bit_ceil(phrases.size() * kStockPhraseWords * 2), 0);
  for (const auto& words : phrases) {
    std::array<uint64_t, kStockPhraseWords> h;
    for (uint32_t i = 0; i < kStockPhraseWords; ++i) {
      h[i] = UnitHash(words[i]);
      Insert(h[i], &stock_words);
    }
    Insert(Fold(stock_seed, h.data(), 0, kStockPhraseWords), &stock_table);
  }
}

void Fingerprinter::Rep::MarkStockRuns(uint32_t units, const uint64_t* unit_hashes,
                                       DocumentFingerprint* out) const {
  if (stock_table.empty() || units < kStockPhraseWords) return;
  std::vector<UnitRun>& runs = out->stock_runs;
  uint32_t words_in_a_row = 0;  // stock words ending at unit `end - 1`
  for (uint32_t end = 1; end <= units; ++end) {
    words_in_a_row = Contains(stock_words, unit_hashes[end - 1]) ? words_in_a_row + 1 : 0;
    if (words_in_a_row < kStockPhraseWords) continue;
    const uint32_t begin = end - kStockPhraseWords;
    if (!Contains(stock_table, Fold(stock_seed, unit_hashes, begin, end))) continue;
    if (!runs.empty() && runs.back().end >= begin) {
      runs.back().end = end;
    } else {
      runs.push_back({begin, end});
    }
  }
}

size_t Fingerprinter::Rep::SelectIndices(const std::vector<Chunk>& all, Scratch* scratch) const {
  switch (params.selection) {
    case SelectionKind::kAll: {
      std::vector<uint32_t>& sel = scratch->selected;
      sel.resize(all.size());
      std::iota(sel.begin(), sel.end(), 0u);
      return all.size();
    }
    case SelectionKind::kModP: {
      // Every index is stored and the count advances only for kept ones: about 1/p of the
      // chunks are kept at random, so a branch per chunk would mispredict often. The
      // common power-of-two p takes a mask instead of a 64-bit division.
      std::vector<uint32_t>& sel = scratch->selected;
      if (sel.size() < all.size()) sel.resize(all.size());
      size_t count = 0;
      const uint64_t p = params.p;
      const uint32_t n = static_cast<uint32_t>(all.size());
      if ((p & (p - 1)) == 0) {
        for (uint32_t i = 0; i < n; ++i) {
          sel[count] = i;
          count += (all[i].hash & (p - 1)) == 0;
        }
      } else {
        for (uint32_t i = 0; i < n; ++i) {
          sel[count] = i;
          count += all[i].hash % p == 0;
        }
      }
      return count;
    }
    case SelectionKind::kWinnowing:
      break;
  }
  // Robust winnowing (Schleimer, Wilkerson, Aiken 2003): in every window of w consecutive
  // hashes keep the minimum, the rightmost one on ties; record it once. Window minima come
  // from van Herk / Gil-Werman blocks of w chunks: a window [l, i] spans the end of l's
  // block and the start of i's, so its minimum is the better of the block's suffix minimum
  // at l and the next block's prefix minimum at i. Three passes of conditional moves
  // replace a deque whose pops and pushes mispredicted on random hashes.
  const uint32_t n = static_cast<uint32_t>(all.size());
  if (n == 0) return 0;
  const uint32_t w = std::min(params.w, n);  // fewer chunks than w: one window
  std::vector<uint64_t>& pre_hash = scratch->prefix_hash;
  std::vector<uint64_t>& suf_hash = scratch->suffix_hash;
  std::vector<uint32_t>& pre = scratch->prefix_min;
  std::vector<uint32_t>& suf = scratch->suffix_min;
  std::vector<uint32_t>& sel = scratch->selected;
  if (pre.size() < n) {
    pre_hash.resize(n);
    suf_hash.resize(n);
    pre.resize(n);
    suf.resize(n);
  }
  if (sel.size() < n) sel.resize(n);
  for (uint32_t b = 0; b < n; b += w) {
    const uint32_t e = std::min(n, b + w);
    // Prefix minima, rightmost on ties: a later equal hash wins.
    uint64_t mv = all[b].hash;
    uint32_t mi = b;
    for (uint32_t i = b; i < e; ++i) {
      const uint64_t h = all[i].hash;
      const bool take = h <= mv;
      mv = take ? h : mv;
      mi = take ? i : mi;
      pre_hash[i] = mv;
      pre[i] = mi;
    }
    // Suffix minima, rightmost on ties: an earlier equal hash loses.
    mv = all[e - 1].hash;
    mi = e - 1;
    for (uint32_t i = e; i-- > b;) {
      const uint64_t h = all[i].hash;
      const bool take = h < mv;
      mv = take ? h : mv;
      mi = take ? i : mi;
      suf_hash[i] = mv;
      suf[i] = mi;
    }
  }
  size_t count = 0;
  uint32_t last = std::numeric_limits<uint32_t>::max();  // no chunk index is this large
  for (uint32_t i = w - 1; i < n; ++i) {
    const uint32_t l = i + 1 - w;
    const uint32_t min = pre_hash[i] <= suf_hash[l] ? pre[i] : suf[l];
    sel[count] = min;
    count += min != last;
    last = min;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<Fingerprinter>> Fingerprinter::Create(const ChunkingParams& params,
                                                                     const HashKey& key) {
  COPS_RETURN_IF_ERROR(params.Validate());
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
  constexpr std::string_view kGramLabel = "cops/v3/verify-gram-seed";
  rep->gram_seed = internal::SipHash24(rep->k0, rep->k1, kGramLabel.data(), kGramLabel.size());
  constexpr std::string_view kStemLabel = "cops/v1/stem-pair-seed";
  rep->stem_seed = internal::SipHash24(rep->k0, rep->k1, kStemLabel.data(), kStemLabel.size());
  constexpr std::string_view kStockLabel = "cops/v1/stock-phrase-seed";
  rep->stock_seed = internal::SipHash24(rep->k0, rep->k1, kStockLabel.data(), kStockLabel.size());
  rep->BuildStockTable();
  rep->BuildStopTable();
  return std::unique_ptr<Fingerprinter>(new Fingerprinter(std::move(rep)));
}

Fingerprinter::Fingerprinter(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Fingerprinter::~Fingerprinter() = default;

const ChunkingParams& Fingerprinter::params() const { return rep_->params; }

namespace {

// DocumentFingerprint::short_lines from the units' spans in `input`: one pass over its
// line breaks and the units (ascending spans).
void MarkShortLines(std::string_view input, DocumentFingerprint* out) {
  const std::vector<UnitSpan>& units = out->units;
  std::vector<UnitRun>& runs = out->short_lines;
  uint32_t line_begin = 0;
  auto close_line = [&](uint32_t end) {  // the line of units [line_begin, end)
    if (end > line_begin && end - line_begin < kShortLineUnits) {
      if (!runs.empty() && runs.back().end == line_begin) {
        runs.back().end = end;
      } else {
        runs.push_back({line_begin, end});
      }
    }
    line_begin = end;
  };
  uint32_t u = 0;
  for (size_t at = 0; at < input.size(); ++at) {
    const void* found = std::memchr(input.data() + at, '\n', input.size() - at);
    if (found == nullptr) break;
    at = static_cast<const char*>(found) - input.data();
    while (u < units.size() && units[u].start < at) ++u;
    close_line(u);
  }
  close_line(static_cast<uint32_t>(units.size()));
}

}  // namespace

absl::Status Fingerprinter::Fingerprint(std::string_view input, DocumentFingerprint* out,
                                        const FingerprintOptions& options) const {
  out->Clear();
  if (input.size() >= std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("document of " + std::to_string(input.size()) +
                                      " bytes: inputs must be smaller than 4 GiB");
  }
  Scratch& scratch = ThreadScratch();
  Canonicalize(input, &scratch.canon, rep_->params.normalization_version);
  BuildUnits(scratch.canon, rep_->params.unit, rep_->params.enhancements, &scratch.stream);
  if (options.units_only) {
    FillUnitSpans(scratch.stream, out);
  } else {
    rep_->MakeChunks(scratch.stream, &scratch);
    if (scratch.chunks.size() <= options.keep_all_chunks_up_to) {
      out->chunks.assign(scratch.chunks.begin(), scratch.chunks.end());
      if (options.mark_selection) {
        const size_t count = rep_->SelectIndices(scratch.chunks, &scratch);
        out->selection.assign(scratch.selected.begin(), scratch.selected.begin() + count);
      }
    } else {
      rep_->Select(scratch.chunks, &out->chunks, &scratch);
    }
    if (rep_->params.verify_k > 0) {
      rep_->MakeGrams(scratch.stream, options.unit_spans, &scratch, out);
    }
    if (rep_->params.stem_pairs > 0) {
      rep_->MakeStemPairs(scratch.stream, options.max_stem_pairs, &scratch, out);
    }
    if (options.stock_phrases) {
      rep_->MarkStockRuns(static_cast<uint32_t>(scratch.stream.units.size()),
                          scratch.unit_hashes.data(), out);
    }
    if (options.short_lines && options.unit_spans) MarkShortLines(input, out);
    out->total_chunks = static_cast<uint32_t>(scratch.chunks.size());
  }
  out->total_units = static_cast<uint32_t>(scratch.stream.units.size());
  if (options.content_digest) out->sha256 = Sha256(scratch.canon.text);
  out->input_bytes = input.size();
  out->canonical_bytes = scratch.canon.text.size();
  scratch.Trim();
  return absl::OkStatus();
}

}  // namespace cops
