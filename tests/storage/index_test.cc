#include "storage/index.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "rocksdb/table_properties.h"
#include "storage/index_layout.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace cops {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

ChunkingParams TestParams() {
  ChunkingParams p;
  p.key_id = "0123456789abcdef";
  return p;
}

IndexOptions Options(const std::string& path) {
  IndexOptions o;
  o.path = path;
  o.params = TestParams();
  o.block_cache_bytes = 8 << 20;
  o.write_buffer_bytes = 4 << 20;
  return o;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Hash j of the document generated from `seed`; distinct seeds share no hashes.
ChunkHash HashOf(uint64_t seed, uint32_t j) { return Mix(seed * 1000003 + j); }
constexpr ChunkHash kSharedHash = 0x5eed5eed5eed5eedull;

// `n` chunks derived from `seed` (chunk j at ordinal 2j, bytes [10j, 10j+7)), plus, when
// `shared`, one chunk with kSharedHash that every such document contains.
DocumentFingerprint MakeFingerprint(uint64_t seed, uint32_t n, bool shared = false) {
  DocumentFingerprint fp;
  for (uint32_t j = 0; j < n; ++j) {
    fp.chunks.push_back(Chunk{HashOf(seed, j), 2 * j, 10 * j, 10 * j + 7, j, j + 5});
  }
  if (shared) fp.chunks.push_back(Chunk{kSharedHash, 2 * n, 10 * n, 10 * n + 7, n, n + 5});
  fp.total_chunks = 2 * n + 1;
  for (int i = 0; i < 8; ++i) fp.sha256[i] = static_cast<uint8_t>(Mix(seed) >> (8 * i));
  fp.input_bytes = 10 * n + 10;
  return fp;
}

DocumentRecord MakeRecord(const std::string& external_id, const std::string& collection = "c") {
  DocumentRecord r;
  r.title = "Title " + external_id;
  r.author = "Author";
  r.owner = "alice";
  r.collection = collection;
  r.external_id = external_id;
  r.format = "text";
  return r;
}

std::unique_ptr<Index> OpenOrDie(const IndexOptions& o) {
  auto index = Index::Open(o);
  EXPECT_OK(index);
  return index.ok() ? std::move(index).value() : nullptr;
}

// Whether opening with `o` is refused with FAILED_PRECONDITION naming `why`.
::testing::AssertionResult RefusedNaming(const IndexOptions& o, std::string_view why) {
  auto index = Index::Open(o);
  if (index.ok()) return ::testing::AssertionFailure() << "opened";
  if (index.status().code() != absl::StatusCode::kFailedPrecondition ||
      index.status().message().find(absl::string_view(why.data(), why.size())) ==
          absl::string_view::npos) {
    return ::testing::AssertionFailure() << index.status() << " does not name \"" << why << "\"";
  }
  return ::testing::AssertionSuccess();
}

// Postings of `hash` that belong to `doc`.
std::vector<Posting> PostingsOf(const Index& index, ChunkHash hash, DocId doc) {
  std::vector<PostingList> out;
  EXPECT_OK(index.Lookup(std::span<const ChunkHash>(&hash, 1), &out));
  std::vector<Posting> mine;
  for (const Posting& p : out.at(0).postings) {
    if (p.doc_id == doc) mine.push_back(p);
  }
  return mine;
}

// True when every chunk of `fp` lists `doc` with the right ordinal and span.
// `positions`: with the chunks' ordinals and byte spans (else, as a verifying index keeps
// a stored plain text's bucketed postings, one per hash without any: all 0).
bool HasAllPostings(const Index& index, const DocumentFingerprint& fp, DocId doc,
                    bool positions = true) {
  std::vector<ChunkHash> hashes;
  for (const Chunk& c : fp.chunks) hashes.push_back(c.hash);
  std::vector<PostingList> out;
  if (!index.Lookup(hashes, &out).ok()) return false;
  for (size_t i = 0; i < hashes.size(); ++i) {
    size_t found = 0, listed = 0;
    for (const Posting& p : out[i].postings) {
      if (p.doc_id != doc) continue;
      ++listed;
      found += positions ? p.ordinal == fp.chunks[i].ordinal && p.start == fp.chunks[i].start &&
                               p.end == fp.chunks[i].end
                         : p.ordinal == 0 && p.start == 0 && p.end == 0;
    }
    if (found == 0 || (!positions && listed != 1)) return false;
  }
  return true;
}

TEST(IndexTest, RegisterThenLookupReturnsPostingsRecordAndText) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  const DocumentFingerprint fa = MakeFingerprint(1, 20, /*shared=*/true);
  const DocumentFingerprint fb = MakeFingerprint(2, 20, /*shared=*/true);
  auto a = index->Register(MakeRecord("a"), fa, "text of a");
  auto b = index->Register(MakeRecord("b"), fb, "text of b");
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_TRUE(a->created);
  EXPECT_FALSE(a->duplicate_of.has_value());
  EXPECT_LT(a->id, b->id);

  const std::vector<ChunkHash> hashes = {HashOf(1, 3), kSharedHash, 0x1234, HashOf(2, 19)};
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(hashes, &out));
  ASSERT_EQ(out.size(), 4u);
  ASSERT_EQ(out[0].postings.size(), 1u);
  EXPECT_EQ(out[0].doc_frequency, 1u);
  EXPECT_EQ(out[0].postings[0].doc_id, a->id);
  EXPECT_EQ(out[0].postings[0].ordinal, 6u);
  EXPECT_EQ(out[0].postings[0].start, 30u);
  EXPECT_EQ(out[0].postings[0].end, 37u);
  EXPECT_EQ(out[1].doc_frequency, 2u);
  ASSERT_EQ(out[1].postings.size(), 2u);
  EXPECT_EQ(out[1].postings[0].doc_id, a->id);
  EXPECT_EQ(out[1].postings[1].doc_id, b->id);
  EXPECT_EQ(out[2].doc_frequency, 0u);
  EXPECT_TRUE(out[2].postings.empty());
  ASSERT_EQ(out[3].postings.size(), 1u);
  EXPECT_EQ(out[3].postings[0].doc_id, b->id);

  auto record = index->GetDocument(a->id);
  ASSERT_OK(record);
  EXPECT_EQ(record->title, "Title a");
  EXPECT_EQ(record->external_id, "a");
  EXPECT_EQ(record->stored_chunks, 21u);
  EXPECT_EQ(record->total_chunks, fa.total_chunks);
  EXPECT_EQ(record->sha256, fa.sha256);
  EXPECT_GT(record->registered_unix_micros, 0);
  EXPECT_EQ(*index->GetText(b->id), "text of b");
  EXPECT_EQ(index->GetDocument(999).status().code(), absl::StatusCode::kNotFound);

  std::vector<DocId> ids = {b->id, 999, a->id};
  std::vector<std::optional<DocumentRecord>> records;
  ASSERT_OK(index->GetDocuments(ids, &records));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]->external_id, "b");
  EXPECT_FALSE(records[1].has_value());
  EXPECT_EQ(records[2]->external_id, "a");

  IndexStats stats = index->Stats();
  EXPECT_EQ(stats.documents, 2u);
  EXPECT_EQ(stats.postings, 42u);
  EXPECT_EQ(stats.text_bytes, 18u);
}

TEST(IndexTest, LookupAnswersEveryPositionOfUnsortedRepeatedHashes) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  DocId a = index->Register(MakeRecord("a"), MakeFingerprint(1, 50), "")->id;
  const std::vector<ChunkHash> hashes = {HashOf(1, 40), 77, HashOf(1, 2), HashOf(1, 40), 77, HashOf(1, 2)};
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(hashes, &out));
  ASSERT_EQ(out.size(), hashes.size());
  for (size_t i : {0u, 3u}) {
    ASSERT_EQ(out[i].postings.size(), 1u) << i;
    EXPECT_EQ(out[i].postings[0].doc_id, a);
    EXPECT_EQ(out[i].postings[0].ordinal, 80u);
  }
  for (size_t i : {2u, 5u}) {
    ASSERT_EQ(out[i].postings.size(), 1u) << i;
    EXPECT_EQ(out[i].postings[0].ordinal, 4u);
  }
  EXPECT_TRUE(out[1].postings.empty());
  EXPECT_TRUE(out[4].postings.empty());
}

TEST(IndexTest, RepeatedChunkInOneDocumentCountsTheDocumentOnce) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  DocumentFingerprint fp = MakeFingerprint(1, 3);
  fp.chunks.push_back(Chunk{HashOf(1, 0), 50, 500, 507, 50, 55});
  auto a = index->Register(MakeRecord("a"), fp, "");
  ASSERT_OK(a);
  const std::vector<Posting> ps = PostingsOf(*index, HashOf(1, 0), a->id);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].ordinal, 0u);
  EXPECT_EQ(ps[1].ordinal, 50u);
  std::vector<PostingList> out;
  const ChunkHash h = HashOf(1, 0);
  ASSERT_OK(index->Lookup(std::span<const ChunkHash>(&h, 1), &out));
  EXPECT_EQ(out[0].doc_frequency, 1u);
}

TEST(IndexTest, ReopenKeepsDocumentsAndNeverReusesIds) {
  TempDir dir;
  DocId first;
  {
    auto index = OpenOrDie(Options(dir.Join("db")));
    first = index->Register(MakeRecord("a"), MakeFingerprint(1, 10), "x")->id;
    DocId second = index->Register(MakeRecord("b"), MakeFingerprint(2, 10), "y")->id;
    ASSERT_OK(index->Unregister(second));
  }
  auto index = OpenOrDie(Options(dir.Join("db")));
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(1, 10), first));
  EXPECT_EQ(index->Stats().documents, 1u);
  auto third = index->Register(MakeRecord("c"), MakeFingerprint(3, 10), "z");
  ASSERT_OK(third);
  EXPECT_EQ(third->id, first + 2);  // the unregistered id is not handed out again
}

TEST(IndexTest, APageTokenBeyondAnyIdIsInvalidArgument) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_OK(index->Register(MakeRecord("a"), MakeFingerprint(1, 10), "x").status());
  // 20 digits, above the largest 64-bit id: a client's mistake, not a server fault.
  for (const char* token : {"99999999999999999999", "18446744073709551616"}) {
    EXPECT_EQ(index->ListDocuments(token, 10).status().code(),
              absl::StatusCode::kInvalidArgument)
        << token;
  }
  ASSERT_OK_AND_ASSIGN(DocumentPage last, index->ListDocuments("18446744073709551615", 10));
  EXPECT_TRUE(last.documents.empty());
}

// A full disk under RocksDB's own files (its write-ahead log, flushes): the registration
// that meets it fails with a clear RESOURCE_EXHAUSTED, every acknowledged one survives, and
// once space returns the same open index registers again, without a restart. Each round
// starts from a different state: memtables holding the acknowledged write, and memtables
// just flushed (empty), where RocksDB 7.8's DB::Resume keeps the failed log writer.
TEST(IndexTest, ADiskFullIsAClearErrorLosesNothingAcknowledgedAndRecoversInPlace) {
  for (bool flushed_first : {false, true}) {
    SCOPED_TRACE(flushed_first ? "memtables empty" : "memtables holding data");
    TempDir dir;
    const std::string trash = dir.Join("trash");
    fs::create_directories(trash);
    FaultFileSystem disk(trash);
    IndexOptions o = Options(dir.Join("db"));
    o.env = disk.rocksdb_env();
    o.sync_writes = true;
    std::vector<std::pair<DocId, char>> acknowledged;
    {
      auto index = OpenOrDie(o);
      ASSERT_OK_AND_ASSIGN(RegisterOutcome a,
                           index->Register(MakeRecord("a"), MakeFingerprint('a', 10), "text a"));
      acknowledged.emplace_back(a.id, 'a');
      if (flushed_first) {
        ASSERT_OK(index->Flush());
      }

      disk.SetDiskFull(true);
      for (int attempt = 0; attempt < 3; ++attempt) {
        absl::StatusOr<RegisterOutcome> b =
            index->Register(MakeRecord("b"), MakeFingerprint('b', 10), "text b");
        EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
        EXPECT_NE(b.status().message().find("space"), std::string::npos) << b.status();
      }
      EXPECT_EQ(index->Unregister(a.id).code(), absl::StatusCode::kResourceExhausted);
      EXPECT_EQ(index->Flush().code(), absl::StatusCode::kResourceExhausted);
      // Checks and reads go on meanwhile.
      EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint('a', 10), a.id));
      EXPECT_OK(index->GetDocument(a.id).status());

      disk.SetDiskFull(false);
      for (char name : {'b', 'c'}) {
        absl::StatusOr<RegisterOutcome> again =
            index->Register(MakeRecord(std::string(1, name)), MakeFingerprint(name, 10),
                            std::string("text ") + name);
        ASSERT_OK(again.status()) << "space is back: " << name;
        acknowledged.emplace_back(again->id, name);
      }
      EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint('a', 10), a.id));
      EXPECT_EQ(index->Stats().documents, 3u);
      ASSERT_OK(index->Flush());
      ASSERT_OK_AND_ASSIGN(RegisterOutcome d,
                           index->Register(MakeRecord("d"), MakeFingerprint('d', 10), "text d"));
      acknowledged.emplace_back(d.id, 'd');
    }
    o.env = nullptr;
    auto index = OpenOrDie(o);
    EXPECT_EQ(index->Stats().documents, acknowledged.size());
    for (const auto& [id, name] : acknowledged) {
      EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(name, 10), id)) << name;
    }
  }
}

// Writes stop while the file system has less free space than the reserve, with an error
// saying so, and resume by themselves, without a reopen, once space is back; reads go on.
TEST(IndexTest, WritesAreRefusedBelowTheFreeSpaceReserveAndResumeWhenSpaceReturns) {
  TempDir dir;
  auto free_bytes = std::make_shared<std::atomic<uint64_t>>(uint64_t{1} << 30);
  IndexOptions o = Options(dir.Join("db"));
  o.min_free_disk_mb = 100;
  o.free_disk_bytes = [free_bytes](const std::string&) -> absl::StatusOr<uint64_t> {
    return free_bytes->load();
  };
  auto index = OpenOrDie(o);
  ASSERT_OK_AND_ASSIGN(RegisterOutcome a,
                       index->Register(MakeRecord("a"), MakeFingerprint('a', 10), "text a"));

  free_bytes->store(uint64_t{99} << 20);
  // The free space is read again at most every 100 ms while it is above the reserve.
  absl::Status refused;
  for (int attempt = 0; attempt < 1000 && refused.ok(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    absl::StatusOr<RegisterOutcome> b =
        index->Register(MakeRecord("b"), MakeFingerprint('b', 10), "text b");
    if (b.ok()) {
      // The reserve may be read again between the two: then the removal is what is refused.
      refused = index->Unregister(b->id);
    } else {
      refused = b.status();
    }
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("less than 100 MiB free"), std::string::npos) << refused;
  EXPECT_EQ(index->Unregister(a.id).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint('a', 10), a.id));
  EXPECT_OK(index->GetDocument(a.id).status());

  free_bytes->store(uint64_t{101} << 20);
  ASSERT_OK_AND_ASSIGN(RegisterOutcome c,
                       index->Register(MakeRecord("c"), MakeFingerprint('c', 10), "text c"));
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint('c', 10), c.id));

  // A reserve of 0 leaves writes alone on any free space.
  index.reset();
  o.min_free_disk_mb = 0;
  free_bytes->store(0);
  index = OpenOrDie(o);
  EXPECT_OK(index->Register(MakeRecord("d"), MakeFingerprint('d', 10), "text d").status());
}

// On a real full file system (a 64 MiB tmpfs; root only): registrations stop with a clear
// error before RocksDB meets ENOSPC (RocksDB 7.8 aborts the process on some failed writes),
// every acknowledged document survives, and once a file is deleted registrations go on in
// the same index.
TEST(IndexTest, OnASmallFileSystemWritesStopAtTheReserveLoseNothingAndResume) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: no tmpfs can be mounted";
  TempDir dir;
  const std::string disk = dir.Join("disk");
  fs::create_directories(disk);
  if (mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64m,mode=0700") != 0) {
    GTEST_SKIP() << "mounting a tmpfs failed: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{disk};
  // Filler written first, deleted later to give space back.
  const std::string filler = disk + "/filler";
  {
    std::ofstream out(filler, std::ios::binary);
    const std::string block(1 << 20, 'f');
    for (int i = 0; i < 16; ++i) out << block;
    ASSERT_TRUE(out.good());
  }
  IndexOptions o = Options(disk + "/db");
  o.min_free_disk_mb = 24;
  o.write_buffer_bytes = 1 << 20;
  o.postings_memtables = 1;
  std::mt19937_64 random(7);
  auto text = [&random] {
    std::string t(256 << 10, ' ');
    for (char& ch : t) ch = static_cast<char>('a' + random() % 26);
    return t;
  };
  std::vector<std::pair<DocId, uint64_t>> acknowledged;
  {
    auto index = OpenOrDie(o);
    absl::Status refused;
    for (uint64_t seed = 1; seed < 1000 && refused.ok(); ++seed) {
      absl::StatusOr<RegisterOutcome> r = index->Register(
          MakeRecord("doc" + std::to_string(seed)), MakeFingerprint(seed, 50), text());
      if (r.ok()) {
        acknowledged.emplace_back(r->id, seed);
      } else {
        refused = r.status();
      }
    }
    ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
    EXPECT_NE(refused.message().find("less than 24 MiB free"), std::string::npos) << refused;
    ASSERT_FALSE(acknowledged.empty());
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(acknowledged[0].second, 50),
                               acknowledged[0].first));

    fs::remove(filler);
    ASSERT_OK_AND_ASSIGN(RegisterOutcome after,
                         index->Register(MakeRecord("after"), MakeFingerprint(5000, 50), "after"));
    acknowledged.emplace_back(after.id, 5000);
  }
  auto index = OpenOrDie(o);
  EXPECT_EQ(index->Stats().documents, acknowledged.size());
  for (const auto& [id, seed] : acknowledged) {
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(seed, 50), id)) << seed;
  }
}

