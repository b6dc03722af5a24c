#ifndef COPS_STORAGE_INDEX_H_
#define COPS_STORAGE_INDEX_H_

// The persistent inverted index on RocksDB: chunk hash -> postings, document records,
// exact-duplicate map per collection, optional texts, and meta (schema version,
// ChunkingParams). A facade over parts that each own their column families:
// PostingsStore (postings), DocumentStore (records, chunk lists, texts, grams),
// DuplicateMaps (external ids, duplicate map, collections), ExpiryQueue, IndexMeta, on one
// IndexDb (opening, column-family options); registrations are written by
// storage/index_write.cc, maintenance (stats, compaction, bulk load, cache warming,
// snapshots) by storage/index_maintenance.cc.
// On-disk layout: docs/storage-format.md.
//
// Thread-safety: an Index is safe for concurrent use from many threads; registrations and
// unregistrations are atomic (one WriteBatch each) and checks never see half of one.
//
// A write that fails on a full disk gives RESOURCE_EXHAUSTED and stores nothing; the next
// write, once a probe file fits on the disk again, reopens the database in place (calls wait
// meanwhile) and goes on: no restart (docs/storage-format.md).

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/fingerprint.h"
#include "core/match.h"
#include "core/params.h"
#include "storage/document_record.h"

namespace rocksdb {
class DB;
class Env;
}

