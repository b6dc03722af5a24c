#ifndef COPS_CORE_VERIFY_H_
#define COPS_CORE_VERIFY_H_

// Verification: the test document's complete grams (DocumentFingerprint::grams) against
// the complete grams of one registered document. The sampled index only *finds* candidate
// documents; this is what measures how much of the test text a candidate holds, and where.
//
// A gram is a keyed hash of verify_k consecutive words. Matching is by equal hash; passages
// are chains of matched grams that advance in both documents, each step skipping at most
// max_gap_grams grams on either side and the two sides advancing alike within
// max_skew_grams (a changed word breaks verify_k grams, so a passage bridges a few edited
// words instead of falling apart into fragments). Grams are 16 bits, so a gram of new text
// next to a copy equals one of the source's now and then: the bounds of a passage ending in
// a verbatim run (adjacent grams) stop at the run, short of a lone matched gram a gap beyond.
//
// Thread-safety: a TestGrams is immutable after Build() and may be shared by threads; each
// Verify() call uses per-thread scratch.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/exclusions.h"

namespace cops {

struct VerifyOptions {
  // Largest run of unmatched grams, in either document, that a passage bridges.
  uint32_t max_gap_grams = 12;
  // Largest difference between the two documents' advances at one step of a passage: a
  // substituted word moves both alike, an inserted or deleted one shifts them by one. A
  // chain of stock phrases that recur all over a text (a licence's "Source Code Form")
  // moves at random and is cut.
  uint32_t max_skew_grams = 3;
  // Passages with fewer matched grams are not reported and count for nothing.
  uint32_t min_passage_grams = 2;
  // Words per gram (the index's verify_k): how many test words a matched gram covers.
  uint32_t gram_units = 3;
  // Passages whose matched grams cover fewer test words than this (Passage::units) are not
  // reported and count for nothing: stock phrases ("the terms and conditions", "and I'm
  // not going to") are a few words long, a copied passage is longer, and a revised one
  // keeps its surviving words in one chain. Detect() sets it to
  // CheckOptions::min_passage_units, the length a report promises. 0 = no minimum.
  uint32_t min_passage_units = 0;
  // Passages spanning fewer test grams than this (test_end - test_begin) are reported with
  // Exclusion::kShortMatch and count for nothing (0 = every passage counts). A passage of
  // g grams covers g + verify_k - 1 words: CheckOptions::min_match_units of n words is
  // n - verify_k + 1 grams.
  uint32_t min_counted_passage_grams = 0;
};

// One passage of matched grams. Gram indices are half-open; gram g covers units
// [g, g + verify_k) of its document.
struct Passage {
  uint32_t test_begin = 0;
  uint32_t test_end = 0;
  uint32_t registered_begin = 0;
  uint32_t registered_end = 0;
  uint32_t matched = 0;  // matched grams chained into the passage
  // Test words inside its matched grams (each gram covers VerifyOptions::gram_units words):
  // the passage's length in words, bridged gaps left out.
  uint32_t units = 0;
  // Why the passage does not count (kNone: it counts). A passage never mixes test grams of
  // different exclusions (TestGrams::Build): the chain breaks where the reason changes.
  Exclusion excluded = Exclusion::kNone;
};

// The ratios count only matched grams chained into passages (of at least
// min_passage_grams, covering at least min_passage_units words) that are not excluded: a revised copy keeps its surviving grams in
// order, a few grams apart, while an unrelated text on the same subject shares stock phrases
// ("in order to", "one of the") scattered without order. The raw counts are kept for
// reports and tuning.
struct Verification {
  uint32_t test_grams = 0;          // test grams not excluded (TestGrams::counted())
  uint32_t matched_test_grams = 0;  // test grams in reported passages that count
  uint32_t registered_grams = 0;
  uint32_t matched_registered_grams = 0;  // registered grams in reported passages that count
  uint32_t shared_test_grams = 0;         // test grams whose hash the registered text has
  uint32_t shared_registered_grams = 0;   // registered grams whose hash the test text has
  uint32_t longest_passage = 0;           // matched grams of the longest passage that counts
  // Those long enough (min_passage_grams, min_passage_units), in test order, those that do
  // not count included (with the reason).
  std::vector<Passage> passages;

