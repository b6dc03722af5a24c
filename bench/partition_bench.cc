// Document partitioning against chunk-hash partitioning (docs/scale-out.md, "Partitions"),
// measured on the same documents and the same checks through the real pipeline (the
// Fingerprinter, core/detect.h's Detect, storage::Index), in one process.
//
// N synthetic ~4 KB documents (the shape of `cops bench`) are fingerprinted once each and
// registered into two layouts of P partitions, each partition its own Index in a temporary
// directory:
//   doc:   document d goes whole (record, postings, grams, text) to partition
//          PartitionOf(sha256, P) (replication/partitioning.h), as copsd partitions today;
//   hash:  partition p holds the postings of every document's chunk hashes with
//          hash % P == p; the record, grams and text live on the document's home partition
//          (the same PartitionOf). Index has no postings-only write, so a document's postings
//          reach a non-home partition with a stub record (id, sha256, no text, no grams):
//          a few dozen bytes more per document and partition than a real layout would need.
// Each layout assigns the same global ids (RegisterAs), so the two layouts' reports compare
// directly.
//
// M checks of ~20 KB, half clean (unrelated text), half copied (a registered document
// embedded in unrelated text, as `cops bench --copy-fraction 1` makes them), are fingerprinted
// once each and run against both layouts:
//   doc:   every partition runs the full Detect on its own index (one round); the reports
//          are merged (matches of all partitions, ratio descending).
//   hash:  one Detect whose CandidateSource sends each hash's lookup to its range's
//          partition (round 1) and each candidate's record and grams read to its home
//          partition (rounds 2 and 3 as Detect calls them: ReadCandidates, then ReadGrams).
// Work is thread CPU time (CLOCK_THREAD_CPUTIME_ID; Detect and, with lookup_threads = 1,
// Index::Lookup run on the calling thread), so a busy machine inflates it little; RocksDB's
// background flushes and compactions are not in it.
//
// A partition's work per check is what that node's CPU spends on it: for doc, fingerprinting
// the check under its own key (as every copsd does: nodes share no key) plus its Detect; for
// hash, its lookups and reads. The coordinator (the router) does, for hash, the one
// fingerprint (under a key all partitions share: hash ranges are only defined under one
// key) and Detect's own work (tally, verification, report); for doc, the merge. The row
// doc-1key is document partitioning with one key for the cluster: the router fingerprints
// once and each partition runs Detect alone (the same measurements, the fingerprint moved).
// Transport (RPCs, serialization) is not measured: each round costs one RPC per partition
// it asks.
//
// The program fails (exit 1) unless both layouts find the same violating documents for every
// check, the source document among them for a copied check, and none for a clean check.
//
//   partition_bench [--docs=20000] [--partitions=2] [--checks=1000] [--dir=DIR] [--keep_dir=1]
//                   [--doc_bytes=4000] [--check_bytes=20000] [--seed=7]
// Figures and commands: docs/scale-out-capacity.md (scripts/bench.sh partition).

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/load_generator.h"
#include "core/detect.h"
#include "core/fingerprint.h"
#include "core/hash_key.h"
#include "core/params.h"
#include "replication/partitioning.h"
#include "storage/index.h"

