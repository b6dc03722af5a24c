#ifndef COPS_STORAGE_PRINCIPAL_STORE_H_
#define COPS_STORAGE_PRINCIPAL_STORE_H_

// The access store: principals, their API key records (salted hashes only), collections and
// their privacy settings, per-principal usage counters and the per-document audit trail of
// checks. It lives in its own small RocksDB directory (by default <data-dir>/access), apart
// from the index, so that access data never mixes with postings and the index can be rebuilt
// (e.g. under a new hashing key) without touching who may do what.
// On-disk layout: docs/security.md ("The access store").
//
// Thread-safety: a PrincipalStore is safe for concurrent use from many threads. Each Put is
// one atomic RocksDB write; AddUsage is a serialized read-modify-write.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace rocksdb {
class DB;
class Env;
class Status;
}

namespace cops {

struct PrincipalRecord {
  std::string name;  // unique; see ValidateAccessName()
  // A cops::Role value (access/authorizer.h). on-disk: do not change values.
  uint8_t role = 0;
  // Collections the principal may use; for role admin, empty means all.
  std::vector<std::string> collections;
  int64_t created_unix_micros = 0;
  // Limits; 0 means "the server's default" for the rates and "unlimited" for quotas.
  double requests_per_second = 0;  // token-bucket refill rate
  uint32_t burst = 0;              // token-bucket capacity
  uint64_t max_documents = 0;      // lifetime registrations accepted
  uint64_t max_bytes = 0;          // lifetime bytes submitted for registration
};

// One API key. The key itself ("cops_<key_id>_<secret>") is shown once at creation and
// never stored: only `salt` and hash = SHA-256(salt || secret) are.
struct ApiKeyRecord {
  std::string key_id;     // public identifier, 16 lowercase hex digits
  std::string principal;  // owner of the key
  std::string salt;       // 16 random bytes
  std::string hash;       // 32 bytes
  int64_t created_unix_micros = 0;
  int64_t revoked_unix_micros = 0;  // 0 while the key is active
};

struct CollectionRecord {
  std::string name;
  // Whether checkers see the titles of this collection's documents in reports.
  bool show_titles_to_checkers = false;
  // Whether every check that reports one of this collection's documents leaves an audit
  // record the document's owner can query.
  bool keep_audit = true;
  int64_t created_unix_micros = 0;
  // A template collection: text a checked document shares with its documents never counts
  // against it (core/detect.h, CandidateRecord::template_source).
  bool template_source = false;
  // Lifetime of documents registered without an expiry, seconds; 0 = no default expiry.
  // At most kMaxRetentionSeconds (PutCollection refuses more), so that a registration's
  // expiry (now + retention, in microseconds) stays far inside 64 bits.
  int64_t retention_seconds = 0;
  static constexpr int64_t kMaxRetentionSeconds = int64_t{1000} * 366 * 86400;  // ~1000 years
};

// One check that reported one registered document.
struct AuditRecord {
  uint64_t doc_id = 0;  // the registered document that was hit
  std::string collection;
  int64_t unix_micros = 0;  // when the check ran
  std::string checker;      // principal name of the caller
  double ratio = 0;
  double containment = 0;
  uint32_t matched_chunks = 0;
  bool violation = false;
  // The registered document's owner ("" in records written before owners were recorded:
  // QueryAuditOfOwner does not find those).
  std::string owner;
  std::string test_sha256;  // SHA-256 of the checked document's bytes, lowercase hex
};

struct UsageRecord {
  uint64_t documents = 0;
  uint64_t bytes = 0;
};

// A principal's webhook of the HTTP API (PUT /v1/webhook, http/webhooks.h): its default
// callback URL ("" = none) and its signing secret, kept so that a restart keeps both. The
// secret is stored as is (every delivery is signed with it), in the access store that only
// copsd's user may read, as the data directory's other secrets.
struct WebhookRecord {
  std::string principal;
  std::string url;
  std::string secret;
};

struct PrincipalStoreOptions {
  // RocksDB's access to files (not owned, must outlive the store; nullptr =
  // rocksdb::Env::Default(); tests pass one that simulates power loss or a full disk).
  rocksdb::Env* env = nullptr;
  // Free space, MiB, that writes leave on the store's file system (copsd --min-free-disk-mb,
  // as the index's IndexOptions::min_free_disk_mb): below it every write that adds data is
  // refused with RESOURCE_EXHAUSTED naming the reserve, before RocksDB could meet a full disk
  // (reads go on, and so do removals: the audit sweep is what frees room). Writes resume
  // by themselves once space is freed. 0 = no reserve.
  uint64_t min_free_disk_mb = 0;
  // Free bytes of the file system holding the store (statvfs when empty); for tests.
  std::function<absl::StatusOr<uint64_t>(const std::string& path)> free_disk_bytes;
};

// OK when `name` is 1..128 characters of [A-Za-z0-9._@:-] (principal and collection
// names, which appear in certificates, logs and file names); INVALID_ARGUMENT otherwise.
absl::Status ValidateAccessName(std::string_view kind, std::string_view name);

class PrincipalStore {
 public:
  // Opens (creating when missing) the store in directory `path`.
  // INTERNAL/FAILED_PRECONDITION with RocksDB's message when the directory is unusable.
  static absl::StatusOr<std::unique_ptr<PrincipalStore>> Open(const std::string& path,
                                                              PrincipalStoreOptions options);
  // As above with options.env = `env` and no free-space reserve.
  static absl::StatusOr<std::unique_ptr<PrincipalStore>> Open(const std::string& path,
                                                              rocksdb::Env* env = nullptr);
  ~PrincipalStore();
  PrincipalStore(const PrincipalStore&) = delete;
  PrincipalStore& operator=(const PrincipalStore&) = delete;

