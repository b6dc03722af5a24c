// Storage benchmark: bulk registration (postings written per second), batched MultiGet
// lookups of 1,000 chunk hashes (cold and warm block cache), and bytes on disk per stored
// chunk and per document.
//
// Documents are ~5,000 words drawn Zipf(1.0) from a real vocabulary (/usr/share/dict/words,
// Debian package wamerican); chunks are word 5-grams (strategy C, k = 5) whose 64-bit hash
// is kept when hash % keep == 0 (default keep = 4: about 1/4 of chunks are stored).
//
//   storage_bench --docs=10000 [--words=5000] [--keep=4] [--dir=/tmp/x] [--texts=0]
//                 [--write_buffer_mb=64] [--cache_mb=256] [--bloom_bits=10] [--batch=1]
//                 [benchmark flags]
// --batch=N registers N documents per Index::RegisterBatch call (1: Index::Register);
// --progress=1 prints the rate every 100 batches. --reuse=1 --dir=D opens the index an
// earlier run left in D (give the same --docs and skip Register with --benchmark_filter).
// --background_jobs=N --subcompactions=M --shards=S --lookup_threads=T --memtables=K
// --block_kb=B override IndexOptions' defaults. --buckets=0 makes a per-hash index (schema 3,
// as builds before schema 4); --bucket_bits=N --hash_bits=M set the bucketed layout
// (default: from --docs as expected documents, and 64).
// --layouts=1 first runs LayoutBytes: the bytes per stored posting of candidate postings
// layouts, computed in memory over the same documents (issue 36; docs/performance.md).
// --texts_file=F stores F's documents (NUL-separated, taken in turn; give --docs at most
// their number) as the texts instead of the generated words, and implies --texts=1; with
// stored texts each disk stage reports the texts family's bytes per document, and
// TextReads times GetText of random documents (docs/performance.md, "Index bytes").
// --bulk_load=1 registers in bulk-load mode (Index::BeginBulkLoad); the EndBulkLoad stage
// then runs its one compaction, and the two times add up to the whole import.
// IndexOptions defaults unless a flag says otherwise.
// Figures and commands: docs/performance.md (scripts/bench.sh storage, import, lookup).

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "rocksdb/db.h"
#include "storage/codec.h"
#include "storage/index.h"

namespace cops {
namespace {

struct Flags {
  uint64_t docs = 10000;
  uint32_t words = 5000;
  uint32_t keep = 4;
  std::string dir;
  bool texts = false;
  std::string texts_file;  // stored texts from this file (NUL-separated) instead of the words
  bool keep_dir = false;
  size_t write_buffer_mb = 64;
  size_t cache_mb = 256;
  int bloom_bits = 10;
  uint32_t batch = 1;  // documents per Index::RegisterBatch (1: Index::Register)
  bool progress = false;
  bool reuse = false;
  bool layouts = false;  // run LayoutBytes first (candidate postings layouts, in memory)
  bool bulk_load = false;  // Index::BeginBulkLoad before Register; the EndBulkLoad stage ends it
  uint32_t shards = IndexOptions{}.postings_shards;
  int background_jobs = IndexOptions{}.background_jobs;
  int subcompactions = IndexOptions{}.max_subcompactions;
  int lookup_threads = IndexOptions{}.lookup_threads;
  uint32_t memtables = IndexOptions{}.postings_memtables;
  uint32_t block_kb = IndexOptions{}.postings_block_kb;
  bool buckets = true;
  uint32_t bucket_bits = 0;
  uint32_t hash_bits = 0;
} g_flags;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Zipf(1.0) sampler over a real word list.
class Vocabulary {
 public:
  bool Load(const std::string& path) {
    std::ifstream in(path);
    std::string w;
    while (std::getline(in, w)) {
      if (!w.empty() && w.find('\'') == std::string::npos) words_.push_back(w);
    }
    if (words_.size() < 1000) return false;
    // Shuffle so that rank does not follow the alphabet.
    std::mt19937_64 rng(42);
    std::shuffle(words_.begin(), words_.end(), rng);
    cdf_.resize(words_.size());
    double sum = 0;
    for (size_t r = 0; r < words_.size(); ++r) cdf_[r] = (sum += 1.0 / static_cast<double>(r + 1));
    for (double& c : cdf_) c /= sum;
    // bucket_[b]: the first rank whose cdf reaches b / kBuckets. A sample u in bucket b has
    // its rank in [bucket_[b], bucket_[b + 1]], so Sample searches a few neighbouring ranks
    // instead of the whole table, with the same result.
    bucket_.resize(kBuckets + 1);
    for (size_t b = 0; b <= kBuckets; ++b) {
      bucket_[b] = static_cast<uint32_t>(
          std::lower_bound(cdf_.begin(), cdf_.end(), static_cast<double>(b) / kBuckets) -
          cdf_.begin());
    }
    return true;
  }
  uint32_t Sample(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const size_t b = std::min<size_t>(static_cast<size_t>(u * kBuckets), kBuckets - 1);
    const auto first = cdf_.begin() + bucket_[b];
    const auto last = cdf_.begin() + std::min<size_t>(bucket_[b + 1] + 1, cdf_.size());
    return static_cast<uint32_t>(std::lower_bound(first, last, u) - cdf_.begin()) %
           words_.size();
  }
  const std::string& Word(uint32_t id) const { return words_[id]; }
  size_t size() const { return words_.size(); }

