// cops-eval: measures COPS accuracy on evaluation sets (see docs/accuracy.md).
//
//   cops-eval check  --sources DIR --tests DIR --truth FILE [--setting SPEC] [--scan]
//                    [--decisions FILE] [--explain FILE]
//   cops-eval report --set DIR --heldout DIR [--out FILE] [--quick]
//   cops-eval stock-phrases --corpus DIR... [--out FILE] [--min-documents N] ...
//
// `check` evaluates one setting (the project defaults unless --setting overrides them) and
// prints per-category precision, recall and F1; --scan also picks the best threshold.
// `report` runs the whole study (sweep, enhancements, sampling, security) and writes the
// Markdown tables of docs/accuracy.md.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "eval/eval_set.h"
#include "eval/evaluator.h"
#include "eval/stock_phrases.h"

namespace cops::eval {
namespace {

std::string Pct(double x) { return absl::StrFormat("%.1f%%", 100 * x); }
std::string F3(double x) { return absl::StrFormat("%.3f", x); }
std::string Ms(const MeanSd& m) { return absl::StrFormat("%.3f ± %.3f", m.mean, m.sd); }

std::string CategoryTable(const Metrics& m) {
  std::ostringstream o;
  o << "| category | tests | TP | FP | FN | precision | recall | F1 |\n"
       "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Counts& c : m.per_category) {
    if (c.tp + c.fn == 0) {
      o << "| " << c.category << " (no violation expected) | " << c.tests << " | | " << c.fp
        << " | | | | false alarms " << Pct(double(c.fp) / c.tests) << " |\n";
    } else {
      o << "| " << c.category << " | " << c.tests << " | " << c.tp << " | " << c.fp << " | "
        << c.fn << " | " << F3(c.Precision()) << " | " << F3(c.Recall()) << " | "
        << F3(c.F1()) << " |\n";
    }
  }
  const Counts& a = m.overall;
  o << "| **overall** | " << a.tests << " | " << a.tp << " | " << a.fp << " | " << a.fn
    << " | " << F3(a.Precision()) << " | " << F3(a.Recall()) << " | " << F3(a.F1()) << " |\n";
  std::string worst;
  double min_f1 = m.MinRequiredF1(&worst);
  o << "\nThreshold " << m.threshold << "; lowest F1 outside heavy substitution: " << F3(min_f1)
    << (worst.empty() ? "" : " (" + worst + ")") << "; false alarms on unrelated documents: "
    << m.false_alarms << "/" << m.negatives << " = " << Pct(m.FalseAlarmRate()) << ".\n";
  return o.str();
}

int DecisionAgreement(const EvalSet& set, const SettingRun& run, int* total) {
  // Decide() at the setting's threshold against Score()'s reading of the ratios.
  int agree = 0;
  *total = 0;
  const double t = run.setting.options.threshold;
  for (size_t i = 0; i < set.tests.size(); ++i) {
    const TestScore& s = run.scores[i];
    bool flagged = s.source_ratio >= t || s.other_ratio >= t;
    agree += flagged == s.decided;
    ++*total;
  }
  return agree;
}

int Fail(const absl::Status& s) {
  std::cerr << "cops-eval: " << s << "\n";
  return 1;
}

int RunCheck(const std::string& sources, const std::string& tests, const std::string& truth,
             const std::string& spec, bool scan, const std::string& decisions,
             const std::string& explain, uint32_t key_index, int stem_ngrams, int stem_chain, uint32_t stem_max_df) {
  auto set = LoadEvalSet(sources, tests, truth);
  if (!set.ok()) return Fail(set.status());
  auto setting = ParseSetting(spec, Setting{});
  if (!setting.ok()) return Fail(setting.status());
  absl::StatusOr<SettingRun> run =
      stem_ngrams > 0 ? RunStemScorer(*set, stem_ngrams, stem_chain, stem_max_df)
                      : RunSetting(*set, *setting, NthEvalKey(key_index));
  if (!run.ok()) return Fail(run.status());
  if (stem_ngrams > 0) run->setting = *setting;  // only its threshold is used
  double t = setting->options.threshold;
  if (stem_ngrams > 0) {
    std::cout << "content-stem " << stem_ngrams << "-gram containment"
              << (stem_chain > 0 ? StrCat(" in chains of ", stem_chain, "+") : std::string())
              << (stem_max_df > 0 ? StrCat(", held by fewer than ", stem_max_df, " registered")
                                  : std::string())
              << ", threshold " << t << "\n";
  }
  std::cout << "setting: " << setting->Describe() << "\n"
            << "sources: " << set->sources.size() << ", tests: " << set->tests.size()
            << ", stored chunks: " << run->source_stored_chunks << "/" << run->source_total_chunks
            << " = " << Pct(run->StoredRatio()) << "\n";
  if (setting->params.verify_k > 0) {
    std::cout << "candidate recall (true sources among the first stage's candidates): "
              << F3(CandidateRecall(*set, *run)) << "\n";
  }
  std::cout << "\n" << CategoryTable(Score(*set, *run, t));
  if (setting->params.verify_k > 0 && stem_ngrams == 0) {
    uint32_t passages = 0, reports = 0;
    for (const TestScore& s : run->scores) {
      passages += s.stock_only_passages;
      reports += s.stock_only_passages > 0;
    }
    std::cout << "Counted passages made only of phrases common in the language: " << passages
              << " in " << reports << " reports.\n";
  }
  if (scan) {
    double best = ChooseThreshold(*set, *run);
    Metrics m = Score(*set, *run, best);
    std::cout << "\nBest threshold on this set: " << best
              << (MeetsTargets(m) ? " (meets the targets)" : " (targets not met)") << "\n\n"
              << CategoryTable(m);
  }
  if (!decisions.empty()) {
    std::ofstream out(decisions);
    out << "# test_file\tcategory\tdecided\tsource_ratio\tother_ratio\tsource_candidate\n";
    for (size_t i = 0; i < set->tests.size(); ++i) {
      const TestScore& s = run->scores[i];
      out << set->tests[i].name << "\t" << set->tests[i].category << "\t" << s.decided << "\t"
          << s.source_ratio << "\t" << s.other_ratio << "\t" << s.source_candidate << "\n";
    }
    if (!out) return Fail(absl::InternalError("cannot write " + decisions));
  }
  if (!explain.empty()) {
    std::ofstream out(explain);
    for (size_t i = 0; i < set->tests.size(); ++i) {
      const TestScore& s = run->scores[i];
      if (!s.decided) continue;
      out << "== " << set->tests[i].name << " (" << set->tests[i].category << ")\n"
          << s.evidence;
    }
    if (!out) return Fail(absl::InternalError("cannot write " + explain));
  }
  return 0;
}

std::vector<Setting> SweepGrid(bool quick) {
  std::vector<Setting> grid;
  struct Sel {
    SelectionKind kind;
    uint32_t p, w;
  };
  const std::vector<Sel> sels = quick
      ? std::vector<Sel>{{SelectionKind::kAll, 4, 8}, {SelectionKind::kWinnowing, 4, 8}}
      : std::vector<Sel>{{SelectionKind::kAll, 4, 8},       {SelectionKind::kModP, 4, 8},
                         {SelectionKind::kModP, 8, 8},      {SelectionKind::kWinnowing, 4, 8},
                         {SelectionKind::kWinnowing, 4, 16}};
  struct Shape {
    UnitKind unit;
    ChunkStrategy strategy;
    uint32_t k;
  };
  std::vector<Shape> shapes;
  using U = UnitKind;
  using S = ChunkStrategy;
  // Not word one_unit: every common word matches every document, so it is pure noise
  // (the paper's point) and tallying its postings takes minutes per setting.
  for (uint32_t k : {3u, 5u, 8u}) shapes.push_back({U::kWord, S::kNonOverlapping, k});
  for (uint32_t k : {3u, 5u, 8u}) shapes.push_back({U::kWord, S::kOverlapping, k});
  for (uint32_t k : {4u, 8u}) shapes.push_back({U::kWord, S::kHashedBreakpoints, k});
  shapes.push_back({U::kSentence, S::kOneUnit, 1});
  for (uint32_t k : {2u, 3u}) shapes.push_back({U::kSentence, S::kNonOverlapping, k});
  for (uint32_t k : {2u, 3u}) shapes.push_back({U::kSentence, S::kOverlapping, k});
  for (uint32_t k : {2u, 3u}) shapes.push_back({U::kSentence, S::kHashedBreakpoints, k});
  if (quick) {
    shapes = {{U::kWord, S::kOverlapping, 5}, {U::kSentence, S::kOneUnit, 1}};
  }
  for (const Shape& sh : shapes) {
    for (const Sel& sel : sels) {
      Setting s;
      s.params.unit = sh.unit;
      s.params.strategy = sh.strategy;
      s.params.k = sh.k;
      s.params.selection = sel.kind;
      s.params.p = sel.p;
      s.params.w = sel.w;
      s.params.enhancements = Enhancements{};
      s.options.max_doc_frequency = 0;
      s.options.revision_share = 0;  // chunkings are compared by their chunks alone
      // A passage is measured in units: 8 words, or a single sentence.
      s.options.min_passage_units = sh.unit == U::kWord ? 8 : 1;
      grid.push_back(s);
    }
  }
  return grid;
}

struct Scored {
  SettingRun run;
  Metrics metrics;
  bool feasible = false;
  int band = 0;  // thresholds of 0.01..0.95 meeting the targets (ChooseThreshold)
};

Scored Evaluate(const EvalSet& set, SettingRun run) {
  Scored s;
  double t = ChooseThreshold(set, run, &s.band);
  run.setting.options.threshold = t;
  s.metrics = Score(set, run, t);
  s.feasible = MeetsTargets(s.metrics) && run.StoredRatio() <= 0.25;
  s.run = std::move(run);
  return s;
}

std::string SweepRow(const Scored& s) {
  std::string worst;
  double min_f1 = s.metrics.MinRequiredF1(&worst);
  auto recall = [&](const char* c) {
    const Counts* k = s.metrics.Find(c);
    return k ? F3(k->Recall()) : std::string("-");
  };
  return StrCat("| ", s.run.setting.Describe(), " | ", Pct(s.run.StoredRatio()), " | ",
                s.metrics.threshold, " | ", F3(min_f1), " (", worst.empty() ? "-" : worst, ") | ",
                Pct(s.metrics.FalseAlarmRate()), " | ", F3(s.metrics.overall.F1()), " | ",
                recall("subst_20"), " | ", recall("subst_30"), " | ", s.band, " | ",
                s.feasible ? "yes" : "no", " |\n");
}

constexpr char kSweepHeader[] =
    "| setting | stored | threshold | min F1 (worst category) | false alarms | overall F1 | "
    "recall subst 20% | recall subst 30% | thresholds meeting targets | meets targets |\n"
    "|---|---:|---:|---|---:|---:|---:|---:|---:|---|\n";

std::string AffinityTable(const std::vector<AffinityRow>& rows) {
  std::ostringstream o;
  o << "| enhancement | self | related | unrelated (all pairs) | unrelated (best source) |\n"
       "|---|---|---|---|---|\n";
  for (const AffinityRow& r : rows) {
    o << "| " << r.name << " | " << Ms(r.self) << " | " << Ms(r.related) << " | "
      << Ms(r.unrelated) << " | " << Ms(r.unrelated_max) << " |\n";
  }
  return o.str();
}

// The enhancement variants of the paper's table, applied to `base`.
std::vector<std::pair<std::string, Setting>> EnhancementVariants(const Setting& base) {
  std::vector<std::pair<std::string, Setting>> v;
  Setting none = base;
  none.params.enhancements = Enhancements{};
  none.options.max_doc_frequency = 0;
  v.push_back({"none", none});
  Setting s = none;
  s.options.max_doc_frequency = 5;
  v.push_back({"common chunks (max_doc_frequency=5)", s});
  s = none;
  s.params.enhancements.drop_numbers = true;
  v.push_back({"drop numbers", s});
  s = none;
  s.params.enhancements.min_sentence_words = 4;
  v.push_back({"short sentences (< 4 words)", s});
  s = none;
  s.params.enhancements.min_word_chars = 3;
  v.push_back({"short words (< 3 chars)", s});
  s = none;
  s.params.enhancements.drop_stop_words = true;
  v.push_back({"stop words", s});
  s = none;
  s.options.max_doc_frequency = 5;
  s.params.enhancements.drop_numbers = true;
  s.params.enhancements.min_sentence_words = 4;
  s.params.enhancements.min_word_chars = 3;
  v.push_back({"all four of the paper", s});
  return v;
}

// The threshold of 0.01..0.95 with the best overall F1 (ties: the lower threshold).
double BestF1Threshold(const EvalSet& set, const SettingRun& run) {
  double best_t = 0.01, best_f1 = -1;
  for (int i = 1; i <= 95; ++i) {
    const double t = i / 100.0;
    const double f1 = Score(set, run, t).overall.F1();
    if (f1 > best_f1 + 1e-12) {
      best_f1 = f1;
      best_t = t;
    }
  }
  return best_t;
}

// Categories of `set` that expect violations, in first-seen order.
std::vector<std::string> PositiveCategories(const EvalSet& set) {
  std::vector<std::string> out;
  for (const TestDoc& t : set.tests) {
    if (t.expected_violation && std::find(out.begin(), out.end(), t.category) == out.end()) {
      out.push_back(t.category);
    }
  }
  return out;
}

// The project defaults, without heavy revisions, without verification, and the plain baseline
// (every word 3-gram, no sampling, no verification: the containment of the test's 3-grams in a
// source) on one set. The baseline is shown at its own best threshold.
absl::Status ComparisonTable(const EvalSet& set, std::ostream& o) {
  const std::vector<std::string> cats = PositiveCategories(set);
  Setting defaults;
  Setting sampled = defaults;
  sampled.params.verify_k = 0;
  sampled.params.dense_chunks = 0;
  Setting baseline = sampled;
  baseline.params.k = 3;
  baseline.params.selection = SelectionKind::kAll;
  baseline.options.revision_share = 0;
  Setting stems = defaults;  // an index made with `copsd --stem-pairs 1`
  stems.params.stem_pairs = 1;
  stems.params.stem_version = kStemPairsVersion;
  Setting passages = defaults;  // copsd --heavy-revisions=false
  passages.options.revision_share = 0;
  // Each setting is run once; a row scores one run at one threshold.
  std::vector<SettingRun> runs;
  for (const Setting* s : {&defaults, &sampled, &baseline, &stems, &passages}) {
    COPS_ASSIGN_OR_RETURN(SettingRun run, RunSetting(set, *s));
    runs.push_back(std::move(run));
  }
  struct Row {
    std::string name;
    const SettingRun* run;
    bool own_threshold;
  };
  const std::vector<Row> rows = {
      {"defaults: candidates from the sampled index, verified on word 3-grams", &runs[0], false},
      {"defaults without heavy revisions (`revision_share=0`)", &runs[4], false},
      {"sampled index alone (verification off)", &runs[1], false},
      {"baseline: unsampled word-3-gram containment, same threshold", &runs[2], false},
      {"baseline: unsampled word-3-gram containment (own best threshold)", &runs[2], true},
      {"defaults on an index with content-stem pairs (`stem_pairs=1`)", &runs[3], false}};
  o << "| setting | threshold |";
  for (const std::string& c : cats) o << " recall " << c << " |";
  o << " false alarms | overall F1 | candidate recall |\n|---|---:|";
  for (size_t i = 0; i < cats.size(); ++i) o << "---:|";
  o << "---:|---:|---:|\n";
  for (const Row& r : rows) {
    const SettingRun& run = *r.run;
    const double t = r.own_threshold ? BestF1Threshold(set, run) : run.setting.options.threshold;
    const Metrics m = Score(set, run, t);
    o << "| " << r.name << " | " << t << " |";
    for (const std::string& c : cats) {
      const Counts* k = m.Find(c);
      o << " " << (k ? F3(k->Recall()) : "-") << " |";
    }
    o << " " << m.false_alarms << "/" << m.negatives << " = " << Pct(m.FalseAlarmRate())
      << " | " << F3(m.overall.F1()) << " | "
      << (run.setting.params.verify_k ? F3(CandidateRecall(set, run)) : "-") << " |\n";
  }
  return absl::OkStatus();
}

// The defaults under `keys` hashing keys (each fresh index draws its own key, and with it
// another sample of each document's chunks), summed up in one line.
absl::Status KeySpreadTable(const EvalSet& set, int keys, std::ostream& o) {
  Setting defaults;
  double lo = 2, hi = -1, cand_lo = 2;
  int fa_hi = 0;
  for (int k = 0; k < keys; ++k) {
    COPS_ASSIGN_OR_RETURN(SettingRun run, RunSetting(set, defaults, NthEvalKey(k)));
    const Metrics m = Score(set, run, defaults.options.threshold);
    const double f1 = m.overall.F1();
    const double cand = CandidateRecall(set, run);
    lo = std::min(lo, f1);
    hi = std::max(hi, f1);
    cand_lo = std::min(cand_lo, cand);
    fa_hi = std::max(fa_hi, m.false_alarms);
  }
  o << "The defaults over " << keys << " hashing keys: overall F1 " << F3(lo) << " to "
    << F3(hi) << " (spread " << F3(hi - lo) << "), at most " << fa_hi << " false alarms, candidate recall at least "
    << F3(cand_lo) << ".\n";
  return absl::OkStatus();
}

// Human-made revisions (P4P, eval/make_p4p_set.py): for each shape (pairs, docs), the
// defaults, the plain baseline at the same fixed threshold, and the defaults on an index with
// content-stem pairs, on the dev and the held-out part. Every threshold not fixed in advance
// is chosen on dev (best overall F1) and applied unchanged to held-out.
absl::Status HumanTables(const std::string& root, std::ostream& o) {
  Setting defaults;
  // Every content-stem pair kept (`--setting stem_pairs=1`); the pairs' own threshold and
  // rarity are CheckOptions' defaults, chosen on dev and the same-genre set
  // (eval/make_same_genre_set.py) before held-out was run.
  Setting stems = defaults;
  stems.params.stem_pairs = 1;
  stems.params.stem_version = kStemPairsVersion;
  Setting baseline = defaults;
  baseline.params.verify_k = 0;
  baseline.params.dense_chunks = 0;
  baseline.params.k = 3;
  baseline.params.selection = SelectionKind::kAll;
  baseline.options.revision_share = 0;
  Setting passages = defaults;  // copsd --heavy-revisions=false
  passages.options.revision_share = 0;
  const double fixed = defaults.options.threshold;
  for (const char* shape : {"pairs", "docs"}) {
    COPS_ASSIGN_OR_RETURN(EvalSet dev, LoadEvalSetDir(StrCat(root, "/dev/", shape)));
    COPS_ASSIGN_OR_RETURN(EvalSet held, LoadEvalSetDir(StrCat(root, "/heldout/", shape)));
    struct Runs {
      SettingRun def, base, stems, passages;
    };
    auto run_all = [&](const EvalSet& set) -> absl::StatusOr<Runs> {
      Runs r;
      COPS_ASSIGN_OR_RETURN(r.def, RunSetting(set, defaults));
      COPS_ASSIGN_OR_RETURN(r.base, RunSetting(set, baseline));
      COPS_ASSIGN_OR_RETURN(r.stems, RunSetting(set, stems));
      COPS_ASSIGN_OR_RETURN(r.passages, RunSetting(set, passages));
      return r;
    };
    COPS_ASSIGN_OR_RETURN(Runs d, run_all(dev));
    COPS_ASSIGN_OR_RETURN(Runs h, run_all(held));
    // The lowest threshold keeping dev false alarms at most 0.5% (issue 17's limit).
    auto quiet = [&](const SettingRun& run) {
      for (int i = 1; i <= 95; ++i) {
        if (Score(dev, run, i / 100.0).FalseAlarmRate() <= 0.005) return i / 100.0;
      }
      return 0.95;
    };
    const double t_def = BestF1Threshold(dev, d.def);
    const double t_base = BestF1Threshold(dev, d.base);
    const double q_base = quiet(d.base);
    int positives = 0;
    for (const TestDoc& t : held.tests) positives += t.expected_violation;
    o << "**" << shape << "**: dev " << dev.sources.size() << " registered, "
      << dev.tests.size() << " checked; held-out " << held.sources.size() << " registered, "
      << held.tests.size() << " checked (" << positives << " paraphrases).\n\n"
      << "| setting | threshold | dev P | dev R | dev F1 | dev false alarms | held-out P | "
         "held-out R | held-out F1 | held-out false alarms |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    struct Row {
      std::string name, threshold;
      const SettingRun *dev, *held;
      double t;
    };
    const std::vector<Row> rows = {
        {"defaults: 3-gram passages of 8+ words, or ordered 3-grams (a heavy revision)", F3(fixed),
         &d.def, &h.def, fixed},
        {"passages alone (`revision_share=0`: copsd --heavy-revisions=false)", F3(fixed),
         &d.passages, &h.passages, fixed},
        {"defaults, threshold chosen on dev", F3(t_def), &d.def, &h.def, t_def},
        {"baseline: unsampled word-3-gram containment", F3(fixed), &d.base, &h.base, fixed},
        {"baseline, threshold chosen on dev", F3(t_base), &d.base, &h.base, t_base},
        {"baseline, lowest dev threshold with <= 0.5% false alarms", F3(q_base), &d.base, &h.base,
         q_base},
        {"defaults on an index with content-stem pairs (`stem_pairs=1`): also a violation at "
         ">= " +
             std::to_string(std::lround(100 * CheckOptions{}.stem_pair_threshold)) +
             "% and >= " + std::to_string(CheckOptions{}.stem_pair_min_shared) +
             " of the test's pairs that no other registered document holds, in the order "
             "of both texts",
         F3(fixed), &d.stems, &h.stems, fixed}};
    for (const Row& r : rows) {
      o << "| " << r.name << " | " << r.threshold << " |";
      for (const auto& [set, run] : {std::pair<const EvalSet*, const SettingRun*>{&dev, r.dev},
                                     {&held, r.held}}) {
        const Metrics m = Score(*set, *run, r.t);
        o << " " << F3(m.overall.Precision()) << " | " << F3(m.overall.Recall()) << " | "
          << F3(m.overall.F1()) << " | " << m.false_alarms << "/" << m.negatives << " |";
      }
      o << "\n";
    }
    o << "\n";
  }
  return absl::OkStatus();
}

