#include "storage/principal_store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"
#include "storage/access_records.h"
#include "storage/rocks_checkpoint.h"
#include "storage/rocks_dir.h"

namespace cops {
namespace {

using access_records::DecodeAudit;
using access_records::DecodeCollection;
using access_records::DecodeKey;
using access_records::DecodePrincipal;
using access_records::DecodeUsage;
using access_records::EncodeAudit;
using access_records::EncodeCollection;
using access_records::EncodeKey;
using access_records::EncodePrincipal;
using access_records::EncodeUsage;

// Key prefixes. on-disk: do not change.
constexpr std::string_view kMetaVersionKey = "meta/version";
constexpr std::string_view kPrincipalPrefix = "p/";
constexpr std::string_view kKeyPrefix = "k/";
constexpr std::string_view kCollectionPrefix = "c/";
constexpr std::string_view kUsagePrefix = "u/";
// Webhooks: "w/<principal>" -> principal NUL url NUL secret.
constexpr std::string_view kWebhookPrefix = "w/";
// Webhook deliveries of a job: "d/<job id>" -> the value http/webhooks.cc encodes.
constexpr std::string_view kDeliveriesPrefix = "d/";
// The audit trail, one record under three keys (docs/security.md): by document, by time
// (for the retention sweep) and by the document's owner (for `cops matches`).
constexpr std::string_view kAuditPrefix = "a/";
constexpr std::string_view kAuditByTimePrefix = "t/";
constexpr std::string_view kAuditByOwnerPrefix = "o/";
// Schema 1 had the audit trail under kAuditPrefix only; opening it adds the time index.
constexpr std::string_view kSchemaVersion = "2";
constexpr std::string_view kSchemaVersionWithoutTimeIndex = "1";

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = StrCat("access store: ", what, ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNoSpace()) return absl::ResourceExhaustedError(msg);
  if (s.IsIOError()) return absl::UnavailableError(msg);
  if (s.IsInvalidArgument()) return absl::FailedPreconditionError(msg);
  return absl::InternalError(msg);
}

void AppendBigEndian64(uint64_t v, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}
void AppendBigEndian32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

std::string AuditKeyPrefix(uint64_t doc_id) {
  std::string key(kAuditPrefix);
  AppendBigEndian64(doc_id, &key);
  return key;
}

std::string AuditOwnerPrefix(std::string_view owner) {
  std::string key(kAuditByOwnerPrefix);
  AppendBigEndian32(static_cast<uint32_t>(owner.size()), &key);
  key.append(owner);
  return key;
}

// Time (clamped at 0) and sequence number: the suffix of a record's three keys.
std::string AuditSuffix(int64_t unix_micros, uint32_t seq) {
  std::string s;
  AppendBigEndian64(static_cast<uint64_t>(std::max<int64_t>(unix_micros, 0)), &s);
  AppendBigEndian32(seq, &s);
  return s;
}
constexpr size_t kAuditSuffixBytes = 12;

template <typename T, typename Decode>
absl::StatusOr<std::vector<T>> DecodeAll(absl::StatusOr<std::vector<std::string>> values,
                                         Decode decode) {
  COPS_RETURN_IF_ERROR(values.status());
  std::vector<T> out;
  out.reserve(values->size());
  for (const std::string& v : *values) {
    COPS_ASSIGN_OR_RETURN(T r, decode(v));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

absl::Status ValidateAccessName(std::string_view kind, std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return absl::InvalidArgumentError(
        StrCat(kind, " name must be 1 to 128 characters, got ", name.size()));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '@' || c == ':' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(StrCat(
          kind, " name '", name, "' may only contain letters, digits and . _ @ : -"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Upgrades a schema-1 store: a time-index entry for every audit record, then the version,
// in batches; a crash in between repeats the (idempotent) copy at the next open. Records of
// schema 1 name no owner, so they get no owner entry.
absl::Status AddAuditTimeIndex(rocksdb::DB* db) {
  constexpr size_t kBatch = 10000;
  const rocksdb::Slice prefix(kAuditPrefix.data(), kAuditPrefix.size());
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  rocksdb::WriteBatch batch;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() != kAuditPrefix.size() + 8 + kAuditSuffixBytes) {
      return absl::DataLossError("access store: malformed audit key");
    }
    std::string by_time(kAuditByTimePrefix);
    by_time.append(key.data() + key.size() - kAuditSuffixBytes, kAuditSuffixBytes);
    if (!batch.Put(by_time, it->value()).ok() ||
        (batch.Count() >= kBatch && !db->Write(rocksdb::WriteOptions(), &batch).ok())) {
      return absl::InternalError("access store: adding the audit time index failed");
    }
    if (batch.Count() >= kBatch) batch.Clear();
  }
  if (!it->status().ok()) return FromRocks(it->status(), "audit scan");
  rocksdb::Status s = batch.Put(std::string(kMetaVersionKey), std::string(kSchemaVersion));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = db->Write(wo, &batch);
  return FromRocks(s, "upgrading the audit trail");
}

rocksdb::Options StoreOptions(rocksdb::Env* env) {
  rocksdb::Options options;
  options.create_if_missing = true;
  if (env != nullptr) options.env = env;
  // Small and rarely written: keep its footprint small next to the index.
  options.write_buffer_size = 4 << 20;
  options.max_open_files = 64;
  options.keep_log_file_num = 2;
  return options;
}

}  // namespace

PrincipalStore::PrincipalStore(std::unique_ptr<rocksdb::DB> db, std::string path,
                               PrincipalStoreOptions options)
    : path_(std::move(path)),
      options_(std::move(options)),
      env_(options_.env),
      db_(std::move(db)) {}

absl::Status PrincipalStore::CheckSpace() const {
  if (options_.min_free_disk_mb == 0) return absl::OkStatus();
  absl::StatusOr<uint64_t> free = uint64_t{0};
  if (options_.free_disk_bytes) {
    free = options_.free_disk_bytes(path_);
  } else if (struct statvfs fs {}; statvfs(path_.c_str(), &fs) == 0) {
    // f_bavail: the blocks an unprivileged process may use, as the index counts them.
    free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  } else {
    free = absl::UnavailableError("statvfs failed");
  }
  // Unknown free space does not stop writes: RocksDB's own errors remain.
  if (!free.ok() || *free >= options_.min_free_disk_mb << 20) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      StrCat("access store ", path_, ": the data directory's file system has less than ",
             options_.min_free_disk_mb,
             " MiB free (copsd --min-free-disk-mb); writes resume once space is freed"));
}
PrincipalStore::~PrincipalStore() = default;

rocksdb::Status PrincipalStore::Noted(rocksdb::Status s) {
  if (s.IsIOError()) write_failed_.store(true);
  return s;
}

absl::Status PrincipalStore::CheckOpen() const {
  if (db_ != nullptr) return absl::OkStatus();
  return absl::UnavailableError(StrCat("access store ", path_,
                                       " is closed after a write error; it is reopened once "
                                       "the disk has space again"));
}

absl::Status PrincipalStore::Recover() {
  if (!write_failed_.load()) return absl::OkStatus();
  absl::MutexLock serial(&recover_mu_);
  if (!write_failed_.load()) return absl::OkStatus();  // recovered meanwhile
  // As Index::Rep::Recover (storage/index.cc): a small synced write shows space is back,
  // then the database is reopened, which RocksDB 7.8's DB::Resume cannot be relied on for.
  const rocksdb::Options options = StoreOptions(env_);
  rocksdb::Env* env = options.env;
  const std::string probe = path_ + "/SPACE_PROBE";
  std::unique_ptr<rocksdb::WritableFile> file;
  rocksdb::Status s = env->NewWritableFile(probe, &file, rocksdb::EnvOptions());
  if (s.ok()) s = file->Append(std::string(size_t{1} << 20, '\0'));
  if (s.ok()) s = file->Sync();
  if (file != nullptr) file->Close().PermitUncheckedError();
  env->DeleteFile(probe).PermitUncheckedError();
  if (!s.ok()) {
    return FromRocks(s, "an earlier write failed and the disk has no space yet; writes "
                        "resume once space is freed");
  }
  absl::MutexLock exclusive(&db_mu_);
  if (db_ != nullptr) {
    db_->Close().PermitUncheckedError();  // the database is reopened below
    db_.reset();
  }
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::Open(options, path_, &raw);
  if (!s.ok()) return FromRocks(s, "reopening after a write error");
  db_.reset(raw);
  write_failed_.store(false);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PrincipalStore>> PrincipalStore::Open(const std::string& path,
                                                                     rocksdb::Env* env) {
  PrincipalStoreOptions options;
  options.env = env;
  return Open(path, std::move(options));
}

absl::StatusOr<std::unique_ptr<PrincipalStore>> PrincipalStore::Open(
    const std::string& path, PrincipalStoreOptions store_options) {
  const rocksdb::Options options = StoreOptions(store_options.env);
  COPS_RETURN_IF_ERROR(CreateDirDurably(*options.env, path));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (!s.ok()) return FromRocks(s, StrCat("opening ", path));

  std::string version;
  s = db->Get(rocksdb::ReadOptions(), std::string(kMetaVersionKey), &version);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = db->Put(wo, std::string(kMetaVersionKey), std::string(kSchemaVersion));
    if (!s.ok()) return FromRocks(s, "writing schema version");
  } else if (!s.ok()) {
    return FromRocks(s, "reading schema version");
  } else if (version == kSchemaVersionWithoutTimeIndex) {
    COPS_RETURN_IF_ERROR(AddAuditTimeIndex(db.get()));
  } else if (version != kSchemaVersion) {
    return absl::FailedPreconditionError(StrCat(
        "access store ", path, " has schema version ", version, ", this build reads ",
        kSchemaVersion));
  }
  return std::unique_ptr<PrincipalStore>(
      new PrincipalStore(std::move(db), path, std::move(store_options)));
}

absl::Status PrincipalStore::CreateCheckpoint(const std::string& dir) const {
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  return CreateRocksCheckpoint(*db_, dir);
}

absl::Status PrincipalStore::Put(std::string_view key, std::string_view value) {
  // Access changes (a revoked key above all) must survive power loss: sync each one.
  rocksdb::WriteOptions wo;
  wo.sync = true;
  COPS_RETURN_IF_ERROR(CheckSpace());
  COPS_RETURN_IF_ERROR(Recover());
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  return FromRocks(Noted(db_->Put(wo, rocksdb::Slice(key.data(), key.size()),
                                  rocksdb::Slice(value.data(), value.size()))),
                   "write");
}

absl::Status PrincipalStore::Delete(std::string_view key) {
  rocksdb::WriteOptions wo;
  wo.sync = true;  // as Put: a deleted record must stay deleted
  COPS_RETURN_IF_ERROR(Recover());
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  return FromRocks(Noted(db_->Delete(wo, rocksdb::Slice(key.data(), key.size()))), "delete");
}

absl::StatusOr<std::string> PrincipalStore::Get(std::string_view key) const {
  std::string value;
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
  if (!s.ok()) return FromRocks(s, "read");
  return value;
}

absl::StatusOr<std::vector<std::string>> PrincipalStore::ScanValues(
    std::string_view prefix) const {
  std::vector<std::string> out;
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  rocksdb::Slice p(prefix.data(), prefix.size());
  for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
    out.push_back(it->value().ToString());
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scan");
  return out;
}

absl::Status PrincipalStore::PutPrincipal(const PrincipalRecord& record) {
  COPS_RETURN_IF_ERROR(ValidateAccessName("principal", record.name));
  return Put(StrCat(kPrincipalPrefix, record.name), EncodePrincipal(record));
}

absl::Status PrincipalStore::PutKey(const ApiKeyRecord& record) {
  if (record.key_id.empty() || record.salt.empty() || record.hash.size() != 32) {
    return absl::InvalidArgumentError("api key record needs a key id, a salt and a 32-byte hash");
  }
  return Put(StrCat(kKeyPrefix, record.key_id), EncodeKey(record));
}

absl::Status PrincipalStore::PutCollection(const CollectionRecord& record) {
  COPS_RETURN_IF_ERROR(ValidateAccessName("collection", record.name));
  if (record.retention_seconds < 0 ||
      record.retention_seconds > CollectionRecord::kMaxRetentionSeconds) {
    return absl::InvalidArgumentError(
        StrCat("retention of collection '", record.name, "' must be 0 to ",
               CollectionRecord::kMaxRetentionSeconds, " seconds (about 1,000 years)"));
  }
  return Put(StrCat(kCollectionPrefix, record.name), EncodeCollection(record));
}

absl::StatusOr<PrincipalRecord> PrincipalStore::GetPrincipal(std::string_view name) const {
  auto v = Get(StrCat(kPrincipalPrefix, name));
  if (absl::IsNotFound(v.status())) {
    return absl::NotFoundError(StrCat("no principal named '", name, "'"));
  }
  COPS_RETURN_IF_ERROR(v.status());
  return DecodePrincipal(*v);
}

absl::StatusOr<ApiKeyRecord> PrincipalStore::GetKey(std::string_view key_id) const {
  auto v = Get(StrCat(kKeyPrefix, key_id));
  if (absl::IsNotFound(v.status())) {
    return absl::NotFoundError(StrCat("no api key with id '", key_id, "'"));
  }
  COPS_RETURN_IF_ERROR(v.status());
  return DecodeKey(*v);
}

absl::StatusOr<CollectionRecord> PrincipalStore::GetCollection(std::string_view name) const {
  auto v = Get(StrCat(kCollectionPrefix, name));
  if (absl::IsNotFound(v.status())) {
    return absl::NotFoundError(StrCat("no collection named '", name, "'"));
  }
  COPS_RETURN_IF_ERROR(v.status());
  return DecodeCollection(*v);
}

absl::StatusOr<std::vector<PrincipalRecord>> PrincipalStore::ListPrincipals() const {
  return DecodeAll<PrincipalRecord>(ScanValues(kPrincipalPrefix), DecodePrincipal);
}

absl::StatusOr<std::vector<ApiKeyRecord>> PrincipalStore::ListKeys() const {
  return DecodeAll<ApiKeyRecord>(ScanValues(kKeyPrefix), DecodeKey);
}

absl::StatusOr<std::vector<CollectionRecord>> PrincipalStore::ListCollections() const {
  return DecodeAll<CollectionRecord>(ScanValues(kCollectionPrefix), DecodeCollection);
}

absl::Status PrincipalStore::PutWebhook(const WebhookRecord& record) {
  // "" is the one caller of a copsd without authentication.
  if (!record.principal.empty()) {
    COPS_RETURN_IF_ERROR(ValidateAccessName("principal", record.principal));
  }
  if (record.url.find('\0') != std::string::npos ||
      record.secret.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("a webhook's URL and secret cannot hold a NUL byte");
  }
  return Put(StrCat(kWebhookPrefix, record.principal),
             StrCat(record.principal, std::string_view("\0", 1), record.url,
                    std::string_view("\0", 1), record.secret));
}

absl::Status PrincipalStore::DeleteWebhook(std::string_view principal) {
  return Delete(StrCat(kWebhookPrefix, principal));
}

namespace {

absl::Status CheckJobId(std::string_view job_id) {
  if (job_id.empty() || job_id.size() > 256) {
    return absl::InvalidArgumentError(
        StrCat("a job id must be 1 to 256 bytes, got ", job_id.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PrincipalStore::PutWebhookDeliveries(std::string_view job_id,
                                                  std::string_view value) {
  COPS_RETURN_IF_ERROR(CheckJobId(job_id));
  return Put(StrCat(kDeliveriesPrefix, job_id), value);
}

absl::Status PrincipalStore::DeleteWebhookDeliveries(std::string_view job_id) {
  COPS_RETURN_IF_ERROR(CheckJobId(job_id));
  return Delete(StrCat(kDeliveriesPrefix, job_id));
}

absl::StatusOr<std::vector<std::string>> PrincipalStore::ListWebhookDeliveries() const {
  return ScanValues(kDeliveriesPrefix);
}

absl::StatusOr<std::vector<WebhookRecord>> PrincipalStore::ListWebhooks() const {
  return DecodeAll<WebhookRecord>(
      ScanValues(kWebhookPrefix), [](std::string_view v) -> absl::StatusOr<WebhookRecord> {
        const size_t first = v.find('\0');
        const size_t second = first == std::string_view::npos ? first : v.find('\0', first + 1);
        if (second == std::string_view::npos) {
          return absl::DataLossError("a webhook record without its three fields");
        }
        return WebhookRecord{std::string(v.substr(0, first)),
                             std::string(v.substr(first + 1, second - first - 1)),
                             std::string(v.substr(second + 1))};
      });
}

absl::StatusOr<UsageRecord> PrincipalStore::GetUsage(std::string_view principal) const {
  auto v = Get(StrCat(kUsagePrefix, principal));
  if (absl::IsNotFound(v.status())) return UsageRecord{};
  COPS_RETURN_IF_ERROR(v.status());
  return DecodeUsage(*v);
}

absl::StatusOr<UsageRecord> PrincipalStore::AddUsage(std::string_view principal,
                                                     uint64_t documents, uint64_t bytes,
                                                     uint64_t max_documents,
                                                     uint64_t max_bytes) {
  COPS_RETURN_IF_ERROR(CheckSpace());
  COPS_RETURN_IF_ERROR(Recover());
  absl::MutexLock lock(&usage_mu_);
  absl::StatusOr<UsageRecord> usage = GetUsage(principal);
  COPS_RETURN_IF_ERROR(usage.status());
  if (max_documents != 0 && usage->documents + documents > max_documents) {
    return absl::ResourceExhaustedError(
        StrCat("principal '", principal, "' reached its quota of ", max_documents,
                     " documents"));
  }
  if (max_bytes != 0 && usage->bytes + bytes > max_bytes) {
    return absl::ResourceExhaustedError(StrCat(
        "principal '", principal, "' would exceed its quota of ", max_bytes, " bytes (",
        usage->bytes, " used, ", bytes, " more requested)"));
  }
  usage->documents += documents;
  usage->bytes += bytes;
  // Not synced: after a power loss a few registrations may go uncounted, which is cheaper
  // than an fsync per registration and errs in the user's favour.
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  rocksdb::Status s = Noted(
      db_->Put(rocksdb::WriteOptions(), StrCat(kUsagePrefix, principal), EncodeUsage(*usage)));
  if (!s.ok()) return FromRocks(s, "usage write");
  return *usage;
}

absl::Status PrincipalStore::AppendAudit(const std::vector<AuditRecord>& records) {
  if (records.empty()) return absl::OkStatus();
  rocksdb::WriteBatch batch;
  {
    absl::MutexLock lock(&audit_mu_);
    for (const AuditRecord& r : records) {
      // Time, then a sequence number so two checks in the same microsecond both keep
      // their record.
      const std::string suffix = AuditSuffix(r.unix_micros, audit_seq_++);
      const std::string value = EncodeAudit(r);
      rocksdb::Status s = batch.Put(AuditKeyPrefix(r.doc_id) + suffix, value);
      if (s.ok()) s = batch.Put(StrCat(kAuditByTimePrefix, suffix), value);
      if (s.ok() && !r.owner.empty()) s = batch.Put(AuditOwnerPrefix(r.owner) + suffix, value);
      if (!s.ok()) return FromRocks(s, "audit batch");
    }
  }
  COPS_RETURN_IF_ERROR(CheckSpace());
  COPS_RETURN_IF_ERROR(Recover());
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  return FromRocks(Noted(db_->Write(rocksdb::WriteOptions(), &batch)), "audit write");
}

absl::StatusOr<std::vector<AuditRecord>> PrincipalStore::ScanAudit(
    std::string_view prefix, int64_t since_unix_micros, size_t limit,
    const std::function<bool(const AuditRecord&)>& keep) const {
  limit = std::clamp<size_t>(limit, 1, 10000);
  const rocksdb::Slice p(prefix.data(), prefix.size());
  std::string start(prefix);
  AppendBigEndian64(static_cast<uint64_t>(std::max<int64_t>(since_unix_micros, 0)), &start);
  std::vector<AuditRecord> out;
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(start); it->Valid() && it->key().starts_with(p) && out.size() < limit;
       it->Next()) {
    COPS_ASSIGN_OR_RETURN(AuditRecord r, DecodeAudit(it->value().ToStringView()));
    if (keep == nullptr || keep(r)) out.push_back(std::move(r));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "audit scan");
  return out;
}

absl::StatusOr<std::vector<AuditRecord>> PrincipalStore::QueryAudit(uint64_t doc_id,
                                                                    int64_t since_unix_micros,
                                                                    size_t limit) const {
  return ScanAudit(AuditKeyPrefix(doc_id), since_unix_micros, limit, nullptr);
}

absl::StatusOr<std::vector<AuditRecord>> PrincipalStore::QueryAuditOfOwner(
    std::string_view owner, uint64_t doc_id, int64_t since_unix_micros, size_t limit) const {
  if (owner.empty()) return std::vector<AuditRecord>{};
  if (doc_id == 0) return ScanAudit(AuditOwnerPrefix(owner), since_unix_micros, limit, nullptr);
  return ScanAudit(AuditKeyPrefix(doc_id), since_unix_micros, limit,
                   [owner](const AuditRecord& r) { return r.owner == owner; });
}

absl::StatusOr<size_t> PrincipalStore::RemoveAuditBefore(int64_t before_unix_micros,
                                                         size_t max_records) {
  if (max_records == 0) return absl::InvalidArgumentError("RemoveAuditBefore needs a batch size");
  const rocksdb::Slice prefix(kAuditByTimePrefix.data(), kAuditByTimePrefix.size());
  rocksdb::WriteBatch batch;
  size_t removed = 0;
  COPS_RETURN_IF_ERROR(Recover());
  absl::ReaderMutexLock open(&db_mu_);
  COPS_RETURN_IF_ERROR(CheckOpen());
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix) && removed < max_records;
       it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() != prefix.size() + kAuditSuffixBytes) {
      return absl::DataLossError("access store: malformed audit time key");
    }
    const std::string suffix(key.data() + prefix.size(), kAuditSuffixBytes);
    uint64_t micros = 0;
    for (int i = 0; i < 8; ++i) micros = micros << 8 | static_cast<unsigned char>(suffix[i]);
    if (static_cast<int64_t>(micros) >= before_unix_micros) break;
    COPS_ASSIGN_OR_RETURN(AuditRecord r, DecodeAudit(it->value().ToStringView()));
    rocksdb::Status s = batch.Delete(key);
    if (s.ok()) s = batch.Delete(AuditKeyPrefix(r.doc_id) + suffix);
    if (s.ok() && !r.owner.empty()) s = batch.Delete(AuditOwnerPrefix(r.owner) + suffix);
    if (!s.ok()) return FromRocks(s, "audit removal batch");
    ++removed;
  }
  if (!it->status().ok()) return FromRocks(it->status(), "audit scan");
  if (removed == 0) return 0;
  it.reset();
  COPS_RETURN_IF_ERROR(
      FromRocks(Noted(db_->Write(rocksdb::WriteOptions(), &batch)), "audit removal"));
  return removed;
}

}  // namespace cops
