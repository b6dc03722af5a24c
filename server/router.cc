#include "server/router.h"

#include <algorithm>
#include <future>
#include <set>
#include <tuple>
#include <utility>

#include "core/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "access/call_policy.h"
#include "access/forwarded_identity.h"
#include "replication/partitioning.h"
#include "server/request_log.h"
#include "server/service.h"

namespace cops {
namespace {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Failures of the replica or the way to it, not of the request: another replica may answer.
bool ReplicaFailure(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

// Partitions without an answer, ascending, as text: "0, 2".
std::string PartitionList(const std::vector<uint32_t>& partitions) {
  std::string out;
  for (uint32_t p : partitions) out += (out.empty() ? "" : ", ") + std::to_string(p);
  return out;
}

}  // namespace

absl::StatusOr<RegistrationEvent> RoutedRegistrationEvent(const v1::Document& document,
                                                          const Principal& principal,
                                                          const CollectionPolicy& policy,
                                                          int64_t now_micros) {
  COPS_ASSIGN_OR_RETURN(const DocumentFormat format, FormatFromProto(document.format()));
  RegistrationEvent event;
  event.kind = RegistrationEventKind::kRegister;
  event.content = document.content();
  event.format = static_cast<uint32_t>(format);
  // As on a single node (access/call_policy.h); every node applies the expiry the event
  // carries, so the collection's retention is decided here, once.
  COPS_ASSIGN_OR_RETURN(event.metadata, RegistrationRecord(policy, principal,
                                                           MetadataFromProto(document.metadata()),
                                                           now_micros));
  event.metadata.registered_unix_micros = now_micros;
  return event;
}

FanOutPool::FanOutPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

FanOutPool::~FanOutPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void FanOutPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
}

void FanOutPool::Work() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

RouterService::RouterService(const ReplicaDirectory* directory, RegistrationLog* log,
                             IndexGenerations* generations, Authorizer* authorizer,
                             UsageLedger* usage, AdmissionControl* admission,
                             RouterOptions options)
    : directory_(directory),
      log_(log),
      generations_(generations),
      authorizer_(authorizer),
      usage_(usage),
      admission_(admission),
      options_(std::move(options)),
      turns_(std::make_unique<std::atomic<uint64_t>[]>(directory->partitions())),
      pool_(std::max<size_t>(options_.fan_out_threads, 1)) {}

absl::StatusOr<AdmissionControl::Permit> RouterService::Admit(uint64_t bytes,
                                                              Deadline deadline) {
  if (admission_ == nullptr) return AdmissionControl::Permit();
  return admission_->Admit(bytes, absl::FromChrono(deadline));
}

absl::Status RouterService::TakeToken(const Principal& principal) {
  if (usage_ == nullptr) return absl::OkStatus();
  return usage_->Reserve(principal, UsageCost{}).status();
}

std::shared_ptr<RouterService::Stub> RouterService::StubFor(const std::string& address) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Stub>& stub = stubs_[address];
  if (stub == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (!options_.node_tls.root_ca.empty()) {
      grpc::SslCredentialsOptions tls;
      tls.pem_root_certs = options_.node_tls.root_ca;
      tls.pem_cert_chain = options_.node_tls.cert;
      tls.pem_private_key = options_.node_tls.key;
      credentials = grpc::SslCredentials(tls);
    }
    stub = v1::CopyDetection::NewStub(grpc::CreateCustomChannel(address, credentials, args));
  }
  return stub;
}

void RouterService::MarkFailed(const std::string& address) {
  absl::MutexLock lock(&mu_);
  failed_[address] = std::chrono::steady_clock::now();
}

void RouterService::MarkHealthy(const std::string& address) {
  absl::MutexLock lock(&mu_);
  failed_.erase(address);
}

bool RouterService::FailedLately(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = failed_.find(address);
  return it != failed_.end() &&
         std::chrono::steady_clock::now() - it->second < options_.failure_backoff;
}

RouterService::Deadline RouterService::DeadlineOf(const grpc::ServerContext& context) const {
  return std::min(context.deadline(), std::chrono::system_clock::now() + options_.timeout);
}

