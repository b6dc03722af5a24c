#ifndef COPS_SERVER_ROUTER_H_
#define COPS_SERVER_ROUTER_H_

// copsd --route: the router of a partitioned cluster (docs/scale-out.md, "The router"). It
// serves the CopyDetection API over the index replicas a ReplicaDirectory names, holding no
// documents itself:
//
//   CheckDocument, CheckStream  fanned out to one replica of every partition, at once, under
//                               one deadline; a partition's replicas within kReplicaTurnLag
//                               events of its most advanced one take turns; a replica that
//                               fails is skipped for a while and the partition's next one
//                               asked. The replies are merged
//                               (MergeCheckReplies) into what one node holding all the
//                               documents answers. A partition none of whose replicas answers
//                               makes the reply partial (partial, missing_partitions), never
//                               a silent "no violation"; none answering at all: UNAVAILABLE.
//   GetDocument, ListDocuments, GetStats   fanned out the same way and merged; they fail with
//                               UNAVAILABLE when a partition that could hold the answer is
//                               missing.
//   RegisterDocument(s)         converted and fingerprinted here only to refuse what no node
//                               would register and to choose the partition from the digest
//                               of the canonical text (replication/partitioning.h); published
//                               to that partition's subject; answered, once JetStream
//                               acknowledged it, with the outcome a replica of the partition
//                               reports for it (its id is the event's sequence when new).
//   UnregisterDocument          published to the partition that holds the document.
//
// Every call authenticates its caller as a single copsd does (the same Authorizer: API keys,
// client certificates, roles, collections) and takes the same rate token and quotas
// (UsageLedger) before any replica is asked; the replicas are then called on the caller's
// behalf, its identity forwarded (access/forwarded_identity.h), over mutual TLS with the
// node certificate of RouterOptions::node_tls when given. A registration's owner is the
// authenticated owner's name, never what the caller wrote.
//
// Checks and registrations pass the same admission control as on a single copsd
// (access/admission_control.h): over its limits they fail with RESOURCE_EXHAUSTED before
// any replica is asked. The calls to the partitions other than the first run on a fixed
// pool of threads (FanOutPool), never a thread per call.
//
// Thread-safety: handlers run concurrently; the service's state is guarded.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "access/admission_control.h"
#include "access/authorizer.h"
#include "access/usage_ledger.h"
#include "engine/index_generations.h"
#include "proto/cops.grpc.pb.h"
#include "replication/registration_log.h"
#include "replication/replica_directory.h"
#include "server/check_verdicts.h"

namespace cops {

// Replicas of a partition whose applied log sequence (as last heartbeated into the cluster
// map) is at most this far behind the partition's most advanced one take turns answering.
inline constexpr uint64_t kReplicaTurnLag = 1000;

struct RouterOptions {
  std::string base_subject = "cops.registrations";  // partition p publishes to <base>.<p>
  // The deadline of a fanned-out call when the caller set none (or a later one).
  std::chrono::milliseconds timeout{10000};
  // A replica whose call failed is asked last for this long.
  std::chrono::milliseconds failure_backoff{2000};
  // Threads calling partitions 1..P-1 of fanned-out calls (partition 0 is called on the
  // handler's thread); calls beyond them queue. REQUIRES > 0. main.cc sizes it so that the
  // admitted checks never queue: max_concurrent_calls x (partitions - 1).
  size_t fan_out_threads = 4;
  // How the router reaches its replicas: plaintext when root_ca is empty, else TLS trusting
  // root_ca, presenting cert/key (PEM texts) as the node's client certificate when given.
  struct NodeTls {
    std::string root_ca;
    std::string cert;
    std::string key;
  } node_tls;
  // Each answered check (the partitions' answers merged) is counted here; null: not counted.
  CheckVerdictCounter* verdicts = nullptr;
};

// A fixed set of threads running queued tasks in order, for the router's fan-out: its
// threads are bounded whatever the load (a burst queues instead of starting threads).
// Thread-safety: Schedule may be called from any thread.
class FanOutPool {
 public:
  // REQUIRES: threads > 0.
  explicit FanOutPool(size_t threads);
  // Runs the tasks already queued, then joins the threads.
  ~FanOutPool();
  FanOutPool(const FanOutPool&) = delete;
  FanOutPool& operator=(const FanOutPool&) = delete;

  void Schedule(std::function<void()> task);
  size_t threads() const { return threads_.size(); }

 private:
  void Work();

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

class RouterService final : public v1::CopyDetection::Service {
 public:
  // None is owned; all must outlive the service. `generations` is the router's own (empty)
  // index: its detector converts and fingerprints registrations to refuse and partition
  // them, with the chunking parameters every node of the cluster uses. `authorizer`
  // authenticates and authorizes callers and gives the collections' policies (retention);
  // `usage` (nullable: none) keeps their rate limits and quotas; `admission` (nullable:
  // none) admits checks and registrations as on a single node.
  RouterService(const ReplicaDirectory* directory, RegistrationLog* log,
                IndexGenerations* generations, Authorizer* authorizer, UsageLedger* usage,
                AdmissionControl* admission, RouterOptions options);

