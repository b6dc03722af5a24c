#include "server/index_generations.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

constexpr char kCurrentFile[] = "CURRENT";
constexpr char kCurrentTmpFile[] = "CURRENT.tmp";
constexpr size_t kPageSize = 500;

// on-disk: generation 0 is the layout from before rotation existed; do not change.
std::string IndexDirName(uint64_t n) { return n == 0 ? "index" : "index." + std::to_string(n); }
std::string KeyFileName(uint64_t n) {
  return n == 0 ? "hash.key" : "hash_key." + std::to_string(n);
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Writes, fsyncs and closes `path` (mode `mode`); fails if it exists and `exclusive`.
absl::Status WriteFileSynced(const fs::path& path, std::string_view content, mode_t mode,
                             bool exclusive) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) return absl::InternalError(Errno("cannot create " + path.string()));
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string error = Errno("cannot write " + path.string());
      ::close(fd);
      return absl::InternalError(error);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string error = Errno("cannot fsync " + path.string());
    ::close(fd);
    return absl::InternalError(error);
  }
  if (::close(fd) != 0) return absl::InternalError(Errno("cannot close " + path.string()));
  return absl::OkStatus();
}

absl::Status SyncDir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(Errno("cannot open " + dir.string()));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return absl::InternalError(Errno("cannot fsync " + dir.string()));
  return absl::OkStatus();
}

// Overwrites the key file with zeros before unlinking it, so the old key does not linger in
// the file's blocks (best effort: journaling and SSDs may keep copies).
void ShredFile(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  // In place (no O_TRUNC, which would free the old blocks instead of overwriting them).
  const int fd = ec ? -1 : ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    const std::string zeros(size, '\0');
    size_t off = 0;
    while (off < zeros.size()) {
      const ssize_t n = ::pwrite(fd, zeros.data() + off, zeros.size() - off,
                                 static_cast<off_t>(off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    (void)::fsync(fd);
    ::close(fd);
  }
  fs::remove(path, ec);
  if (ec) spdlog::warn("cannot remove {}: {}", path.string(), ec.message());
}

void RemoveGeneration(const fs::path& data_dir, uint64_t n) {
  std::error_code ec;
  fs::remove_all(data_dir / IndexDirName(n), ec);
  if (ec) spdlog::warn("cannot remove {}: {}", (data_dir / IndexDirName(n)).string(), ec.message());
  if (fs::exists(data_dir / KeyFileName(n), ec)) ShredFile(data_dir / KeyFileName(n));
  (void)SyncDir(data_dir);
}

// The generation number `name` ("index.<n>" or "hash_key.<n>") denotes, or 0 when it
// denotes none (or generation 0).
uint64_t GenerationOf(const std::string& name) {
  std::string digits;
  if (name.rfind("index.", 0) == 0) {
    digits = name.substr(6);
  } else if (name.rfind("hash_key.", 0) == 0) {
    digits = name.substr(9);
  } else {
    return 0;
  }
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return std::stoull(digits);
}

// The live generation named by CURRENT; 0 when there is no CURRENT.
absl::StatusOr<uint64_t> ReadCurrent(const fs::path& data_dir) {
  std::error_code ec;
  if (!fs::exists(data_dir / kCurrentFile, ec)) return 0;
  COPS_ASSIGN_OR_RETURN(std::string text, ReadFile(data_dir / kCurrentFile));
  std::istringstream in(text);
  std::string index_name, key_name;
  in >> index_name >> key_name;
  const uint64_t n = GenerationOf(index_name);
  if (n == 0 || index_name != IndexDirName(n) || key_name != KeyFileName(n)) {
    return absl::DataLossError((data_dir / kCurrentFile).string() +
                               ": malformed generation pointer '" + Trimmed(text) + "'");
  }
  return n;
}

// Replaces CURRENT atomically: a crash leaves the old or the new pointer, never a torn one.
absl::Status WriteCurrent(const fs::path& data_dir, uint64_t n) {
  const fs::path tmp = data_dir / kCurrentTmpFile;
  COPS_RETURN_IF_ERROR(WriteFileSynced(
      tmp, IndexDirName(n) + " " + KeyFileName(n) + "\n", 0644, /*exclusive=*/false));
  if (::rename(tmp.c_str(), (data_dir / kCurrentFile).c_str()) != 0) {
    return absl::InternalError(Errno("cannot rename " + tmp.string()));
  }
  // After the rename the switch has happened; a failing directory fsync only weakens
  // power-loss durability of the pointer, so it is logged rather than undone.
  absl::Status synced = SyncDir(data_dir);
  if (!synced.ok()) spdlog::warn("key rotation: {}", synced.ToString());
  return absl::OkStatus();
}

absl::StatusOr<HashKey> ReadKeyFile(const fs::path& path) {
  COPS_ASSIGN_OR_RETURN(std::string hex, ReadFile(path));
  absl::StatusOr<HashKey> key = HashKey::FromHex(Trimmed(hex));
  if (!key.ok()) return absl::DataLossError(path.string() + ": " + std::string(key.status().message()));
  return key;
}

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
  if (p.unit == UnitKind::kWord && p.verify_k == 0) {
    p.verify_k = kDefaultVerifyK;
    p.dense_chunks = kDefaultDenseChunks;
  }
  return p;
}

// <data-dir>/params records the chunking parameters including the key id; after a switch
// it must name the new key and the rotated parameters. Rewritten atomically when its key
// differs; absent is fine.
absl::Status RekeyRecordedParams(const fs::path& data_dir, const HashKey& key) {
  const fs::path path = data_dir / "params";
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::OkStatus();
  COPS_ASSIGN_OR_RETURN(std::string hex, ReadFile(path));
  hex = Trimmed(hex);
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  absl::StatusOr<ChunkingParams> params = ChunkingParams::Decode(bytes);
  if (!params.ok()) {
    return absl::DataLossError(path.string() + ": " + std::string(params.status().message()));
  }
  if (params->key_id == key.Id()) return absl::OkStatus();
  *params = RotatedParams(*params, key);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : params->Encode()) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  const fs::path tmp = data_dir / "params.tmp";
  COPS_RETURN_IF_ERROR(WriteFileSynced(tmp, out + "\n", 0644, /*exclusive=*/false));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(Errno("cannot rename " + tmp.string()));
  }
  return SyncDir(data_dir);
}

}  // namespace

