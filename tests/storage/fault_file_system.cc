#include "tests/storage/fault_file_system.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include "core/status_macros.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace cops {
namespace {

// One spelling per directory, so that SyncDir("d/") and a file "d/x" agree.
std::string Normal(const std::string& path) {
  std::string s = std::filesystem::path(path).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The directory whose SyncDir makes a change of `path` durable.
std::string DirOf(const std::string& path) { return Normal(ParentDir(Normal(path))); }

absl::Status Stopped() { return absl::UnavailableError("simulated crash: the process stopped"); }

// Re-keys the file states at `from` or below it to the same place below `to` (erased when
// `to` is empty): a renamed or removed file or directory takes its files' states along.
template <typename Map>
void MoveFileStates(Map* files, const std::string& from, const std::string& to) {
  const std::string prefix = Normal(from);
  std::vector<std::string> keys;
  for (const auto& [path, state] : *files) {
    if (path == prefix || path.starts_with(prefix + "/")) keys.push_back(path);
  }
  for (const std::string& key : keys) {
    auto node = files->extract(key);
    if (to.empty()) continue;
    node.key() = Normal(to) + key.substr(prefix.size());
    files->insert(std::move(node));
  }
}

}  // namespace

void FaultFileSystem::Crash() {
  absl::MutexLock lock(&mu_);
  crashed_ = true;
}

void FaultFileSystem::SetDiskFull(bool full) {
  absl::MutexLock lock(&mu_);
  disk_full_ = full;
}

void FaultFileSystem::FailOperation(int n) {
  absl::MutexLock lock(&mu_);
  fail_at_ = n;
}

void FaultFileSystem::CrashAtOperation(int n) {
  absl::MutexLock lock(&mu_);
  crash_at_ = n;
}

int FaultFileSystem::operations() const {
  absl::MutexLock lock(&mu_);
  return operations_;
}

bool FaultFileSystem::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

absl::Status FaultFileSystem::Admit() {
  ++operations_;
  if (crashed_) return Stopped();
  if (operations_ == crash_at_) {
    crashed_ = true;
    return Stopped();
  }
  if (operations_ == fail_at_) {
    return absl::InternalError("injected failure of operation " + std::to_string(operations_));
  }
  return absl::OkStatus();
}

std::string FaultFileSystem::NewTrashPath() {
  return (std::filesystem::path(trash_dir_) / std::to_string(++trash_count_)).string();
}

absl::Status FaultFileSystem::DropUnsyncedChanges() {
  absl::MutexLock lock(&mu_);
  absl::Status status;
  auto keep_first = [&status](absl::Status s) {
    if (status.ok()) status = std::move(s);
  };
  for (const auto& [path, state] : files_) {
    if (state->size > state->synced && base_->Exists(path) &&
        ::truncate(path.c_str(), static_cast<off_t>(state->synced)) != 0) {
      keep_first(absl::InternalError("truncating " + path));
    }
  }
  files_.clear();
  for (auto it = unsynced_.rbegin(); it != unsynced_.rend(); ++it) {
    if (!base_->Exists(it->dir)) {
      // Its directory was removed for good (a synced removal of an ancestor): nothing to
      // put back.
      if (!it->saved.empty()) keep_first(base_->RemoveAll(it->saved));
      continue;
    }
    switch (it->kind) {
      case Change::kCreated:
        keep_first(base_->RemoveAll(it->path));
        break;
      case Change::kRenamed:
        keep_first(base_->Rename(it->path, it->from));
        if (!it->saved.empty()) keep_first(base_->Rename(it->saved, it->path));
        break;
      case Change::kRemoved:
        keep_first(base_->Rename(it->saved, it->path));
        break;
    }
  }
  unsynced_.clear();
  operations_ = fail_at_ = crash_at_ = 0;
  crashed_ = false;
  return status;
}

absl::StatusOr<std::string> FaultFileSystem::ReadFile(const std::string& path) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) return Stopped();
  }
  return base_->ReadFile(path);
}

absl::Status FaultFileSystem::WriteFile(const std::string& path, std::string_view data,
                                        uint32_t mode, bool exclusive) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  const bool existed = base_->Exists(path);
  absl::Status status = base_->WriteFile(path, data, mode, exclusive);
  if (!existed && base_->Exists(path)) {
    unsynced_.push_back({Change::kCreated, DirOf(path), path, "", ""});
  }
  return status;
}

