#ifndef COPS_SERVER_AUTHORIZER_H_
#define COPS_SERVER_AUTHORIZER_H_

// Who may do what. Every RPC handler first calls Authorizer::Authorize() with the action it
// is about to perform and the collection(s) it touches; it proceeds only on OK.
//
// Thread-safety: implementations must be safe for concurrent calls.

#include <cstdint>
#include <optional>
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

// Privacy settings of one collection (docs/security.md).
struct CollectionPolicy {
  bool show_titles_to_checkers = false;  // checkers see titles of its documents
  bool keep_audit = true;                // checks reporting its documents are audited
};

// One registered document a check reported, for the audit trail.
struct CheckHit {
  uint64_t doc_id = 0;
  std::string collection;
  double ratio = 0;
  double containment = 0;
  uint32_t matched_chunks = 0;
  bool violation = false;
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

  // Like Authorize() for an action on one existing document (kUnregister, kReadText,
  // kReadDocument) owned by `owner`: an owner principal may unregister or read the text only
  // of documents whose owner is its own name.
  virtual absl::Status AuthorizeDocument(const Principal& principal, Action action,
                                         std::string_view collection, std::string_view owner) {
    absl::Status s = Authorize(principal, action, collection);
    if (s.ok() && principal.role == Role::kOwner && owner != principal.name &&
        (action == Action::kUnregister || action == Action::kReadText)) {
      return absl::PermissionDeniedError("document is owned by '" + std::string(owner) +
                                         "', not by '" + principal.name + "'");
    }
    return s;
  }

  // Collections a check by `principal` may search (and whose documents its reports may
  // show); std::nullopt means no restriction (the default, e.g. open loopback mode).
  virtual std::optional<std::vector<std::string>> UsableCollections(
      const Principal& /*principal*/) const {
    return std::nullopt;
  }

  // The privacy settings of `collection`. Default: titles shown, no audit.
  virtual CollectionPolicy PolicyFor(std::string_view /*collection*/) const {
    return CollectionPolicy{true, false};
  }

  // Appends audit records for the hits whose collections keep audits. Never fails the
  // caller's check (errors are logged). Default: nothing is recorded.
  virtual void RecordCheck(const Principal& /*checker*/, const std::vector<CheckHit>& /*hits*/) {}
};

}  // namespace cops

#endif  // COPS_SERVER_AUTHORIZER_H_
