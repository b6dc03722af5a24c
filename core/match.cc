#include "core/match.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/strings.h"

namespace cops {

struct MatchSet::Rep {
  CheckOptions options;
  uint32_t total_chunks = 0;
  uint32_t selected_chunks = 0;
  uint32_t considered_chunks = 0;
  uint32_t common_chunks_ignored = 0;
  bool sampled = false;
  std::vector<DocId> candidate_ids;
  std::vector<DocumentMatch> candidates;      // parallel to candidate_ids; containment unset
  std::vector<uint32_t> registered_matched;   // distinct registered ordinals matched
};

bool IsDecisionFunction(int value) {
  for (const DecisionFunctionInfo& f : kDecisionFunctions) {
    if (static_cast<int>(f.function) == value) return true;
  }
  return false;
}

std::string_view DecisionFunctionName(DecisionFunction f) {
  for (const DecisionFunctionInfo& info : kDecisionFunctions) {
    if (info.function == f) return info.name;
  }
  return "unknown";
}

absl::StatusOr<DecisionFunction> ParseDecisionFunction(std::string_view name) {
  const std::string lower = AsciiLower(name);
  for (const DecisionFunctionInfo& f : kDecisionFunctions) {
    if (lower == f.name || (!f.alias.empty() && lower == f.alias)) return f.function;
  }
  return absl::InvalidArgumentError("unknown decision function '" + std::string(name) + "' (" +
                                    DecisionFunctionNames() + ")");
}

std::string DecisionFunctionNames(std::string_view separator) {
  std::string out;
  for (const DecisionFunctionInfo& f : kDecisionFunctions) {
    if (!out.empty()) out += separator;
    out += f.name;
  }
  return out;
}

absl::Status CheckOptions::Validate() const {
  if (!IsDecisionFunction(static_cast<int>(function))) {
    return absl::InvalidArgumentError("function: unknown decision function " +
                                      std::to_string(static_cast<int>(function)));
  }
  if (!(threshold > 0 && threshold <= 1)) {
    return absl::InvalidArgumentError("threshold: " + std::to_string(threshold) +
                                      " is outside (0, 1]");
  }
  if (min_count < 1) return absl::InvalidArgumentError("min_count: must be >= 1");
  if (!(stem_pair_threshold >= 0 && stem_pair_threshold <= 1)) {
    return absl::InvalidArgumentError("stem_pair_threshold: " +
                                      std::to_string(stem_pair_threshold) +
                                      " is outside [0, 1]");
  }
  if (!(revision_share >= 0 && revision_share <= 1)) {
    return absl::InvalidArgumentError("revision_share: " + std::to_string(revision_share) +
                                      " is outside [0, 1]");
  }
  if (!(revision_spread >= 0 && revision_spread <= 1)) {
    return absl::InvalidArgumentError("revision_spread: " + std::to_string(revision_spread) +
                                      " is outside [0, 1]");
  }
  if (!(revision_trim >= 0 && revision_trim < 0.5)) {
    return absl::InvalidArgumentError("revision_trim: " + std::to_string(revision_trim) +
                                      " is outside [0, 0.5)");
  }
  if (stem_pair_max_documents < 2) {
    return absl::InvalidArgumentError("stem_pair_max_documents: must be >= 2");
  }
  return absl::OkStatus();
}

namespace {

struct Hit {
  uint32_t test_index;  // index into test.chunks
  const Posting* posting;
};

// Longest chain strictly increasing in test ordinal and in registered ordinal, O(m log m).
uint32_t LongestOrderedChain(const DocumentFingerprint& test, std::vector<Hit>& hits) {
  std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    const uint32_t ta = test.chunks[a.test_index].ordinal;
    const uint32_t tb = test.chunks[b.test_index].ordinal;
    if (ta != tb) return ta < tb;
    return a.posting->ordinal > b.posting->ordinal;  // one hit per test chunk in a chain
  });
  std::vector<uint32_t> tails;
  for (const Hit& h : hits) {
    auto it = std::lower_bound(tails.begin(), tails.end(), h.posting->ordinal);
    if (it == tails.end()) {
      tails.push_back(h.posting->ordinal);
    } else {
      *it = h.posting->ordinal;
    }
  }
  return static_cast<uint32_t>(tails.size());
}

// Containment needs the registered document's stored chunk count, known only in Decide().
bool PassesWithoutStored(const CheckOptions& o, const DocumentMatch& m) {
  return o.function != DecisionFunction::kContainment && Passes(o, m);
}

}  // namespace

bool Passes(const CheckOptions& o, const DocumentMatch& m) {
  switch (o.function) {
    case DecisionFunction::kMatchRatio:
      return m.ratio >= o.threshold;
    case DecisionFunction::kContainment:
      return m.containment >= o.threshold;
    case DecisionFunction::kMatchCount:
      return m.matched_chunks >= o.min_count;
    case DecisionFunction::kOrderedMatches:
      return m.ordered_matches >= o.min_count;
  }
  return false;
}

