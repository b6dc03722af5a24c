#ifndef COPS_ACCESS_OPEN_AUTHORIZER_H_
#define COPS_ACCESS_OPEN_AUTHORIZER_H_

// The authorizer of the open loopback mode (--auth=off, or auto on a loopback listener
// without mutual TLS): every caller is the admin principal "local", without rate limits or
// quotas, and may do everything. Only sensible when the listener is reachable from this
// machine alone. Collections are kept as with authentication on, in the access store: one
// registered into is recorded (and listed), a check or listing naming an unknown one is
// NOT_FOUND, and the template collections and retentions are those an admin set; privacy
// settings (titles, audit) do not apply in this mode.
//
// A caller that presented a verified client certificate is refused (UNAUTHENTICATED): a
// certificate claims a principal, which this mode does not check. copsd never serves client
// certificates in this mode (mutual TLS turns authentication on; access/transport_security.h);
// the refusal holds whatever the wiring.
//
// Thread-safety: safe for concurrent calls (the AccessControl it uses is).

#include <string>
#include <vector>

#include "access/access_control.h"
#include "access/authorizer.h"

namespace cops {

class OpenAuthorizer final : public Authorizer {
 public:
  // `collections` (not owned) keeps the collection records; it must outlive the authorizer.
  explicit OpenAuthorizer(AccessControl* collections) : collections_(collections) {}

  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) override;
  absl::Status Authorize(const Principal& principal, Action action,
                         std::string_view collection) const override;
  std::vector<std::string> TemplateCollections() const override;
  // Titles shown, no audit, and the collection's retention.
  CollectionPolicy PolicyFor(std::string_view collection) const override;
  absl::Status EnsureCollection(std::string_view collection) override;
  absl::Status RequireCollection(std::string_view collection) const override;

 private:
  AccessControl* const collections_;
};

}  // namespace cops

#endif  // COPS_ACCESS_OPEN_AUTHORIZER_H_