std::string DescribeSet(const EvalSet& s) {
  int neg = 0;
  for (const TestDoc& t : s.tests) neg += !t.expected_violation;
  return StrCat(s.sources.size(), " sources, ", s.tests.size(), " tests (", neg, " unrelated)");
}

// 0. Short revised texts (the pipeline's reason to verify), human-made revisions (P4P, when
// `p4p_dir` is set) and the defaults beside the baseline on the main and held-out sets.
absl::Status ReportComparisons(const EvalSet& main_set, const EvalSet& held,
                               const std::vector<std::string>& short_dirs,
                               const std::string& p4p_dir, bool quick, std::ostream& o) {
  for (const std::string& dir : short_dirs) {
    COPS_ASSIGN_OR_RETURN(EvalSet set, LoadEvalSetDir(dir));
    std::string corpus;
    std::ifstream(dir + "/corpus.txt") >> corpus;
    if (corpus.rfind("corpus=", 0) == 0) corpus = corpus.substr(7);
    o << "### Short revised texts: " << corpus << "\n\n" << DescribeSet(set) << ".\n\n";
    COPS_RETURN_IF_ERROR(ComparisonTable(set, o));
    o << "\n";
    COPS_RETURN_IF_ERROR(KeySpreadTable(set, quick ? 2 : 5, o));
    o << "\n";
    std::cerr << "cops-eval: short set " << dir << " done\n";
  }
  if (!p4p_dir.empty()) {
    o << "### Human-made revisions: P4P (dev and held-out)\n\n";
    COPS_RETURN_IF_ERROR(HumanTables(p4p_dir, o));
    std::cerr << "cops-eval: P4P sets done\n";
  }
  o << "### Defaults beside the baseline (main and held-out sets)\n\nMain set:\n\n";
  COPS_RETURN_IF_ERROR(ComparisonTable(main_set, o));
  o << "\nHeld-out set:\n\n";
  COPS_RETURN_IF_ERROR(ComparisonTable(held, o));
  o << "\n";
  return absl::OkStatus();
}

