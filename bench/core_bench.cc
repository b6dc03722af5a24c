// Whole-path throughput of cops_core: raw UTF-8 bytes -> canonical text -> units -> chunks
// -> keyed hashes -> selection, on >= 50 MB of real English prose; and a check's
// verification step (BM_Verify): a 20 KB test's grams indexed, then chained against those
// of a 4 KB document copied into it; and a whole short check against 40 registered texts
// sharing a boilerplate (BM_DetectCommonText).
//
// Corpus: every regular file under $COPS_BENCH_CORPUS (default: the reStructuredText
// sources of the Python 3.11 manuals, Debian package python3.11-doc), concatenated in
// path order and repeated up to COPS_BENCH_MB megabytes (default 50). The text is cut into
// 64 KiB documents on paragraph boundaries, the size of a typical registered document.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/detect.h"
#include "core/fingerprint.h"
#include "core/hash_key.h"
#include "core/manipulation.h"
#include "core/memory_index.h"
#include "core/params.h"
#include "core/stem_pairs.h"
#include "core/verify.h"

namespace {

constexpr const char* kDefaultCorpus = "/usr/share/doc/python3.11/html/_sources";

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string>* docs = [] {
    const char* dir = std::getenv("COPS_BENCH_CORPUS");
    if (dir == nullptr || *dir == '\0') dir = kDefaultCorpus;
    const char* mb_env = std::getenv("COPS_BENCH_MB");
    const size_t want = (mb_env ? std::strtoull(mb_env, nullptr, 10) : 50) << 20;
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    std::string text;
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      text += ss.str();
      text += "\n\n";
    }
    if (text.size() < 1024) {
      std::cerr << "core_bench: corpus at " << dir << " is missing or tiny; set COPS_BENCH_CORPUS\n";
      std::exit(1);
    }
    const std::string one = text;
    while (text.size() < want) text += one;
    text.resize(want);
    auto* out = new std::vector<std::string>();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = std::min(text.size(), pos + (64 << 10));
      size_t para = text.find("\n\n", end);
      end = para == std::string::npos ? text.size() : para + 2;
      out->push_back(text.substr(pos, end - pos));
      pos = end;
    }
    return out;
  }();
  return *docs;
}

