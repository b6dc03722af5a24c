#ifndef COPS_REPLICATION_REGISTRATION_EVENT_H_
#define COPS_REPLICATION_REGISTRATION_EVENT_H_

// One event of the registration log (docs/scale-out.md): a document registered or
// unregistered. A registration carries the document as the client sent it (content, declared
// format, metadata, registration time), not its fingerprint: every node converts and
// fingerprints it through the same pipeline as a local registration, under its own hashing
// key, so nodes share no key and store identical spans.
//
// Thread-safety: plain value types and functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "storage/document_record.h"

namespace cops {

// The event's kind as it is encoded. On the wire and in the stream: do not change.
enum class RegistrationEventKind : uint8_t {
  kRegister = 1,
  kUnregister = 2,
};

struct RegistrationEvent {
  RegistrationEventKind kind = RegistrationEventKind::kRegister;
  // kRegister: the document as sent, its declared format (DocumentFormat's value) and its
  // metadata (title, author, owner, collection, external id, registered_unix_micros,
  // expires_unix_micros, not_before_unix_micros).
  std::string content;
  uint32_t format = 0;
  DocumentRecord metadata;
  // kUnregister: the document's id.
  DocId doc_id = 0;
};

// Tag byte, then the fields of the kind as varints and length-prefixed strings.
std::string EncodeRegistrationEvent(const RegistrationEvent& event);
// DATA_LOSS on a truncated or malformed value or an unknown kind: bytes no node can apply.
// UNIMPLEMENTED on an unknown tag: an event of a later revision, which a newer build applies
// (a revision that adds fields writes a new tag).
absl::StatusOr<RegistrationEvent> DecodeRegistrationEvent(std::string_view value);

}  // namespace cops

#endif  // COPS_REPLICATION_REGISTRATION_EVENT_H_
