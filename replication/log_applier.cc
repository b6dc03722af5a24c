#include "replication/log_applier.h"

#include <nats/nats.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/status_macros.h"
#include "logging/log_event.h"
#include "nlohmann/json.hpp"
#include "replication/cluster_signature.h"

namespace cops {
namespace {

// OK without a cluster key; with one, VerifyClusterSignature of the event's bytes under its
// subject (DATA_LOSS when unsigned or signed with another key).
absl::Status CheckSignature(const std::string& key, natsMsg* msg, std::string_view data) {
  if (key.empty()) return absl::OkStatus();
  const char* signature = nullptr;
  if (natsMsgHeader_Get(msg, kEventSignatureHeader, &signature) != NATS_OK) signature = nullptr;
  const char* subject = natsMsg_GetSubject(msg);
  return VerifyClusterSignature(key, subject != nullptr ? subject : "", data,
                                signature != nullptr ? signature : "");
}

// "NAME created at <UTC time>" for an identity of LogStreamIdentityOf.
std::string DescribeIdentity(const std::string& identity) {
  const size_t at = identity.rfind('@');
  if (at == std::string::npos) return identity;
  const std::string_view digits = std::string_view(identity).substr(at + 1);
  int64_t nanos = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), nanos);
  if (error != std::errc() || end != digits.data() + digits.size()) return identity;
  return identity.substr(0, at) + " created at " +
         absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(nanos), absl::UTCTimeZone());
}

// Whether the stream is the one whose events `sink` applied and still holds every event
// after them (LogApplier::Start); records the stream's identity when the sink has applied
// nothing or has none recorded (an index from before identities were recorded).
absl::Status CheckStreamFor(JetStream* js, LogSink* sink) {
  const std::string& stream = js->options().stream;
  const uint64_t applied = sink->AppliedLogSequence();
  COPS_ASSIGN_OR_RETURN(const std::string recorded, sink->LogStreamIdentity());
  const std::string recover =
      "; restore the stream, or start this node on an empty data directory to rebuild its index "
      "from the stream as it is (docs/scale-out.md, \"When the log is lost\")";
  jsErrCode err = static_cast<jsErrCode>(0);
  jsStreamInfo* info = nullptr;
  natsStatus s = js_GetStreamInfo(&info, js->context(), stream.c_str(), nullptr, &err);
  if (s != NATS_OK) {
    if ((s == NATS_NOT_FOUND || err == JSStreamNotFoundErr) && applied > 0) {
      return absl::FailedPreconditionError(
          "stream " + stream + " does not exist, but this index has applied the log up to event " +
          std::to_string(applied) +
          (recorded.empty() ? "" : " of stream " + DescribeIdentity(recorded)) +
          ": it was deleted, and a stream created anew would reuse those sequences" + recover);
    }
    return NatsError(s, "looking up stream " + stream);
  }
  const uint64_t first = info->State.FirstSeq;
  const uint64_t last = info->State.LastSeq;
  const std::string identity = LogStreamIdentityOf(stream, info->Created);
  jsStreamInfo_Destroy(info);
  // A stream that ends before what this index applied lost its tail (a NATS store lost):
  // its next events would carry sequences this index takes for applied ones, and be skipped.
  if (last < applied) {
    return absl::FailedPreconditionError(
        "stream " + stream + " ends at event " + std::to_string(last) +
        " but this index has applied the log up to event " + std::to_string(applied) +
        ": the stream lost its tail or was recreated" + recover);
  }
  // A stream trimmed (purged) above the index's position no longer holds events this index
  // lacks: starting there would leave it silently incomplete.
  if (first > applied + 1) {
    return absl::FailedPreconditionError(
        "stream " + stream + " no longer holds events " + std::to_string(applied + 1) + " to " +
        std::to_string(first - 1) + " (trimmed), which this index has not applied: start this "
        "node on a snapshot of a replica taken at or after event " + std::to_string(first - 1) +
        " (docs/scale-out.md, \"Seeding a node from a snapshot\")");
  }
  if (applied > 0 && !recorded.empty() && recorded != identity) {
    return absl::FailedPreconditionError(
        "stream " + DescribeIdentity(identity) + " is not the stream this index applied events 1 to " +
        std::to_string(applied) + " from (" + DescribeIdentity(recorded) +
        "): it was deleted and created anew, its events are others under the same sequences" +
        recover);
  }
  if (recorded != identity) {
    COPS_RETURN_IF_ERROR(sink->RecordLogStreamIdentity(identity));
  }
  return absl::OkStatus();
}