namespace cops {

class IndexRep;

// Finds again, at removal, the chunk hashes of a document the index keeps no chunk list for:
// recomputed from its stored text under the index's key (the key is not storage's to hold;
// engine/copy_detector.h, MakeChunkRecomputer, runs the registration pipeline). With one,
// a registration that stores its text and is Reproducible keeps no list of its distinct
// hashes (8 bytes each; docs/storage-format.md).
//
// Thread-safety: implementations are called from any thread at once.
class ChunkRecomputer {
 public:
  virtual ~ChunkRecomputer() = default;
  // Whether Recompute will give back exactly the chunk hashes registered for a document of
  // `record` (as it will be stored) and stored `text`, in this build and in later ones.
  // Asked once per registration that stores its text; false keeps its chunk list.
  virtual bool Reproducible(const DocumentRecord& record, std::string_view text) const = 0;
  // Sets `hashes` to the chunk hashes (any order, repeats allowed) of the document stored as
  // `record` with `text`. DATA_LOSS naming the document when the text no longer yields what
  // was registered (its digest or chunk counts differ); the removal then fails unchanged.
  virtual absl::Status Recompute(const DocumentRecord& record, std::string_view text,
                                 std::vector<ChunkHash>* hashes) const = 0;
};

struct IndexOptions {
  std::string path;  // RocksDB directory
  // The parameters the index is (or will be) built with. Opening an existing index under
  // other parameters fails with FAILED_PRECONDITION naming the differing fields; one of a
  // newer schema than this build's, with FAILED_PRECONDITION naming both. A writable open
  // upgrades an index of an older schema in place (docs/storage-format.md).
  ChunkingParams params;
  bool create_if_missing = true;
  // Opens without writing (e.g. a snapshot used by a mail gateway); writes then fail.
  bool read_only = false;
  // fsync the WAL on every registration (power-loss durability); the WAL alone already
  // makes every acknowledged write survive a process crash.
  bool sync_writes = false;
  // Free space, MiB, that writes leave on the index's file system: below it every write is
  // refused with RESOURCE_EXHAUSTED (reads and checks go on) and writes resume by themselves
  // once space is freed. RocksDB 7.8 can abort the process on a write that meets a full
  // disk, so the index never lets its own writes get there; the reserve also leaves room for
  // the flushes and compactions of what was acknowledged. 0 = no reserve.
  uint64_t min_free_disk_mb = 256;
  // Free bytes of the file system holding `path` (statvfs when empty); for tests.
  std::function<absl::StatusOr<uint64_t>(const std::string& path)> free_disk_bytes;
  bool store_texts = true;                       // keep each document's original text
  // Recomputes the chunk hashes of a document registered without a chunk list, and decides
  // which registrations keep none (ChunkRecomputer). nullptr: every document keeps its
  // list, and removing one without a list is DATA_LOSS. Once a document without a list is
  // written the index records schema 5, which builds before it refuse to open.
  std::shared_ptr<const ChunkRecomputer> chunk_recomputer;
  // Shared LRU block cache for data blocks. The postings' bloom filters and indexes are held
  // outside it by the open SST files (about 1.25 bytes per distinct chunk key with 10 bloom
  // bits, plus ~0.15% of the postings' size with 16 KB blocks).
  size_t block_cache_bytes = 256ull << 20;
  // The block cache's implementation: "lru" (RocksDB's LRUCache) or "hyper-clock" (its
  // lock-free HyperClockCache, sized for entries of postings_block_kb). At 10^6 documents
  // hyper-clock spent 8-10% less CPU on checks that find a copy (docs/performance.md);
  // RocksDB 7.8 calls it experimental, so LRU stays the default.
  std::string block_cache = "lru";
  // Put the blocks a memtable flush writes into the block cache (RocksDB's
  // prepopulate_block_cache = kFlushOnly) for the families a check reads: postings, grams,
  // document records; not stored texts, not compaction output. A check right after a
  // registration burst then finds its blocks there instead of reading and decompressing
  // them (a mail gateway checking messages against what was just registered): a copied
  // 2.7 KB message against 10^4 freshly registered cost copsd ~25% less CPU on a first
  // pass (docs/performance.md, "Mail gateway"). The price: flushes copy their blocks into
  // the cache (~7% more registration CPU), which may push out older blocks checks read.
  bool cache_flushed_blocks = true;
  // Above 0: once an idle compaction or a bulk load's end has rewritten the postings into
  // new files (whose blocks are not in the cache), read them in again up to this share of
  // the cache, as StartWarmingBlockCache does. copsd sets it with --warm-cache.
  double warm_after_compaction_fill = 0;
  // Write buffer of each column family (each postings shard has its own).
  size_t write_buffer_bytes = 64ull << 20;
  // Memtables each postings shard's write buffer is cut into (1-64); they are flushed
  // together, merged into one level-0 file of about write_buffer_bytes. A registration
  // inserts its postings into the active memtable's skip list in key order, each insert
  // resuming from the previous one and climbing as far as the gap to its neighbour: the
  // fewer entries the active memtable holds, the fewer (cache-missing) nodes an insert
  // visits, so registration costs less CPU than with one memtable of 64 MiB
  // (docs/performance.md, "Registration decisions"). A lookup probes each unflushed
  // memtable's bloom filter.
  uint32_t postings_memtables = 8;
  int bloom_bits_per_key = 10;                   // postings bloom filter (0 = none)
  // Compression of the postings' SST files: "lz4", "zstd", "snappy" or "none" (stored texts
  // always use zstd when this RocksDB has it). INVALID_ARGUMENT at Open when this build of
  // RocksDB lacks it.
  std::string postings_compression = "lz4";
  // Data block size of the per-hash postings' SST files, in KiB (1-256). Larger blocks make
  // a smaller block index (searched by every probe); a lookup that hits reads and decompresses
  // a whole block. Each file records its own, so a change applies to files written
  // afterwards. The bucket families use 4 KiB blocks (storage/index_db.cc, BucketTableOptions).
  uint32_t postings_block_kb = 16;
  // The postings layout of a new index: bucketed (schema 4: the postings of all hashes that
  // share their top bits in one value, ~10-14 bytes per posting instead of ~23) or one key
  // per hash (schema 3, what builds before schema 4 write; kept for tests of the upgrade). An
  // existing index keeps its layout until Index::UpgradePostings rewrites it.
  bool bucketed_postings = true;
  // How many documents a new index is expected to hold: it picks the bucket bits (about four
  // buckets per document, ~32 postings each at that size; storage/bucket_codec.h), so that a
  // bucket amortises its key and a lookup decodes little. An index that grows 10x beyond it
  // decodes ~10x larger buckets per lookup. Used only when the index is created.
  uint64_t expected_documents = 1'000'000;
  // Bucket bits and stored hash bits of a new bucketed index (0 = from expected_documents,
  // and new_index_hash_bits). When set, opening an existing bucketed index recorded with
  // other values fails with FAILED_PRECONDITION naming both, as for the chunking parameters.
  uint32_t postings_bucket_bits = 0;
  uint32_t postings_hash_bits = 0;
  // The stored hash bits of a new bucketed index when postings_hash_bits is 0; an existing
  // index keeps its own whatever this says (copsd: 40).
  uint32_t new_index_hash_bits = 64;
  // Bucketed postings: bits per stored hash of the in-memory filter a lookup asks before it
  // reads a bucket (storage/stored_hash_filter.h; 0 = none). Most looked-up hashes are stored
  // nowhere, and without it each costs a bucket read; at 10 bits ~1% of them still do. Sized
  // for the postings stored at open or for expected_documents, whichever is larger (10 bits:
  // ~160 bytes per expected document, in memory touched only as hashes arrive); filled from
  // the buckets on a thread of its own after every open, asked once full
  // (Stats().hash_filter_ready).
  uint32_t hash_filter_bits = 10;
  // Largest number of postings kept per chunk hash; beyond it, doc_frequency still counts
  // documents but the list is not extended (the chunk is "common"). 0 = no limit.
  uint32_t max_postings_per_chunk = 1000;
  // Background flush/compaction threads, and threads one compaction may split into. With
  // one compaction thread a bulk load at 10^5+ documents outruns compaction and RocksDB
  // stops writes for level-0 files while a core idles; four jobs (one flush, three
  // compactions) and two subcompactions keep both cores of a 2-core machine busy.
  int background_jobs = 4;
  int max_subcompactions = 2;
  // Once no write has come for this many seconds, the postings are compacted into one sorted
  // run per shard if a lookup would read several (level-0 files, or files on two levels: a
  // bucket's values there are merge operands, merged on every read until compacted
  // together), on a thread of its own at low priority; checks go on meanwhile. At 10^6
  // documents registered without a bulk load, a copied check then costs a fifth fewer
  // instructions (docs/performance.md). Not while a bulk load runs (its end compacts);
  // never on a read-only index. 0 = never.
  uint32_t idle_compaction_seconds = 0;
  // Column families the postings are split over by the top bits of the chunk hash: 1, 2
  // or 4. Each is its own LSM tree with its own memtables (write_buffer_bytes each), so
  // their flushes and compactions run in parallel. Used when the index is created; an
  // existing index keeps the count it was created with.
  uint32_t postings_shards = 2;
  // Threads one Lookup batch may use, the caller included (1 = the caller alone). A batch
  // of at least 512 hashes is cut into up to this many parts of consecutive sorted hashes,
  // looked up at once under one snapshot; the caller runs every part no idle worker has
  // started. A batch is split only while no other Lookup is running, so concurrent checks
  // (cores already busy) run as before. Lowers the latency of one check on an otherwise
  // idle core, not the throughput of many. Workers: lookup_threads - 1, idle between
  // lookups.
  int lookup_threads = 2;
  // Read SST files through mmap instead of pread: a block of an uncompressed file is then
  // read in place (no system call, no copy); compressed blocks are still decompressed into
  // the block cache. The files stay mapped while open (address space, not memory).
  bool mmap_reads = false;
  // RocksDB's access to files and threads; not owned, must outlive the Index. nullptr =
  // rocksdb::Env::Default(). Tests pass one that simulates power loss
  // (tests/storage/fault_file_system.h).
  rocksdb::Env* env = nullptr;
};

struct RegisterOutcome {
  DocId id = 0;
  bool created = false;  // false: an existing document was returned (retry or duplicate)
  // Set when the canonical text equals that of a document already registered in the same
  // collection: that document's id is returned in `id` too and no postings are added. A
  // document of another collection is never returned.
  std::optional<DocId> duplicate_of;
};

// One document of Index::RegisterBatch. The pointers must stay valid during the call.
struct RegisterItem {
  const DocumentRecord* record = nullptr;
  const DocumentFingerprint* fp = nullptr;
  std::string_view text;
};

struct DocumentPage {
  std::vector<DocumentRecord> documents;
  std::string next_page_token;  // empty at the end
};

struct IndexStats {
  uint64_t documents = 0;
  uint64_t postings = 0;
  uint64_t chunk_keys = 0;  // estimated keys of the postings: distinct hashes, or buckets
  uint32_t bucket_bits = 0;  // bucketed postings (schema 4): the layout's bucket bits; 0 = per hash
  uint32_t hash_bits = 0;
  uint64_t disk_bytes = 0;  // all SST files and WAL files of the index
  uint64_t text_bytes = 0;  // stored texts, uncompressed
  uint64_t postings_disk_bytes = 0;  // SST files of the postings column families
  uint64_t verify_disk_bytes = 0;    // SST files of the verification grams
  uint64_t stem_pairs_disk_bytes = 0;  // SST files of the content-stem pairs
  // Looked-up content-stem pairs that the cache of common pairs answered without a read
  // (storage/stem_pair_store.h, CommonPairCache), since the index opened.
  uint64_t stem_pairs_from_cache = 0;
  // Shape of the postings LSM trees: SST files at each level (0..6, summed over the
  // shards), and the compaction work RocksDB estimates it still has to do (bytes to
  // rewrite, compactions running). A lookup probes every level-0 file of its hash's shard
  // and one file per other non-empty level.
  std::vector<uint32_t> postings_files_per_level;
  uint64_t pending_compaction_bytes = 0;
  uint64_t running_compactions = 0;
  uint32_t postings_shards = 1;  // column families the postings are split over
  uint64_t block_cache_bytes = 0;  // what the block cache holds now
  bool block_cache_warming = false;  // StartWarmingBlockCache's reading is under way
  // Bucketed postings: the filter of stored hashes (IndexOptions::hash_filter_bits), its
  // memory (mapped; touched as hashes arrive) and whether lookups ask it yet (filled).
  uint64_t hash_filter_bytes = 0;
  bool hash_filter_ready = false;
  bool hash_filter_filling = false;  // being filled after the open (not failed, not done)
  // IndexOptions::idle_compaction_seconds: the postings are in several sorted runs, to be
  // compacted once writes are idle (or being compacted).
  bool idle_compaction_due = false;
};

class Index {
 public:
  static absl::StatusOr<std::unique_ptr<Index>> Open(const IndexOptions& options);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  // Atomically stores `record` (its id is assigned) and the postings of `fp`.
  // A record whose non-empty external_id (within its collection) is already registered
  // returns that document (created=false). Text whose sha256 is already registered in the
  // record's collection returns the existing id with duplicate_of set; the same text in
  // another collection is registered anew. `text` is stored when store_texts is on.
  //
  // `log_sequence` != 0 applies an event of the registration log (replication/): the
  // sequence is written as AppliedLogSequence() in the same WriteBatch, also when the
  // outcome creates nothing (a retry or duplicate). ABORTED, with the index unchanged, when
  // log_sequence <= AppliedLogSequence() (the event was applied before).
  absl::StatusOr<RegisterOutcome> Register(const DocumentRecord& record,
                                           const DocumentFingerprint& fp,
                                           std::string_view text, uint64_t log_sequence = 0);

