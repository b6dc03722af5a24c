#include "access/open_authorizer.h"

#include <memory>

#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"

namespace cops {

absl::StatusOr<Principal> OpenAuthorizer::Authenticate(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    return absl::UnauthenticatedError(
        "a client certificate was presented to a server without authentication (--auth=off): "
        "certificates name principals, which this server does not check; run copsd with "
        "--auth=on");
  }
  UsageLimits unlimited;
  unlimited.unlimited = true;
  return Principal{"local", Role::kAdmin, {}, unlimited};
}

absl::Status OpenAuthorizer::Authorize(const Principal&, Action, std::string_view) const {
  return absl::OkStatus();
}

std::vector<std::string> OpenAuthorizer::TemplateCollections() const {
  return collections_->TemplateCollections();
}

CollectionPolicy OpenAuthorizer::PolicyFor(std::string_view collection) const {
  CollectionPolicy policy{true, false};
  policy.retention_seconds = collections_->PolicyFor(collection).retention_seconds;
  return policy;
}

absl::Status OpenAuthorizer::EnsureCollection(std::string_view collection) {
  return collections_->EnsureCollection(collection);
}

absl::Status OpenAuthorizer::RequireCollection(std::string_view collection) const {
  return collections_->RequireCollection(collection);
}

}  // namespace cops