// Checks and reads running while a write meets a full disk and the next one, space back,
// reopens the database: every call finds the acknowledged document (calls wait out the
// reopen, none sees a closed database). Run under ThreadSanitizer by scripts/tsan.sh.
TEST(IndexTest, CallsDuringAReopenAfterADiskFullFindEveryAcknowledgedDocument) {
  TempDir dir;
  const std::string trash = dir.Join("trash");
  fs::create_directories(trash);
  FaultFileSystem disk(trash);
  IndexOptions o = Options(dir.Join("db"));
  o.env = disk.rocksdb_env();
  auto index = OpenOrDie(o);
  ASSERT_OK_AND_ASSIGN(RegisterOutcome a,
                       index->Register(MakeRecord("a"), MakeFingerprint('a', 10), "text a"));
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, calls{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (!HasAllPostings(*index, MakeFingerprint('a', 10), a.id)) ++failures;
        if (!index->GetDocument(a.id).ok()) ++failures;
        (void)index->Stats();
        ++calls;
      }
    });
  }
  for (int round = 0; round < 3; ++round) {
    disk.SetDiskFull(true);
    EXPECT_EQ(index->Register(MakeRecord("b"), MakeFingerprint('b', 10), "text b").status().code(),
              absl::StatusCode::kResourceExhausted);
    disk.SetDiskFull(false);
    const std::string name = "c" + std::to_string(round);
    ASSERT_OK(index->Register(MakeRecord(name), MakeFingerprint(100 + round, 10), name).status());
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0) << "of " << calls.load() << " calls";
  EXPECT_EQ(index->Stats().documents, 4u);
}

TEST(IndexTest, RegisterAsKeepsTheGivenIdAndRecordAndRaisesTheNextId) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  DocumentRecord record = MakeRecord("rekeyed");
  record.id = 42;
  record.owner = "press";
  record.registered_unix_micros = 1234;
  ASSERT_OK(index->RegisterAs(record, MakeFingerprint(1, 10), "text"));
  auto stored = index->GetDocument(42);
  ASSERT_OK(stored);
  EXPECT_EQ(stored->owner, "press");
  EXPECT_EQ(stored->registered_unix_micros, 1234);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(1, 10), 42));
  EXPECT_EQ(*index->GetText(42), "text");
  EXPECT_EQ(index->NextDocId(), 43u);
  // The id is taken, and so is the text under another id.
  EXPECT_TRUE(absl::IsAlreadyExists(index->RegisterAs(record, MakeFingerprint(2, 10), "")));
  record.id = 50;
  EXPECT_TRUE(absl::IsAlreadyExists(index->RegisterAs(record, MakeFingerprint(1, 10), "")));
  ASSERT_OK(index->RaiseNextDocId(100));
  ASSERT_OK(index->RaiseNextDocId(60));  // never lowered
  EXPECT_EQ(index->Register(MakeRecord("b"), MakeFingerprint(3, 10), "")->id, 100u);
}

// Registration-log events (replication/): the applied sequence is written with the
// document, survives a reopen, and an event at or below it is refused unchanged.
TEST(IndexTest, LogSequenceIsAppliedWithTheDocumentAndEachEventOnlyOnce) {
  TempDir dir;
  {
    auto index = OpenOrDie(Options(dir.Join("db")));
    EXPECT_EQ(index->AppliedLogSequence(), 0u);
    ASSERT_OK_AND_ASSIGN(RegisterOutcome a,
                         index->Register(MakeRecord("a"), MakeFingerprint(1, 10), "a", 3));
    EXPECT_TRUE(a.created);
    EXPECT_EQ(index->AppliedLogSequence(), 3u);
    // Redelivered: refused, nothing registered twice.
    EXPECT_TRUE(absl::IsAborted(
        index->Register(MakeRecord("b"), MakeFingerprint(2, 10), "b", 3).status()));
    EXPECT_EQ(index->Stats().documents, 1u);
    // A duplicate creates nothing but still consumes its sequence.
    ASSERT_OK_AND_ASSIGN(RegisterOutcome dup,
                         index->Register(MakeRecord("a"), MakeFingerprint(1, 10), "a", 4));
    EXPECT_FALSE(dup.created);
    EXPECT_EQ(index->AppliedLogSequence(), 4u);
    // An unregistration of an unknown document, and a skipped event, consume theirs too.
    EXPECT_TRUE(absl::IsNotFound(index->Unregister(999, 5)));
    EXPECT_EQ(index->AppliedLogSequence(), 5u);
    ASSERT_OK(index->SkipLogSequence(6));
    EXPECT_TRUE(absl::IsAborted(index->SkipLogSequence(6)));
    ASSERT_OK(index->Unregister(a.id, 7));
    EXPECT_TRUE(absl::IsAborted(index->Unregister(a.id, 7)));
    EXPECT_EQ(index->Stats().documents, 0u);
  }
  auto reopened = OpenOrDie(Options(dir.Join("db")));
  EXPECT_EQ(reopened->AppliedLogSequence(), 7u);
}

TEST(IndexTest, UnregisterRemovesPostingsRecordTextAndMaps) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  const DocumentFingerprint fa = MakeFingerprint(1, 10, true);
  const DocumentFingerprint fb = MakeFingerprint(2, 10, true);
  DocId a = index->Register(MakeRecord("a"), fa, "text a")->id;
  DocId b = index->Register(MakeRecord("b"), fb, "text b")->id;
  ASSERT_OK(index->Unregister(a));

  EXPECT_TRUE(PostingsOf(*index, HashOf(1, 4), a).empty());
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash, HashOf(1, 4)}, &out));
  EXPECT_EQ(out[0].doc_frequency, 1u);
  ASSERT_EQ(out[0].postings.size(), 1u);
  EXPECT_EQ(out[0].postings[0].doc_id, b);
  EXPECT_EQ(out[1].doc_frequency, 0u);
  EXPECT_EQ(index->GetDocument(a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(index->GetText(a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(index->Unregister(a).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(index->Stats().documents, 1u);
  EXPECT_EQ(index->Stats().postings, 11u);
  EXPECT_EQ(index->Stats().text_bytes, 6u);

  // Neither the external id nor the text is remembered: both register afresh.
  auto again = index->Register(MakeRecord("a"), fa, "text a");
  ASSERT_OK(again);
  EXPECT_TRUE(again->created);
  EXPECT_NE(again->id, a);
  EXPECT_TRUE(HasAllPostings(*index, fa, again->id));
}

TEST(IndexTest, VerificationGramsAreStoredWithTheDocumentAndRemovedWithIt) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  DocumentFingerprint fa = MakeFingerprint(1, 10);
  fa.grams = {0, 1, 0xABCD, 0xFFFF, 0x1234, 0x1234};
  const DocumentFingerprint fb = MakeFingerprint(2, 10);  // no grams
  DocId a = index->Register(MakeRecord("a"), fa, "text a")->id;
  DocId b = index->Register(MakeRecord("b"), fb, "text b")->id;
  std::vector<std::vector<uint32_t>> grams;
  const std::vector<DocId> ids = {b, a, 999};
  ASSERT_OK(index->GetGrams(ids, &grams));
  ASSERT_EQ(grams.size(), 3u);
  EXPECT_TRUE(grams[0].empty());
  EXPECT_EQ(grams[1], fa.grams);
  EXPECT_TRUE(grams[2].empty());

  ASSERT_OK(index->Unregister(a));
  ASSERT_OK(index->GetGrams(ids, &grams));
  EXPECT_TRUE(grams[1].empty()) << "unregistering removes the grams";

  // They survive a reopen like every acknowledged registration.
  const DocId c = index->Register(MakeRecord("c"), fa, "text c")->id;
  index.reset();
  index = OpenOrDie(Options(dir.Join("db")));
  const std::vector<DocId> one = {c};
  ASSERT_OK(index->GetGrams(one, &grams));
  EXPECT_EQ(grams[0], fa.grams);
}

TEST(IndexTest, AnIndexWithoutTheGramsFamilyOpensReadOnlyAndReadsNoGrams) {
  // Indexes (and snapshots) made before verification have no "verify" column family.
  TempDir dir;
  const std::string path = dir.Join("db");
  DocumentFingerprint fa = MakeFingerprint(1, 10);
  fa.grams = {7, 8, 9};
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_OK(index->Register(MakeRecord("a"), fa, "text a"));
  }
  {
    rocksdb::DB* raw = nullptr;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> d;
    for (const std::string& n : names) d.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, d, &handles, &raw).ok());
    for (auto* h : handles) {
      if (h->GetName() == "verify") {
        ASSERT_TRUE(raw->DropColumnFamily(h).ok());
      }
    }
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  IndexOptions ro = Options(path);
  ro.read_only = true;
  auto index = OpenOrDie(ro);
  ASSERT_NE(index, nullptr);
  std::vector<std::vector<uint32_t>> grams;
  const std::vector<DocId> ids = {1};
  ASSERT_OK(index->GetGrams(ids, &grams));
  EXPECT_TRUE(grams[0].empty());
  EXPECT_OK(index->GetDocument(1));
  index.reset();
  // A writable open creates the family again.
  index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
}

TEST(IndexTest, RetryWithSameExternalIdReturnsTheSameDocument) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  auto first = index->Register(MakeRecord("ext-1", "news"), MakeFingerprint(1, 10), "t");
  ASSERT_OK(first);
  // Same collection and external id, even with other content: the same document.
  auto retry = index->Register(MakeRecord("ext-1", "news"), MakeFingerprint(2, 10), "t2");
  ASSERT_OK(retry);
  EXPECT_FALSE(retry->created);
  EXPECT_EQ(retry->id, first->id);
  EXPECT_FALSE(retry->duplicate_of.has_value());
  EXPECT_TRUE(PostingsOf(*index, HashOf(2, 0), first->id).empty());
  EXPECT_EQ(index->Stats().documents, 1u);
  // The same external id in another collection is another document.
  auto other = index->Register(MakeRecord("ext-1", "papers"), MakeFingerprint(2, 10), "t2");
  ASSERT_OK(other);
  EXPECT_TRUE(other->created);
  EXPECT_NE(other->id, first->id);
}

TEST(IndexTest, ExactDuplicateReturnsExistingIdAndAddsNoPostings) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  const DocumentFingerprint fp = MakeFingerprint(7, 10, true);
  DocId original = index->Register(MakeRecord("orig"), fp, "same")->id;
  auto dup = index->Register(MakeRecord("copy"), fp, "same");
  ASSERT_OK(dup);
  EXPECT_FALSE(dup->created);
  EXPECT_EQ(dup->id, original);
  ASSERT_TRUE(dup->duplicate_of.has_value());
  EXPECT_EQ(*dup->duplicate_of, original);
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 1u);
  EXPECT_EQ(out[0].postings.size(), 1u);
  EXPECT_EQ(index->Stats().documents, 1u);
}

// A tenant's copy of a text another collection holds is its own document: registered anew,
// and no reply names the other collection's document.
TEST(IndexTest, ExactDuplicatesAreFoundWithinTheirCollectionOnly) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  const DocumentFingerprint fp = MakeFingerprint(8, 10, true);
  const DocId in_a = index->Register(MakeRecord("", "a"), fp, "same")->id;
  auto in_b = index->Register(MakeRecord("", "b"), fp, "same");
  ASSERT_OK(in_b);
  EXPECT_TRUE(in_b->created);
  EXPECT_NE(in_b->id, in_a);
  EXPECT_FALSE(in_b->duplicate_of.has_value());
  EXPECT_TRUE(HasAllPostings(*index, fp, in_b->id));
  EXPECT_EQ(index->GetDocument(in_b->id)->collection, "b");
  // Within each collection the copy is a duplicate of that collection's document.
  EXPECT_EQ(index->Register(MakeRecord("", "a"), fp, "same")->duplicate_of, in_a);
  EXPECT_EQ(index->Register(MakeRecord("", "b"), fp, "same")->duplicate_of, in_b->id);
  // The same within one batch: one document per collection.
  const DocumentFingerprint other = MakeFingerprint(9, 10);
  std::vector<DocumentRecord> records = {MakeRecord("", "a"), MakeRecord("", "c"),
                                         MakeRecord("", "a")};
  std::vector<RegisterItem> items;
  for (const DocumentRecord& r : records) items.push_back({&r, &other, "other"});
  std::vector<absl::StatusOr<RegisterOutcome>> out;
  ASSERT_OK(index->RegisterBatch(items, &out));
  EXPECT_TRUE(out[0]->created);
  EXPECT_TRUE(out[1]->created);
  EXPECT_EQ(out[2]->duplicate_of, out[0]->id);
  EXPECT_EQ(index->Collections().value(), (std::vector<std::string>{"a", "b", "c"}));
  for (const char* c : {"a", "b", "c"}) EXPECT_TRUE(index->HasCollection(c).value()) << c;
  for (const char* c : {"", "ab", "bb", "d"}) EXPECT_FALSE(index->HasCollection(c).value()) << c;

  // Unregistering one collection's copy leaves the other's duplicate entry in place.
  ASSERT_OK(index->Unregister(in_b->id));
  EXPECT_EQ(index->Register(MakeRecord("", "a"), fp, "same")->duplicate_of, in_a);
  EXPECT_EQ(index->Collections().value(), (std::vector<std::string>{"a", "c"}));
  auto back_in_b = index->Register(MakeRecord("", "b"), fp, "same");
  EXPECT_TRUE(back_in_b->created);
  EXPECT_EQ(index->Stats().documents, 4u);
}

TEST(IndexTest, RegisterBatchGivesTheOutcomesOfRegistrationsInOrder) {
  TempDir dir;
  const std::string path = dir.Join("db");
  auto index = OpenOrDie(Options(path));
  const DocId before = index->Register(MakeRecord("old"), MakeFingerprint(50, 10), "old")->id;

  // 0, 1: new; 2: the text of 0 again; 3: the external id of 1 again; 4: invalid chunk;
  // 5: the text of the document registered before; 6: new, sharing a hash with 0 and 1.
  std::vector<DocumentFingerprint> fps = {
      MakeFingerprint(51, 20, true), MakeFingerprint(52, 20, true), MakeFingerprint(51, 20, true),
      MakeFingerprint(53, 5),        MakeFingerprint(54, 5),        MakeFingerprint(50, 10),
      MakeFingerprint(55, 30, true)};
  fps[4].chunks[2].end = fps[4].chunks[2].start - 1;
  std::vector<DocumentRecord> records = {MakeRecord("a"), MakeRecord("b"), MakeRecord("c"),
                                         MakeRecord("b"), MakeRecord("e"), MakeRecord("f"),
                                         MakeRecord("g")};
  std::vector<std::string> texts = {"ta", "tb", "tc", "td", "te", "tf", "tg"};
  std::vector<RegisterItem> items;
  for (size_t i = 0; i < fps.size(); ++i) items.push_back({&records[i], &fps[i], texts[i]});
  std::vector<absl::StatusOr<RegisterOutcome>> out;
  ASSERT_OK(index->RegisterBatch(items, &out));
  ASSERT_EQ(out.size(), items.size());
  for (size_t i : {0, 1, 2, 3, 5, 6}) ASSERT_OK(out[i]) << i << ": " << out[i].status();
  EXPECT_EQ(out[4].status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(out[0]->created);
  EXPECT_TRUE(out[1]->created);
  EXPECT_TRUE(out[6]->created);
  EXPECT_GT(out[0]->id, before);
  EXPECT_LT(out[0]->id, out[1]->id);
  EXPECT_LT(out[1]->id, out[6]->id);
  EXPECT_FALSE(out[2]->created);
  EXPECT_EQ(out[2]->id, out[0]->id);
  EXPECT_EQ(out[2]->duplicate_of, std::optional<DocId>(out[0]->id));
  EXPECT_FALSE(out[3]->created);
  EXPECT_EQ(out[3]->id, out[1]->id);
  EXPECT_FALSE(out[3]->duplicate_of.has_value());
  EXPECT_EQ(out[5]->id, before);
  EXPECT_EQ(out[5]->duplicate_of, std::optional<DocId>(before));

  for (size_t i : {0, 1, 6}) EXPECT_TRUE(HasAllPostings(*index, fps[i], out[i]->id)) << i;
  std::vector<PostingList> shared;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &shared));
  EXPECT_EQ(shared[0].doc_frequency, 3u);
  ASSERT_EQ(shared[0].postings.size(), 3u);
  EXPECT_EQ(shared[0].postings[0].doc_id, out[0]->id);
  EXPECT_EQ(shared[0].postings[2].doc_id, out[6]->id);
  EXPECT_TRUE(PostingsOf(*index, HashOf(53, 0), out[1]->id).empty());
  const IndexStats stats = index->Stats();
  EXPECT_EQ(stats.documents, 4u);
  EXPECT_EQ(stats.postings, 10u + 21 + 21 + 31);
  EXPECT_EQ(index->GetText(out[1]->id).value(), "tb");
  EXPECT_EQ(index->GetDocument(out[6]->id)->stored_chunks, 31u);

  // Batch-registered documents persist and unregister like any other.
  index.reset();
  index = OpenOrDie(Options(path));
  EXPECT_EQ(index->Stats().documents, 4u);
  ASSERT_OK(index->Unregister(out[0]->id));
  EXPECT_FALSE(HasAllPostings(*index, fps[0], out[0]->id));
  EXPECT_TRUE(HasAllPostings(*index, fps[1], out[1]->id));
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &shared));
  EXPECT_EQ(shared[0].doc_frequency, 2u);
  EXPECT_EQ(index->NextDocId(), out[6]->id + 1);
}

