#include "server/admin_service.h"

#include <chrono>
#include <functional>
#include <utility>

#include "core/status_macros.h"
#include "server/request_log.h"
#include "protocol/admin_records.h"
#include "server/service.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

std::vector<std::string> ToVector(const google::protobuf::RepeatedPtrField<std::string>& v) {
  return std::vector<std::string>(v.begin(), v.end());
}

// The scope of a call on the whole server: unrestricted admins only.
std::vector<std::string> WholeServer(const Principal& /*caller*/) { return {}; }

// The scope of a listing: whatever the caller administers (its collections; all for an
// unrestricted admin). Entries beyond it are then left out one by one.
std::function<std::vector<std::string>(const Principal&)> ItsOwnScope(
    const Authorizer& authorizer) {
  return [&authorizer](const Principal& caller) {
    return authorizer.UsableCollections(caller).value_or(std::vector<std::string>{});
  };
}

}  // namespace

AdminService::AdminService(Authorizer* authorizer, AccessControl* access, UsageLedger* usage,
                           IndexGenerations* generations, ReceiptSigner* receipts)
    : authorizer_(authorizer),
      access_(access),
      usage_(usage),
      generations_(generations),
      receipts_(receipts) {}

absl::Status AdminService::MayAdminister(const Principal& caller,
                                         const std::vector<std::string>& scope) {
  COPS_RETURN_IF_ERROR(authorizer_->AuthorizeAdministration(caller, scope));
  return usage_->Reserve(caller, UsageCost{}).status();
}

std::vector<std::string> AdminService::ScopeOfPrincipal(std::string_view name) const {
  std::optional<PrincipalRecord> record = access_->FindPrincipal(name);
  if (!record.has_value()) return {};
  return record->collections;
}

bool AdminService::Administers(const Principal& caller, const PrincipalRecord& record) const {
  return authorizer_->AuthorizeAdministration(caller, record.collections).ok();
}

void AdminService::ShowPrincipal(const PrincipalRecord& r, v1::PrincipalInfo* out) const {
  FillPrincipal(r, access_->Usage(r.name), access_->ListKeys(), out);
}

grpc::Status AdminService::CreatePrincipal(grpc::ServerContext* context,
                                           const v1::CreatePrincipalRequest* request,
                                           v1::CreatePrincipalResponse* response) {
  return Administer(
      "CreatePrincipal", context,
      [&](const Principal&) { return ToVector(request->collections()); },
      [&](const Principal& caller) {
        const PrincipalRecord record = PrincipalFromProto(*request);
        auto issued = access_->CreatePrincipal(record);
        if (!issued.ok()) return issued.status();
        spdlog::info("admin '{}' created principal '{}' with key id {}", caller.name, record.name,
                     issued->key_id);
        for (const PrincipalRecord& r : access_->ListPrincipals()) {
          if (r.name == record.name) ShowPrincipal(r, response->mutable_principal());
        }
        response->set_key_id(issued->key_id);
        response->set_api_key(issued->api_key);
        return absl::OkStatus();
      });
}

grpc::Status AdminService::ListPrincipals(grpc::ServerContext* context,
                                          const v1::ListPrincipalsRequest* /*request*/,
                                          v1::ListPrincipalsResponse* response) {
  return Administer("ListPrincipals", context, ItsOwnScope(*authorizer_),
                    [&](const Principal& caller) {
                      for (const PrincipalRecord& r : access_->ListPrincipals()) {
                        if (Administers(caller, r)) ShowPrincipal(r, response->add_principals());
                      }
                      return absl::OkStatus();
                    });
}

grpc::Status AdminService::SetPrincipalCollections(
    grpc::ServerContext* context, const v1::SetPrincipalCollectionsRequest* request,
    v1::SetPrincipalCollectionsResponse* response) {
  // Both the principal as it is and the grants it gets must lie within the caller's scope.
  return Administer(
      "SetPrincipalCollections", context,
      [&](const Principal&) {
        std::vector<std::string> scope = ScopeOfPrincipal(request->principal());
        if (scope.empty() || request->collections().empty()) return std::vector<std::string>{};
        scope.insert(scope.end(), request->collections().begin(), request->collections().end());
        return scope;
      },
      [&](const Principal& caller) {
        absl::Status s =
            access_->SetCollections(request->principal(), ToVector(request->collections()));
        if (!s.ok()) return s;
        spdlog::info("admin '{}' set the collections of '{}'", caller.name, request->principal());
        for (const PrincipalRecord& r : access_->ListPrincipals()) {
          if (r.name == request->principal()) ShowPrincipal(r, response->mutable_principal());
        }
        return absl::OkStatus();
      });
}

