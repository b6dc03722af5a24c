#include "core/detect.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "absl/cleanup/cleanup.h"
#include "core/scratch.h"
#include "core/status_macros.h"

namespace cops {
namespace {

// Test units [begin, end).
struct UnitRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

// A looked-up test chunk found in some registered document: its test units and how many
// registered documents hold it.
struct FoundChunk {
  uint32_t unit_begin = 0;
  uint32_t unit_end = 0;
  // Registered texts holding it: its documents, the candidates holding one text (registered
  // more than once) counted once when the count may change (CollectFoundChunks).
  uint32_t doc_frequency = 0;
  DocId holder = 0;  // when doc_frequency is 1: a registered document holding it
};

// Per-thread scratch of the pipeline: vectors keep their capacity between checks, up to
// kScratchKeepBytes each, nested lists counted (core/scratch.h): a single huge check must not
// pin its memory to the thread.
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
  std::vector<Exclusion> unit_excluded;
  std::vector<Exclusion> gram_excluded;
  std::vector<UnitSpan> spans;     // without verification: the chunks' byte spans
  DocumentFingerprint unexcluded;  // without verification: the chunks not excluded
  // A short test's two lookups (DetectInTwoPhases): the chunks of each pass, the second
  // pass's postings, both merged, and the units the first pass's passages cover.
  DocumentFingerprint view;
  std::vector<uint8_t> order;
  std::vector<PostingList> more_postings;
  std::vector<PostingList> merged;
  std::vector<UnitRange> covered;
  std::vector<uint32_t> reach;  // InteriorReach() of `covered`
  std::vector<FoundChunk> found;  // CheckOptions::common_phrase_documents, by unit_begin
  // Per candidate (as ids): a bitmap of the verification grams it holds, built when the
  // common-phrase rule first asks (CandidateVerifier::GramBits); empty until then.
  std::vector<std::vector<uint64_t>> gram_bits;
  // Per test gram, once the common-phrase rule asks (CandidateVerifier::GramHolders): how
  // many candidates hold it (kUncounted until then), and which one when only one does.
  std::vector<uint32_t> gram_holders;
  std::vector<uint32_t> gram_sole_holder;
  std::vector<uint32_t> passage_grams;  // CandidateVerifier::PassageHolders
  // CandidateVerifier::RedundantCandidates, TextsHolding and PassageHolders.
  std::vector<std::pair<DocId, uint64_t>> digests;
  std::vector<uint64_t> texts;
  std::vector<uint64_t> holder_digests;
  std::vector<std::vector<DocId>> pair_holders;  // step 5: LookupStemPairs' answer
  std::vector<std::vector<uint32_t>> pair_orders;  // step 5: ReadStemPairOrder's answer
  std::vector<uint64_t> pair_positions;            // SharedInOrder
  std::vector<uint32_t> chain_tails;               // SharedInOrder
  std::vector<std::pair<uint32_t, uint32_t>> revision_chain;  // AddRevisionEvidence