// Separates a node's consumer-name prefix (LogApplierOptions::durable) from a consumer's
// generation.
constexpr char kGenerationSeparator = '~';

std::string ConsumerNameOf(const std::string& prefix, uint64_t generation) {
  return prefix + kGenerationSeparator + std::to_string(generation);
}

// The generation of `name` when it is one of the consumers named from `prefix`: 0 for the
// prefix itself (the single consumer of a build before generations), n for "<prefix>~n".
std::optional<uint64_t> GenerationOf(const std::string& prefix, std::string_view name) {
  if (name == prefix) return 0;
  if (name.size() <= prefix.size() + 1 || name.substr(0, prefix.size()) != prefix ||
      name[prefix.size()] != kGenerationSeparator) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(prefix.size() + 1);
  uint64_t generation = 0;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), generation);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return generation;
}

// A prefix that JetStream takes as a consumer's name, and that no other node's prefix plus a
// generation can equal: not empty, printable, none of NATS's separators and wildcards, no '~'.
absl::Status CheckConsumerPrefix(const std::string& prefix) {
  const bool valid =
      !prefix.empty() && prefix.size() <= 200 &&
      std::all_of(prefix.begin(), prefix.end(), [](char c) {
        return c > ' ' && c < 0x7f && std::string_view(".*>/\\~").find(c) == std::string_view::npos;
      });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "consumer name \"" + prefix +
      "\" is not usable: 1 to 200 printable ASCII characters without spaces, '.', '*', '>', "
      "'/', '\\' or '~'");
}

// Creates a consumer for `prefix`'s node that delivers first the first event the sink lacks
// (applied + 1), after CheckStreamFor, and returns its name; then deletes the node's earlier
// consumers. Every consumer gets a name none of the node's consumers had before
// ("<prefix>~<generation>", the generation above `*generation`, every one listed, and the
// clock's milliseconds; `*generation` is set to it): nats-server 2.9 can bring a consumer
// recreated under its old name back with an earlier incarnation's state, its delivery "way
// ahead" of its start (fixed later: nats-server #6507, #8413), a hole in the index. An
// earlier consumer that cannot be deleted now is logged, and deleted at the next creation.
absl::StatusOr<std::string> PrepareConsumer(JetStream* js, const LogApplierOptions& options,
                                            LogSink* sink, uint64_t* generation) {
  COPS_RETURN_IF_ERROR(CheckStreamFor(js, sink));
  const uint64_t applied = sink->AppliedLogSequence();
  const std::string& stream = js->options().stream;
  const std::string& prefix = options.durable;
  jsErrCode err = static_cast<jsErrCode>(0);
  jsConsumerNamesList* names = nullptr;
  natsStatus s = js_ConsumerNames(&names, js->context(), stream.c_str(), nullptr, &err);
  std::vector<std::string> earlier;
  if (s == NATS_OK) {
    for (int i = 0; i < names->Count; ++i) {
      const std::optional<uint64_t> g = GenerationOf(prefix, names->List[i]);
      if (!g.has_value()) continue;
      earlier.emplace_back(names->List[i]);
      *generation = std::max(*generation, *g);
    }
    jsConsumerNamesList_Destroy(names);
  } else if (s != NATS_NOT_FOUND) {
    return NatsError(s, "listing the consumers of stream " + stream);
  }
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  *generation =
      std::max(*generation + 1, static_cast<uint64_t>(std::max<int64_t>(0, now_ms.count())));
  const std::string name = ConsumerNameOf(prefix, *generation);
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = name.c_str();
  config.AckPolicy = js_AckExplicit;
  config.AckWait = options.ack_wait_ms * 1000000;  // nanoseconds
  config.DeliverPolicy = js_DeliverByStartSequence;
  config.OptStartSeq = applied + 1;
  if (!options.filter_subject.empty()) config.FilterSubject = options.filter_subject.c_str();
  jsConsumerInfo* info = nullptr;
  s = js_AddConsumer(&info, js->context(), stream.c_str(), &config, nullptr, &err);
  if (s != NATS_OK) return NatsError(s, "creating consumer " + name);
  jsConsumerInfo_Destroy(info);
  for (const std::string& old : earlier) {
    s = js_DeleteConsumer(js->context(), stream.c_str(), old.c_str(), nullptr, &err);
    if (s != NATS_OK && s != NATS_NOT_FOUND && err != JSConsumerNotFoundErr) {
      LogEvent(LogLevel::kWarn, "log_consumer_not_deleted",
               {{"consumer", old},
                {"error", NatsError(s, "deleting consumer " + old).ToString()},
                {"action", "deleted when this node next creates a consumer"}});
    }
  }
  // The stream deleted and created anew between the check and the consumer's creation
  // would hand this consumer another stream's events: look once more.
  COPS_RETURN_IF_ERROR(CheckStreamFor(js, sink));
  return name;
}