namespace cops {
namespace {

struct Flags {
  uint64_t docs = 20000;
  uint32_t partitions = 2;
  uint32_t checks = 1000;
  uint32_t doc_bytes = 4000;
  uint32_t check_bytes = 20000;
  uint64_t seed = 7;
  std::string dir;
  bool keep_dir = false;
} g_flags;

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "partition_bench: %s: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "partition_bench: FAILED: %s\n", message.c_str());
  std::exit(1);
}

// Thread CPU time in milliseconds.
double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double WallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---- Text: `cops bench`'s synthetic prose (client/load_generator.h, SyntheticText) ------

std::string DocumentText(uint64_t d) { return SyntheticText(g_flags.seed, d, g_flags.doc_bytes); }

// Check i: unrelated text; an odd i has document source_doc embedded a quarter in.
struct CheckText {
  std::string text;
  bool copied = false;
  DocId source = 0;
};

CheckText MakeCheck(uint32_t i) {
  CheckText c;
  c.text = SyntheticText(g_flags.seed + 1000003, i, g_flags.check_bytes);
  c.copied = i % 2 == 1;
  if (c.copied) {
    std::mt19937_64 rng(g_flags.seed * 31 + i);
    const uint64_t d = rng() % g_flags.docs;
    const std::string doc = DocumentText(d);
    c.text.replace(c.text.size() / 4, doc.size(), doc);
    c.source = d + 1;
  }
  return c;
}

// ---- Layouts ------------------------------------------------------------------------------

enum class Scheme { kDocument, kChunkHash };
const char* SchemeName(Scheme s) { return s == Scheme::kDocument ? "doc" : "hash"; }

uint32_t RangeOf(ChunkHash h, uint32_t partitions) { return static_cast<uint32_t>(h % partitions); }

// P partitions of one scheme, each an Index of its own.
struct Layout {
  Scheme scheme;
  std::vector<std::unique_ptr<Index>> parts;
  std::vector<double> write_cpu_ms;  // per partition, summed over documents
  std::vector<uint64_t> writes;      // per partition
  double write_wall_ms = 0;
  double settle_wall_ms = 0;
};

std::unique_ptr<Index> OpenPartition(const std::string& path, const ChunkingParams& params) {
  IndexOptions o;
  o.path = path;
  o.params = params;
  // Lookups on the calling thread: its CPU time is then the whole lookup's.
  o.lookup_threads = 1;
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(o);
  Check(index.status(), path.c_str());
  return std::move(index).value();
}

Layout OpenLayout(Scheme scheme, const std::string& root, const ChunkingParams& params) {
  Layout l;
  l.scheme = scheme;
  for (uint32_t p = 0; p < g_flags.partitions; ++p) {
    l.parts.push_back(OpenPartition(root + "/" + SchemeName(scheme) + std::to_string(p), params));
  }
  l.write_cpu_ms.assign(g_flags.partitions, 0);
  l.writes.assign(g_flags.partitions, 0);
  return l;
}

// Registers document `record` (id set) with fingerprint `fp` into `l`.
void RegisterInto(Layout& l, const DocumentRecord& record, const DocumentFingerprint& fp,
                  std::string_view text, DocumentFingerprint* part_fp) {
  const uint32_t home = PartitionOf(fp.sha256, g_flags.partitions);
  const double wall0 = WallMs();
  if (l.scheme == Scheme::kDocument) {
    const double t0 = CpuMs();
    Check(l.parts[home]->RegisterAs(record, fp, text), "register");
    l.write_cpu_ms[home] += CpuMs() - t0;
    ++l.writes[home];
  } else {
    DocumentRecord stub;
    stub.id = record.id;
    stub.collection = record.collection;
    for (uint32_t p = 0; p < g_flags.partitions; ++p) {
      // The fingerprint with this range's chunks only (grams only at home).
      part_fp->chunks.clear();
      for (const Chunk& c : fp.chunks) {
        if (RangeOf(c.hash, g_flags.partitions) == p) part_fp->chunks.push_back(c);
      }
      part_fp->grams = p == home ? fp.grams : std::vector<uint32_t>{};
      part_fp->total_chunks = fp.total_chunks;
      part_fp->total_units = fp.total_units;
      part_fp->sha256 = fp.sha256;
      part_fp->input_bytes = fp.input_bytes;
      part_fp->canonical_bytes = fp.canonical_bytes;
      const double t0 = CpuMs();
      Check(l.parts[p]->RegisterAs(p == home ? record : stub, *part_fp,
                                   p == home ? text : std::string_view()),
            "register");
      l.write_cpu_ms[p] += CpuMs() - t0;
      ++l.writes[p];
    }
  }
  l.write_wall_ms += WallMs() - wall0;
}

void Settle(Layout& l) {
  const double t0 = WallMs();
  for (auto& part : l.parts) {
    Check(part->Flush(), "flush");
    Check(part->WaitForCompactions(), "compactions");
  }
  l.settle_wall_ms = WallMs() - t0;
}

// ---- Candidate sources ----------------------------------------------------------------------

// Work one check caused on each partition, and the rounds it took.
struct CheckCost {
  std::vector<double> part_ms;   // per partition
  std::vector<uint64_t> hashes;  // hashes looked up per partition
  std::vector<uint64_t> reads;   // records + grams read per partition
  double coordinator_ms = 0;
  uint32_t rounds = 0;
  void Reset(uint32_t partitions) {
    part_ms.assign(partitions, 0);
    hashes.assign(partitions, 0);
    reads.assign(partitions, 0);
    coordinator_ms = 0;
    rounds = 0;
  }
};

// One partition's index, whole (document partitioning; as server/copy_detector.cc's
// IndexCandidates without collection filters, templates or expiry).
class PartitionCandidates final : public CandidateSource {
 public:
  PartitionCandidates(const Index& index, uint64_t* hashes, uint64_t* reads)
      : index_(index), hashes_(hashes), reads_(reads) {}
  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    *hashes_ += hashes.size();
    return index_.Lookup(hashes, out);
  }
  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override {
    *reads_ += ids.size();
    Check(index_.GetDocuments(ids, &records_), "records");
    out->assign(ids.size(), CandidateRecord{});
    for (size_t i = 0; i < ids.size(); ++i) {
      if (records_[i].has_value()) (*out)[i] = CandidateRecord{true, records_[i]->stored_chunks};
    }
    return absl::OkStatus();
  }
  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override {
    *reads_ += ids.size();
    return index_.GetGrams(ids, out);
  }

