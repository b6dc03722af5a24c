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
