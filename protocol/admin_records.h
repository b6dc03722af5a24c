#ifndef COPS_PROTOCOL_ADMIN_RECORDS_H_
#define COPS_PROTOCOL_ADMIN_RECORDS_H_

// The Admin service's records as the protocol carries them (proto/cops_admin.proto).
//
// Thread-safety: plain functions.

#include "engine/key_rotation_progress.h"
#include "engine/receipt_signer.h"
#include "proto/cops_admin.pb.h"
#include "storage/principal_store.h"

namespace cops {

void FillCollection(const CollectionRecord& record, v1::CollectionInfo* out);
void FillRotation(const KeyRotationProgress& progress, v1::KeyRotationStatus* out);
void FillSigningKey(const SigningKeyInfo& key, v1::SigningKeyInfo* out);

}  // namespace cops

#endif  // COPS_PROTOCOL_ADMIN_RECORDS_H_
