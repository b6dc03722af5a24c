#ifndef COPS_SERVER_ADMIN_SERVICE_H_
#define COPS_SERVER_ADMIN_SERVICE_H_

// The gRPC Admin service (proto/cops_admin.proto): principals, API keys, collections, the
// audit trail, snapshots, key rotation and the receipt signing keys. Each handler
// authenticates, authorizes the administration of what the call touches
// (Authorizer::AuthorizeAdministration: the collections named, the target principal's
// collections; the whole server for snapshots, key rotations and principals without
// collections), takes a rate token from the UsageLedger, then calls AccessControl or the live
// index generation (IndexGenerations). A scoped admin (one with collections) thus acts only
// within its collections, and its listings show only what lies within them. In --auth=off
// loopback mode the open authorizer lets local callers prepare principals.
// Every call is logged once (server/request_log.h).
//
// Thread-safety: stateless beyond its dependencies, which are all thread-safe; handlers run
// concurrently.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "access/access_control.h"
#include "access/authorizer.h"
#include "access/usage_ledger.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "proto/cops_admin.grpc.pb.h"
#include "server/request_log.h"

namespace cops {

class AdminService final : public v1::Admin::Service {
 public:
  // None owned; all must outlive the service. `generations` may be null: the RPCs that
  // need the index (an owner's QueryAudit, CreateSnapshot, RotateKey, GetKeyRotationStatus,
  // SetBulkLoad) then answer UNAVAILABLE. CreateSnapshot writes a complete data directory
  // under the snapshots/ of the generations' data directory, whose access store `access`
  // must hold (IndexGenerations::WriteSnapshot). `receipts` may be null: the signing key
  // RPCs then answer UNAVAILABLE.
  AdminService(Authorizer* authorizer, AccessControl* access, UsageLedger* usage,
               IndexGenerations* generations, ReceiptSigner* receipts = nullptr);

  // RotateKey then fails with FAILED_PRECONDITION and `reason` (a node that applies the
  // registration log: docs/scale-out.md). REQUIRES: called before the service serves.
  void RefuseKeyRotation(std::string reason) { rotation_refusal_ = std::move(reason); }

  grpc::Status CreatePrincipal(grpc::ServerContext* context,
                               const v1::CreatePrincipalRequest* request,
                               v1::CreatePrincipalResponse* response) override;
  grpc::Status ListPrincipals(grpc::ServerContext* context,
                              const v1::ListPrincipalsRequest* request,
                              v1::ListPrincipalsResponse* response) override;
  grpc::Status SetPrincipalCollections(grpc::ServerContext* context,
                                       const v1::SetPrincipalCollectionsRequest* request,
                                       v1::SetPrincipalCollectionsResponse* response) override;
  grpc::Status CreateApiKey(grpc::ServerContext* context, const v1::CreateApiKeyRequest* request,
                            v1::CreateApiKeyResponse* response) override;
  grpc::Status RevokeApiKey(grpc::ServerContext* context, const v1::RevokeApiKeyRequest* request,
                            v1::RevokeApiKeyResponse* response) override;
  grpc::Status CreateCollection(grpc::ServerContext* context,
                                const v1::CreateCollectionRequest* request,
                                v1::CreateCollectionResponse* response) override;
  grpc::Status ListCollections(grpc::ServerContext* context,
                               const v1::ListCollectionsRequest* request,
                               v1::ListCollectionsResponse* response) override;
  grpc::Status QueryAudit(grpc::ServerContext* context, const v1::QueryAuditRequest* request,
                          v1::QueryAuditResponse* response) override;
  grpc::Status CreateSnapshot(grpc::ServerContext* context,
                              const v1::CreateSnapshotRequest* request,
                              v1::CreateSnapshotResponse* response) override;
  grpc::Status RotateKey(grpc::ServerContext* context, const v1::RotateKeyRequest* request,
                         v1::RotateKeyResponse* response) override;
  grpc::Status GetKeyRotationStatus(grpc::ServerContext* context,
                                    const v1::GetKeyRotationStatusRequest* request,
                                    v1::GetKeyRotationStatusResponse* response) override;
  grpc::Status SetBulkLoad(grpc::ServerContext* context, const v1::SetBulkLoadRequest* request,
                           v1::SetBulkLoadResponse* response) override;
  grpc::Status ListSigningKeys(grpc::ServerContext* context,
                               const v1::ListSigningKeysRequest* request,
                               v1::ListSigningKeysResponse* response) override;
  grpc::Status RotateSigningKey(grpc::ServerContext* context,
                                const v1::RotateSigningKeyRequest* request,
                                v1::RotateSigningKeyResponse* response) override;

 private:
  // Every Admin RPC: logs and authenticates the call (ServeAuthenticated), then runs
  // `body(caller)` when the caller may administer `scope` (AuthorizeAdministration; {} = the
  // whole server), computed once the caller is known, and is within its rate limit;
  // UNAUTHENTICATED / PERMISSION_DENIED / RESOURCE_EXHAUSTED otherwise.
  template <typename Scope, typename Body>
  grpc::Status Administer(std::string_view method, grpc::ServerContext* context, Scope&& scope,
                          Body&& body) {
    return ServeAuthenticated(method, *context, *authorizer_,
                              [&](const Principal& caller, RequestLog& /*log*/) {
                                absl::Status allowed = MayAdminister(caller, scope(caller));
                                return allowed.ok() ? body(caller) : allowed;
                              });
  }
  // Logs and authenticates the call, then runs `body(caller, log)` (ServeAuthenticated).
  template <typename Body>
  grpc::Status Serve(std::string_view method, grpc::ServerContext* context, Body&& body) {
    return ServeAuthenticated(method, *context, *authorizer_, std::forward<Body>(body));
  }
  // Whether `caller` may administer `scope` and is within its rate limit (a token taken).
  absl::Status MayAdminister(const Principal& caller, const std::vector<std::string>& scope);
  // The scope of acting on principal `name`: its collections; the whole server ({}) for one
  // without collections and for an unknown name, so that a scoped admin can tell neither an
  // unrestricted principal nor an unknown name from one beyond its reach.
  std::vector<std::string> ScopeOfPrincipal(std::string_view name) const;
  // Whether `caller` may see `record` in listings (AuthorizeAdministration of its scope).
  bool Administers(const Principal& caller, const PrincipalRecord& record) const;
  // The principal with its usage and keys (protocol/admin_records.h).
  void ShowPrincipal(const PrincipalRecord& record, v1::PrincipalInfo* out) const;

  Authorizer* const authorizer_;
  AccessControl* const access_;
  UsageLedger* const usage_;
  IndexGenerations* const generations_;
  ReceiptSigner* const receipts_;
  std::string rotation_refusal_;  // empty: rotation allowed
};

}  // namespace cops

#endif  // COPS_SERVER_ADMIN_SERVICE_H_
