#ifndef COPS_SERVER_AUTHORIZER_H_
#define COPS_SERVER_AUTHORIZER_H_

// Who may do what. Every RPC handler first calls Authorizer::Authorize() with the action it
// is about to perform and the collection(s) it touches; it proceeds only on OK.
//
// Thread-safety: implementations must be safe for concurrent calls.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class ServerContextBase;
}

namespace cops {

// on-disk (principal records): do not change values.
enum class Role : uint8_t {
  kOwner = 1,    // registers into collections it owns; unregisters only its own documents
  kChecker = 2,  // checks against granted collections; never reads registered text
  kAdmin = 3,    // manages principals, collections, snapshots; may do everything
};

enum class Action : uint8_t {
  kRegister,
  kUnregister,
  kReadDocument,  // GetDocument / ListDocuments metadata
  kReadText,      // registered text (never allowed to checkers)
  kCheck,
  kStats,
  kAdmin,
};

struct Principal {
  std::string name;  // e.g. "publisher-acm", or "anonymous" / "local" in open mode
  Role role = Role::kChecker;
  // Collections the principal may use (register into for owners, check against for
  // checkers). Empty with role kAdmin means all.
  std::vector<std::string> collections;
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;

  // Identifies the caller from call metadata (API key) or its TLS peer certificate.
  // UNAUTHENTICATED when credentials are missing, unknown or revoked.
  virtual absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) = 0;

  // OK when `principal` may perform `action` on `collection` ("" = no specific collection);
  // PERMISSION_DENIED otherwise; RESOURCE_EXHAUSTED when a rate limit or quota is exceeded
  // (`cost_bytes` counts against byte quotas).
  virtual absl::Status Authorize(const Principal& principal, Action action,
                                 std::string_view collection, uint64_t cost_bytes = 0) = 0;
};

}  // namespace cops

#endif  // COPS_SERVER_AUTHORIZER_H_