  // Called after each check.
  void Trim() {
    ReleaseIfLarge(&hashes);
    ReleaseNestedIfLarge(&postings, [](const PostingList& list) {
      return list.postings.capacity() * sizeof(Posting);
    });
    ReleaseIfLarge(&records);
    ReleaseIfLarge(&stored);
    ReleaseIfLarge(&ids);
    ReleaseNestedIfLarge(
        &grams, [](const std::vector<uint32_t>& g) { return g.capacity() * sizeof(uint32_t); });
    if (test_grams.capacity_bytes() > kScratchKeepBytes) test_grams = TestGrams();
    ReleaseIfLarge(&verification.passages);
    ReleaseNestedIfLarge(&doc_postings, [](const std::vector<Posting>& p) {
      return p.capacity() * sizeof(Posting);
    });
    ReleaseIfLarge(&unit_excluded);
    ReleaseNestedIfLarge(&pair_holders,
                         [](const std::vector<DocId>& d) { return d.capacity() * sizeof(DocId); });
    ReleaseNestedIfLarge(&pair_orders, [](const std::vector<uint32_t>& o) {
      return o.capacity() * sizeof(uint32_t);
    });
    ReleaseIfLarge(&pair_positions);
    ReleaseIfLarge(&revision_chain);
    ReleaseIfLarge(&gram_excluded);
    ReleaseIfLarge(&spans);
    ReleaseIfLarge(&view.chunks);
    ReleaseIfLarge(&order);
    ReleaseNestedIfLarge(&more_postings, [](const PostingList& list) {
      return list.postings.capacity() * sizeof(Posting);
    });
    ReleaseNestedIfLarge(&merged, [](const PostingList& list) {
      return list.postings.capacity() * sizeof(Posting);
    });
    ReleaseIfLarge(&covered);
    ReleaseIfLarge(&reach);
    ReleaseIfLarge(&found);
    ReleaseNestedIfLarge(&gram_bits, [](const std::vector<uint64_t>& b) {
      return b.capacity() * sizeof(uint64_t);
    });
    ReleaseIfLarge(&gram_holders);
    ReleaseIfLarge(&gram_sole_holder);
    if (CapacityBytes(unexcluded.chunks) + CapacityBytes(unexcluded.grams) +
            CapacityBytes(unexcluded.units) >
        kScratchKeepBytes) {
      unexcluded = DocumentFingerprint();
    }
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

// Per verification gram: the first exclusion among its units [g, g + k) (all units when the
// text has fewer than k); empty (nothing excluded) when `units` is empty.
void GramExclusions(const std::vector<Exclusion>& units, size_t grams, uint32_t k,
                    std::vector<Exclusion>* out) {
  out->clear();
  if (units.empty()) return;
  out->assign(grams, Exclusion::kNone);
  for (size_t g = 0; g < grams; ++g) {
    const size_t end = std::min(units.size(), g + k);
    for (size_t u = g; u < end; ++u) {
      if (units[u] != Exclusion::kNone) {
        (*out)[g] = units[u];
        break;
      }
    }
  }
}

// The verified figures of one candidate.
DocumentMatch MatchOf(DocId id, const Verification& v, const CheckOptions& check) {
  DocumentMatch m;
  m.doc_id = id;
  m.matched_chunks = v.matched_test_grams;
  m.stored_chunks = v.registered_grams;
  m.ordered_matches = v.longest_passage;
  m.ratio = v.Ratio();
  m.containment = v.Containment();
  m.violation = Passes(check, m);
  if (m.violation && check.min_violation_units > 0 &&
      (check.function == DecisionFunction::kMatchRatio ||
       check.function == DecisionFunction::kContainment)) {
    uint32_t units = 0;
    for (const Passage& p : v.passages) {
      if (p.excluded == Exclusion::kNone) units += p.units;
    }
    m.violation = units >= check.min_violation_units;
  }
  return m;
}

// How many test units a run of rare chunks (held by fewer than common_phrase_documents
// registered documents) must span to show that a passage is not common text. Document
// frequency undercounts a text held by many registered documents where winnowing stored a
// chunk in only some of them, so a licence's grant shows scattered rare chunks; but of
// every run of w + k - 1 words that they all hold, the window's minimum is stored by each
// (the winnowing guarantee) and looked up by the test (its selection), so a run of rare
// chunks that long, with no common one inside, is no such text. Without winnowing every
// registered chunk is stored (all) or none is guaranteed (mod p): one rare chunk shows it.
uint32_t RareRunUnits(const ChunkingParams& p) {
  if (p.selection == SelectionKind::kWinnowing && p.strategy == ChunkStrategy::kOverlapping) {
    return p.w + p.k - 1;
  }
  return 1;
}

// A passage whose chunks that only the candidate holds cover at least this share (percent)
// of its test units, and at least RareRunUnits() of them, is the candidate's own text, not
// common text. A copy of one of several documents made from one template (each sentence's
// fixed words held by all of them, its own words, a document number, recurring every few
// words) has such chunks all through it, though no run of them free of the template's
// common chunks need span RareRunUnits(); a licence or notice copied into other registered
// documents has none, or, in documents long enough to be winnowed, only at its ends, where
// the windows reach the holders' own text. Measured over 64 keys (DetectTest): a copy of
// one of three documents of a template, 28% at least; the Expat licence held by 3-5
// documents, 6% at most.
constexpr uint32_t kOwnTextPercent = 20;

// Whether `units` of a passage of `passage_units` test units are enough to make it the
// candidate's own text (kOwnTextPercent, and at least `rare_run_units`).
bool OwnText(uint32_t units, uint32_t passage_units, uint32_t rare_run_units) {
  return units >= rare_run_units && units * 100 >= kOwnTextPercent * passage_units;
}

constexpr uint32_t kNoGram = UINT32_MAX;

// Appends the spans of v's passages to m (`posts`: the candidate's postings hit by the
// lookup, by ordinal, to place them in the registered bytes); returns the longest in units.
uint32_t AddSpans(const DocumentFingerprint& test, const ChunkingParams& params,
                  const Verification& v, const std::vector<Posting>& posts, DocumentMatch* m) {
  const uint32_t k = params.verify_k;
  const uint32_t n_units = static_cast<uint32_t>(test.units.size());
  uint32_t longest_units = 0;
  for (const Passage& p : v.passages) {
    const uint32_t ub = std::min(p.test_begin, n_units ? n_units - 1 : 0);
    const uint32_t ue = std::min(p.test_end - 1 + k, n_units);
    if (n_units == 0 || ue <= ub) continue;
    Span span;
    span.test_start = test.units[ub].start;
    span.test_end = test.units[ue - 1].end;
    span.units = ue - ub;
    span.chunks = p.matched;
    span.excluded = p.excluded;
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
    m->spans.push_back(span);
  }
  return longest_units;
}

// Orders, cuts at max_results and sets the violation flag once.
void Finish(const CheckOptions& o, Report* r) {
  std::sort(r->matches.begin(), r->matches.end(),
            [](const DocumentMatch& a, const DocumentMatch& b) {
              // Templates after the sources that count, whatever their share.
              if (a.template_source != b.template_source) return b.template_source;
              if (a.ratio != b.ratio) return a.ratio > b.ratio;
              return a.doc_id < b.doc_id;
            });
  r->violation = std::any_of(r->matches.begin(), r->matches.end(),
                             [](const DocumentMatch& m) { return m.violation; });
  if (o.max_results > 0 && r->matches.size() > o.max_results) {
    // A report that says "violation" names its documents, a heavy revision's (ratio ~0)
    // among them.
    std::stable_partition(r->matches.begin(), r->matches.end(),
                          [](const DocumentMatch& m) { return m.violation; });
    r->matches.resize(o.max_results);
  }
  if (!o.want_spans) {
    for (DocumentMatch& m : r->matches) m.spans.clear();
  }
}

// The COPS paper's decision on the sampled chunks alone (indexes without verification).
absl::StatusOr<Report> DetectSampled(const DocumentFingerprint& test, const CandidateSource& source,
                                     const DetectOptions& options, Scratch& s) {
  const CheckOptions& check = options.check;
  CheckOptions tally = check;
  tally.max_results = 0;
  tally.want_spans = check.want_spans || check.min_match_units > 0;  // short spans are marked
  const MatchSet set = MatchSet::Tally(test, s.postings, tally);
  const std::vector<DocId>& ids = set.CandidateIds();
  COPS_RETURN_IF_ERROR(source.ReadCandidates(ids, &s.records));
  s.stored.assign(ids.size(), 0);
  std::unordered_map<DocId, CandidateRecord> records;
  records.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const CandidateRecord record = i < s.records.size() ? s.records[i] : CandidateRecord{};
    s.stored[i] = record.stored_chunks;
    records[ids[i]] = record;
  }
  Report r = set.Decide(s.stored);
  std::erase_if(r.matches, [&](const DocumentMatch& m) { return !records[m.doc_id].present; });
  for (DocumentMatch& m : r.matches) {
    uint32_t short_chunks = 0;
    for (Span& span : m.spans) {
      if (span.units < check.min_match_units) {
        span.excluded = Exclusion::kShortMatch;
        short_chunks += span.chunks;
      }
    }
    if (short_chunks > 0 && m.matched_chunks > 0) {
      // The short spans' chunks count for nothing: the figures shrink in proportion.
      const uint32_t before = m.matched_chunks;
      m.matched_chunks -= std::min(short_chunks, before);
      const double kept = static_cast<double>(m.matched_chunks) / before;
      m.ratio *= kept;
      m.containment *= kept;
      m.ordered_matches = std::min(m.ordered_matches, m.matched_chunks);
      m.violation = Passes(check, m);
    }
    if (records[m.doc_id].template_source) {
      m.template_source = true;
      m.violation = false;
      for (Span& span : m.spans) {
        if (span.excluded == Exclusion::kNone) span.excluded = Exclusion::kTemplate;
      }
    }
  }
  r.excluded = options.excluded;
  Finish(check, &r);
  r.sampling_error = 0;
  if (r.sampled && !r.matches.empty() && check.function == DecisionFunction::kMatchRatio) {
    r.sampling_error = SamplingError(r.considered_chunks, check.threshold, r.matches[0].ratio);
  }
  return r;
}

// Steps 1-2 of a verified check: every document sharing a chunk with a short test text (all
// of whose chunks were looked up) is a candidate; for a longer one, whose lookups are a
// selection, the documents sharing a passage of min_passage_units, as without verification
// (chance matches of single chunks with a long text are many in a large index, and each would
// cost a read). The records of the best candidates are read into s.ids / s.records; filtered
// ones give their place to the next. Returns the chunks ignored as common by the tally.
absl::StatusOr<uint32_t> ReadBestCandidates(const DocumentFingerprint& looked_up,
                                            std::span<const PostingList> postings,
                                            bool full_lookup, const CandidateSource& source,
                                            const DetectOptions& options, Scratch& s) {
  CheckOptions tally = options.check;
  tally.max_results = 0;
  tally.want_spans = false;
  tally.threshold = 1;  // candidates by passage, not by the sampled ratio
  if (full_lookup) tally.min_passage_units = 0;
  const MatchSet set = MatchSet::Tally(looked_up, postings, tally);
  s.stored.assign(set.CandidateIds().size(), 0);
  const Report sampled = set.Decide(s.stored);  // ordered by sampled matches
  if (options.candidates_out != nullptr) {
    options.candidates_out->clear();
    for (const DocumentMatch& m : sampled.matches) options.candidates_out->push_back(m.doc_id);
  }
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
  return sampled.common_chunks_ignored;
}

// Step 3 of a verified check: verifies the candidates read by ReadBestCandidates against
// their complete grams, one at a time, with the test's grams that count.
class CandidateVerifier {
 public:
  // Reads the candidates' grams and prepares what every verification shares.
  static absl::StatusOr<CandidateVerifier> Prepare(const DocumentFingerprint& test,
                                                  const DocumentFingerprint& looked_up,
                                                  std::span<const PostingList> postings,
                                                  const ChunkingParams& params,
                                                  const CandidateSource& source,
                                                  const CheckOptions& check,
                                                  const VerifyOptions& verify_options,
                                                  Scratch& s, std::vector<UnitRange>* covered) {
    CandidateVerifier v(test, params, check, s, covered);
    v.verify_ = verify_options;
    v.verify_.gram_units = v.k_;
    // A passage shorter than the length a report promises neither shows nor counts.
    v.verify_.min_passage_units = check.min_passage_units;
    if (check.min_match_units > v.k_ - 1) {
      v.verify_.min_counted_passage_grams = check.min_match_units - (v.k_ - 1);
    }
    s.test_grams.Build(test.grams, s.gram_excluded);
    COPS_RETURN_IF_ERROR(source.ReadGrams(s.ids, &s.grams));
    if (s.gram_bits.size() < s.ids.size()) s.gram_bits.resize(s.ids.size());
    for (size_t i = 0; i < s.ids.size(); ++i) s.gram_bits[i].clear();
    s.gram_holders.clear();
    v.redundant_ = v.RedundantCandidates();
    v.CollectCandidatePostings(postings);
    v.CollectFoundChunks(looked_up, postings);
    return v;
  }

