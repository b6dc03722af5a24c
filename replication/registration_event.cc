#include "replication/registration_event.h"

#include "storage/codec.h"

namespace cops {
namespace {

namespace codec = storage_codec;

// Leading byte of an encoded event. In the stream: do not change.
constexpr uint8_t kEventV1 = 1;

absl::Status Malformed(const char* what) {
  return absl::DataLossError(std::string("malformed registration event: ") + what);
}

}  // namespace

std::string EncodeRegistrationEvent(const RegistrationEvent& event) {
  std::string out;
  out.push_back(static_cast<char>(kEventV1));
  out.push_back(static_cast<char>(event.kind));
  if (event.kind == RegistrationEventKind::kUnregister) {
    codec::PutVarint64(&out, event.doc_id);
    return out;
  }
  const DocumentRecord& m = event.metadata;
  codec::PutVarint64(&out, event.format);
  codec::PutVarint64(&out, static_cast<uint64_t>(m.registered_unix_micros));
  for (const std::string* s : {&m.title, &m.author, &m.owner, &m.collection, &m.external_id}) {
    codec::PutLengthPrefixed(&out, *s);
  }
  codec::PutLengthPrefixed(&out, event.content);
  // Appended only when set, so that an event without them is as the first revision wrote
  // it. A node that does not know them refuses the event (trailing bytes) rather than
  // report an embargoed or expired document.
  if (m.expires_unix_micros != 0 || m.not_before_unix_micros != 0) {
    codec::PutVarint64(&out, static_cast<uint64_t>(m.expires_unix_micros));
    codec::PutVarint64(&out, static_cast<uint64_t>(m.not_before_unix_micros));
  }
  return out;
}

absl::StatusOr<RegistrationEvent> DecodeRegistrationEvent(std::string_view in) {
  if (in.size() < 2) return Malformed("truncated");
  if (static_cast<uint8_t>(in[0]) != kEventV1) {
    // Not malformed: another revision's event, which a node of this build cannot apply.
    return absl::UnimplementedError("registration event of an unknown revision (tag " +
                                    std::to_string(static_cast<uint8_t>(in[0])) +
                                    "): this node's build is older than the publisher's");
  }
  RegistrationEvent event;
  const auto kind = static_cast<RegistrationEventKind>(static_cast<uint8_t>(in[1]));
  in.remove_prefix(2);
  event.kind = kind;
  if (kind == RegistrationEventKind::kUnregister) {
    if (!codec::GetVarint64(&in, &event.doc_id) || !in.empty()) return Malformed("doc id");
    return event;
  }
  if (kind != RegistrationEventKind::kRegister) return Malformed("unknown kind");
  uint64_t format = 0, micros = 0;
  if (!codec::GetVarint64(&in, &format) || format > UINT32_MAX ||
      !codec::GetVarint64(&in, &micros)) {
    return Malformed("header");
  }
  event.format = static_cast<uint32_t>(format);
  DocumentRecord& m = event.metadata;
  m.registered_unix_micros = static_cast<int64_t>(micros);
  std::string_view field;
  for (std::string* s : {&m.title, &m.author, &m.owner, &m.collection, &m.external_id,
                         &event.content}) {
    if (!codec::GetLengthPrefixed(&in, &field)) return Malformed("field");
    s->assign(field);
  }
  if (!in.empty()) {
    uint64_t expires = 0, not_before = 0;
    if (!codec::GetVarint64(&in, &expires) || !codec::GetVarint64(&in, &not_before)) {
      return Malformed("lifetime");
    }
    m.expires_unix_micros = static_cast<int64_t>(expires);
    m.not_before_unix_micros = static_cast<int64_t>(not_before);
  }
  if (!in.empty()) return Malformed("trailing bytes");
  return event;
}

}  // namespace cops
