#include "core/verify.h"

#include <algorithm>
#include <bit>

#include "absl/cleanup/cleanup.h"
#include "core/scratch.h"

namespace cops {

void TestGrams::Build(std::span<const uint32_t> grams, std::span<const Exclusion> excluded) {
  size_ = static_cast<uint32_t>(grams.size());
  counted_ = size_;
  excluded_.clear();
  if (std::any_of(excluded.begin(), excluded.end(),
                  [](Exclusion e) { return e != Exclusion::kNone; })) {
    excluded_.assign(excluded.begin(), excluded.end());
    excluded_.resize(grams.size(), Exclusion::kNone);
    counted_ =
        static_cast<uint32_t>(std::count(excluded_.begin(), excluded_.end(), Exclusion::kNone));
  }
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, 2 * grams.size()));
  slots_.assign(capacity, Entry{});
  mask_ = capacity - 1;
  // No sort: each gram's count, then its first index into positions_, then its positions in
  // test order (so increasing), two probes per gram.
  auto slot_of = [this](uint32_t gram) -> Entry& {
    size_t slot = gram & mask_;
    while (slots_[slot].first != kEmpty && slots_[slot].gram != gram) slot = (slot + 1) & mask_;
    return slots_[slot];
  };
  for (uint32_t i = 0; i < size_; ++i) {
    Entry& e = slot_of(grams[i]);
    if (e.first == kEmpty) {
      e.gram = grams[i];
      e.first = 0;
    }
    ++e.count;
  }
  uint32_t next = 0;
  for (Entry& e : slots_) {
    if (e.first == kEmpty) continue;
    e.first = next;
    next += e.count;
    e.count = 0;
  }
  positions_.resize(size_);
  for (uint32_t i = 0; i < size_; ++i) {
    Entry& e = slot_of(grams[i]);
    positions_[e.first + e.count++] = i;
  }
}

namespace {

std::vector<uint64_t>& PairScratch() {
  thread_local std::vector<uint64_t> pairs;
  return pairs;
}

// Registered positions chained into kept passages; the open passage's from `open_from` on.
std::vector<uint32_t>& ChainScratch() {
  thread_local std::vector<uint32_t> chained;
  return chained;
}
std::vector<uint32_t>& OpenPassageScratch() {
  thread_local std::vector<uint32_t> tests;
  return tests;
}

}  // namespace

void Verify(const TestGrams& test, std::span<const uint32_t> registered,
            const VerifyOptions& options, Verification* out) {
  out->test_grams = test.counted();
  out->registered_grams = static_cast<uint32_t>(registered.size());
  out->matched_test_grams = 0;
  out->matched_registered_grams = 0;
  out->shared_test_grams = 0;
  out->shared_registered_grams = 0;
  out->longest_passage = 0;
  out->passages.clear();

  // Every (test position, registered position) of equal grams, ordered by test position.
  std::vector<uint64_t>& pairs = PairScratch();
  pairs.clear();
  absl::Cleanup trim = [&pairs] {
    ReleaseIfLarge(&pairs);
    ReleaseIfLarge(&ChainScratch());
    ReleaseIfLarge(&OpenPassageScratch());
  };
  for (uint32_t p = 0; p < registered.size(); ++p) {
    const size_t before = pairs.size();
    test.ForEach(registered[p], [&](uint32_t i) { pairs.push_back(uint64_t{i} << 32 | p); });
    out->shared_registered_grams += pairs.size() != before;
  }
  if (pairs.empty()) return;
  std::sort(pairs.begin(), pairs.end());

  // Greedy chaining in test order: a matched test gram extends the open passage with the
  // first registered position that moves forward by at most max_gap_grams + 1, otherwise
  // it opens a new passage at its first registered position.
  const uint64_t step = uint64_t{options.max_gap_grams} + 1;
  bool open = false;
  Passage cur;
  uint32_t last_test = 0, last_registered = 0;
  std::vector<uint32_t>& chained = ChainScratch();
  chained.clear();
  size_t open_from = 0;
  // Test positions of the open passage's grams (its registered ones: chained[open_from...]).
  std::vector<uint32_t>& tests = OpenPassageScratch();
  // A gram is 16 bits: a gram of the new text next to a copied passage equals one of the
  // source's, in step with the passage, now and then (seen about once in 500 copied
  // paragraphs), and carried the passage's span into the new text. Where a passage ends on
  // a lone gram a gap away from a run of adjacent grams (a verbatim copy, where chance is the
  // likelier cause), its bounds stop at the run; the gram still counts (dropping it cost
  // heavy revisions near the threshold their decision). A heavily revised passage, lone
  // grams only, keeps its bounds.
  const auto adjacent = [&](size_t a) {  // the open passage's grams a and a + 1
    return tests[a] + 1 == tests[a + 1] && chained[open_from + a] + 1 == chained[open_from + a + 1];
  };
  // Words the bounds [b, e) of grams cover: a shown span is never shorter than a passage
  // must be to count.
  const auto long_bounds = [&](uint32_t b, uint32_t e) {
    return e - 1 + options.gram_units - b >= options.min_passage_units;
  };
  auto trim_ends = [&] {
    const size_t n = tests.size();
    if (n < 3) return;
    if (!adjacent(0) && adjacent(1) && long_bounds(tests[1], cur.test_end)) {
      cur.test_begin = tests[1];
      cur.registered_begin = chained[open_from + 1];
    }
    if (!adjacent(n - 2) && adjacent(n - 3) && long_bounds(cur.test_begin, tests[n - 2] + 1)) {
      cur.test_end = tests[n - 2] + 1;
      cur.registered_end = chained[open_from + n - 2] + 1;
    }
  };
  auto close = [&] {
    if (!open) return;
    open = false;
    trim_ends();
    const bool long_enough =
        cur.matched >= options.min_passage_grams && cur.units >= options.min_passage_units;
    if (cur.excluded == Exclusion::kNone && long_enough &&
        cur.test_end - cur.test_begin < options.min_counted_passage_grams) {
      cur.excluded = Exclusion::kShortMatch;
    }
    if (long_enough) out->passages.push_back(cur);
    if (cur.excluded != Exclusion::kNone || !long_enough) {
      chained.resize(open_from);  // its registered grams do not count
    } else {
      out->matched_test_grams += cur.matched;
    }
    if (cur.excluded == Exclusion::kNone && long_enough) {
      out->longest_passage = std::max(out->longest_passage, cur.matched);
    }
  };
  for (size_t g = 0; g < pairs.size();) {
    const uint32_t i = static_cast<uint32_t>(pairs[g] >> 32);
    size_t end = g;
    while (end < pairs.size() && static_cast<uint32_t>(pairs[end] >> 32) == i) ++end;
    ++out->shared_test_grams;
    // A passage holds test grams of one exclusion: it breaks where the reason changes.
    const Exclusion excluded = test.excluded(i);
    if (open && excluded != cur.excluded) close();
    bool extended = false;
    if (open && i - last_test <= step) {
      for (size_t j = g; j < end; ++j) {
        const uint32_t p = static_cast<uint32_t>(pairs[j]);
        const uint32_t dp = p - last_registered, di = i - last_test;
        if (p > last_registered && dp <= step &&
            (dp > di ? dp - di : di - dp) <= options.max_skew_grams) {
          cur.test_end = i + 1;
          cur.registered_end = p + 1;  // positions rise along a passage
          ++cur.matched;
          cur.units += std::min(i - last_test, options.gram_units);
          chained.push_back(p);
          tests.push_back(i);
          last_test = i;
          last_registered = p;
          extended = true;
          break;
        }
      }
    }
    if (!extended) {
      close();
      const uint32_t p = static_cast<uint32_t>(pairs[g]);
      cur = Passage{i, i + 1, p, p + 1, 1, options.gram_units, excluded};
      open_from = chained.size();
      chained.push_back(p);
      tests.assign(1, i);
      open = true;
      last_test = i;
      last_registered = p;
    }
    g = end;
  }
  close();

  // Registered grams chained into reported passages, each position once (a repeated
  // test passage may chain the same registered grams twice).
  std::vector<uint32_t>& reg = ChainScratch();
  std::sort(reg.begin(), reg.end());
  out->matched_registered_grams =
      static_cast<uint32_t>(std::unique(reg.begin(), reg.end()) - reg.begin());
}

