#ifndef COPS_ACCESS_AUTHORIZER_H_
#define COPS_ACCESS_AUTHORIZER_H_

// Who may do what: the access policy. Every RPC handler first identifies the caller with
// Authenticate(), then asks Authorize() whether it may perform the action on the collection(s)
// it touches, and proceeds only on OK. The policy only decides: rate limits and quotas are
// kept by the UsageLedger (access/usage_ledger.h) and the audit trail by the AuditSink
// (access/audit_sink.h).
//
// Thread-safety: implementations must be safe for concurrent calls.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc {
class ServerContextBase;
}

namespace cops {

// on-disk (principal records): do not change values.
enum class Role : uint8_t {
  kOwner = 1,    // registers into collections it owns; unregisters only its own documents
  kChecker = 2,  // checks against granted collections; never reads registered text
  // Manages principals and collections and may do everything, within its collections when
  // it has any (a scoped admin); one without collections (unrestricted) administers the whole
  // server: snapshots, key rotations, statistics, principals without collections.
  kAdmin = 3,
};

enum class Action : uint8_t {
  kRegister,
  kUnregister,
  kReadDocument,  // GetDocument / ListDocuments metadata
  kReadText,      // registered text (never allowed to checkers)
  kCheck,
  kStats,  // server-wide statistics: an unrestricted admin only
  kAdmin,   // on a collection: administer it; on "": administer the whole server
  kReadMatches,  // the audit trail of the caller's own documents (ListMatches)
};

// The limits the UsageLedger applies to a principal. 0 means "the server's default" for the
// rate and burst and "unlimited" for the quotas.
struct UsageLimits {
  double requests_per_second = 0;  // token-bucket refill rate
  uint32_t burst = 0;              // token-bucket capacity
  uint64_t max_documents = 0;      // lifetime registrations accepted
  uint64_t max_bytes = 0;          // lifetime bytes registered
  bool unlimited = false;          // no rate limit and no quota at all (open loopback mode)
};

struct Principal {
  std::string name;  // e.g. "publisher-acm", or "local" in open mode
  Role role = Role::kChecker;
  // Collections the principal may use (register into for owners, check against for
  // checkers). Empty with role kAdmin means all.
  std::vector<std::string> collections;
  UsageLimits limits;  // as recorded when the caller authenticated
  // The cluster node whose certificate vouched for this identity (a router forwarding its
  // authenticated caller: access/forwarded_identity.h); "" when authenticated here.
  std::string forwarded_by = {};
};

// Lower bounds of a check's options for one principal, whatever it asks (CheckOptions):
// passages or counts of a few words would make spans an oracle that rebuilds registered text
// piece by piece. 0 = no floor.
struct CheckFloors {
  uint32_t min_passage_units = 0;
  uint32_t min_count = 0;
};

// Privacy settings of one collection (docs/security.md).
struct CollectionPolicy {
  bool show_titles_to_checkers = false;  // checkers see titles of its documents
  bool keep_audit = true;                // checks reporting its documents are audited
  // Expiry of a document registered without one, seconds after registration; 0 = none.
  int64_t retention_seconds = 0;
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;

  // Identifies the caller from call metadata (API key) or its TLS peer certificate.
  // UNAUTHENTICATED when credentials are missing, unknown or revoked (RESOURCE_EXHAUSTED
  // when the peer host is past its limit of failures). Never waits. Changes nothing but the
  // per-host count of failures.
  virtual absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) = 0;

  // OK when `principal` may perform `action` on `collection` ("" = no specific collection);
  // PERMISSION_DENIED otherwise. A pure decision: it changes no state.
  virtual absl::Status Authorize(const Principal& principal, Action action,
                                 std::string_view collection) const = 0;

  // OK when `principal` may administer everything `scope` names: each of these collections
  // (Authorize(kAdmin, c)), or, for an empty scope, the whole server (Authorize(kAdmin, ""):
  // an unrestricted admin only). The scope of an action on a principal is that principal's
  // collections, so a scoped admin acts only on principals whose grants all lie within its
  // own, and grants only collections it holds. PERMISSION_DENIED otherwise.
  absl::Status AuthorizeAdministration(const Principal& principal,
                                       const std::vector<std::string>& scope) const {
    if (scope.empty()) return Authorize(principal, Action::kAdmin, "");
    for (const std::string& collection : scope) {
      absl::Status s = Authorize(principal, Action::kAdmin, collection);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Like Authorize() for an action on one existing document (kUnregister, kReadText,
  // kReadDocument) owned by `owner`: an owner principal may unregister or read the text only
  // of documents whose owner is its own name.
  absl::Status AuthorizeDocument(const Principal& principal, Action action,
                                 std::string_view collection, std::string_view owner) const {
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

  // The floors of `principal`'s checks. Default: none.
  virtual CheckFloors CheckFloorsFor(const Principal& /*principal*/) const { return {}; }

  // The privacy settings of `collection`. Default: titles shown, no audit.
  virtual CollectionPolicy PolicyFor(std::string_view /*collection*/) const {
    return CollectionPolicy{true, false};
  }

  // The template collections (CollectionInfo.template): text a check shares with their
  // documents never counts against it. Default: none.
  virtual std::vector<std::string> TemplateCollections() const { return {}; }

  // A step of the registration path, not of any check: records `collection` with default
  // settings when it does not exist yet, so that it is listed like one created explicitly.
  // INVALID_ARGUMENT for a name that cannot be a collection's. Default: nothing to record.
  virtual absl::Status EnsureCollection(std::string_view /*collection*/) {
    return absl::OkStatus();
  }

  // OK when `collection` exists: "" (the default collection) always does; others once an
  // admin created them, a principal was granted them or a document was registered into
  // them. NOT_FOUND naming the collection otherwise. Calls that name a collection to read
  // (a check, a listing) ask this after Authorize(), so that a caller without access learns
  // nothing about which collections exist. Default: every collection exists.
  virtual absl::Status RequireCollection(std::string_view /*collection*/) const {
    return absl::OkStatus();
  }
};

}  // namespace cops

#endif  // COPS_ACCESS_AUTHORIZER_H_