  // Registers several documents with one atomic WriteBatch, with the outcome of each as if
  // Register() had been called for them in order (an external id or text repeated inside
  // the batch resolves to the earlier document). The postings of all documents are written
  // in chunk-hash order, which makes RocksDB's memtable inserts much cheaper than one batch
  // per document (docs/performance.md, "Registration decisions"). out->at(i) is
  // items[i]'s outcome; an item with invalid input fails alone. The returned status is not
  // OK only when the write itself failed: then no document of the batch was stored.
  absl::Status RegisterBatch(std::span<const RegisterItem> items,
                             std::vector<absl::StatusOr<RegisterOutcome>>* out);

  // Registers under `record.id` (REQUIRES: != 0) keeping the record's fields (owner,
  // registration time, format, size) and taking sha256 and chunk counts from `fp`: how a key
  // rotation re-keys a document into a new index generation under the same id. The next
  // assigned id is raised above record.id. ALREADY_EXISTS when the id, its external id or
  // its text is already registered in its collection; the index is then unchanged.
  absl::Status RegisterAs(const DocumentRecord& record, const DocumentFingerprint& fp,
                          std::string_view text);

  // The id the next Register() will assign (ids are never reused).
  DocId NextDocId() const;
  // Makes the next assigned id at least `next` (never lowers it).
  absl::Status RaiseNextDocId(DocId next);

