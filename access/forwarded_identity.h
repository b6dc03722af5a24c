#ifndef COPS_ACCESS_FORWARDED_IDENTITY_H_
#define COPS_ACCESS_FORWARDED_IDENTITY_H_

// Identities a cluster node forwards (docs/security.md, "A cluster"). A router
// (copsd --route) authenticates its callers itself and calls the replicas on their behalf,
// naming the caller in call metadata:
//
//   x-cops-forwarded-principal: <name>
//   x-cops-forwarded-role:      owner | checker | admin
//   x-cops-forwarded-collection: <collection>   (one entry per granted collection)
//
// A replica believes these only from a node: a caller whose client certificate the TLS
// handshake verified and which is on the replica's --trusted-nodes list (a subject name, CN
// or SAN, or "sha256:<hex>", the fingerprint of the DER certificate). From anyone else a call
// carrying them is refused UNAUTHENTICATED, never served as that principal or as the caller.
// A forwarded principal is then held to the same rules as one authenticated here, over the
// role and grants the node sent (AuthorizeGrants); its rate limits and quotas were applied
// by the node, which charged them.
//
// Thread-safety: ForwardedIdentityAuthorizer is as thread-safe as the Authorizer it wraps;
// it holds no mutable state of its own.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "access/authorizer.h"

namespace cops {

inline constexpr char kForwardedPrincipalHeader[] = "x-cops-forwarded-principal";
inline constexpr char kForwardedRoleHeader[] = "x-cops-forwarded-role";
inline constexpr char kForwardedCollectionHeader[] = "x-cops-forwarded-collection";

// The nodes whose forwarded identities are believed.
struct TrustedNodes {
  std::vector<std::string> names;         // certificate subject names (CN or SAN)
  std::vector<std::string> fingerprints;  // SHA-256 of the DER certificate, lowercase hex

  bool empty() const { return names.empty() && fingerprints.empty(); }
};

// Parses copsd --trusted-nodes entries: "sha256:<64 hex digits>" (colons between byte pairs
// allowed) or a certificate name. INVALID_ARGUMENT naming a malformed entry.
absl::StatusOr<TrustedNodes> ParseTrustedNodes(const std::vector<std::string>& entries);

// The metadata that forwards `principal` (name, role, each collection), in order.
std::vector<std::pair<std::string, std::string>> ForwardedIdentityMetadata(
    const Principal& principal);

class ForwardedIdentityAuthorizer final : public Authorizer {
 public:
  // `base` (not owned, outlives this) authenticates every call without forwarded-identity
  // metadata and answers everything about collections. `checker_floors`: the floors of a
  // forwarded checker's checks (copsd's --checker-min-*).
  ForwardedIdentityAuthorizer(Authorizer* base, TrustedNodes nodes, CheckFloors checker_floors);

  // With forwarded-identity metadata: the forwarded principal (forwarded_by set, no rate
  // limit or quota of its own here) when the caller is a trusted node; UNAUTHENTICATED
  // otherwise, or when the metadata is malformed (no name, an unknown role). Without it:
  // base's answer.
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) override;
  // A forwarded principal by its grants (AuthorizeGrants); others by base.
  absl::Status Authorize(const Principal& principal, Action action,
                         std::string_view collection) const override;
  std::optional<std::vector<std::string>> UsableCollections(
      const Principal& principal) const override;
  CheckFloors CheckFloorsFor(const Principal& principal) const override;
  CollectionPolicy PolicyFor(std::string_view collection) const override;
  std::vector<std::string> TemplateCollections() const override;
  absl::Status EnsureCollection(std::string_view collection) override;
  absl::Status RequireCollection(std::string_view collection) const override;

 private:
  // The trusted node's name the verified peer certificate of `context` matches; nullopt
  // when there is none or it is not trusted.
  std::optional<std::string> TrustedNode(const grpc::ServerContextBase& context) const;

  Authorizer* const base_;
  const TrustedNodes nodes_;
  const CheckFloors checker_floors_;
};

}  // namespace cops

#endif  // COPS_ACCESS_FORWARDED_IDENTITY_H_