 private:
  static constexpr size_t kBuckets = size_t{1} << 16;
  std::vector<std::string> words_;
  std::vector<double> cdf_;
  std::vector<uint32_t> bucket_;
};

Vocabulary g_vocab;
std::vector<std::string> g_texts;  // --texts_file's documents

// Document `seed`: Zipf words, word 5-gram chunks, ~1/keep of them kept.
void MakeDocument(uint64_t seed, DocumentFingerprint* fp, std::string* text) {
  std::mt19937_64 rng(Mix(seed));
  fp->chunks.clear();
  text->clear();
  std::vector<uint32_t> ids(g_flags.words);
  std::vector<uint32_t> offsets(g_flags.words + 1);
  for (uint32_t i = 0; i < g_flags.words; ++i) {
    ids[i] = g_vocab.Sample(rng);
    offsets[i] = static_cast<uint32_t>(text->size());
    text->append(g_vocab.Word(ids[i]));
    text->push_back(i % 17 == 16 ? '\n' : ' ');
  }
  offsets[g_flags.words] = static_cast<uint32_t>(text->size());
  constexpr uint32_t k = 5;
  for (uint32_t i = 0; i + k <= g_flags.words; ++i) {
    uint64_t h = 0;
    for (uint32_t j = 0; j < k; ++j) h = Mix(h ^ ids[i + j]);
    if (h % g_flags.keep != 0) continue;
    fp->chunks.push_back(Chunk{h, i, offsets[i], offsets[i + k] - 1, i, i + k});
  }
  fp->total_chunks = g_flags.words >= k ? g_flags.words - k + 1 : 0;
  fp->total_units = g_flags.words;
  for (int i = 0; i < 4; ++i) {
    const uint64_t v = Mix(seed * 4 + i);
    std::memcpy(fp->sha256.data() + 8 * i, &v, 8);
  }
  fp->input_bytes = text->size();
  fp->canonical_bytes = text->size();
}

IndexOptions BenchOptions() {
  IndexOptions o;
  o.path = g_flags.dir;
  o.params.key_id = "0123456789abcdef";
  o.store_texts = g_flags.texts;
  o.write_buffer_bytes = g_flags.write_buffer_mb << 20;
  o.block_cache_bytes = g_flags.cache_mb << 20;
  o.bloom_bits_per_key = g_flags.bloom_bits;
  o.background_jobs = g_flags.background_jobs;
  o.max_subcompactions = g_flags.subcompactions;
  o.postings_shards = g_flags.shards;
  o.lookup_threads = g_flags.lookup_threads;
  o.postings_memtables = g_flags.memtables;
  o.postings_block_kb = g_flags.block_kb;
  o.bucketed_postings = g_flags.buckets;
  o.expected_documents = std::max<uint64_t>(1, g_flags.docs);
  o.postings_bucket_bits = g_flags.bucket_bits;
  o.postings_hash_bits = g_flags.hash_bits;
  return o;
}

std::unique_ptr<Index> g_index;
uint64_t g_stored_postings = 0;

void Check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "storage_bench: %s\n", std::string(s.message()).c_str());
    std::exit(1);
  }
}