  grpc::Status RegisterDocument(grpc::ServerContext* context,
                                const v1::RegisterDocumentRequest* request,
                                v1::RegisterDocumentReply* reply) override;
  grpc::Status RegisterDocuments(grpc::ServerContext* context,
                                 grpc::ServerReader<v1::RegisterDocumentRequest>* reader,
                                 v1::RegisterDocumentsReply* reply) override;
  grpc::Status UnregisterDocument(grpc::ServerContext* context,
                                  const v1::UnregisterDocumentRequest* request,
                                  v1::UnregisterDocumentReply* reply) override;
  grpc::Status GetDocument(grpc::ServerContext* context, const v1::GetDocumentRequest* request,
                           v1::GetDocumentReply* reply) override;
  grpc::Status ListDocuments(grpc::ServerContext* context,
                             const v1::ListDocumentsRequest* request,
                             v1::ListDocumentsReply* reply) override;
  grpc::Status CheckDocument(grpc::ServerContext* context,
                             const v1::CheckDocumentRequest* request,
                             v1::CheckDocumentReply* reply) override;
  grpc::Status CheckStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CheckDocumentReply, v1::CheckDocumentRequest>* stream)
      override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::GetStatsRequest* request,
                        v1::GetStatsReply* reply) override;

 private:
  using Deadline = std::chrono::system_clock::time_point;
  using Stub = v1::CopyDetection::Stub;
  // One call to a replica: fills the reply, returns the call's status.
  template <typename Reply>
  using ReplicaCall = std::function<grpc::Status(Stub&, grpc::ClientContext&, Reply*)>;
  // The metadata that names the caller to the replicas.
  using Forwarded = std::vector<std::pair<std::string, std::string>>;

  // The reply of one replica of `partition`: asks its live replicas in turn (those that
  // failed lately last) until one answers. An error a replica returns for the request itself
  // (INVALID_ARGUMENT, NOT_FOUND, ...) is returned as is; UNAVAILABLE when none answers.
  template <typename Reply>
  absl::StatusOr<Reply> CallPartition(uint32_t partition, Deadline deadline,
                                      const Forwarded& caller, const ReplicaCall<Reply>& call);
  // CallPartition on every partition at once; result[p] is partition p's.
  template <typename Reply>
  std::vector<absl::StatusOr<Reply>> CallAll(Deadline deadline, const Forwarded& caller,
                                             const ReplicaCall<Reply>& call);

  Deadline DeadlineOf(const grpc::ServerContext& context) const;
  // The document `request` names, from the partition that holds it, and that partition.
  // NOT_FOUND when every partition says so; a partition that could hold it but did not
  // answer makes the error its own (UNAVAILABLE), never a guessed NOT_FOUND.
  struct FoundDocument {
    uint32_t partition = 0;
    v1::GetDocumentReply reply;
  };
  absl::StatusOr<FoundDocument> FindDocument(const v1::GetDocumentRequest& request,
                                             Deadline deadline, const Forwarded& caller);
  // A permit of the admission control for a call of `bytes` document bytes until `deadline`.
  absl::StatusOr<AdmissionControl::Permit> Admit(uint64_t bytes, Deadline deadline);
  // One rate token of `principal` (UsageLedger::Reserve without a cost).
  absl::Status TakeToken(const Principal& principal);
  absl::StatusOr<v1::CheckDocumentReply> Check(const Principal& principal,
                                               const v1::CheckDocumentRequest& request,
                                               Deadline deadline);
  absl::StatusOr<v1::RegisterDocumentReply> Register(const Principal& principal,
                                                     const v1::Document& document,
                                                     Deadline deadline);

  std::shared_ptr<Stub> StubFor(const std::string& address);
  void MarkFailed(const std::string& address);
  void MarkHealthy(const std::string& address);
  bool FailedLately(const std::string& address);

  const ReplicaDirectory* const directory_;
  RegistrationLog* const log_;
  IndexGenerations* const generations_;
  Authorizer* const authorizer_;
  UsageLedger* const usage_;
  AdmissionControl* const admission_;
  const RouterOptions options_;
  // turns_[p]: whose turn it is among partition p's leading replicas.
  const std::unique_ptr<std::atomic<uint64_t>[]> turns_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Stub>> stubs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::chrono::steady_clock::time_point> failed_ ABSL_GUARDED_BY(mu_);
  // Last member: destroyed (its queued calls run, its threads joined) first.
  FanOutPool pool_;
};

// The registration event the router publishes for `document` registered by `principal`:
// its content, declared format and every field of its metadata, the owner being the
// principal's name when it is an owner (as on a single node), the expiry defaulting to
// `policy`'s retention; `now_micros` is its registration time. INVALID_ARGUMENT for an
// unknown format, a field over its size or a lifetime a single node refuses.
absl::StatusOr<RegistrationEvent> RoutedRegistrationEvent(const v1::Document& document,
                                                          const Principal& principal,
                                                          const CollectionPolicy& policy,
                                                          int64_t now_micros);

}  // namespace cops

#endif  // COPS_SERVER_ROUTER_H_
