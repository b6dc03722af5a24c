#include "engine/index_generations.h"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "core/stem_pairs.h"
#include "spdlog/spdlog.h"
#include "storage/snapshot.h"

namespace cops {
namespace {

constexpr size_t kPageSize = 500;

absl::StatusOr<HashKey> NewKey() {
  unsigned char bytes[HashKey::kSize];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return absl::InternalError("OpenSSL RAND_bytes failed to generate a hashing key");
  }
  return HashKey::FromBytes(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

// The parameters a rotation builds the next generation with: the old ones under the new
// key, brought up to this build's normalization version and, for word units, with
// verification grams. A rotation is thus also how an index created by an older build is
// upgraded in place (docs/security.md, "Rotating the hashing key").
ChunkingParams RotatedParams(ChunkingParams p, const HashKey& key) {
  p.key_id = key.Id();
  p.normalization_version = kNormalizationVersion;
  // Content-stem pairs are made again from the stored texts, by this build's stemmer.
  if (p.stem_pairs != 0) p.stem_version = kStemPairsVersion;
  if (p.unit == UnitKind::kWord && p.verify_k == 0) {
    p.verify_k = kDefaultVerifyK;
    p.dense_chunks = kDefaultDenseChunks;
  }
  return p;
}

// The key of an unrotated directory, as `source` says.
absl::StatusOr<HashKey> LoadOrCreateKey(const KeySource& source, DataDir& data_dir) {
  if (!source.hex.empty()) return ParseHashKey(source.hex);
  if (!source.file.empty()) return ReadKeyFile(data_dir.fs(), source.file);
  absl::StatusOr<HashKey> key = data_dir.ReadKey(0);
  if (!absl::IsNotFound(key.status()) || data_dir.fs().Exists(data_dir.KeyPath(0))) return key;
  // A new key only for a new index: one beside an existing index would not be the key it
  // was built with, and would hide that the real one is lost.
  if (data_dir.fs().Exists(data_dir.IndexPath(0)) ||
      data_dir.fs().Exists(data_dir.PathOf(DataDir::kParamsFile))) {
    return absl::DataLossError(
        data_dir.KeyPath(0) + " is missing beside the index " + data_dir.IndexPath(0) +
        " it was built with; copsd will not start. Restore it from a backup (a new key would "
        "find none of the registered documents)");
  }
  COPS_ASSIGN_OR_RETURN(key, NewKey());
  COPS_RETURN_IF_ERROR(data_dir.CreateKey(0, *key));
  return key;
}

// The params file records the chunking parameters including the key id; after a switch
// it must name the new key and the rotated parameters. Rewritten when its key differs;
// absent is fine.
absl::Status RekeyRecordedParams(DataDir& data_dir, const HashKey& key) {
  COPS_ASSIGN_OR_RETURN(std::optional<ChunkingParams> params, data_dir.ReadParams());
  if (!params.has_value() || params->key_id == key.Id()) return absl::OkStatus();
  return data_dir.WriteParams(RotatedParams(*params, key));
}

// Removes generation n, logging (not returning) a failure: what is left is removed at the
// next start (ROTATING is kept for it). Whether it was removed.
bool RemoveGeneration(DataDir& data_dir, uint64_t n) {
  absl::Status removed = data_dir.RemoveGeneration(n);
  if (!removed.ok()) spdlog::warn("removing index generation {}: {}", n, removed.ToString());
  return removed.ok();
}

// Ends a rotation's record once its leftover generation is gone.
void ClearRotation(DataDir& data_dir) {
  absl::Status cleared = data_dir.ClearRotation();
  if (!cleared.ok()) spdlog::warn("key rotation: {} (cleared at next start)", cleared.ToString());
}

// "index.1/, hash_key.1" for the parts of generation n present (index/ and hash.key for 0).
std::string PartsOf(DataDir& data_dir, uint64_t n) {
  std::string parts;
  if (data_dir.fs().Exists(data_dir.IndexPath(n))) parts = DataDir::IndexDirName(n) + "/";
  if (data_dir.fs().Exists(data_dir.KeyPath(n))) {
    parts += (parts.empty() ? "" : ", ") + DataDir::KeyFileName(n);
  }
  return parts;
}

// What an operator can do about a directory copsd will not open: point CURRENT at the
// newest generation that has both its index and its key (or, with none, restore a backup).
std::string RecoveryAdvice(DataDir& data_dir) {
  absl::StatusOr<std::vector<uint64_t>> generations =
      data_dir.OtherGenerations(std::numeric_limits<uint64_t>::max());
  std::optional<uint64_t> newest;
  std::string present;
  if (generations.ok()) {
    for (uint64_t n : *generations) {
      const std::string parts = PartsOf(data_dir, n);
      if (parts.empty()) continue;
      present += (present.empty() ? "" : "; ") + parts;
      if (n != 0 && data_dir.HasGeneration(n)) newest = n;
    }
  }
  std::string advice = "Present: " + (present.empty() ? std::string("no index generation") : present) + ". ";
  if (newest.has_value()) {
    advice += "If generation " + std::to_string(*newest) +
              " is the live one (the newest complete one), restore the pointer with: printf '" +
              DataDir::IndexDirName(*newest) + " " + DataDir::KeyFileName(*newest) + "\\n' > " +
              data_dir.PathOf(DataDir::kCurrentFile) +
              " and move any other generation out of the directory";
  } else {
    advice += "Restore the data directory from a backup";
  }
  return advice + " (docs/operations.md, \"A data directory copsd refuses to open\")";
}

// The generations other than `live` that ROTATING proves an interrupted rotation left;
// FAILED_PRECONDITION, naming them, when any other generation is present or the live one is
// incomplete: nothing is deleted then.
absl::StatusOr<std::vector<uint64_t>> StaleGenerations(DataDir& data_dir, uint64_t live) {
  const bool has_current = data_dir.fs().Exists(data_dir.PathOf(DataDir::kCurrentFile));
  if (has_current && !data_dir.HasGeneration(live)) {
    return absl::FailedPreconditionError(
        data_dir.PathOf(DataDir::kCurrentFile) + " names generation " + std::to_string(live) +
        " (" + DataDir::IndexDirName(live) + "/, " + DataDir::KeyFileName(live) +
        "), which is incomplete or missing; copsd will not start. " + RecoveryAdvice(data_dir));
  }
  COPS_ASSIGN_OR_RETURN(const std::vector<uint64_t> others, data_dir.OtherGenerations(live));
  if (others.empty()) return others;
  absl::StatusOr<std::optional<uint64_t>> rotation = data_dir.ReadRotation();
  // The one generation ROTATING proves stale; kNone when it proves none.
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  uint64_t provable = kNone;
  if (rotation.ok() && rotation->has_value()) {
    const uint64_t target = **rotation;
    if (target == live + 1 && (has_current || data_dir.HasGeneration(0))) {
      provable = target;  // built but never switched to: CURRENT is replaced atomically
    } else if (target == live && has_current) {
      provable = live - 1;  // switched away from, not yet deleted
    }
  }
  if (provable != kNone && !has_current) {
    // The unfinished generation 1 beside generation 0 without CURRENT, unless params already
    // names its key: then the switch happened and CURRENT was lost after it.
    absl::StatusOr<std::optional<ChunkingParams>> params = data_dir.ReadParams();
    absl::StatusOr<HashKey> key = data_dir.ReadKey(provable);
    if (!params.ok() ||
        (key.ok() && params->has_value() && (*params)->key_id == key->Id())) {
      provable = kNone;
    }
  }
  std::vector<std::string> unexplained;
  for (uint64_t n : others) {
    if (n != provable) unexplained.push_back(PartsOf(data_dir, n));
  }
  if (!unexplained.empty()) {
    std::string names;
    for (const std::string& u : unexplained) names += (names.empty() ? "" : "; ") + u;
    return absl::FailedPreconditionError(
        data_dir.path() + ": " +
        (has_current ? "besides the live generation " + std::to_string(live) + " (CURRENT)"
                     : std::string("CURRENT is missing, yet")) +
        " index generations are present that no interrupted key rotation explains (" + names +
        "); copsd deletes no generation it cannot prove stale and will not start. " +
        RecoveryAdvice(data_dir));
  }
  return others;
}

}  // namespace

struct IndexGenerations::Generation {
  uint64_t number = 0;
  std::string key_id;
  std::unique_ptr<Index> index;            // declared before detector: closed after it
  std::unique_ptr<CopyDetector> detector;  // over *index
};

IndexGenerations::IndexGenerations(IndexGenerationsOptions options,
                                   std::shared_ptr<Generation> live)
    : options_(std::move(options)),
      data_dir_(options_.data_dir, options_.file_system),
      live_(std::move(live)) {
  progress_.generation = live_->number;
  progress_.key_id = live_->key_id;
}

absl::StatusOr<std::unique_ptr<IndexGenerations>> IndexGenerations::Open(
    IndexGenerationsOptions options) {
  DataDir data_dir(options.data_dir, options.file_system);
  COPS_RETURN_IF_ERROR(data_dir.Create());
  absl::StatusOr<uint64_t> current = data_dir.ReadCurrent();
  if (!current.ok()) {
    return absl::Status(current.status().code(),
                        std::string(current.status().message()) + "; copsd will not start. " +
                            RecoveryAdvice(data_dir));
  }
  const uint64_t live = *current;
  if (live != 0 && !options.key.in_data_dir()) {
    return absl::FailedPreconditionError(
        "the hashing key of " + options.data_dir + " has been rotated (see " +
        data_dir.PathOf(DataDir::kCurrentFile) + "); drop --key-file / COPS_HASH_KEY");
  }

  // Whatever an interrupted rotation left, when ROTATING proves it stale: an unfinished
  // generation (crash before the switch) or an unretired one (crash after it).
  COPS_ASSIGN_OR_RETURN(const std::vector<uint64_t> stale, StaleGenerations(data_dir, live));
  absl::Status removed = data_dir.RemoveTemporaryFiles();
  if (!removed.ok()) spdlog::warn("{}", removed.ToString());
  bool all_removed = true;
  for (uint64_t n : stale) {
    spdlog::warn("removing index generation {} left by an interrupted key rotation", n);
    all_removed &= RemoveGeneration(data_dir, n);
  }
  if (all_removed) {
    absl::Status cleared = data_dir.ClearRotation();
    if (!cleared.ok()) spdlog::warn("{}", cleared.ToString());
  }

  COPS_ASSIGN_OR_RETURN(const HashKey key, live == 0 ? LoadOrCreateKey(options.key, data_dir)
                                                     : data_dir.ReadKey(live));
  if (live != 0) COPS_RETURN_IF_ERROR(RekeyRecordedParams(data_dir, key));
  COPS_ASSIGN_OR_RETURN(const std::optional<ChunkingParams> recorded, data_dir.ReadParams());
  ChunkingParams params;
  if (options.chunking) {
    COPS_ASSIGN_OR_RETURN(params, options.chunking(recorded, key));
  } else if (recorded.has_value()) {
    params = *recorded;
    if (params.key_id != key.Id()) {
      return absl::FailedPreconditionError("the hashing key (id " + key.Id() +
                                           ") is not the one the index in " + options.data_dir +
                                           " was built with (id " + params.key_id + ")");
    }
  } else {
    params = options.index.params;
    params.key_id = key.Id();
  }

  auto gen = std::make_shared<Generation>();
  gen->number = live;
  gen->key_id = key.Id();
  IndexOptions index_options = options.index;
  index_options.warm_after_compaction_fill = options.warm_cache_fill;
  index_options.path = data_dir.IndexPath(live);
  index_options.params = params;
  COPS_ASSIGN_OR_RETURN(index_options.chunk_recomputer, MakeChunkRecomputer(params, key));
  COPS_ASSIGN_OR_RETURN(gen->index, Index::Open(index_options));
  if (!recorded.has_value()) COPS_RETURN_IF_ERROR(data_dir.WriteParams(params));
  if (options.warm_cache_fill > 0) gen->index->StartWarmingBlockCache(options.warm_cache_fill);
  COPS_ASSIGN_OR_RETURN(gen->detector,
                        CopyDetector::Create(gen->index.get(), key, options.detector));
  return std::unique_ptr<IndexGenerations>(
      new IndexGenerations(std::move(options), std::move(gen)));
}

IndexGenerations::~IndexGenerations() {
  stop_.store(true);
  absl::MutexLock lock(&start_mu_);
  if (worker_.joinable()) worker_.join();
}

std::shared_ptr<CopyDetector> IndexGenerations::Current() const {
  absl::MutexLock lock(&mu_);
  return std::shared_ptr<CopyDetector>(live_, live_->detector.get());
}

absl::Status IndexGenerations::WithWriter(
    const std::function<absl::Status(CopyDetector&)>& write) {
  absl::ReaderMutexLock writes(&writes_mu_);
  std::shared_ptr<CopyDetector> detector = Current();
  return write(*detector);
}

KeyRotationProgress IndexGenerations::Progress() const {
  absl::MutexLock lock(&mu_);
  return progress_;
}

absl::StatusOr<std::string> IndexGenerations::WriteSnapshot(std::string_view name,
                                                             const PrincipalStore& access) {
  COPS_RETURN_IF_ERROR(ValidateSnapshotName(name));
  // Outside the lock: the checkpoint's own flush, under it, then has little left to write.
  COPS_RETURN_IF_ERROR(Current()->index()->Flush());
  absl::WriterMutexLock writes(&writes_mu_);  // also keeps the live generation from switching
  std::shared_ptr<Generation> live;
  {
    absl::MutexLock lock(&mu_);
    live = live_;
  }
  SnapshotSource source;
  source.data_dir = &data_dir_;
  source.generation = live->number;
  source.index = live->index.get();
  source.access = &access;
  source.key_in_data_dir = live->number != 0 || options_.key.in_data_dir();
  return cops::WriteSnapshot(source, name);
}

absl::StatusOr<KeyRotationProgress> IndexGenerations::StartRotation(
    bool drop_documents_without_text) {
  absl::MutexLock start(&start_mu_);
  if (!options_.key.in_data_dir()) {
    return absl::FailedPreconditionError(
        "the hashing key is given by --key-file or COPS_HASH_KEY, not kept in the data "
        "directory: rotate it by rebuilding the index (copsd cannot replace that key)");
  }
  std::shared_ptr<Generation> old_gen;
  {
    absl::MutexLock lock(&mu_);
    if (progress_.state == KeyRotationState::kRebuilding ||
        progress_.state == KeyRotationState::kSwitching) {
      return absl::FailedPreconditionError("a key rotation is already running (to key " +
                                           progress_.new_key_id + ")");
    }
    old_gen = live_;
  }
  if (worker_.joinable()) worker_.join();  // the previous rotation, finished

  // Documents without stored text cannot be re-keyed: count them before anything changes.
  uint64_t total = 0, without_text = 0;
  std::string token;
  do {
    COPS_ASSIGN_OR_RETURN(DocumentPage page, old_gen->index->ListDocuments(token, kPageSize));
    for (const DocumentRecord& record : page.documents) {
      ++total;
      absl::StatusOr<std::string> text = old_gen->index->GetText(record.id);
      if (absl::IsNotFound(text.status())) {
        ++without_text;
      } else if (!text.ok()) {
        return text.status();
      }
    }
    token = std::move(page.next_page_token);
  } while (!token.empty());
  if (without_text > 0 && !drop_documents_without_text) {
    return absl::FailedPreconditionError(
        std::to_string(without_text) + " of " + std::to_string(total) +
        " documents were registered without stored text and cannot be re-keyed; rotate with "
        "--drop-documents-without-text to leave them out of the new generation");
  }

  const uint64_t n = old_gen->number + 1;
  // Left by a failed rotation of this process, if any; ROTATING proves it unfinished.
  if (!RemoveGeneration(data_dir_, n)) {
    return absl::UnavailableError("generation " + std::to_string(n) +
                                  " of a failed rotation could not be removed; see the log");
  }
  COPS_ASSIGN_OR_RETURN(HashKey key, NewKey());
  // Recorded before generation n+1 exists: what lets a start prove it (or, after the
  // switch, generation n) stale.
  COPS_RETURN_IF_ERROR(data_dir_.SetRotation(n));
  auto new_gen = std::make_shared<Generation>();
  new_gen->number = n;
  new_gen->key_id = key.Id();
  IndexOptions options = options_.index;
  options.warm_after_compaction_fill = options_.warm_cache_fill;
  options.path = data_dir_.IndexPath(n);
  options.params = RotatedParams(old_gen->index->params(), key);
  absl::Status opened = [&]() -> absl::Status {
    COPS_RETURN_IF_ERROR(data_dir_.CreateKey(n, key));
    COPS_ASSIGN_OR_RETURN(options.chunk_recomputer, MakeChunkRecomputer(options.params, key));
    COPS_ASSIGN_OR_RETURN(new_gen->index, Index::Open(options));
    COPS_ASSIGN_OR_RETURN(new_gen->detector,
                          CopyDetector::Create(new_gen->index.get(), key, options_.detector));
    return absl::OkStatus();
  }();
  if (!opened.ok()) {
    new_gen.reset();
    if (!absl::IsAlreadyExists(opened) && RemoveGeneration(data_dir_, n)) {
      ClearRotation(data_dir_);
    }
    return opened;
  }

  KeyRotationProgress progress;
  {
    absl::MutexLock lock(&mu_);
    progress_.state = KeyRotationState::kRebuilding;
    progress_.new_key_id = key.Id();
    progress_.documents_done = 0;
    progress_.documents_total = total;
    progress_.documents_dropped = 0;
    progress_.error.clear();
    progress = progress_;
  }
  spdlog::info("key rotation started: generation {} -> {}, key {} -> {}, {} documents",
               old_gen->number, n, old_gen->key_id, key.Id(), total);
  worker_ = std::thread(&IndexGenerations::Rotate, this, std::move(old_gen), std::move(new_gen),
                        drop_documents_without_text);
  return progress;
}

void IndexGenerations::Rotate(std::shared_ptr<Generation> old_gen,
                              std::shared_ptr<Generation> new_gen,
                              bool drop_documents_without_text) {
  const uint64_t old_number = old_gen->number;
  const uint64_t new_number = new_gen->number;
  // Backfill without the lock; writes made meanwhile are caught up under it in Switch().
  absl::Status status = Reconcile(*old_gen, *new_gen, drop_documents_without_text,
                                  /*count_progress=*/true);
  if (status.ok()) status = Switch(old_gen, new_gen, drop_documents_without_text);
  if (!status.ok()) {
    spdlog::error("key rotation to generation {} failed: {}", new_number, status.ToString());
    new_gen.reset();
    if (RemoveGeneration(data_dir_, new_number)) ClearRotation(data_dir_);
    absl::MutexLock lock(&mu_);
    progress_.state = KeyRotationState::kFailed;
    progress_.error = status.ToString();
    return;
  }
  new_gen.reset();

  // Retire: once no call holds the old generation, nothing needs the old key any more.
  while (old_gen.use_count() > 1 && !stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (old_gen.use_count() > 1) return;  // shutting down: the next start retires it
  old_gen.reset();                      // closes the old index
  if (RemoveGeneration(data_dir_, old_number)) ClearRotation(data_dir_);
  spdlog::info("key rotation done: generation {} retired", old_number);
  absl::MutexLock lock(&mu_);
  progress_.state = KeyRotationState::kDone;
}

absl::Status IndexGenerations::Reconcile(Generation& from, Generation& to,
                                         bool drop_documents_without_text,
                                         bool count_progress) {
  // Ids are never reused and a registered document never changes, so comparing id sets is
  // enough: missing ids are re-keyed, extra ids (unregistered meanwhile) removed.
  std::vector<DocId> present;
  std::string token;
  do {
    COPS_ASSIGN_OR_RETURN(DocumentPage page, to.index->ListDocuments(token, 1000));
    for (const DocumentRecord& record : page.documents) present.push_back(record.id);
    token = std::move(page.next_page_token);
  } while (!token.empty());
  std::vector<bool> seen(present.size(), false);
  uint64_t dropped = 0;
  do {
    COPS_ASSIGN_OR_RETURN(DocumentPage page, from.index->ListDocuments(token, kPageSize));
    for (const DocumentRecord& record : page.documents) {
      if (stop_.load()) return absl::CancelledError("server shutting down");
      auto it = std::lower_bound(present.begin(), present.end(), record.id);
      if (it != present.end() && *it == record.id) {
        seen[it - present.begin()] = true;
      } else {
        absl::StatusOr<std::string> text = from.index->GetText(record.id);
        if (absl::IsNotFound(text.status())) {
          // Unregistered since the page was read, or registered without text.
          absl::StatusOr<DocumentRecord> still = from.index->GetDocument(record.id);
          if (absl::IsNotFound(still.status())) continue;
          if (!still.ok()) return still.status();
          if (!drop_documents_without_text) {
            return absl::FailedPreconditionError(
                "document " + std::to_string(record.id) +
                " was registered without stored text and cannot be re-keyed");
          }
          ++dropped;
        } else if (!text.ok()) {
          return text.status();
        } else {
          absl::Status s = to.detector->RegisterAs(*text, record);
          if (!s.ok()) {
            return absl::Status(s.code(), "re-keying document " + std::to_string(record.id) +
                                              ": " + std::string(s.message()));
          }
          // Throttle only the background pass: the catch-up holds registrations.
          if (count_progress && options_.rotation.pause_per_document.count() > 0) {
            std::this_thread::sleep_for(options_.rotation.pause_per_document);
          }
        }
      }
      if (count_progress) {
        absl::MutexLock lock(&mu_);
        ++progress_.documents_done;
      }
    }
    token = std::move(page.next_page_token);
  } while (!token.empty());
  for (size_t i = 0; i < present.size(); ++i) {
    if (seen[i]) continue;
    absl::Status s = to.index->Unregister(present[i]);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  COPS_RETURN_IF_ERROR(to.index->RaiseNextDocId(from.index->NextDocId()));
  absl::MutexLock lock(&mu_);
  progress_.documents_dropped = dropped;
  return absl::OkStatus();
}

absl::Status IndexGenerations::Switch(const std::shared_ptr<Generation>& old_gen,
                                      const std::shared_ptr<Generation>& new_gen,
                                      bool drop_documents_without_text) {
  {
    absl::MutexLock lock(&mu_);
    progress_.state = KeyRotationState::kSwitching;
  }
  COPS_ASSIGN_OR_RETURN(const HashKey key, data_dir_.ReadKey(new_gen->number));

  absl::WriterMutexLock writes(&writes_mu_);  // registrations wait for the catch-up
  COPS_RETURN_IF_ERROR(Reconcile(*old_gen, *new_gen, drop_documents_without_text,
                                 /*count_progress=*/false));
  COPS_RETURN_IF_ERROR(new_gen->index->Flush());
  COPS_RETURN_IF_ERROR(data_dir_.SetCurrent(new_gen->number));
  // From here on the new generation is the live one, also after a crash. A failing
  // directory fsync only weakens power-loss durability of the pointer (the params rewrite
  // and the retirement sync the directory again), so it is logged rather than undone.
  absl::Status synced = data_dir_.Sync();
  if (!synced.ok()) spdlog::warn("key rotation: {}", synced.ToString());
  absl::Status params = RekeyRecordedParams(data_dir_, key);
  if (!params.ok()) spdlog::warn("key rotation: {} (repaired at next start)", params.ToString());
  absl::MutexLock lock(&mu_);
  live_ = new_gen;
  // Its cache holds little of what checks will read: the rebuild wrote the index.
  if (options_.warm_cache_fill > 0) {
    new_gen->index->StartWarmingBlockCache(options_.warm_cache_fill);
  }
  progress_.generation = new_gen->number;
  progress_.key_id = new_gen->key_id;
  spdlog::info("key rotation switched to generation {} (key {})", new_gen->number,
               new_gen->key_id);
  return absl::OkStatus();
}

}  // namespace cops
