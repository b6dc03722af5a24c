#ifndef COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_
#define COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_

// A FileSystem for tests (as LevelDB's FaultInjectionTestEnv): the POSIX file system, plus
//   - FailOperation(n): the n-th changing operation fails once (INTERNAL), changing nothing;
//   - CrashAtOperation(n): the n-th changing operation and every operation after it fail
//     (UNAVAILABLE), changing nothing: the process has "stopped";
//   - DropUnsyncedChanges(): what a power loss would leave: every name created, renamed or
//     removed in a directory since its last SyncDir is put back as it was. File contents
//     are always synced (WriteFile and ZeroFill fsync), so they stay.
// Changing operations, counted from 1: WriteFile, ZeroFill, Rename, RemoveAll, CreateDir,
// SyncDir, MakeOwnerOnly. Removed entries and replaced rename targets are kept in `trash_dir` (on the same
// file system) until their directory is synced, so that they can be put back.
//
// Thread-safety: safe for concurrent use.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/file_system.h"

namespace cops {

class FaultFileSystem final : public FileSystem {
 public:
  // REQUIRES: `trash_dir` is an existing empty directory on the file system the tested
  // directories are on, outside them.
  explicit FaultFileSystem(std::string trash_dir);

  void FailOperation(int n);
  void CrashAtOperation(int n);
  // Changing operations attempted so far (failed ones included).
  int operations() const;
  bool crashed() const;
  // Undoes the unsynced changes (newest first) and ends the crash: the file system works
  // again, as after a restart, and the operation count starts over.
  absl::Status DropUnsyncedChanges();

  absl::StatusOr<std::string> ReadFile(const std::string& path) override;
  absl::Status WriteFile(const std::string& path, std::string_view data, uint32_t mode,
                         bool exclusive) override;
  absl::Status ZeroFill(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status RemoveAll(const std::string& path) override;
  absl::Status CreateDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override;
  bool Exists(const std::string& path) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::Status MakeOwnerOnly(const std::string& path) override;

 private:
  // A directory change not yet made durable by SyncDir(dir).
  struct Change {
    enum Kind { kCreated, kRenamed, kRemoved } kind;
    std::string dir;
    std::string path;   // created, removed, or the rename's target
    std::string from;   // the rename's source
    std::string saved;  // in trash: the removed entry or the replaced target; may be empty
  };

  // The status the next changing operation gets; OK to go ahead.
  absl::Status Admit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewTrashPath() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;
  const std::string trash_dir_;
  mutable absl::Mutex mu_;
  int operations_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_at_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t trash_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Change> unsynced_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cops

#endif  // COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_