// 1. The sweep of the sampled index alone (the paper's study: verification off), without
// enhancements; each setting at its own best threshold. 2. Its best setting: meets the
// targets, then highest overall F1, then the widest band of thresholds meeting the targets
// (robustness on other corpora), then least storage.
absl::StatusOr<Setting> ReportSweep(const EvalSet& main_set, bool quick, std::ostream& o) {
  std::vector<Scored> sweep;
  o << "### Sweep of the sampled index alone (main set, no verification, no enhancements, each "
       "setting at its best threshold)\n\n"
    << kSweepHeader;
  for (Setting s : SweepGrid(quick)) {
    s.params.verify_k = 0;
    s.params.dense_chunks = 0;
    COPS_ASSIGN_OR_RETURN(SettingRun run, RunSetting(main_set, s));
    sweep.push_back(Evaluate(main_set, std::move(run)));
    o << SweepRow(sweep.back());
    std::cerr << "cops-eval: " << sweep.back().run.setting.Describe() << " done in "
              << absl::StrFormat("%.1f", sweep.back().run.seconds) << " s\n";
  }
  const Scored* best = nullptr;
  for (const Scored& s : sweep) {
    auto key = [](const Scored& x) {
      return std::make_tuple(x.feasible, x.run.StoredRatio() <= 0.25,
                             x.metrics.FalseAlarmRate() < 0.005,
                             x.feasible ? x.metrics.overall.F1() : x.metrics.MinRequiredF1(),
                             x.band, -x.run.StoredRatio());
    };
    if (!best || key(s) > key(*best)) best = &s;
  }
  o << "\nBest setting of the sweep: **" << best->run.setting.Describe() << "** at threshold "
    << best->metrics.threshold
    << (best->feasible ? " (meets every target)" : " (no setting meets every target)")
    << ".\n\n";
  return best->run.setting;
}

