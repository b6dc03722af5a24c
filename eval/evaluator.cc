#include "eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "core/canonicalizer.h"
#include "core/exclusions.h"
#include "core/strings.h"
#include "core/units.h"
#include "engine/pipeline.h"

namespace cops::eval {
namespace {

// Thresholds are strictly positive; this one reports every matched document.
constexpr double kTinyThreshold = 1e-9;

absl::StatusOr<std::unique_ptr<Fingerprinter>> MakeFingerprinter(const Setting& s,
                                                                  const HashKey& key) {
  ChunkingParams p = s.params;
  p.key_id = key.Id();
  return Fingerprinter::Create(p, key);
}

DocId SourceId(int source_index) { return static_cast<DocId>(source_index) + 1; }

// Source i is document SourceId(i); with `copies` > 1, its copy c (1 <= c < copies) is
// document SourceId(i) + c x (number of sources).
absl::Status RegisterSources(const EvalSet& set, const Fingerprinter& fingerprinter,
                             MemoryIndex* index, uint32_t copies = 1) {
  DocumentFingerprint fp;
  for (size_t i = 0; i < set.sources.size(); ++i) {
    absl::Status s = RegisterPrint(fingerprinter, set.sources[i].text, &fp);
    if (!s.ok()) {
      return absl::Status(s.code(), StrCat("source ", set.sources[i].name, ": ", s.message()));
    }
    for (uint32_t c = 0; c < std::max(copies, 1u); ++c) {
      index->Register(SourceId(static_cast<int>(i)) + c * set.sources.size(), fp);
    }
  }
  return absl::OkStatus();
}

// The server's detection pipeline (core/detect.h) over the in-memory index; `fp` comes
// from TestPrint(). The in-memory source never fails.
Report Check(const MemoryIndex& index, const Fingerprinter& fingerprinter,
             const DocumentFingerprint& fp, const CheckOptions& options,
             std::vector<DocId>* candidates = nullptr, const VerifyOptions& verify = {}) {
  DetectOptions o;
  o.check = options;
  o.verify = verify;
  o.candidates_out = candidates;
  absl::StatusOr<Report> r = Detect(fp, fingerprinter.params(), index, o);
  return r.ok() ? *std::move(r) : Report{};
}

// A test document fingerprinted as the server fingerprints what `options` check.
absl::Status TestPrint(const Fingerprinter& fingerprinter, const std::string& text,
                       const CheckOptions& options, DocumentFingerprint* fp) {
  return CheckPrint(fingerprinter, text, /*sample_size=*/0, /*sample_seed=*/0, options, fp);
}

CheckOptions AllMatches(CheckOptions o) {
  o.threshold = kTinyThreshold;
  o.max_results = 0;
  o.want_spans = false;
  return o;
}

double RatioWith(const Report& r, DocId id) {
  for (const DocumentMatch& m : r.matches) {
    if (m.doc_id == id) return m.ratio;
  }
  return 0;
}

class Accumulator {
 public:
  void Add(double x) {
    ++n_;
    sum_ += x;
    sumsq_ += x * x;
  }
  void AddZeros(int count) { n_ += count; }
  MeanSd Get() const {
    MeanSd r;
    r.n = n_;
    if (n_ == 0) return r;
    r.mean = sum_ / n_;
    r.sd = n_ > 1 ? std::sqrt(std::max(0.0, (sumsq_ - n_ * r.mean * r.mean) / (n_ - 1))) : 0;
    return r;
  }

