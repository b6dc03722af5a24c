#ifndef COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_
#define COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_

// A FileSystem for tests (as LevelDB's FaultInjectionTestEnv and RocksDB's
// FaultInjectionTestFS): one simulated disk under both the data directory's files and
// RocksDB's. The POSIX file system, plus
//   - FailOperation(n): the n-th changing operation fails once (INTERNAL), changing nothing;
//   - CrashAtOperation(n): the n-th changing operation and every operation after it fail
//     (UNAVAILABLE), changing nothing: the process has "stopped";
//   - Crash(): the machine stops now: every later change fails, RocksDB's included;
//   - SetDiskFull(true): until SetDiskFull(false), every append to, sync of or space
//     allocation for a file RocksDB writes fails with IOStatus::NoSpace (ENOSPC), writing
//     nothing;
//   - DropUnsyncedChanges(): what a power loss would leave: every file RocksDB wrote through
//     rocksdb_env() is cut back to its size at its last Sync/Fsync (0 if never synced), then
//     every name created, renamed or removed in a directory since its last SyncDir (or
//     RocksDB's fsync of that directory) is put back as it was, newest change first. The
//     contents of WriteFile and ZeroFill are always synced, so they stay.
// Changing operations of this interface, counted from 1: WriteFile, ZeroFill, Rename,
// RemoveAll, CreateDir, SyncDir, MakeOwnerOnly. RocksDB's file operations are not counted
// (its background threads would make the count vary) but fail once crashed. Removed entries
// and replaced rename targets are kept in `trash_dir` (on the same file system) until their
// directory is synced, so that they can be put back.
//
// rocksdb_env() models what RocksDB does on a POSIX file system: appends (a RangeSync is not
// durable), Sync/Fsync of files and directories, creating, renaming, linking and deleting
// files and directories. Files reused or written in place (ReuseWritableFile,
// NewRandomRWFile) are refused with NotSupported; COPS's options use neither.
// REQUIRES: every RocksDB database over rocksdb_env() is closed before DropUnsyncedChanges.
//
// Thread-safety: safe for concurrent use.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/file_system.h"

namespace rocksdb {
class Env;
}

namespace cops {

class FaultFileSystem final : public FileSystem {
 public:
  // REQUIRES: `trash_dir` is an existing empty directory on the file system the tested
  // directories are on, outside them.
  explicit FaultFileSystem(std::string trash_dir);
  ~FaultFileSystem() override;

  // RocksDB's view of this file system (IndexOptions::env, PrincipalStore::Open); owned by
  // this object.
  rocksdb::Env* rocksdb_env() const;

  void FailOperation(int n);
  void CrashAtOperation(int n);
  void Crash();
  void SetDiskFull(bool full);
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
  class RocksFileSystem;
  class RocksWritableFile;
  class RocksDirectory;

  // A file RocksDB writes: its size and its size at its last sync.
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };

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
  // The steps shared by both interfaces, after admission.
  absl::Status RenameTracked(const std::string& from, const std::string& to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RemoveTracked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteCreated(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the changes of `dir` (now durable), emptying their trash.
  void MarkDirSynced(const std::string& dir) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A RocksDB file `path` now being written from `size` on, of which `synced` bytes are
  // durable.
  std::shared_ptr<FileState> TrackFile(const std::string& path, uint64_t size, uint64_t synced)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;
  const std::string trash_dir_;
  mutable absl::Mutex mu_;
  int operations_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_at_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  bool disk_full_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t trash_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Change> unsynced_ ABSL_GUARDED_BY(mu_);
  // RocksDB's files written since the last DropUnsyncedChanges, by current path (a removed
  // one by its trash path).
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<rocksdb::Env> rocks_env_;
};

}  // namespace cops

#endif  // COPS_TESTS_STORAGE_FAULT_FILE_SYSTEM_H_