  // Atomically removes the document, its postings, text and duplicate-map entry.
  // NOT_FOUND when no such document. `log_sequence` != 0: as for Register (a NOT_FOUND
  // still records the sequence). A document kept without a chunk list has its hashes
  // recomputed from its text (IndexOptions::chunk_recomputer) before the writer lock is
  // taken; DATA_LOSS naming it, with nothing removed, when they cannot be.
  absl::Status Unregister(DocId id, uint64_t log_sequence = 0);

  // The registration-log sequence of the last event applied to this index (0 = none): every
  // event at or below it is reflected in the index, none above it.
  uint64_t AppliedLogSequence() const;
  // Records `log_sequence` as applied without changing any document: an event of the log
  // that is a no-op here (e.g. a document that fails to convert). ABORTED as for Register.
  absl::Status SkipLogSequence(uint64_t log_sequence);
  // The identity of the log stream whose events this index applied (replication/: the
  // stream's name and creation time), "" when none is recorded; recorded by the applier
  // before it applies the stream's first event, so that a stream deleted and created anew
  // under the same name is told apart.
  absl::StatusOr<std::string> LogStreamIdentity() const;
  absl::Status RecordLogStreamIdentity(std::string_view identity);

  // Removes, in one atomic write, up to `max_documents` (>= 1) of the documents whose
  // expiry is at or before `now_unix_micros`, earliest expiry first, each as Unregister()
  // would (hashes recomputed under the writer lock: a background sweep, not a request);
  // returns how many were removed, 0 when none is due (call again until then).
  // Expiries are kept in expiry order next to the records (docs/storage-format.md), so a
  // call reads only the documents it removes. A process killed between two calls leaves
  // every document either whole or gone, and the next call resumes where the last one
  // stopped.
  absl::StatusOr<size_t> RemoveExpired(int64_t now_unix_micros, size_t max_documents);
  // The ids of up to `limit` documents whose expiry is at or before `now_unix_micros`,
  // earliest expiry first, without removing them (a registration log unregisters them
  // instead: server/retention_sweeper.h). Reads only the entries and records it returns.
  absl::StatusOr<std::vector<DocId>> ExpiredDocuments(int64_t now_unix_micros,
                                                      size_t limit) const;

