// Converter throughput on realistic generated documents: ~40 pages of English-like prose
// (200 paragraphs, about 150 KB of text) in every format. Bytes processed = input bytes,
// so MB/s is input throughput. BM_Convert runs the converter in this process;
// BM_ConvertSandboxed adds the worker process (spawn, transfer, limits) per document;
// BM_ConvertPooled sends each document to a long-lived worker (ConvertWorkerPool, as
// cops-milter does with attachments). BM_ConvertPdfWithoutHiddenText is BM_Convert/4 without
// the search for hidden text (ConvertOptions::find_hidden_text), as registration converts.
// BM_ConvertPdfFile/<path>/<0|1> converts, in process, each PDF named in $COPS_BENCH_PDFS
// (colon-separated; none when unset) without (0) and with (1) the search, e.g.
// COPS_BENCH_PDFS=/usr/share/doc/bash/bash.pdf convert_bench --benchmark_filter=PdfFile.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/worker_pool.h"
#include "tests/testing/documents.h"

namespace {

namespace t = cops::testing;
using cops::DocumentFormat;

const std::string& Document(DocumentFormat format) {
  static const std::vector<std::string> paragraphs = t::Prose(200, 11);
  static const std::vector<std::string> docs = [] {
    std::vector<std::string> d(9);
    d[static_cast<int>(DocumentFormat::kText)] = t::MakeText(paragraphs);
    d[static_cast<int>(DocumentFormat::kHtml)] = t::MakeHtml(paragraphs);
    d[static_cast<int>(DocumentFormat::kEmail)] = t::MakeEmail(paragraphs);
    d[static_cast<int>(DocumentFormat::kPdf)] = t::MakePdfFromParagraphs(paragraphs);
    d[static_cast<int>(DocumentFormat::kDocx)] = t::MakeDocx(paragraphs);
    d[static_cast<int>(DocumentFormat::kOdt)] = t::MakeOdt(paragraphs);
    d[static_cast<int>(DocumentFormat::kLatex)] = t::MakeLatex(paragraphs);
    d[static_cast<int>(DocumentFormat::kMarkdown)] = t::MakeMarkdown(paragraphs);
    // Windows-1252 plain text: exercises detection and transcoding with an offset map.
    std::string latin1;
    for (const std::string& p : paragraphs) latin1 += "\x93" + p + "\x94 caf\xE9.\n\n";
    d[0] = latin1;  // slot 0 (kAuto) holds the Windows-1252 text variant
    return d;
  }();
  return docs[static_cast<int>(format)];
}

enum class Path { kInProcess, kSandboxed, kPooled };

void Run(benchmark::State& state, DocumentFormat format, Path path,
         const cops::ConvertOptions& options = {}) {
  const std::string& input = Document(format);
  cops::ConvertLimits limits;
  limits.in_process = path == Path::kInProcess;
  const DocumentFormat declared = format == DocumentFormat::kAuto ? DocumentFormat::kText : format;
  static cops::ConvertWorkerPool pool({.max_workers = 1, .max_uses = 1000000});
  size_t text_bytes = 0;
  for (auto _ : state) {
    auto doc = path == Path::kPooled ? pool.Convert(input, declared, limits, options)
                                     : cops::Convert(input, declared, limits, options);
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      return;
    }
    text_bytes = doc->text.size();
    benchmark::DoNotOptimize(doc->text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
  state.counters["input_KB"] = static_cast<double>(input.size()) / 1024.0;
  state.counters["text_KB"] = static_cast<double>(text_bytes) / 1024.0;
  // Extracted text per second: comparable across formats whatever their overhead.
  state.counters["text_rate"] = benchmark::Counter(
      static_cast<double>(state.iterations() * text_bytes), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1024);
}

void BM_Convert(benchmark::State& state) {
  Run(state, static_cast<DocumentFormat>(state.range(0)), Path::kInProcess);
}
void BM_ConvertPdfWithoutHiddenText(benchmark::State& state) {
  cops::ConvertOptions options;
  options.find_hidden_text = false;
  Run(state, DocumentFormat::kPdf, Path::kInProcess, options);
}
void BM_ConvertSandboxed(benchmark::State& state) {
  Run(state, static_cast<DocumentFormat>(state.range(0)), Path::kSandboxed);
}
void BM_ConvertPooled(benchmark::State& state) {
  Run(state, static_cast<DocumentFormat>(state.range(0)), Path::kPooled);
}

// Format detection alone (what a check with format "auto" pays before converting).
void BM_DetectFormat(benchmark::State& state) {
  const std::string& input = Document(static_cast<DocumentFormat>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(cops::DetectFormat(input));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
}

// Arg: DocumentFormat value; 0 stands for Windows-1252 plain text.
BENCHMARK(BM_Convert)->DenseRange(0, 8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ConvertPdfWithoutHiddenText)->Unit(benchmark::kMillisecond);
// Wall-clock time: the work happens in the worker process, not this one.
BENCHMARK(BM_DetectFormat)->DenseRange(0, 8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvertSandboxed)->Arg(2)->Arg(4)->Arg(5)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ConvertPooled)->Arg(2)->Arg(4)->Arg(5)->UseRealTime()->Unit(benchmark::kMillisecond);

void ConvertPdfFile(benchmark::State& state, const std::string& input, bool find_hidden_text) {
  cops::ConvertLimits limits;
  limits.in_process = true;
  limits.time_budget_ms = 600000;  // the figure wanted is the whole search, not its cut-off
  cops::ConvertOptions options;
  options.find_hidden_text = find_hidden_text;
  size_t pages = 0;
  for (auto _ : state) {
    auto doc = cops::Convert(input, DocumentFormat::kPdf, limits, options);
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      return;
    }
    pages = doc->text.empty() ? 0 : doc->PageOf(static_cast<uint32_t>(doc->text.size() - 1));
  }
  state.counters["pages"] = static_cast<double>(pages);
}

const bool kPdfFilesRegistered = [] {
  const char* list = std::getenv("COPS_BENCH_PDFS");
  std::stringstream paths(list == nullptr ? "" : list);
  for (std::string path; std::getline(paths, path, ':');) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    for (const bool find : {false, true}) {
      benchmark::RegisterBenchmark(
          ("BM_ConvertPdfFile/" + path + (find ? "/1" : "/0")).c_str(),
          [input = bytes.str(), find](benchmark::State& state) {
            ConvertPdfFile(state, input, find);
          })
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
