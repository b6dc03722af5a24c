#include "storage/duplicate_maps.h"

#include <algorithm>
#include <memory>

#include "core/status_macros.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/document_store.h"
#include "storage/index_meta.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using namespace index_layout;  // the column families and keys this file names

constexpr size_t kSchema1DuplicateKeyBytes = 32;
// Documents whose duplicate-map entries one write batch of the schema-1 upgrade rewrites.
constexpr size_t kUpgradeBatchDocuments = 4096;

absl::StatusOr<std::optional<DocId>> DocIdValue(const std::optional<std::string>& value,
                                                std::string_view what) {
  if (!value.has_value()) return std::optional<DocId>();
  if (value->size() != 8) return absl::DataLossError("malformed " + std::string(what));
  return std::optional<DocId>(codec::DecodeFixed64BE(value->data()));
}

}  // namespace

std::string DuplicateMaps::ExternalIdKey(std::string_view collection,
                                         std::string_view external_id) {
  std::string k;
  codec::PutLengthPrefixed(&k, collection);
  k.append(external_id);
  return k;
}

std::string DuplicateMaps::DuplicateKey(std::string_view collection,
                                        const std::array<uint8_t, 32>& sha256) {
  std::string k;
  codec::PutLengthPrefixed(&k, collection);
  k.append(reinterpret_cast<const char*>(sha256.data()), sha256.size());
  return k;
}

absl::StatusOr<std::optional<DocId>> DuplicateMaps::FindExternalId(std::string_view ext_key) const {
  COPS_ASSIGN_OR_RETURN(auto value, db_.Get(kExternalIds, ext_key, "reading external id"));
  return DocIdValue(value, "external id entry");
}

absl::StatusOr<std::optional<DocId>> DuplicateMaps::FindDuplicate(std::string_view sha_key) const {
  COPS_ASSIGN_OR_RETURN(auto value, db_.Get(kSha256, sha_key, "reading duplicate map"));
  return DocIdValue(value, "duplicate map entry");
}

void DuplicateMaps::Add(rocksdb::WriteBatch* b, std::string_view ext_key, std::string_view sha_key,
                        std::string_view doc_key) const {
  if (!ext_key.empty()) b->Put(db_.cf(kExternalIds), AsSlice(ext_key), AsSlice(doc_key));
  b->Put(db_.cf(kSha256), AsSlice(sha_key), AsSlice(doc_key));
}

absl::Status DuplicateMaps::AddRemoval(rocksdb::WriteBatch* b, const DocumentRecord& record) const {
  const std::string doc_key = codec::DocKey(record.id);
  const std::string what = "unregistering document " + std::to_string(record.id);
  if (!record.external_id.empty()) {
    const std::string ext_key = ExternalIdKey(record.collection, record.external_id);
    COPS_ASSIGN_OR_RETURN(auto ext, db_.Get(kExternalIds, ext_key, what));
    if (ext.has_value() && *ext == doc_key) b->Delete(db_.cf(kExternalIds), ext_key);
  }
  const std::string sha_key = DuplicateKey(record.collection, record.sha256);
  COPS_ASSIGN_OR_RETURN(auto sha, db_.Get(kSha256, sha_key, what));
  if (sha.has_value() && *sha == doc_key) b->Delete(db_.cf(kSha256), sha_key);
  return absl::OkStatus();
}

absl::StatusOr<bool> DuplicateMaps::HasCollection(std::string_view collection) const {
  std::string prefix;
  codec::PutLengthPrefixed(&prefix, collection);
  std::unique_ptr<rocksdb::Iterator> it(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kSha256)));
  it->Seek(prefix);
  // The length prefix makes `prefix` the start of this collection's keys and no other's.
  if (it->Valid()) return it->key().ToStringView().starts_with(prefix);
  COPS_RETURN_IF_ERROR(
      FromRocks(it->status(), "reading the duplicate map of " + db_.options().path));
  return false;
}

absl::StatusOr<std::vector<std::string>> DuplicateMaps::Collections() const {
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kSha256)));
  it->SeekToFirst();
  while (it->Valid()) {
    std::string_view rest = it->key().ToStringView();
    std::string_view collection;
    if (!codec::GetLengthPrefixed(&rest, &collection) || rest.size() != 32) {
      return absl::DataLossError("index " + db_.options().path + ": malformed duplicate map key");
    }
    out.emplace_back(collection);
    // The collection's keys are its prefix and 32 digest bytes: one seek skips them all.
    std::string past(it->key().data(), it->key().size() - rest.size());
    past.append(33, '\xff');
    it->Seek(past);
  }
  COPS_RETURN_IF_ERROR(
      FromRocks(it->status(), "listing the collections of index " + db_.options().path));
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status DuplicateMaps::UpgradeFromSchema1(const DocumentStore& documents,
                                               const IndexMeta& meta) const {
  // Schema-1 keys (32 bytes) never equal schema-2 keys (33+ bytes).
  const std::string what = "upgrading the duplicate map of index " + db_.options().path;
  rocksdb::WriteOptions w;
  w.sync = true;
  rocksdb::WriteBatch b;
  size_t in_batch = 0;
  auto flush_if_full = [&]() -> absl::Status {
    if (++in_batch < kUpgradeBatchDocuments) return absl::OkStatus();
    in_batch = 0;
    absl::Status written = FromRocks(db_.db().Write(w, &b), what);
    b.Clear();
    return written;
  };
  COPS_RETURN_IF_ERROR(documents.ForEachRecord([&](const DocumentRecord& record) {
    b.Put(db_.cf(kSha256), DuplicateKey(record.collection, record.sha256),
          codec::DocKey(record.id));
    return flush_if_full();
  }));
  std::unique_ptr<rocksdb::Iterator> old(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kSha256)));
  for (old->SeekToFirst(); old->Valid(); old->Next()) {
    if (old->key().size() != kSchema1DuplicateKeyBytes) continue;
    b.Delete(db_.cf(kSha256), old->key());
    COPS_RETURN_IF_ERROR(flush_if_full());
  }
  COPS_RETURN_IF_ERROR(FromRocks(old->status(), what));
  meta.PutSchemaVersion(&b, codec::kSchemaVersionBase);
  return FromRocks(db_.db().Write(w, &b), what);
}

}  // namespace cops
