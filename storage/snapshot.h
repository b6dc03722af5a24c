#ifndef COPS_STORAGE_SNAPSHOT_H_
#define COPS_STORAGE_SNAPSHOT_H_

// A snapshot of a live data directory (storage/data_dir.h): a complete data directory of its
// own, written to <data-dir>/snapshots/<name>, that copsd starts on as it is once copied
// anywhere (`cp -a`, an archive: docs/operations.md, "Backup and restore"). It holds
//   - the live generation's index, a RocksDB checkpoint (index/ or index.<n>/);
//   - its key file (hash.key or hash_key.<n>), unless generation 0's key is given from
//     outside the data directory (--key-file, COPS_HASH_KEY): copsd is then started on the
//     snapshot with the same option;
//   - CURRENT when the live generation is n >= 1, and params as the data directory has it;
//   - the access store, a RocksDB checkpoint (access/), and admin.key when present;
//   - the receipt signing keys (signing_key.<n>, signing_key.<n>.pub), all that are present;
// and nothing else: no other generation, no temporary file, no snapshots/.
//
// Consistency: each checkpoint is a point-in-time copy of its database, in which every
// registration is wholly present or absent (each is one write batch). The index is copied
// first, then the access store, and the two are consistent with each other only if no index
// write happens in between: the caller keeps registrations out while WriteSnapshot runs
// (IndexGenerations::WriteSnapshot holds the registration lock). Then every principal,
// collection and audit record about a document of the copied index is in the copied access
// store; usage counters, charged after a registration's write, may lag by the registrations
// in flight, as after a crash.
//
// Secrets: the copy holds the hashing key, the receipt signing key, API key hashes and the
// stored texts, so it is made owner-only (FileSystem::MakeOwnerOnly: directories 0700, files
// 0600). Where the checkpoints hard-link SST files (the same file system), the live files
// share those modes.
//
// Durability: written to snapshots/<name>~tmp, synced, renamed to snapshots/<name>, and the
// directory synced: after a crash there is either the complete snapshot or none by that name
// (a leftover snapshots/<name>~tmp is deleted by DataDir::RemoveTemporaryFiles).
//
// Thread-safety: WriteSnapshot may run while the index and the access store are read and
// written; two snapshots of one directory must not be written at the same time.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "storage/data_dir.h"
#include "storage/index.h"
#include "storage/principal_store.h"

namespace cops {

// What a snapshot copies; none owned.
struct SnapshotSource {
  const DataDir* data_dir = nullptr;  // the live data directory, written through its fs()
  uint64_t generation = 0;            // its live generation (DataDir::ReadCurrent())
  const Index* index = nullptr;       // that generation's open index
  const PrincipalStore* access = nullptr;  // the open store of data_dir->AccessStorePath()
  // Whether the live generation's key is in its key file in the data directory: always for
  // n >= 1; false for generation 0 whose key is given from outside.
  bool key_in_data_dir = true;
};

// OK when `name` may name a snapshot: a valid access name (ValidateAccessName: it becomes a
// path component) other than "." and ".."; INVALID_ARGUMENT otherwise.
absl::Status ValidateSnapshotName(std::string_view name);

// Writes snapshot `name` of `source` (see above) and returns its path,
// source.data_dir->SnapshotPath(name). INVALID_ARGUMENT as ValidateSnapshotName;
// ALREADY_EXISTS when snapshot `name` exists; NOT_FOUND / DATA_LOSS when the live key file
// is missing / malformed; other errors as the file system's and RocksDB's. On error no
// snapshot `name` is created.
absl::StatusOr<std::string> WriteSnapshot(const SnapshotSource& source, std::string_view name);

}  // namespace cops

#endif  // COPS_STORAGE_SNAPSHOT_H_