template <typename Reply>
absl::StatusOr<Reply> RouterService::CallPartition(uint32_t partition, Deadline deadline,
                                                   const Forwarded& caller,
                                                   const ReplicaCall<Reply>& call) {
  std::vector<ReplicaInfo> replicas = directory_->LiveReplicas(partition);
  // The replicas about as far along as the best take turns, so that a partition's replicas
  // share its checks; one lagging further behind (catching up after a restart) is asked
  // only after them, as it could make a read-your-writes check wait.
  if (replicas.size() > 1) {
    const uint64_t best = replicas.front().applied_sequence;
    const auto leading = std::partition_point(
        replicas.begin(), replicas.end(), [best](const ReplicaInfo& r) {
          return r.applied_sequence + kReplicaTurnLag >= best;
        });
    const size_t n = static_cast<size_t>(leading - replicas.begin());
    if (n > 1) {
      const size_t turn = turns_[partition].fetch_add(1, std::memory_order_relaxed) % n;
      std::rotate(replicas.begin(), replicas.begin() + static_cast<std::ptrdiff_t>(turn), leading);
    }
  }
  std::stable_partition(replicas.begin(), replicas.end(),
                        [this](const ReplicaInfo& r) { return !FailedLately(r.address); });
  absl::Status last = absl::UnavailableError("partition " + std::to_string(partition) +
                                             " has no live replica");
  for (size_t i = 0; i < replicas.size(); ++i) {
    const auto now = std::chrono::system_clock::now();
    if (now >= deadline) break;
    // Each replica left gets an equal share of the time left, so one that hangs leaves
    // time for the next.
    const Deadline until = now + (deadline - now) / static_cast<int64_t>(replicas.size() - i);
    grpc::ClientContext context;
    context.set_deadline(until);
    for (const auto& [key, value] : caller) context.AddMetadata(key, value);
    Reply reply;
    const absl::Status status =
        FromGrpcStatus(call(*StubFor(replicas[i].address), context, &reply));
    if (status.ok()) {
      MarkHealthy(replicas[i].address);
      return reply;
    }
    if (!ReplicaFailure(status)) return status;
    MarkFailed(replicas[i].address);
    last = absl::UnavailableError("partition " + std::to_string(partition) + ": replica " +
                                  replicas[i].address + ": " + std::string(status.message()));
  }
  return last;
}

template <typename Reply>
std::vector<absl::StatusOr<Reply>> RouterService::CallAll(Deadline deadline,
                                                          const Forwarded& caller,
                                                          const ReplicaCall<Reply>& call) {
  const uint32_t partitions = directory_->partitions();
  std::vector<std::future<absl::StatusOr<Reply>>> pending;
  for (uint32_t p = 1; p < partitions; ++p) {
    // Shared: the pool's tasks are copyable std::functions. `call` and `caller` outlive
    // them, as this waits for every one.
    auto task = std::make_shared<std::packaged_task<absl::StatusOr<Reply>()>>(
        [this, p, deadline, &caller, &call] {
          return CallPartition<Reply>(p, deadline, caller, call);
        });
    pending.push_back(task->get_future());
    pool_.Schedule([task] { (*task)(); });
  }
  std::vector<absl::StatusOr<Reply>> out;
  if (partitions > 0) out.push_back(CallPartition<Reply>(0, deadline, caller, call));
  for (auto& f : pending) out.push_back(f.get());
  return out;
}