grpc::Status AdminService::CreateApiKey(grpc::ServerContext* context,
                                        const v1::CreateApiKeyRequest* request,
                                        v1::CreateApiKeyResponse* response) {
  return Administer(
      "CreateApiKey", context,
      [&](const Principal&) { return ScopeOfPrincipal(request->principal()); },
      [&](const Principal& caller) {
        auto issued = access_->CreateKey(request->principal());
        if (!issued.ok()) return issued.status();
        spdlog::info("admin '{}' created key id {} for '{}'", caller.name, issued->key_id,
                     request->principal());
        response->set_key_id(issued->key_id);
        response->set_api_key(issued->api_key);
        return absl::OkStatus();
      });
}

grpc::Status AdminService::RevokeApiKey(grpc::ServerContext* context,
                                        const v1::RevokeApiKeyRequest* request,
                                        v1::RevokeApiKeyResponse* /*response*/) {
  // An unknown key id has the whole server as its scope, like an unknown principal.
  return Administer(
      "RevokeApiKey", context,
      [&](const Principal&) {
        const std::optional<std::string> owner = access_->KeyOwner(request->key_id());
        return owner.has_value() ? ScopeOfPrincipal(*owner) : std::vector<std::string>{};
      },
      [&](const Principal& /*caller*/) { return access_->RevokeKey(request->key_id()); });
}

grpc::Status AdminService::CreateCollection(grpc::ServerContext* context,
                                            const v1::CreateCollectionRequest* request,
                                            v1::CreateCollectionResponse* response) {
  return Administer(
      "CreateCollection", context,
      [&](const Principal&) { return std::vector<std::string>{request->collection().name()}; },
      [&](const Principal& /*caller*/) {
        COPS_ASSIGN_OR_RETURN(const CollectionRecord record,
                              CollectionFromProto(request->collection()));
        COPS_RETURN_IF_ERROR(access_->PutCollection(record));
        for (const CollectionRecord& c : access_->ListCollections()) {
          if (c.name == record.name) FillCollection(c, response->mutable_collection());
        }
        return absl::OkStatus();
      });
}

grpc::Status AdminService::ListCollections(grpc::ServerContext* context,
                                           const v1::ListCollectionsRequest* /*request*/,
                                           v1::ListCollectionsResponse* response) {
  return Administer("ListCollections", context, ItsOwnScope(*authorizer_),
                    [&](const Principal& caller) {
                      for (const CollectionRecord& c : access_->ListCollections()) {
                        if (!authorizer_->AuthorizeAdministration(caller, {c.name}).ok()) continue;
                        FillCollection(c, response->add_collections());
                      }
                      return absl::OkStatus();
                    });
}

grpc::Status AdminService::QueryAudit(grpc::ServerContext* context,
                                      const v1::QueryAuditRequest* request,
                                      v1::QueryAuditResponse* response) {
  return Serve("QueryAudit", context, [&](const Principal& caller, RequestLog& /*log*/) {
    const bool unrestricted = authorizer_->AuthorizeAdministration(caller, {}).ok();
    if (caller.role != Role::kAdmin) {
      // An owner may see the audit trail of its own documents only.
      if (generations_ == nullptr) {
        return absl::UnavailableError("no index to look the document up");
      }
      auto doc = generations_->Current()->Get(request->doc_id());
      if (!doc.ok()) return doc.status();
      absl::Status allowed = authorizer_->Authorize(caller, Action::kReadDocument, doc->collection);
      if (allowed.ok() && doc->owner != caller.name) {
        allowed = absl::PermissionDeniedError("document " + std::to_string(doc->id) +
                                              " is not owned by '" + caller.name + "'");
      }
      if (!allowed.ok()) return allowed;
    } else if (!unrestricted) {
      // A scoped admin: the document's collection must be one of its own. The entries of a
      // document no longer registered are shown where their collection is.
      if (generations_ == nullptr) {
        return absl::UnavailableError("no index to look the document up");
      }
      auto doc = generations_->Current()->Get(request->doc_id());
      if (!doc.ok() && !absl::IsNotFound(doc.status())) return doc.status();
      if (doc.ok()) {
        absl::Status allowed = authorizer_->AuthorizeAdministration(caller, {doc->collection});
        if (!allowed.ok()) return allowed;
      }
    }
    if (absl::Status token = usage_->Reserve(caller, UsageCost{}).status(); !token.ok()) {
      return token;
    }
    auto entries = access_->QueryAudit(request->doc_id(), request->since_unix_micros(),
                                       request->limit() == 0 ? 1000 : request->limit());
    if (!entries.ok()) return entries.status();
    for (const AuditRecord& r : *entries) {
      if (caller.role == Role::kAdmin && !unrestricted &&
          !authorizer_->AuthorizeAdministration(caller, {r.collection}).ok()) {
        continue;
      }
      FillAuditEntry(r, response->add_entries());
    }
    return absl::OkStatus();
  });
}