// 3. Enhancements on the `best` setting: accuracy and the affinity/noise table, and the same
// table for the paper's own setting. Returns the chosen variant's setting.
absl::StatusOr<Setting> ReportEnhancements(const EvalSet& main_set, const Setting& best,
                                           std::ostream& o) {
  o << "### Enhancements on the best setting (main set)\n\n" << kSweepHeader;
  std::vector<Scored> variants;
  std::vector<AffinityRow> affinity;
  for (auto& [name, s] : EnhancementVariants(best)) {
    COPS_ASSIGN_OR_RETURN(SettingRun run, RunSetting(main_set, s));
    variants.push_back(Evaluate(main_set, std::move(run)));
    o << SweepRow(variants.back());
    COPS_ASSIGN_OR_RETURN(AffinityRow row, MeasureAffinity(main_set, s, name));
    affinity.push_back(row);
  }
  const Scored* chosen = &variants.front();
  for (const Scored& v : variants) {
    auto key = [](const Scored& x) {
      return std::make_tuple(x.feasible, x.metrics.FalseAlarmRate() < 0.005,
                             x.metrics.MinRequiredF1(), x.metrics.overall.F1(),
                             -x.metrics.FalseAlarmRate());
    };
    if (key(v) > key(*chosen)) chosen = &v;
  }
  o << "\nAffinity and noise: mean ± standard deviation of the match ratio (matched / test "
       "chunks).\n\n"
    << AffinityTable(affinity);

  Setting paper;
  paper.params.unit = UnitKind::kSentence;
  paper.params.verify_k = 0;  // the paper's own decision: no verification
  paper.params.dense_chunks = 0;
  paper.params.strategy = ChunkStrategy::kOneUnit;
  paper.params.selection = SelectionKind::kAll;
  paper.options.min_passage_units = 1;
  paper.options.revision_share = 0;
  std::vector<AffinityRow> paper_rows;
  for (auto& [name, s] : EnhancementVariants(paper)) {
    COPS_ASSIGN_OR_RETURN(AffinityRow row, MeasureAffinity(main_set, s, name));
    paper_rows.push_back(row);
  }
  o << "\nThe same for the paper's own setting (one sentence per chunk, all chunks):\n\n"
    << AffinityTable(paper_rows);
  return chosen->run.setting;
}

