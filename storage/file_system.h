#ifndef COPS_STORAGE_FILE_SYSTEM_H_
#define COPS_STORAGE_FILE_SYSTEM_H_

// The file operations of a data directory (storage/data_dir.h), behind a small interface so
// that tests can replace it: tests/storage/fault_file_system.h fails a chosen operation or
// "crashes" after N of them, dropping what was not synced (as LevelDB's Env and its
// FaultInjectionTestEnv). RocksDB's own files do not go through it.
//
// Durability model (POSIX): a file's bytes are durable once WriteFile returns (it fsyncs the
// file); a directory entry (a created, renamed or removed name) is durable only once SyncDir
// of its parent directory returns. WriteFileDurably and CreateFileDurably combine the steps.
//
// Thread-safety: implementations are safe for concurrent use; Default() lives forever.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cops {

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The POSIX file system.
  static FileSystem* Default();

  // The whole content of `path`: NOT_FOUND when it cannot be opened, INTERNAL on a read error.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;

  // Writes `data` to `path` (created with permission bits `mode`, else truncated), fsyncs and
  // closes it. With `exclusive`, ALREADY_EXISTS when `path` exists (O_EXCL: an existing file
  // is never touched). INTERNAL on other errors (a failed write may leave a partial file).
  virtual absl::Status WriteFile(const std::string& path, std::string_view data, uint32_t mode,
                                 bool exclusive) = 0;

  // Overwrites every byte of the existing file `path` with zeros in place (no truncation,
  // which would free the old blocks instead of overwriting them) and fsyncs it.
  virtual absl::Status ZeroFill(const std::string& path) = 0;

  // rename(2): atomically replaces `to` (a file) by `from`.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;

  // Removes the file or directory tree `path`; OK when it does not exist.
  virtual absl::Status RemoveAll(const std::string& path) = 0;

  // Creates `path` and its missing parents; OK when it exists as a directory.
  virtual absl::Status CreateDir(const std::string& path) = 0;

  // The names (not paths) of the entries of directory `dir`, in no particular order.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& dir) = 0;

  // Whether `path` exists (false also when that cannot be determined).
  virtual bool Exists(const std::string& path) = 0;

  // fsyncs directory `dir`, making the entries created, renamed or removed in it durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;

  // Makes `path` and, for a directory, everything under it readable by its owner only:
  // directories mode 0700, other files 0600 (symbolic links are neither followed nor
  // changed). A file with several hard links changes under all its names. The modes are
  // not fsynced.
  virtual absl::Status MakeOwnerOnly(const std::string& path) = 0;
};

// Replaces `path` so that a crash at any point leaves either its old content or `data`,
// never a mix: writes `<path>.tmp` (mode `mode`), fsyncs it, renames it over `path`, fsyncs
// the directory. Errors as the steps'; a leftover `<path>.tmp` is harmless.
absl::Status WriteFileDurably(FileSystem& fs, const std::string& path, std::string_view data,
                              uint32_t mode);

// Creates `path` with `data` (mode `mode`) only if it does not exist (ALREADY_EXISTS
// otherwise), fsyncs it and its directory. A crash leaves no file or a complete one, except
// a crash between the write and its fsync, which may leave it empty or partial.
absl::Status CreateFileDurably(FileSystem& fs, const std::string& path, std::string_view data,
                               uint32_t mode);

// The directory part of `path` ("." for a bare name).
std::string ParentDir(const std::string& path);

}  // namespace cops

#endif  // COPS_STORAGE_FILE_SYSTEM_H_