// A window's postings are ordered by (hash, document) before they reach the batch; past
// 4,096 operands by a radix pass on the hashes' top bits, then per bucket. Documents whose
// hashes crowd into one bucket, a hash every document shares and a hash repeated within a
// document all come back whole from the per-hash layout copsd uses.
TEST(IndexTest, ALargeBatchWritesEveryPostingOfEveryDocument) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.bucketed_postings = false;
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  std::vector<DocumentFingerprint> fps;
  for (uint64_t seed = 1; seed <= 36; ++seed) {
    fps.push_back(MakeFingerprint(seed, 150, /*shared=*/true));
  }
  for (uint64_t seed = 0; seed < 4; ++seed) {
    DocumentFingerprint fp = MakeFingerprint(100 + seed, 150);
    // Hashes differing in their low bits only: one radix bucket for all four documents.
    for (uint32_t j = 0; j < fp.chunks.size(); ++j) {
      fp.chunks[j].hash = 0x123456789a000000ull + (j * 7919 + seed * 13) % 4096;
    }
    fp.chunks[5].hash = fp.chunks[4].hash;  // a hash twice in one document
    fps.push_back(std::move(fp));
  }
  std::vector<DocumentRecord> records;
  for (size_t i = 0; i < fps.size(); ++i) records.push_back(MakeRecord("w" + std::to_string(i)));
  std::vector<RegisterItem> items;
  for (size_t i = 0; i < fps.size(); ++i) items.push_back(RegisterItem{&records[i], &fps[i], ""});
  std::vector<absl::StatusOr<RegisterOutcome>> outcomes;
  ASSERT_OK(index->RegisterBatch(items, &outcomes));
  ASSERT_EQ(outcomes.size(), fps.size());
  for (size_t i = 0; i < fps.size(); ++i) {
    ASSERT_OK(outcomes[i]);
    EXPECT_TRUE(HasAllPostings(*index, fps[i], outcomes[i]->id)) << i;
  }
  const ChunkHash twice = fps.back().chunks[4].hash;
  EXPECT_EQ(PostingsOf(*index, twice, outcomes.back()->id).size(), 2u);
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 36u);
  ASSERT_EQ(out[0].postings.size(), 36u);
  for (size_t i = 0; i < 36; ++i) EXPECT_EQ(out[0].postings[i].doc_id, outcomes[i]->id) << i;
}

// A registration's write batch and the postings' sort buffers are kept from one write to
// the next (and freed by ReleaseWriteBuffers): a small write after a large one, and a large
// one after a release, store exactly their own documents' postings, each hash listing its
// one document once.
TEST(IndexTest, WritesThatReuseTheWriteBuffersStoreExactlyTheirOwnPostings) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  std::deque<DocumentFingerprint> fps;
  std::deque<DocumentRecord> records;
  std::vector<DocId> ids;
  uint64_t seed = 1;
  auto write = [&](int documents) {
    std::vector<RegisterItem> items;
    for (int i = 0; i < documents; ++i, ++seed) {
      fps.push_back(MakeFingerprint(seed, 150));  // 40 of them: past ScatterSort's 4,096
      records.push_back(MakeRecord("r" + std::to_string(seed)));
      items.push_back(RegisterItem{&records.back(), &fps.back(), ""});
    }
    std::vector<absl::StatusOr<RegisterOutcome>> outcomes;
    ASSERT_OK(index->RegisterBatch(items, &outcomes));
    for (const absl::StatusOr<RegisterOutcome>& o : outcomes) {
      ASSERT_OK(o);
      ASSERT_TRUE(o->created);
      ids.push_back(o->id);
    }
  };
  ASSERT_NO_FATAL_FAILURE(write(40));
  ASSERT_NO_FATAL_FAILURE(write(3));
  index->ReleaseWriteBuffers();
  ASSERT_NO_FATAL_FAILURE(write(40));
  ASSERT_NO_FATAL_FAILURE(write(1));
  ASSERT_EQ(ids.size(), 84u);
  EXPECT_EQ(index->Stats().documents, 84u);
  for (size_t d = 0; d < ids.size(); ++d) {
    std::vector<ChunkHash> hashes;
    for (const Chunk& c : fps[d].chunks) hashes.push_back(c.hash);
    std::vector<PostingList> out;
    ASSERT_OK(index->Lookup(hashes, &out));
    for (size_t i = 0; i < hashes.size(); ++i) {
      ASSERT_EQ(out[i].postings.size(), 1u) << "document " << d << ", chunk " << i;
      EXPECT_EQ(out[i].postings[0].doc_id, ids[d]);
      EXPECT_EQ(out[i].postings[0].ordinal, fps[d].chunks[i].ordinal);
    }
  }
}

TEST(IndexTest, RegisterBatchOnAReadOnlyIndexFailsWholly) {
  TempDir dir;
  const std::string path = dir.Join("db");
  { OpenOrDie(Options(path)); }
  IndexOptions ro = Options(path);
  ro.read_only = true;
  auto index = OpenOrDie(ro);
  const DocumentFingerprint fp = MakeFingerprint(60, 5);
  const DocumentRecord record = MakeRecord("x");
  std::vector<RegisterItem> items = {{&record, &fp, "x"}};
  std::vector<absl::StatusOr<RegisterOutcome>> out;
  EXPECT_EQ(index->RegisterBatch(items, &out).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(index->Stats().documents, 0u);
}

TEST(IndexTest, TunablesAreCheckedAtOpenAndOtherCompressionsRoundTrip) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.bloom_bits_per_key = 31;
  EXPECT_EQ(Index::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options(dir.Join("db"));
  o.background_jobs = 0;
  EXPECT_EQ(Index::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options(dir.Join("db"));
  o.lookup_threads = 0;
  EXPECT_EQ(Index::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options(dir.Join("db"));
  o.block_cache_bytes = 1000;
  EXPECT_EQ(Index::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options(dir.Join("db"));
  o.postings_compression = "brotli";
  absl::Status bad = Index::Open(o).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("brotli"), std::string::npos) << bad;
  EXPECT_FALSE(fs::exists(dir.Join("db")));  // nothing created by a refused open

  // Each compression writes and reads back through SST files; an index written under one
  // opens under another (the compression is per file).
  for (const char* compression : {"zstd", "none", "lz4"}) {
    o = Options(dir.Join("db"));
    o.postings_compression = compression;
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr) << compression;
    const uint64_t seed = 80 + std::string(compression).size();
    const DocumentFingerprint fp = MakeFingerprint(seed, 50);
    auto out = index->Register(MakeRecord(compression), fp, "t");
    ASSERT_OK(out);
    ASSERT_OK(index->Flush());
    index.reset();
    index = OpenOrDie(o);
    EXPECT_TRUE(HasAllPostings(*index, fp, out->id)) << compression;
    // The same files read through mmap: compressed blocks decompressed, plain ones in place.
    index.reset();
    o.mmap_reads = true;
    index = OpenOrDie(o);
    ASSERT_NE(index, nullptr) << compression;
    EXPECT_TRUE(HasAllPostings(*index, fp, out->id)) << compression << " through mmap";
  }
}

// Lookup reuses the caller's vector and its own buffers between calls: a smaller batch
// after a larger one must not keep earlier results.
TEST(IndexTest, LookupIntoAReusedVectorHoldsOnlyTheNewAnswers) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  const DocumentFingerprint fp = MakeFingerprint(300, 60);
  auto out = index->Register(MakeRecord("reuse"), fp, "t");
  ASSERT_OK(out);
  std::vector<ChunkHash> all;
  for (const Chunk& c : fp.chunks) all.push_back(c.hash);
  std::vector<PostingList> lists;
  ASSERT_OK(index->Lookup(all, &lists));
  ASSERT_EQ(lists.size(), all.size());
  for (const PostingList& l : lists) EXPECT_EQ(l.doc_frequency, 1u);
  const std::vector<ChunkHash> mixed = {0x1234567u, all[7], 0x7654321u};
  ASSERT_OK(index->Lookup(mixed, &lists));
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0].doc_frequency, 0u);
  EXPECT_TRUE(lists[0].postings.empty());
  ASSERT_EQ(lists[1].postings.size(), 1u);
  EXPECT_EQ(lists[1].postings[0].ordinal, fp.chunks[7].ordinal);
  EXPECT_TRUE(lists[2].postings.empty());
  ASSERT_OK(index->Lookup({}, &lists));
  EXPECT_TRUE(lists.empty());
}

TEST(IndexTest, PostingsInSeveralRunsAreCompactedOnceWritesAreIdle) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.idle_compaction_seconds = 1;
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  for (uint64_t seed = 500; seed < 502; ++seed) {  // two level-0 files a shard: below the
    docs.emplace_back(MakeFingerprint(seed, 80), 0);  // trigger of RocksDB's compaction
    auto out = index->Register(MakeRecord("idle" + std::to_string(seed)), docs.back().first, "t");
    ASSERT_OK(out);
    docs.back().second = out->id;
    ASSERT_OK(index->Flush());
  }
  IndexStats s = index->Stats();
  ASSERT_EQ(s.postings_files_per_level[0], 2u * s.postings_shards);
  EXPECT_TRUE(s.idle_compaction_due);
  // A second without writes, then the compaction: waited for up to a minute.
  for (int i = 0; i < 600 && index->Stats().idle_compaction_due; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  s = index->Stats();
  EXPECT_FALSE(s.idle_compaction_due);
  EXPECT_EQ(s.postings_files_per_level[0], 0u);
  int levels = 0;
  for (uint32_t files : s.postings_files_per_level) levels += files > 0 ? 1 : 0;
  EXPECT_EQ(levels, 1) << "one sorted run";
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
  // A read-only open never compacts, and says nothing is due.
  index.reset();
  o.read_only = true;
  auto reader = OpenOrDie(o);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->Stats().idle_compaction_due);
}

TEST(IndexTest, StatsShowTheTreeShapeAndWaitForCompactionsSettlesIt) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  for (uint64_t seed = 400; seed < 406; ++seed) {  // one level-0 file per flush
    docs.emplace_back(MakeFingerprint(seed, 80), 0);
    auto out = index->Register(MakeRecord("shape" + std::to_string(seed)), docs.back().first, "t");
    ASSERT_OK(out);
    docs.back().second = out->id;
    ASSERT_OK(index->Flush());
  }
  IndexStats s = index->Stats();
  ASSERT_EQ(s.postings_files_per_level.size(), 7u);
  uint32_t files = 0;
  for (uint32_t f : s.postings_files_per_level) files += f;
  EXPECT_GE(files, 1u);
  ASSERT_OK(index->WaitForCompactions(std::chrono::milliseconds(5)));
  s = index->Stats();
  EXPECT_EQ(s.pending_compaction_bytes, 0u);
  EXPECT_EQ(s.running_compactions, 0u);
  // Six flushes pass each shard's level-0 trigger (4): RocksDB compacted them into fewer
  // files per shard.
  ASSERT_EQ(s.postings_shards, IndexOptions{}.postings_shards);
  EXPECT_LT(s.postings_files_per_level[0], 4u * s.postings_shards);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));

  // Two more flushes stay in level 0 (a bulk load keeps automatic compaction off); a full
  // compaction (all column families side by side) leaves the postings in the last level
  // only, every document whole.
  ASSERT_OK(index->BeginBulkLoad());
  for (uint64_t seed = 406; seed < 408; ++seed) {
    docs.emplace_back(MakeFingerprint(seed, 80), 0);
    auto out = index->Register(MakeRecord("shape" + std::to_string(seed)), docs.back().first, "t");
    ASSERT_OK(out);
    docs.back().second = out->id;
    ASSERT_OK(index->Flush());
  }
  ASSERT_GE(index->Stats().postings_files_per_level[0], 1u);
  ASSERT_OK(index->Compact());
  s = index->Stats();
  for (size_t level = 0; level + 1 < s.postings_files_per_level.size(); ++level) {
    EXPECT_EQ(s.postings_files_per_level[level], 0u) << level;
  }
  EXPECT_GE(s.postings_files_per_level.back(), 1u);
  for (const auto& [fp, id] : docs) {
    EXPECT_TRUE(HasAllPostings(*index, fp, id));
    EXPECT_OK(index->GetDocument(id));
  }
  EXPECT_OK(index->EndBulkLoad());
}

// The postings are split over 1, 2 or 4 column families by the top bits of the hash; the
// count is fixed when the index is created. Everything (lookups across shards, unregister,
// the common-chunk counts, reopen) behaves the same under each count.
TEST(IndexTest, PostingsShardsAreFixedAtCreationAndBehaveAlike) {
  TempDir dir;
  IndexOptions bad = Options(dir.Join("bad"));
  bad.postings_shards = 3;
  EXPECT_EQ(Index::Open(bad).status().code(), absl::StatusCode::kInvalidArgument);
  for (uint32_t shards : {1u, 2u, 4u}) {
    SCOPED_TRACE(shards);
    IndexOptions o = Options(dir.Join("db" + std::to_string(shards)));
    o.postings_shards = shards;
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    // 200 hashes per document: every shard gets some (the top two bits vary).
    std::vector<std::pair<DocumentFingerprint, DocId>> docs;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      docs.emplace_back(MakeFingerprint(seed, 200, /*shared=*/true), 0);
      auto out = index->Register(MakeRecord("s" + std::to_string(seed)), docs.back().first, "");
      ASSERT_OK(out);
      docs.back().second = out->id;
      if (seed == 2) {
        ASSERT_OK(index->Flush());  // some postings in SST files
      }
    }
    ASSERT_OK(index->Unregister(docs[1].second));
    // Reopened with the default count, the index keeps the one it was created with.
    index.reset();
    index = OpenOrDie(Options(o.path));
    ASSERT_NE(index, nullptr);
    EXPECT_EQ(index->Stats().postings_shards, shards);
    for (size_t i = 0; i < docs.size(); ++i) {
      EXPECT_EQ(HasAllPostings(*index, docs[i].first, docs[i].second), i != 1) << i;
    }
    std::vector<PostingList> out;
    ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
    EXPECT_EQ(out[0].doc_frequency, 3u);
    // The removed document left nothing in any shard.
    std::vector<ChunkHash> removed;
    for (const Chunk& c : docs[1].first.chunks) removed.push_back(c.hash);
    ASSERT_OK(index->Lookup(removed, &out));
    for (size_t i = 0; i < removed.size(); ++i) {
      for (const Posting& p : out[i].postings) EXPECT_NE(p.doc_id, docs[1].second) << i;
    }
  }
}

// A batch large enough to be cut into parts, looked up on several threads, answers exactly
// as the caller alone does, whatever the shard count.
TEST(IndexTest, ParallelLookupAnswersExactlyAsASerialOne) {
  TempDir dir;
  for (uint32_t shards : {1u, 2u, 4u}) {
    SCOPED_TRACE(shards);
    IndexOptions o = Options(dir.Join("db" + std::to_string(shards)));
    o.postings_shards = shards;
    std::vector<std::pair<DocumentFingerprint, DocId>> docs;
    {
      auto index = OpenOrDie(o);
      ASSERT_NE(index, nullptr);
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        docs.emplace_back(MakeFingerprint(900 + seed, 300, /*shared=*/true), 0);
        auto out = index->Register(MakeRecord("p" + std::to_string(seed)), docs.back().first, "");
        ASSERT_OK(out);
        docs.back().second = out->id;
        if (seed == 3) {
          ASSERT_OK(index->Flush());  // half in SST files, half in memtables
        }
      }
    }
    // 2,400 hashes in no order: every registered chunk, as many never registered, and
    // repeats of the shared chunk.
    std::vector<ChunkHash> batch;
    for (const auto& [fp, id] : docs) {
      for (const Chunk& c : fp.chunks) batch.push_back(c.hash);
    }
    for (uint32_t j = 0; j < 594; ++j) batch.push_back(HashOf(5000, j));
    std::mt19937_64 rng(shards);
    std::shuffle(batch.begin(), batch.end(), rng);
    std::vector<PostingList> serial, parallel;
    {
      IndexOptions one = o;
      one.lookup_threads = 1;
      auto index = OpenOrDie(one);
      ASSERT_NE(index, nullptr);
      ASSERT_OK(index->Lookup(batch, &serial));
    }
    IndexOptions many = o;
    many.lookup_threads = 3;
    auto index = OpenOrDie(many);
    ASSERT_NE(index, nullptr);
    ASSERT_OK(index->Lookup(batch, &parallel));
    ASSERT_EQ(serial.size(), batch.size());
    ASSERT_EQ(parallel.size(), batch.size());
    size_t hits = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(parallel[i].doc_frequency, serial[i].doc_frequency) << i;
      EXPECT_EQ(parallel[i].postings, serial[i].postings) << i;
      hits += !parallel[i].postings.empty();
      if (batch[i] == kSharedHash) {
        EXPECT_EQ(parallel[i].doc_frequency, docs.size());
      }
    }
    EXPECT_EQ(hits, batch.size() - 594);
    for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
  }
}

// A bulk load keeps every level-0 file until EndBulkLoad compacts them all at once; the
// index answers correctly throughout, and automatic compaction is back afterwards.
TEST(IndexTest, BulkLoadDefersCompactionUntilItEndsAndLosesNothing) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  EXPECT_FALSE(index->bulk_loading());
  EXPECT_OK(index->EndBulkLoad());  // not loading: nothing to end
  ASSERT_OK(index->BeginBulkLoad());
  ASSERT_OK(index->BeginBulkLoad());  // twice is once
  EXPECT_TRUE(index->bulk_loading());
  const uint32_t shards = index->Stats().postings_shards;
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  auto register_and_flush = [&](uint64_t first, uint64_t last) {
    for (uint64_t seed = first; seed < last; ++seed) {
      docs.emplace_back(MakeFingerprint(500 + seed, 120), 0);
      auto out = index->Register(MakeRecord("bulk" + std::to_string(seed)), docs.back().first, "");
      ASSERT_OK(out);
      docs.back().second = out->id;
      ASSERT_OK(index->Flush());  // one level-0 file per shard
    }
  };
  register_and_flush(0, 8);
  // Eight flushes, twice the level-0 trigger, and none was compacted.
  EXPECT_EQ(index->Stats().postings_files_per_level[0], 8u * shards);
  EXPECT_OK(index->WaitForCompactions(std::chrono::milliseconds(5)));  // returns
  EXPECT_EQ(index->Stats().postings_files_per_level[0], 8u * shards);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
  ASSERT_OK(index->Unregister(docs[3].second));

  ASSERT_OK(index->EndBulkLoad());
  EXPECT_FALSE(index->bulk_loading());
  IndexStats s = index->Stats();
  EXPECT_EQ(s.postings_files_per_level[0], 0u);
  uint32_t lower = 0;
  for (size_t l = 1; l < s.postings_files_per_level.size(); ++l) lower += s.postings_files_per_level[l];
  EXPECT_GE(lower, shards);
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(HasAllPostings(*index, docs[i].first, docs[i].second), i != 3) << i;
  }
  // Automatic compaction is on again: six more flushes get compacted on their own (polled
  // with a bound, so a regression fails instead of waiting forever).
  register_and_flush(8, 14);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (index->Stats().postings_files_per_level[0] >= 4u * shards &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(index->Stats().postings_files_per_level[0], 4u * shards);
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(HasAllPostings(*index, docs[i].first, docs[i].second), i != 3) << i;
  }

  // A read-only index cannot bulk-load.
  index.reset();
  IndexOptions ro = Options(dir.Join("db"));
  ro.read_only = true;
  index = OpenOrDie(ro);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->BeginBulkLoad().code(), absl::StatusCode::kFailedPrecondition);
}