// Binds a pull subscription to consumer `name` (made by PrepareConsumer).
absl::StatusOr<natsSubscription*> Subscribe(JetStream* js, const LogApplierOptions& options,
                                            const std::string& name) {
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = js->options().stream.c_str();
  sub_options.Consumer = name.c_str();
  sub_options.ManualAck = true;
  natsSubscription* subscription = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  const std::string& subject =
      options.filter_subject.empty() ? js->options().subject : options.filter_subject;
  const natsStatus s = js_PullSubscribe(&subscription, js->context(), subject.c_str(), name.c_str(),
                                        nullptr, &sub_options, &err);
  if (s != NATS_OK) return NatsError(s, "subscribing consumer " + name);
  return subscription;
}

}  // namespace

std::string LogStreamIdentityOf(const std::string& stream, int64_t created_unix_nanos) {
  return stream + "@" + std::to_string(created_unix_nanos);
}

DeliveryAction ClassifyDelivery(bool filtered, uint64_t applied, uint64_t last_delivery,
                                uint64_t stream_sequence, uint64_t delivery) {
  if (filtered) {
    // The consumer numbers its deliveries 1, 2, ... from its creation; a number other than
    // the next one means a delivery never reached this applier (lost with a NATS server or a
    // connection) or an event came again: either way an event after `applied` may be
    // missing, and only a consumer started afresh at applied + 1 delivers it in order.
    if (delivery != last_delivery + 1) return DeliveryAction::kRestart;
    return stream_sequence <= applied ? DeliveryAction::kSkip : DeliveryAction::kApply;
  }
  // The whole stream has no gaps: the next event is applied + 1.
  if (stream_sequence <= applied) return DeliveryAction::kSkip;  // a redelivery
  return stream_sequence == applied + 1 ? DeliveryAction::kApply : DeliveryAction::kDecline;
}

LogApplier::LogApplier(JetStream* jetstream, LogSink* sink, LogApplierOptions options,
                       natsSubscription* subscription, std::string consumer, uint64_t generation)
    : jetstream_(jetstream),
      sink_(sink),
      options_(std::move(options)),
      subscription_(subscription),
      generation_(generation),
      consumer_(std::move(consumer)) {}

absl::StatusOr<std::unique_ptr<LogApplier>> LogApplier::Start(JetStream* jetstream,
                                                              LogSink* sink,
                                                              LogApplierOptions options) {
  COPS_RETURN_IF_ERROR(CheckConsumerPrefix(options.durable));
  uint64_t generation = 0;
  COPS_ASSIGN_OR_RETURN(std::string consumer,
                        PrepareConsumer(jetstream, options, sink, &generation));
  absl::StatusOr<natsSubscription*> subscription = Subscribe(jetstream, options, consumer);
  if (!subscription.ok()) return subscription.status();
  std::unique_ptr<LogApplier> applier(new LogApplier(
      jetstream, sink, std::move(options), *subscription, std::move(consumer), generation));
  applier->thread_ = std::thread([a = applier.get()] { a->Run(); });
  return applier;
}