// One batch of generated documents.
struct DocBatch {
  std::vector<DocumentFingerprint> fps;
  std::vector<std::string> texts;
  std::vector<DocumentRecord> records;
  std::vector<RegisterItem> items;
  uint64_t postings = 0;
  double generate_seconds = 0;

  void Generate(uint64_t first, uint32_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    fps.resize(n);
    texts.resize(n);
    records.assign(n, DocumentRecord{});
    items.resize(n);
    postings = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t d = first + i;
      MakeDocument(d, &fps[i], &texts[i]);
      if (!g_texts.empty()) texts[i] = g_texts[d % g_texts.size()];
      records[i].title = "doc " + std::to_string(d);
      records[i].collection = "bench";
      records[i].external_id = std::to_string(d);
      items[i] = RegisterItem{&records[i], &fps[i], texts[i]};
      postings += fps[i].chunks.size();
    }
    generate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

// Registers g_flags.docs documents, g_flags.batch per call. Documents are generated by a
// second thread one batch ahead of the writer, so the wall time is the index's (on a 2-core
// machine the generator competes with RocksDB's background jobs for the second core).
void BM_Register(benchmark::State& state) {
  for (auto _ : state) {
    const uint32_t batch = std::max<uint32_t>(1, g_flags.batch);
    uint64_t postings = 0;
    double generate_seconds = 0;
    DocBatch current, next;
    auto count = [&](uint64_t first) {
      return static_cast<uint32_t>(std::min<uint64_t>(batch, g_flags.docs - first));
    };
    current.Generate(0, count(0));
    if (g_flags.bulk_load) Check(g_index->BeginBulkLoad());
    std::vector<absl::StatusOr<RegisterOutcome>> outcomes;
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t d = 0; d < g_flags.docs; d += batch) {
      const uint64_t following = d + batch;
      std::thread generator;
      if (following < g_flags.docs) {
        generator = std::thread([&] { next.Generate(following, count(following)); });
      }
      if (batch == 1) {
        Check(g_index->Register(current.records[0], current.fps[0], current.texts[0]).status());
      } else {
        Check(g_index->RegisterBatch(current.items, &outcomes));
        for (const auto& o : outcomes) Check(o.status());
      }
      postings += current.postings;
      generate_seconds += current.generate_seconds;
      if (generator.joinable()) generator.join();
      std::swap(current, next);
      if (g_flags.progress && (d / batch) % 100 == 99) {
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "storage_bench: %llu documents in %.0f s (%.0f postings/s)\n",
                     static_cast<unsigned long long>(following), s, postings / s);
      }
    }
    g_stored_postings = postings;
    state.counters["docs"] = static_cast<double>(g_flags.docs);
    state.counters["postings"] = static_cast<double>(postings);
    state.counters["postings_per_s"] = benchmark::Counter(static_cast<double>(postings), benchmark::Counter::kIsRate);
    state.counters["docs_per_s"] = benchmark::Counter(static_cast<double>(g_flags.docs), benchmark::Counter::kIsRate);
    state.counters["gen_s_overlapped"] = generate_seconds;
  }
}

