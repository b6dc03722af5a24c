#ifndef COPS_STORAGE_ACCESS_RECORDS_H_
#define COPS_STORAGE_ACCESS_RECORDS_H_

// Value encodings of the access store's records (internal to storage/; the store is
// storage/principal_store.h, its layout docs/security.md, "The access store"). Values are JSON
// objects: readable with ldb, and a field added later stays backward compatible (a missing
// field decodes as its default).
//
// A decoder never throws and never trusts what it reads: a value that is not a JSON object is
// DATA_LOSS naming the record kind; a field of the wrong type, or a number outside its
// field's range, decodes as the field's default.
//
// Thread-safety: stateless functions.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "storage/principal_store.h"

namespace cops::access_records {

std::string EncodePrincipal(const PrincipalRecord& record);
std::string EncodeKey(const ApiKeyRecord& record);
std::string EncodeCollection(const CollectionRecord& record);
std::string EncodeAudit(const AuditRecord& record);
std::string EncodeUsage(const UsageRecord& record);

absl::StatusOr<PrincipalRecord> DecodePrincipal(std::string_view value);
// Also DATA_LOSS when the salt or hash is not lowercase hex.
absl::StatusOr<ApiKeyRecord> DecodeKey(std::string_view value);
absl::StatusOr<CollectionRecord> DecodeCollection(std::string_view value);
absl::StatusOr<AuditRecord> DecodeAudit(std::string_view value);
absl::StatusOr<UsageRecord> DecodeUsage(std::string_view value);

}  // namespace cops::access_records

#endif  // COPS_STORAGE_ACCESS_RECORDS_H_