absl::Status LogApplier::Restart() {
  if (subscription_ != nullptr) natsSubscription_Destroy(subscription_);
  subscription_ = nullptr;
  last_delivery_ = 0;
  stalled_at_.reset();
  absl::StatusOr<std::string> consumer = PrepareConsumer(jetstream_, options_, sink_, &generation_);
  if (absl::IsFailedPrecondition(consumer.status())) Refuse(consumer.status());
  if (!consumer.ok()) return consumer.status();
  absl::StatusOr<natsSubscription*> subscription = Subscribe(jetstream_, options_, *consumer);
  if (!subscription.ok()) return subscription.status();
  subscription_ = *subscription;
  {
    absl::MutexLock lock(&mu_);
    consumer_ = *std::move(consumer);
  }
  restarts_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

LogApplier::~LogApplier() {
  Stop();
  // Keeps the consumer on the server: the next Start deletes it.
  if (subscription_ != nullptr) natsSubscription_Destroy(subscription_);
}

void LogApplier::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string LogApplier::ConsumerName() const {
  absl::MutexLock lock(&mu_);
  return consumer_;
}

absl::Status LogApplier::LastError() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

absl::Status LogApplier::Refusal() const {
  absl::MutexLock lock(&mu_);
  return refusal_;
}

void LogApplier::Refuse(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (!refusal_.ok()) return;
    refusal_ = why;
    last_error_ = why;
  }
  refused_.store(true);
  LogEvent(LogLevel::kError, "log_stream_refused",
           {{"stream", jetstream_->options().stream},
            {"error", why.ToString()},
            {"action", "nothing more is applied from the log until this node is restarted"}});
  absl::MutexLock lock(&listener_mu_);
  if (listener_) listener_(why);
}

void LogApplier::OnRefusal(std::function<void(const absl::Status&)> listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
  if (listener_ && refused_.load()) listener_(Refusal());
}

void LogApplier::CheckStream() {
  const absl::Status checked = CheckStreamFor(jetstream_, sink_);
  if (absl::IsFailedPrecondition(checked)) Refuse(checked);
}

absl::StatusOr<std::optional<uint64_t>> LogApplier::LastEventToApply() const {
  const std::string& filter = options_.filter_subject;
  if (filter.find_first_of("*>") != std::string::npos) return std::nullopt;
  jsErrCode err = static_cast<jsErrCode>(0);
  if (filter.empty()) {
    jsStreamInfo* info = nullptr;
    const natsStatus s = js_GetStreamInfo(&info, jetstream_->context(),
                                          jetstream_->options().stream.c_str(), nullptr, &err);
    if (s != NATS_OK) return NatsError(s, "looking up stream " + jetstream_->options().stream);
    const uint64_t last = info->State.LastSeq;
    jsStreamInfo_Destroy(info);
    return last;
  }
  natsMsg* last = nullptr;
  const natsStatus s =
      js_GetLastMsg(&last, jetstream_->context(), jetstream_->options().stream.c_str(),
                    filter.c_str(), nullptr, &err);
  if (s == NATS_NOT_FOUND || err == JSNoMessageFoundErr) return 0;  // none on the subject
  if (s != NATS_OK) return NatsError(s, "looking up the last event of " + filter);
  const uint64_t sequence = natsMsg_GetSequence(last);
  natsMsg_Destroy(last);
  return sequence;
}