namespace {

// Passages of one registered document: runs of consecutive selected test chunks that all match
// it (chunks ignored as common are transparent; a run also continues over unmatched chunks
// whose units it already covers). Appends them to `spans` when not null; returns the longest
// passage's length in units.
// REQUIRES: hits sorted by test_index.
uint32_t SampledPassages(const DocumentFingerprint& test, const std::vector<Hit>& hits,
                         const std::vector<bool>& common, std::vector<Span>* spans) {
  uint32_t longest_units = 0;
  Span span;
  bool open = false;
  uint32_t unit_begin = 0, unit_end = 0;
  int64_t prev_reg = -1;
  size_t prev_test = 0;
  auto flush = [&]() {
    if (!open) return;
    span.units = unit_end - unit_begin;
    longest_units = std::max(longest_units, span.units);
    if (spans != nullptr) spans->push_back(span);
    open = false;
  };
  size_t h = 0;
  while (h < hits.size()) {
    const uint32_t ti = hits[h].test_index;
    size_t h_end = h;
    while (h_end < hits.size() && hits[h_end].test_index == ti) ++h_end;
    const Chunk& c = test.chunks[ti];
    // Is the run broken by a considered, unmatched test chunk in between?
    if (open) {
      bool gap = false;
      for (size_t j = prev_test + 1; j < ti; ++j) {
        if (!common[j]) {
          gap = true;
          break;
        }
      }
      if (gap && c.unit_begin > unit_end) flush();
    }
    // Registered posting for this chunk: first at/after the previous one, else first.
    const Posting* chosen = hits[h].posting;
    for (size_t j = h; j < h_end; ++j) {
      if (static_cast<int64_t>(hits[j].posting->ordinal) >= prev_reg) {
        chosen = hits[j].posting;
        break;
      }
    }
    if (!open) {
      open = true;
      span = Span();
      span.test_start = c.start;
      span.test_end = c.end;
      span.has_registered = true;
      span.registered_start = chosen->start;
      span.registered_end = chosen->end;
      unit_begin = c.unit_begin;
      unit_end = c.unit_end;
    } else {
      span.test_start = std::min(span.test_start, c.start);
      span.test_end = std::max(span.test_end, c.end);
      span.registered_start = std::min(span.registered_start, chosen->start);
      span.registered_end = std::max(span.registered_end, chosen->end);
      unit_begin = std::min(unit_begin, c.unit_begin);
      unit_end = std::max(unit_end, c.unit_end);
    }
    // Postings without positions (start == end == 0) leave the registered side unknown.
    if (chosen->start == 0 && chosen->end == 0) span.has_registered = false;
    ++span.chunks;
    prev_reg = chosen->ordinal;
    prev_test = ti;
    h = h_end;
  }
  flush();
  return longest_units;
}

// Distinct test chunks and distinct registered ordinals among one document's hits.
// REQUIRES: hits sorted by test_index.
std::pair<uint32_t, uint32_t> DistinctMatched(const std::vector<Hit>& hits) {
  std::vector<uint32_t> reg_ordinals;
  reg_ordinals.reserve(hits.size());
  uint32_t tests = 0;
  for (size_t i = 0; i < hits.size(); ++i) {
    reg_ordinals.push_back(hits[i].posting->ordinal);
    if (i == 0 || hits[i - 1].test_index != hits[i].test_index) ++tests;
  }
  std::sort(reg_ordinals.begin(), reg_ordinals.end());
  const auto registered = static_cast<uint32_t>(
      std::unique(reg_ordinals.begin(), reg_ordinals.end()) - reg_ordinals.begin());
  return {tests, registered};
}

}  // namespace

MatchSet MatchSet::Tally(const DocumentFingerprint& test, std::span<const PostingList> postings,
                         const CheckOptions& options) {
  auto rep = std::make_shared<Rep>();
  rep->options = options;
  rep->total_chunks = test.total_chunks;
  rep->selected_chunks = static_cast<uint32_t>(test.chunks.size());
  rep->sampled = test.sampled;

  // Hits per registered document; chunks above max_doc_frequency are ignored as common.
  const size_t n = std::min(postings.size(), test.chunks.size());
  std::vector<bool> common(n, false);
  std::unordered_map<DocId, std::vector<Hit>> by_doc;
  for (size_t i = 0; i < n; ++i) {
    const PostingList& pl = postings[i];
    if (options.max_doc_frequency > 0 && pl.doc_frequency > options.max_doc_frequency) {
      common[i] = true;
      ++rep->common_chunks_ignored;
      continue;
    }
    ++rep->considered_chunks;
    for (const Posting& p : pl.postings) by_doc[p.doc_id].push_back(Hit{uint32_t(i), &p});
  }

  std::vector<DocId> ids;
  ids.reserve(by_doc.size());
  for (const auto& [id, hits] : by_doc) ids.push_back(id);
  std::sort(ids.begin(), ids.end());

  for (DocId id : ids) {
    std::vector<Hit>& hits = by_doc[id];
    // Postings arrive per test chunk in ordinal order; group by test chunk.
    std::stable_sort(hits.begin(), hits.end(),
                     [](const Hit& a, const Hit& b) { return a.test_index < b.test_index; });
    DocumentMatch m;
    m.doc_id = id;
    const auto [matched_tests, distinct_registered] = DistinctMatched(hits);
    m.matched_chunks = matched_tests;
    m.ratio = rep->considered_chunks == 0
                  ? 0.0
                  : static_cast<double>(m.matched_chunks) / rep->considered_chunks;
    const uint32_t longest_units =
        SampledPassages(test, hits, common, options.want_spans ? &m.spans : nullptr);
    m.ordered_matches = LongestOrderedChain(test, hits);  // reorders hits

    if (longest_units >= options.min_passage_units || PassesWithoutStored(options, m)) {
      rep->candidate_ids.push_back(id);
      rep->candidates.push_back(std::move(m));
      rep->registered_matched.push_back(distinct_registered);
    }
  }
  MatchSet set;
  set.rep_ = std::move(rep);
  return set;
}

