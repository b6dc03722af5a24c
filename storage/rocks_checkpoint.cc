#include "storage/rocks_checkpoint.h"

#include <memory>

#include "core/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/utilities/checkpoint.h"
#include "storage/rocks_status.h"

namespace cops {

absl::Status CreateRocksCheckpoint(rocksdb::DB& db, const std::string& dir) {
  rocksdb::Checkpoint* raw = nullptr;
  COPS_RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(&db, &raw), "checkpoint"));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush = 0: flush first, so the copy holds SST files and a short log.
  return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0),
                   "creating checkpoint " + dir);
}

}  // namespace cops