absl::StatusOr<bool> LogApplier::CaughtUp() const {
  if (!options_.filter_subject.empty()) {
    // One partition's subject: caught up once its last event in the stream is applied. Exact,
    // unlike the consumer's pending count, which a consumer just recreated may not yet have.
    COPS_ASSIGN_OR_RETURN(const std::optional<uint64_t> last, LastEventToApply());
    if (last.has_value()) return sink_->AppliedLogSequence() >= *last;
  }
  const std::string consumer = ConsumerName();
  jsErrCode err = static_cast<jsErrCode>(0);
  jsConsumerInfo* info = nullptr;
  const natsStatus s =
      js_GetConsumerInfo(&info, jetstream_->context(), jetstream_->options().stream.c_str(),
                         consumer.c_str(), nullptr, &err);
  if (s != NATS_OK) return NatsError(s, "looking up consumer " + consumer);
  const bool caught_up = info->NumPending == 0 && info->NumAckPending == 0;
  jsConsumerInfo_Destroy(info);
  return caught_up;
}

bool LogApplier::Stalled() {
  const uint64_t applied = sink_->AppliedLogSequence();
  const absl::StatusOr<std::optional<uint64_t>> last = LastEventToApply();
  if (!last.ok() || !last->has_value() || **last <= applied) {
    stalled_at_.reset();  // nothing left to deliver, or JetStream not answering
    return false;
  }
  // Behind: an event published just before this look may still be on its way. Behind at
  // the previous look too, with nothing applied since, is a consumer that stopped delivering.
  const bool stalled = stalled_at_ == applied;
  stalled_at_ = applied;
  if (stalled) {
    stalled_at_.reset();
    SetLastError(absl::UnavailableError(
        "consumer " + ConsumerName() + " delivered nothing for " +
        std::to_string(2 * kLostDeliveryCheckMs) + " ms while the stream holds event " +
        std::to_string(**last) + " beyond the applied " + std::to_string(applied) +
        "; restarted at the applied sequence"));
  }
  return stalled;
}

LogApplier::Outcome LogApplier::Handle(void* raw) {
  auto* msg = static_cast<natsMsg*>(raw);
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
    natsMsg_Term(msg, nullptr);  // not a stream message: nothing can apply it
    return Outcome::kNext;
  }
  const uint64_t sequence = meta->Sequence.Stream;
  const uint64_t delivery = meta->Sequence.Consumer;
  jsMsgMetaData_Destroy(meta);
  const bool filtered = !options_.filter_subject.empty();
  absl::Status status;
  bool gap = false;  // an earlier event did not arrive
  DeliveryAction action =
      ClassifyDelivery(filtered, sink_->AppliedLogSequence(), last_delivery_, sequence, delivery);
  if (action == DeliveryAction::kApply && filtered && last_delivery_ == 0) {
    const uint64_t skipped = SkippedBy(sequence);
    if (skipped != 0) {
      action = DeliveryAction::kRestart;
      status = absl::DataLossError("consumer " + ConsumerName() + " delivered event " +
                                   std::to_string(sequence) + " first, after event " +
                                   std::to_string(skipped) +
                                   " of its subject; restarted at the applied sequence");
    }
  }
  switch (action) {
    case DeliveryAction::kSkip:  // a redelivery of an applied event
      last_delivery_ = delivery;
      natsMsg_Ack(msg, nullptr);
      return Outcome::kNext;
    case DeliveryAction::kRestart:
      // Not acknowledged: the consumer that replaces this one delivers it again.
      if (!status.ok()) break;  // SkippedBy's
      status = absl::DataLossError("log delivery " + std::to_string(delivery) + " (event " +
                                   std::to_string(sequence) + ") after delivery " +
                                   std::to_string(last_delivery_) +
                                   ": an event may be missing; consumer restarted at the "
                                   "applied sequence");
      break;
    case DeliveryAction::kDecline:
      gap = true;
      status = absl::FailedPreconditionError(
          "log event " + std::to_string(sequence) + " arrived before event " +
          std::to_string(sink_->AppliedLogSequence() + 1));
      break;
    case DeliveryAction::kApply: {
      const std::string_view data(natsMsg_GetData(msg),
                                  static_cast<size_t>(natsMsg_GetDataLength(msg)));
      // With a cluster key, only what a holder of the key published is believed: a forged
      // or unsigned event is set aside like bytes that are no event.
      const absl::Status signed_by_cluster =
          CheckSignature(jetstream_->options().signing_key, msg, data);
      absl::StatusOr<RegistrationEvent> event = signed_by_cluster.ok()
                                                    ? DecodeRegistrationEvent(data)
                                                    : absl::StatusOr<RegistrationEvent>(
                                                          signed_by_cluster);
      if (event.ok()) {
        status = sink_->Apply(sequence, *event);
      } else if (absl::IsDataLoss(event.status())) {
        // No node can ever apply these bytes: waiting for them would stall every node.
        status = sink_->SetAside(sequence, event.status());
        if (status.ok()) set_aside_.fetch_add(1, std::memory_order_relaxed);
      } else {
        status = event.status();  // a later revision's event: an upgrade applies it
      }
      if (!status.ok()) failed_applies_.fetch_add(1, std::memory_order_relaxed);
      consecutive_failures_ = status.ok() ? 0 : consecutive_failures_ + 1;
      last_delivery_ = delivery;
      break;
    }
  }
  SetLastError(status);
  if (!status.ok()) {
    natsMsg_Nak(msg, nullptr);
    // A filtered consumer cannot tell a later event from one that overtook the failed one:
    // it starts afresh at the applied sequence. So does one of the whole stream past a gap:
    // the declined event, redelivered at once, would keep it busy (never idle, so never
    // checking for lost deliveries) until JetStream's ack wait sent the missing one again.
    return filtered || gap ? Outcome::kRestart : Outcome::kRetry;
  }
  // Acknowledged only after the apply is durable in RocksDB; a crash in between redelivers
  // it, and ClassifyDelivery skips it.
  natsMsg_Ack(msg, nullptr);
  return Outcome::kNext;
}

