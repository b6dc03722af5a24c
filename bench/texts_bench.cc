// Stored texts under RocksDB table and compression options (issue 36): bytes per document of
// a column family holding texts the way the index's texts family does (8-byte big-endian
// document ids, 32 MiB memtables, XXH3 checksums, index blocks in the block cache), the CPU
// of the process to write them (flushes included), and the CPU of a point read. A plain
// program, not Google Benchmark: every run starts from an empty directory.
//
//   texts_bench cut OUT FILE...      cut FILEs into ~4,000-byte documents at spaces, drop
//                                    repeats, shuffle (fixed seed), write them NUL-separated
//   texts_bench dump INDEX_DIR OUT   the texts family of an index (e.g. kept by
//                                    `scripts/bench.sh service --data DIR`: DIR/index)
//   texts_bench sizes INDEX_DIR      each column family's SST bytes (one JSON line)
//   texts_bench run CORPUS DOCS BLOCK_KB LEVEL DICT_KB [TRAIN_KB] [BUFFER_KB] [COMPACT]
//
// `run` stores the first DOCS documents of CORPUS under zstd at LEVEL in BLOCK_KB blocks with
// a dictionary of DICT_KB per file (0: none), trained by zstd from TRAIN_KB of samples (0,
// the default: the samples themselves), from at most BUFFER_KB of buffered blocks (0: the
// whole file); COMPACT=1 forces a full compaction before measuring (0, the default: settled
// as the flushes left it; with increasing ids RocksDB moves files down without rewriting
// them). It prints one JSON line. Figures: docs/performance.md, "Index bytes per document".

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"

namespace {

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string Key(uint64_t id) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(id >> (56 - 8 * i));
  return k;
}

void Check(const rocksdb::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "texts_bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

int Cut(const std::string& out_path, const std::vector<std::string>& files) {
  std::vector<std::string> docs;
  std::set<std::string> seen;  // whole documents and their first 60 bytes
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t i = 0; i < t.size();) {
      size_t j = std::min(t.size(), i + 4000);
      if (j < t.size()) {
        const size_t space = t.rfind(' ', j);
        if (space != std::string::npos && space > i + 3000) j = space + 1;
      }
      std::string d = t.substr(i, j - i);
      i = j;
      d.erase(std::remove(d.begin(), d.end(), '\0'), d.end());
      if (d.size() < 1000 || !seen.insert(d.substr(0, 60)).second) continue;
      docs.push_back(std::move(d));
    }
  }
  std::shuffle(docs.begin(), docs.end(), std::mt19937_64(7));
  std::ofstream out(out_path, std::ios::binary);
  for (const std::string& d : docs) out << d << '\0';
  std::printf("{\"documents\": %zu}\n", docs.size());
  return 0;
}

// The index in `dir` opened read-only with every column family (default options: values
// are read raw, nothing merged), its handles in `handles`.
std::unique_ptr<rocksdb::DB> OpenEveryFamily(const std::string& dir,
                                             std::vector<rocksdb::ColumnFamilyHandle*>* handles) {
  rocksdb::DBOptions options;
  std::vector<std::string> names;
  Check(rocksdb::DB::ListColumnFamilies(options, dir, &names), "listing column families");
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  rocksdb::DB* raw = nullptr;
  Check(rocksdb::DB::OpenForReadOnly(options, dir, cfs, handles, &raw), "opening the index");
  return std::unique_ptr<rocksdb::DB>(raw);
}

int Sizes(const std::string& dir) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db = OpenEveryFamily(dir, &handles);
  std::string line = "{";
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    rocksdb::ColumnFamilyMetaData meta;
    db->GetColumnFamilyMetaData(h, &meta);
    line += (line.size() > 1 ? ", \"" : "\"") + h->GetName() + "\": " + std::to_string(meta.size);
    Check(db->DestroyColumnFamilyHandle(h), "closing");
  }
  std::printf("%s}\n", line.c_str());
  return 0;
}

int Dump(const std::string& dir, const std::string& out_path) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db = OpenEveryFamily(dir, &handles);
  size_t n = 0;
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    if (h->GetName() == "texts") {
      std::ofstream out(out_path, std::ios::binary);
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), h));
      for (it->SeekToFirst(); it->Valid(); it->Next(), ++n) {
        out.write(it->value().data(), static_cast<std::streamsize>(it->value().size()));
        out.put('\0');
      }
      Check(it->status(), "reading the texts");
    }
    Check(db->DestroyColumnFamilyHandle(h), "closing");
  }
  std::printf("{\"documents\": %zu}\n", n);
  return 0;
}

struct RunOptions {
  uint32_t block_kb = 4, dict_kb = 0, train_kb = 0, buffer_kb = 0;
  int level = 3;
  bool compact = false;
};

rocksdb::Options TextsOptions(const RunOptions& r, const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.level_compaction_dynamic_level_bytes = true;
  o.write_buffer_size = 32u << 20;
  o.max_background_jobs = 2;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.format_version = 5;
  t.checksum = rocksdb::kXXH3;
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  t.block_size = size_t{r.block_kb} << 10;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.compression = rocksdb::kZSTD;
  o.compression_opts.level = r.level;
  o.compression_opts.max_dict_bytes = r.dict_kb << 10;
  o.compression_opts.zstd_max_train_bytes = r.train_kb << 10;
  o.compression_opts.max_dict_buffer_bytes = uint64_t{r.buffer_kb} << 10;
  return o;
}