// Each shard's write buffer is cut into postings_memtables memtables that are flushed
// together into one level-0 file. Lookups see the postings of every memtable, flushed or
// not, including memtables overfilled by a large batch (a batch lands whole in one), and
// after a reopen replays them from the WAL.
TEST(IndexTest, SmallMemtablesAreFlushedTogetherAndLookupsSeeThemAll) {
  TempDir dir;
  IndexOptions bad = Options(dir.Join("bad"));
  bad.postings_memtables = 0;
  EXPECT_EQ(Index::Open(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.postings_memtables = 65;
  EXPECT_EQ(Index::Open(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.postings_memtables = 32;  // 4 MiB / 32 = 128 KiB memtables: too small
  EXPECT_EQ(Index::Open(bad).status().code(), absl::StatusCode::kInvalidArgument);

  IndexOptions o = Options(dir.Join("db"));
  o.postings_memtables = 4;  // 1 MiB memtables
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  const uint32_t shards = index->Stats().postings_shards;
  // Automatic compaction off: the level-0 files made by the flushes stay countable.
  ASSERT_OK(index->BeginBulkLoad());
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  for (uint64_t batch = 0; batch < 8; ++batch) {
    // 3 x 12,000 postings: over a megabyte per shard, more than one memtable holds.
    std::vector<DocumentFingerprint> fps;
    std::vector<DocumentRecord> records;
    for (uint64_t i = 0; i < 3; ++i) {
      fps.push_back(MakeFingerprint(9000 + batch * 3 + i, 12000));
      records.push_back(MakeRecord("m" + std::to_string(batch * 3 + i)));
    }
    std::vector<RegisterItem> items;
    for (size_t i = 0; i < fps.size(); ++i) items.push_back(RegisterItem{&records[i], &fps[i], ""});
    std::vector<absl::StatusOr<RegisterOutcome>> outcomes;
    ASSERT_OK(index->RegisterBatch(items, &outcomes));
    for (size_t i = 0; i < fps.size(); ++i) {
      ASSERT_OK(outcomes[i]);
      docs.emplace_back(fps[i], outcomes[i]->id);
    }
  }
  // Unflushed memtables and flushed files alike.
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id)) << id;
  ASSERT_OK(index->Flush());
  // Eight batches filled at least eight memtables per shard; flushed four at a time (and the
  // rest by Flush), they made at most three files per shard, not eight.
  const uint32_t level0 = index->Stats().postings_files_per_level[0];
  EXPECT_GE(level0, shards);
  EXPECT_LE(level0, 3u * shards);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id)) << id;
  ASSERT_OK(index->EndBulkLoad());

  // Unflushed batches come back from the WAL after a reopen.
  for (uint64_t seed = 0; seed < 3; ++seed) {
    docs.emplace_back(MakeFingerprint(9500 + seed, 12000), 0);
    auto out = index->Register(MakeRecord("late" + std::to_string(seed)), docs.back().first, "");
    ASSERT_OK(out);
    docs.back().second = out->id;
  }
  index.reset();
  index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id)) << id;
}

// What copsd does on SIGTERM during a bulk load: the final compaction is abandoned
// (ABORTED), nothing is lost, and the reopened index compacts the pile on its own.
TEST(IndexTest, AbortedBulkLoadEndLosesNothingAndCompactsAfterReopen) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  ASSERT_OK(index->BeginBulkLoad());
  const uint32_t shards = index->Stats().postings_shards;
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    docs.emplace_back(MakeFingerprint(700 + seed, 120), 0);
    auto out = index->Register(MakeRecord("abort" + std::to_string(seed)), docs.back().first, "");
    ASSERT_OK(out);
    docs.back().second = out->id;
    ASSERT_OK(index->Flush());
  }
  index->AbortManualCompactions();
  EXPECT_EQ(index->EndBulkLoad().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(index->Stats().postings_files_per_level[0], 6u * shards);  // not compacted
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));

  index.reset();
  index = OpenOrDie(Options(dir.Join("db")));
  ASSERT_NE(index, nullptr);
  EXPECT_FALSE(index->bulk_loading());
  ASSERT_OK(index->WaitForCompactions(std::chrono::milliseconds(5)));
  EXPECT_LT(index->Stats().postings_files_per_level[0], 4u * shards);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
}

TEST(IndexTest, CommonChunkKeepsCountingBeyondThePostingsCap) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.max_postings_per_chunk = 3;
  auto index = OpenOrDie(o);
  std::vector<DocId> ids;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    ids.push_back(
        index->Register(MakeRecord(std::to_string(seed)), MakeFingerprint(seed, 4, true), "")->id);
  }
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 5u);
  ASSERT_EQ(out[0].postings.size(), 3u);
  EXPECT_EQ(out[0].postings[2].doc_id, ids[2]);
  // Unregistering a counted but unlisted document lowers the count only.
  ASSERT_OK(index->Unregister(ids[4]));
  ASSERT_OK(index->Unregister(ids[0]));
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 3u);
  ASSERT_EQ(out[0].postings.size(), 2u);
  EXPECT_EQ(out[0].postings[0].doc_id, ids[1]);
}

TEST(IndexTest, OpeningWithOtherParametersFailsNamingTheDifference) {
  TempDir dir;
  { ASSERT_NE(OpenOrDie(Options(dir.Join("db"))), nullptr); }
  IndexOptions other_k = Options(dir.Join("db"));
  other_k.params.k = 3;
  EXPECT_TRUE(RefusedNaming(other_k, "k: 5 vs 3"));

  IndexOptions other_key = Options(dir.Join("db"));
  other_key.params.key_id = "fedcba9876543210";
  EXPECT_TRUE(RefusedNaming(other_key, "key_id"));
  // The original parameters still open it.
  EXPECT_NE(OpenOrDie(Options(dir.Join("db"))), nullptr);
}

// Opens a closed index with plain RocksDB (every column family, default options) and runs
// `edit` on it, the way another build of COPS would have written it. Without the postings'
// merge operator: an index whose postings are read afterwards must have been flushed.
void EditClosedIndex(
    const std::string& path,
    const std::function<void(rocksdb::DB&, const std::vector<rocksdb::ColumnFamilyHandle*>&)>&
        edit) {
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw);
  ASSERT_TRUE(s.ok()) << s.ToString();
  edit(*raw, handles);
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

// Writes `key` = `value` into the meta entries of a closed index.
void OverwriteMeta(const std::string& path, const std::string& key, const std::string& value) {
  EditClosedIndex(path, [&](rocksdb::DB& raw, const auto&) {
    EXPECT_TRUE(raw.Put(rocksdb::WriteOptions(), key, value).ok());
  });
}

// Text `seed`: ~3 KB of words drawn from a 2,000-word vocabulary of made-up words of 4-11
// letters (skewed towards the first words, as prose is), with some non-ASCII letters, a NUL
// byte and a raw byte at the end.
std::string MakeText(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string text;
  while (text.size() < 3000) {
    const uint64_t r = rng() % 2000;
    const uint64_t word = r * r / 2000;  // rank-skewed
    uint64_t letters = Mix(word);
    for (uint64_t n = 4 + word % 8; n > 0; --n, letters /= 26) text.push_back('a' + letters % 26);
    if (word % 7 == 0) text += "\xc3\xa9";
    text += rng() % 12 == 0 ? ".\n" : " ";
  }
  text.push_back('\0');
  text.push_back(static_cast<char>(0xff & rng()));
  return text;
}

// Opens the index at `path` read-only with RocksDB alone (beside an open Index too: a
// read-only open takes no lock) and calls visit(db, family) for each column family.
void VisitFamilies(const std::string& path,
                   const std::function<void(rocksdb::DB&, rocksdb::ColumnFamilyHandle*)>& visit) {
  std::vector<std::string> names;
  EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  EXPECT_TRUE(
      rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path, cfs, &handles, &raw).ok());
  if (raw == nullptr) return;
  for (auto* h : handles) {
    visit(*raw, h);
    raw->DestroyColumnFamilyHandle(h);
  }
  delete raw;
}

// The SST bytes of the texts column family of a closed index.
uint64_t TextsFileBytes(const std::string& path) {
  uint64_t bytes = 0;
  VisitFamilies(path, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* h) {
    rocksdb::ColumnFamilyMetaData meta;
    db.GetColumnFamilyMetaData(h, &meta);
    if (h->GetName() == "texts") bytes = meta.size;
  });
  return bytes;
}

TEST(IndexTest, StoredTextsReadBackByteIdenticalAfterCompactionAndSharedCompression) {
  // The texts' tables hold several documents per block with a dictionary per file
  // (index_db.cc): every text must come back byte for byte, from the memtable, after the
  // flush, after a full compaction and after a reopen, and the family takes far less room
  // than one document per 4 KB block did (0.32 of the texts' bytes here, against 0.55).
  TempDir dir;
  const std::string path = dir.Join("db");
  constexpr uint64_t kDocs = 600;
  std::vector<DocId> ids;
  uint64_t raw_bytes = 0;
  auto read_all = [&](const Index& index, const char* when) {
    for (uint64_t d = 0; d < kDocs; ++d) {
      auto text = index.GetText(ids[d]);
      ASSERT_OK(text) << when;
      ASSERT_EQ(*text, MakeText(d)) << when << ": document " << d;
    }
  };
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_NE(index, nullptr);
    for (uint64_t d = 0; d < kDocs; ++d) {
      const std::string text = MakeText(d);
      raw_bytes += text.size();
      auto outcome = index->Register(MakeRecord("t" + std::to_string(d)),
                                     MakeFingerprint(7000 + d, 20), text);
      ASSERT_OK(outcome);
      ids.push_back(outcome->id);
    }
    read_all(*index, "in the memtable");
    ASSERT_OK(index->Flush());
    read_all(*index, "flushed");
    ASSERT_OK(index->Compact());
    read_all(*index, "compacted");
  }
  auto index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
  read_all(*index, "reopened");
  index.reset();
  const uint64_t texts = TextsFileBytes(path);
  EXPECT_GT(texts, 0u);
  EXPECT_LT(static_cast<double>(texts), 0.43 * static_cast<double>(raw_bytes))
      << texts << " bytes of files for " << raw_bytes << " bytes of texts";
}

TEST(IndexTest, TextsWrittenByAnEarlierBuildStayReadableBesideNewOnes) {
  // Before the texts had 32 KB blocks and a dictionary, their files were zstd in 4 KB
  // blocks. Such files (rewritten here by plain RocksDB with those options) open and read
  // back, beside files written now, and a compaction that merges both loses nothing.
  TempDir dir;
  const std::string path = dir.Join("db");
  constexpr uint64_t kDocs = 200;
  std::vector<DocId> ids;
  auto register_range = [&](Index& index, uint64_t from, uint64_t to) {
    for (uint64_t d = from; d < to; ++d) {
      auto outcome = index.Register(MakeRecord("t" + std::to_string(d)),
                                    MakeFingerprint(9000 + d, 20), MakeText(d));
      ASSERT_OK(outcome);
      ids.push_back(outcome->id);
    }
  };
  auto read_all = [&](const Index& index, const char* when) {
    for (uint64_t d = 0; d < ids.size(); ++d) {
      auto text = index.GetText(ids[d]);
      ASSERT_OK(text) << when;
      ASSERT_EQ(*text, MakeText(d)) << when << ": document " << d;
    }
  };
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_NE(index, nullptr);
    register_range(*index, 0, kDocs);
    ASSERT_OK(index->Flush());
  }
  {
    // The earlier build's texts options: zstd, 4 KB blocks, no dictionary.
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    for (const auto& n : names) {
      rocksdb::ColumnFamilyOptions cf;
      if (n == "texts") cf.compression = rocksdb::kZSTD;
      cfs.emplace_back(n, cf);
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw).ok());
    for (auto* h : handles) {
      if (h->GetName() != "texts") continue;
      rocksdb::CompactRangeOptions force;
      force.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
      EXPECT_TRUE(raw->CompactRange(force, h, nullptr, nullptr).ok());
    }
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  auto index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
  read_all(*index, "old files");
  register_range(*index, kDocs, 2 * kDocs);
  ASSERT_OK(index->Flush());
  read_all(*index, "old and new files");
  ASSERT_OK(index->Compact());
  read_all(*index, "compacted together");
}

TEST(IndexTest, IndexOfAnOlderNormalizationVersionIsRefusedUnderTheNewOne) {
  // Version 3 changed the canonical text of words with non-ASCII capitals: an index built
  // under version 2 must not open as version 3, or those words would silently never match.
  TempDir dir;
  const std::string path = dir.Join("db");
  { ASSERT_NE(OpenOrDie(Options(path)), nullptr); }
  ChunkingParams v2 = Options(path).params;
  v2.normalization_version = 2;
  OverwriteMeta(path, "chunking_params", v2.Encode());
  ASSERT_EQ(kNormalizationVersion, 3u);
  EXPECT_TRUE(RefusedNaming(Options(path), "normalization_version: 2 vs 3"));
  // Opened under the version it records, it keeps working.
  IndexOptions as_recorded = Options(path);
  as_recorded.params = v2;
  EXPECT_NE(OpenOrDie(as_recorded), nullptr);
}

uint64_t RecordedSchema(const std::string& path);  // below
DocumentRecord ExpiringRecord(const std::string& external_id, int64_t expires,
                              int64_t not_before);

TEST(IndexTest, NewIndexHasBucketedPostingsWhoseLayoutIsRecordedAndChecked) {
  TempDir dir;
  const std::string path = dir.Join("db");
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_OK(index->Register(MakeRecord("a"), MakeFingerprint(1, 10), ""));
    EXPECT_EQ(index->Stats().bucket_bits, 22u);  // expected_documents 10^6
    EXPECT_EQ(index->Stats().hash_bits, 64u);
  }
  EXPECT_EQ(RecordedSchema(path), 4u);
  IndexOptions other = Options(path);
  other.postings_bucket_bits = 16;
  EXPECT_TRUE(RefusedNaming(other, "bucket bits 22 vs 16"));
  // expected_documents only sizes a new index.
  IndexOptions bigger = Options(path);
  bigger.expected_documents = 10'000'000;
  auto index = OpenOrDie(bigger);
  EXPECT_EQ(index->Stats().bucket_bits, 22u);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(1, 10), 1));
}

// copsd --postings-hash-bits: a bucketed index that keeps the top 40 bits of each hash finds
// every posting, answers a hash by its top 40 bits (a chance match of the dropped bits is
// verified away by the check), removes a document whole, and records its bits: reopened
// with 0 it keeps them, with others it is refused.
TEST(IndexTest, AnIndexKeepingFortyHashBitsFindsItsPostingsByTheirTopBits) {
  TempDir dir;
  const std::string path = dir.Join("db");
  IndexOptions forty = Options(path);
  forty.postings_hash_bits = 40;
  const DocumentFingerprint fa = MakeFingerprint(1, 50);
  const DocumentFingerprint fb = MakeFingerprint(2, 50);
  DocId a = 0, b = 0;
  {
    auto index = OpenOrDie(forty);
    a = index->Register(MakeRecord("a"), fa, "")->id;
    b = index->Register(MakeRecord("b"), fb, "")->id;
    EXPECT_EQ(index->Stats().hash_bits, 40u);
    EXPECT_TRUE(HasAllPostings(*index, fa, a));
    const ChunkHash same_top = fa.chunks[0].hash ^ 0xFFFFFF;  // the low 24 bits differ
    const ChunkHash other_top = fa.chunks[0].hash ^ (uint64_t{1} << 63);
    std::vector<PostingList> out;
    ASSERT_OK(index->Lookup(std::vector<ChunkHash>{same_top, other_top}, &out));
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].postings.size(), 1u);
    EXPECT_EQ(out[0].postings[0].doc_id, a);
    EXPECT_EQ(out[1].doc_frequency, 0u);
    ASSERT_OK(index->Unregister(a));
    std::vector<ChunkHash> hashes;
    for (const Chunk& c : fa.chunks) hashes.push_back(c.hash);
    ASSERT_OK(index->Lookup(hashes, &out));
    for (const PostingList& list : out) EXPECT_EQ(list.doc_frequency, 0u);
  }
  IndexOptions unset = Options(path);
  auto index = OpenOrDie(unset);
  EXPECT_EQ(index->Stats().hash_bits, 40u);
  EXPECT_TRUE(HasAllPostings(*index, fb, b));
  index.reset();
  IndexOptions other = Options(path);
  other.postings_hash_bits = 48;
  EXPECT_TRUE(RefusedNaming(other, "hash bits 40 vs 48"));
}