absl::Status FaultFileSystem::MakeOwnerOnly(const std::string& path) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  return base_->MakeOwnerOnly(path);
}

absl::Status FaultFileSystem::ZeroFill(const std::string& path) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  return base_->ZeroFill(path);
}

absl::Status FaultFileSystem::Rename(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  return RenameTracked(from, to);
}

absl::Status FaultFileSystem::RenameTracked(const std::string& from, const std::string& to) {
  if (!base_->Exists(from)) return base_->Rename(from, to);  // fails as POSIX would
  std::string saved;
  if (base_->Exists(to)) {
    saved = NewTrashPath();
    COPS_RETURN_IF_ERROR(base_->Rename(to, saved));
  }
  absl::Status status = base_->Rename(from, to);
  if (!status.ok()) {
    if (!saved.empty()) (void)base_->Rename(saved, to);
    return status;
  }
  unsynced_.push_back({Change::kRenamed, DirOf(to), to, from, saved});
  MoveFileStates(&files_, to, saved);
  MoveFileStates(&files_, from, to);
  return absl::OkStatus();
}

absl::Status FaultFileSystem::RemoveAll(const std::string& path) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  return RemoveTracked(path);
}

absl::Status FaultFileSystem::RemoveTracked(const std::string& path) {
  if (!base_->Exists(path)) return absl::OkStatus();
  const std::string saved = NewTrashPath();
  COPS_RETURN_IF_ERROR(base_->Rename(path, saved));
  unsynced_.push_back({Change::kRemoved, DirOf(path), path, "", saved});
  MoveFileStates(&files_, path, saved);
  return absl::OkStatus();
}

void FaultFileSystem::NoteCreated(const std::string& path) {
  unsynced_.push_back({Change::kCreated, DirOf(path), path, "", ""});
}

std::shared_ptr<FaultFileSystem::FileState> FaultFileSystem::TrackFile(const std::string& path,
                                                                       uint64_t size,
                                                                       uint64_t synced) {
  auto state = std::make_shared<FileState>();
  state->size = size;
  state->synced = synced;
  files_[Normal(path)] = state;
  return state;
}

absl::Status FaultFileSystem::CreateDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  if (base_->Exists(path)) return base_->CreateDir(path);
  COPS_RETURN_IF_ERROR(base_->CreateDir(path));
  unsynced_.push_back({Change::kCreated, DirOf(path), path, "", ""});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FaultFileSystem::List(const std::string& dir) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) return Stopped();
  }
  return base_->List(dir);
}

bool FaultFileSystem::Exists(const std::string& path) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) return false;
  }
  return base_->Exists(path);
}

absl::Status FaultFileSystem::SyncDir(const std::string& dir) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  COPS_RETURN_IF_ERROR(base_->SyncDir(dir));
  MarkDirSynced(dir);
  return absl::OkStatus();
}

void FaultFileSystem::MarkDirSynced(const std::string& dir) {
  const std::string synced = Normal(dir);
  std::vector<Change> still;
  for (Change& change : unsynced_) {
    if (change.dir != synced) {
      still.push_back(std::move(change));
    } else if (!change.saved.empty()) {
      (void)base_->RemoveAll(change.saved);  // now gone for good
      MoveFileStates(&files_, change.saved, "");
    }
  }
  unsynced_ = std::move(still);
}

// RocksDB's files, through the same simulated disk. Every operation that changes something
// runs under mu_, so that a crash cuts between two of them.
namespace {

using rocksdb::FileOptions;
using rocksdb::FSDirectory;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

IOStatus Crashed() { return IOStatus::IOError("simulated crash: the machine stopped"); }
IOStatus DiskFull() { return IOStatus::NoSpace("simulated disk full"); }

IOStatus ToIOStatus(const absl::Status& status) {
  return status.ok() ? IOStatus::OK() : IOStatus::IOError(std::string(status.message()));
}

}  // namespace

