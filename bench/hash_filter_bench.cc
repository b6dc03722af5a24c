// The filter of stored hashes (storage/stored_hash_filter.h): nanoseconds per add and per
// question, for a filter of 2^N hashes at 10 bits each, with hashes in random order or sorted
// (as PostingsStore hands them over: a window's postings sorted by bucket, a check's hashes
// sorted). Figures and command: docs/performance.md.
//
//   hash_filter_bench [--benchmark_filter=...]

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "storage/stored_hash_filter.h"

namespace cops {
namespace {

constexpr size_t kBatch = 4096;

// The next batch of random hashes (sorted if asked), made outside the timing.
void NextBatch(benchmark::State& state, std::mt19937_64* rng, bool sorted,
               std::vector<ChunkHash>* batch) {
  state.PauseTiming();
  batch->resize(kBatch);
  for (ChunkHash& h : *batch) h = (*rng)();
  if (sorted) std::sort(batch->begin(), batch->end());
  state.ResumeTiming();
}

// Args: log2 of the capacity, sorted batches (0/1). Adds fill the filter up to capacity.
void BM_Add(benchmark::State& state) {
  const uint64_t capacity = uint64_t{1} << state.range(0);
  const bool sorted = state.range(1) != 0;
  StoredHashFilter filter(40, 10, capacity);
  std::mt19937_64 rng(1);
  std::vector<ChunkHash> batch;
  for (auto _ : state) {
    NextBatch(state, &rng, sorted, &batch);
    filter.Add(batch);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

// Questions about hashes never added (as a clean check's are) to a filter at capacity.
void BM_MayContain(benchmark::State& state) {
  const uint64_t capacity = uint64_t{1} << state.range(0);
  const bool sorted = state.range(1) != 0;
  StoredHashFilter filter(40, 10, capacity);
  std::mt19937_64 fill(1);
  std::vector<ChunkHash> batch(kBatch);
  for (uint64_t added = 0; added < capacity; added += kBatch) {
    for (ChunkHash& h : batch) h = fill();
    std::sort(batch.begin(), batch.end());
    filter.Add(batch);
  }
  std::mt19937_64 rng(2);
  uint64_t yes = 0;
  for (auto _ : state) {
    NextBatch(state, &rng, sorted, &batch);
    for (size_t i = 0; i < kBatch; ++i) {
      if (i + 8 < kBatch) filter.Prefetch(batch[i + 8]);
      yes += filter.MayContain(batch[i]);
    }
  }
  state.counters["false_positive_rate"] =
      static_cast<double>(yes) / static_cast<double>(state.iterations() * kBatch);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

// At most 20,000 batches a run (8 x 10^7 hashes), and never past the capacity (a filter past
// it grows a segment): 2^20 hashes (1.3 MB), 2^27 and 2^30 (1.3 GB: the filter of 10^7
// documents, filled to 8% by the adds).
void Register() {
  for (int sorted : {0, 1}) {
    for (int log2 : {20, 27, 30}) {
      const int64_t batches = std::min<int64_t>((int64_t{1} << log2) / kBatch, 20000);
      using Fn = void (*)(benchmark::State&);
      for (const auto& [name, fn] : {std::pair<const char*, Fn>{"BM_Add", BM_Add},
                                     std::pair<const char*, Fn>{"BM_MayContain", BM_MayContain}}) {
        benchmark::RegisterBenchmark(name, fn)
            ->Args({log2, sorted})
            ->ArgNames({"log2_capacity", "sorted"})
            ->Iterations(batches);
      }
    }
  }
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  cops::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