 private:
  const Index& index_;
  uint64_t* hashes_;
  uint64_t* reads_;
  mutable std::vector<std::optional<DocumentRecord>> records_;
};

// Chunk-hash partitioning: lookups by hash range, records and grams at each document's home.
class RangeCandidates final : public CandidateSource {
 public:
  // `home` and `stored_chunks` are indexed by DocId: what a chunk-hash layout would keep in
  // its postings (the home) and records (a document's stored chunks over all ranges; an
  // Index derives stored_chunks from the postings it writes, here only the home range's).
  RangeCandidates(const Layout& layout, const std::vector<uint8_t>& home,
                  const std::vector<uint32_t>& stored_chunks, CheckCost* cost)
      : layout_(layout), home_(home), stored_chunks_(stored_chunks), cost_(cost) {}

  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    const uint32_t parts = static_cast<uint32_t>(layout_.parts.size());
    ++cost_->rounds;
    split_hashes_.assign(parts, {});
    split_at_.assign(parts, {});
    for (size_t i = 0; i < hashes.size(); ++i) {
      const uint32_t p = RangeOf(hashes[i], parts);
      split_hashes_[p].push_back(hashes[i]);
      split_at_[p].push_back(i);
    }
    out->assign(hashes.size(), PostingList{});
    for (uint32_t p = 0; p < parts; ++p) {
      if (split_hashes_[p].empty()) continue;
      const double t0 = CpuMs();
      Check(layout_.parts[p]->Lookup(split_hashes_[p], &found_), "lookup");
      cost_->part_ms[p] += CpuMs() - t0;
      cost_->hashes[p] += split_hashes_[p].size();
      for (size_t j = 0; j < found_.size(); ++j) (*out)[split_at_[p][j]] = std::move(found_[j]);
    }
    return absl::OkStatus();
  }

  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override {
    out->assign(ids.size(), CandidateRecord{});
    std::vector<std::optional<DocumentRecord>> records;
    ForEachHome(ids, [&](uint32_t p, std::span<const DocId> part_ids, std::span<const size_t> at) {
      Check(layout_.parts[p]->GetDocuments(part_ids, &records), "records");
      for (size_t j = 0; j < at.size(); ++j) {
        if (records[j].has_value()) {
          (*out)[at[j]] = CandidateRecord{true, stored_chunks_[part_ids[j]]};
        }
      }
    });
    return absl::OkStatus();
  }

  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override {
    out->assign(ids.size(), {});
    std::vector<std::vector<uint32_t>> grams;
    ForEachHome(ids, [&](uint32_t p, std::span<const DocId> part_ids, std::span<const size_t> at) {
      Check(layout_.parts[p]->GetGrams(part_ids, &grams), "grams");
      for (size_t j = 0; j < at.size(); ++j) (*out)[at[j]] = std::move(grams[j]);
    });
    return absl::OkStatus();
  }

 private:
  // A round of reads: each home partition's ids in one batch, its CPU time charged to it.
  template <typename Read>
  void ForEachHome(std::span<const DocId> ids, Read read) const {
    if (ids.empty()) return;
    const uint32_t parts = static_cast<uint32_t>(layout_.parts.size());
    ++cost_->rounds;
    std::vector<std::vector<DocId>> split_ids(parts);
    std::vector<std::vector<size_t>> split_at(parts);
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint32_t p = home_[ids[i]];
      split_ids[p].push_back(ids[i]);
      split_at[p].push_back(i);
    }
    for (uint32_t p = 0; p < parts; ++p) {
      if (split_ids[p].empty()) continue;
      const double t0 = CpuMs();
      read(p, std::span<const DocId>(split_ids[p]), std::span<const size_t>(split_at[p]));
      cost_->part_ms[p] += CpuMs() - t0;
      cost_->reads[p] += split_ids[p].size();
    }
  }

  const Layout& layout_;
  const std::vector<uint8_t>& home_;
  const std::vector<uint32_t>& stored_chunks_;
  CheckCost* cost_;
  mutable std::vector<std::vector<ChunkHash>> split_hashes_;
  mutable std::vector<std::vector<size_t>> split_at_;
  mutable std::vector<PostingList> found_;
};