  // NOT_FOUND when no such document.
  absl::StatusOr<DocumentRecord> GetDocument(DocId id) const;
  // One batched read; absent documents yield std::nullopt.
  absl::Status GetDocuments(std::span<const DocId> ids,
                            std::vector<std::optional<DocumentRecord>>* out) const;
  // NOT_FOUND when no text is stored for the document.
  absl::StatusOr<std::string> GetText(DocId id) const;
  // One batched read of verification grams (DocumentFingerprint::grams as registered):
  // out->at(i) is empty for an unknown document or an index without verification.
  absl::Status GetGrams(std::span<const DocId> ids,
                        std::vector<std::vector<uint32_t>>* out) const;

  // Content-stem pairs (ChunkingParams::stem_pairs, storage/stem_pair_store.h): out->at(i)
  // holds the documents holding pairs[i], ascending, when fewer than `max_documents` (>= 1)
  // do, else nothing; one iterator, one snapshot. false, `out` untouched, when the index
  // keeps no pairs (created without them).
  absl::StatusOr<bool> LookupStemPairs(std::span<const uint32_t> pairs, uint32_t max_documents,
                                       std::vector<std::vector<DocId>>* out) const;
  // out->at(i) holds the pairs of ids[i] in its text's order; empty when it keeps none, was
  // registered before the order was kept, or the index keeps no pairs. One MultiGet.
  absl::Status GetStemPairOrder(std::span<const DocId> ids,
                                std::vector<std::vector<uint32_t>>* out) const;

  // Documents in id order, starting after `page_token` ("" = from the start).
  // INVALID_ARGUMENT on a malformed token. page_size is clamped to [1, 1000].
  absl::StatusOr<DocumentPage> ListDocuments(std::string_view page_token, size_t page_size,
                                             std::string_view collection = {}) const;

  // One MultiGet for all hashes; out->at(i) holds the postings of hashes[i] (empty when
  // unknown). Never scans.
  absl::Status Lookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out) const;

  // The collections that hold at least one document, sorted; one seek per collection.
  // FAILED_PRECONDITION on an index of schema 1 opened read-only (not yet upgraded).
  absl::StatusOr<std::vector<std::string>> Collections() const;
  // Whether `collection` holds at least one document; one seek. FAILED_PRECONDITION as
  // Collections().
  absl::StatusOr<bool> HasCollection(std::string_view collection) const;

  IndexStats Stats() const;