void BM_Fingerprint(benchmark::State& state, cops::UnitKind unit, cops::ChunkStrategy strategy,
                    uint32_t k, cops::SelectionKind selection) {
  const auto& docs = Corpus();
  cops::HashKey key = cops::HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  cops::ChunkingParams p;
  p.unit = unit;
  p.strategy = strategy;
  p.k = k;
  p.selection = selection;
  p.p = 4;
  p.w = 8;
  p.key_id = key.Id();
  auto f = cops::Fingerprinter::Create(p, key).value();
  cops::DocumentFingerprint fp;
  size_t bytes = 0, kept = 0, total = 0;
  for (auto _ : state) {
    for (const std::string& d : docs) {
      if (!f->Fingerprint(d, &fp).ok()) state.SkipWithError("fingerprint failed");
      bytes += d.size();
      kept += fp.chunks.size();
      total += fp.total_chunks;
      benchmark::DoNotOptimize(fp.chunks.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["kept_per_chunk"] = total ? static_cast<double>(kept) / total : 0;
}

// A short check against a registry of one genre (core/detect.h, in memory): 40 registered
// texts of 150 words of their own around the same 150-word boilerplate; the test is 150 words
// of its own, the boilerplate and 40 words copied from the first text. Every candidate shares
// the boilerplate, so each check verifies 40 documents and judges each passage by the
// document frequencies of its chunks (CheckOptions::common_phrase_documents).
void BM_DetectCommonText(benchmark::State& state) {
  std::vector<std::string> words;
  {
    std::istringstream in(Corpus().front());
    std::string w;
    while (in >> w && words.size() < 7000) words.push_back(w);
  }
  if (words.size() < 7000) {
    state.SkipWithError("corpus too small");
    return;
  }
  auto slice = [&](size_t from, size_t n) {
    std::string out;
    for (size_t i = from; i < from + n; ++i) out += words[i] + " ";
    return out;
  };
  const std::string boilerplate = slice(6800, 150);
  cops::HashKey key = cops::HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  cops::ChunkingParams p;
  p.key_id = key.Id();
  auto f = cops::Fingerprinter::Create(p, key).value();
  cops::MemoryIndex index;
  for (int d = 0; d < 40; ++d) {
    cops::DocumentFingerprint fp;
    const std::string text = slice(150 * d, 150) + "\n\n" + boilerplate;
    if (!f->Fingerprint(text, &fp, cops::RegisterFingerprintOptions(p)).ok()) {
      state.SkipWithError("fingerprint failed");
      return;
    }
    index.Register(d + 1, fp);
  }
  cops::DocumentFingerprint test;
  const std::string text = slice(6200, 150) + "\n\n" + boilerplate + "\n\n" + slice(100, 40);
  if (!f->Fingerprint(text, &test, cops::CheckFingerprintOptions(p)).ok()) {
    state.SkipWithError("fingerprint failed");
    return;
  }
  cops::DetectOptions o;
  size_t matches = 0;
  bool violation = false;
  for (auto _ : state) {
    absl::StatusOr<cops::Report> r = cops::Detect(test, p, index, o);
    if (!r.ok()) {
      state.SkipWithError("detect failed");
      return;
    }
    matches = r->matches.size();
    violation = r->violation;
    benchmark::DoNotOptimize(matches);
  }
  state.counters["matches"] = static_cast<double>(matches);
  state.counters["violation"] = violation;
}
BENCHMARK(BM_DetectCommonText)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// One check's verification: TestGrams::Build over a 20 KB test of the corpus, then Verify
// against the grams of 4 KB of it (a registered document copied into the test), as
// core/detect.cc runs them for a check that finds one candidate.
void BM_Verify(benchmark::State& state) {
  const std::string& doc = Corpus().front();
  const std::string test = doc.substr(0, std::min<size_t>(doc.size(), 20000));
  const std::string registered = test.substr(test.size() / 4, 4000);
  cops::HashKey key = cops::HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  cops::ChunkingParams p;
  p.verify_k = 3;
  p.key_id = key.Id();
  auto f = cops::Fingerprinter::Create(p, key).value();
  cops::DocumentFingerprint test_fp, registered_fp;
  if (!f->Fingerprint(test, &test_fp).ok() || !f->Fingerprint(registered, &registered_fp).ok()) {
    state.SkipWithError("fingerprint failed");
    return;
  }
  cops::TestGrams grams;
  cops::Verification v;
  for (auto _ : state) {
    grams.Build(test_fp.grams);
    cops::Verify(grams, registered_fp.grams, cops::VerifyOptions{}, &v);
    benchmark::DoNotOptimize(v.matched_test_grams);
  }
  state.counters["test_grams"] = static_cast<double>(test_fp.grams.size());
  state.counters["ratio"] = v.Ratio();
}
BENCHMARK(BM_Verify)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// A check's fingerprint of 20 KB of the corpus under the default parameters (verification
// grams on), without (arg 0) and with (arg 1, every pair kept) content-stem pairs: what the
// pairs add to a check's CPU (core/stem_pairs.h).
void BM_FingerprintCheck(benchmark::State& state) {
  const std::string& doc = Corpus().front();
  const std::string test = doc.substr(0, std::min<size_t>(doc.size(), 20000));
  cops::HashKey key = cops::HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  cops::ChunkingParams p;
  p.verify_k = 3;
  p.stem_pairs = static_cast<uint32_t>(state.range(0));
  p.stem_version = p.stem_pairs > 0 ? cops::kStemPairsVersion : 0;
  p.key_id = key.Id();
  auto f = cops::Fingerprinter::Create(p, key).value();
  // As copsd's check: only the pairs it looks up are made.
  cops::FingerprintOptions options = cops::CheckFingerprintOptions(p);
  options.max_stem_pairs = cops::CheckOptions{}.stem_pair_max_lookups;
  cops::DocumentFingerprint fp;
  for (auto _ : state) {
    if (!f->Fingerprint(test, &fp, options).ok()) {
      state.SkipWithError("fingerprint failed");
      return;
    }
    benchmark::DoNotOptimize(fp.stem_pairs.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * test.size()));
  state.counters["stem_pairs"] = static_cast<double>(fp.stem_pairs.size());
}
BENCHMARK(BM_FingerprintCheck)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

// The text-manipulation scan a check runs over its converted text (core/manipulation.h):
// 20 KB of the corpus as it is (arg 0), and with one Cyrillic letter near its start, which
// sends it down the Unicode path (arg 1).
void BM_FindManipulation(benchmark::State& state) {
  const std::string& doc = Corpus().front();
  std::string text = doc.substr(0, std::min<size_t>(doc.size(), 20000));
  if (state.range(0) == 1) text.insert(1, "\xD0\xB0");
  size_t found = 0;
  for (auto _ : state) {
    found += cops::FindManipulation(text).size();
    benchmark::DoNotOptimize(found);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_FindManipulation)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->MinTime(0.5);

using cops::ChunkStrategy;
using cops::SelectionKind;
using cops::UnitKind;

BENCHMARK_CAPTURE(BM_Fingerprint, A_word_all, UnitKind::kWord, ChunkStrategy::kOneUnit, 1,
                  SelectionKind::kAll)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Fingerprint, B_word5_all, UnitKind::kWord, ChunkStrategy::kNonOverlapping, 5,
                  SelectionKind::kAll)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Fingerprint, C_word5_modp4, UnitKind::kWord, ChunkStrategy::kOverlapping, 5,
                  SelectionKind::kModP)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Fingerprint, C_word5_winnow8, UnitKind::kWord, ChunkStrategy::kOverlapping,
                  5, SelectionKind::kWinnowing)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Fingerprint, D_word5_all, UnitKind::kWord,
                  ChunkStrategy::kHashedBreakpoints, 5, SelectionKind::kAll)
    ->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Fingerprint, A_sentence_all, UnitKind::kSentence, ChunkStrategy::kOneUnit, 1,
                  SelectionKind::kAll)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