std::set<DocId> Violators(const std::vector<DocumentMatch>& matches) {
  std::set<DocId> out;
  for (const DocumentMatch& m : matches) {
    if (m.violation) out.insert(m.doc_id);
  }
  return out;
}

std::string Describe(const std::set<DocId>& ids) {
  std::string s = "{";
  for (DocId id : ids) s += (s.size() > 1 ? " " : "") + std::to_string(id);
  return s + "}";
}

// ---- Statistics ---------------------------------------------------------------------------

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t i = static_cast<size_t>(std::lround(0.99 * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

// Costs of one scheme over the checks of one kind (clean or copied).
struct Tally {
  std::vector<double> part_ms;         // one sample per (check, partition)
  std::vector<double> slowest_ms;      // the busiest partition, one per check
  std::vector<double> coordinator_ms;  // one per check
  std::vector<double> cluster_ms;      // partitions + coordinator, one per check
  std::vector<double> hashes;          // per (check, partition)
  std::vector<double> reads;           // per (check, partition)
  std::vector<double> rounds;          // per check

  void Add(const CheckCost& c) {
    double sum = c.coordinator_ms, slowest = 0;
    for (size_t p = 0; p < c.part_ms.size(); ++p) {
      part_ms.push_back(c.part_ms[p]);
      hashes.push_back(static_cast<double>(c.hashes[p]));
      reads.push_back(static_cast<double>(c.reads[p]));
      sum += c.part_ms[p];
      slowest = std::max(slowest, c.part_ms[p]);
    }
    slowest_ms.push_back(slowest);
    coordinator_ms.push_back(c.coordinator_ms);
    cluster_ms.push_back(sum);
    rounds.push_back(c.rounds);
  }
};

void PrintLayout(const Layout& l) {
  std::printf("%s: index MB per partition", SchemeName(l.scheme));
  double total = 0, postings_total = 0;
  uint64_t docs = 0;
  std::string postings_line;
  for (const auto& part : l.parts) {
    const IndexStats s = part->Stats();
    std::printf(" %.1f", static_cast<double>(s.disk_bytes) / 1e6);
    total += static_cast<double>(s.disk_bytes);
    postings_total += static_cast<double>(s.postings_disk_bytes);
    postings_line += " " + std::to_string(s.postings);
    docs += s.documents;
  }
  double write_cpu = 0;
  uint64_t writes = 0;
  for (size_t p = 0; p < l.parts.size(); ++p) {
    write_cpu += l.write_cpu_ms[p];
    writes += l.writes[p];
  }
  const double n = static_cast<double>(g_flags.docs);
  std::printf(
      "; total %.1f MB (postings files %.1f MB); postings per partition%s; records %llu\n"
      "%s: registration: %.2f writes per document, write CPU %.3f ms per document, wall "
      "%.3f ms per document, then %.1f s to flush and settle compactions\n",
      total / 1e6, postings_total / 1e6, postings_line.c_str(),
      static_cast<unsigned long long>(docs), SchemeName(l.scheme), static_cast<double>(writes) / n,
      write_cpu / n, l.write_wall_ms / n, l.settle_wall_ms / 1e3);
}

void PrintTally(const char* scheme, const char* kind, const Tally& t) {
  std::printf(
      "%-8s %-6s rounds %.2f | per partition ms mean %.3f p99 %.3f, busiest mean %.3f | "
      "coordinator ms %.3f | cluster ms mean %.3f p99 %.3f | hashes per partition %.0f, "
      "reads per partition %.1f\n",
      scheme, kind, Mean(t.rounds), Mean(t.part_ms), P99(t.part_ms), Mean(t.slowest_ms),
      Mean(t.coordinator_ms), Mean(t.cluster_ms), P99(t.cluster_ms), Mean(t.hashes), Mean(t.reads));
}

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

void ParseFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "--docs", &v)) {
      g_flags.docs = std::stoull(v);
    } else if (ParseFlag(argv[i], "--partitions", &v)) {
      g_flags.partitions = static_cast<uint32_t>(std::stoul(v));
    } else if (ParseFlag(argv[i], "--checks", &v)) {
      g_flags.checks = static_cast<uint32_t>(std::stoul(v));
    } else if (ParseFlag(argv[i], "--doc_bytes", &v)) {
      g_flags.doc_bytes = static_cast<uint32_t>(std::stoul(v));
    } else if (ParseFlag(argv[i], "--check_bytes", &v)) {
      g_flags.check_bytes = static_cast<uint32_t>(std::stoul(v));
    } else if (ParseFlag(argv[i], "--seed", &v)) {
      g_flags.seed = std::stoull(v);
    } else if (ParseFlag(argv[i], "--dir", &v)) {
      g_flags.dir = v;
    } else if (ParseFlag(argv[i], "--keep_dir", &v)) {
      g_flags.keep_dir = v == "1";
    } else {
      std::fprintf(stderr, "partition_bench: unknown flag %s (see bench/partition_bench.cc)\n",
                   argv[i]);
      std::exit(2);
    }
  }
  if (g_flags.docs == 0 || g_flags.partitions < 1 || g_flags.partitions > 255) {
    std::fprintf(stderr, "partition_bench: need --docs >= 1 and 1 <= --partitions <= 255\n");
    std::exit(2);
  }
}