class FaultFileSystem::RocksWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  RocksWritableFile(std::unique_ptr<FSWritableFile> file, FaultFileSystem* owner,
                    std::shared_ptr<FileState> state)
      : FSWritableFileOwnerWrapper(std::move(file)), owner_(owner), state_(std::move(state)) {}

  IOStatus Append(const Slice& data, const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->Append(data, options, dbg);
    if (s.ok()) state_->size += data.size();
    return s;
  }
  IOStatus Append(const Slice& data, const IOOptions& options,
                  const rocksdb::DataVerificationInfo& info, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->Append(data, options, info, dbg);
    if (s.ok()) state_->size += data.size();
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& options,
                            IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->PositionedAppend(data, offset, options, dbg);
    if (s.ok()) state_->size = std::max<uint64_t>(state_->size, offset + data.size());
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& options,
                            const rocksdb::DataVerificationInfo& info,
                            IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->PositionedAppend(data, offset, options, info, dbg);
    if (s.ok()) state_->size = std::max<uint64_t>(state_->size, offset + data.size());
    return s;
  }
  IOStatus Truncate(uint64_t size, const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = target()->Truncate(size, options, dbg);
    if (s.ok()) {
      state_->size = size;
      state_->synced = std::min(state_->synced, size);
    }
    return s;
  }
  // After a crash the file is left to its destructor, which closes it without writing.
  IOStatus Close(const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    return target()->Close(options, dbg);
  }
  IOStatus Flush(const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    return target()->Flush(options, dbg);
  }
  IOStatus Sync(const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->Sync(options, dbg);
    if (s.ok()) state_->synced = state_->size;
    return s;
  }
  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    IOStatus s = target()->Fsync(options, dbg);
    if (s.ok()) state_->synced = state_->size;
    return s;
  }
  // sync_file_range(2) starts writeback but promises nothing: not a sync.
  IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const IOOptions& options,
                     IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    return target()->RangeSync(offset, nbytes, options, dbg);
  }
  IOStatus Allocate(uint64_t offset, uint64_t len, const IOOptions& options,
                    IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (owner_->disk_full_) return DiskFull();
    return target()->Allocate(offset, len, options, dbg);
  }

 private:
  FaultFileSystem* const owner_;
  const std::shared_ptr<FileState> state_;
};

class FaultFileSystem::RocksDirectory final : public rocksdb::FSDirectoryWrapper {
 public:
  RocksDirectory(std::unique_ptr<FSDirectory> dir, FaultFileSystem* owner, std::string path)
      : FSDirectoryWrapper(std::move(dir)), owner_(owner), path_(std::move(path)) {}

  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = FSDirectoryWrapper::Fsync(options, dbg);
    if (s.ok()) owner_->MarkDirSynced(path_);
    return s;
  }
  IOStatus FsyncWithDirOptions(const IOOptions& options, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& dir_options) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = FSDirectoryWrapper::FsyncWithDirOptions(options, dbg, dir_options);
    if (s.ok()) owner_->MarkDirSynced(path_);
    return s;
  }

 private:
  FaultFileSystem* const owner_;
  const std::string path_;
};

