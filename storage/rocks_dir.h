#ifndef COPS_STORAGE_ROCKS_DIR_H_
#define COPS_STORAGE_ROCKS_DIR_H_

// Making a RocksDB database directory itself durable (internal to storage/). RocksDB syncs
// the files inside a database directory and the directory's own entries, never the parent
// directory's entry for the database directory: after a power loss, a database created
// since the parent was last synced may vanish whole, acknowledged writes and all.
//
// Thread-safety: stateless function.

#include <string>

#include "absl/status/status.h"

namespace rocksdb {
class Env;
}

namespace cops {

// Creates directory `path` through `env` when it is missing (its parent must exist), then
// fsyncs the parent directory so that the name survives a power loss. OK when `path`
// exists (the parent is synced all the same: it may have been created just before a
// crash). Errors as RocksDB's, through FromRocks.
absl::Status CreateDirDurably(rocksdb::Env& env, const std::string& path);

}  // namespace cops

#endif  // COPS_STORAGE_ROCKS_DIR_H_