int Run() {
  const uint32_t parts = g_flags.partitions;
  const bool own_dir = g_flags.dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/partition_bench_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) Fail("mkdtemp failed");
    g_flags.dir = tmpl;
  }
  // One key for both layouts: chunk-hash ranges need one key across the cluster, and the
  // comparison needs the same hashes in both.
  absl::StatusOr<HashKey> key = HashKey::FromHex("000102030405060708090a0b0c0d0e0f");
  Check(key.status(), "key");
  ChunkingParams params;
  params.key_id = key->Id();
  absl::StatusOr<std::unique_ptr<Fingerprinter>> fingerprinter =
      Fingerprinter::Create(params, *key);
  Check(fingerprinter.status(), "fingerprinter");

  Layout doc = OpenLayout(Scheme::kDocument, g_flags.dir, params);
  Layout hash = OpenLayout(Scheme::kChunkHash, g_flags.dir, params);

  // Registration: fingerprint once, write into both layouts.
  std::vector<uint8_t> home(g_flags.docs + 1, 0);
  std::vector<uint32_t> stored_chunks(g_flags.docs + 1, 0);
  DocumentFingerprint fp, part_fp;
  double fingerprint_ms = 0;
  const FingerprintOptions register_options = RegisterFingerprintOptions(params);
  std::fprintf(stderr, "partition_bench: registering %llu documents into 2 x %u partitions in %s\n",
               static_cast<unsigned long long>(g_flags.docs), parts, g_flags.dir.c_str());
  for (uint64_t d = 0; d < g_flags.docs; ++d) {
    const std::string text = DocumentText(d);
    const double t0 = CpuMs();
    Check((*fingerprinter)->Fingerprint(text, &fp, register_options), "fingerprint");
    fingerprint_ms += CpuMs() - t0;
    DocumentRecord record;
    record.id = d + 1;
    record.title = "bench document " + std::to_string(d);
    record.collection = "bench";
    record.format = "text";
    record.size_bytes = text.size();
    home[record.id] = static_cast<uint8_t>(PartitionOf(fp.sha256, parts));
    stored_chunks[record.id] = static_cast<uint32_t>(fp.chunks.size());
    RegisterInto(doc, record, fp, text, &part_fp);
    RegisterInto(hash, record, fp, text, &part_fp);
    if (d % 10000 == 9999) {
      std::fprintf(stderr, "partition_bench: %llu documents\n",
                   static_cast<unsigned long long>(d) + 1);
    }
  }
  Settle(doc);
  Settle(hash);
  std::printf(
      "partition_bench: %llu documents of ~%u bytes, %u partitions, %u checks of ~%u "
      "bytes (half copied)\n",
      static_cast<unsigned long long>(g_flags.docs), g_flags.doc_bytes, parts, g_flags.checks,
      g_flags.check_bytes);
  std::printf(
      "registration fingerprint CPU %.3f ms per document (once per document in both "
      "schemes)\n",
      fingerprint_ms / static_cast<double>(g_flags.docs));
  PrintLayout(doc);
  PrintLayout(hash);

  // Checks.
  const FingerprintOptions check_options = CheckFingerprintOptions(params);
  const DetectOptions detect_options;
  Tally doc_tally[2], shared_key_tally[2], hash_tally[2];  // [copied]
  std::vector<double> check_fp_ms;
  CheckCost cost;
  uint64_t violations[2] = {0, 0};
  // The first kWarmup iterations (checks of their own, after the measured ones) warm the
  // block caches and each thread's scratch; they are verified but not counted.
  constexpr uint32_t kWarmup = 50;
  for (uint32_t n = 0; n < kWarmup + g_flags.checks; ++n) {
    const bool measured = n >= kWarmup;
    const uint32_t i = measured ? n - kWarmup : g_flags.checks + n;
    const CheckText c = MakeCheck(i);
    double t0 = CpuMs();
    Check((*fingerprinter)->Fingerprint(c.text, &fp, check_options), "fingerprint");
    const double f = CpuMs() - t0;
    if (measured) check_fp_ms.push_back(f);

    // Document partitioning: each partition fingerprints (its own key) and runs Detect.
    cost.Reset(parts);
    cost.rounds = 1;
    std::vector<DocumentMatch> merged;
    bool doc_violation = false;
    for (uint32_t p = 0; p < parts; ++p) {
      PartitionCandidates source(*doc.parts[p], &cost.hashes[p], &cost.reads[p]);
      t0 = CpuMs();
      absl::StatusOr<Report> report = Detect(fp, params, source, detect_options);
      cost.part_ms[p] = f + CpuMs() - t0;
      Check(report.status(), "detect");
      doc_violation |= report->violation;
      t0 = CpuMs();
      for (DocumentMatch& m : report->matches) merged.push_back(std::move(m));
      cost.coordinator_ms += CpuMs() - t0;
    }
    t0 = CpuMs();
    std::stable_sort(
        merged.begin(), merged.end(),
        [](const DocumentMatch& a, const DocumentMatch& b) { return a.ratio > b.ratio; });
    if (merged.size() > detect_options.check.max_results)
      merged.resize(detect_options.check.max_results);
    cost.coordinator_ms += CpuMs() - t0;
    if (measured) {
      doc_tally[c.copied].Add(cost);
      // The same with one key for the cluster: the router fingerprints once and sends the
      // fingerprint, each partition runs Detect only.
      for (double& ms : cost.part_ms) ms -= f;
      cost.coordinator_ms += f;
      shared_key_tally[c.copied].Add(cost);
    }
    const std::set<DocId> doc_found = Violators(merged);

    // Chunk-hash partitioning: one Detect over the ranges; the fingerprint once.
    cost.Reset(parts);
    RangeCandidates source(hash, home, stored_chunks, &cost);
    t0 = CpuMs();
    absl::StatusOr<Report> report = Detect(fp, params, source, detect_options);
    const double detect_ms = CpuMs() - t0;
    Check(report.status(), "detect");
    double in_parts = 0;
    for (double ms : cost.part_ms) in_parts += ms;
    cost.coordinator_ms = f + detect_ms - in_parts;
    if (measured) hash_tally[c.copied].Add(cost);
    const std::set<DocId> hash_found = Violators(report->matches);

    const std::string what =
        "check " + std::to_string(i) +
        (c.copied ? " (copied from " + std::to_string(c.source) + ")" : " (clean)");
    if (doc_found != hash_found || doc_violation != report->violation) {
      Fail(what + ": document partitions found " + Describe(doc_found) +
           ", chunk-hash partitions " + Describe(hash_found));
    }
    if (c.copied ? !doc_found.contains(c.source) : !doc_found.empty()) {
      Fail(what + ": found " + Describe(doc_found));
    }
    if (measured) violations[c.copied] += doc_violation;
  }

  std::printf(
      "check fingerprint CPU %.3f ms (mean); violations: clean %llu of %u, copied %llu "
      "of %u, the same in both schemes\n",
      Mean(check_fp_ms), static_cast<unsigned long long>(violations[0]), (g_flags.checks + 1) / 2,
      static_cast<unsigned long long>(violations[1]), g_flags.checks / 2);
  for (int copied = 0; copied < 2; ++copied) {
    const char* kind = copied ? "copied" : "clean";
    PrintTally("doc", kind, doc_tally[copied]);
    PrintTally("doc-1key", kind, shared_key_tally[copied]);
    PrintTally("hash", kind, hash_tally[copied]);
  }

  doc.parts.clear();
  hash.parts.clear();
  if (own_dir && !g_flags.keep_dir) std::filesystem::remove_all(g_flags.dir);
  return 0;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  cops::ParseFlags(argc, argv);
  return cops::Run();
}