  // Verifies candidate i: its match, when it passes or shares a passage of
  // min_passage_units (counted or not: an excluded passage is shown as excluded). Its
  // passages are left in s.verification.
  std::optional<DocumentMatch> Verify(size_t i) {
    Verification& v = s_.verification;
    if (i >= s_.grams.size() || s_.grams[i].empty()) {  // nothing stored to verify
      v.passages.clear();
      return std::nullopt;
    }
    cops::Verify(s_.test_grams, s_.grams[i], verify_, &v);
    if (!s_.found.empty()) ExcludeCommonPassages(i, &v);
    if (!test_.stock_runs.empty()) ExcludeStockPassages(&v);
    DocumentMatch m = MatchOf(s_.ids[i], v, check_);
    if (!m.violation) AddRevisionEvidence(i, v, &m);
    std::sort(s_.doc_postings[i].begin(), s_.doc_postings[i].end(),
              [](const Posting& a, const Posting& b) { return a.ordinal < b.ordinal; });
    const uint32_t longest_units = AddSpans(test_, params_, v, s_.doc_postings[i], &m);
    if (m.revision_violation && check_.want_spans) AddRevisionRuns(&m);
    if (!m.violation && longest_units < check_.min_passage_units) return std::nullopt;
    if (covered_ != nullptr) {
      for (const Passage& p : v.passages) {
        const uint32_t ub = std::min(p.test_begin, n_units_ ? n_units_ - 1 : 0);
        const uint32_t ue = std::min(p.test_end - 1 + k_, n_units_);
        if (ub < ue) covered_->push_back({ub, ue});
      }
    }
    return m;
  }

  // CheckOptions::revision_share: candidate i's longest chain of grams in the order of both
  // texts, of the test grams that only i holds among the candidates and that lie in no stock
  // phrase; a violation when it covers revision_share of both texts' grams, spreads over
  // revision_spread of each (but for its revision_trim ends), and its runs hold min_violation_units
  // words. Its runs are matches of k words: none counts where min_match_units says shorter matches
  // do not.
  void AddRevisionEvidence(size_t i, const Verification& v, DocumentMatch* m) {
    const double share = check_.revision_share;
    if (share <= 0 || v.test_grams == 0 || check_.min_match_units > k_) return;
    const auto passes = [&](uint32_t test_side, uint32_t registered_side) {
      return test_side >= check_.revision_min_grams && test_side >= share * v.test_grams &&
             registered_side >= share * v.registered_grams;
    };
    // A chain holds no more grams than either text shares: most candidates stop here.
    if (!passes(v.shared_test_grams, v.shared_registered_grams)) return;
    std::vector<std::pair<uint32_t, uint32_t>>& chain = s_.revision_chain;
    LongestSharedChain(
        s_.test_grams, s_.grams[i], [&](uint32_t g) { return RevisionGram(g); }, &chain);
    m->revision_grams = static_cast<uint32_t>(chain.size());
    if (chain.empty() || !passes(m->revision_grams, m->revision_grams)) return;
    // From its gram at revision_trim of its length to the one at 1 - revision_trim, in each
    // text.
    const size_t trim = static_cast<size_t>(check_.revision_trim * chain.size());
    const auto& first = chain[trim];
    const auto& last = chain[chain.size() - 1 - trim];
    const double test_reach = last.first - first.first + 1.0;
    const double registered_reach = last.second - first.second + 1.0;
    if (test_reach < check_.revision_spread * v.test_grams ||
        registered_reach < check_.revision_spread * v.registered_grams) {
      return;
    }
    if (ChainUnits(chain) < check_.min_violation_units) return;
    m->revision_violation = true;
    m->violation = true;
  }

  // Calls run(a, b) for each run [a, b) of a chain's grams consecutive in both texts.
  template <typename Run>
  static void ForEachRun(const std::vector<std::pair<uint32_t, uint32_t>>& chain, Run run) {
    for (size_t a = 0; a < chain.size();) {
      size_t b = a + 1;
      while (b < chain.size() && chain[b].first == chain[b - 1].first + 1 &&
             chain[b].second == chain[b - 1].second + 1) {
        ++b;
      }
      run(a, b);
      a = b;
    }
  }

  // The test words a chain's runs cover: a run of n grams covers n + k - 1.
  uint32_t ChainUnits(const std::vector<std::pair<uint32_t, uint32_t>>& chain) const {
    uint32_t units = 0;
    ForEachRun(chain, [&](size_t a, size_t b) { units += static_cast<uint32_t>(b - a) + k_ - 1; });
    return units;
  }

  // Whether test gram g may be in a heavy revision's chain: only one candidate holds it, it
  // occurs once in the test (a line the text repeats, a changelog's sign-off, would chain with
  // each of its repeats in the other text), and it is in no stock phrase and on no short line.
  bool RevisionGram(uint32_t g) {
    return GramHolders(g) <= 1 && s_.test_grams.Count(test_.grams[g]) == 1 && !InStockRun(g) &&
           !TouchesShortLine(g);
  }

  // A heavy revision's chain as spans (Span::revision_run), after its passages: each run of
  // consecutive chained grams that no passage holds, in both texts' units. The chain is the
  // one AddRevisionEvidence left in s_.revision_chain for this candidate.
  void AddRevisionRuns(DocumentMatch* m) {
    const std::vector<std::pair<uint32_t, uint32_t>>& chain = s_.revision_chain;
    const size_t passages = m->spans.size();
    ForEachRun(chain, [&](size_t a, size_t b) {
      const uint32_t ub = chain[a].first, ue = std::min(chain[b - 1].first + k_, n_units_);
      const uint32_t rb = chain[a].second, re = chain[b - 1].second + k_;
      if (ub >= ue) return;
      Span run;
      run.test_start = test_.units[ub].start;
      run.test_end = test_.units[ue - 1].end;
      run.units = ue - ub;
      run.registered_unit_begin = rb;
      run.registered_unit_end = re;
      run.revision_run = true;
      const bool in_passage =
          std::any_of(m->spans.begin(), m->spans.begin() + static_cast<ptrdiff_t>(passages),
                      [&](const Span& p) {
                        return p.test_start <= run.test_start && run.test_end <= p.test_end;
                      });
      if (!in_passage) m->spans.push_back(run);
    });
    std::stable_sort(m->spans.begin(), m->spans.end(),
                     [](const Span& x, const Span& y) { return x.test_start < y.test_start; });
  }

