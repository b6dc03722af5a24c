#include "replication/log_applier.h"

#include <nats/nats.h>

#include <chrono>
#include <string>
#include <string_view>

namespace cops {
namespace {

// Binds `durable` so that its next delivery is the first event the sink lacks. A consumer
// whose acknowledged floor is above the sink's applied sequence has acknowledged events this
// index does not hold (the index was wiped or restored from an older snapshot): it is
// recreated, or those events would never come again.
absl::Status PrepareConsumer(JetStream* js, const LogApplierOptions& options, uint64_t applied) {
  const std::string& stream = js->options().stream;
  jsConsumerInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&info, js->context(), stream.c_str(),
                                    options.durable.c_str(), nullptr, &err);
  if (s == NATS_OK) {
    const bool behind_index = info->AckFloor.Stream <= applied;
    const char* filter = info->Config != nullptr ? info->Config->FilterSubject : nullptr;
    const bool same_filter = options.filter_subject == (filter != nullptr ? filter : "");
    jsConsumerInfo_Destroy(info);
    // Redeliveries at or below `applied` are skipped. A filtered consumer is always
    // recreated: its events' sequences have gaps, so the applier cannot tell an event that
    // overtook an unacknowledged one; started afresh at applied + 1 it delivers in order.
    if (behind_index && same_filter && options.filter_subject.empty()) return absl::OkStatus();
    s = js_DeleteConsumer(js->context(), stream.c_str(), options.durable.c_str(), nullptr, &err);
    if (s != NATS_OK) return NatsError(s, "deleting consumer " + options.durable);
  } else if (s != NATS_NOT_FOUND && err != JSConsumerNotFoundErr) {
    return NatsError(s, "looking up consumer " + options.durable);
  }
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = options.durable.c_str();
  config.AckPolicy = js_AckExplicit;
  config.AckWait = options.ack_wait_ms * 1000000;  // nanoseconds
  config.DeliverPolicy = js_DeliverByStartSequence;
  config.OptStartSeq = applied + 1;
  if (!options.filter_subject.empty()) config.FilterSubject = options.filter_subject.c_str();
  s = js_AddConsumer(&info, js->context(), stream.c_str(), &config, nullptr, &err);
  if (s != NATS_OK) return NatsError(s, "creating consumer " + options.durable);
  jsConsumerInfo_Destroy(info);
  return absl::OkStatus();
}

}  // namespace

LogApplier::LogApplier(JetStream* jetstream, LogSink* sink, LogApplierOptions options,
                       natsSubscription* subscription)
    : jetstream_(jetstream),
      sink_(sink),
      options_(std::move(options)),
      subscription_(subscription) {}

absl::StatusOr<std::unique_ptr<LogApplier>> LogApplier::Start(JetStream* jetstream,
                                                              LogSink* sink,
                                                              LogApplierOptions options) {
  absl::Status prepared = PrepareConsumer(jetstream, options, sink->AppliedLogSequence());
  if (!prepared.ok()) return prepared;
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = jetstream->options().stream.c_str();
  sub_options.Consumer = options.durable.c_str();
  sub_options.ManualAck = true;
  natsSubscription* subscription = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  const std::string& subject =
      options.filter_subject.empty() ? jetstream->options().subject : options.filter_subject;
  const natsStatus s =
      js_PullSubscribe(&subscription, jetstream->context(), subject.c_str(),
                       options.durable.c_str(), nullptr, &sub_options, &err);
  if (s != NATS_OK) return NatsError(s, "subscribing consumer " + options.durable);
  std::unique_ptr<LogApplier> applier(
      new LogApplier(jetstream, sink, std::move(options), subscription));
  applier->thread_ = std::thread([a = applier.get()] { a->Run(); });
  return applier;
}

LogApplier::~LogApplier() {
  Stop();
  natsSubscription_Destroy(subscription_);  // keeps the durable consumer on the server
}

void LogApplier::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

absl::Status LogApplier::LastError() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

absl::StatusOr<bool> LogApplier::CaughtUp() const {
  jsConsumerInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetConsumerInfo(&info, jetstream_->context(), jetstream_->options().stream.c_str(),
                         options_.durable.c_str(), nullptr, &err);
  if (s != NATS_OK) return NatsError(s, "looking up consumer " + options_.durable);
  const bool caught_up = info->NumPending == 0 && info->NumAckPending == 0;
  jsConsumerInfo_Destroy(info);
  return caught_up;
}

bool LogApplier::Handle(void* raw) {
  auto* msg = static_cast<natsMsg*>(raw);
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
    natsMsg_Term(msg, nullptr);  // not a stream message: nothing can apply it
    return true;
  }
  const uint64_t sequence = meta->Sequence.Stream;
  jsMsgMetaData_Destroy(meta);
  const uint64_t applied = sink_->AppliedLogSequence();
  if (sequence <= applied) {  // a redelivery of an applied event
    natsMsg_Ack(msg, nullptr);
    return true;
  }
  absl::Status status;
  // The event that must come next: applied + 1 on the whole stream; on a partition's subject
  // (sequences with gaps) any later one, unless an event failed and awaits redelivery.
  const bool filtered = !options_.filter_subject.empty();
  const bool in_order = filtered ? (held_ == 0 || sequence <= held_) : sequence == applied + 1;
  if (!in_order) {
    status = absl::FailedPreconditionError(
        "log event " + std::to_string(sequence) + " arrived before event " +
        std::to_string(filtered ? held_ : applied + 1));
  } else {
    absl::StatusOr<RegistrationEvent> event = DecodeRegistrationEvent(std::string_view(
        natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
    status = event.ok() ? sink_->Apply(sequence, *event) : event.status();
    if (filtered) held_ = status.ok() ? 0 : sequence;
  }
  {
    absl::MutexLock lock(&mu_);
    last_error_ = status;
  }
  if (!status.ok()) {
    natsMsg_Nak(msg, nullptr);
    return false;
  }
  // Acknowledged only after the apply is durable in RocksDB; a crash in between redelivers
  // it, and the check above skips it.
  natsMsg_Ack(msg, nullptr);
  return true;
}

void LogApplier::Run() {
  while (!stop_.load()) {
    natsMsgList list{nullptr, 0};
    jsErrCode err = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(&list, subscription_, options_.fetch_batch,
                                                options_.fetch_wait_ms, &err);
    if (s == NATS_TIMEOUT) continue;  // nothing new
    bool ok = s == NATS_OK;
    if (!ok) {
      absl::MutexLock lock(&mu_);
      last_error_ = NatsError(s, "fetching from consumer " + options_.durable);
    }
    for (int i = 0; i < list.Count; ++i) {
      if (ok && !stop_.load()) {
        ok = Handle(list.Msgs[i]);
      } else {
        natsMsg_Nak(list.Msgs[i], nullptr);  // not applied: let JetStream deliver it again
      }
    }
    natsMsgList_Destroy(&list);
    if (!ok && !stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.retry_wait_ms));
    }
  }
}

}  // namespace cops