// 4. The project defaults on both sets: the `chosen` sampled index, verified, at the
// project's default threshold. Returns that setting.
absl::StatusOr<Setting> ReportDefaults(const EvalSet& main_set, const EvalSet& held,
                                       const Setting& chosen, std::ostream& o) {
  Setting def = chosen;
  def.params.verify_k = Setting{}.params.verify_k;
  def.params.dense_chunks = Setting{}.params.dense_chunks;
  def.options.threshold = Setting{}.options.threshold;
  def.options.revision_share = Setting{}.options.revision_share;
  COPS_ASSIGN_OR_RETURN(const SettingRun def_run, RunSetting(main_set, def));
  const Metrics def_metrics = Score(main_set, def_run, def.options.threshold);
  o << "\n### Project defaults: " << def.Describe() << ", threshold " << def.options.threshold
    << "\n\nStored chunks: " << Pct(def_run.StoredRatio()) << " of all chunks.\n\n"
    << "Main set:\n\n"
    << CategoryTable(def_metrics);
  int total = 0;
  int agree = DecisionAgreement(main_set, def_run, &total);
  o << "MatchSet::Decide() at this threshold agrees with the scored decision on " << agree
    << "/" << total << " tests.\n\n";
  COPS_ASSIGN_OR_RETURN(const SettingRun held_run, RunSetting(held, def));
  Metrics held_metrics = Score(held, held_run, def.options.threshold);
  o << "Held-out set (same setting and threshold, not tuned on it); stored chunks "
    << Pct(held_run.StoredRatio()) << ":\n\n"
    << CategoryTable(held_metrics) << "\n";
  return def;
}