  // Whether a unit of test gram g lies on a short line (DocumentFingerprint::short_lines).
  bool TouchesShortLine(uint32_t g) const {
    const std::vector<UnitRun>& runs = test_.short_lines;
    auto it = std::upper_bound(runs.begin(), runs.end(), g + k_ - 1,
                               [](uint32_t u, const UnitRun& r) { return u < r.begin; });
    return it != runs.begin() && std::prev(it)->end > g;
  }

  // Whether test gram g lies inside a run of phrases common in the language
  // (DocumentFingerprint::stock_runs).
  bool InStockRun(uint32_t g) const { return RunHolds(test_.stock_runs, g, g + k_); }

  // Whether one of `runs` (ascending, disjoint) holds all of units [ub, ue): the last one
  // starting at or before ub, the only one that can.
  static bool RunHolds(const std::vector<UnitRun>& runs, uint32_t ub, uint32_t ue) {
    auto it = std::upper_bound(runs.begin(), runs.end(), ub,
                               [](uint32_t u, const UnitRun& r) { return u < r.begin; });
    return it != runs.begin() && std::prev(it)->end >= ue;
  }

  // Marks the passages of v (candidate i's) that count and are common text as
  // Exclusion::kCommonPhrase, and takes them off the matched counts. A passage is common text
  // when other registered documents hold it and it is not the candidate's own:
  // - held: a looked-up chunk fully inside it is held by at least common_phrase_documents
  //   registered documents, or so many candidates (i among them) hold 4 in 5 of the test
  //   grams of it that i holds (PassageHolders: the chunks' document frequency misses a text
  //   that winnowing stores in only some of its holders, as a template's fixed words between
  //   each holder's own names);
  // - not its own: no run of the other looked-up chunks (the rare ones, with no common chunk
  //   between them) spans RareRunUnits() test words that i holds all of, and i's own text
  //   covers under kOwnTextPercent of it: neither the chunks that the postings give to i
  //   alone and no other candidate's grams hold entirely (winnowing stores a template's
  //   chunk in one holder where it is a window's minimum), nor OwnGramUnits.
  void ExcludeCommonPassages(size_t i, Verification* v) {
    const uint32_t common_documents = check_.common_phrase_documents;
    const uint32_t rare_run_units = RareRunUnits(params_);
    const std::vector<FoundChunk>& found = s_.found;
    bool changed = false;
    for (Passage& p : v->passages) {
      if (p.excluded != Exclusion::kNone) continue;
      const uint32_t ub = p.test_begin, ue = p.test_end - 1 + k_;  // its test units
      const auto first = std::lower_bound(
          found.begin(), found.end(), ub,
          [](const FoundChunk& c, uint32_t u) { return c.unit_begin < u; });
      bool common = false, rare = false, in_run = false;
      uint32_t run_begin = 0;
      for (auto it = first; it != found.end() && it->unit_begin < ue && !rare; ++it) {
        if (it->unit_end > ue) continue;
        if (it->doc_frequency >= common_documents) {
          common = true;
          in_run = false;
          continue;
        }
        if (!in_run) run_begin = it->unit_begin;
        in_run = true;
        if (it->unit_end - run_begin < rare_run_units) continue;
        // The winnowing guarantee is about words that every holder has: a run across test
        // words that i lacks (a template's slot, filled with each holder's own name) shows
        // nothing, and starts again after the last gram of them.
        const uint32_t lacked = LastLackedGram(i, run_begin, it->unit_end);
        if (lacked == kNoGram) {
          rare = true;
        } else if (it->unit_begin > lacked) {
          run_begin = it->unit_begin;
          rare = it->unit_end - run_begin >= rare_run_units;
        } else {
          in_run = false;
        }
      }
      if (rare) continue;
      if (!common && PassageHolders(i, p) < common_documents) continue;
      uint32_t own_units = 0, own_end = 0;  // test units covered by chunks that are i's alone
      for (auto it = first; it != found.end() && it->unit_begin < ue; ++it) {
        if (it->unit_end > ue || it->doc_frequency != 1 || !HoldsTextOf(it->holder, i)) continue;
        if (HeldByAnother(i, it->unit_begin, it->unit_end)) continue;
        own_units += it->unit_end - std::clamp(own_end, it->unit_begin, it->unit_end);
        own_end = std::max(own_end, it->unit_end);
      }
      if (OwnText(own_units, ue - ub, rare_run_units)) continue;
      // The chunks looked up are a selection (winnowing's, at registration and in the check),
      // which can all but miss the candidate's own words: in a text made from a template
      // whose shared words repeat, the same few shared chunks are the windows' minima in
      // nearly every sentence under some keys. The grams are every 3-gram of both texts.
      if (OwnText(OwnGramUnits(i, p), ue - ub, rare_run_units)) continue;
      ExcludeAsCommon(&p, v);
      changed = true;
    }
    if (changed) RecountLongest(v);
  }

  // Marks the passages of v that count and lie inside a run of phrases common in the
  // language (DocumentFingerprint::stock_runs) as Exclusion::kCommonPhrase: "at the same
  // time as the rest of the world" shared by two texts is no copy, whoever else holds it.
  void ExcludeStockPassages(Verification* v) {
    const std::vector<UnitRun>& runs = test_.stock_runs;
    bool changed = false;
    for (Passage& p : v->passages) {
      if (p.excluded != Exclusion::kNone) continue;
      if (!RunHolds(runs, p.test_begin, p.test_end - 1 + k_)) continue;  // its test units
      ExcludeAsCommon(&p, v);
      changed = true;
    }
    if (changed) RecountLongest(v);
  }

  static void ExcludeAsCommon(Passage* p, Verification* v) {
    p->excluded = Exclusion::kCommonPhrase;
    v->matched_test_grams -= std::min(v->matched_test_grams, p->matched);
    // Registered grams are counted once per position; a passage chains each at most once.
    v->matched_registered_grams -= std::min(v->matched_registered_grams, p->matched);
  }

  static void RecountLongest(Verification* v) {
    v->longest_passage = 0;
    for (const Passage& p : v->passages) {
      if (p.excluded == Exclusion::kNone) {
        v->longest_passage = std::max(v->longest_passage, p.matched);
      }
    }
  }

  // Template documents first: their counted passages become excluded test text for every
  // other candidate; their matches are reported as templates, never as violations.
  void VerifyTemplates(Report* r) {
    bool templates_excluded = false;
    for (size_t i = 0; i < s_.ids.size(); ++i) {
      if (!s_.records[i].template_source) continue;
      std::optional<DocumentMatch> m = Verify(i);
      for (const Passage& p : s_.verification.passages) {
        if (p.excluded != Exclusion::kNone || n_units_ == 0) continue;
        const uint32_t ub = std::min(p.test_begin, n_units_ - 1);
        const uint32_t ue = std::min(p.test_end - 1 + k_, n_units_);
        if (s_.unit_excluded.empty()) s_.unit_excluded.assign(n_units_, Exclusion::kNone);
        for (uint32_t u = ub; u < ue; ++u) {
          if (s_.unit_excluded[u] == Exclusion::kNone) s_.unit_excluded[u] = Exclusion::kTemplate;
        }
        if (ub < ue) {
          r->excluded.push_back(
              {test_.units[ub].start, test_.units[ue - 1].end, Exclusion::kTemplate});
        }
        templates_excluded = true;
      }
      if (!m) continue;
      m->template_source = true;
      m->violation = false;
      m->revision_violation = false;
      for (Span& span : m->spans) {
        if (span.excluded == Exclusion::kNone) span.excluded = Exclusion::kTemplate;
      }
      r->matches.push_back(*std::move(m));
    }
    if (templates_excluded) {
      NormalizeRanges(&r->excluded);
      GramExclusions(s_.unit_excluded, test_.grams.size(), k_, &s_.gram_excluded);
      s_.test_grams.Build(test_.grams, s_.gram_excluded);
      r->considered_chunks = s_.test_grams.counted();
    }
  }

