#include "protocol/admin_records.h"

namespace cops {

void FillCollection(const CollectionRecord& r, v1::CollectionInfo* out) {
  out->set_name(r.name);
  out->set_show_titles_to_checkers(r.show_titles_to_checkers);
  out->set_keep_audit(r.keep_audit);
  out->set_created_unix_micros(r.created_unix_micros);
  out->set_template_(r.template_source);
  out->set_retention_seconds(r.retention_seconds);
}

absl::StatusOr<CollectionRecord> CollectionFromProto(const v1::CollectionInfo& c) {
  CollectionRecord record;
  record.name = c.name();
  record.show_titles_to_checkers = c.show_titles_to_checkers();
  record.keep_audit = c.keep_audit();
  record.template_source = c.template_();
  record.retention_seconds = c.retention_seconds();
  if (record.retention_seconds < 0) {
    return absl::InvalidArgumentError("retention of collection '" + record.name +
                                      "' is negative");
  }
  return record;
}

PrincipalRecord PrincipalFromProto(const v1::CreatePrincipalRequest& request) {
  PrincipalRecord record;
  record.name = request.name();
  record.role = static_cast<uint8_t>(request.role());
  record.collections.assign(request.collections().begin(), request.collections().end());
  record.requests_per_second = request.limits().requests_per_second();
  record.burst = request.limits().burst();
  record.max_documents = request.limits().max_documents();
  record.max_bytes = request.limits().max_bytes();
  return record;
}

void FillPrincipal(const PrincipalRecord& r, const absl::StatusOr<UsageRecord>& usage,
                   const std::vector<ApiKeyRecord>& keys, v1::PrincipalInfo* out) {
  out->set_name(r.name);
  out->set_role(static_cast<v1::PrincipalRole>(r.role));
  for (const std::string& c : r.collections) out->add_collections(c);
  v1::PrincipalLimits* limits = out->mutable_limits();
  limits->set_requests_per_second(r.requests_per_second);
  limits->set_burst(r.burst);
  limits->set_max_documents(r.max_documents);
  limits->set_max_bytes(r.max_bytes);
  out->set_created_unix_micros(r.created_unix_micros);
  if (usage.ok()) {
    out->set_used_documents(usage->documents);
    out->set_used_bytes(usage->bytes);
  }
  for (const ApiKeyRecord& k : keys) {
    if (k.principal != r.name) continue;
    v1::ApiKeyInfo* key = out->add_keys();
    key->set_key_id(k.key_id);
    key->set_created_unix_micros(k.created_unix_micros);
    key->set_revoked_unix_micros(k.revoked_unix_micros);
  }
}

void FillRotation(const KeyRotationProgress& p, v1::KeyRotationStatus* out) {
  out->set_state(static_cast<v1::KeyRotationState>(p.state));
  out->set_generation(p.generation);
  out->set_key_id(p.key_id);
  out->set_new_key_id(p.new_key_id);
  out->set_documents_done(p.documents_done);
  out->set_documents_total(p.documents_total);
  out->set_documents_dropped(p.documents_dropped);
  out->set_error(p.error);
}

void FillSigningKey(const SigningKeyInfo& k, v1::SigningKeyInfo* out) {
  out->set_key_id(k.key_id);
  out->set_public_key_pem(k.public_pem);
  out->set_live(k.live);
}

}  // namespace cops