void LongestSharedChain(const TestGrams& test, std::span<const uint32_t> registered,
                        absl::FunctionRef<bool(uint32_t)> eligible,
                        std::vector<std::pair<uint32_t, uint32_t>>* members) {
  // Every (test position, registered position) of equal grams, by test position, and within
  // one by registered position descending: a chain strictly rising in both then takes at
  // most one registered position per test gram.
  std::vector<uint64_t>& pairs = PairScratch();
  pairs.clear();
  // Patience sorting: tails[n] is the smallest last registered position of a chain of n + 1.
  std::vector<uint32_t>& tails = ChainScratch();
  tails.clear();
  // The pair ending each tail, and each pair's predecessor in its chain.
  thread_local std::vector<uint32_t> tail_pair, previous;
  tail_pair.clear();
  absl::Cleanup trim = [&pairs, &tails] {
    ReleaseIfLarge(&pairs);
    ReleaseIfLarge(&tails);
    ReleaseIfLarge(&tail_pair);
    ReleaseIfLarge(&previous);
  };
  for (uint32_t p = 0; p < registered.size(); ++p) {
    test.ForEach(registered[p], [&](uint32_t i) {
      if (test.excluded(i) == Exclusion::kNone) pairs.push_back(uint64_t{i} << 32 | ~p);
    });
  }
  std::sort(pairs.begin(), pairs.end());
  previous.assign(pairs.size(), UINT32_MAX);
  uint32_t last_test = UINT32_MAX;
  bool last_eligible = false;
  for (uint32_t k = 0; k < pairs.size(); ++k) {
    const uint64_t pair = pairs[k];
    const auto i = static_cast<uint32_t>(pair >> 32);
    if (i != last_test) {
      last_test = i;
      last_eligible = eligible(i);
    }
    if (!last_eligible) continue;
    const uint32_t p = ~static_cast<uint32_t>(pair);
    const auto t = std::lower_bound(tails.begin(), tails.end(), p);
    const auto n = static_cast<size_t>(t - tails.begin());
    if (t == tails.end()) {
      tails.push_back(p);
    } else {
      *t = p;
    }
    if (n == tail_pair.size()) tail_pair.push_back(k);
    tail_pair[n] = k;
    previous[k] = n > 0 ? tail_pair[n - 1] : UINT32_MAX;
  }
  members->clear();
  for (uint32_t k = tail_pair.empty() ? UINT32_MAX : tail_pair.back(); k != UINT32_MAX;
       k = previous[k]) {
    members->emplace_back(static_cast<uint32_t>(pairs[k] >> 32), ~static_cast<uint32_t>(pairs[k]));
  }
  std::reverse(members->begin(), members->end());
}

}  // namespace cops