  // Writes all memtables to SST files (maintenance, benchmarks; never needed for
  // durability, which the WAL provides).
  absl::Status Flush();
  // Frees the buffers writers keep between writes (a registration window's write batch and
  // postings, ~70 MB after windows of 4,096 documents of 4 KB); the next write allocates
  // them again. copsd calls it once quiet, before it trims the heap.
  void ReleaseWriteBuffers();
  // Flushes, then compacts every column family to its smallest form (slow on big indexes;
  // for maintenance and for measuring bytes on disk).
  absl::Status Compact();
  // Reads the index into the block cache, the blocks every check probes first (postings),
  // then the candidates' grams and records, until the cache holds `fill` of its capacity,
  // every block is in, or `stop` returns true (asked every few thousand keys). A server just
  // started answers checks meanwhile; a check then no longer reads and decompresses the
  // postings block of each matched chunk from the files (docs/performance.md, "Checks").
  // Returns the bytes the cache holds at the end. Safe to run beside any other call.
  absl::StatusOr<uint64_t> WarmBlockCache(double fill, const std::function<bool()>& stop) const;
  // WarmBlockCache on a thread of its own at low priority (on a busy machine the warm-up
  // waits, not the checks), stopped when the index closes; Stats().block_cache_warming is
  // true from this call until it ends. Does nothing while one is under way. A failure is
  // not an error of the index: the checks read the files as they would have.
  void StartWarmingBlockCache(double fill);
  // Waits until the thread Open started to fill the bucketed postings' filter of stored
  // hashes (IndexOptions::hash_filter_bits) has read every bucket; returns its outcome
  // (OK at once without such a filter; DATA_LOSS on a malformed bucket: lookups then read
  // every bucket). Tests and benchmarks; Stats().hash_filter_ready says the same.
  absl::Status WaitForHashFilter() const;
  // Waits until RocksDB has no compaction pending or running (the tree has settled after
  // a large load), polling every `poll`; during a bulk load (BeginBulkLoad), until none is
  // running. Benchmarks and maintenance.
  absl::Status WaitForCompactions(std::chrono::milliseconds poll = std::chrono::milliseconds(200));

  // Bulk loading, for importing a large corpus. While it is on, RocksDB does not compact the
  // postings on its own and never slows writes for level-0 files: each flushed memtable
  // stays a level-0 file, so a posting is written twice in all (flush, then the one
  // compaction EndBulkLoad runs) instead of once per LSM level, which is what bounds a
  // large load on a small machine (docs/performance.md, "Bulk import"). The price: every
  // lookup probes each level-0 file's bloom filter, so checks slow down as the import grows
  // with the number of level-0 files, and the index needs free disk space for a second
  // copy of what was loaded until EndBulkLoad finishes. Registrations, unregistrations and
  // checks all stay correct meanwhile.
  //
  // EndBulkLoad flushes, compacts the postings into the lower levels (blocks until done;
  // on a big import this takes minutes), then turns automatic compaction back on.
  // The mode is not persisted: an index reopened after a crash mid-import compacts on its
  // own. FAILED_PRECONDITION on a read-only index; BeginBulkLoad twice, or EndBulkLoad
  // without BeginBulkLoad, is a no-op.
  absl::Status BeginBulkLoad();
  absl::Status EndBulkLoad();
  bool bulk_loading() const;
  // For a process that is stopping: a running EndBulkLoad or Compact returns ABORTED soon
  // (RocksDB abandons the manual compaction; automatic compaction redoes it after the next
  // open), and later ones fail the same way.
  void AbortManualCompactions();

  // Rewrites the per-hash postings of the index at options.path (schema 2 or 3, closed: no
  // other process may have it open) into the bucketed layout of schema 4 (the layout from
  // `options` as for a new index), in place: the buckets are written to new column
  // families, then one synced write records schema 4 and the layout, then the old postings
  // are dropped. A crash before that write leaves the old index as it was (the next run
  // starts over), one after it a bucketed index (the next run drops what is left of the
  // old postings). Every posting, document frequency and capped count is kept. Returns
  // the number of chunk hashes rewritten (0 for an index already bucketed).
  // FAILED_PRECONDITION for read_only options.
  static absl::StatusOr<uint64_t> UpgradePostings(const IndexOptions& options);

  // Writes a consistent copy of the live index to `dir` (must not exist; its parent must), a
  // RocksDB checkpoint (storage/rocks_checkpoint.h) that opens as an index of its own, also
  // read_only by another process. A complete data directory: storage/snapshot.h.
  absl::Status CreateSnapshot(const std::string& dir) const;

  const ChunkingParams& params() const;

 private:
  // The parts, each owning its column families (storage/index_rep.h).
  explicit Index(std::unique_ptr<IndexRep> rep);
  std::unique_ptr<IndexRep> rep_;
};

}  // namespace cops

#endif  // COPS_STORAGE_INDEX_H_