  // The other candidates, after the templates.
  void VerifySources(Report* r) {
    for (size_t i = 0; i < s_.ids.size(); ++i) {
      if (s_.records[i].template_source) continue;
      if (std::optional<DocumentMatch> m = Verify(i)) r->matches.push_back(*std::move(m));
    }
  }

 private:
  // The verification grams candidate i holds, as a bitmap over the gram space (8 KiB), built
  // on first use.
  const std::vector<uint64_t>& GramBits(size_t i) {
    std::vector<uint64_t>& bits = s_.gram_bits[i];
    if (bits.empty()) {
      bits.assign((size_t{1} << kVerifyGramBits) / 64, 0);
      for (const uint32_t g : s_.grams[i]) {
        const uint32_t b = g & kVerifyGramMask;
        bits[b / 64] |= uint64_t{1} << (b % 64);
      }
    }
    return bits;
  }
  static bool Holds(const std::vector<uint64_t>& bits, uint32_t gram) {
    const uint32_t b = gram & kVerifyGramMask;
    return (bits[b / 64] >> (b % 64)) & 1;
  }

  static constexpr uint32_t kUncounted = UINT32_MAX;
  // How many texts among the candidates hold test gram g (candidates with the same text
  // count once), and s_.gram_sole_holder[g], the candidate when one does; counted once per
  // check, on first use.
  uint32_t GramHolders(uint32_t g) {
    if (s_.gram_holders.empty()) {
      s_.gram_holders.assign(test_.grams.size(), kUncounted);
      s_.gram_sole_holder.resize(test_.grams.size());
    }
    uint32_t& holders = s_.gram_holders[g];
    if (holders == kUncounted) {
      holders = 0;
      s_.holder_digests.clear();
      for (size_t j = 0; j < s_.ids.size() && j < s_.grams.size(); ++j) {
        if (s_.grams[j].empty() || !Holds(GramBits(j), test_.grams[g])) continue;
        if (redundant_ > 0 && !NewText(Digest(j))) continue;
        ++holders;
        s_.gram_sole_holder[g] = static_cast<uint32_t>(j);
      }
    }
    return holders;
  }

  // The test units of passage p (of candidate i) covered by test grams that candidate i holds
  // and no other candidate does. 0 when the grams cannot tell: unless half the passage's grams
  // are held by common_phrase_documents candidates, the others holding its common text were
  // not read (a 16-bit gram is held by chance by a candidate of n grams with odds n / 2^16,
  // which only lowers what is counted as own).
  uint32_t OwnGramUnits(size_t i, const Passage& p) {
    const uint32_t gb = std::min<uint32_t>(p.test_begin, test_.grams.size());
    const uint32_t ge = std::min<uint32_t>(p.test_end, test_.grams.size());
    uint32_t common = 0;
    for (uint32_t g = gb; g < ge; ++g) {
      if (GramHolders(g) >= check_.common_phrase_documents) ++common;
    }
    if (gb >= ge || 2 * common < ge - gb) return 0;
    uint32_t own_units = 0, own_end = 0;
    for (uint32_t g = gb; g < ge; ++g) {
      if (s_.gram_holders[g] != 1 || !SameText(s_.gram_sole_holder[g], i)) continue;
      own_units += g + k_ - std::clamp(own_end, g, g + k_);
      own_end = std::max(own_end, g + k_);
    }
    return own_units;
  }

  // How many texts among the candidates, i's among them, hold 4 in 5 of the test grams of
  // passage p that candidate i holds (candidates with the same CandidateRecord::text_digest
  // count once; counting stops at common_phrase_documents). By chance, a candidate of n grams
  // holds each with odds n / 2^16: 4 in 5 of a passage's 6 or more, for a candidate of 5,000
  // words, with odds under 1e-4.
  uint32_t PassageHolders(size_t i, const Passage& p) {
    const uint32_t gb = std::min<uint32_t>(p.test_begin, test_.grams.size());
    const uint32_t ge = std::min<uint32_t>(p.test_end, test_.grams.size());
    const std::vector<uint64_t>& own = GramBits(i);
    s_.passage_grams.clear();
    for (uint32_t g = gb; g < ge; ++g) {
      if (Holds(own, test_.grams[g])) s_.passage_grams.push_back(test_.grams[g]);
    }
    if (s_.passage_grams.empty()) return 1;
    const size_t need = (s_.passage_grams.size() * 4 + 4) / 5;
    s_.holder_digests.assign(1, Digest(i));  // the texts counted, i's first
    uint32_t holders = 1;
    for (size_t j = 0; j < s_.ids.size() && j < s_.grams.size(); ++j) {
      if (holders >= check_.common_phrase_documents) break;
      if (j == i || s_.grams[j].empty() || Counted(Digest(j))) continue;
      const std::vector<uint64_t>& bits = GramBits(j);
      size_t held = 0;
      for (const uint32_t gram : s_.passage_grams) held += Holds(bits, gram);
      if (held < need) continue;
      ++holders;
      s_.holder_digests.push_back(Digest(j));
    }
    return holders;
  }

  // Candidate i's CandidateRecord::text_digest (0 = unknown).
  uint64_t Digest(size_t i) const { return i < s_.records.size() ? s_.records[i].text_digest : 0; }
  // Whether candidates i and j hold one text (j is i, or the same text registered again).
  bool SameText(size_t i, size_t j) const {
    return i == j || (Digest(i) != 0 && Digest(i) == Digest(j));
  }
  // Whether registered document `id` is candidate i or another candidate holding its text.
  bool HoldsTextOf(DocId id, size_t i) const {
    if (id == s_.ids[i]) return true;
    if (redundant_ == 0 || Digest(i) == 0) return false;
    const auto it =
        std::lower_bound(s_.digests.begin(), s_.digests.end(), std::pair<DocId, uint64_t>{id, 0});
    return it != s_.digests.end() && it->first == id && it->second == Digest(i);
  }
  // Whether the text of `digest` is among the holders counted so far (s_.holder_digests); an
  // unknown text (0) never is.
  bool Counted(uint64_t digest) const {
    const std::vector<uint64_t>& counted = s_.holder_digests;
    return digest != 0 && std::find(counted.begin(), counted.end(), digest) != counted.end();
  }
  // Counts the text of `digest` as a holder: false when it was counted already.
  bool NewText(uint64_t digest) {
    if (Counted(digest)) return false;
    s_.holder_digests.push_back(digest);
    return true;
  }
  // The candidates whose text another candidate holds too (the same text registered more
  // than once, in other collections): the candidates less their distinct texts. Fills
  // s_.digests with (id, digest) of the candidates, by id.
  uint32_t RedundantCandidates() {
    s_.digests.clear();
    s_.texts.clear();
    for (size_t i = 0; i < s_.ids.size(); ++i) {
      s_.digests.push_back({s_.ids[i], Digest(i)});
      if (Digest(i) != 0) s_.texts.push_back(Digest(i));
    }
    std::sort(s_.digests.begin(), s_.digests.end());
    std::sort(s_.texts.begin(), s_.texts.end());
    const size_t known = s_.texts.size();
    s_.texts.erase(std::unique(s_.texts.begin(), s_.texts.end()), s_.texts.end());
    return static_cast<uint32_t>(known - s_.texts.size());
  }
  // How many texts hold the chunk of `list`: its documents, those among the candidates that
  // hold one text counted once (a document that is no candidate is a text of its own).
  uint32_t TextsHolding(const PostingList& list) {
    s_.holder_digests.clear();
    uint32_t texts = 0;
    DocId previous = 0;
    for (const Posting& posting : list.postings) {
      if (posting.doc_id == previous) continue;  // a document's postings are consecutive
      previous = posting.doc_id;
      const auto it = std::lower_bound(s_.digests.begin(), s_.digests.end(),
                                       std::pair<DocId, uint64_t>{posting.doc_id, 0});
      const uint64_t digest =
          it != s_.digests.end() && it->first == posting.doc_id ? it->second : 0;
      if (NewText(digest)) ++texts;
    }
    return texts;
  }