// 1,000 hashes: 500 kept chunks of a registered document (hits) and 500 of a document
// never registered (mostly misses), the mix of a check that finds one partial copy.
std::vector<std::vector<ChunkHash>> MakeBatches(size_t n) {
  std::vector<std::vector<ChunkHash>> batches;
  DocumentFingerprint fp;
  std::string text;
  std::mt19937_64 rng(7);
  for (size_t b = 0; b < n; ++b) {
    std::vector<ChunkHash> batch;
    MakeDocument(rng() % g_flags.docs, &fp, &text);
    for (size_t i = 0; i < fp.chunks.size() && batch.size() < 500; ++i) batch.push_back(fp.chunks[i].hash);
    MakeDocument(g_flags.docs + 1000000 + b, &fp, &text);
    for (size_t i = 0; i < fp.chunks.size() && batch.size() < 1000; ++i) batch.push_back(fp.chunks[i].hash);
    batches.push_back(std::move(batch));
  }
  return batches;
}

void BM_LookupWarm(benchmark::State& state) {
  const auto batches = MakeBatches(16);
  std::vector<PostingList> out;
  for (const auto& b : batches) Check(g_index->Lookup(b, &out));  // warm the cache
  size_t i = 0, hits = 0, hashes = 0;
  for (auto _ : state) {
    const auto& b = batches[i++ % batches.size()];
    Check(g_index->Lookup(b, &out));
    hashes += b.size();
    for (const auto& l : out) hits += !l.postings.empty();
  }
  state.counters["hashes_per_s"] = benchmark::Counter(static_cast<double>(hashes), benchmark::Counter::kIsRate);
  state.counters["hit_fraction"] = hashes ? static_cast<double>(hits) / hashes : 0;
}

// Each batch right after reopening the index: an empty block cache, so index, filter and
// data blocks come from the files (the OS page cache may still hold them).
void BM_LookupCold(benchmark::State& state) {
  const auto batches = MakeBatches(8);
  std::vector<PostingList> out;
  size_t i = 0, hashes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const bool bulk_loading = g_index->bulk_loading();
    g_index.reset();
    auto reopened = Index::Open(BenchOptions());
    Check(reopened.status());
    g_index = std::move(reopened).value();
    // The mode is not persisted: restore it, so that a later EndBulkLoad stage still ends
    // the load (a reopened index would otherwise compact the pile on its own).
    if (bulk_loading) Check(g_index->BeginBulkLoad());
    state.ResumeTiming();
    const auto& b = batches[i++ % batches.size()];
    Check(g_index->Lookup(b, &out));
    hashes += b.size();
  }
  state.counters["hashes_per_s"] = benchmark::Counter(static_cast<double>(hashes), benchmark::Counter::kIsRate);
}

