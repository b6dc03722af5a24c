#include "storage/expiry_queue.h"

#include <memory>

#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using namespace index_layout;  // the column families and keys this file names

std::string ExpiryKey(int64_t expires_unix_micros, DocId id) {
  std::string k(kExpiryPrefix);
  codec::PutFixed64BE(&k, static_cast<uint64_t>(expires_unix_micros));
  codec::PutFixed64BE(&k, id);
  return k;
}

}  // namespace

void ExpiryQueue::Add(rocksdb::WriteBatch* b, int64_t expires_unix_micros, DocId id) const {
  b->Put(db_.cf(kMeta), ExpiryKey(expires_unix_micros, id), "");
}

void ExpiryQueue::Remove(rocksdb::WriteBatch* b, int64_t expires_unix_micros, DocId id) const {
  b->Delete(db_.cf(kMeta), ExpiryKey(expires_unix_micros, id));
}

void ExpiryQueue::RemoveEntry(rocksdb::WriteBatch* b, const Entry& entry) const {
  b->Delete(db_.cf(kMeta), entry.key);
}

absl::Status ExpiryQueue::ForEachDue(
    int64_t now_unix_micros, const std::function<absl::StatusOr<bool>(const Entry&)>& visit) const {
  const std::string_view prefix = kExpiryPrefix;
  std::unique_ptr<rocksdb::Iterator> it(
      db_.db().NewIterator(rocksdb::ReadOptions(), db_.cf(kMeta)));
  Entry entry;
  for (it->Seek(AsSlice(prefix)); it->Valid() && it->key().starts_with(AsSlice(prefix));
       it->Next()) {
    if (it->key().size() != prefix.size() + 16) {
      return absl::DataLossError("malformed expiry entry");
    }
    const char* p = it->key().data() + prefix.size();
    entry.expires_unix_micros = static_cast<int64_t>(codec::DecodeFixed64BE(p));
    if (entry.expires_unix_micros > now_unix_micros) break;
    entry.id = codec::DecodeFixed64BE(p + 8);
    entry.key.assign(it->key().data(), it->key().size());
    absl::StatusOr<bool> more = visit(entry);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
  }
  return FromRocks(it->status(), "reading expiries");
}

}  // namespace cops
