#include "core/detect.h"

#include <algorithm>
#include <unordered_map>

#include "core/status_macros.h"

namespace cops {
namespace {

// Per-thread scratch of the pipeline: vectors keep their capacity between checks, up to
// kKeepCapacity elements (a single huge check must not pin its memory to the thread).
struct Scratch {
  std::vector<ChunkHash> hashes;
  std::vector<PostingList> postings;
  std::vector<CandidateRecord> records;
  std::vector<uint32_t> stored;
  std::vector<DocId> ids;
  std::vector<std::vector<uint32_t>> grams;
  TestGrams test_grams;
  Verification verification;
  std::vector<std::vector<Posting>> doc_postings;

  void Trim() {
    constexpr size_t kKeepCapacity = 1 << 16;
    if (hashes.capacity() > kKeepCapacity) std::vector<ChunkHash>().swap(hashes);
    if (postings.capacity() > kKeepCapacity) std::vector<PostingList>().swap(postings);
    if (grams.capacity() > 4096) std::vector<std::vector<uint32_t>>().swap(grams);
    if (test_grams.size() > kKeepCapacity) test_grams = TestGrams();
  }
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Units [begin, end) of the registered chunk with this ordinal; false when the strategy
// does not tell (hashed breakpoints).
bool ChunkUnits(const ChunkingParams& p, uint32_t ordinal, uint32_t* begin, uint32_t* end) {
  switch (p.strategy) {
    case ChunkStrategy::kOverlapping:
      *begin = ordinal;
      *end = ordinal + p.k;
      return true;
    case ChunkStrategy::kNonOverlapping:
      *begin = ordinal * p.k;
      *end = *begin + p.k;
      return true;
    case ChunkStrategy::kOneUnit:
      *begin = ordinal;
      *end = ordinal + 1;
      return true;
    case ChunkStrategy::kHashedBreakpoints:
      return false;
  }
  return false;
}

// Orders, cuts at max_results and sets the violation flag once.
void Finish(const CheckOptions& o, Report* r) {
  std::sort(r->matches.begin(), r->matches.end(),
            [](const DocumentMatch& a, const DocumentMatch& b) {
              if (a.ratio != b.ratio) return a.ratio > b.ratio;
              return a.doc_id < b.doc_id;
            });
  r->violation = std::any_of(r->matches.begin(), r->matches.end(),
                             [](const DocumentMatch& m) { return m.violation; });
  if (o.max_results > 0 && r->matches.size() > o.max_results) r->matches.resize(o.max_results);
  if (!o.want_spans) {
    for (DocumentMatch& m : r->matches) m.spans.clear();
  }
}

// The COPS paper's decision on the sampled chunks alone (indexes without verification).
absl::StatusOr<Report> DetectSampled(const DocumentFingerprint& test,
                                     const CandidateSource& source, const CheckOptions& check,
                                     Scratch& s) {
  CheckOptions tally = check;
  tally.max_results = 0;
  const MatchSet set = MatchSet::Tally(test, s.postings, tally);
  const std::vector<DocId>& ids = set.CandidateIds();
  COPS_RETURN_IF_ERROR(source.ReadCandidates(ids, &s.records));
  s.stored.assign(ids.size(), 0);
  for (size_t i = 0; i < ids.size() && i < s.records.size(); ++i) {
    s.stored[i] = s.records[i].stored_chunks;
  }
  std::unordered_map<DocId, bool> present;
  present.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    present[ids[i]] = i < s.records.size() && s.records[i].present;
  }
  Report r = set.Decide(s.stored);
  std::erase_if(r.matches, [&](const DocumentMatch& m) { return !present[m.doc_id]; });
  Finish(check, &r);
  r.sampling_error = 0;
  if (r.sampled && !r.matches.empty() && check.function == DecisionFunction::kMatchRatio) {
    r.sampling_error = SamplingError(r.considered_chunks, check.threshold, r.matches[0].ratio);
  }
  return r;
}

}  // namespace

FingerprintOptions RegisterFingerprintOptions(const ChunkingParams& params) {
  FingerprintOptions o;
  o.keep_all_chunks_up_to = params.dense_chunks;
  return o;
}

FingerprintOptions CheckFingerprintOptions(const ChunkingParams& params) {
  FingerprintOptions o;
  if (params.verify_k > 0) o.keep_all_chunks_up_to = kShortTestChunks;
  o.unit_spans = params.verify_k > 0;
  return o;
}

absl::StatusOr<Report> Detect(const DocumentFingerprint& test, const ChunkingParams& params,
                              const CandidateSource& source, const DetectOptions& options) {
  Scratch& s = ThreadScratch();
  s.Trim();
  s.hashes.clear();
  for (const Chunk& c : test.chunks) s.hashes.push_back(c.hash);
  COPS_RETURN_IF_ERROR(source.Lookup(s.hashes, &s.postings));
  const CheckOptions& check = options.check;
  if (params.verify_k == 0 || test.grams.empty()) {
    return DetectSampled(test, source, check, s);
  }

  // 1. Candidates: every document sharing a chunk with a short test text (all of whose
  // chunks were looked up); for a longer one, whose lookups are a selection, the documents
  // sharing a passage of min_passage_units, as without verification. Chance matches of
  // single chunks with a long text are many in a large index, and each would cost a read.
  const bool full_lookup = test.chunks.size() == test.total_chunks;
  CheckOptions tally = check;
  tally.max_results = 0;
  tally.want_spans = false;
  tally.threshold = 1;  // candidates by passage, not by the sampled ratio
  if (full_lookup) tally.min_passage_units = 0;
  const MatchSet set = MatchSet::Tally(test, s.postings, tally);
  s.stored.assign(set.CandidateIds().size(), 0);
  Report sampled = set.Decide(s.stored);  // ordered by sampled matches
  if (options.candidates_out != nullptr) {
    options.candidates_out->clear();
    for (const DocumentMatch& m : sampled.matches) options.candidates_out->push_back(m.doc_id);
  }

  // 2. Records of the best candidates; filtered ones give their place to the next.
  const size_t want = options.max_candidates == 0 ? sampled.matches.size()
                                                  : options.max_candidates;
  s.ids.clear();
  for (size_t i = 0; i < sampled.matches.size() && s.ids.size() < 4 * want; ++i) {
    s.ids.push_back(sampled.matches[i].doc_id);
  }
  COPS_RETURN_IF_ERROR(source.ReadCandidates(s.ids, &s.records));
  size_t kept = 0;
  for (size_t i = 0; i < s.ids.size() && kept < want; ++i) {
    if (i < s.records.size() && s.records[i].present) {
      s.ids[kept] = s.ids[i];
      s.records[kept] = s.records[i];
      ++kept;
    }
  }
  s.ids.resize(kept);
  s.records.resize(kept);

  Report r;
  r.total_chunks = test.total_chunks;
  r.selected_chunks = static_cast<uint32_t>(test.chunks.size());
  r.considered_chunks = static_cast<uint32_t>(test.grams.size());
  r.common_chunks_ignored = sampled.common_chunks_ignored;
  r.sampled = test.sampled;
  r.verified = true;
  if (kept == 0) return r;  // a clean check ends here: nothing to read or verify

  // 3. Verification against each candidate's complete grams.
  COPS_RETURN_IF_ERROR(source.ReadGrams(s.ids, &s.grams));
  s.test_grams.Build(test.grams);
  // The candidates' postings hit by the lookup place passages in the registered bytes.
  std::unordered_map<DocId, size_t> slot;
  slot.reserve(kept);
  for (size_t i = 0; i < kept; ++i) slot.emplace(s.ids[i], i);
  if (s.doc_postings.size() < kept) s.doc_postings.resize(kept);
  for (size_t i = 0; i < kept; ++i) s.doc_postings[i].clear();
  if (check.want_spans) {
    for (const PostingList& pl : s.postings) {
      for (const Posting& p : pl.postings) {
        auto it = slot.find(p.doc_id);
        if (it != slot.end()) s.doc_postings[it->second].push_back(p);
      }
    }
  }

  const uint32_t k = params.verify_k;
  const uint32_t n_units = static_cast<uint32_t>(test.units.size());
  for (size_t i = 0; i < kept; ++i) {
    if (i >= s.grams.size() || s.grams[i].empty()) continue;  // nothing stored to verify
    const std::vector<uint32_t>& grams = s.grams[i];
    Verification& v = s.verification;
    Verify(s.test_grams, grams, options.verify, &v);
    DocumentMatch m;
    m.doc_id = s.ids[i];
    m.matched_chunks = v.matched_test_grams;
    m.stored_chunks = v.registered_grams;
    m.ordered_matches = v.longest_passage;
    m.ratio = v.Ratio();
    m.containment = v.Containment();
    m.violation = Passes(check, m);
    uint32_t longest_units = 0;
    std::vector<Posting>& posts = s.doc_postings[i];
    std::sort(posts.begin(), posts.end(),
              [](const Posting& a, const Posting& b) { return a.ordinal < b.ordinal; });
    for (const Passage& p : v.passages) {
      const uint32_t ub = std::min(p.test_begin, n_units ? n_units - 1 : 0);
      const uint32_t ue = std::min(p.test_end - 1 + k, n_units);
      if (n_units == 0 || ue <= ub) continue;
      Span span;
      span.test_start = test.units[ub].start;
      span.test_end = test.units[ue - 1].end;
      span.units = ue - ub;
      span.chunks = p.matched;
      longest_units = std::max(longest_units, span.units);
      // Registered bytes: the stored chunks of this document that the lookup found inside
      // the passage's registered units.
      const uint32_t rb = p.registered_begin, re = p.registered_end - 1 + k;
      span.registered_unit_begin = rb;
      span.registered_unit_end = re;
      for (const Posting& post : posts) {
        uint32_t cb = 0, ce = 0;
        if (!ChunkUnits(params, post.ordinal, &cb, &ce)) break;
        if (cb < rb || ce > re || (post.start == 0 && post.end == 0)) continue;
        if (!span.has_registered) {
          span.has_registered = true;
          span.registered_start = post.start;
          span.registered_end = post.end;
        } else {
          span.registered_start = std::min(span.registered_start, post.start);
          span.registered_end = std::max(span.registered_end, post.end);
        }
      }
      m.spans.push_back(span);
    }
    if (m.violation || longest_units >= check.min_passage_units) r.matches.push_back(std::move(m));
  }
  Finish(check, &r);
  return r;
}

}  // namespace cops