  // Create or replace (keyed by name / key_id). INVALID_ARGUMENT on a bad name.
  absl::Status PutPrincipal(const PrincipalRecord& record);
  absl::Status PutKey(const ApiKeyRecord& record);
  absl::Status PutCollection(const CollectionRecord& record);

  // NOT_FOUND when absent.
  absl::StatusOr<PrincipalRecord> GetPrincipal(std::string_view name) const;
  absl::StatusOr<ApiKeyRecord> GetKey(std::string_view key_id) const;
  absl::StatusOr<CollectionRecord> GetCollection(std::string_view name) const;

  // All records, ordered by name / key_id.
  absl::StatusOr<std::vector<PrincipalRecord>> ListPrincipals() const;
  absl::StatusOr<std::vector<ApiKeyRecord>> ListKeys() const;
  absl::StatusOr<std::vector<CollectionRecord>> ListCollections() const;

  // Webhooks, one per principal: create or replace (INVALID_ARGUMENT on a bad name, "" being
  // the caller without authentication, or a URL or secret holding a NUL byte), delete (OK when there is none), all by principal.
  absl::Status PutWebhook(const WebhookRecord& record);
  absl::Status DeleteWebhook(std::string_view principal);
  absl::StatusOr<std::vector<WebhookRecord>> ListWebhooks() const;

  // The webhook deliveries of one HTTP API job (pending ones and their attempts, so that a
  // restart resumes them), as http/webhooks.cc encodes them: opaque here, one value per job
  // id (1..256 bytes). Put creates or replaces (synced), Delete is OK when there is none,
  // List gives every value, ordered by job id.
  absl::Status PutWebhookDeliveries(std::string_view job_id, std::string_view value);
  absl::Status DeleteWebhookDeliveries(std::string_view job_id);
  absl::StatusOr<std::vector<std::string>> ListWebhookDeliveries() const;

  // Usage counters (zero when never charged).
  absl::StatusOr<UsageRecord> GetUsage(std::string_view principal) const;
  // Adds the deltas when the result stays within the limits (0 = unlimited) and returns the
  // new totals; RESOURCE_EXHAUSTED naming the limit otherwise (nothing is charged).
  absl::StatusOr<UsageRecord> AddUsage(std::string_view principal, uint64_t documents,
                                       uint64_t bytes, uint64_t max_documents,
                                       uint64_t max_bytes);

