#ifndef COPS_ENGINE_INDEX_GENERATIONS_H_
#define COPS_ENGINE_INDEX_GENERATIONS_H_

// The live index generation of a data directory and the rotation of its chunk-hashing key
// (docs/security.md, "Rotating the hashing key"). The directory's layout and the file steps
// of a rotation are storage/data_dir.h's.
//
// A generation is an Index with the key it was built under and a CopyDetector over both.
// Generation 0 is the original layout (`index/`, `hash.key`, no `CURRENT`); generation n >= 1
// is `index.<n>/` + `hash_key.<n>`, named by the `CURRENT` file. A rotation builds
// generation n+1 in a background thread from the stored texts under a fresh key, keeping
// every document id; a final catch-up runs under the registration lock, then `CURRENT` is
// replaced atomically and the handlers move to the new generation. Calls in flight finish on
// the old one (reference counted); then its directory is deleted and its key file
// overwritten and unlinked. A crash before the switch restarts on the old generation (the
// unfinished one is deleted at start), a crash after it on the new one; the ROTATING record
// (storage/data_dir.h) is what proves either leftover stale.
//
// Thread-safety: safe for concurrent use. Current() never blocks on a rotation;
// WithWriter() blocks only during the final catch-up of a rotation.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/hash_key.h"
#include "core/params.h"
#include "engine/copy_detector.h"
#include "engine/key_rotation_progress.h"
#include "storage/data_dir.h"
#include "storage/file_system.h"
#include "storage/index.h"
#include "storage/principal_store.h"

namespace cops {

struct KeyRotationOptions {
  // Pause after each document the background rebuild re-keys: throttles the rebuild so that
  // checks keep their latency on a busy machine, at the cost of a longer rotation (and a
  // longer final catch-up, which holds registrations). 0 = as fast as possible.
  std::chrono::microseconds pause_per_document{0};
};

// Where the hashing key of an unrotated data directory comes from: `hex` when set, else the
// file `file` when set, else the data directory's hash.key (created with OpenSSL RAND_bytes
// on first start). A rotated directory's key always comes from its own key file.
struct KeySource {
  std::string hex;   // 32 hex digits (--hash-key, COPS_HASH_KEY)
  std::string file;  // a file of 32 hex digits (--key-file)
  bool in_data_dir() const { return hex.empty() && file.empty(); }
};

// Decides the chunking parameters of the live generation from those recorded in the data
// directory's params file (std::nullopt: a new index) and its key; the result's key_id must
// be key.Id(). copsd's is ResolveChunkingParams (server/server_config.h).
using ChunkingResolver = std::function<absl::StatusOr<ChunkingParams>(
    const std::optional<ChunkingParams>& recorded, const HashKey& key)>;

struct IndexGenerationsOptions {
  std::string data_dir;  // created if missing
  KeySource key;
  // Empty: the recorded parameters (FAILED_PRECONDITION when they name another key), else
  // those of index.params with the key's id.
  ChunkingResolver chunking;
  // Options of every generation's Index; path and params are set per generation.
  IndexOptions index;
  CopyDetectorOptions detector;
  KeyRotationOptions rotation;
  // Above 0: the live generation's index is read into its block cache up to this share of
  // it (Index::StartWarmingBlockCache) when opened and when a rotation switches to it.
  double warm_cache_fill = 0;
  // The data directory's files (not RocksDB's) are reached through it; not owned, must
  // outlive the IndexGenerations. nullptr = FileSystem::Default().
  FileSystem* file_system = nullptr;
};

class IndexGenerations {
 public:
  // Opens the live generation of options.data_dir (created if missing), first deleting what
  // an interrupted rotation left (the generation ROTATING proves stale, CURRENT.tmp,
  // params.tmp) and repairing the params file to the live key's id. Deletes nothing and
  // fails, naming what is present and how to recover, when any other generation is present,
  // CURRENT is missing beside rotated generations or malformed, the live generation's index
  // or key is missing (no new key is made beside an existing index), or a file is corrupt. The key comes from the
  // live generation's key file once the directory has been rotated; before that as
  // options.key says. A new index records its parameters in the params file.
  // FAILED_PRECONDITION when the directory has been rotated and options.key names a key
  // outside it; other errors as DataDir, Index::Open and options.chunking.
  static absl::StatusOr<std::unique_ptr<IndexGenerations>> Open(IndexGenerationsOptions options);
  // Stops a rotation in progress (its unfinished generation is deleted) and closes the index.
  ~IndexGenerations();
  IndexGenerations(const IndexGenerations&) = delete;
  IndexGenerations& operator=(const IndexGenerations&) = delete;

  // The live generation's detector; it (and its Index) stays open while the pointer is held,
  // even across a switch.
  std::shared_ptr<CopyDetector> Current() const;

  // Runs `write` (a registration or unregistration) on the live generation, holding the
  // registration lock shared so that a rotation's final catch-up sees every write.
  absl::Status WithWriter(const std::function<absl::Status(CopyDetector&)>& write);

  // Starts rotating the key in the background and returns at once (poll Progress()).
  // FAILED_PRECONDITION when a rotation is running, when the key is not kept in the data
  // directory (--key-file, COPS_HASH_KEY), or when documents were registered without stored
  // text (the message says how many) unless `drop_documents_without_text`, which leaves them
  // out of the new generation.
  absl::StatusOr<KeyRotationProgress> StartRotation(bool drop_documents_without_text);

  KeyRotationProgress Progress() const;

  // Writes snapshot `name` of the data directory (storage/snapshot.h: a complete data
  // directory under snapshots/) from the live generation and `access`, the open access store
  // of the same directory, and returns its path. Registrations and unregistrations wait
  // while the two checkpoints are taken (the index is flushed before, so that they flush
  // little), which makes the copied access store consistent with the copied index. During
  // a key rotation the snapshot is of the live generation as it is (the old key, every
  // document acknowledged so far) and the rotation goes on; the copy holds nothing of the
  // generation being built. Errors as WriteSnapshot.
  absl::StatusOr<std::string> WriteSnapshot(std::string_view name, const PrincipalStore& access);

 private:
  struct Generation;
  IndexGenerations(IndexGenerationsOptions options, std::shared_ptr<Generation> live);

  void Rotate(std::shared_ptr<Generation> old_gen, std::shared_ptr<Generation> new_gen,
              bool drop_documents_without_text);
  // Makes `to` hold exactly the documents of `from` (re-keying the missing ones from their
  // stored texts); counts progress when `count_progress`.
  absl::Status Reconcile(Generation& from, Generation& to, bool drop_documents_without_text,
                         bool count_progress);
  absl::Status Switch(const std::shared_ptr<Generation>& old_gen,
                      const std::shared_ptr<Generation>& new_gen,
                      bool drop_documents_without_text);

  const IndexGenerationsOptions options_;
  DataDir data_dir_;

  absl::Mutex start_mu_;  // serializes StartRotation (which joins the previous worker)
  // Shared by every registration and unregistration; exclusive during the final catch-up
  // and while a snapshot is written.
  absl::Mutex writes_mu_;
  mutable absl::Mutex mu_;
  std::shared_ptr<Generation> live_ ABSL_GUARDED_BY(mu_);
  KeyRotationProgress progress_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;  // the rotation; started and joined by StartRotation / destructor
  std::atomic<bool> stop_{false};
};

}  // namespace cops

#endif  // COPS_ENGINE_INDEX_GENERATIONS_H_