grpc::Status AdminService::CreateSnapshot(grpc::ServerContext* context,
                                          const v1::CreateSnapshotRequest* request,
                                          v1::CreateSnapshotResponse* response) {
  return Administer("CreateSnapshot", context, WholeServer, [&](const Principal& caller) {
    if (generations_ == nullptr) {
      return absl::UnavailableError("no index to snapshot");
    }
    absl::StatusOr<std::string> path =
        generations_->WriteSnapshot(request->name(), *access_->store());
    if (!path.ok()) return path.status();
    spdlog::info("admin '{}' created snapshot {}", caller.name, *path);
    response->set_path(*path);
    return absl::OkStatus();
  });
}

grpc::Status AdminService::RotateKey(grpc::ServerContext* context,
                                     const v1::RotateKeyRequest* request,
                                     v1::RotateKeyResponse* response) {
  return Administer("RotateKey", context, WholeServer, [&](const Principal& caller) {
    if (generations_ == nullptr) {
      return absl::UnavailableError("this server cannot rotate its key");
    }
    if (!rotation_refusal_.empty()) {
      return absl::FailedPreconditionError(rotation_refusal_);
    }
    absl::StatusOr<KeyRotationProgress> started =
        generations_->StartRotation(request->drop_documents_without_text());
    if (!started.ok()) return started.status();
    spdlog::info("admin '{}' started a key rotation to key {}", caller.name, started->new_key_id);
    FillRotation(*started, response->mutable_status());
    return absl::OkStatus();
  });
}

grpc::Status AdminService::GetKeyRotationStatus(grpc::ServerContext* context,
                                                const v1::GetKeyRotationStatusRequest* /*request*/,
                                                v1::GetKeyRotationStatusResponse* response) {
  return Administer("GetKeyRotationStatus", context, WholeServer, [&](const Principal& /*caller*/) {
    if (generations_ == nullptr) {
      return absl::UnavailableError("this server cannot rotate its key");
    }
    FillRotation(generations_->Progress(), response->mutable_status());
    return absl::OkStatus();
  });
}

grpc::Status AdminService::SetBulkLoad(grpc::ServerContext* context,
                                       const v1::SetBulkLoadRequest* request,
                                       v1::SetBulkLoadResponse* response) {
  return Administer("SetBulkLoad", context, WholeServer, [&](const Principal& caller) {
    if (generations_ == nullptr) {
      return absl::UnavailableError("this server cannot bulk-load");
    }
    const auto started = std::chrono::steady_clock::now();
    spdlog::info("admin '{}' {} a bulk load", caller.name, request->enabled() ? "starts" : "ends");
    // The index stays open while the detector is held, also across a key rotation's switch.
    const std::shared_ptr<CopyDetector> detector = generations_->Current();
    Index* index = detector->index();
    absl::Status s = request->enabled() ? index->BeginBulkLoad() : index->EndBulkLoad();
    if (!s.ok()) return s;
    const bool loading = index->bulk_loading();
    spdlog::info("bulk load {} in {:.1f} s", loading ? "on" : "off",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    response->set_bulk_loading(loading);
    return absl::OkStatus();
  });
}

grpc::Status AdminService::ListSigningKeys(grpc::ServerContext* context,
                                           const v1::ListSigningKeysRequest* /*request*/,
                                           v1::ListSigningKeysResponse* response) {
  // Any principal: a receipt's holder needs the public key to show the receipt to others.
  return Serve("ListSigningKeys", context, [&](const Principal& caller, RequestLog& /*log*/) {
    if (absl::Status token = usage_->Reserve(caller, UsageCost{}).status(); !token.ok()) {
      return token;
    }
    if (receipts_ == nullptr) return absl::UnavailableError("this server signs no receipts");
    for (const SigningKeyInfo& k : receipts_->Keys()) FillSigningKey(k, response->add_keys());
    return absl::OkStatus();
  });
}

grpc::Status AdminService::RotateSigningKey(grpc::ServerContext* context,
                                            const v1::RotateSigningKeyRequest* /*request*/,
                                            v1::RotateSigningKeyResponse* response) {
  return Administer("RotateSigningKey", context, WholeServer, [&](const Principal& caller) {
    if (receipts_ == nullptr) return absl::UnavailableError("this server signs no receipts");
    absl::StatusOr<SigningKeyInfo> rotated = receipts_->Rotate();
    if (!rotated.ok()) return rotated.status();
    spdlog::info("admin '{}' rotated the receipt signing key to {}", caller.name, rotated->key_id);
    FillSigningKey(*rotated, response->mutable_key());
    return absl::OkStatus();
  });
}

}  // namespace cops