// 5. Test-time sampling and 6. security, of the default setting `def`.
absl::Status ReportSamplingAndSecurity(const EvalSet& main_set, const Setting& def, bool quick,
                                       std::ostream& o) {
  std::vector<uint32_t> ns = {10, 20, 50, 100, 200};
  COPS_ASSIGN_OR_RETURN(const std::vector<SamplingRow> sampling,
                        MeasureSampling(main_set, def, ns, quick ? 1 : 3));
  o << "### Test-time sampling (main set, chosen default)\n\n"
    << "| n | full-decision violations | measured miss | predicted miss | no-violation "
       "decisions | measured false alarm | predicted false alarm |\n"
       "|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const SamplingRow& r : sampling) {
    o << "| " << r.n << " | " << r.positives << " | " << Pct(r.measured_miss) << " | "
      << Pct(r.predicted_miss) << " | " << r.negatives << " | "
      << Pct(r.measured_false_alarm) << " | " << Pct(r.predicted_false_alarm) << " |\n";
  }

  auto sec = MeasureSecurity(main_set, def, quick ? 5 : 20);
  if (!sec.ok()) return sec.status();
  o << "\n### Security (chosen default, exact copies of " << sec->documents
    << " sources)\n\n"
    << absl::StrFormat(
           "Average document: %.0f words, %.0f characters. One-character edits needed to "
           "evade detection:\n\n"
           "| attacker | edits (mean ± sd) | share of words |\n|---|---:|---:|\n"
           "| without the key (evenly spaced edits) | %.1f ± %.1f | %s |\n"
           "| with the key (edits on selected chunks) | %.1f ± %.1f | %s |\n",
           sec->mean_words, sec->mean_chars, sec->without_key.mean, sec->without_key.sd,
           Pct(sec->without_key.mean / sec->mean_words), sec->with_key.mean, sec->with_key.sd,
           Pct(sec->with_key.mean / sec->mean_words));
  return absl::OkStatus();
}

