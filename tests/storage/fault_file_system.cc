#include "tests/storage/fault_file_system.h"

#include <filesystem>
#include <utility>

#include "core/status_macros.h"

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

}  // namespace

FaultFileSystem::FaultFileSystem(std::string trash_dir)
    : base_(FileSystem::Default()), trash_dir_(std::move(trash_dir)) {}

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
  for (auto it = unsynced_.rbegin(); it != unsynced_.rend(); ++it) {
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
  return absl::OkStatus();
}

absl::Status FaultFileSystem::RemoveAll(const std::string& path) {
  absl::MutexLock lock(&mu_);
  COPS_RETURN_IF_ERROR(Admit());
  if (!base_->Exists(path)) return absl::OkStatus();
  const std::string saved = NewTrashPath();
  COPS_RETURN_IF_ERROR(base_->Rename(path, saved));
  unsynced_.push_back({Change::kRemoved, DirOf(path), path, "", saved});
  return absl::OkStatus();
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
  const std::string synced = Normal(dir);
  std::vector<Change> still;
  for (Change& change : unsynced_) {
    if (change.dir != synced) {
      still.push_back(std::move(change));
    } else if (!change.saved.empty()) {
      (void)base_->RemoveAll(change.saved);  // now gone for good
    }
  }
  unsynced_ = std::move(still);
  return absl::OkStatus();
}

}  // namespace cops