absl::StatusOr<v1::CheckDocumentReply> RouterService::Check(
    const Principal& principal, const v1::CheckDocumentRequest& request, Deadline deadline) {
  // The policy first, as on a single node: a refused call takes no room and no token. The
  // replicas apply the rest of it (the collections searched, floors, redaction, audit) to
  // the forwarded identity.
  COPS_RETURN_IF_ERROR(AuthorizeCheck(
      *authorizer_, principal, {request.collections().begin(), request.collections().end()}));
  // Validated here so that a bad request fails alike whatever answers.
  const bool heavy_revisions = generations_->Current()->options().heavy_revisions;
  COPS_ASSIGN_OR_RETURN(const CheckOptions options,
                        CheckOptionsFromProto(request.options(), heavy_revisions));
  COPS_ASSIGN_OR_RETURN(const AdmissionControl::Permit permit,
                        Admit(request.content().size(), deadline));
  COPS_RETURN_IF_ERROR(TakeToken(principal));
  // The router's defaults decide for the whole cluster what the check left unsaid: every
  // partition answers the same question, whatever its own flags.
  std::optional<v1::CheckDocumentRequest> defaulted;
  if (!request.options().has_heavy_revisions()) {
    defaulted = request;
    defaulted->mutable_options()->set_heavy_revisions(heavy_revisions);
  }
  const v1::CheckDocumentRequest& forwarded = defaulted.has_value() ? *defaulted : request;
  const Forwarded caller = ForwardedIdentityMetadata(principal);
  std::vector<absl::StatusOr<v1::CheckDocumentReply>> replies = CallAll<v1::CheckDocumentReply>(
      deadline, caller,
      [&forwarded](Stub& stub, grpc::ClientContext& context, v1::CheckDocumentReply* reply) {
        return stub.CheckDocument(&context, forwarded, reply);
      });
  std::vector<std::optional<v1::CheckDocumentReply>> answered(replies.size());
  std::vector<size_t> empty;  // partitions that know no document of a collection named
  absl::Status refusal;       // an error of the request itself
  absl::Status unavailable;   // of the last partition without an answer
  const v1::CheckDocumentReply* first = nullptr;
  for (size_t p = 0; p < replies.size(); ++p) {
    if (replies[p].ok()) {
      answered[p] = *std::move(replies[p]);
      if (first == nullptr) first = &*answered[p];
    } else if (absl::IsNotFound(replies[p].status())) {
      empty.push_back(p);
    } else if (ReplicaFailure(replies[p].status())) {
      unavailable = replies[p].status();
    } else if (refusal.ok()) {
      refusal = replies[p].status();
    }
  }
  if (!refusal.ok()) return refusal;
  if (first == nullptr) {
    if (!empty.empty() && unavailable.ok()) return replies[empty.front()].status();
    return absl::UnavailableError("no partition answered the check: " +
                                  std::string(unavailable.message()));
  }
  // A partition without the collection answered "nothing here": the test's figures, no match.
  for (size_t p : empty) {
    v1::CheckDocumentReply none = *first;
    none.clear_matches();
    none.set_violation(false);
    answered[p] = std::move(none);
  }
  v1::CheckDocumentReply merged = MergeCheckReplies(answered, options.max_results);
  merged.set_request_id(request.request_id());
  if (options_.verdicts != nullptr) options_.verdicts->Count(merged);
  return merged;
}

grpc::Status RouterService::CheckDocument(grpc::ServerContext* context,
                                          const v1::CheckDocumentRequest* request,
                                          v1::CheckDocumentReply* reply) {
  return ServeAuthenticated(
      "CheckDocument", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& log) -> absl::Status {
        log.add_in_bytes(request->content().size());
        absl::StatusOr<v1::CheckDocumentReply> merged =
            Check(principal, *request, DeadlineOf(*context));
        if (!merged.ok()) return merged.status();
        *reply = *std::move(merged);
        if (reply->partial()) log.add_field("missing_partitions", PartitionList({
            reply->missing_partitions().begin(), reply->missing_partitions().end()}));
        return absl::OkStatus();
      });
}

grpc::Status RouterService::CheckStream(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CheckDocumentReply, v1::CheckDocumentRequest>* stream) {
  RequestLog log("CheckStream", context->peer());
  absl::StatusOr<Principal> principal = authorizer_->Authenticate(*context);
  if (!principal.ok()) return log.Finish(principal.status());
  log.set_principal(principal->name);
  v1::CheckDocumentRequest request;
  while (stream->Read(&request)) {
    // Each message on the key's current standing: a revoked key ends the stream.
    principal = authorizer_->Authenticate(*context);
    if (!principal.ok()) return log.Finish(principal.status());
    absl::StatusOr<v1::CheckDocumentReply> merged =
        Check(*principal, request, DeadlineOf(*context));
    v1::CheckDocumentReply reply;
    if (merged.ok()) {
      reply = *std::move(merged);
    } else {
      FillCheckError(merged.status(), request.request_id(), &reply);
    }
    if (!stream->Write(reply)) break;
  }
  return log.Finish(absl::OkStatus());
}