void LogApplier::SetLastError(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    last_error_ = status;
  }
  // A stalled applier is otherwise silent: each new error is logged, the same one again at
  // most every kErrorLogIntervalMs, and the first success after errors.
  const auto now = std::chrono::steady_clock::now();
  if (status.ok()) {
    if (!logged_error_.empty()) {
      LogEvent(LogLevel::kInfo, "log_applier_recovered",
               {{"consumer", ConsumerName()},
                {"applied", std::to_string(sink_->AppliedLogSequence())},
                {"after", logged_error_}});
      logged_error_.clear();
    }
    return;
  }
  std::string text = status.ToString();
  if (text == logged_error_ && now - logged_at_ < std::chrono::milliseconds(kErrorLogIntervalMs)) {
    return;
  }
  LogEvent(LogLevel::kWarn, "log_applier_error",
           {{"consumer", ConsumerName()},
            {"applied", std::to_string(sink_->AppliedLogSequence())},
            {"error", text}});
  logged_error_ = std::move(text);
  logged_at_ = now;
}

uint64_t LogApplier::SkippedBy(uint64_t first_delivered) const {
  const uint64_t applied = sink_->AppliedLogSequence();
  if (first_delivered <= applied + 1) return 0;  // nothing lies between
  // JetStream's message get: the first message on the subject at or after applied + 1.
  const nlohmann::json request = {{"seq", applied + 1}, {"next_by_subj", options_.filter_subject}};
  const std::string body = request.dump();
  const std::string api = "$JS.API.STREAM.MSG.GET." + jetstream_->options().stream;
  natsMsg* reply = nullptr;
  if (natsConnection_Request(&reply, jetstream_->connection(), api.c_str(), body.data(),
                             static_cast<int>(body.size()), kSkipCheckTimeoutMs) != NATS_OK) {
    return 0;  // JetStream is not answering: the delivery goes on (the next fetch will tell)
  }
  const nlohmann::json answer = nlohmann::json::parse(
      natsMsg_GetData(reply), natsMsg_GetData(reply) + natsMsg_GetDataLength(reply), nullptr,
      /*allow_exceptions=*/false);
  natsMsg_Destroy(reply);
  if (!answer.is_object()) return 0;
  const auto message = answer.find("message");  // absent: none, or an error
  if (message == answer.end() || !message->is_object()) return 0;
  const auto seq = message->find("seq");
  if (seq == message->end() || !seq->is_number_unsigned()) return 0;
  const uint64_t first = seq->get<uint64_t>();
  return first > applied && first < first_delivered ? first : 0;
}

