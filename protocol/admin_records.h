#ifndef COPS_PROTOCOL_ADMIN_RECORDS_H_
#define COPS_PROTOCOL_ADMIN_RECORDS_H_

// The Admin service's records as the protocol carries them (proto/cops_admin.proto).
//
// Thread-safety: plain functions.

#include <vector>

#include "absl/status/statusor.h"
#include "engine/key_rotation_progress.h"
#include "engine/receipt_signer.h"
#include "proto/cops_admin.pb.h"
#include "storage/principal_store.h"

namespace cops {

void FillCollection(const CollectionRecord& record, v1::CollectionInfo* out);
// The collection a CreateCollection request describes; INVALID_ARGUMENT for a negative
// retention.
absl::StatusOr<CollectionRecord> CollectionFromProto(const v1::CollectionInfo& collection);
// The principal a CreatePrincipal request describes (its name is checked by the store).
PrincipalRecord PrincipalFromProto(const v1::CreatePrincipalRequest& request);
// A principal as the Admin service shows it: its record, its usage (left out when it could
// not be read) and its keys among `keys` (every key of the server; never a secret).
void FillPrincipal(const PrincipalRecord& record, const absl::StatusOr<UsageRecord>& usage,
                   const std::vector<ApiKeyRecord>& keys, v1::PrincipalInfo* out);
void FillRotation(const KeyRotationProgress& progress, v1::KeyRotationStatus* out);
void FillSigningKey(const SigningKeyInfo& key, v1::SigningKeyInfo* out);

}  // namespace cops

#endif  // COPS_PROTOCOL_ADMIN_RECORDS_H_