struct IndexGenerations::Generation {
  uint64_t number = 0;
  std::string key_id;
  std::unique_ptr<Index> index;            // declared before detector: closed after it
  std::unique_ptr<CopyDetector> detector;  // over *index
};

IndexGenerations::IndexGenerations(std::string data_dir, IndexOptions index_options,
                                   CopyDetectorOptions detector_options,
                                   KeyRotationOptions rotation, bool key_in_data_dir,
                                   std::shared_ptr<Generation> live)
    : data_dir_(std::move(data_dir)),
      index_options_(std::move(index_options)),
      detector_options_(std::move(detector_options)),
      rotation_(rotation),
      key_in_data_dir_(key_in_data_dir),
      live_(std::move(live)) {
  progress_.generation = live_->number;
  progress_.key_id = live_->key_id;
}

absl::StatusOr<std::unique_ptr<IndexGenerations>> IndexGenerations::Open(
    const ServerConfig& config, KeyRotationOptions rotation) {
  const fs::path dir(config.data_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create data dir " + config.data_dir);
  const bool key_in_data_dir = config.hash_key.empty() && config.key_file.empty();
  COPS_ASSIGN_OR_RETURN(const uint64_t live, ReadCurrent(dir));
  if (live != 0 && !key_in_data_dir) {
    return absl::FailedPreconditionError(
        "the hashing key of " + config.data_dir + " has been rotated (see " +
        (dir / kCurrentFile).string() + "); drop --key-file / COPS_HASH_KEY");
  }

  // Whatever an interrupted rotation left: an unfinished generation (crash before the
  // switch) or an unretired one (crash after it).
  fs::remove(dir / kCurrentTmpFile, ec);
  fs::remove(dir / "params.tmp", ec);
  std::vector<uint64_t> stale;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const uint64_t n = GenerationOf(entry.path().filename().string());
    if (n != 0 && n != live) stale.push_back(n);
  }
  if (live != 0 && (fs::exists(dir / IndexDirName(0), ec) || fs::exists(dir / KeyFileName(0), ec))) {
    stale.push_back(0);
  }
  std::sort(stale.begin(), stale.end());
  stale.erase(std::unique(stale.begin(), stale.end()), stale.end());
  for (uint64_t n : stale) {
    spdlog::warn("removing index generation {} left by an interrupted key rotation", n);
    RemoveGeneration(dir, n);
  }

  COPS_ASSIGN_OR_RETURN(const HashKey key, live == 0 ? LoadOrCreateHashKey(config)
                                                     : ReadKeyFile(dir / KeyFileName(live)));
  if (live != 0) COPS_RETURN_IF_ERROR(RekeyRecordedParams(dir, key));
  bool new_index = false;
  COPS_ASSIGN_OR_RETURN(ChunkingParams params, ResolveChunkingParams(config, key, &new_index));

  IndexOptions index_options;
  index_options.sync_writes = config.sync_writes;
  index_options.store_texts = config.store_texts;
  index_options.block_cache_bytes = BlockCacheBytes(config);
  index_options.write_buffer_bytes = config.write_buffer_mb << 20;
  index_options.bloom_bits_per_key = config.bloom_bits;
  index_options.background_jobs = config.background_jobs;
  index_options.lookup_threads = config.lookup_threads;
  index_options.postings_shards = config.postings_shards;
  index_options.postings_memtables = config.postings_memtables;
  index_options.postings_compression = config.compression;
  index_options.postings_block_kb = config.postings_block_kb;
  CopyDetectorOptions detector_options;
  detector_options.max_document_bytes = config.max_document_bytes;
  detector_options.bulk_window_documents = config.bulk_window_documents;

  auto gen = std::make_shared<Generation>();
  gen->number = live;
  gen->key_id = key.Id();
  IndexOptions options = index_options;
  options.path = (dir / IndexDirName(live)).string();
  options.params = params;
  COPS_ASSIGN_OR_RETURN(gen->index, Index::Open(options));
  if (new_index) COPS_RETURN_IF_ERROR(RecordParams(config, params));
  COPS_ASSIGN_OR_RETURN(gen->detector,
                        CopyDetector::Create(gen->index.get(), key, detector_options));
  return std::unique_ptr<IndexGenerations>(new IndexGenerations(
      config.data_dir, index_options, detector_options, rotation, key_in_data_dir,
      std::move(gen)));
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

absl::StatusOr<KeyRotationProgress> IndexGenerations::StartRotation(
    bool drop_documents_without_text) {
  absl::MutexLock start(&start_mu_);
  if (!key_in_data_dir_) {
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

  const fs::path dir(data_dir_);
  const uint64_t n = old_gen->number + 1;
  RemoveGeneration(dir, n);  // left by a failed rotation of this process, if any
  COPS_ASSIGN_OR_RETURN(HashKey key, NewKey());
  COPS_RETURN_IF_ERROR(
      WriteFileSynced(dir / KeyFileName(n), key.ToHex() + "\n", 0600, /*exclusive=*/true));
  auto new_gen = std::make_shared<Generation>();
  new_gen->number = n;
  new_gen->key_id = key.Id();
  IndexOptions options = index_options_;
  options.path = (dir / IndexDirName(n)).string();
  options.params = RotatedParams(old_gen->index->params(), key);
  absl::Status opened = [&]() -> absl::Status {
    COPS_RETURN_IF_ERROR(SyncDir(dir));
    COPS_ASSIGN_OR_RETURN(new_gen->index, Index::Open(options));
    COPS_ASSIGN_OR_RETURN(new_gen->detector,
                          CopyDetector::Create(new_gen->index.get(), key, detector_options_));
    return absl::OkStatus();
  }();
  if (!opened.ok()) {
    new_gen.reset();
    RemoveGeneration(dir, n);
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
  const fs::path dir(data_dir_);
  const uint64_t old_number = old_gen->number;
  const uint64_t new_number = new_gen->number;
  // Backfill without the lock; writes made meanwhile are caught up under it in Switch().
  absl::Status status = Reconcile(*old_gen, *new_gen, drop_documents_without_text,
                                  /*count_progress=*/true);
  if (status.ok()) status = Switch(old_gen, new_gen, drop_documents_without_text);
  if (!status.ok()) {
    spdlog::error("key rotation to generation {} failed: {}", new_number, status.ToString());
    new_gen.reset();
    RemoveGeneration(dir, new_number);
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
  RemoveGeneration(dir, old_number);
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
          if (count_progress && rotation_.pause_per_document.count() > 0) {
            std::this_thread::sleep_for(rotation_.pause_per_document);
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

absl::Status IndexGenerations::Switch(std::shared_ptr<Generation> old_gen,
                                      std::shared_ptr<Generation> new_gen,
                                      bool drop_documents_without_text) {
  {
    absl::MutexLock lock(&mu_);
    progress_.state = KeyRotationState::kSwitching;
  }
  const fs::path dir(data_dir_);
  COPS_ASSIGN_OR_RETURN(const HashKey key, ReadKeyFile(dir / KeyFileName(new_gen->number)));

  absl::WriterMutexLock writes(&writes_mu_);  // registrations wait for the catch-up
  COPS_RETURN_IF_ERROR(Reconcile(*old_gen, *new_gen, drop_documents_without_text,
                                 /*count_progress=*/false));
  COPS_RETURN_IF_ERROR(new_gen->index->Flush());
  COPS_RETURN_IF_ERROR(WriteCurrent(dir, new_gen->number));
  // From here on the new generation is the live one, also after a crash.
  absl::Status params = RekeyRecordedParams(dir, key);
  if (!params.ok()) spdlog::warn("key rotation: {} (repaired at next start)", params.ToString());
  absl::MutexLock lock(&mu_);
  live_ = new_gen;
  progress_.generation = new_gen->number;
  progress_.key_id = new_gen->key_id;
  spdlog::info("key rotation switched to generation {} (key {})", new_gen->number,
               new_gen->key_id);
  return absl::OkStatus();
}

AdminIndexHooks AdminHooksFor(IndexGenerations* generations) {
  AdminIndexHooks hooks;
  hooks.get_document = [generations](DocId id) { return generations->Current()->Get(id); };
  hooks.create_snapshot = [generations](const std::string& dir) {
    return generations->Current()->index()->CreateSnapshot(dir);
  };
  hooks.rotate_key = [generations](bool drop_documents_without_text) {
    return generations->StartRotation(drop_documents_without_text);
  };
  hooks.key_rotation_progress = [generations] { return generations->Progress(); };
  hooks.set_bulk_load = [generations](bool enabled) {
    // The index stays open while the detector is held, also across a key rotation's switch.
    const std::shared_ptr<CopyDetector> detector = generations->Current();
    return BulkLoadHook(detector->index())(enabled);
  };
  return hooks;
}

}  // namespace cops