  // The last verification gram of test units [ub, ue) that candidate i does not hold, or
  // kNoGram.
  uint32_t LastLackedGram(size_t i, uint32_t ub, uint32_t ue) {
    if (ue < ub + k_ || i >= s_.grams.size()) return kNoGram;
    const std::vector<uint64_t>& bits = GramBits(i);
    for (uint32_t g = std::min<uint32_t>(ue - k_ + 1, test_.grams.size()); g > ub; --g) {
      if (!Holds(bits, test_.grams[g - 1])) return g - 1;
    }
    return kNoGram;
  }

  // Whether a candidate with another text than i's holds every verification gram of test
  // units [ub, ue).
  // By chance, a candidate of n grams holds the 3 grams of a 5-word chunk with odds
  // (n / 2^16)^3: 3e-5 at 2,000 grams, which only lowers what is counted as own.
  bool HeldByAnother(size_t i, uint32_t ub, uint32_t ue) {
    if (ue < ub + k_) return false;
    const uint32_t ge = std::min<uint32_t>(ue - k_ + 1, test_.grams.size());
    if (ub >= ge) return false;
    for (size_t j = 0; j < s_.ids.size() && j < s_.grams.size(); ++j) {
      if (SameText(i, j) || s_.grams[j].empty()) continue;
      const std::vector<uint64_t>& bits = GramBits(j);
      uint32_t g = ub;
      while (g < ge && Holds(bits, test_.grams[g])) ++g;
      if (g == ge) return true;
    }
    return false;
  }

  CandidateVerifier(const DocumentFingerprint& test, const ChunkingParams& params,
                    const CheckOptions& check, Scratch& s, std::vector<UnitRange>* covered)
      : test_(test),
        params_(params),
        check_(check),
        s_(s),
        covered_(covered),
        k_(params.verify_k),
        n_units_(static_cast<uint32_t>(test.units.size())) {}

  // The candidates' postings hit by the lookup place passages in the registered bytes.
  void CollectCandidatePostings(std::span<const PostingList> postings) {
    const size_t kept = s_.ids.size();
    std::unordered_map<DocId, size_t> slot;
    slot.reserve(kept);
    for (size_t i = 0; i < kept; ++i) slot.emplace(s_.ids[i], i);
    if (s_.doc_postings.size() < kept) s_.doc_postings.resize(kept);
    for (size_t i = 0; i < kept; ++i) s_.doc_postings[i].clear();
    if (!check_.want_spans) return;
    for (const PostingList& pl : postings) {
      for (const Posting& p : pl.postings) {
        auto it = slot.find(p.doc_id);
        if (it != slot.end()) s_.doc_postings[it->second].push_back(p);
      }
    }
  }

  // The looked-up chunks found in some registered document, in unit order (the view is in
  // document order), for the common-phrase rule.
  void CollectFoundChunks(const DocumentFingerprint& looked_up,
                          std::span<const PostingList> postings) {
    s_.found.clear();
    const uint32_t common_documents = check_.common_phrase_documents;
    if (common_documents == 0) return;
    // A text registered more than once (in other collections) is one holder of its chunks,
    // not several: a text registered three times is no more the corpus's common text than one
    // registered once, and what only its copies hold is its own text. Only chunks that the
    // candidates' copies can have raised to common or above one holder are counted again,
    // from their postings (2 to common_documents + redundant - 1 documents).
    const uint32_t redundant = redundant_;
    for (size_t c = 0; c < looked_up.chunks.size() && c < postings.size(); ++c) {
      if (postings[c].doc_frequency == 0) continue;
      const Chunk& chunk = looked_up.chunks[c];
      const PostingList& list = postings[c];
      uint32_t holders = list.doc_frequency;
      if (redundant > 0 && holders >= 2 && holders < common_documents + redundant &&
          list.postings.size() >= holders) {
        holders = TextsHolding(list);
      }
      const DocId holder = holders == 1 && !list.postings.empty() ? list.postings[0].doc_id : 0;
      s_.found.push_back({chunk.unit_begin, chunk.unit_end, holders, holder});
    }
  }

  const DocumentFingerprint& test_;
  const ChunkingParams& params_;
  const CheckOptions& check_;
  Scratch& s_;
  std::vector<UnitRange>* covered_;
  const uint32_t k_;
  const uint32_t n_units_;
  VerifyOptions verify_;
  uint32_t redundant_ = 0;  // RedundantCandidates(): candidates whose text another one holds
};

// Steps 1-4 with verification, over the chunks `looked_up` (a view of the test's chunks)
// and their postings. `full_lookup`: every chunk of the test is, or will be, looked up.
// When `covered` is not null, the test units [begin, end) of each reported document's
// passages are appended to it.
absl::StatusOr<Report> DetectVerified(const DocumentFingerprint& test,
                                      const DocumentFingerprint& looked_up,
                                      std::span<const PostingList> postings, bool full_lookup,
                                      const ChunkingParams& params, const CandidateSource& source,
                                      const DetectOptions& options, Scratch& s,
                                      std::vector<UnitRange>* covered) {
  COPS_ASSIGN_OR_RETURN(const uint32_t common_chunks_ignored,
                        ReadBestCandidates(looked_up, postings, full_lookup, source, options, s));
  Report r;
  r.total_chunks = test.total_chunks;
  r.selected_chunks = static_cast<uint32_t>(looked_up.chunks.size());
  r.common_chunks_ignored = common_chunks_ignored;
  r.sampled = test.sampled;
  r.verified = true;
  r.excluded = options.excluded;
  // The test's units and grams that do not count.
  s.unit_excluded.clear();
  if (!options.excluded.empty()) ExcludedUnits(test.units, options.excluded, &s.unit_excluded);
  GramExclusions(s.unit_excluded, test.grams.size(), params.verify_k, &s.gram_excluded);
  r.considered_chunks = static_cast<uint32_t>(
      s.gram_excluded.empty()
          ? test.grams.size()
          : std::count(s.gram_excluded.begin(), s.gram_excluded.end(), Exclusion::kNone));
  if (s.ids.empty()) return r;  // a clean check ends here: nothing to read or verify

  COPS_ASSIGN_OR_RETURN(CandidateVerifier verifier,
                        CandidateVerifier::Prepare(test, looked_up, postings, params, source,
                                                   options.check, options.verify, s, covered));
  verifier.VerifyTemplates(&r);
  verifier.VerifySources(&r);
  Finish(options.check, &r);
  return r;
}

// Reads each candidate's record and grams once per check: the second pass of a short
// test's lookup verifies the first pass's candidates again without reading them again.
class ReadOnce final : public CandidateSource {
 public:
  explicit ReadOnce(const CandidateSource& source) : source_(source) {}

  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    return source_.Lookup(hashes, out);
  }
  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override {
    return Read(ids, records_, out, [this](std::span<const DocId> missing, auto* got) {
      return source_.ReadCandidates(missing, got);
    });
  }
  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override {
    return Read(ids, grams_, out, [this](std::span<const DocId> missing, auto* got) {
      return source_.ReadGrams(missing, got);
    });
  }