const std::vector<DocId>& MatchSet::CandidateIds() const {
  static const std::vector<DocId> kEmpty;
  return rep_ ? rep_->candidate_ids : kEmpty;
}

Report MatchSet::Decide(std::span<const uint32_t> stored_chunks) const {
  Report r;
  if (!rep_) return r;
  const CheckOptions& o = rep_->options;
  r.total_chunks = rep_->total_chunks;
  r.selected_chunks = rep_->selected_chunks;
  r.considered_chunks = rep_->considered_chunks;
  r.common_chunks_ignored = rep_->common_chunks_ignored;
  r.sampled = rep_->sampled;
  r.matches = rep_->candidates;
  for (size_t i = 0; i < r.matches.size(); ++i) {
    DocumentMatch& m = r.matches[i];
    m.stored_chunks = i < stored_chunks.size() ? stored_chunks[i] : 0;
    m.containment = m.stored_chunks == 0
                        ? 0.0
                        : std::min(1.0, static_cast<double>(rep_->registered_matched[i]) /
                                            m.stored_chunks);
    m.violation = o.function == DecisionFunction::kContainment ? m.containment >= o.threshold
                                                               : PassesWithoutStored(o, m);
    r.violation = r.violation || m.violation;
  }
  std::sort(r.matches.begin(), r.matches.end(),
            [](const DocumentMatch& a, const DocumentMatch& b) {
              if (a.ratio != b.ratio) return a.ratio > b.ratio;
              return a.doc_id < b.doc_id;
            });
  if (o.max_results > 0 && r.matches.size() > o.max_results) r.matches.resize(o.max_results);
  if (r.sampled) {
    const double best = r.matches.empty() ? 0.0 : r.matches.front().ratio;
    r.sampling_error = SamplingError(r.considered_chunks, o.threshold, best);
  }
  return r;
}

void SampleChunks(uint32_t n, uint64_t seed, DocumentFingerprint* fp) {
  const size_t size = fp->chunks.size();
  if (n == 0 || n >= size) return;
  // Partial Fisher-Yates over indices with splitmix64: reproducible for a seed everywhere.
  uint64_t state = seed;
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<uint32_t> idx(size);
  std::iota(idx.begin(), idx.end(), 0u);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t j = i + next() % (size - i);
    std::swap(idx[i], idx[j]);
  }
  idx.resize(n);
  std::sort(idx.begin(), idx.end());
  std::vector<Chunk> kept;
  kept.reserve(n);
  for (uint32_t i : idx) kept.push_back(fp->chunks[i]);
  fp->unsampled_chunks = static_cast<uint32_t>(size);
  fp->sampled = true;
  fp->chunks = std::move(kept);
  fp->selection.clear();  // indices into the chunks before sampling
}

double SamplingError(uint32_t n, double threshold, double true_ratio) {
  if (n == 0) return 1.0;
  const double r = std::clamp(true_ratio, 0.0, 1.0);
  // Smallest count that the sampled test accepts.
  const double need_f = std::ceil(threshold * n - 1e-9);
  const uint32_t need = need_f <= 0 ? 0u : static_cast<uint32_t>(need_f);
  // P(X < need) for X ~ Binomial(n, r), summed in log space.
  double below = 0;
  if (r == 0.0) {
    below = need > 0 ? 1.0 : 0.0;
  } else if (r == 1.0) {
    below = need > n ? 1.0 : 0.0;
  } else {
    const double lr = std::log(r), lq = std::log1p(-r);
    const double lgn = std::lgamma(n + 1.0);
    for (uint32_t x = 0; x < need && x <= n; ++x) {
      below += std::exp(lgn - std::lgamma(x + 1.0) - std::lgamma(n - x + 1.0) + x * lr +
                        (n - x) * lq);
    }
    below = std::min(1.0, below);
  }
  return r >= threshold ? below : 1.0 - below;
}

}  // namespace cops
