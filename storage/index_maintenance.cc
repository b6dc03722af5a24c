// The Index's maintenance: statistics, flushes and compactions, bulk-load mode, block-cache
// warm-up and snapshots. None of it changes what the index holds.

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "storage/index.h"
#include "storage/index_rep.h"
#include "storage/rocks_checkpoint.h"
#include "storage/rocks_status.h"

namespace cops {

IndexStats Index::Stats() const {
  const IndexRep& r = *rep_;
  IndexStats s;
  s.documents = r.documents_count.load(std::memory_order_relaxed);
  s.postings = r.postings_count.load(std::memory_order_relaxed);
  s.text_bytes = r.text_bytes.load(std::memory_order_relaxed);
  s.block_cache_bytes = r.db->cache().GetUsage();
  absl::ReaderMutexLock open(&r.db_mu);
  if (!r.db->is_open()) return s;  // closed after a write error: the counters only
  r.postings.AddStats(&s);
  {
    absl::MutexLock lock(&r.filter_mu);
    s.hash_filter_filling = s.hash_filter_bytes > 0 && !r.filter_done;
  }
  rocksdb::DB& db = r.db->db();
  uint64_t v = 0;
  for (auto* h : r.db->all()) {
    if (db.GetIntProperty(h, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) s.disk_bytes += v;
    if (db.GetIntProperty(h, rocksdb::DB::Properties::kEstimatePendingCompactionBytes, &v)) {
      s.pending_compaction_bytes += v;
    }
  }
  if (r.db->verify() != nullptr &&
      db.GetIntProperty(r.db->verify(), rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
    s.verify_disk_bytes = v;
  }
  if (r.db->stem_pairs() != nullptr &&
      db.GetIntProperty(r.db->stem_pairs(), rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
    s.stem_pairs_disk_bytes = v;
  }
  s.stem_pairs_from_cache = r.stem_pairs.common_pairs_skipped();
  s.block_cache_warming = r.warming.load(std::memory_order_acquire);
  s.idle_compaction_due = r.IdleCompactionDue();
  if (db.GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &v)) {
    s.running_compactions = v;
  }
  rocksdb::VectorLogPtr wals;
  if (!r.db->options().read_only && db.GetSortedWalFiles(wals).ok()) {
    for (const auto& w : wals) s.disk_bytes += w->SizeFileBytes();
  }
  return s;
}

absl::StatusOr<uint64_t> IndexRep::WarmBlockCache(double fill,
                                                  const std::function<bool()>& stop) const {
  rocksdb::Cache& cache = db->cache();
  const auto target = static_cast<uint64_t>(fill * static_cast<double>(cache.GetCapacity()));
  // The blocks every check probes first (postings), then the candidates' grams and records.
  std::vector<rocksdb::ColumnFamilyHandle*> order(db->shards().begin(), db->shards().end());
  if (db->verify() != nullptr) order.push_back(db->verify());
  order.push_back(db->cf(index_layout::kDocuments));
  rocksdb::ReadOptions read;
  read.fill_cache = true;
  read.readahead_size = 2u << 20;  // the files are read in order: large reads
  // Asked every this many keys: a few milliseconds of reading.
  constexpr uint32_t kKeysPerStep = 4096;
  for (rocksdb::ColumnFamilyHandle* family : order) {
    std::unique_ptr<rocksdb::Iterator> it(db->db().NewIterator(read, family));
    uint32_t keys = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (++keys % kKeysPerStep == 0 && (cache.GetUsage() >= target || stop())) {
        return cache.GetUsage();
      }
    }
    COPS_RETURN_IF_ERROR(FromRocks(it->status(), "warming the block cache"));
  }
  return cache.GetUsage();
}

absl::Status Index::WaitForHashFilter() const {
  IndexRep& r = *rep_;
  absl::MutexLock lock(&r.filter_mu);
  r.filter_mu.Await(absl::Condition(&r.filter_done));
  return r.filter_status;
}

absl::StatusOr<uint64_t> Index::WarmBlockCache(double fill,
                                               const std::function<bool()>& stop) const {
  return rep_->WarmBlockCache(fill, stop);
}

void IndexRep::StartWarming(double fill) {
  IndexRep& r = *this;
  if (r.warming.exchange(true, std::memory_order_acq_rel)) return;
  if (r.warm_thread.joinable()) r.warm_thread.join();  // an earlier warm-up, finished
  r.warm_thread = std::thread([&r, fill] {
    // Linux applies a nice value to the one thread its id names.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    // A failed read ends the warm-up early (Stats() shows what it cached); the checks then
    // read the files, as without one.
    {
      absl::ReaderMutexLock open(&r.db_mu);
      if (r.db->is_open()) {
        (void)r.WarmBlockCache(fill,
                               [&r] { return r.stop_warming.load(std::memory_order_acquire); });
      }
    }
    r.warming.store(false, std::memory_order_release);
  });
}

void Index::StartWarmingBlockCache(double fill) { rep_->StartWarming(fill); }

absl::Status Index::Flush() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->db->FlushAll();
}

absl::Status Index::Compact() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  COPS_RETURN_IF_ERROR(rep_->db->FlushAll());
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  c.exclusive_manual_compaction = false;  // the column families side by side
  return rep_->db->CompactSideBySide(c, rep_->db->all(),
                                     "compacting index " + rep_->db->options().path);
}

absl::Status Index::BeginBulkLoad() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  return rep_->postings.BeginBulkLoad();
}

absl::Status Index::EndBulkLoad() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->db->CheckWritable());
  COPS_RETURN_IF_ERROR(rep_->postings.EndBulkLoad());
  // Its compaction wrote the postings into new files, none of their blocks cached.
  const double fill = rep_->db->options().warm_after_compaction_fill;
  if (fill > 0) rep_->StartWarming(fill);
  return absl::OkStatus();
}

bool Index::bulk_loading() const { return rep_->postings.bulk_loading(); }

void Index::AbortManualCompactions() {
  if (rep_->db->options().read_only) return;
  rep_->manual_compactions_aborted.store(true);
  absl::ReaderMutexLock open(&rep_->db_mu);
  if (rep_->db->is_open()) rep_->db->db().DisableManualCompaction();
}

absl::Status Index::WaitForCompactions(std::chrono::milliseconds poll) {
  for (;;) {
    COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
    uint64_t pending = 0, running = 0;
    {
      // Not held while sleeping: a reopen after a write error may come in between.
      absl::ReaderMutexLock open(&rep_->db_mu);
      COPS_RETURN_IF_ERROR(rep_->CheckOpen());
      rocksdb::DB& db = rep_->db->db();
      if (!db.GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &running)) {
        return absl::InternalError("RocksDB does not report running compactions");
      }
      for (auto* h : rep_->db->all()) {
        uint64_t p = 0;
        if (db.GetIntProperty(h, rocksdb::DB::Properties::kCompactionPending, &p)) pending += p;
      }
    }
    // During a bulk load RocksDB reports compactions pending that it will not run until
    // EndBulkLoad: only the running ones are waited for.
    if ((pending == 0 || rep_->postings.bulk_loading()) && running == 0) return absl::OkStatus();
    std::this_thread::sleep_for(poll);
  }
}

absl::Status Index::CreateSnapshot(const std::string& dir) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return CreateRocksCheckpoint(rep_->db->db(), dir);
}

}  // namespace cops