 private:
  int n_ = 0;
  double sum_ = 0, sumsq_ = 0;
};

bool IsHeavySubstitution(const std::string& category) {
  return category == "subst_20" || category == "subst_30";
}

int CategoryRank(const std::string& c) {
  static const char* const kOrder[] = {
      "exact",     "minor_change", "block_added",      "block_deleted", "key_block",
      "block_reordering", "repeated", "subst_05",      "subst_10",      "subst_20",
      "subst_30",  "sentence_shuffle", "typos",        "homoglyphs",    "invisible_chars",
      "spacing_punct"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (c == kOrder[i]) return static_cast<int>(i);
  }
  return 1000;
}

// Flips one ASCII letter at or before `pos` (searching back to `floor`) to another letter,
// keeping the length; returns false when there is none.
bool FlipLetterBackward(std::string* text, size_t pos, size_t floor) {
  for (size_t i = pos + 1; i-- > floor;) {
    char c = (*text)[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      char lower = static_cast<char>(c | 0x20);
      (*text)[i] = lower == 'q' ? 'z' : 'q';
      return true;
    }
  }
  return false;
}

}  // namespace

std::string Setting::Describe() const {
  const ChunkingParams& p = params;
  std::string s =
      StrCat(std::string(UnitKindName(p.unit)), " ", std::string(ChunkStrategyName(p.strategy)));
  if (p.strategy != ChunkStrategy::kOneUnit) StrAppend(&s, " k=", p.k);
  StrAppend(&s, " ", std::string(SelectionKindName(p.selection)));
  if (p.selection == SelectionKind::kModP) StrAppend(&s, " p=", p.p);
  if (p.selection == SelectionKind::kWinnowing) StrAppend(&s, " w=", p.w);
  const Enhancements& e = p.enhancements;
  if (e.drop_numbers) StrAppend(&s, " drop_numbers");
  if (e.min_word_chars) StrAppend(&s, " min_word_chars=", e.min_word_chars);
  if (e.min_sentence_words) StrAppend(&s, " min_sentence_words=", e.min_sentence_words);
  if (e.drop_stop_words) StrAppend(&s, " stop_words");
  if (options.max_doc_frequency) {
    StrAppend(&s, " max_doc_frequency=", options.max_doc_frequency);
  }
  if (p.verify_k) StrAppend(&s, " verify_k=", p.verify_k);
  if (p.dense_chunks) StrAppend(&s, " dense_chunks=", p.dense_chunks);
  if (options.revision_share > 0) StrAppend(&s, " revision_share=", options.revision_share);
  if (!stock_phrases) StrAppend(&s, " stock_phrases=0");
  if (source_copies > 1) StrAppend(&s, " source_copies=", source_copies);
  if (p.stem_pairs) {
    StrAppend(&s, " stem_pairs=", p.stem_pairs, " stem_threshold=", options.stem_pair_threshold,
              " stem_max_df=", options.stem_pair_max_documents,
              " stem_min_shared=", options.stem_pair_min_shared);
    if (options.stem_pair_max_lookups > 0) {
      StrAppend(&s, " stem_max_pairs=", options.stem_pair_max_lookups);
    }
  }
  return s;
}

absl::StatusOr<Setting> ParseSetting(const std::string& spec, const Setting& base) {
  Setting s = base;
  bool verify_given = false;
  for (absl::string_view tok : absl::StrSplit(spec, ' ', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(tok, absl::MaxSplits('=', 1));
    const std::string& key = kv.first;
    const std::string& val = kv.second;
    auto bad = [&] { return absl::InvalidArgumentError(StrCat("setting '", tok, "': bad value")); };
    uint32_t u = 0;
    double d = 0;
    bool b = false;
    if (key == "unit") {
      COPS_ASSIGN_OR_RETURN(s.params.unit, ParseUnitKind(val));
    } else if (key == "strategy") {
      COPS_ASSIGN_OR_RETURN(s.params.strategy, ParseChunkStrategy(val));
    } else if (key == "selection") {
      COPS_ASSIGN_OR_RETURN(s.params.selection, ParseSelectionKind(val));
    } else if (key == "k" || key == "p" || key == "w" || key == "min_word_chars" ||
               key == "min_sentence_words" || key == "max_doc_frequency" ||
               key == "min_passage_units" || key == "verify_k" || key == "max_gap_grams" ||
               key == "max_skew_grams" || key == "min_passage_grams" || key == "dense_chunks" ||
               key == "common_phrase_documents" || key == "stem_pairs" || key == "stem_max_df" ||
               key == "stem_min_shared" || key == "stem_max_pairs" ||
               key == "min_violation_units" || key == "revision_min_grams" ||
               key == "source_copies") {
      if (!absl::SimpleAtoi(val, &u)) return bad();
      if (key == "k") s.params.k = u;
      if (key == "p") s.params.p = u;
      if (key == "w") s.params.w = u;
      if (key == "min_word_chars") s.params.enhancements.min_word_chars = u;
      if (key == "min_sentence_words") s.params.enhancements.min_sentence_words = u;
      if (key == "max_doc_frequency") s.options.max_doc_frequency = u;
      if (key == "min_passage_units") s.options.min_passage_units = u;
      if (key == "max_gap_grams") s.verify.max_gap_grams = u;
      if (key == "max_skew_grams") s.verify.max_skew_grams = u;
      if (key == "min_passage_grams") s.verify.min_passage_grams = u;
      if (key == "dense_chunks") s.params.dense_chunks = u;
      if (key == "common_phrase_documents") s.options.common_phrase_documents = u;
      if (key == "min_violation_units") s.options.min_violation_units = u;
      if (key == "revision_min_grams") s.options.revision_min_grams = u;
      if (key == "source_copies") s.source_copies = u;
      if (key == "stem_pairs") {
        s.params.stem_pairs = u;
        s.params.stem_version = u != 0 ? kStemPairsVersion : 0;
      }
      if (key == "stem_max_df") s.options.stem_pair_max_documents = u;
      if (key == "stem_min_shared") s.options.stem_pair_min_shared = u;
      if (key == "stem_max_pairs") s.options.stem_pair_max_lookups = u;
      if (key == "verify_k") {
        s.params.verify_k = u;
        verify_given = true;
      }
    } else if (key == "drop_numbers" || key == "stop_words" || key == "stock_phrases") {
      if (!absl::SimpleAtob(val, &b)) return bad();
      if (key == "stock_phrases") s.stock_phrases = b;
      if (key == "drop_numbers") s.params.enhancements.drop_numbers = b;
      if (key == "stop_words") s.params.enhancements.drop_stop_words = b;
    } else if (key == "threshold") {
      if (!absl::SimpleAtod(val, &d)) return bad();
      s.options.threshold = d;
    } else if (key == "revision_share") {
      if (!absl::SimpleAtod(val, &d)) return bad();
      s.options.revision_share = d;
    } else if (key == "revision_spread") {
      if (!absl::SimpleAtod(val, &d)) return bad();
      s.options.revision_spread = d;
    } else if (key == "revision_trim") {
      if (!absl::SimpleAtod(val, &d)) return bad();
      s.options.revision_trim = d;
    } else if (key == "stem_threshold") {
      if (!absl::SimpleAtod(val, &d)) return bad();
      s.options.stem_pair_threshold = d;
    } else {
      return absl::InvalidArgumentError(StrCat("setting '", tok, "': unknown key"));
    }
  }
  // Verification grams are word grams: other units go without unless asked for.
  if (s.params.unit != UnitKind::kWord && !verify_given) s.params.verify_k = 0;
  if (s.params.verify_k == 0) s.params.dense_chunks = 0;  // dense storage needs verification
  COPS_RETURN_IF_ERROR(s.params.Validate());
  COPS_RETURN_IF_ERROR(s.options.Validate());
  return s;
}

HashKey EvalKey() { return *HashKey::FromHex("000102030405060708090a0b0c0d0e0f"); }

HashKey NthEvalKey(uint32_t n) {
  if (n == 0) return EvalKey();
  return *HashKey::FromHex(absl::StrFormat("%016x%016x", 0x5eed0000u + n, 0xc0ffee00u + n));
}

double CandidateRecall(const EvalSet& set, const SettingRun& run,
                       const std::vector<std::string>& categories) {
  int n = 0, found = 0;
  for (size_t i = 0; i < set.tests.size(); ++i) {
    const TestDoc& t = set.tests[i];
    if (!t.expected_violation || t.source < 0) continue;
    if (!categories.empty() &&
        std::find(categories.begin(), categories.end(), t.category) == categories.end()) {
      continue;
    }
    ++n;
    found += run.scores[i].source_candidate;
  }
  return n ? double(found) / n : 1.0;
}

absl::StatusOr<SettingRun> RunSetting(const EvalSet& set, const Setting& setting) {
  return RunSetting(set, setting, EvalKey());
}

namespace {

// Counted passages of `r` inside one of `runs` (test units; DocumentFingerprint::stock_runs).
uint32_t StockOnlyPassages(const Report& r, const DocumentFingerprint& fp,
                           const std::vector<UnitRun>& runs) {
  uint32_t n = 0;
  auto unit_at = [&](uint32_t byte) {  // the unit starting at or before `byte`
    auto it = std::upper_bound(fp.units.begin(), fp.units.end(), byte,
                               [](uint32_t b, const UnitSpan& u) { return b < u.start; });
    return static_cast<uint32_t>(it == fp.units.begin() ? 0 : it - fp.units.begin() - 1);
  };
  for (const DocumentMatch& m : r.matches) {
    for (const Span& span : m.spans) {
      if (span.excluded != Exclusion::kNone || span.test_end <= span.test_start) continue;
      const uint32_t ub = unit_at(span.test_start), ue = unit_at(span.test_end - 1) + 1;
      for (const UnitRun& run : runs) n += run.begin <= ub && ue <= run.end;
    }
  }
  return n;
}

// TestScore::evidence of a violation.
std::string Evidence(const EvalSet& set, const TestDoc& t, const Report& r) {
  std::string out;
  for (const DocumentMatch& m : r.matches) {
    if (!m.violation || m.doc_id == 0 || set.sources.empty()) continue;
    const size_t source = (m.doc_id - 1) % set.sources.size();
    StrAppend(&out, set.sources[source].name, m.doc_id > set.sources.size() ? " (a copy)" : "",
              " ratio ", m.ratio, m.stem_pair_violation ? " (content-stem pairs)" : "",
              m.revision_violation ? " (heavy revision)" : "", "\n");
    for (const Span& span : m.spans) {
      std::string text = t.text.substr(span.test_start, span.test_end - span.test_start);
      std::replace(text.begin(), text.end(), '\n', ' ');
      StrAppend(&out, "  [", span.units, " words",
                      span.excluded == Exclusion::kNone
                          ? std::string()
                          : StrCat(", ", ExclusionName(span.excluded)),
                      "] ", text, "\n");
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<SettingRun> RunSetting(const EvalSet& set, const Setting& setting,
                                      const HashKey& key) {
  auto t0 = std::chrono::steady_clock::now();
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        MakeFingerprinter(setting, key));
  MemoryIndex index;
  COPS_RETURN_IF_ERROR(RegisterSources(set, *fingerprinter, &index, setting.source_copies));
  SettingRun run;
  run.setting = setting;
  run.source_total_chunks = index.total_chunks();
  run.source_stored_chunks = index.stored_chunks();
  const CheckOptions all = AllMatches(setting.options);
  // min_violation_units holds back ratio and containment decisions only (core/detect.cc).
  const bool held_back_by_words =
      all.min_violation_units > 0 && (all.function == DecisionFunction::kMatchRatio ||
                                      all.function == DecisionFunction::kContainment);
  DocumentFingerprint fp;
  for (const TestDoc& t : set.tests) {
    absl::Status s = TestPrint(*fingerprinter, t.text, setting.options, &fp);
    if (!s.ok()) return absl::Status(s.code(), StrCat("test ", t.name, ": ", s.message()));
    const std::vector<UnitRun> stock_runs = fp.stock_runs;
    if (!setting.stock_phrases) fp.stock_runs.clear();
    std::vector<DocId> candidates;
    Report every = Check(index, *fingerprinter, fp, all, &candidates, setting.verify);
    TestScore score;
    if (t.source >= 0) {
      const DocId want = SourceId(t.source);
      score.source_candidate =
          std::find(candidates.begin(), candidates.end(), want) != candidates.end() ||
          (!every.verified && RatioWith(every, want) > 0);
    }
    for (const DocumentMatch& m : every.matches) {
      // A document that content-stem pairs make a violation is one at any threshold: the
      // pairs' own threshold (CheckOptions::stem_pair_threshold) is fixed, not scanned.
      double ratio = m.stem_pair_violation ? 1.0 : m.ratio;
      // Held back by min_violation_units (too few matched words) at any threshold.
      if (held_back_by_words && !m.violation) ratio = 0;
      if (t.source >= 0 && m.doc_id == SourceId(t.source)) {
        score.source_ratio = ratio;
      } else {
        score.other_ratio = std::max(score.other_ratio, ratio);
      }
    }
    const Report decided =
        Check(index, *fingerprinter, fp, setting.options, nullptr, setting.verify);
    // So is a heavy revision (DocumentMatch::revision_violation): its rule has a share of
    // its own (CheckOptions::revision_share), and it applies only where the ratio at the
    // setting's threshold does not, so it is read from the decided check.
    for (const DocumentMatch& m : decided.matches) {
      if (!m.revision_violation) continue;
      if (t.source >= 0 && m.doc_id == SourceId(t.source)) {
        score.source_ratio = 1.0;
      } else {
        score.other_ratio = 1.0;
      }
    }
    score.decided = decided.violation;
    score.stock_only_passages = StockOnlyPassages(decided, fp, stock_runs);
    if (score.decided) score.evidence = Evidence(set, t, decided);
    run.scores.push_back(score);
  }
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

double Metrics::MinRequiredF1(std::string* worst) const {
  double best = 1.0;
  for (const Counts& c : per_category) {
    if (c.tp + c.fn == 0 || IsHeavySubstitution(c.category)) continue;
    if (c.F1() < best) {
      best = c.F1();
      if (worst) *worst = c.category;
    }
  }
  return best;
}

const Counts* Metrics::Find(const std::string& category) const {
  for (const Counts& c : per_category) {
    if (c.category == category) return &c;
  }
  return nullptr;
}

Metrics Score(const EvalSet& set, const SettingRun& run, double threshold) {
  Metrics m;
  m.threshold = threshold;
  m.overall.category = "overall";
  std::map<std::string, Counts> by;
  for (size_t i = 0; i < set.tests.size(); ++i) {
    const TestDoc& t = set.tests[i];
    const TestScore& s = run.scores[i];
    Counts& c = by[t.category];
    c.category = t.category;
    ++c.tests;
    ++m.overall.tests;
    const bool source_hit = t.source >= 0 && s.source_ratio >= threshold;
    const bool other_hit = s.other_ratio >= threshold;
    if (t.expected_violation) {
      int tp = source_hit, fn = !source_hit, fp = !source_hit && other_hit;
      c.tp += tp, c.fn += fn, c.fp += fp;
      m.overall.tp += tp, m.overall.fn += fn, m.overall.fp += fp;
    } else {
      const bool flagged = source_hit || other_hit;
      ++m.negatives;
      m.false_alarms += flagged;
      c.fp += flagged, c.tn += !flagged;
      m.overall.fp += flagged, m.overall.tn += !flagged;
    }
  }
  for (auto& [name, c] : by) m.per_category.push_back(c);
  std::stable_sort(m.per_category.begin(), m.per_category.end(),
                   [](const Counts& a, const Counts& b) {
                     bool an = a.tp + a.fn == 0, bn = b.tp + b.fn == 0;  // negatives last
                     return std::make_tuple(an, CategoryRank(a.category)) <
                            std::make_tuple(bn, CategoryRank(b.category));
                   });
  return m;
}

bool MeetsTargets(const Metrics& m) {
  return m.MinRequiredF1() >= 0.97 && m.FalseAlarmRate() < 0.005;
}

double ChooseThreshold(const EvalSet& set, const SettingRun& run, int* band) {
  std::vector<double> meeting;
  double best_t = 0.5;
  std::tuple<bool, double, double> best{false, -1, -1};
  for (int i = 1; i <= 95; ++i) {
    const double t = i / 100.0;
    Metrics m = Score(set, run, t);
    if (MeetsTargets(m)) meeting.push_back(t);
    auto key = std::make_tuple(m.FalseAlarmRate() < 0.005, m.MinRequiredF1(), m.overall.F1());
    if (key > best) {
      best = key;
      best_t = t;
    }
  }
  // The middle of the range that meets the targets leaves the most margin on both sides
  // (missed copies below, false alarms above) for corpora other than this one.
  if (band != nullptr) *band = static_cast<int>(meeting.size());
  if (!meeting.empty()) return meeting[meeting.size() / 2];
  return best_t;
}

absl::StatusOr<AffinityRow> MeasureAffinity(const EvalSet& set, const Setting& setting,
                                            const std::string& name) {
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        MakeFingerprinter(setting, EvalKey()));
  MemoryIndex index;
  COPS_RETURN_IF_ERROR(RegisterSources(set, *fingerprinter, &index));
  CheckOptions all = AllMatches(setting.options);
  all.min_passage_units = 1;  // the paper's ratios count every matching chunk
  Accumulator self, related, unrelated, unrelated_max;
  DocumentFingerprint fp;
  for (size_t i = 0; i < set.sources.size(); ++i) {
    COPS_RETURN_IF_ERROR(TestPrint(*fingerprinter, set.sources[i].text, setting.options, &fp));
    self.Add(RatioWith(Check(index, *fingerprinter, fp, all), SourceId(static_cast<int>(i))));
  }
  for (const TestDoc& t : set.tests) {
    COPS_RETURN_IF_ERROR(TestPrint(*fingerprinter, t.text, setting.options, &fp));
    Report r = Check(index, *fingerprinter, fp, all);
    if (t.source >= 0) {
      related.Add(RatioWith(r, SourceId(t.source)));
    } else if (!t.expected_violation) {
      double best = 0;
      for (const DocumentMatch& m : r.matches) {
        unrelated.Add(m.ratio);
        best = std::max(best, m.ratio);
      }
      unrelated.AddZeros(static_cast<int>(set.sources.size() - r.matches.size()));
      unrelated_max.Add(best);
    }
  }
  return AffinityRow{name, self.Get(), related.Get(), unrelated.Get(), unrelated_max.Get()};
}

absl::StatusOr<std::vector<SamplingRow>> MeasureSampling(const EvalSet& set,
                                                         const Setting& setting,
                                                         const std::vector<uint32_t>& ns,
                                                         int seeds) {
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        MakeFingerprinter(setting, EvalKey()));
  MemoryIndex index;
  COPS_RETURN_IF_ERROR(RegisterSources(set, *fingerprinter, &index));
  const double t = setting.options.threshold;
  std::vector<DocumentFingerprint> fps(set.tests.size());
  std::vector<bool> full_decision(set.tests.size());
  std::vector<double> full_ratio(set.tests.size());
  for (size_t i = 0; i < set.tests.size(); ++i) {
    COPS_RETURN_IF_ERROR(TestPrint(*fingerprinter, set.tests[i].text, setting.options, &fps[i]));
    Report r = Check(index, *fingerprinter, fps[i], setting.options);
    full_decision[i] = r.violation;
    full_ratio[i] = r.matches.empty() ? 0 : r.matches.front().ratio;
  }
  std::vector<SamplingRow> rows;
  for (uint32_t n : ns) {
    SamplingRow row;
    row.n = n;
    int misses = 0, false_alarms = 0;
    double pred_miss = 0, pred_fa = 0;
    for (size_t i = 0; i < set.tests.size(); ++i) {
      const double predicted = SamplingError(n, t, full_ratio[i]);
      for (int seed = 0; seed < seeds; ++seed) {
        DocumentFingerprint sampled = fps[i];
        SampleChunks(n, 0x5eed0000u + seed * 7919u + i, &sampled);
        const bool decision = Check(index, *fingerprinter, sampled, setting.options).violation;
        if (full_decision[i]) {
          ++row.positives;
          misses += !decision;
          pred_miss += predicted;
        } else {
          ++row.negatives;
          false_alarms += decision;
          pred_fa += predicted;
        }
      }
    }
    if (row.positives) {
      row.measured_miss = double(misses) / row.positives;
      row.predicted_miss = pred_miss / row.positives;
    }
    if (row.negatives) {
      row.measured_false_alarm = double(false_alarms) / row.negatives;
      row.predicted_false_alarm = pred_fa / row.negatives;
    }
    rows.push_back(row);
  }
  return rows;
}

absl::StatusOr<SecurityResult> MeasureSecurity(const EvalSet& set, const Setting& setting,
                                               int documents) {
  COPS_ASSIGN_OR_RETURN(std::unique_ptr<Fingerprinter> fingerprinter,
                        MakeFingerprinter(setting, EvalKey()));
  MemoryIndex index;
  COPS_RETURN_IF_ERROR(RegisterSources(set, *fingerprinter, &index));
  DocumentFingerprint fp;
  auto flagged = [&](const std::string& text) -> absl::StatusOr<bool> {
    COPS_RETURN_IF_ERROR(TestPrint(*fingerprinter, text, setting.options, &fp));
    return Check(index, *fingerprinter, fp, setting.options).violation;
  };
  SecurityResult result;
  Accumulator without_key, with_key, words, chars;
  const int n = std::min<int>(documents, static_cast<int>(set.sources.size()));
  for (int d = 0; d < n; ++d) {
    const std::string& original = set.sources[d].text;
    COPS_ASSIGN_OR_RETURN(bool caught, flagged(original));
    if (!caught) continue;  // nothing to evade
    ++result.documents;
    // Word starts, as an attacker without the key sees them: runs of ASCII letters.
    std::vector<size_t> word_end;  // index of each word's last letter
    for (size_t i = 0; i < original.size(); ++i) {
      const char c = original[i];
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      const char next = i + 1 < original.size() ? original[i + 1] : ' ';
      const bool next_letter = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z');
      if (letter && !next_letter) word_end.push_back(i);
    }
    words.Add(static_cast<double>(word_end.size()));
    chars.Add(static_cast<double>(original.size()));

    // Without the key: edit every g-th word; find the largest g that still evades.
    auto evade_gap = [&](size_t g) -> absl::StatusOr<bool> {
      std::string text = original;
      for (size_t w = g - 1; w < word_end.size(); w += g) FlipLetterBackward(&text, word_end[w], 0);
      COPS_ASSIGN_OR_RETURN(bool f, flagged(text));
      return !f;
    };
    size_t lo = 1, hi = word_end.size();  // evade(lo) assumed; find max g with evade
    COPS_ASSIGN_OR_RETURN(bool every_word, evade_gap(1));
    if (!every_word) {
      without_key.Add(static_cast<double>(word_end.size()));
    } else {
      while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        COPS_ASSIGN_OR_RETURN(bool ev, evade_gap(mid));
        if (ev) lo = mid; else hi = mid - 1;
      }
      const size_t edits = word_end.size() / lo;  // every lo-th word edited
      without_key.Add(static_cast<double>(edits));
    }

    // With the key: the attacker computes the selected chunks and breaks them with the
    // fewest edits (one letter in the last unit of each chunk not yet broken), in order.
    COPS_RETURN_IF_ERROR(fingerprinter->Fingerprint(original, &fp));
    std::vector<Chunk> chunks = fp.chunks;
    std::sort(chunks.begin(), chunks.end(),
              [](const Chunk& a, const Chunk& b) { return a.unit_end < b.unit_end; });
    std::vector<const Chunk*> stabs;
    int64_t last_stab_unit = -1;
    for (const Chunk& c : chunks) {
      if (last_stab_unit >= static_cast<int64_t>(c.unit_begin) &&
          last_stab_unit < static_cast<int64_t>(c.unit_end)) {
        continue;
      }
      stabs.push_back(&c);
      last_stab_unit = static_cast<int64_t>(c.unit_end) - 1;
    }
    auto evade_prefix = [&](size_t m) -> absl::StatusOr<bool> {
      std::string text = original;
      for (size_t j = 0; j < m; ++j) {
        FlipLetterBackward(&text, stabs[j]->end > 0 ? stabs[j]->end - 1 : 0, stabs[j]->start);
      }
      COPS_ASSIGN_OR_RETURN(bool f, flagged(text));
      return !f;
    };
    size_t klo = 0, khi = stabs.size();  // find the smallest m that evades
    COPS_ASSIGN_OR_RETURN(bool all_stabbed, evade_prefix(khi));
    if (!all_stabbed) {
      with_key.Add(static_cast<double>(word_end.size()));  // upper bound: every word
      continue;
    }
    while (klo < khi) {
      size_t mid = (klo + khi) / 2;
      COPS_ASSIGN_OR_RETURN(bool ev, evade_prefix(mid));
      if (ev) khi = mid; else klo = mid + 1;
    }
    with_key.Add(static_cast<double>(klo));
  }
  result.mean_words = words.Get().mean;
  result.mean_chars = chars.Get().mean;
  result.without_key = without_key.Get();
  result.with_key = with_key.Get();
  return result;
}

// ---- Content-word stems -------------------------------------------------------------------

namespace {

// Distinct hashed n-grams of `stems`, sorted.
std::vector<uint64_t> StemGrams(const std::vector<std::string>& stems, int n) {
  std::vector<uint64_t> grams;
  if (stems.size() < static_cast<size_t>(n)) return grams;
  std::vector<uint64_t> h(stems.size());
  for (size_t i = 0; i < stems.size(); ++i) h[i] = std::hash<std::string>{}(stems[i]);
  for (size_t i = 0; i + n <= stems.size(); ++i) {
    uint64_t g = 0x9e3779b97f4a7c15ULL;
    for (int j = 0; j < n; ++j) g = (g ^ h[i + j]) * 0x100000001b3ULL + static_cast<uint64_t>(j);
    grams.push_back(g);
  }
  std::sort(grams.begin(), grams.end());
  grams.erase(std::unique(grams.begin(), grams.end()), grams.end());
  return grams;
}

// Share of `test` (sorted, distinct) also in `source` (sorted, distinct), counting only the
// grams `counts` accepts.
template <typename Counts>
double Containment(const std::vector<uint64_t>& test, const std::vector<uint64_t>& source,
                   const Counts& counts) {
  if (test.empty()) return 0;
  size_t shared = 0;
  for (auto a = test.begin(), b = source.begin(); a != test.end() && b != source.end();) {
    if (*a < *b) {
      ++a;
    } else if (*b < *a) {
      ++b;
    } else {
      shared += counts(*a);
      ++a, ++b;
    }
  }
  return static_cast<double>(shared) / static_cast<double>(test.size());
}

}  // namespace

std::vector<std::string> ContentStems(std::string_view text) {
  CanonicalText canon;
  Canonicalize(text, &canon);
  std::vector<std::string> out;
  out.reserve(canon.tokens.size());
  for (const Token& t : canon.tokens) {
    const std::string_view w = canon.Word(t);
    if (IsStopWord(w)) continue;
    out.push_back(LightStem(w));
  }
  return out;
}

namespace {

// Hashed n-grams of `stems` in text order (not deduplicated).
std::vector<uint64_t> StemGramSequence(const std::vector<std::string>& stems, int n) {
  std::vector<uint64_t> seq;
  if (stems.size() < static_cast<size_t>(n)) return seq;
  std::vector<uint64_t> h(stems.size());
  for (size_t i = 0; i < stems.size(); ++i) h[i] = std::hash<std::string>{}(stems[i]);
  for (size_t i = 0; i + n <= stems.size(); ++i) {
    uint64_t g = 0x9e3779b97f4a7c15ULL;
    for (int j = 0; j < n; ++j) g = (g ^ h[i + j]) * 0x100000001b3ULL + static_cast<uint64_t>(j);
    seq.push_back(g);
  }
  return seq;
}

// Share of the test's stem n-grams inside chains of at least `min_chain` matched grams that
// advance in both texts (gaps of at most 4 grams, advances differing by at most 2): the
// verification stage's passage rule, on stems.
template <typename Counts>
double ChainedShare(const std::vector<uint64_t>& test,
                    const std::unordered_map<uint64_t, std::vector<int>>& source_positions,
                    int min_chain, const Counts& counts) {
  if (test.empty()) return 0;
  struct Chain {
    int last_i, last_j;
    std::vector<int> members;
  };
  std::vector<Chain> chains;
  for (int i = 0; i < static_cast<int>(test.size()); ++i) {
    auto it = source_positions.find(test[i]);
    if (it == source_positions.end() || !counts(test[i])) continue;
    Chain* best = nullptr;
    int best_j = -1;
    for (int j : it->second) {
      for (Chain& c : chains) {
        const int di = i - c.last_i, dj = j - c.last_j;
        if (di < 1 || dj < 1 || di > 5 || dj > 5 || std::abs(di - dj) > 2) continue;
        if (!best || c.members.size() > best->members.size()) best = &c, best_j = j;
      }
    }
    if (best) {
      best->last_i = i, best->last_j = best_j;
      best->members.push_back(i);
    } else {
      chains.push_back({i, it->second.front(), {i}});
    }
  }
  std::vector<bool> covered(test.size(), false);
  for (const Chain& c : chains) {
    if (static_cast<int>(c.members.size()) < min_chain) continue;
    for (int i : c.members) covered[i] = true;
  }
  return static_cast<double>(std::count(covered.begin(), covered.end(), true)) /
         static_cast<double>(test.size());
}

}  // namespace

SettingRun RunStemScorer(const EvalSet& set, int n, int min_chain, uint32_t max_documents) {
  const auto start = std::chrono::steady_clock::now();
  n = std::max(n, 1);
  std::vector<std::vector<uint64_t>> sources;
  std::vector<std::unordered_map<uint64_t, std::vector<int>>> positions;
  std::unordered_map<uint64_t, uint32_t> documents;  // registered documents holding a gram
  sources.reserve(set.sources.size());
  for (const SourceDoc& s : set.sources) {
    const std::vector<std::string> stems = ContentStems(s.text);
    sources.push_back(StemGrams(stems, n));
    if (max_documents > 0) {
      for (uint64_t g : sources.back()) ++documents[g];
    }
    if (min_chain > 0) {
      std::unordered_map<uint64_t, std::vector<int>> pos;
      const std::vector<uint64_t> seq = StemGramSequence(stems, n);
      for (int j = 0; j < static_cast<int>(seq.size()); ++j) pos[seq[j]].push_back(j);
      positions.push_back(std::move(pos));
    }
  }
  auto counts = [&](uint64_t gram) {
    if (max_documents == 0) return true;
    auto it = documents.find(gram);
    return it == documents.end() || it->second < max_documents;
  };
  SettingRun run;
  run.scores.resize(set.tests.size());
  for (size_t i = 0; i < set.tests.size(); ++i) {
    const TestDoc& t = set.tests[i];
    const std::vector<std::string> stems = ContentStems(t.text);
    const std::vector<uint64_t> grams = StemGrams(stems, n);
    const std::vector<uint64_t> seq = min_chain > 0 ? StemGramSequence(stems, n)
                                                    : std::vector<uint64_t>{};
    TestScore& score = run.scores[i];
    for (size_t j = 0; j < sources.size(); ++j) {
      const double c = min_chain > 0 ? ChainedShare(seq, positions[j], min_chain, counts)
                                     : Containment(grams, sources[j], counts);
      if (static_cast<int>(j) == t.source) {
        score.source_ratio = c;
      } else {
        score.other_ratio = std::max(score.other_ratio, c);
      }
    }
    score.source_candidate = true;  // every source is read
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace cops::eval