class FaultFileSystem::RocksFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit RocksFileSystem(FaultFileSystem* owner)
      : FileSystemWrapper(rocksdb::FileSystem::Default()), owner_(owner) {}

  const char* Name() const override { return "CopsFaultFileSystem"; }

  IOStatus NewWritableFile(const std::string& path, const FileOptions& options,
                           std::unique_ptr<FSWritableFile>* result,
                           IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    const bool existed = owner_->base_->Exists(path);
    std::unique_ptr<FSWritableFile> file;
    IOStatus s = target()->NewWritableFile(path, options, &file, dbg);
    if (!s.ok()) return s;
    if (!existed) owner_->NoteCreated(path);
    *result = std::make_unique<RocksWritableFile>(std::move(file), owner_,
                                                  owner_->TrackFile(path, 0, 0));
    return s;
  }
  IOStatus ReopenWritableFile(const std::string& path, const FileOptions& options,
                              std::unique_ptr<FSWritableFile>* result,
                              IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    const bool existed = owner_->base_->Exists(path);
    uint64_t size = 0;
    if (existed) {
      IOStatus s = target()->GetFileSize(path, IOOptions(), &size, dbg);
      if (!s.ok()) return s;
    }
    std::unique_ptr<FSWritableFile> file;
    IOStatus s = target()->ReopenWritableFile(path, options, &file, dbg);
    if (!s.ok()) return s;
    if (!existed) owner_->NoteCreated(path);
    auto state = owner_->files_.find(Normal(path));
    *result = std::make_unique<RocksWritableFile>(
        std::move(file), owner_,
        state != owner_->files_.end() ? state->second : owner_->TrackFile(path, size, size));
    return s;
  }
  IOStatus ReuseWritableFile(const std::string& /*path*/, const std::string& /*old_path*/,
                             const FileOptions& /*options*/,
                             std::unique_ptr<FSWritableFile>* /*result*/,
                             IODebugContext* /*dbg*/) override {
    return IOStatus::NotSupported("FaultFileSystem does not model reused files");
  }
  IOStatus NewRandomRWFile(const std::string& /*path*/, const FileOptions& /*options*/,
                           std::unique_ptr<rocksdb::FSRandomRWFile>* /*result*/,
                           IODebugContext* /*dbg*/) override {
    return IOStatus::NotSupported("FaultFileSystem does not model files written in place");
  }
  IOStatus NewDirectory(const std::string& path, const IOOptions& options,
                        std::unique_ptr<FSDirectory>* result, IODebugContext* dbg) override {
    std::unique_ptr<FSDirectory> dir;
    IOStatus s = target()->NewDirectory(path, options, &dir, dbg);
    if (s.ok()) *result = std::make_unique<RocksDirectory>(std::move(dir), owner_, path);
    return s;
  }
  IOStatus DeleteFile(const std::string& path, const IOOptions& options,
                      IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (!owner_->base_->Exists(path)) return target()->DeleteFile(path, options, dbg);
    return ToIOStatus(owner_->RemoveTracked(path));
  }
  IOStatus DeleteDir(const std::string& path, const IOOptions& options,
                     IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    if (!owner_->base_->Exists(path)) return target()->DeleteDir(path, options, dbg);
    return ToIOStatus(owner_->RemoveTracked(path));
  }
  IOStatus RenameFile(const std::string& from, const std::string& to,
                      const IOOptions& /*options*/, IODebugContext* /*dbg*/) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    return ToIOStatus(owner_->RenameTracked(from, to));
  }
  IOStatus LinkFile(const std::string& from, const std::string& to, const IOOptions& options,
                    IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = target()->LinkFile(from, to, options, dbg);
    if (s.ok()) owner_->NoteCreated(to);
    return s;
  }
  IOStatus CreateDir(const std::string& path, const IOOptions& options,
                     IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = target()->CreateDir(path, options, dbg);
    if (s.ok()) owner_->NoteCreated(path);
    return s;
  }
  IOStatus CreateDirIfMissing(const std::string& path, const IOOptions& options,
                              IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    const bool existed = owner_->base_->Exists(path);
    IOStatus s = target()->CreateDirIfMissing(path, options, dbg);
    if (s.ok() && !existed) owner_->NoteCreated(path);
    return s;
  }
  IOStatus Truncate(const std::string& path, size_t size, const IOOptions& options,
                    IODebugContext* dbg) override {
    absl::MutexLock lock(&owner_->mu_);
    if (owner_->crashed_) return Crashed();
    IOStatus s = target()->Truncate(path, size, options, dbg);
    auto state = owner_->files_.find(Normal(path));
    if (s.ok() && state != owner_->files_.end()) {
      state->second->size = size;
      state->second->synced = std::min<uint64_t>(state->second->synced, size);
    }
    return s;
  }
  IOStatus NewLogger(const std::string& path, const IOOptions& options,
                     std::shared_ptr<rocksdb::Logger>* result, IODebugContext* dbg) override {
    {
      absl::MutexLock lock(&owner_->mu_);
      if (owner_->crashed_) return Crashed();
    }
    return target()->NewLogger(path, options, result, dbg);
  }

 private:
  FaultFileSystem* const owner_;
};

FaultFileSystem::FaultFileSystem(std::string trash_dir)
    : base_(FileSystem::Default()),
      trash_dir_(std::move(trash_dir)),
      rocks_env_(rocksdb::NewCompositeEnv(std::make_shared<RocksFileSystem>(this))) {}

FaultFileSystem::~FaultFileSystem() = default;

rocksdb::Env* FaultFileSystem::rocksdb_env() const { return rocks_env_.get(); }

}  // namespace cops