// copsd's default (new_index_hash_bits 40) applies to a new index only: an index built with
// all 64 bits opens under it unchanged, and one built with 40 opens under the library's 64.
TEST(IndexTest, TheHashBitsOfANewIndexNeverChangeAnExistingOne) {
  TempDir dir;
  IndexOptions copsd = Options(dir.Join("new"));
  copsd.new_index_hash_bits = 40;
  IndexOptions library = Options(dir.Join("old"));
  const DocumentFingerprint fp = MakeFingerprint(3, 20);
  DocId in_new = 0, in_old = 0;
  {
    auto created = OpenOrDie(copsd);
    EXPECT_EQ(created->Stats().hash_bits, 40u);
    in_new = created->Register(MakeRecord("n"), fp, "")->id;
    auto old = OpenOrDie(library);
    EXPECT_EQ(old->Stats().hash_bits, 64u);
    in_old = old->Register(MakeRecord("o"), fp, "")->id;
  }
  IndexOptions old_under_copsd = copsd;
  old_under_copsd.path = library.path;
  IndexOptions new_under_library = library;
  new_under_library.path = copsd.path;
  auto old = OpenOrDie(old_under_copsd);
  auto created = OpenOrDie(new_under_library);
  EXPECT_EQ(old->Stats().hash_bits, 64u);
  EXPECT_EQ(created->Stats().hash_bits, 40u);
  EXPECT_TRUE(HasAllPostings(*old, fp, in_old));
  EXPECT_TRUE(HasAllPostings(*created, fp, in_new));
}

// 16 buckets: every bucket holds postings of many documents and hashes.
TEST(IndexTest, SharedBucketsLookUpExactlyAndNeverMatchAnUnregisteredDocument) {
  TempDir dir;
  const std::string path = dir.Join("db");
  IndexOptions o = Options(path);
  o.postings_bucket_bits = 4;
  o.max_postings_per_chunk = 5;
  constexpr int kDocs = 20;
  std::vector<DocId> ids;
  auto check = [&](const Index& index, const char* when) {
    SCOPED_TRACE(when);
    for (int d = 0; d < kDocs; ++d) {
      const DocumentFingerprint fp = MakeFingerprint(d + 1, 30, /*shared=*/true);
      std::vector<ChunkHash> hashes;
      for (const Chunk& c : fp.chunks) hashes.push_back(c.hash);
      std::vector<PostingList> out;
      ASSERT_OK(index.Lookup(hashes, &out));
      const bool removed = d == 3 || d == 7;
      for (size_t i = 0; i + 1 < hashes.size(); ++i) {  // the document's own chunks
        if (removed) {
          EXPECT_TRUE(out[i].postings.empty()) << d;
          EXPECT_EQ(out[i].doc_frequency, 0u);
        } else {
          ASSERT_EQ(out[i].postings.size(), 1u) << d;
          EXPECT_EQ(out[i].postings[0], (Posting{ids[d], fp.chunks[i].ordinal,
                                                 fp.chunks[i].start, fp.chunks[i].end}));
          EXPECT_EQ(out[i].doc_frequency, 1u);
        }
      }
      // The shared chunk: counted in every live document, listed in at most 5.
      EXPECT_EQ(out.back().doc_frequency, kDocs - 2u);
      EXPECT_LE(out.back().postings.size(), 5u);
      for (const Posting& p : out.back().postings) {
        EXPECT_NE(p.doc_id, ids[3]);
        EXPECT_NE(p.doc_id, ids[7]);
      }
    }
  };
  {
    auto index = OpenOrDie(o);
    for (int d = 0; d < kDocs; ++d) {
      auto r = index->Register(MakeRecord("d" + std::to_string(d)),
                               MakeFingerprint(d + 1, 30, /*shared=*/true), "");
      ASSERT_OK(r);
      ids.push_back(r->id);
    }
    ASSERT_OK(index->Unregister(ids[3]));
    ASSERT_OK(index->Unregister(ids[7]));
    check(*index, "in the memtable");
    ASSERT_OK(index->Compact());
    check(*index, "compacted");
    EXPECT_LE(index->Stats().chunk_keys, 16u);
  }
  auto index = OpenOrDie(o);
  check(*index, "reopened");
}

// Every hash's postings and document frequency, for comparing an index before and after.
std::vector<PostingList> LookUpAll(const Index& index, const std::vector<ChunkHash>& hashes) {
  std::vector<PostingList> out;
  EXPECT_OK(index.Lookup(hashes, &out));
  return out;
}

// A lookup of a bucket whose postings are still merge operands (level-0 files and the
// memtable: adds and removes across flushes) merges only the hashes it asks for; it must
// answer exactly as the compacted index does, for any set of hashes asked together.
TEST(IndexTest, LookupsOverUncompactedOperandsAnswerAsTheCompactedIndex) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.postings_bucket_bits = 6;  // 64 buckets: each holds many hashes of many documents
  o.max_postings_per_chunk = 4;
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  ASSERT_OK(index->BeginBulkLoad());  // no compaction until the end
  std::vector<DocId> ids;
  std::vector<ChunkHash> hashes;
  for (int round = 0; round < 6; ++round) {
    for (int d = 0; d < 5; ++d) {
      const uint64_t seed = 100 + ids.size();
      const DocumentFingerprint fp = MakeFingerprint(seed, 25, /*shared=*/true);
      auto r = index->Register(MakeRecord("r" + std::to_string(seed)), fp, "");
      ASSERT_OK(r);
      ids.push_back(r->id);
      for (const Chunk& c : fp.chunks) hashes.push_back(c.hash);
    }
    // Removals of documents added in this round and in earlier rounds' files.
    ASSERT_OK(index->Unregister(ids[ids.size() - 2]));
    if (round >= 2) {
      ASSERT_OK(index->Unregister(ids[static_cast<size_t>(round) * 3 - 5]));
    }
    if (round < 5) {
      ASSERT_OK(index->Flush());  // the last round stays in the memtable
    }
  }
  ASSERT_GE(index->Stats().postings_files_per_level[0], 5u);
  for (uint32_t j = 0; j < 40; ++j) hashes.push_back(HashOf(9999, j));  // never registered
  std::mt19937_64 rng(36);
  std::shuffle(hashes.begin(), hashes.end(), rng);
  hashes.push_back(hashes[7]);  // asked twice

  // One batch of every hash, and each hash alone (a bucket asked for one rest).
  const std::vector<PostingList> together = LookUpAll(*index, hashes);
  std::vector<PostingList> alone;
  for (ChunkHash h : hashes) alone.push_back(LookUpAll(*index, {h}).at(0));
  ASSERT_OK(index->EndBulkLoad());
  ASSERT_EQ(index->Stats().postings_files_per_level[0], 0u);
  const std::vector<PostingList> compacted = LookUpAll(*index, hashes);
  ASSERT_EQ(compacted.size(), hashes.size());
  size_t listed = 0;
  for (size_t i = 0; i < hashes.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(together[i].postings, compacted[i].postings);
    EXPECT_EQ(together[i].doc_frequency, compacted[i].doc_frequency);
    EXPECT_EQ(alone[i].postings, compacted[i].postings);
    EXPECT_EQ(alone[i].doc_frequency, compacted[i].doc_frequency);
    listed += compacted[i].postings.size();
  }
  EXPECT_GT(listed, 500u);  // the documents still registered are found
  // The shared chunk: counted in every live document (30 registered, 10 removed), listed up
  // to the cap.
  const std::vector<PostingList> shared = LookUpAll(*index, {kSharedHash});
  EXPECT_EQ(shared[0].doc_frequency, 20u);
  EXPECT_EQ(shared[0].postings.size(), 4u);
}

TEST(IndexTest, UpgradePostingsRewritesASchema3IndexLosingNothing) {
  TempDir dir;
  const std::string path = dir.Join("db");
  IndexOptions old_build = Options(path);
  old_build.bucketed_postings = false;  // the per-hash writer, as builds before schema 4
  old_build.max_postings_per_chunk = 5;
  constexpr int kDocs = 24;
  std::vector<DocId> ids;
  std::vector<ChunkHash> hashes;
  std::vector<PostingList> before;
  {
    auto index = OpenOrDie(old_build);
    for (int d = 0; d < kDocs; ++d) {
      // One with a lifetime (schema 3).
      DocumentRecord r = d == 0 ? ExpiringRecord("d0", 0, 1000) : MakeRecord("d" + std::to_string(d));
      auto reg = index->Register(r, MakeFingerprint(d + 1, 40, /*shared=*/true), "");
      ASSERT_OK(reg);
      ids.push_back(reg->id);
      for (const Chunk& c : MakeFingerprint(d + 1, 40, true).chunks) hashes.push_back(c.hash);
      if (d == kDocs / 2) {
        ASSERT_OK(index->Flush());
      }
    }
    ASSERT_OK(index->Unregister(ids[2]));
    before = LookUpAll(*index, hashes);
    // Two level-0 files of unmerged operands; flushed, so that the raw edit below (which
    // has no merge operator) need not replay them from the log.
    ASSERT_OK(index->Flush());
  }
  EXPECT_EQ(RecordedSchema(path), 3u);
  // A run cut short before its switch left a bucket family behind: the index still opens as
  // schema 3, and the upgrade starts over.
  EditClosedIndex(path, [](rocksdb::DB& raw, const auto&) {
    rocksdb::ColumnFamilyHandle* h = nullptr;
    ASSERT_TRUE(raw.CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "buckets", &h).ok());
    EXPECT_TRUE(raw.Put(rocksdb::WriteOptions(), h, "junk", "\x07").ok());
    raw.DestroyColumnFamilyHandle(h);
  });
  {
    old_build.bucketed_postings = true;  // the default of this build: no effect on an old index
    auto index = OpenOrDie(old_build);
    EXPECT_EQ(index->Stats().bucket_bits, 0u);
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(2, 40), ids[1]));
  }
  IndexOptions upgrade = old_build;
  upgrade.postings_bucket_bits = 8;  // ~4 hashes per bucket here
  auto upgraded = Index::UpgradePostings(upgrade);
  ASSERT_OK(upgraded);
  EXPECT_EQ(*upgraded, static_cast<uint64_t>(kDocs) * 40 + 1);  // every distinct hash
  EXPECT_EQ(RecordedSchema(path), 4u);
  // Again: nothing left to do.
  ASSERT_OK(Index::UpgradePostings(upgrade));
  auto index = OpenOrDie(old_build);
  EXPECT_EQ(index->Stats().bucket_bits, 8u);
  const std::vector<PostingList> after = LookUpAll(*index, hashes);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].doc_frequency, before[i].doc_frequency) << i;
    EXPECT_EQ(after[i].postings, before[i].postings) << i;
  }
  for (int d = 0; d < kDocs; ++d) {
    EXPECT_EQ(HasAllPostings(*index, MakeFingerprint(d + 1, 40), ids[d]), d != 2) << d;
  }
  EXPECT_EQ(index->GetDocument(ids[0])->not_before_unix_micros, 1000);
  // It goes on as a bucketed index: registrations and removals.
  ASSERT_OK(index->Unregister(ids[5]));
  auto more = index->Register(MakeRecord("new"), MakeFingerprint(99, 40), "");
  ASSERT_OK(more);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(99, 40), more->id));
  EXPECT_FALSE(HasAllPostings(*index, MakeFingerprint(6, 40), ids[5]));
  EXPECT_TRUE(PostingsOf(*index, HashOf(6, 0), ids[5]).empty());
}

// Bytes of bucket values a lookup of `hashes` reads (RocksDB's per-thread count; the lookup
// runs on this thread with lookup_threads 1).
uint64_t BucketBytesRead(const Index& index, const std::vector<ChunkHash>& hashes) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  std::vector<PostingList> out;
  EXPECT_OK(index.Lookup(hashes, &out));
  const uint64_t bytes = rocksdb::get_perf_context()->multiget_read_bytes;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  for (const PostingList& list : out) EXPECT_EQ(list.doc_frequency, 0u);
  return bytes;
}

// Bucketed postings ask an in-memory filter of the stored hashes before they read a bucket
// (IndexOptions::hash_filter_bits), filled from the buckets after an open and by every
// registration: every stored hash is still found, under 64 and under 40 hash bits, and a
// lookup of hashes stored nowhere reads few buckets, where without the filter it reads every
// bucket they fall in (256 buckets here, all holding postings).
TEST(IndexTest, TheHashFilterSkipsBucketsOfHashesStoredNowhereAndNeverAStoredOne) {
  for (const uint32_t hash_bits : {64u, 40u}) {
    SCOPED_TRACE(hash_bits);
    TempDir dir;
    IndexOptions o = Options(dir.Join("db"));
    o.postings_bucket_bits = 8;
    o.postings_hash_bits = hash_bits;
    o.lookup_threads = 1;
    std::vector<std::pair<DocId, DocumentFingerprint>> docs;
    auto add = [&](Index& index, int from, int to) {
      for (int d = from; d < to; ++d) {
        const DocumentFingerprint fp = MakeFingerprint(d + 1, 50);
        auto r = index.Register(MakeRecord("d" + std::to_string(d)), fp, "");
        ASSERT_OK(r);
        docs.emplace_back(r->id, fp);
      }
    };
    {
      auto index = OpenOrDie(o);
      add(*index, 0, 40);
      ASSERT_OK(index->Flush());
    }
    std::vector<ChunkHash> nowhere;
    for (uint32_t j = 0; j < 2000; ++j) nowhere.push_back(HashOf(777, j));
    std::sort(nowhere.begin(), nowhere.end());
    IndexOptions unfiltered = o;
    unfiltered.hash_filter_bits = 0;
    uint64_t bytes_unfiltered = 0;
    {
      auto index = OpenOrDie(unfiltered);
      ASSERT_OK(index->WaitForHashFilter());
      EXPECT_EQ(index->Stats().hash_filter_bytes, 0u);
      bytes_unfiltered = BucketBytesRead(*index, nowhere);
    }
    auto index = OpenOrDie(o);
    ASSERT_OK(index->WaitForHashFilter());  // filled from the 40 documents' buckets
    EXPECT_TRUE(index->Stats().hash_filter_ready);
    EXPECT_GT(index->Stats().hash_filter_bytes, 0u);
    add(*index, 40, 50);  // added to the filled filter by the registrations
    for (const auto& [id, fp] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id)) << id;
    const uint64_t bytes_filtered = BucketBytesRead(*index, nowhere);
    EXPECT_GT(bytes_unfiltered, 0u);
    EXPECT_LT(bytes_filtered * 4, bytes_unfiltered);
  }
}

// A per-hash index has no such filter: RocksDB's bloom filters answer its misses.
TEST(IndexTest, APerHashIndexHasNoHashFilter) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.bucketed_postings = false;
  auto index = OpenOrDie(o);
  ASSERT_OK(index->WaitForHashFilter());
  EXPECT_EQ(index->Stats().hash_filter_bytes, 0u);
  EXPECT_FALSE(index->Stats().hash_filter_ready);
}

TEST(IndexTest, CorruptBucketIsDataLossNamingItsKey) {
  TempDir dir;
  const std::string path = dir.Join("db");
  const ChunkHash hash = HashOf(1, 0);
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_OK(index->Register(MakeRecord("a"), MakeFingerprint(1, 10), ""));
    ASSERT_OK(index->Compact());
  }
  // Bucket bits 22, two shards by the top bit.
  const std::string family = (hash >> 63) == 0 ? "buckets" : "buckets.1";
  const auto bucket = static_cast<uint32_t>(hash >> 42);
  std::string key(4, '\0');
  for (int i = 0; i < 4; ++i) key[i] = static_cast<char>(bucket >> (24 - 8 * i));
  EditClosedIndex(path, [&](rocksdb::DB& raw, const auto& handles) {
    for (auto* h : handles) {
      if (h->GetName() == family) {
        EXPECT_TRUE(raw.Put(rocksdb::WriteOptions(), h, key, std::string("\x01\x03\x02", 3)).ok());
      }
    }
  });
  auto index = OpenOrDie(Options(path));
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", bucket);
  // Filling the hash filter meets the bucket first; the lookups then read every bucket.
  const absl::Status filled = index->WaitForHashFilter();
  EXPECT_EQ(filled.code(), absl::StatusCode::kDataLoss) << filled;
  EXPECT_NE(filled.message().find(hex), absl::string_view::npos) << filled;
  EXPECT_FALSE(index->Stats().hash_filter_ready);
  std::vector<PostingList> out;
  const absl::Status s = index->Lookup(std::span<const ChunkHash>(&hash, 1), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(hex), absl::string_view::npos) << s;
}

TEST(IndexTest, NewerSchemaIsRefused) {
  TempDir dir;
  const std::string path = dir.Join("db");
  { ASSERT_NE(OpenOrDie(Options(path)), nullptr); }
  // Simulate an index written by a future build: schema version 99 in the meta family.
  OverwriteMeta(path, "schema_version", std::string(1, '\x63'));
  EXPECT_TRUE(RefusedNaming(Options(path), "schema version 99"));
}

// Rewrites a closed, flushed index's duplicate map the way a schema-1 build left it: keyed by
// the 32-byte digest alone, schema_version 1.
void MakeSchema1(const std::string& path) {
  EditClosedIndex(path, [](rocksdb::DB& raw, const auto& handles) {
    for (auto* h : handles) {
      if (h->GetName() != "sha256") continue;
      std::unique_ptr<rocksdb::Iterator> it(raw.NewIterator(rocksdb::ReadOptions(), h));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const std::string key = it->key().ToString();
        ASSERT_GT(key.size(), 32u);
        EXPECT_TRUE(raw.Put(rocksdb::WriteOptions(), h, key.substr(key.size() - 32),
                            it->value()).ok());
        EXPECT_TRUE(raw.Delete(rocksdb::WriteOptions(), h, key).ok());
      }
    }
    EXPECT_TRUE(raw.Put(rocksdb::WriteOptions(), "schema_version", std::string(1, '\x01')).ok());
  });
}

