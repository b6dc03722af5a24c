#include "replication/registration_log.h"

#include <nats/nats.h>

#include <limits>
#include <string>

#include "replication/cluster_signature.h"

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
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, data.data(),
                                static_cast<int>(data.size()));
  const std::string& key = jetstream_->options().signing_key;
  if (s == NATS_OK && !key.empty()) {
    s = natsMsgHeader_Set(msg, kEventSignatureHeader,
                          ClusterSignature(key, subject, data).c_str());
  }
  if (s == NATS_OK) s = js_PublishMsg(&ack, jetstream_->context(), msg, nullptr, &err);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) {
    return NatsError(s, "publishing to stream " + jetstream_->options().stream + " (error " +
                            std::to_string(static_cast<int>(err)) + ")");
  }
  const uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

}  // namespace cops