void ReportDisk(benchmark::State& state, const char* stage) {
  const IndexStats s = g_index->Stats();
  state.counters["disk_bytes"] = static_cast<double>(s.disk_bytes);
  state.counters["postings_disk_bytes"] = static_cast<double>(s.postings_disk_bytes);
  state.counters["bytes_per_stored_chunk"] =
      static_cast<double>(s.postings_disk_bytes) / static_cast<double>(std::max<uint64_t>(1, s.postings));
  state.counters["all_bytes_per_stored_chunk"] =
      static_cast<double>(s.disk_bytes) / static_cast<double>(std::max<uint64_t>(1, s.postings));
  state.counters["bytes_per_doc"] =
      static_cast<double>(s.disk_bytes) / static_cast<double>(std::max<uint64_t>(1, s.documents));
  state.counters["chunk_keys"] = static_cast<double>(s.chunk_keys);
  state.counters["stored_chunks_per_doc"] =
      static_cast<double>(s.postings) / static_cast<double>(std::max<uint64_t>(1, s.documents));
  // The LSM shape the following lookups meet: level-0 files (each probed) and non-empty
  // lower levels (one file probed in each).
  std::string shape;
  int lower_levels = 0;
  for (size_t l = 0; l < s.postings_files_per_level.size(); ++l) {
    if (s.postings_files_per_level[l] == 0) continue;
    shape += " L" + std::to_string(l) + "=" + std::to_string(s.postings_files_per_level[l]);
    lower_levels += l > 0;
  }
  std::fprintf(stderr,
               "storage_bench: %s: postings files per level:%s; pending compaction %.2f GB\n",
               stage, shape.c_str(), s.pending_compaction_bytes / 1e9);
  state.counters["l0_files"] =
      s.postings_files_per_level.empty() ? 0 : s.postings_files_per_level[0];
  state.counters["lower_levels"] = lower_levels;
  state.counters["pending_compaction_gb"] = s.pending_compaction_bytes / 1e9;
  if (g_flags.texts) {
    // The texts family's files, as the index's MANIFEST lists them now (a read-only open
    // beside the writer).
    rocksdb::DBOptions options;
    std::vector<std::string> names;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    if (rocksdb::DB::ListColumnFamilies(options, g_flags.dir, &names).ok()) {
      for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    if (!cfs.empty() &&
        rocksdb::DB::OpenForReadOnly(options, g_flags.dir, cfs, &handles, &raw).ok()) {
      for (rocksdb::ColumnFamilyHandle* h : handles) {
        rocksdb::ColumnFamilyMetaData meta;
        raw->GetColumnFamilyMetaData(h, &meta);
        if (h->GetName() == "texts") {
          state.counters["texts_bytes_per_doc"] =
              static_cast<double>(meta.size) / static_cast<double>(std::max<uint64_t>(1, s.documents));
          state.counters["texts_raw_bytes_per_doc"] =
              static_cast<double>(s.text_bytes) / static_cast<double>(std::max<uint64_t>(1, s.documents));
        }
        raw->DestroyColumnFamilyHandle(h);
      }
      delete raw;
    }
  }
}

// GetText of random registered documents, right after a reopen (an empty block cache: the
// first read of each block decompresses it) and then again (from the cache). Run only with
// stored texts.
void BM_TextReads(benchmark::State& state) {
  for (auto _ : state) {
    g_index.reset();
    auto reopened = Index::Open(BenchOptions());
    Check(reopened.status());
    g_index = std::move(reopened).value();
    std::mt19937_64 rng(11);
    std::vector<DocId> ids(2000);
    for (DocId& id : ids) id = 1 + rng() % g_flags.docs;
    for (const char* pass : {"cold_us", "warm_us"}) {
      const auto t0 = std::chrono::steady_clock::now();
      for (DocId id : ids) Check(g_index->GetText(id).status());
      state.counters[pass] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          static_cast<double>(ids.size());
    }
  }
}

// Bytes on disk as the load left them (memtables flushed, compactions as they happened).
void BM_DiskAfterLoad(benchmark::State& state) {
  for (auto _ : state) Check(g_index->Flush());
  ReportDisk(state, "after load");
}

// Waits for RocksDB's own compactions to finish (the state an index reaches some time
// after a bulk load, without a manual compaction).
void BM_Settle(benchmark::State& state) {
  for (auto _ : state) Check(g_index->WaitForCompactions());
  ReportDisk(state, "settled");
}

// Ends a bulk load (--bulk_load=1): its one compaction of everything loaded.
void BM_EndBulkLoad(benchmark::State& state) {
  for (auto _ : state) Check(g_index->EndBulkLoad());
  ReportDisk(state, "bulk load ended");
}

// Bytes on disk after a full compaction (the steady state of an index that is not
// being bulk-loaded).
void BM_DiskAfterCompaction(benchmark::State& state) {
  for (auto _ : state) Check(g_index->Compact());
  ReportDisk(state, "compacted");
}

// Bytes per stored posting of candidate postings layouts (issue 36), computed in memory over
// the same generated documents, without RocksDB: "per-key" is today's layout's payload (an
// 8-byte key and the posting-list value per chunk hash, storage/codec.h); the "bucket"
// layouts group the postings by the top `prefix_bits` of the hash into one value per
// bucket, sorted by hash, and code each entry as: the hash's next bits as a delta from the
// previous entry's (varint, or Rice-coded), the document id (varint; a delta from the
// previous document of the same hash), then the ordinal, start and length (varints). A
// layout that stores `hash_bits` < 64 keeps only the hash's top bits (two chunks then share
// a list with probability 2^-hash_bits per pair; verification drops such candidates).
// Per-document bytes (the chunk list Unregister needs) are reported per posting too.
struct LayoutTuple {
  ChunkHash hash;
  DocId doc;
  uint32_t ordinal, start, len;
};

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 128) v >>= 7, ++n;
  return n;
}