TEST(IndexTest, ASchema1IndexIsReadAsIsAndUpgradedByAWritableOpen) {
  TempDir dir;
  const std::string path = dir.Join("db");
  const DocumentFingerprint fp = MakeFingerprint(12, 10);
  DocId in_a = 0;
  {
    auto index = OpenOrDie(Options(path));
    in_a = index->Register(MakeRecord("x", "a"), fp, "same")->id;
    ASSERT_OK(index->Register(MakeRecord("y", ""), MakeFingerprint(13, 10), "other").status());
    ASSERT_OK(index->Flush());  // MakeSchema1 opens without the postings' merge operator
  }
  MakeSchema1(path);

  // Read-only (a snapshot for a gateway): lookups work; only listing collections needs
  // the new map.
  IndexOptions ro = Options(path);
  ro.read_only = true;
  {
    auto index = OpenOrDie(ro);
    ASSERT_NE(index, nullptr);
    EXPECT_TRUE(HasAllPostings(*index, fp, in_a));
    EXPECT_EQ(index->Collections().status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(index->HasCollection("a").status().code(), absl::StatusCode::kFailedPrecondition);
  }
  // A writable open upgrades the map: duplicates within a collection are still found, a copy
  // in another collection is registered anew, and the upgrade is recorded.
  {
    auto index = OpenOrDie(Options(path));
    ASSERT_NE(index, nullptr);
    EXPECT_EQ(index->Collections().value(), (std::vector<std::string>{"", "a"}));
    EXPECT_EQ(index->Register(MakeRecord("", "a"), fp, "same")->duplicate_of, in_a);
    auto in_b = index->Register(MakeRecord("", "b"), fp, "same");
    EXPECT_TRUE(in_b->created);
    EXPECT_FALSE(in_b->duplicate_of.has_value());
  }
  auto reopened = OpenOrDie(ro);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->Collections().value(), (std::vector<std::string>{"", "a", "b"}));
}

TEST(IndexTest, MissingIndexIsNotFoundAndReadOnlyRefusesWrites) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.create_if_missing = false;
  EXPECT_EQ(Index::Open(o).status().code(), absl::StatusCode::kNotFound);
  DocId a;
  {
    auto index = OpenOrDie(Options(dir.Join("db")));
    a = index->Register(MakeRecord("a"), MakeFingerprint(1, 5), "t")->id;
  }
  IndexOptions ro = Options(dir.Join("db"));
  ro.read_only = true;
  auto index = OpenOrDie(ro);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(1, 5), a));
  EXPECT_EQ(index->Register(MakeRecord("b"), MakeFingerprint(2, 5), "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(index->Unregister(a).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(IndexTest, ListDocumentsPagesInIdOrderAndFiltersByCollection) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  std::vector<DocId> ids;
  for (uint64_t s = 1; s <= 5; ++s) {
    ids.push_back(index->Register(MakeRecord(std::to_string(s), s % 2 ? "odd" : "even"),
                                  MakeFingerprint(s, 3), "")->id);
  }
  std::vector<DocId> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = index->ListDocuments(token, 2);
    ASSERT_OK(page);
    for (const auto& d : page->documents) seen.push_back(d.id);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(seen, ids);
  EXPECT_EQ(pages, 3);
  auto even = index->ListDocuments("", 100, "even");
  ASSERT_OK(even);
  ASSERT_EQ(even->documents.size(), 2u);
  EXPECT_EQ(even->documents[0].id, ids[1]);
  EXPECT_EQ(even->documents[1].id, ids[3]);
  EXPECT_EQ(index->ListDocuments("not-a-token", 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Runs this test binary again with only `test` selected and `env` added; returns its
// pid. `pipe_fd`, if >= 0, becomes the child's fd 3.
pid_t SpawnSelf(const std::string& test, const std::vector<std::string>& env, int pipe_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (pipe_fd >= 0) posix_spawn_file_actions_adddup2(&actions, pipe_fd, 3);
  std::string filter = "--gtest_filter=" + test;
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<char*> argv = {exe.data(), filter.data(), nullptr};
  std::vector<std::string> env_storage(env);
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0);
  return pid;
}

int WaitExitCode(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(IndexTest, SnapshotOpensReadOnlyHereAndInAnotherProcess) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  DocId a = index->Register(MakeRecord("a"), MakeFingerprint(1, 30), "text a")->id;
  ASSERT_OK(index->CreateSnapshot(dir.Join("snap")));
  DocId b = index->Register(MakeRecord("b"), MakeFingerprint(2, 30), "text b")->id;
  EXPECT_FALSE(index->CreateSnapshot(dir.Join("snap")).ok());  // must not exist yet

  IndexOptions ro = Options(dir.Join("snap"));
  ro.read_only = true;
  {
    auto snap = OpenOrDie(ro);
    ASSERT_NE(snap, nullptr);
    EXPECT_TRUE(HasAllPostings(*snap, MakeFingerprint(1, 30), a));
    EXPECT_TRUE(PostingsOf(*snap, HashOf(2, 0), b).empty());  // registered after the copy
    EXPECT_EQ(*snap->GetText(a), "text a");
    EXPECT_EQ(snap->Stats().documents, 1u);
  }
  // The live index keeps running while another process reads the copy.
  pid_t child = SpawnSelf("IndexSnapshotChild.LooksUpDocumentOne",
                          {"COPS_SNAPSHOT_DIR=" + dir.Join("snap")}, -1);
  EXPECT_EQ(WaitExitCode(child), 0);
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(2, 30), b));
}

// Child side of the snapshot test; skipped unless spawned by it.
TEST(IndexSnapshotChild, LooksUpDocumentOne) {
  const char* dir = std::getenv("COPS_SNAPSHOT_DIR");
  if (dir == nullptr) GTEST_SKIP() << "runs only as a child of SnapshotOpensReadOnly...";
  IndexOptions ro = Options(dir);
  ro.read_only = true;
  auto snap = OpenOrDie(ro);
  ASSERT_NE(snap, nullptr);
  EXPECT_TRUE(HasAllPostings(*snap, MakeFingerprint(1, 30), 1));
  EXPECT_EQ(snap->GetDocument(1)->external_id, "a");
}

// Child side of the crash test: registers documents "crash-<i>" until killed, writing each
// acknowledged id and i to fd 3.
TEST(IndexCrashChild, RegisterUntilKilled) {
  const char* dir = std::getenv("COPS_CRASH_DIR");
  if (dir == nullptr) GTEST_SKIP() << "runs only as a child of SurvivesSigkill";
  auto index = OpenOrDie(Options(dir));
  ASSERT_NE(index, nullptr);
  for (uint64_t i = 1; i <= 100000; ++i) {
    auto r = index->Register(MakeRecord("crash-" + std::to_string(i)), MakeFingerprint(i, 200, true),
                             std::string(2000, 'a' + i % 26));
    ASSERT_OK(r);
    char line[64];
    int n = std::snprintf(line, sizeof line, "%llu %llu\n", static_cast<unsigned long long>(r->id),
                          static_cast<unsigned long long>(i));
    ASSERT_EQ(write(3, line, n), n);
  }
}

TEST(IndexTest, SurvivesSigkillWithEveryAcknowledgedDocumentWhole) {
  TempDir dir;
  const std::string path = dir.Join("db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = SpawnSelf("IndexCrashChild.RegisterUntilKilled", {"COPS_CRASH_DIR=" + path}, fds[1]);
  close(fds[1]);
  // Read acknowledgements until 300 documents are in, then kill mid-stream.
  std::map<DocId, uint64_t> acked;  // id -> generator seed
  std::string buffer;
  char chunk[4096];
  while (acked.size() < 300) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buffer.append(chunk, n);
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      unsigned long long id, seed;
      ASSERT_EQ(std::sscanf(buffer.substr(0, nl).c_str(), "%llu %llu", &id, &seed), 2);
      acked[id] = seed;
      buffer.erase(0, nl + 1);
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child ended before it was killed";
  ASSERT_GE(acked.size(), 300u);

  auto index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
  for (const auto& [id, seed] : acked) {
    auto record = index->GetDocument(id);
    ASSERT_OK(record) << "acknowledged document " << id << " lost: " << record.status();
    EXPECT_EQ(record->external_id, "crash-" + std::to_string(seed));
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(seed, 200, true), id)) << id;
    EXPECT_EQ(index->GetText(id)->size(), 2000u);
    // The external-id map survived too: a retry finds the document.
    auto retry = index->Register(MakeRecord("crash-" + std::to_string(seed)),
                                 MakeFingerprint(seed, 200, true), "");
    ASSERT_OK(retry);
    EXPECT_FALSE(retry->created);
    EXPECT_EQ(retry->id, id);
  }
  // Whatever else made it (registered but killed before the ack) is whole too; nothing is
  // half-written: every document has all its postings, and the shared chunk counts exactly
  // the documents present.
  uint64_t present = 0;
  std::string token;
  do {
    auto page = index->ListDocuments(token, 1000);
    ASSERT_OK(page);
    for (const auto& d : page->documents) {
      ++present;
      const uint64_t seed = std::stoull(d.external_id.substr(6));
      EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(seed, 200, true), d.id)) << d.id;
    }
    token = page->next_page_token;
  } while (!token.empty());
  EXPECT_GE(present, acked.size());
  EXPECT_EQ(index->Stats().documents, present);
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, present);
  // The next registration gets a fresh id above everything seen.
  auto next = index->Register(MakeRecord("after"), MakeFingerprint(999999, 5), "");
  ASSERT_OK(next);
  EXPECT_GT(next->id, acked.rbegin()->first);
}

// A power cut under a live index: the machine stops, the index is closed as the next start
// finds it, and whatever RocksDB had not synced is gone.
void PowerCut(FaultFileSystem& disk, std::unique_ptr<Index>& index) {
  disk.Crash();
  index.reset();
  ASSERT_OK(disk.DropUnsyncedChanges());
}

// The documents of the index as external id -> id, checking on the way that each one is
// whole (record, every posting, text) and that the counters agree with what is there.
std::map<std::string, DocId> WholeDocuments(const Index& index, uint32_t chunks) {
  std::map<std::string, DocId> present;
  std::string token;
  do {
    auto page = index.ListDocuments(token, 1000);
    EXPECT_OK(page);
    if (!page.ok()) break;
    for (const DocumentRecord& d : page->documents) {
      const uint64_t seed = std::stoull(d.external_id.substr(d.external_id.find('-') + 1));
      EXPECT_TRUE(HasAllPostings(index, MakeFingerprint(seed, chunks, true), d.id)) << d.id;
      EXPECT_EQ(index.GetText(d.id).value_or(""), std::string(100, 'a' + seed % 26)) << d.id;
      present[d.external_id] = d.id;
    }
    token = page->next_page_token;
  } while (!token.empty());
  EXPECT_EQ(index.Stats().documents, present.size());
  std::vector<PostingList> out;
  EXPECT_OK(index.Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out.at(0).doc_frequency, present.size());
  return present;
}

TEST(IndexTest, PowerLossWithSyncWritesLosesNoAcknowledgedChange) {
  TempDir dir;
  fs::create_directories(dir.path() / "trash");
  FaultFileSystem disk(dir.Join("trash"));
  IndexOptions o = Options(dir.Join("db"));
  o.sync_writes = true;
  o.env = disk.rocksdb_env();
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  // Registrations and unregistrations on both sides of a flush (SST files, a new WAL).
  std::map<std::string, DocId> acked;
  auto register_doc = [&](uint64_t seed) {
    auto r = index->Register(MakeRecord("doc-" + std::to_string(seed)),
                             MakeFingerprint(seed, 50, true), std::string(100, 'a' + seed % 26));
    ASSERT_OK(r);
    acked["doc-" + std::to_string(seed)] = r->id;
  };
  for (uint64_t seed = 1; seed <= 20; ++seed) register_doc(seed);
  ASSERT_OK(index->Unregister(acked["doc-3"]));
  acked.erase("doc-3");
  ASSERT_OK(index->Flush());
  for (uint64_t seed = 21; seed <= 40; ++seed) register_doc(seed);
  for (const char* gone : {"doc-7", "doc-30", "doc-40"}) {
    ASSERT_OK(index->Unregister(acked[gone]));
    acked.erase(gone);
  }
  const DocId last_id = index->NextDocId() - 1;
  PowerCut(disk, index);

  index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(WholeDocuments(*index, 50), acked);
  for (uint64_t seed : {3, 7, 30, 40}) {
    EXPECT_TRUE(PostingsOf(*index, HashOf(seed, 0), 0).empty());
    std::vector<PostingList> out;
    ASSERT_OK(index->Lookup(std::vector<ChunkHash>{HashOf(seed, 0)}, &out));
    EXPECT_TRUE(out[0].postings.empty()) << "unregistered document " << seed << " is back";
  }
  EXPECT_GT(index->NextDocId(), last_id) << "an acknowledged id would be given again";
}

TEST(IndexTest, PowerLossWithoutSyncWritesLosesOnlyTheLatestWritesAndOpensConsistent) {
  TempDir dir;
  fs::create_directories(dir.path() / "trash");
  FaultFileSystem disk(dir.Join("trash"));
  IndexOptions o = Options(dir.Join("db"));
  o.env = disk.rocksdb_env();
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  std::vector<std::string> order;  // external ids in registration order
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    auto r = index->Register(MakeRecord("doc-" + std::to_string(seed)),
                             MakeFingerprint(seed, 50, true), std::string(100, 'a' + seed % 26));
    ASSERT_OK(r);
    ASSERT_EQ(r->id, seed);
    order.push_back("doc-" + std::to_string(seed));
    if (seed == 15) {
      ASSERT_OK(index->Flush());  // makes the first 15 durable
    }
  }
  PowerCut(disk, index);

  index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  const std::map<std::string, DocId> present = WholeDocuments(*index, 50);
  // What survives is the registrations up to some point: the unsynced tail of the WAL is
  // cut, never a write in its middle.
  ASSERT_GE(present.size(), 15u);
  EXPECT_LT(present.size(), order.size()) << "nothing was lost: the power cut did not bite";
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(present.count(order[i]), i < present.size() ? 1u : 0u) << order[i];
  }
  // The index keeps working: the next id follows the survivors (the lost ids are given
  // again: their acknowledgements did not survive).
  EXPECT_EQ(index->NextDocId(), present.size() + 1);
  auto again = index->Register(MakeRecord("doc-40"), MakeFingerprint(40, 50, true),
                               std::string(100, 'a' + 40 % 26));
  ASSERT_OK(again);
  EXPECT_TRUE(again->created);
}

TEST(IndexTest, ConcurrentRegisterUnregisterAndLookupKeepInvariants) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.max_postings_per_chunk = 0;
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  constexpr int kWriters = 4;
  constexpr int kDocsPerWriter = 60;
  std::mutex mu;
  std::map<uint64_t, DocId> live;       // seed -> id
  std::map<uint64_t, DocId> removed;    // seed -> id, published after Unregister returned
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kDocsPerWriter; ++i) {
        const uint64_t seed = 1000 * (w + 1) + i;
        auto r = index->Register(MakeRecord(std::to_string(seed)), MakeFingerprint(seed, 40, true), "t");
        if (!r.ok() || !r->created) {
          ++violations;
          continue;
        }
        if (i % 3 == 0) {
          if (!index->Unregister(r->id).ok()) ++violations;
          std::lock_guard<std::mutex> l(mu);
          removed[seed] = r->id;
        } else {
          std::lock_guard<std::mutex> l(mu);
          live[seed] = r->id;
        }
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!done.load()) {
        std::map<uint64_t, DocId> gone, here;
        {
          std::lock_guard<std::mutex> l(mu);
          gone = removed;
          here = live;
        }
        // A document unregistered before this lookup never shows up again; a live one is whole.
        for (const auto& [seed, id] : gone) {
          if (!PostingsOf(*index, HashOf(seed, 7), id).empty()) ++violations;
        }
        for (const auto& [seed, id] : here) {
          if (!HasAllPostings(*index, MakeFingerprint(seed, 40, true), id)) ++violations;
        }
        std::vector<PostingList> out;
        if (!index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out).ok()) ++violations;
        for (size_t i = 1; i < out[0].postings.size(); ++i) {
          if (out[0].postings[i - 1].doc_id >= out[0].postings[i].doc_id) ++violations;
        }
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(violations.load(), 0);

  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, live.size());
  EXPECT_EQ(out[0].postings.size(), live.size());
  EXPECT_EQ(index->Stats().documents, live.size());
  std::set<DocId> ids;
  for (const auto& [seed, id] : live) {
    EXPECT_TRUE(ids.insert(id).second) << "id " << id << " handed out twice";
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(seed, 40, true), id));
  }
  for (const auto& [seed, id] : removed) {
    EXPECT_EQ(index->GetDocument(id).status().code(), absl::StatusCode::kNotFound);
  }
}


// ---- Expiry and embargo ----

// The schema_version recorded in the meta family of the (closed) index at `path`. Only the
// meta family is opened: replaying the postings' merge operands would need their operator.
uint64_t RecordedSchema(const std::string& path) {
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()}};
  rocksdb::Status opened =
      rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path, cfs, &handles, &raw);
  EXPECT_TRUE(opened.ok()) << opened.ToString();
  if (!opened.ok()) return 0;
  std::string value;
  rocksdb::Status got = raw->Get(rocksdb::ReadOptions(), "schema_version", &value);
  EXPECT_TRUE(got.ok()) << got.ToString();
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
  return value.empty() ? 0 : static_cast<unsigned char>(value[0]);
}

DocumentRecord ExpiringRecord(const std::string& external_id, int64_t expires,
                              int64_t not_before = 0) {
  DocumentRecord r = MakeRecord(external_id);
  r.expires_unix_micros = expires;
  r.not_before_unix_micros = not_before;
  return r;
}

TEST(IndexTest, ExpiryAndEmbargoAreStoredAndSurviveReopen) {
  TempDir dir;
  const std::string path = dir.Join("db");
  DocId a, b;
  {
    auto index = OpenOrDie(Options(path));
    a = index->Register(ExpiringRecord("a", 5000, 1000), MakeFingerprint(1, 10), "")->id;
    b = index->Register(MakeRecord("b"), MakeFingerprint(2, 10), "")->id;
  }
  auto index = OpenOrDie(Options(path));
  auto ra = index->GetDocument(a);
  ASSERT_OK(ra);
  EXPECT_EQ(ra->expires_unix_micros, 5000);
  EXPECT_EQ(ra->not_before_unix_micros, 1000);
  EXPECT_FALSE(ra->MatchableAt(999));
  EXPECT_TRUE(ra->MatchableAt(1000));
  EXPECT_TRUE(ra->MatchableAt(4999));
  EXPECT_FALSE(ra->MatchableAt(5000));
  auto rb = index->GetDocument(b);
  EXPECT_EQ(rb->expires_unix_micros, 0);
  EXPECT_EQ(rb->not_before_unix_micros, 0);
  EXPECT_TRUE(rb->MatchableAt(1));
}

