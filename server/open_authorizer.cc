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
  return collection_settings_ != nullptr ? collection_settings_->TemplateCollections()
                                         : std::vector<std::string>{};
}

}  // namespace cops
