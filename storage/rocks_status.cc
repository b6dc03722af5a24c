#include "storage/rocks_status.h"

#include <string>

namespace cops {

absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg(context);
  msg += ": ";
  msg += s.ToString();
  switch (s.code()) {
    case rocksdb::Status::kNotFound:
      return absl::NotFoundError(msg);
    case rocksdb::Status::kCorruption:
      return absl::DataLossError(msg);
    case rocksdb::Status::kIOError:
      if (s.IsNoSpace()) return absl::ResourceExhaustedError(msg);
      return absl::UnavailableError(msg);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTryAgain:
    case rocksdb::Status::kShutdownInProgress:
    case rocksdb::Status::kIncomplete:
      return absl::UnavailableError(msg);
    case rocksdb::Status::kTimedOut:
      return absl::DeadlineExceededError(msg);
    case rocksdb::Status::kInvalidArgument:
      return absl::InvalidArgumentError(msg);
    case rocksdb::Status::kNotSupported:
      return absl::UnimplementedError(msg);
    case rocksdb::Status::kAborted:
      return absl::AbortedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace cops
