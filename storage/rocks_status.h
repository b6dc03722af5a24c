#ifndef COPS_STORAGE_ROCKS_STATUS_H_
#define COPS_STORAGE_ROCKS_STATUS_H_

// The one place a rocksdb::Status becomes an absl::Status (internal to storage/; only
// storage/ sources include this header, since it pulls in rocksdb/status.h).
//
// Thread-safety: stateless function.

#include <string_view>

#include "absl/status/status.h"
#include "rocksdb/status.h"

namespace cops {

// OK for OK; otherwise a code a caller can act on, and a message "<context>: <rocks text>":
//   NotFound -> NOT_FOUND; Corruption -> DATA_LOSS; IOError (no space) -> RESOURCE_EXHAUSTED;
//   IOError (other), Busy, TryAgain, ShutdownInProgress, Incomplete -> UNAVAILABLE;
//   TimedOut -> DEADLINE_EXCEEDED; InvalidArgument -> INVALID_ARGUMENT;
//   NotSupported -> UNIMPLEMENTED; Aborted -> ABORTED; anything else -> INTERNAL.
absl::Status FromRocks(const rocksdb::Status& s, std::string_view context);

}  // namespace cops

#endif  // COPS_STORAGE_ROCKS_STATUS_H_