 private:
  template <typename T, typename ReadFn>
  static absl::Status Read(std::span<const DocId> ids, std::unordered_map<DocId, T>& cache,
                           std::vector<T>* out, const ReadFn& read) {
    std::vector<DocId> missing;
    for (DocId id : ids) {
      if (!cache.contains(id)) missing.push_back(id);
    }
    if (!missing.empty()) {
      std::vector<T> got;
      COPS_RETURN_IF_ERROR(read(missing, &got));
      for (size_t i = 0; i < missing.size(); ++i) {
        cache[missing[i]] = i < got.size() ? std::move(got[i]) : T{};
      }
    }
    out->resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) (*out)[i] = cache[ids[i]];
    return absl::OkStatus();
  }

  const CandidateSource& source_;
  mutable std::unordered_map<DocId, CandidateRecord> records_;
  mutable std::unordered_map<DocId, std::vector<uint32_t>> grams_;
};

// reach[u]: the furthest unit end that a covered range whose interior (the range without
// `margin` units at each end) starts at or before unit u keeps in its interior. A chunk of
// units [b, e) lies inside one such interior when reach[b] >= e: the chunks at a passage's
// edges are still looked up, to place the passage in the registered bytes.
void InteriorReach(const std::vector<UnitRange>& covered, uint32_t margin, uint32_t units,
                   std::vector<uint32_t>* reach) {
  reach->assign(units + 1, 0);
  for (const UnitRange& r : covered) {
    if (r.end < 2 * margin + r.begin) continue;  // no interior
    const uint32_t b = std::min(r.begin + margin, units);
    (*reach)[b] = std::max((*reach)[b], r.end - margin);
  }
  for (uint32_t u = 1; u <= units; ++u) (*reach)[u] = std::max((*reach)[u], (*reach)[u - 1]);
}

// A short test whose every chunk is kept but whose selection is marked: the selection is
// looked up first and its candidates verified; then the other chunks, except those well
// inside the passages found, and the pipeline runs again over everything looked up (the
// first candidates are not read twice). An exact copy thus looks up about a quarter of its
// chunks, and a revised one still finds every document that shares any chunk outside the
// passages already verified.
absl::StatusOr<Report> DetectInTwoPhases(const DocumentFingerprint& test,
                                         const ChunkingParams& params,
                                         const CandidateSource& source,
                                         const DetectOptions& options, Scratch& s) {
  const ReadOnce once(source);
  s.view.chunks.clear();
  s.hashes.clear();
  for (uint32_t i : test.selection) {
    s.view.chunks.push_back(test.chunks[i]);
    s.hashes.push_back(test.chunks[i].hash);
  }
  s.view.total_chunks = test.total_chunks;
  s.view.sampled = test.sampled;
  COPS_RETURN_IF_ERROR(once.Lookup(s.hashes, &s.postings));
  s.covered.clear();
  COPS_ASSIGN_OR_RETURN(Report first, DetectVerified(test, s.view, s.postings, true, params,
                                                     once, options, s, &s.covered));

  // The other chunks, in document order, merged with the selection's postings.
  InteriorReach(s.covered, std::max(params.k, 1u), test.total_units, &s.reach);
  auto inside = [&s](const Chunk& c) {
    return c.unit_begin < s.reach.size() && s.reach[c.unit_begin] >= c.unit_end;
  };
  s.hashes.clear();
  s.view.chunks.clear();
  s.order.clear();  // per chunk of the view: selection (true) or second lookup (false)
  size_t next = 0;
  for (size_t i = 0; i < test.chunks.size(); ++i) {
    const bool selected = next < test.selection.size() && test.selection[next] == i;
    if (selected) ++next;
    if (!selected && inside(test.chunks[i])) continue;
    if (!selected) s.hashes.push_back(test.chunks[i].hash);
    s.view.chunks.push_back(test.chunks[i]);
    s.order.push_back(selected);
  }
  if (s.hashes.empty()) return first;
  COPS_RETURN_IF_ERROR(once.Lookup(s.hashes, &s.more_postings));
  s.merged.resize(s.view.chunks.size());
  size_t from_selection = 0, from_more = 0;
  for (size_t i = 0; i < s.view.chunks.size(); ++i) {
    std::swap(s.merged[i], s.order[i] ? s.postings[from_selection++] : s.more_postings[from_more++]);
  }
  return DetectVerified(test, s.view, s.merged, true, params, once, options, s, nullptr);
}

}  // namespace

uint64_t TextDigest(const std::array<uint8_t, 32>& sha256) {
  uint64_t digest = 0;
  for (int b = 0; b < 8; ++b) digest = (digest << 8) | sha256[b];
  return digest;
}

FingerprintOptions RegisterFingerprintOptions(const ChunkingParams& params) {
  FingerprintOptions o;
  o.keep_all_chunks_up_to = params.dense_chunks;
  return o;
}

FingerprintOptions CheckFingerprintOptions(const ChunkingParams& params) {
  FingerprintOptions o;
  if (params.verify_k > 0) {
    o.keep_all_chunks_up_to = kShortTestChunks;
    o.mark_selection = true;
  }
  o.unit_spans = params.verify_k > 0;
  o.stock_phrases = params.verify_k > 0;
  o.content_digest = false;
  return o;
}