// Bits of a Rice code with parameter k for v.
uint64_t RiceBits(uint64_t v, int k) { return (v >> k) + 1 + static_cast<uint64_t>(k); }

struct LayoutSpec {
  const char* name;
  int prefix_bits;    // bucket key: the hash's top bits
  int hash_bits;      // hash bits kept in all (prefix included)
  bool rice;          // suffix deltas Rice-coded (else varint)
  bool positions;     // start and length in the posting (else only the ordinal)
};

void BM_LayoutBytes(benchmark::State& state) {
  std::vector<LayoutTuple> all;
  uint64_t docs = 0;
  for (auto _ : state) {
    DocumentFingerprint fp;
    std::string text;
    for (uint64_t d = 0; d < g_flags.docs; ++d) {
      MakeDocument(d, &fp, &text);
      for (const Chunk& c : fp.chunks) {
        all.push_back({c.hash, d + 1, c.ordinal, c.start, c.end - c.start});
      }
    }
    docs = g_flags.docs;
  }
  std::sort(all.begin(), all.end(), [](const LayoutTuple& a, const LayoutTuple& b) {
    return a.hash != b.hash ? a.hash < b.hash
                            : a.doc != b.doc ? a.doc < b.doc : a.ordinal < b.ordinal;
  });
  const double n = static_cast<double>(std::max<size_t>(1, all.size()));
  state.counters["postings"] = n;
  state.counters["postings_per_doc"] = n / static_cast<double>(std::max<uint64_t>(1, docs));
  // Today's layout: one key per distinct hash, its value the codec's posting list.
  {
    uint64_t bytes = 0, keys = 0;
    PostingList list;
    for (size_t i = 0; i < all.size();) {
      size_t j = i;
      list.postings.clear();
      for (; j < all.size() && all[j].hash == all[i].hash; ++j) {
        list.postings.push_back(
            Posting{all[j].doc, all[j].ordinal, all[j].start, all[j].start + all[j].len});
      }
      DocId prev = 0;
      list.doc_frequency = 0;
      for (const Posting& p : list.postings) list.doc_frequency += p.doc_id != prev, prev = p.doc_id;
      bytes += 8 + storage_codec::EncodePostingList(list).size();
      ++keys;
      i = j;
    }
    state.counters["per_key_payload_B"] = static_cast<double>(bytes) / n;
    // The chunk list of each document (8 bytes per distinct hash), over postings.
    state.counters["per_key_doc_chunks_B"] = 8.0;
    state.counters["distinct_hashes"] = static_cast<double>(keys);
  }
  static const LayoutSpec kSpecs[] = {
      {"b20_h64_varint", 20, 64, false, true}, {"b20_h48_varint", 20, 48, false, true},
      {"b20_h40_varint", 20, 40, false, true}, {"b20_h40_rice", 20, 40, true, true},
      {"b16_h40_rice", 16, 40, true, true},    {"b20_h40_rice_ordinal_only", 20, 40, true, false},
  };
  for (const LayoutSpec& spec : kSpecs) {
    uint64_t bits = 0, buckets = 0, bucket_list_bits = 0;
    const int suffix_bits = spec.hash_bits - spec.prefix_bits;
    for (size_t i = 0; i < all.size();) {
      const uint64_t bucket = all[i].hash >> (64 - spec.prefix_bits);
      size_t j = i;
      while (j < all.size() && (all[j].hash >> (64 - spec.prefix_bits)) == bucket) ++j;
      // Rice parameter from the bucket's mean suffix gap.
      const double entries = static_cast<double>(j - i);
      const double gap = std::ldexp(1.0, suffix_bits) / entries;
      const int k = std::max(0, static_cast<int>(std::floor(std::log2(std::max(1.0, gap * 0.69)))));
      bits += 8 * (4 + VarintBytes(j - i));  // bucket key, entry count
      uint64_t prev_suffix = 0;
      DocId prev_doc = 0;
      uint64_t prev_hash = ~uint64_t{0};
      for (size_t e = i; e < j; ++e) {
        const uint64_t kept = all[e].hash >> (64 - spec.hash_bits);
        const uint64_t suffix = kept & ((uint64_t{1} << suffix_bits) - 1);
        const bool same_hash = all[e].hash == prev_hash;
        const uint64_t delta = suffix - prev_suffix;
        bits += spec.rice ? RiceBits(delta, k) : 8 * VarintBytes(delta);
        bits += 8 * VarintBytes(same_hash ? all[e].doc - prev_doc : all[e].doc);
        bits += 8 * VarintBytes(all[e].ordinal);
        if (spec.positions) bits += 8 * (VarintBytes(all[e].start) + VarintBytes(all[e].len));
        prev_suffix = suffix, prev_doc = all[e].doc, prev_hash = all[e].hash;
      }
      bits = (bits + 7) / 8 * 8;  // each bucket value is whole bytes
      ++buckets;
      i = j;
    }
    // A document's chunk list as its distinct buckets, delta-coded varints.
    std::vector<std::vector<uint32_t>> per_doc(docs + 1);
    for (const LayoutTuple& t : all) {
      per_doc[t.doc].push_back(static_cast<uint32_t>(t.hash >> (64 - spec.prefix_bits)));
    }
    for (auto& list : per_doc) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      uint32_t prev = 0;
      for (uint32_t b : list) bucket_list_bits += 8 * VarintBytes(b - prev), prev = b;
    }
    state.counters[std::string(spec.name) + "_B"] = static_cast<double>(bits) / 8 / n;
    state.counters[std::string(spec.name) + "_doc_chunks_B"] =
        static_cast<double>(bucket_list_bits) / 8 / n;
    state.counters[std::string(spec.name) + "_per_bucket"] = n / static_cast<double>(buckets);
  }
}

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  using namespace cops;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "--docs", &v)) g_flags.docs = std::stoull(v);
    else if (ParseFlag(argv[i], "--words", &v)) g_flags.words = std::stoul(v);
    else if (ParseFlag(argv[i], "--keep", &v)) g_flags.keep = std::max(1ul, std::stoul(v));
    else if (ParseFlag(argv[i], "--dir", &v)) g_flags.dir = v, g_flags.keep_dir = true;
    else if (ParseFlag(argv[i], "--texts", &v)) g_flags.texts = v == "1";
    else if (ParseFlag(argv[i], "--texts_file", &v)) g_flags.texts_file = v, g_flags.texts = true;
    else if (ParseFlag(argv[i], "--write_buffer_mb", &v)) g_flags.write_buffer_mb = std::stoul(v);
    else if (ParseFlag(argv[i], "--cache_mb", &v)) g_flags.cache_mb = std::stoul(v);
    else if (ParseFlag(argv[i], "--bloom_bits", &v)) g_flags.bloom_bits = std::stoi(v);
    else if (ParseFlag(argv[i], "--batch", &v)) g_flags.batch = std::stoul(v);
    else if (ParseFlag(argv[i], "--progress", &v)) g_flags.progress = v == "1";
    else if (ParseFlag(argv[i], "--reuse", &v)) g_flags.reuse = v == "1";
    else if (ParseFlag(argv[i], "--background_jobs", &v)) g_flags.background_jobs = std::stoi(v);
    else if (ParseFlag(argv[i], "--subcompactions", &v)) g_flags.subcompactions = std::stoi(v);
    else if (ParseFlag(argv[i], "--bulk_load", &v)) g_flags.bulk_load = v == "1";
    else if (ParseFlag(argv[i], "--layouts", &v)) g_flags.layouts = v == "1";
    else if (ParseFlag(argv[i], "--shards", &v)) g_flags.shards = std::stoul(v);
    else if (ParseFlag(argv[i], "--lookup_threads", &v)) g_flags.lookup_threads = std::stoi(v);
    else if (ParseFlag(argv[i], "--memtables", &v)) g_flags.memtables = static_cast<uint32_t>(std::stoul(v));
    else if (ParseFlag(argv[i], "--block_kb", &v)) g_flags.block_kb = static_cast<uint32_t>(std::stoul(v));
    else if (ParseFlag(argv[i], "--buckets", &v)) g_flags.buckets = v == "1";
    else if (ParseFlag(argv[i], "--bucket_bits", &v)) g_flags.bucket_bits = static_cast<uint32_t>(std::stoul(v));
    else if (ParseFlag(argv[i], "--hash_bits", &v)) g_flags.hash_bits = static_cast<uint32_t>(std::stoul(v));
    else rest.push_back(argv[i]);
  }
  if (!g_vocab.Load("/usr/share/dict/words")) {
    std::fprintf(stderr, "storage_bench: needs /usr/share/dict/words (apt-get install wamerican)\n");
    return 1;
  }
  if (!g_flags.texts_file.empty()) {
    std::ifstream in(g_flags.texts_file, std::ios::binary);
    std::string text;
    while (std::getline(in, text, '\0')) {
      if (!text.empty()) g_texts.push_back(text);
    }
    if (g_texts.empty()) {
      std::fprintf(stderr, "storage_bench: no texts in %s\n", g_flags.texts_file.c_str());
      return 2;
    }
  }
  if (g_flags.dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cops-storage-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    g_flags.dir = tmpl + "/db";
  } else if (std::filesystem::exists(g_flags.dir) && !g_flags.reuse) {
    std::fprintf(stderr, "storage_bench: %s exists; give a fresh --dir\n", g_flags.dir.c_str());
    return 1;
  }
  std::fprintf(stderr, "storage_bench: %llu documents of %u words, keep 1/%u, vocabulary %zu words, texts=%d, dir %s\n",
               static_cast<unsigned long long>(g_flags.docs), g_flags.words, g_flags.keep, g_vocab.size(),
               g_flags.texts ? 1 : 0, g_flags.dir.c_str());
  auto index = Index::Open(BenchOptions());
  Check(index.status());
  g_index = std::move(index).value();

  if (g_flags.layouts) {
    benchmark::RegisterBenchmark("LayoutBytes", BM_LayoutBytes)->Iterations(1)->Unit(benchmark::kSecond);
  }
  benchmark::RegisterBenchmark("Register", BM_Register)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
  benchmark::RegisterBenchmark("DiskAfterLoad", BM_DiskAfterLoad)->Iterations(1)->Unit(benchmark::kSecond);
  benchmark::RegisterBenchmark("LookupWarm1000", BM_LookupWarm)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("LookupCold1000", BM_LookupCold)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("EndBulkLoad", BM_EndBulkLoad)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
  benchmark::RegisterBenchmark("Settle", BM_Settle)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
  benchmark::RegisterBenchmark("LookupWarm1000Settled", BM_LookupWarm)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("DiskAfterCompaction", BM_DiskAfterCompaction)->Iterations(1)->Unit(benchmark::kSecond);
  benchmark::RegisterBenchmark("LookupWarm1000Compacted", BM_LookupWarm)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("LookupCold1000Compacted", BM_LookupCold)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();
  if (g_flags.texts) {
    benchmark::RegisterBenchmark("TextReads", BM_TextReads)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
  }

  int bargc = static_cast<int>(rest.size());
  benchmark::Initialize(&bargc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_index.reset();
  if (!g_flags.keep_dir) std::filesystem::remove_all(std::filesystem::path(g_flags.dir).parent_path());
  return 0;
}
