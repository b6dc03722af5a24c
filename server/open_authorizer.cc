#include "server/open_authorizer.h"

namespace cops {

absl::StatusOr<Principal> OpenAuthorizer::Authenticate(const grpc::ServerContextBase&) {
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

absl::Status OpenAuthorizer::EnsureCollection(std::string_view collection) {
  return collections_->EnsureCollection(collection);
}

absl::Status OpenAuthorizer::RequireCollection(std::string_view collection) const {
  return collections_->RequireCollection(collection);
}

}  // namespace cops