  // Share of the test text found in the registered document (0 when no test grams).
  double Ratio() const {
    return test_grams ? static_cast<double>(matched_test_grams) / test_grams : 0;
  }
  // Share of the registered document found in the test text.
  double Containment() const {
    return registered_grams ? static_cast<double>(matched_registered_grams) / registered_grams
                            : 0;
  }
};

// The test side, built once per check and probed once per registered gram.
class TestGrams {
 public:
  // `excluded` is empty (every gram counts) or parallel to `grams`: why each test gram does
  // not count (kNone: it counts). Excluded grams still match, into passages reported with
  // their reason.
  void Build(std::span<const uint32_t> grams, std::span<const Exclusion> excluded = {});
  uint32_t size() const { return size_; }
  uint32_t counted() const { return counted_; }  // grams not excluded
  Exclusion excluded(uint32_t position) const {
    return excluded_.empty() ? Exclusion::kNone : excluded_[position];
  }
  // Heap bytes its tables hold (their capacity), for scratch trimming (core/scratch.h).
  size_t capacity_bytes() const {
    return slots_.capacity() * sizeof(Entry) + positions_.capacity() * sizeof(uint32_t) +
           excluded_.capacity() * sizeof(Exclusion);
  }
  // A gram repeated more often in the test is matched at its first kMaxRepeats positions
  // only: the pairs a verification looks at stay linear in the texts' lengths, whatever
  // they repeat ("a a a a ..." against "a a a ...").
  static constexpr uint32_t kMaxRepeats = 8;
  // Calls fn(test_position) for the test grams equal to `gram` (at most kMaxRepeats).
  // How many test grams equal `gram` (all of them, not only the first kMaxRepeats).
  uint32_t Count(uint32_t gram) const {
    if (slots_.empty()) return 0;
    for (size_t i = gram & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.first == kEmpty) return 0;
      if (e.gram == gram) return e.count;
    }
  }
  template <typename Fn>
  void ForEach(uint32_t gram, Fn&& fn) const {
    if (slots_.empty()) return;
    for (size_t i = gram & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.first == kEmpty) return;
      if (e.gram == gram) {
        const uint32_t n = e.count < kMaxRepeats ? e.count : kMaxRepeats;
        for (uint32_t j = e.first; j < e.first + n; ++j) fn(positions_[j]);
        return;
      }
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Entry {
    uint32_t gram = 0;
    uint32_t first = kEmpty;  // into positions_
    uint32_t count = 0;
  };
  // Open addressing, at most half full, probed from gram & mask_ (grams are keyed hashes,
  // uniform already).
  std::vector<Entry> slots_;
  std::vector<uint32_t> positions_;  // test positions grouped by gram, increasing
  std::vector<Exclusion> excluded_;  // empty when nothing is excluded
  size_t mask_ = 0;
  uint32_t size_ = 0;
  uint32_t counted_ = 0;
};

// Verifies one registered document's grams against the test's. `out` is overwritten.
void Verify(const TestGrams& test, std::span<const uint32_t> registered,
            const VerifyOptions& options, Verification* out);

// The longest chain of grams matched between the test and `registered` that advances in both
// documents, whatever the gaps (a passage's are bounded), each test and registered gram in it
// once, of the test grams that count (TestGrams::excluded is kNone) and that `eligible`
// accepts (a test gram position): the evidence of CheckOptions::revision_share, and what a
// report shows of a heavy revision. `members` is overwritten with its (test gram, registered
// gram) positions, both ascending (one such chain when several are longest). A person's heavy
// rewrite keeps few runs of 3 words, scattered, but in its source's order; a text on the same
// subject shares as many in any order. O(m log m) for m matched position pairs
// (TestGrams::kMaxRepeats bounds them).
void LongestSharedChain(const TestGrams& test, std::span<const uint32_t> registered,
                        absl::FunctionRef<bool(uint32_t)> eligible,
                        std::vector<std::pair<uint32_t, uint32_t>>* members);

}  // namespace cops

#endif  // COPS_CORE_VERIFY_H_