namespace {

// Steps 1-4 (core/detect.h).
absl::StatusOr<Report> DetectChunks(const DocumentFingerprint& test, const ChunkingParams& params,
                                    const CandidateSource& source, const DetectOptions& options,
                                    Scratch& s) {
  const bool verifies = params.verify_k > 0 && !test.grams.empty();
  const DocumentFingerprint* looked_up = &test;
  if (!verifies && !options.excluded.empty()) {
    // Without verification, excluded text is not looked up at all.
    s.spans.clear();
    for (const Chunk& c : test.chunks) s.spans.push_back({c.start, c.end});
    ExcludedUnits(s.spans, options.excluded, &s.unit_excluded);
    s.unexcluded = test;
    size_t kept = 0;
    for (size_t i = 0; i < test.chunks.size(); ++i) {
      if (s.unit_excluded[i] == Exclusion::kNone) s.unexcluded.chunks[kept++] = test.chunks[i];
    }
    s.unexcluded.chunks.resize(kept);
    looked_up = &s.unexcluded;
  }
  if (verifies && test.chunks.size() == test.total_chunks && !test.selection.empty() &&
      test.selection.size() < test.chunks.size()) {
    return DetectInTwoPhases(test, params, source, options, s);
  }
  s.hashes.clear();
  for (const Chunk& c : looked_up->chunks) s.hashes.push_back(c.hash);
  COPS_RETURN_IF_ERROR(source.Lookup(s.hashes, &s.postings));
  if (!verifies) return DetectSampled(*looked_up, source, options, s);
  return DetectVerified(test, test, s.postings, test.chunks.size() == test.total_chunks, params,
                        source, options, s, nullptr);
}

// How many of the rare pairs `id` shares with the test (`s.pair_holders` lists it) lie on
// one chain advancing in both texts: the longest strictly increasing run of their positions
// in `order` (the document's pairs in its text order) taken in `test_order` (positions into
// `looked_up`, in the test's text order).
uint32_t SharedInOrder(DocId id, std::span<const uint32_t> order,
                       std::span<const uint32_t> test_order,
                       std::span<const uint32_t> looked_up, Scratch& s) {
  // The document's pairs sorted, with their positions: a binary search per shared pair.
  std::vector<uint64_t>& at = s.pair_positions;
  at.clear();
  for (uint32_t i = 0; i < order.size(); ++i) at.push_back(uint64_t{order[i]} << 32 | i);
  std::sort(at.begin(), at.end());
  // Patience sorting: tails[k] is the smallest last position of a chain of k + 1 pairs.
  std::vector<uint32_t>& tails = s.chain_tails;
  tails.clear();
  for (uint32_t j : test_order) {
    const std::vector<DocId>& holders = s.pair_holders[j];
    if (!std::binary_search(holders.begin(), holders.end(), id)) continue;
    auto it = std::lower_bound(at.begin(), at.end(), uint64_t{looked_up[j]} << 32);
    if (it == at.end() || (*it >> 32) != looked_up[j]) continue;  // listed, not kept: skip
    const auto position = static_cast<uint32_t>(*it);
    auto t = std::lower_bound(tails.begin(), tails.end(), position);
    if (t == tails.end()) {
      tails.push_back(position);
    } else {
      *t = position;
    }
  }
  return static_cast<uint32_t>(tails.size());
}

// Step 5: the documents holding enough of the test's rare content-stem pairs, in order.
absl::Status AddStemPairEvidence(const DocumentFingerprint& test, const CandidateSource& source,
                                 const DetectOptions& options, Scratch& s, Report* r) {
  const CheckOptions& check = options.check;
  // Ascending keyed hashes: the first ones are an even sample of the rest.
  std::span<const uint32_t> looked_up = test.stem_pairs;
  if (check.stem_pair_max_lookups > 0 && looked_up.size() > check.stem_pair_max_lookups) {
    looked_up = looked_up.first(check.stem_pair_max_lookups);
  }
  r->stem_pairs = static_cast<uint32_t>(looked_up.size());
  if (check.stem_pair_threshold <= 0 || !options.excluded.empty()) return absl::OkStatus();
  COPS_ASSIGN_OR_RETURN(const bool available,
                        source.LookupStemPairs(looked_up, check.stem_pair_max_documents,
                                               &s.pair_holders));
  if (!available) return absl::OkStatus();
  r->stem_pairs_checked = true;
  if (looked_up.empty()) return absl::OkStatus();
  std::unordered_map<DocId, uint32_t> shared;
  for (const std::vector<DocId>& holders : s.pair_holders) {
    for (DocId id : holders) ++shared[id];
  }
  const double pairs = static_cast<double>(looked_up.size());
  auto passes = [&](uint32_t n, double threshold) {
    return n >= check.stem_pair_min_shared && n / pairs >= threshold;
  };
  // The documents that hold enough rare pairs in any order: their order decides.
  s.ids.clear();
  for (const auto& [id, n] : shared) {
    if (passes(n, check.stem_pair_threshold)) s.ids.push_back(id);
  }
  std::sort(s.ids.begin(), s.ids.end());
  std::unordered_map<DocId, bool> violates;
  if (!s.ids.empty()) {
    COPS_RETURN_IF_ERROR(source.ReadStemPairOrder(s.ids, &s.pair_orders));
    // The looked-up pairs in the test's order (positions into `looked_up`).
    std::vector<uint32_t> test_order;
    for (uint32_t pair : test.stem_pair_order) {
      auto it = std::lower_bound(looked_up.begin(), looked_up.end(), pair);
      if (it != looked_up.end() && *it == pair) test_order.push_back(it - looked_up.begin());
    }
    for (size_t i = 0; i < s.ids.size(); ++i) {
      const DocId id = s.ids[i];
      const std::vector<uint32_t>& order = s.pair_orders[i];
      if (order.empty() || test_order.size() != looked_up.size()) {
        violates[id] = passes(shared[id], std::max(check.stem_pair_threshold,
                                                  kUnorderedStemPairThreshold));
        continue;
      }
      const uint32_t n = SharedInOrder(id, order, test_order, looked_up, s);
      shared[id] = n;
      violates[id] = passes(n, check.stem_pair_threshold);
    }
  }
  bool changed = false;
  for (DocumentMatch& m : r->matches) {
    auto it = shared.find(m.doc_id);
    if (it == shared.end()) continue;
    m.stem_pairs_shared = it->second;
    m.stem_pair_share = it->second / pairs;
    if (!m.template_source && violates[m.doc_id]) {
      m.stem_pair_violation = true;
      changed |= !m.violation;
      m.violation = true;
    }
    shared.erase(it);
  }
  // Documents steps 1-4 did not report: their records say whether the caller may see them
  // and whether they are templates.
  s.ids.clear();
  for (const auto& [id, n] : shared) {
    if (violates[id]) s.ids.push_back(id);
  }
  std::sort(s.ids.begin(), s.ids.end());
  if (!s.ids.empty()) {
    COPS_RETURN_IF_ERROR(source.ReadCandidates(s.ids, &s.records));
    for (size_t i = 0; i < s.ids.size(); ++i) {
      const CandidateRecord& rec = s.records[i];
      if (!rec.present || rec.template_source) continue;
      DocumentMatch m;
      m.doc_id = s.ids[i];
      m.stored_chunks = rec.stored_chunks;
      m.stem_pairs_shared = shared[s.ids[i]];
      m.stem_pair_share = m.stem_pairs_shared / pairs;
      m.stem_pair_violation = true;
      m.violation = true;
      r->matches.push_back(std::move(m));
      changed = true;
    }
  }
  if (!changed) return absl::OkStatus();
  r->violation = true;
  // Ordered as Finish() orders, violations by stem pairs before the rest at equal ratio.
  std::sort(r->matches.begin(), r->matches.end(),
            [](const DocumentMatch& a, const DocumentMatch& b) {
              if (a.template_source != b.template_source) return b.template_source;
              if (a.ratio != b.ratio) return a.ratio > b.ratio;
              if (a.stem_pair_share != b.stem_pair_share) {
                return a.stem_pair_share > b.stem_pair_share;
              }
              return a.doc_id < b.doc_id;
            });
  if (check.max_results > 0 && r->matches.size() > check.max_results) {
    // Keep the stem-pair violations: a report that says "violation" names its documents.
    std::stable_partition(r->matches.begin(), r->matches.end(),
                          [](const DocumentMatch& m) { return m.violation; });
    r->matches.resize(check.max_results);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Report> Detect(const DocumentFingerprint& test, const ChunkingParams& params,
                              const CandidateSource& source, const DetectOptions& options) {
  Scratch& s = ThreadScratch();
  absl::Cleanup trim = [&s] { s.Trim(); };
  COPS_ASSIGN_OR_RETURN(Report r, DetectChunks(test, params, source, options, s));
  for (DocumentMatch& m : r.matches) m.chunk_violation = m.violation && !m.revision_violation;
  if (params.stem_pairs > 0) COPS_RETURN_IF_ERROR(AddStemPairEvidence(test, source, options, s, &r));
  return r;
}

}  // namespace cops