TEST(IndexTest, SchemaVersionRisesOnlyWithTheFirstDocumentThatHasALifetime) {
  TempDir dir;
  const std::string path = dir.Join("db");
  // An index with per-hash postings, as builds before schema 4 made (a new bucketed one is of
  // schema 4 from the start).
  IndexOptions per_hash = Options(path);
  per_hash.bucketed_postings = false;
  {
    auto index = OpenOrDie(per_hash);
    ASSERT_OK(index->Register(MakeRecord("plain"), MakeFingerprint(1, 10), ""));
  }
  // Builds that know no expiry can still open it: nothing in it needs one.
  EXPECT_EQ(RecordedSchema(path), 2u);
  {
    auto index = OpenOrDie(Options(path));  // bucketed_postings: not for an existing index
    EXPECT_EQ(index->Stats().bucket_bits, 0u);
    ASSERT_OK(index->Register(ExpiringRecord("embargoed", 0, 1000), MakeFingerprint(2, 10), ""));
  }
  // Now they must refuse it rather than show an embargoed document to checkers.
  EXPECT_EQ(RecordedSchema(path), 3u);
  EXPECT_NE(OpenOrDie(Options(path)), nullptr);
}

// A ChunkRecomputer that knows the fingerprints of the texts it was told, as the engine's
// recomputes them from the stored text under the index's key: texts starting "kept:" are
// not Reproducible; a text it was not told (or told with other hashes) fails as a changed
// text would.
class TableRecomputer final : public ChunkRecomputer {
 public:
  void Learn(const std::string& text, const DocumentFingerprint& fp) {
    std::lock_guard<std::mutex> lock(mu_);
    table_[text] = fp;
  }
  bool Reproducible(const DocumentRecord&, std::string_view text) const override {
    return !text.starts_with("kept:");
  }
  absl::Status Recompute(const DocumentRecord& record, std::string_view text,
                         std::vector<ChunkHash>* hashes) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    auto it = table_.find(std::string(text));
    if (it == table_.end()) {
      return absl::DataLossError("document " + std::to_string(record.id) + ": text changed");
    }
    hashes->clear();
    for (const Chunk& c : it->second.chunks) hashes->push_back(c.hash);
    return absl::OkStatus();
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, DocumentFingerprint> table_;
  mutable int calls_ = 0;
};

// The keys of the chunk lists ("doc_chunks") of a closed index.
size_t ChunkListsOf(const std::string& path) {
  size_t keys = 0;
  EditClosedIndex(path, [&](rocksdb::DB& raw, const auto& handles) {
    for (auto* h : handles) {
      if (h->GetName() != "doc_chunks") continue;
      std::unique_ptr<rocksdb::Iterator> it(raw.NewIterator(rocksdb::ReadOptions(), h));
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++keys;
    }
  });
  return keys;
}

// Postings of `doc` under any hash of `fps`.
size_t PostingsLeft(const Index& index, const std::vector<DocumentFingerprint>& fps, DocId doc) {
  size_t left = 0;
  for (const DocumentFingerprint& fp : fps) {
    for (const Chunk& c : fp.chunks) left += PostingsOf(index, c.hash, doc).size();
  }
  return left;
}

TEST(IndexTest, ADocumentWithAReproducibleStoredTextKeepsNoChunkListAndIsRemovedWhole) {
  for (const bool bucketed : {false, true}) {
    SCOPED_TRACE(bucketed ? "bucketed postings" : "per-hash postings");
    TempDir dir;
    const std::string path = dir.Join("db");
    auto recomputer = std::make_shared<TableRecomputer>();
    IndexOptions o = Options(path);
    o.bucketed_postings = bucketed;
    o.chunk_recomputer = recomputer;
    // Every document shares kSharedHash; "kept:" is not reproducible.
    const std::vector<std::string> texts = {"alpha", "kept:beta", "gamma", "delta"};
    std::vector<DocumentFingerprint> fps;
    std::vector<DocId> ids;
    {
      auto index = OpenOrDie(o);
      for (size_t i = 0; i < texts.size(); ++i) {
        fps.push_back(MakeFingerprint(100 + i, 30, /*shared=*/true));
        recomputer->Learn(texts[i], fps.back());
        // The third expires (at 1000 us), to be removed by RemoveExpired.
        const DocumentRecord record = i == 2 ? ExpiringRecord("e2", 1000)
                                             : MakeRecord("e" + std::to_string(i));
        auto r = index->Register(record, fps.back(), texts[i]);
        ASSERT_OK(r);
        ids.push_back(r->id);
      }
      ASSERT_OK(index->Flush());
    }
    EXPECT_EQ(ChunkListsOf(path), 1u);  // "kept:beta" only
    // The index verifies (verify_k > 0): bucketed, the others' postings carry no spans.
    EXPECT_EQ(RecordedSchema(path), bucketed ? 6u : 5u);
    {
      auto index = OpenOrDie(o);
      EXPECT_TRUE(HasAllPostings(*index, fps[1], ids[1]));
      EXPECT_TRUE(HasAllPostings(*index, fps[0], ids[0], /*positions=*/!bucketed));
      ASSERT_OK(index->Unregister(ids[0]));  // recomputed
      ASSERT_OK(index->Unregister(ids[1]));  // its chunk list
      EXPECT_EQ(recomputer->calls(), 1);
      auto expired = index->RemoveExpired(/*now_unix_micros=*/2000, 10);
      ASSERT_OK(expired);
      EXPECT_EQ(*expired, 1u);
      EXPECT_EQ(recomputer->calls(), 2);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(PostingsLeft(*index, fps, ids[i]), 0u) << "document " << ids[i];
      }
      EXPECT_TRUE(HasAllPostings(*index, fps[3], ids[3], /*positions=*/!bucketed));
      EXPECT_EQ(PostingsOf(*index, kSharedHash, ids[3]).size(), 1u);
      ASSERT_OK(index->Compact());
      std::vector<PostingList> shared;
      ASSERT_OK(index->Lookup(std::span<const ChunkHash>(&kSharedHash, 1), &shared));
      EXPECT_EQ(shared.at(0).postings.size(), 1u);
      EXPECT_EQ(shared.at(0).doc_frequency, 1u);
    }
  }
}

// An index of schema 5 (what builds before schema 6 wrote: every posting with its position)
// keeps working when documents without positions join its buckets: both kinds are found,
// merged into the same values, and removed whole.
TEST(IndexTest, ABucketedIndexOfSchemaFiveTakesDocumentsWithoutPositions) {
  TempDir dir;
  const std::string path = dir.Join("db");
  auto recomputer = std::make_shared<TableRecomputer>();
  IndexOptions o = Options(path);
  o.bucketed_postings = true;
  o.postings_bucket_bits = 12;  // few buckets: the two documents share values
  // Both hold kSharedHash; "kept:old" is registered as a build before schema 6 would.
  const DocumentFingerprint old_fp = MakeFingerprint(11, 40, /*shared=*/true);
  const DocumentFingerprint new_fp = MakeFingerprint(12, 40, /*shared=*/true);
  recomputer->Learn("new", new_fp);
  DocId old_id = 0, new_id = 0;
  {
    IndexOptions before = o;
    before.chunk_recomputer = nullptr;
    auto index = OpenOrDie(before);
    old_id = index->Register(MakeRecord("old"), old_fp, "kept:old").value().id;
    ASSERT_OK(index->Flush());
  }
  EXPECT_EQ(RecordedSchema(path), 4u);
  {
    o.chunk_recomputer = recomputer;
    auto index = OpenOrDie(o);
    new_id = index->Register(MakeRecord("new"), new_fp, "new").value().id;
    EXPECT_TRUE(HasAllPostings(*index, old_fp, old_id));
    EXPECT_TRUE(HasAllPostings(*index, new_fp, new_id, /*positions=*/false));
    std::vector<PostingList> shared;
    ASSERT_OK(index->Lookup(std::span<const ChunkHash>(&kSharedHash, 1), &shared));
    EXPECT_EQ(shared.at(0).doc_frequency, 2u);
    ASSERT_OK(index->Compact());
    EXPECT_TRUE(HasAllPostings(*index, old_fp, old_id));
    EXPECT_TRUE(HasAllPostings(*index, new_fp, new_id, /*positions=*/false));
  }
  EXPECT_EQ(RecordedSchema(path), 6u);
  auto index = OpenOrDie(o);
  ASSERT_OK(index->Unregister(new_id));
  EXPECT_EQ(PostingsLeft(*index, {new_fp}, new_id), 0u);
  EXPECT_TRUE(HasAllPostings(*index, old_fp, old_id));
  ASSERT_OK(index->Unregister(old_id));
  ASSERT_OK(index->Compact());
  EXPECT_EQ(PostingsLeft(*index, {old_fp, new_fp}, old_id), 0u);
}

// Without verification a check's registered bytes come from the postings alone, so an index
// without verification grams keeps them for every document (and records schema 5).
TEST(IndexTest, AnIndexThatDoesNotVerifyKeepsTheSpansOfAReproducibleText) {
  for (const bool bucketed : {false, true}) {
    SCOPED_TRACE(bucketed ? "bucketed postings" : "per-hash postings");
    TempDir dir;
    const std::string path = dir.Join("db");
    auto recomputer = std::make_shared<TableRecomputer>();
    IndexOptions o = Options(path);
    o.params.verify_k = 0;
    o.params.dense_chunks = 0;
    o.bucketed_postings = bucketed;
    o.chunk_recomputer = recomputer;
    const DocumentFingerprint fp = MakeFingerprint(5, 20, /*shared=*/true);
    recomputer->Learn("text", fp);
    {
      auto index = OpenOrDie(o);
      const DocId id = index->Register(MakeRecord("a"), fp, "text").value().id;
      EXPECT_TRUE(HasAllPostings(*index, fp, id));
      ASSERT_OK(index->Flush());
    }
    EXPECT_EQ(ChunkListsOf(path), 0u);
    EXPECT_EQ(RecordedSchema(path), 5u);
  }
}

TEST(IndexTest, WithoutAWayToRecomputeItARemovalOfADocumentWithoutChunkListChangesNothing) {
  TempDir dir;
  const std::string path = dir.Join("db");
  auto recomputer = std::make_shared<TableRecomputer>();
  IndexOptions o = Options(path);
  o.chunk_recomputer = recomputer;
  const DocumentFingerprint fp = MakeFingerprint(7, 20);
  recomputer->Learn("text", fp);
  DocId id = 0;
  {
    auto index = OpenOrDie(o);
    auto r = index->Register(MakeRecord("a"), fp, "text");
    ASSERT_OK(r);
    id = r->id;
  }
  {
    IndexOptions without = o;
    without.chunk_recomputer = nullptr;
    auto index = OpenOrDie(without);
    absl::Status s = index->Unregister(id);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find("document " + std::to_string(id)), absl::string_view::npos) << s;
    EXPECT_OK(index->GetDocument(id));
    EXPECT_TRUE(HasAllPostings(*index, fp, id, /*positions=*/false));
  }
  {
    // A text that no longer yields its hashes fails the same way, as the recomputer says.
    IndexOptions changed = o;
    changed.chunk_recomputer = std::make_shared<TableRecomputer>();
    auto index = OpenOrDie(changed);
    absl::Status s = index->Unregister(id);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_OK(index->GetDocument(id));
    EXPECT_TRUE(HasAllPostings(*index, fp, id, /*positions=*/false));
  }
  auto index = OpenOrDie(o);
  ASSERT_OK(index->Unregister(id));
  EXPECT_EQ(PostingsOf(*index, fp.chunks[0].hash, id).size(), 0u);
}

// Recomputes as TableRecomputer does, but first waits until `release` is set, at most 20 s
// (`timed_out`): a build that recomputes under the writer lock fails rather than hangs.
class WaitingRecomputer final : public ChunkRecomputer {
 public:
  explicit WaitingRecomputer(DocumentFingerprint fp) : fp_(std::move(fp)) {}
  bool Reproducible(const DocumentRecord&, std::string_view) const override { return true; }
  absl::Status Recompute(const DocumentRecord&, std::string_view,
                         std::vector<ChunkHash>* hashes) const override {
    if (waiting.load()) {
      entered.store(true);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!release.load()) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out.store(true);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    hashes->clear();
    for (const Chunk& c : fp_.chunks) hashes->push_back(c.hash);
    return absl::OkStatus();
  }
  mutable std::atomic<bool> waiting{false}, entered{false}, release{false}, timed_out{false};

 private:
  const DocumentFingerprint fp_;
};

TEST(IndexTest, RegistrationsGoOnWhileAnUnregistrationRecomputesItsHashes) {
  TempDir dir;
  const DocumentFingerprint fp = MakeFingerprint(1, 20);
  auto recomputer = std::make_shared<WaitingRecomputer>(fp);
  IndexOptions o = Options(dir.Join("db"));
  o.chunk_recomputer = recomputer;
  auto index = OpenOrDie(o);
  const DocId id = index->Register(MakeRecord("slow"), fp, "slow text").value().id;
  recomputer->waiting.store(true);
  std::thread unregister([&] { EXPECT_OK(index->Unregister(id)); });
  while (!recomputer->entered.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The unregistration is inside its recomputation: a registration is not held up by it.
  EXPECT_OK(index->Register(MakeRecord("meanwhile"), MakeFingerprint(2, 20), "other text"));
  recomputer->release.store(true);
  unregister.join();
  EXPECT_FALSE(recomputer->timed_out.load()) << "the registration waited for the recomputation";
  EXPECT_EQ(PostingsOf(*index, fp.chunks[0].hash, id).size(), 0u);
}

TEST(IndexTest, DocumentsWithChunkListsFromAnOlderBuildAreRemovedByTheirLists) {
  TempDir dir;
  const std::string path = dir.Join("db");
  IndexOptions old_build = Options(path);  // no recomputer: what builds of schema 4 write
  const DocumentFingerprint old_fp = MakeFingerprint(1, 20, true);
  const DocumentFingerprint new_fp = MakeFingerprint(2, 20, true);
  DocId old_id = 0;
  {
    auto index = OpenOrDie(old_build);
    auto r = index->Register(MakeRecord("old"), old_fp, "old text");
    ASSERT_OK(r);
    old_id = r->id;
    ASSERT_OK(index->Flush());
  }
  EXPECT_EQ(ChunkListsOf(path), 1u);
  EXPECT_EQ(RecordedSchema(path), 4u);
  auto recomputer = std::make_shared<TableRecomputer>();  // knows neither text
  IndexOptions o = old_build;
  o.chunk_recomputer = recomputer;
  {
    auto index = OpenOrDie(o);
    ASSERT_OK(index->Unregister(old_id));
    EXPECT_EQ(recomputer->calls(), 0);
    EXPECT_EQ(PostingsLeft(*index, {old_fp}, old_id), 0u);
    ASSERT_OK(index->Flush());
  }
  // Opening and removing wrote nothing a schema-4 build cannot read.
  EXPECT_EQ(RecordedSchema(path), 4u);
  // A text kept without its list, and a document without stored text (which keeps its list).
  o.store_texts = false;
  {
    auto index = OpenOrDie(o);
    ASSERT_OK(index->Register(MakeRecord("no text"), new_fp, "new text"));
    ASSERT_OK(index->Flush());
  }
  EXPECT_EQ(ChunkListsOf(path), 1u);
  EXPECT_EQ(RecordedSchema(path), 4u);
}

TEST(IndexTest, APerHashIndexWithoutChunkListsUpgradesToBucketsAndKeepsItsSchema) {
  TempDir dir;
  const std::string path = dir.Join("db");
  auto recomputer = std::make_shared<TableRecomputer>();
  IndexOptions o = Options(path);
  o.bucketed_postings = false;
  o.chunk_recomputer = recomputer;
  const DocumentFingerprint a = MakeFingerprint(1, 20, true), b = MakeFingerprint(2, 20, true);
  recomputer->Learn("a", a);
  recomputer->Learn("b", b);
  DocId id_a = 0, id_b = 0;
  {
    auto index = OpenOrDie(o);
    id_a = index->Register(MakeRecord("a"), a, "a").value().id;
    id_b = index->Register(MakeRecord("b"), b, "b").value().id;
    ASSERT_OK(index->Flush());
  }
  EXPECT_EQ(RecordedSchema(path), 5u);
  ASSERT_OK(Index::UpgradePostings(o));
  EXPECT_EQ(RecordedSchema(path), 5u);
  auto index = OpenOrDie(o);
  EXPECT_NE(index->Stats().bucket_bits, 0u);
  ASSERT_OK(index->Unregister(id_a));
  EXPECT_EQ(PostingsLeft(*index, {a, b}, id_a), 0u);
  EXPECT_TRUE(HasAllPostings(*index, b, id_b));  // the upgrade keeps its spans
}

TEST(IndexTest, RemoveExpiredRemovesDueDocumentsEarliestFirstAndNothingElse) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  const DocId late = index->Register(ExpiringRecord("late", 300), MakeFingerprint(3, 20, true),
                                     "text late")->id;
  const DocId early = index->Register(ExpiringRecord("early", 100), MakeFingerprint(1, 20, true),
                                      "text early")->id;
  const DocId mid = index->Register(ExpiringRecord("mid", 200), MakeFingerprint(2, 20, true),
                                    "text mid")->id;
  const DocId never = index->Register(MakeRecord("never"), MakeFingerprint(4, 20, true),
                                      "text never")->id;

  EXPECT_EQ(*index->RemoveExpired(99, 10), 0u);
  EXPECT_EQ(*index->RemoveExpired(250, 1), 1u);  // the earliest first
  EXPECT_TRUE(absl::IsNotFound(index->GetDocument(early).status()));
  EXPECT_TRUE(absl::IsNotFound(index->GetText(early).status()));
  EXPECT_TRUE(PostingsOf(*index, HashOf(1, 0), early).empty());
  EXPECT_OK(index->GetDocument(mid));
  EXPECT_EQ(*index->RemoveExpired(250, 10), 1u);
  EXPECT_TRUE(absl::IsNotFound(index->GetDocument(mid).status()));
  EXPECT_EQ(*index->RemoveExpired(250, 10), 0u);

  for (DocId id : {late, never}) EXPECT_OK(index->GetDocument(id));
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(3, 20, true), late));
  EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(4, 20, true), never));
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 2u);
  const IndexStats stats = index->Stats();
  EXPECT_EQ(stats.documents, 2u);
  EXPECT_EQ(stats.postings, 42u);
  EXPECT_EQ(stats.text_bytes, std::string("text late").size() + std::string("text never").size());
  // The external ids and texts of removed documents can be registered again.
  auto again = index->Register(ExpiringRecord("early", 1000), MakeFingerprint(1, 20, true), "");
  ASSERT_OK(again);
  EXPECT_TRUE(again->created);
  EXPECT_GT(again->id, never);
}

