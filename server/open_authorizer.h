#ifndef COPS_SERVER_OPEN_AUTHORIZER_H_
#define COPS_SERVER_OPEN_AUTHORIZER_H_

// The authorizer of the open loopback mode (--auth=off, or auto on a loopback listener):
// every caller is the admin principal "local", without rate limits or quotas, and may do
// everything. Only sensible when the listener is reachable from this machine alone. The
// template collections come from the collection settings an admin made (the access store),
// when given; privacy settings do not apply in this mode.
//
// Thread-safety: safe for concurrent calls (when `collection_settings` is).

#include "server/authorizer.h"

namespace cops {

class OpenAuthorizer final : public Authorizer {
 public:
  // `collection_settings` (not owned, may be null: no template collections) must outlive
  // this object.
  explicit OpenAuthorizer(const Authorizer* collection_settings = nullptr)
      : collection_settings_(collection_settings) {}

  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) override;
  absl::Status Authorize(const Principal& principal, Action action,
                         std::string_view collection) const override;
  std::vector<std::string> TemplateCollections() const override;

 private:
  const Authorizer* const collection_settings_;
};

}  // namespace cops

#endif  // COPS_SERVER_OPEN_AUTHORIZER_H_