  // Writes a consistent point-in-time copy of the store to `dir` (must not exist; its parent
  // must), a RocksDB checkpoint (storage/rocks_checkpoint.h) that Open() opens as a store of
  // its own. Errors as RocksDB's.
  absl::Status CreateCheckpoint(const std::string& dir) const;

  // Appends the records in one atomic write, each indexed by document, by owner and by
  // time.
  absl::Status AppendAudit(const std::vector<AuditRecord>& records);
  // Records about `doc_id`, oldest first, at or after `since_unix_micros`, at most `limit`
  // (clamped to [1, 10000]).
  absl::StatusOr<std::vector<AuditRecord>> QueryAudit(uint64_t doc_id,
                                                      int64_t since_unix_micros,
                                                      size_t limit) const;
  // Records whose document is owned by `owner` (AuditRecord::owner), at or after
  // `since_unix_micros`, only of `doc_id` unless it is 0; oldest first (with doc_id 0 in
  // time order across documents), at most `limit` (clamped to [1, 10000]). Reads only the
  // records it returns (and, with a doc_id, that document's records).
  absl::StatusOr<std::vector<AuditRecord>> QueryAuditOfOwner(std::string_view owner,
                                                             uint64_t doc_id,
                                                             int64_t since_unix_micros,
                                                             size_t limit) const;
  // Deletes, in one atomic write, up to `max_records` (>= 1) of the oldest records checked
  // before `before_unix_micros`; returns how many (0: none is left that old). Reads only the
  // records it deletes.
  absl::StatusOr<size_t> RemoveAuditBefore(int64_t before_unix_micros, size_t max_records);

 private:
  PrincipalStore(std::unique_ptr<rocksdb::DB> db, std::string path,
                 PrincipalStoreOptions options);
  // RESOURCE_EXHAUSTED naming the reserve when the store's file system has less free space
  // than options_.min_free_disk_mb (read with statvfs at each write: they are few and small).
  absl::Status CheckSpace() const;
  // Before a write: when an earlier write failed on an I/O error (a full disk; RocksDB then
  // refuses every write), checks with a small synced file that the disk has space again
  // (RESOURCE_EXHAUSTED while not), then reopens the database under db_mu_ held
  // exclusively. Nothing acknowledged is lost either way.
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(db_mu_);
  // UNAVAILABLE when a reopen failed (db_ is null); the next write tries again.
  absl::Status CheckOpen() const ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // `s`, noting an I/O error for Recover.
  rocksdb::Status Noted(rocksdb::Status s);
  absl::Status Put(std::string_view key, std::string_view value);
  absl::Status Delete(std::string_view key);  // synced, as Put
  absl::StatusOr<std::string> Get(std::string_view key) const;
  absl::StatusOr<std::vector<std::string>> ScanValues(std::string_view prefix) const;
  // Audit records under `prefix` + BE64 time, from `since_unix_micros` on, that `keep`
  // accepts (all when null), at most `limit` (clamped to [1, 10000]).
  absl::StatusOr<std::vector<AuditRecord>> ScanAudit(
      std::string_view prefix, int64_t since_unix_micros, size_t limit,
      const std::function<bool(const AuditRecord&)>& keep) const;

  const std::string path_;
  const PrincipalStoreOptions options_;
  rocksdb::Env* const env_;  // options_.env
  // Shared by every use of db_, exclusive while Recover reopens it. Taken after usage_mu_.
  mutable absl::Mutex db_mu_;
  std::unique_ptr<rocksdb::DB> db_ ABSL_GUARDED_BY(db_mu_);
  absl::Mutex recover_mu_;  // serializes Recover
  std::atomic<bool> write_failed_{false};
  absl::Mutex usage_mu_;  // serializes AddUsage's read-modify-write
  absl::Mutex audit_mu_;
  uint32_t audit_seq_ ABSL_GUARDED_BY(audit_mu_) = 0;
};

}  // namespace cops

#endif  // COPS_STORAGE_PRINCIPAL_STORE_H_
