#include "replication/registration_log.h"

#include <nats/nats.h>

#include <limits>
#include <string>

namespace cops {

absl::StatusOr<uint64_t> RegistrationLog::Publish(const RegistrationEvent& event) {
  return PublishTo(jetstream_->options().subject, event);
}

absl::StatusOr<uint64_t> RegistrationLog::PublishTo(const std::string& subject,
                                                    const RegistrationEvent& event) {
  const std::string data = EncodeRegistrationEvent(event);
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::ResourceExhaustedError("registration event too large for NATS");
  }
  jsPubAck* ack = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_Publish(&ack, jetstream_->context(), subject.c_str(), data.data(),
                 static_cast<int>(data.size()), nullptr, &err);
  if (s != NATS_OK) {
    return NatsError(s, "publishing to stream " + jetstream_->options().stream + " (error " +
                            std::to_string(static_cast<int>(err)) + ")");
  }
  const uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

}  // namespace cops