bool LogApplier::DeliveriesLost() {
  const std::string consumer = ConsumerName();
  jsConsumerInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  if (js_GetConsumerInfo(&info, jetstream_->context(), jetstream_->options().stream.c_str(),
                         consumer.c_str(), nullptr, &err) != NATS_OK) {
    return false;  // JetStream is not answering: the next fetch will say so
  }
  // Every event this applier receives is acknowledged or declined before the next fetch; an
  // event still awaiting its ack while the applier holds none was delivered and lost.
  const bool lost = info->NumAckPending > 0;
  jsConsumerInfo_Destroy(info);
  if (lost) {
    SetLastError(absl::DataLossError("consumer " + consumer +
                                     " has deliveries that never arrived; restarted at the "
                                     "applied sequence"));
  }
  return lost;
}

void LogApplier::Run() {
  bool restart = false;
  int64_t idle_ms = 0;  // fetching found nothing for this long
  while (!stop_.load()) {
    if (refused_.load()) {  // the stream is not this node's any more: apply nothing
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (restart || subscription_ == nullptr) {
      absl::Status s = Restart();
      restart = !s.ok();
      if (restart) {
        SetLastError(s);
        std::this_thread::sleep_for(std::chrono::milliseconds(options_.retry_wait_ms));
        continue;
      }
    }
    natsMsgList list{nullptr, 0};
    jsErrCode err = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(&list, subscription_, options_.fetch_batch,
                                                options_.fetch_wait_ms, &err);
    if (s == NATS_TIMEOUT) {  // nothing new, or deliveries that never arrived
      idle_ms += options_.fetch_wait_ms;
      if (idle_ms >= kLostDeliveryCheckMs) {
        idle_ms = 0;
        CheckStream();
        restart = DeliveriesLost() || Stalled();
      }
      continue;
    }
    Outcome outcome = s == NATS_OK ? Outcome::kNext : Outcome::kRetry;
    if (s == NATS_OK) {
      idle_ms = 0;
      stalled_at_.reset();
    } else {
      SetLastError(NatsError(s, "fetching from consumer " + ConsumerName()));
      CheckStream();  // a consumer gone with its stream
      // Fetches that keep failing count as idle: a consumer that no longer answers (lost
      // with its servers' state) is recreated once events wait for it.
      idle_ms += options_.retry_wait_ms;
      if (idle_ms >= kLostDeliveryCheckMs) {
        idle_ms = 0;
        if (Stalled()) outcome = Outcome::kRestart;
      }
    }
    for (int i = 0; i < list.Count; ++i) {
      if (outcome == Outcome::kNext && !stop_.load()) {
        outcome = Handle(list.Msgs[i]);
      } else {
        natsMsg_Nak(list.Msgs[i], nullptr);  // not applied: let JetStream deliver it again
      }
    }
    natsMsgList_Destroy(&list);
    if (outcome != Outcome::kNext && !stop_.load()) {
      restart = outcome == Outcome::kRestart;
      // The same event failing again waits longer each time, up to max_retry_wait_ms.
      int64_t wait_ms = options_.retry_wait_ms;
      for (int i = 1; i < consecutive_failures_ && wait_ms < options_.max_retry_wait_ms; ++i) {
        wait_ms *= 2;
      }
      wait_ms = std::min(wait_ms, std::max(options_.max_retry_wait_ms, options_.retry_wait_ms));
      // In short steps, so that Stop is not held up by a long wait.
      for (int64_t waited = 0; waited < wait_ms && !stop_.load(); waited += 50) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(50, wait_ms - waited)));
      }
    }
  }
}

}  // namespace cops
