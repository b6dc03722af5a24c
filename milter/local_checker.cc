#include "milter/local_checker.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/hash_key.h"
#include "core/status_macros.h"
#include "engine/copy_detector.h"
#include "protocol/check_reply.h"
#include "protocol/documents.h"
#include "storage/data_dir.h"
#include "storage/index.h"

namespace cops {

// One open copy of the directory: its index, a detector over it, and the collections it
// holds (fixed: the copy is read-only).
struct LocalIndex::Copy {
  std::unique_ptr<Index> index;
  std::unique_ptr<CopyDetector> detector;
  std::vector<std::string> collections;  // sorted
  uint64_t documents = 0;
};

namespace {

absl::StatusOr<std::shared_ptr<const LocalIndex::Copy>> OpenCopy(
    const LocalIndexOptions& options) {
  DataDir dir(options.data_dir);
  if (!dir.fs().Exists(options.data_dir)) {
    return absl::NotFoundError("data directory " + options.data_dir + " does not exist");
  }
  COPS_ASSIGN_OR_RETURN(const uint64_t live, dir.ReadCurrent());
  if (live != 0 && !options.key_file.empty()) {
    return absl::FailedPreconditionError("the hashing key of " + options.data_dir +
                                         " has been rotated (see " +
                                         dir.PathOf(DataDir::kCurrentFile) +
                                         "): its key is its own; drop --key-file");
  }
  absl::StatusOr<HashKey> key = options.key_file.empty()
                                    ? dir.ReadKey(live)
                                    : ReadKeyFile(dir.fs(), options.key_file);
  if (absl::IsNotFound(key.status()) && options.key_file.empty()) {
    return absl::NotFoundError(dir.KeyPath(live) +
                               " is missing: give the index's key file with --key-file");
  }
  if (!key.ok()) return key.status();
  COPS_ASSIGN_OR_RETURN(const std::optional<ChunkingParams> recorded, dir.ReadParams());
  if (!recorded.has_value()) {
    return absl::NotFoundError(options.data_dir + " holds no COPS index (no " +
                               dir.PathOf(DataDir::kParamsFile) + ")");
  }
  if (recorded->key_id != key->Id()) {
    return absl::FailedPreconditionError(
        "the hashing key (id " + key->Id() + ") is not the one the index in " +
        options.data_dir + " was built with (id " + recorded->key_id + ")");
  }
  IndexOptions index_options;
  index_options.path = dir.IndexPath(live);
  index_options.params = *recorded;  // Index::Open compares them with the index's own
  index_options.read_only = true;
  index_options.create_if_missing = false;
  index_options.min_free_disk_mb = 0;  // never writes
  index_options.block_cache_bytes = options.block_cache_bytes;
  // Each connection thread checks its own message: splitting one lookup over threads would
  // only take a core from another connection.
  index_options.lookup_threads = 1;
  auto copy = std::make_shared<LocalIndex::Copy>();
  COPS_ASSIGN_OR_RETURN(copy->index, Index::Open(index_options));
  COPS_ASSIGN_OR_RETURN(copy->detector,
                        CopyDetector::Create(copy->index.get(), *key, CopyDetectorOptions()));
  COPS_ASSIGN_OR_RETURN(copy->collections, copy->index->Collections());
  std::sort(copy->collections.begin(), copy->collections.end());
  copy->documents = copy->index->Stats().documents;
  return std::shared_ptr<const LocalIndex::Copy>(std::move(copy));
}

// What copsd's CheckOne does with a request, less the caller's authorization.
absl::Status CheckOne(const LocalIndex::Copy& copy, const v1::CheckDocumentRequest& request,
                      std::chrono::steady_clock::time_point deadline,
                      v1::CheckDocumentReply* reply) {
  reply->set_request_id(request.request_id());
  COPS_ASSIGN_OR_RETURN(CheckRequestInfo info,
                        CheckRequestFromProto(request, copy.detector->options().heavy_revisions));
  if (request.collections_size() > 0) {
    std::vector<std::string> collections;
    for (const std::string& c : request.collections()) {
      if (!std::binary_search(copy.collections.begin(), copy.collections.end(), c)) {
        return absl::NotFoundError("collection '" + c + "' not found");
      }
      collections.push_back(c);
    }
    info.collections = std::move(collections);
  }
  info.cancelled = [deadline] { return std::chrono::steady_clock::now() >= deadline; };
  if (info.cancelled()) return absl::DeadlineExceededError("the check's deadline passed");
  COPS_ASSIGN_OR_RETURN(const CheckResult result, copy.detector->Check(info));
  FillCheckReply(result, info, request.options(), copy.detector->params(), reply);
  return absl::OkStatus();
}

}  // namespace

LocalIndex::LocalIndex(LocalIndexOptions options, std::shared_ptr<const Copy> copy)
    : options_(std::move(options)), copy_(std::move(copy)) {}

LocalIndex::~LocalIndex() = default;

absl::StatusOr<std::unique_ptr<LocalIndex>> LocalIndex::Open(const LocalIndexOptions& options) {
  COPS_ASSIGN_OR_RETURN(std::shared_ptr<const Copy> copy, OpenCopy(options));
  if (options.warm_cache_fill > 0) copy->index->StartWarmingBlockCache(options.warm_cache_fill);
  return std::unique_ptr<LocalIndex>(new LocalIndex(options, std::move(copy)));
}

absl::Status LocalIndex::Reopen(const std::function<bool()>& stop) {
  COPS_ASSIGN_OR_RETURN(std::shared_ptr<const Copy> copy, OpenCopy(options_));
  if (options_.warm_cache_fill > 0) {
    // A failed read leaves the rest cold: checks then read the files, as without a warm-up.
    (void)copy->index->WarmBlockCache(options_.warm_cache_fill, stop);
  }
  // The old copy closes when its last check in flight lets go of it, outside the lock.
  std::shared_ptr<const Copy> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::exchange(copy_, std::move(copy));
  }
  return absl::OkStatus();
}

std::shared_ptr<const LocalIndex::Copy> LocalIndex::Current() const {
  absl::MutexLock lock(&mu_);
  return copy_;
}

std::vector<v1::CheckDocumentReply> LocalIndex::Check(
    const std::vector<v1::CheckDocumentRequest>& requests,
    std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::shared_ptr<const Copy> copy = Current();
  std::vector<v1::CheckDocumentReply> replies(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (absl::Status s = CheckOne(*copy, requests[i], deadline, &replies[i]); !s.ok()) {
      replies[i].Clear();
      FillCheckError(s, requests[i].request_id(), &replies[i]);
    }
  }
  return replies;
}

ChunkingParams LocalIndex::params() const { return Current()->detector->params(); }

uint64_t LocalIndex::documents() const { return Current()->documents; }

IndexStats LocalIndex::Stats() const { return Current()->index->Stats(); }

}  // namespace cops