// The whole report (docs/accuracy.md's tables), in the order of the steps above.
absl::Status WriteReport(const EvalSet& main_set, const EvalSet& held,
                         const std::vector<std::string>& short_dirs, const std::string& p4p_dir,
                         bool quick, std::ostream& o) {
  o << "Main set: " << DescribeSet(main_set) << ". Held-out set: " << DescribeSet(held)
    << ".\n\n";
  COPS_RETURN_IF_ERROR(ReportComparisons(main_set, held, short_dirs, p4p_dir, quick, o));
  COPS_ASSIGN_OR_RETURN(const Setting best, ReportSweep(main_set, quick, o));
  COPS_ASSIGN_OR_RETURN(const Setting chosen, ReportEnhancements(main_set, best, o));
  COPS_ASSIGN_OR_RETURN(const Setting def, ReportDefaults(main_set, held, chosen, o));
  return ReportSamplingAndSecurity(main_set, def, quick, o);
}

int RunReport(const std::string& main_dir, const std::string& heldout_dir,
              const std::vector<std::string>& short_dirs, const std::string& p4p_dir,
              const std::string& out_path, bool quick) {
  auto main_set = LoadEvalSetDir(main_dir);
  if (!main_set.ok()) return Fail(main_set.status());
  auto held = LoadEvalSetDir(heldout_dir);
  if (!held.ok()) return Fail(held.status());
  std::ostringstream o;
  if (absl::Status st = WriteReport(*main_set, *held, short_dirs, p4p_dir, quick, o); !st.ok()) {
    return Fail(st);
  }
  if (out_path.empty()) {
    std::cout << o.str();
  } else {
    std::ofstream out(out_path);
    out << o.str();
    if (!out) return Fail(absl::InternalError("cannot write " + out_path));
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"cops-eval: accuracy of COPS settings on evaluation sets (docs/accuracy.md)"};
  app.require_subcommand(1);
  std::string sources, tests, truth, spec, decisions, explain, set_dir, held_dir, out;
  bool scan = false, quick = false;
  CLI::App* check = app.add_subcommand("check", "evaluate one setting on one set");
  check->add_option("--sources", sources, "folder of registered documents")->required();
  check->add_option("--tests", tests, "folder of test documents")->required();
  check->add_option("--truth", truth, "ground-truth TSV")->required();
  check->add_option("--setting", spec,
                    "overrides of the defaults, e.g. \"unit=word k=5 threshold=0.3\"");
  check->add_flag("--scan", scan, "also choose the best threshold on this set");
  check->add_option("--decisions", decisions, "write per-test decisions and ratios (TSV)");
  check->add_option("--explain", explain,
                    "write each flagged test's violating documents and their passages");
  uint32_t key_index = 0;
  check->add_option("--key-index", key_index,
                    "hashing key: 0 = the fixed evaluation key, n = the n-th other one");
  int stem_ngrams = 0;
  check->add_option("--stem-ngrams", stem_ngrams,
                    "score with the eval-side content-stem n-gram scorer instead (n >= 1; "
                    "only the setting's threshold applies)")
      ->check(CLI::PositiveNumber);
  int stem_chain = 0;
  check->add_option("--stem-chain", stem_chain,
                    "with --stem-ngrams: count only n-grams in ordered chains of this many");
  uint32_t stem_max_df = 0;
  check->add_option("--stem-max-df", stem_max_df,
                    "with --stem-ngrams: n-grams held by this many registered documents or "
                    "more count for nothing (0 = no limit)");
  CLI::App* report = app.add_subcommand("report", "the whole study, as Markdown tables");
  report->add_option("--set", set_dir, "main set folder (sources/, tests/, truth.tsv)")
      ->required();
  report->add_option("--heldout", held_dir, "held-out set folder")->required();
  report->add_option("--out", out, "Markdown output file (default: stdout)");
  report->add_flag("--quick", quick, "a reduced grid (for smoke tests)");
  std::vector<std::string> short_dirs;
  report->add_option("--short", short_dirs, "short revised set folder (repeatable)");
  std::string p4p_dir;
  report->add_option("--p4p", p4p_dir, "P4P sets (eval/make_p4p_set.py --out folder)");
  CLI::App* human = app.add_subcommand(
      "human", "defaults, baseline and content-stem scorer on the P4P dev and held-out sets");
  human->add_option("--dir", p4p_dir, "eval/make_p4p_set.py --out folder")->required();
  std::vector<std::string> corpora;
  StockPhraseOptions stock;
  CLI::App* stock_cmd = app.add_subcommand(
      "stock-phrases", "phrases common in the language, from background corpora (core/stock_phrases.h)");
  stock_cmd->add_option("--corpus", corpora, "a folder of documents (repeatable)")->required();
  stock_cmd->add_option("--out", out, "output file (default: stdout)");
  stock_cmd->add_option("--words", stock.words, "words per phrase");
  stock_cmd->add_option("--min-documents", stock.min_documents, "documents using a phrase");
  stock_cmd->add_option("--min-corpora", stock.min_corpora, "corpora using a phrase");
  stock_cmd->add_option("--max-phrases", stock.max_phrases, "the most used ones kept");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (*check) {
    return RunCheck(sources, tests, truth, spec, scan, decisions, explain, key_index, stem_ngrams,
                    stem_chain, stem_max_df);
  }
  if (*stock_cmd) {
    std::ostringstream o;
    if (absl::Status st = WriteStockPhrases(corpora, stock, o); !st.ok()) return Fail(st);
    if (out.empty()) {
      std::cout << o.str();
      return 0;
    }
    std::ofstream f(out);
    f << o.str();
    if (!f) return Fail(absl::InternalError("cannot write " + out));
    return 0;
  }
  if (*human) {
    std::ostringstream o;
    if (absl::Status st = HumanTables(p4p_dir, o); !st.ok()) return Fail(st);
    std::cout << o.str();
    return 0;
  }
  return RunReport(set_dir, held_dir, short_dirs, p4p_dir, out, quick);
}

}  // namespace
}  // namespace cops::eval

int main(int argc, char** argv) {
  // Our code does not throw; this catches what a library may (std::bad_alloc, CLI11).
  try {
    return cops::eval::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cops-eval: " << e.what() << "\n";
    return 2;
  }
}
