#ifndef COPS_SERVER_OPEN_AUTHORIZER_H_
#define COPS_SERVER_OPEN_AUTHORIZER_H_

// The authorizer of the open loopback mode (--auth=off, or auto on a loopback listener):
// every caller is the admin principal "local", without rate limits or quotas, and may do
// everything. Only sensible when the listener is reachable from this machine alone.
//
// Thread-safety: stateless; safe for concurrent calls.

#include "server/authorizer.h"

namespace cops {

class OpenAuthorizer final : public Authorizer {
 public:
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) override;
  absl::Status Authorize(const Principal& principal, Action action,
                         std::string_view collection) const override;
};

}  // namespace cops

#endif  // COPS_SERVER_OPEN_AUTHORIZER_H_