absl::StatusOr<v1::RegisterDocumentReply> RouterService::Register(const Principal& principal,
                                                                  const v1::Document& document,
                                                                  Deadline deadline) {
  const std::string& collection = document.metadata().collection();
  COPS_RETURN_IF_ERROR(authorizer_->Authorize(principal, Action::kRegister, collection));
  const std::shared_ptr<CopyDetector> detector = generations_->Current();
  COPS_ASSIGN_OR_RETURN(const RegistrationEvent event,
                        RoutedRegistrationEvent(document, principal,
                                                authorizer_->PolicyFor(collection),
                                                detector->NowMicros()));
  COPS_ASSIGN_OR_RETURN(const AdmissionControl::Permit permit,
                        Admit(document.content().size(), deadline));
  // Charged as on a single node: the stored metadata with the content.
  const DocumentRecord& meta = event.metadata;
  std::optional<Reservation> usage;
  if (usage_ != nullptr) {
    COPS_ASSIGN_OR_RETURN(
        usage, usage_->Reserve(principal, RegistrationCost(document.content().size(), meta)));
  }
  COPS_RETURN_IF_ERROR(authorizer_->EnsureCollection(collection));
  // What no node would register is refused before it reaches the log; the digest of the
  // canonical text chooses the partition, so the same text always meets itself.
  COPS_ASSIGN_OR_RETURN(
      const DocumentRecord prepared,
      detector->Prepare(document.content(), static_cast<DocumentFormat>(event.format),
                        event.metadata));
  const uint32_t partition = PartitionOf(prepared.sha256, directory_->partitions());
  COPS_ASSIGN_OR_RETURN(const uint64_t sequence,
                        log_->PublishTo(PartitionSubject(options_.base_subject, partition), event));
  // In the log: the outcome is what the partition's replicas make of it.
  v1::GetDocumentRequest get;
  get.set_log_sequence(sequence);
  absl::StatusOr<v1::GetDocumentReply> applied = CallPartition<v1::GetDocumentReply>(
      partition, deadline, ForwardedIdentityMetadata(principal),
      [&get](Stub& stub, grpc::ClientContext& context, v1::GetDocumentReply* reply) {
        return stub.GetDocument(&context, get, reply);
      });
  if (!applied.ok() && ReplicaFailure(applied.status())) {
    return absl::DeadlineExceededError(
        "the registration is in the log (sequence " + std::to_string(sequence) +
        ", partition " + std::to_string(partition) +
        ") but no replica of its partition confirmed it in time: " +
        std::string(applied.status().message()));
  }
  if (!applied.ok()) return applied.status();
  v1::RegisterDocumentReply reply =
      RoutedRegisterReply(applied->document(), sequence, prepared.sha256);
  // A duplicate (or a retry) creates nothing and uses no quota.
  if (reply.created() && usage.has_value()) usage->Commit();
  return reply;
}

grpc::Status RouterService::RegisterDocument(grpc::ServerContext* context,
                                             const v1::RegisterDocumentRequest* request,
                                             v1::RegisterDocumentReply* reply) {
  return ServeAuthenticated(
      "RegisterDocument", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& log) -> absl::Status {
        log.add_in_bytes(request->document().content().size());
        absl::StatusOr<v1::RegisterDocumentReply> registered =
            Register(principal, request->document(), DeadlineOf(*context));
        if (!registered.ok()) return registered.status();
        *reply = *std::move(registered);
        log.add_field("doc_id", std::to_string(reply->doc_id()));
        return absl::OkStatus();
      });
}

grpc::Status RouterService::RegisterDocuments(
    grpc::ServerContext* context, grpc::ServerReader<v1::RegisterDocumentRequest>* reader,
    v1::RegisterDocumentsReply* reply) {
  RequestLog log("RegisterDocuments", context->peer());
  absl::StatusOr<Principal> principal = authorizer_->Authenticate(*context);
  if (!principal.ok()) return log.Finish(principal.status());
  log.set_principal(principal->name);
  v1::RegisterDocumentRequest request;
  for (uint32_t i = 0; reader->Read(&request); ++i) {
    // Each document on the key's current standing: a revoked key ends the stream.
    principal = authorizer_->Authenticate(*context);
    if (!principal.ok()) return log.Finish(principal.status());
    v1::RegisterResult* result = reply->add_results();
    result->set_index(i);
    absl::StatusOr<v1::RegisterDocumentReply> registered =
        Register(*principal, request.document(), DeadlineOf(*context));
    if (registered.ok()) {
      *result->mutable_reply() = *std::move(registered);
      reply->set_registered(reply->registered() + 1);
    } else {
      FillRegisterError(registered.status(), result);
      reply->set_failed(reply->failed() + 1);
    }
  }
  return log.Finish(absl::OkStatus());
}

absl::StatusOr<RouterService::FoundDocument> RouterService::FindDocument(
    const v1::GetDocumentRequest& request, Deadline deadline, const Forwarded& caller) {
  std::vector<absl::StatusOr<v1::GetDocumentReply>> replies = CallAll<v1::GetDocumentReply>(
      deadline, caller, [&request](Stub& stub, grpc::ClientContext& ctx, v1::GetDocumentReply* out) {
        return stub.GetDocument(&ctx, request, out);
      });
  absl::Status status =
      absl::NotFoundError("document " + std::to_string(request.doc_id()) + " not found");
  for (uint32_t p = 0; p < replies.size(); ++p) {
    if (replies[p].ok()) return FoundDocument{p, *std::move(replies[p])};
    // A partition that could hold it did not answer: "not found" would be a guess.
    if (!absl::IsNotFound(replies[p].status()) && !absl::IsUnavailable(status)) {
      status = replies[p].status();
    }
  }
  return status;
}

