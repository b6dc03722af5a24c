#ifndef COPS_STORAGE_ROCKS_CHECKPOINT_H_
#define COPS_STORAGE_ROCKS_CHECKPOINT_H_

// A RocksDB checkpoint, the copy behind Index::CreateSnapshot and
// PrincipalStore::CreateCheckpoint (internal to storage/, like rocks_status.h).
//
// Thread-safety: safe while other threads read and write `db`.

#include <string>

#include "absl/status/status.h"

namespace rocksdb {
class DB;
}

namespace cops {

// Writes a consistent point-in-time copy of `db` (every column family) to directory `dir`,
// which must not exist (its parent must): RocksDB flushes the memtables, hard-links the SST
// files (copies them across file systems), copies the manifest and the log, syncs them,
// and renames the finished directory into place. The copy opens as a database of its own.
// Errors as FromRocks, with `dir` in the message.
absl::Status CreateRocksCheckpoint(rocksdb::DB& db, const std::string& dir);

}  // namespace cops

#endif  // COPS_STORAGE_ROCKS_CHECKPOINT_H_