int Run(const std::string& corpus, size_t limit, const RunOptions& r) {
  std::vector<std::string> docs;
  {
    std::ifstream in(corpus, std::ios::binary);
    std::string s;
    while (docs.size() < limit && std::getline(in, s, '\0')) docs.push_back(s);
  }
  if (docs.empty()) {
    std::fprintf(stderr, "texts_bench: no documents in %s\n", corpus.c_str());
    return 2;
  }
  size_t raw_bytes = 0;
  for (const std::string& d : docs) raw_bytes += d.size();
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("cops-texts-bench-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(256u << 20);
  rocksdb::DB* raw = nullptr;
  Check(rocksdb::DB::Open(TextsOptions(r, cache), dir, &raw), "opening");
  std::unique_ptr<rocksdb::DB> db(raw);
  const double cpu0 = ProcessCpuSeconds();
  for (size_t i = 0; i < docs.size(); ++i) {
    Check(db->Put(rocksdb::WriteOptions(), Key(i + 1), docs[i]), "writing");
  }
  Check(db->Flush(rocksdb::FlushOptions()), "flushing");
  for (;;) {  // settled: no compaction pending or running
    uint64_t pending = 0, running = 0;
    db->GetIntProperty("rocksdb.compaction-pending", &pending);
    db->GetIntProperty("rocksdb.num-running-compactions", &running);
    if (pending == 0 && running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (r.compact) {
    rocksdb::CompactRangeOptions force;
    force.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    Check(db->CompactRange(force, nullptr, nullptr), "compacting");
  }
  const double write_cpu = ProcessCpuSeconds() - cpu0;
  // Reopened with an empty cache: the first pass reads and decompresses blocks, the second
  // finds them cached.
  db.reset();
  cache = rocksdb::NewLRUCache(256u << 20);
  Check(rocksdb::DB::Open(TextsOptions(r, cache), dir, &raw), "reopening");
  db.reset(raw);
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(&meta);
  std::mt19937_64 rng(1);
  std::vector<size_t> ids(std::min<size_t>(20000, docs.size()));
  for (size_t& id : ids) id = rng() % docs.size();
  double read_us[2] = {0, 0};
  std::string value;
  for (double& us : read_us) {
    const double c0 = ProcessCpuSeconds();
    for (size_t id : ids) {
      Check(db->Get(rocksdb::ReadOptions(), Key(id + 1), &value), "reading");
      if (value != docs[id]) {
        std::fprintf(stderr, "texts_bench: document %zu read back different\n", id);
        return 1;
      }
    }
    us = (ProcessCpuSeconds() - c0) * 1e6 / static_cast<double>(ids.size());
  }
  std::printf(
      "{\"documents\": %zu, \"raw_bytes_per_document\": %.0f, \"block_kb\": %u, \"level\": %d, "
      "\"dict_kb\": %u, \"train_kb\": %u, \"buffer_kb\": %u, \"compacted\": %d, "
      "\"bytes_per_document\": %.0f, \"files\": %zu, \"write_cpu_seconds\": %.2f, "
      "\"read_cpu_us_cold\": %.1f, \"read_cpu_us_warm\": %.1f}\n",
      docs.size(), static_cast<double>(raw_bytes) / static_cast<double>(docs.size()), r.block_kb,
      r.level, r.dict_kb, r.train_kb, r.buffer_kb, r.compact ? 1 : 0,
      static_cast<double>(meta.size) / static_cast<double>(docs.size()), meta.file_count,
      write_cpu, read_us[0], read_us[1]);
  db.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: texts_bench cut OUT FILE... | dump INDEX_DIR OUT | sizes INDEX_DIR |\n"
               "       run CORPUS DOCS BLOCK_KB LEVEL DICT_KB [TRAIN_KB] [BUFFER_KB] [COMPACT]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() >= 3 && args[0] == "cut") {
      return Cut(args[1], std::vector<std::string>(args.begin() + 2, args.end()));
    }
    if (args.size() == 3 && args[0] == "dump") return Dump(args[1], args[2]);
    if (args.size() == 2 && args[0] == "sizes") return Sizes(args[1]);
    if (args.size() >= 6 && args.size() <= 9 && args[0] == "run") {
      RunOptions r;
      r.block_kb = static_cast<uint32_t>(std::stoul(args[3]));
      r.level = std::stoi(args[4]);
      r.dict_kb = static_cast<uint32_t>(std::stoul(args[5]));
      if (args.size() > 6) r.train_kb = static_cast<uint32_t>(std::stoul(args[6]));
      if (args.size() > 7) r.buffer_kb = static_cast<uint32_t>(std::stoul(args[7]));
      if (args.size() > 8) r.compact = args[8] == "1";
      if (r.block_kb < 1 || r.block_kb > 1024) return Usage();
      return Run(args[1], std::stoul(args[2]), r);
    }
  } catch (const std::exception& e) {  // std::stoul of a bad number
    std::fprintf(stderr, "texts_bench: %s\n", e.what());
    return 2;
  }
  return Usage();
}