TEST(IndexTest, AnExpiredDocumentIsNoDuplicateNorEarlierRegistrationEvenBeforeItsSweep) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  auto at = [](DocumentRecord r, int64_t registered) {
    r.registered_unix_micros = registered;
    return r;
  };
  const DocumentFingerprint fp = MakeFingerprint(1, 20, true);
  ASSERT_OK_AND_ASSIGN(RegisterOutcome old,
                       index->Register(at(ExpiringRecord("essay", 200), 100), fp, "text"));
  // Before its expiry the same text, or the same external id, is the old document.
  ASSERT_OK_AND_ASSIGN(RegisterOutcome dup, index->Register(at(MakeRecord(""), 199), fp, "text"));
  EXPECT_FALSE(dup.created);
  EXPECT_EQ(dup.duplicate_of, old.id);
  ASSERT_OK_AND_ASSIGN(RegisterOutcome retry,
                       index->Register(at(MakeRecord("essay"), 199), MakeFingerprint(2, 20), ""));
  EXPECT_FALSE(retry.created);
  EXPECT_EQ(retry.id, old.id);
  // From its expiry on, not yet swept, a registration of either is a new document.
  ASSERT_OK_AND_ASSIGN(RegisterOutcome renewed,
                       index->Register(at(MakeRecord("essay"), 200), fp, "text"));
  EXPECT_TRUE(renewed.created);
  EXPECT_GT(renewed.id, old.id);
  EXPECT_OK(index->GetDocument(old.id));
  // The sweep removes the old document and leaves the maps to the new one.
  EXPECT_EQ(*index->RemoveExpired(200, 10), 1u);
  EXPECT_TRUE(absl::IsNotFound(index->GetDocument(old.id).status()));
  EXPECT_TRUE(HasAllPostings(*index, fp, renewed.id));
  ASSERT_OK_AND_ASSIGN(dup, index->Register(at(MakeRecord(""), 300), fp, "text"));
  EXPECT_EQ(dup.duplicate_of, renewed.id);
  ASSERT_OK_AND_ASSIGN(retry, index->Register(at(MakeRecord("essay"), 300), fp, ""));
  EXPECT_EQ(retry.id, renewed.id);
  EXPECT_EQ(index->Stats().documents, 1u);
}

TEST(IndexTest, ExpiredDocumentsListsDueDocumentsWithoutRemovingThem) {
  TempDir dir;
  auto index = OpenOrDie(Options(dir.Join("db")));
  const DocId b = index->Register(ExpiringRecord("b", 200), MakeFingerprint(2, 10), "")->id;
  const DocId a = index->Register(ExpiringRecord("a", 100), MakeFingerprint(1, 10), "")->id;
  ASSERT_OK(index->Register(ExpiringRecord("c", 300), MakeFingerprint(3, 10), ""));
  EXPECT_EQ(*index->ExpiredDocuments(250, 10), (std::vector<DocId>{a, b}));
  EXPECT_EQ(*index->ExpiredDocuments(250, 1), (std::vector<DocId>{a}));
  EXPECT_TRUE(index->ExpiredDocuments(99, 10)->empty());
  EXPECT_EQ(index->Stats().documents, 3u);
  ASSERT_OK(index->Unregister(a));
  EXPECT_EQ(*index->ExpiredDocuments(250, 10), (std::vector<DocId>{b}));
}

TEST(IndexTest, UnregisterTakesTheExpiryEntryAlongAndStaleEntriesAreSkipped) {
  TempDir dir;
  const std::string path = dir.Join("db");
  DocId kept;
  {
    auto index = OpenOrDie(Options(path));
    const DocId gone = index->Register(ExpiringRecord("gone", 100), MakeFingerprint(1, 10), "")->id;
    kept = index->Register(ExpiringRecord("kept", 200), MakeFingerprint(2, 10), "")->id;
    ASSERT_OK(index->Unregister(gone));
  }
  // An entry whose document a build without expiries removed: expiry 50, document 999.
  std::string stale = "expiry/";
  for (uint64_t v : {uint64_t{50}, uint64_t{999}}) {
    for (int i = 7; i >= 0; --i) stale.push_back(static_cast<char>(v >> (8 * i)));
  }
  OverwriteMeta(path, stale, "");
  auto index = OpenOrDie(Options(path));
  // A batch of one finds the stale entry first, drops it and goes on to the due document.
  EXPECT_EQ(*index->RemoveExpired(1000, 1), 1u);
  EXPECT_TRUE(absl::IsNotFound(index->GetDocument(kept).status()));
  EXPECT_EQ(*index->RemoveExpired(1000, 1), 0u);
  EXPECT_EQ(index->Stats().documents, 0u);
}

// Child side of the interrupted sweep: registers 12 documents expiring at 100..111 (ids 1..12)
// and 8 that do not expire by 500 (4 never, 4 at 10^15), all sharing kSharedHash, removes one
// batch of 5 expired documents, then is killed before the next batch.
TEST(IndexSweepCrashChild, RemoveOneBatchThenDie) {
  const char* dir = std::getenv("COPS_SWEEP_DIR");
  if (dir == nullptr) GTEST_SKIP() << "runs only as a child of ASweepKilledBetweenBatches...";
  auto index = OpenOrDie(Options(dir));
  ASSERT_NE(index, nullptr);
  for (uint64_t i = 1; i <= 20; ++i) {
    const int64_t expires = i <= 12 ? 99 + static_cast<int64_t>(i) : i <= 16 ? 0 : 1000000000000000;
    ASSERT_OK(index->Register(ExpiringRecord(std::to_string(i), expires),
                              MakeFingerprint(i, 30, true), "text " + std::to_string(i)));
  }
  ASSERT_EQ(*index->RemoveExpired(500, 5), 5u);
  raise(SIGKILL);
}

TEST(IndexTest, ASweepKilledBetweenBatchesResumesAndLosesNothingUnexpired) {
  TempDir dir;
  const std::string path = dir.Join("db");
  pid_t child = SpawnSelf("IndexSweepCrashChild.RemoveOneBatchThenDie",
                          {"COPS_SWEEP_DIR=" + path}, -1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

  auto index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
  auto present = [&](DocId id) { return index->GetDocument(id).ok(); };
  // The first batch (the five earliest expiries) is gone whole; the rest is whole.
  for (DocId id = 1; id <= 5; ++id) {
    EXPECT_FALSE(present(id)) << id;
    EXPECT_TRUE(PostingsOf(*index, HashOf(id, 0), id).empty()) << id;
  }
  for (DocId id = 6; id <= 20; ++id) {
    EXPECT_TRUE(present(id)) << id;
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(id, 30, true), id)) << id;
  }
  std::vector<PostingList> out;
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 15u);
  EXPECT_EQ(index->Stats().documents, 15u);

  // The next start's sweep resumes with the sixth expiry.
  EXPECT_EQ(*index->RemoveExpired(500, 5), 5u);
  EXPECT_FALSE(present(10));
  EXPECT_TRUE(present(11));
  EXPECT_EQ(*index->RemoveExpired(500, 5), 2u);
  EXPECT_EQ(*index->RemoveExpired(500, 5), 0u);
  for (DocId id = 13; id <= 20; ++id) {
    EXPECT_TRUE(HasAllPostings(*index, MakeFingerprint(id, 30, true), id)) << id;
  }
  ASSERT_OK(index->Lookup(std::vector<ChunkHash>{kSharedHash}, &out));
  EXPECT_EQ(out[0].doc_frequency, 8u);
  EXPECT_EQ(index->Stats().documents, 8u);
}

// Registers `docs` documents of 500 chunks from seed 900 on, flushed to SST files.
std::vector<std::pair<DocumentFingerprint, DocId>> RegisterFlushed(Index& index, int docs) {
  std::vector<std::pair<DocumentFingerprint, DocId>> out;
  for (int d = 0; d < docs; ++d) {
    DocumentFingerprint fp = MakeFingerprint(900 + d, 500);
    auto registered = index.Register(MakeRecord("warm" + std::to_string(d)), fp, "t");
    EXPECT_OK(registered);
    if (registered.ok()) out.emplace_back(std::move(fp), registered->id);
  }
  EXPECT_OK(index.Flush());
  return out;
}

// What the bucket families' SST files hold: entries, and how many of them are merge
// operands (every read of one merges it again).
std::pair<uint64_t, uint64_t> BucketEntriesAndOperands(const std::string& path) {
  uint64_t entries = 0, operands = 0;
  VisitFamilies(path, [&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* h) {
    if (h->GetName().rfind(index_layout::kBucketsCf, 0) != 0) return;
    rocksdb::TablePropertiesCollection tables;
    EXPECT_TRUE(db.GetPropertiesOfAllTables(h, &tables).ok());
    for (const auto& [file, props] : tables) {
      entries += props->num_entries;
      operands += props->num_merge_operands;
    }
  });
  return {entries, operands};
}

// A flush writes a batch's postings as merge operands; the compaction that ends a bulk load
// (and the idle one, the same call) leaves merged buckets, even when the last level was
// empty and its input could have been moved there as it was.
TEST(IndexTest, CompactedPostingsHoldMergedBucketsNotOperands) {
  TempDir dir;
  const std::string path = dir.Join("db");
  auto index = OpenOrDie(Options(path));
  ASSERT_NE(index, nullptr);
  ASSERT_OK(index->BeginBulkLoad());
  const std::vector<std::pair<DocumentFingerprint, DocId>> docs = RegisterFlushed(*index, 20);
  const auto [flushed_entries, flushed_operands] = BucketEntriesAndOperands(path);
  EXPECT_GT(flushed_operands, 0u);
  ASSERT_OK(index->EndBulkLoad());
  const auto [entries, operands] = BucketEntriesAndOperands(path);
  EXPECT_GT(entries, 0u);
  EXPECT_EQ(operands, 0u) << "of " << entries << " entries (flushed: " << flushed_operands << " of "
                          << flushed_entries << ")";
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
}

// One flush into an empty index is one level-0 file a shard with nothing under it: still
// due for the idle compaction, which leaves it merged in the last level.
TEST(IndexTest, IdleCompactionMergesASingleFlushWithNothingUnderIt) {
  TempDir dir;
  const std::string path = dir.Join("db");
  IndexOptions o = Options(path);
  o.idle_compaction_seconds = 1;
  o.cache_flushed_blocks = false;
  o.warm_after_compaction_fill = 0.9;  // and reads the new files into the cache after
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  DocumentFingerprint fp = MakeFingerprint(800, 200);
  auto out = index->Register(MakeRecord("single"), fp, "t");
  ASSERT_OK(out);
  ASSERT_OK(index->Flush());
  IndexStats s = index->Stats();
  ASSERT_EQ(s.postings_files_per_level[0], s.postings_shards);
  EXPECT_TRUE(s.idle_compaction_due);
  const uint64_t cached_before = s.block_cache_bytes;
  // A second without writes, then the compaction and the warm-up: waited for up to a minute.
  for (int i = 0;
       i < 600 && (index->Stats().idle_compaction_due || index->Stats().block_cache_warming); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  s = index->Stats();
  EXPECT_FALSE(s.idle_compaction_due);
  EXPECT_FALSE(s.block_cache_warming);
  EXPECT_EQ(s.postings_files_per_level[0], 0u);
  EXPECT_GE(s.block_cache_bytes, cached_before + s.postings_disk_bytes / 2)
      << "before " << cached_before << ", postings " << s.postings_disk_bytes;
  const auto [entries, operands] = BucketEntriesAndOperands(path);
  EXPECT_GT(entries, 0u);
  EXPECT_EQ(operands, 0u) << "of " << entries;
  EXPECT_TRUE(HasAllPostings(*index, fp, out->id));
}

class BlockCacheTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockCacheTest, WarmingReadsTheFilesIntoTheBlockCacheAndLookupsStayExact) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.block_cache = GetParam();
  std::vector<std::pair<DocumentFingerprint, DocId>> docs;
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    docs = RegisterFlushed(*index, 60);
  }
  auto index = OpenOrDie(o);  // a fresh cache
  ASSERT_NE(index, nullptr);
  const uint64_t before = index->Stats().block_cache_bytes;
  absl::StatusOr<uint64_t> cached = index->WarmBlockCache(1.0, [] { return false; });
  ASSERT_OK(cached);
  const IndexStats s = index->Stats();
  // Every postings block is in (uncompressed, so at least what the files hold compressed).
  EXPECT_GE(*cached, before + s.postings_disk_bytes / 2);
  EXPECT_EQ(s.block_cache_bytes, *cached);
  EXPECT_FALSE(s.block_cache_warming);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
}

INSTANTIATE_TEST_SUITE_P(Kinds, BlockCacheTest, ::testing::Values("lru", "hyper-clock"),
                         [](const auto& info) {
                           return info.param == "lru" ? std::string("Lru")
                                                      : std::string("HyperClock");
                         });

// IndexOptions::cache_flushed_blocks: what a flush writes is in the block cache before any
// lookup reads it, except during a bulk load; lookups stay exact either way.
TEST(IndexTest, FlushedBlocksGoToTheBlockCacheOutsideABulkLoad) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("off"));
  o.cache_flushed_blocks = false;
  uint64_t uncached = 0;
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    const uint64_t before = index->Stats().block_cache_bytes;
    RegisterFlushed(*index, 60);
    uncached = index->Stats().block_cache_bytes - before;
  }
  o = Options(dir.Join("on"));
  ASSERT_TRUE(o.cache_flushed_blocks);  // the default
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  uint64_t before = index->Stats().block_cache_bytes;
  std::vector<std::pair<DocumentFingerprint, DocId>> docs = RegisterFlushed(*index, 60);
  const uint64_t postings = index->Stats().postings_disk_bytes;
  EXPECT_GE(index->Stats().block_cache_bytes - before, uncached + postings / 2)
      << "uncached " << uncached;

  auto register_flushed = [&](uint64_t first) {
    for (uint64_t seed = first; seed < first + 60; ++seed) {
      DocumentFingerprint fp = MakeFingerprint(seed, 500);
      auto registered = index->Register(MakeRecord("more" + std::to_string(seed)), fp, "t");
      ASSERT_OK(registered);
      docs.emplace_back(std::move(fp), registered->id);
    }
    ASSERT_OK(index->Flush());
  };
  ASSERT_OK(index->BeginBulkLoad());
  before = index->Stats().block_cache_bytes;
  register_flushed(5000);
  EXPECT_LT(index->Stats().block_cache_bytes - before, postings / 4);
  ASSERT_OK(index->EndBulkLoad());  // its compaction's output is not cached either
  before = index->Stats().block_cache_bytes;
  register_flushed(6000);
  EXPECT_GE(index->Stats().block_cache_bytes - before, postings / 2);
  for (const auto& [fp, id] : docs) EXPECT_TRUE(HasAllPostings(*index, fp, id));
}

TEST(IndexTest, AnUnknownBlockCacheIsInvalid) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.block_cache = "clock";
  absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(o);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(index.status().message().find("\"clock\""), std::string::npos) << index.status();
}

TEST(IndexTest, WarmingStopsAtItsShareOfTheCacheOrWhenAsked) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  o.block_cache_bytes = 1 << 20;  // smaller than the postings
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    RegisterFlushed(*index, 200);
  }
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    ASSERT_GT(index->Stats().postings_disk_bytes, uint64_t{o.block_cache_bytes});
    absl::StatusOr<uint64_t> cached = index->WarmBlockCache(0.5, [] { return false; });
    ASSERT_OK(cached);
    // It stopped near half the capacity (checked every few thousand keys), short of evicting.
    EXPECT_GE(*cached, o.block_cache_bytes / 2);
    EXPECT_LT(*cached, o.block_cache_bytes);
  }
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  int asked = 0;
  absl::StatusOr<uint64_t> cached = index->WarmBlockCache(1.0, [&asked] { return ++asked > 0; });
  ASSERT_OK(cached);
  EXPECT_EQ(asked, 1);
  EXPECT_LT(*cached, o.block_cache_bytes / 2);
}

TEST(IndexTest, AWarmUpInTheBackgroundShowsInStatsAndEndsWithTheIndex) {
  TempDir dir;
  IndexOptions o = Options(dir.Join("db"));
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    RegisterFlushed(*index, 60);
  }
  {
    auto index = OpenOrDie(o);
    ASSERT_NE(index, nullptr);
    index->StartWarmingBlockCache(1.0);
    EXPECT_TRUE(index->Stats().block_cache_warming);  // from the call on
    for (int i = 0; i < 3000 && index->Stats().block_cache_warming; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const IndexStats s = index->Stats();
    EXPECT_FALSE(s.block_cache_warming);
    EXPECT_GE(s.block_cache_bytes, s.postings_disk_bytes / 2);
  }
  // Closed while warming: the warm-up stops and the index closes cleanly.
  auto index = OpenOrDie(o);
  ASSERT_NE(index, nullptr);
  index->StartWarmingBlockCache(1.0);
  index.reset();
  EXPECT_NE(OpenOrDie(o), nullptr);
}

}  // namespace
}  // namespace cops