grpc::Status RouterService::GetDocument(grpc::ServerContext* context,
                                        const v1::GetDocumentRequest* request,
                                        v1::GetDocumentReply* reply) {
  return ServeAuthenticated(
      "GetDocument", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& /*log*/) -> absl::Status {
        // The replica holding the document authorizes the read (owner, collection, text).
        COPS_RETURN_IF_ERROR(TakeToken(principal));
        COPS_ASSIGN_OR_RETURN(
            FoundDocument found,
            FindDocument(*request, DeadlineOf(*context), ForwardedIdentityMetadata(principal)));
        *reply = std::move(found.reply);
        return absl::OkStatus();
      });
}

grpc::Status RouterService::UnregisterDocument(grpc::ServerContext* context,
                                               const v1::UnregisterDocumentRequest* request,
                                               v1::UnregisterDocumentReply* reply) {
  return ServeAuthenticated(
      "UnregisterDocument", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& log) -> absl::Status {
        log.add_field("doc_id", std::to_string(request->doc_id()));
        v1::GetDocumentRequest get;
        get.set_doc_id(request->doc_id());
        COPS_ASSIGN_OR_RETURN(
            const FoundDocument found,
            FindDocument(get, DeadlineOf(*context), ForwardedIdentityMetadata(principal)));
        // As on a single node: an owner unregisters only its own documents.
        const v1::DocumentMetadata& m = found.reply.document().metadata();
        COPS_RETURN_IF_ERROR(authorizer_->AuthorizeDocument(principal, Action::kUnregister,
                                                            m.collection(), m.owner()));
        COPS_RETURN_IF_ERROR(TakeToken(principal));
        RegistrationEvent event;
        event.kind = RegistrationEventKind::kUnregister;
        event.doc_id = request->doc_id();
        COPS_ASSIGN_OR_RETURN(
            const uint64_t sequence,
            log_->PublishTo(PartitionSubject(options_.base_subject, found.partition), event));
        reply->set_log_sequence(sequence);
        log.add_field("log_sequence", std::to_string(sequence));
        return absl::OkStatus();
      });
}

grpc::Status RouterService::ListDocuments(grpc::ServerContext* context,
                                          const v1::ListDocumentsRequest* request,
                                          v1::ListDocumentsReply* reply) {
  return ServeAuthenticated(
      "ListDocuments", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& /*log*/) -> absl::Status {
        // The replicas list what the forwarded identity may read.
        if (absl::Status token = TakeToken(principal); !token.ok()) return token;
        const Forwarded caller = ForwardedIdentityMetadata(principal);
        std::vector<absl::StatusOr<v1::ListDocumentsReply>> replies =
            CallAll<v1::ListDocumentsReply>(
            DeadlineOf(*context), caller,
            [request](Stub& stub, grpc::ClientContext& ctx, v1::ListDocumentsReply* out) {
              return stub.ListDocuments(&ctx, *request, out);
            });
        std::vector<v1::ListDocumentsReply> pages;
        for (absl::StatusOr<v1::ListDocumentsReply>& r : replies) {
          if (!r.ok()) return r.status();
          pages.push_back(*std::move(r));
        }
        *reply = MergeDocumentPages(std::move(pages), request->page_size());
        return absl::OkStatus();
      });
}

grpc::Status RouterService::GetStats(grpc::ServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::GetStatsReply* reply) {
  return ServeAuthenticated(
      "GetStats", *context, *authorizer_,
      [&](const Principal& principal, RequestLog& /*log*/) -> absl::Status {
        absl::Status allowed = authorizer_->Authorize(principal, Action::kStats, "");
        if (allowed.ok()) allowed = TakeToken(principal);
        if (!allowed.ok()) return allowed;
        const Forwarded caller = ForwardedIdentityMetadata(principal);
        std::vector<absl::StatusOr<v1::GetStatsReply>> replies = CallAll<v1::GetStatsReply>(
            DeadlineOf(*context), caller,
            [request](Stub& stub, grpc::ClientContext& ctx, v1::GetStatsReply* out) {
              return stub.GetStats(&ctx, *request, out);
            });
        // Sums over the partitions (one replica each); the rest from the first.
        for (size_t p = 0; p < replies.size(); ++p) {
          if (!replies[p].ok()) return replies[p].status();
          if (p == 0) {
            *reply = *replies[p];
          } else {
            AddStats(*replies[p], reply);
          }
        }
        return absl::OkStatus();
      });
}

}  // namespace cops
