#ifndef COPS_MILTER_LOCAL_CHECKER_H_
#define COPS_MILTER_LOCAL_CHECKER_H_

// cops-milter's in-process checks (--data-dir): a copy of copsd's data directory opened
// read-only, and copsd's own check pipeline (CopyDetector::Check, its reply filled by
// protocol/check_reply.h) run in the connection's thread, without a gRPC hop to copsd.
//
// The directory is a snapshot (`cops admin snapshot`, storage/snapshot.h), a copy of one, or
// the data directory of a copsd running on the same host. It is read as it was when opened:
// RocksDB's read-only open replays the WAL and keeps every SST file open, so copsd's later
// compactions do not disturb it, and later registrations are not seen until the milter
// reopens it (LocalIndex::Reopen; cops-milter --reopen-s). The live generation's key comes
// from its key file in the directory, or for generation 0, as copsd's --key-file, from a file
// given outside it; never from the environment or the command line.
//
// What copsd's service adds around a check does not apply here: there is no caller to
// authorize, no per-principal floors or rate, no audit trail, and no template collections
// (they live in the access store, which is not read): a match with a document of a template
// collection counts like any other. A collection a rule names must hold a document, as
// copsd requires (NOT_FOUND in the reply otherwise).
//
// Thread-safety: LocalIndex is safe for concurrent use (Check from every connection thread,
// Reopen from one); a LocalPartChecker is used by one thread at a time.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/params.h"
#include "milter/message_check.h"
#include "proto/cops.pb.h"
#include "storage/index.h"

namespace cops {

struct LocalIndexOptions {
  std::string data_dir;  // a copsd data directory (see above); empty = gRPC mode
  // A file of 32 hex digits: generation 0's key when the directory does not hold it
  // (copsd's --key-file). FAILED_PRECONDITION with a rotated directory, whose key is its own.
  std::string key_file;
  // The index's block cache, bytes (IndexOptions::block_cache_bytes).
  size_t block_cache_bytes = 256ull << 20;
  // Share of the block cache read in from the index (postings first, then grams and
  // records: Index::WarmBlockCache) once it is opened, so that the first messages do not
  // pay for reading and decompressing blocks; 0: none. Open starts it on a low-priority
  // thread and returns; Reopen reads into the new copy's cache before switching to it, while
  // the old copy serves (both caches are held meanwhile).
  double warm_cache_fill = 0.9;
};

class LocalIndex {
 public:
  // Opens the live generation of options.data_dir read-only. NOT_FOUND when the directory,
  // its params file, its index or its key file is missing; FAILED_PRECONDITION when the key
  // is not the one the index was built with (naming both key ids), when the params file and
  // the index record different chunking parameters (naming the fields), or with --key-file
  // beside a rotated directory; DATA_LOSS for a malformed key, params or CURRENT file.
  static absl::StatusOr<std::unique_ptr<LocalIndex>> Open(const LocalIndexOptions& options);
  ~LocalIndex();
  LocalIndex(const LocalIndex&) = delete;
  LocalIndex& operator=(const LocalIndex&) = delete;

  // Opens the directory again (registrations since the last open become visible), warms
  // its block cache (options.warm_cache_fill; `stop` returning true cuts that short) and
  // switches to it; checks in flight finish on the old copy. On error the old copy stays.
  absl::Status Reopen(const std::function<bool()>& stop = [] { return false; });

  // One reply per request, in order, as copsd's CheckStream answers them: a request that
  // fails carries its error in the reply (error_code, error_message). A request still
  // waiting when `timeout` has passed gets DEADLINE_EXCEEDED.
  std::vector<v1::CheckDocumentReply> Check(const std::vector<v1::CheckDocumentRequest>& requests,
                                            std::chrono::milliseconds timeout) const;

  ChunkingParams params() const;
  // Documents of the open copy.
  uint64_t documents() const;
  // The open copy's index: its block cache's bytes and whether a warm-up is reading.
  IndexStats Stats() const;

  struct Copy;  // one open copy of the directory (local_checker.cc)

 private:
  LocalIndex(LocalIndexOptions options, std::shared_ptr<const Copy> copy);
  std::shared_ptr<const Copy> Current() const;

  const LocalIndexOptions options_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Copy> copy_ ABSL_GUARDED_BY(mu_);
};

// PartChecker over a LocalIndex (not owned, must outlive it).
class LocalPartChecker : public PartChecker {
 public:
  explicit LocalPartChecker(const LocalIndex* index) : index_(index) {}
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) override {
    return index_->Check(requests, timeout);
  }

 private:
  const LocalIndex* const index_;
};

}  // namespace cops

#endif  // COPS_MILTER_LOCAL_CHECKER_H_
