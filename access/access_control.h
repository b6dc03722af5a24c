#ifndef COPS_ACCESS_ACCESS_CONTROL_H_
#define COPS_ACCESS_ACCESS_CONTROL_H_

// The real Authorizer: principals with roles and collections, identified by API keys
// ("authorization: Bearer cops_<key_id>_<secret>" or "x-cops-api-key: cops_...") or by the
// verified client certificate of a mutual-TLS connection; failed authentication limited per
// peer host without ever holding a thread;
// collection privacy settings; and the administration of all of these in the access store.
// Rate limits and quotas are the UsageLedger's (access/usage_ledger.h), the audit trail the
// AuditSink's (access/audit_sink.h); both share this object's PrincipalStore. The model is
// described in docs/security.md.
//
// What each role may do (an admin may do everything within its collections; one without
// collections everywhere):
//   action          owner (its collections)   checker (granted collections)
//   kRegister       yes                       no
//   kUnregister     yes (own documents: the   no
//                   handler also compares
//                   DocumentRecord::owner)
//   kReadDocument   yes                       no
//   kReadText       yes                       never
//   kCheck          yes                       yes
//   kReadMatches    yes (entries of its own   no
//                   documents: the handler
//                   queries by owner)
//   kStats, kAdmin  no                        no
// A collection of "" means "no specific collection": it passes the role test only for
// kCheck, kReadDocument and kReadMatches (the handler then restricts results to
// UsableCollections(), or to the caller's own documents). kAdmin and kStats on "" mean the
// whole server: only an admin without collections (unrestricted) passes; an admin with
// collections (scoped) administers those collections only (AuthorizeAdministration).
//
// Thread-safety: safe for concurrent use; principals, keys and collections are cached in
// memory under one mutex and written through to the PrincipalStore, so a revoked key or a
// removed grant takes effect for the very next call. The checks (Authorize, UsableCollections,
// PolicyFor) only read.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "access/authorizer.h"
#include "engine/wall_clock.h"
#include "storage/principal_store.h"

namespace cops {

struct AccessControlOptions {
  // Failed authentication is answered at once: no handler thread ever waits for it (a
  // delay held on a thread let a flood of wrong keys take every thread of the server).
  // Each peer host may fail failure_limit times within failure_window_ms; past that its
  // failed calls are answered RESOURCE_EXHAUSTED naming the limit, and logged only at
  // powers of two. The count only grows with failures and restarts after a window without
  // any; valid credentials are always verified and accepted from every host, over its limit
  // or not (many clients share one NAT address).
  uint32_t failure_limit = 20;
  int64_t failure_window_ms = 60000;
  // The floors of checkers' checks (copsd --checker-min-passage-units, --checker-min-count):
  // a checker asking for less gets these. The defaults equal CheckOptions' defaults, so a
  // check at the default options is unchanged. Owners and admins have none.
  CheckFloors checker_floors{8, 10};
  // The access store's free-space reserve, MiB (PrincipalStoreOptions::min_free_disk_mb;
  // copsd passes --min-free-disk-mb, the index's). 0 = none.
  uint64_t min_free_disk_mb = 0;
  // Injectable for tests: wall clock in microseconds since the epoch. Default: the system
  // clock.
  std::function<int64_t()> now_micros;
};

// What a call presented, taken from a gRPC ServerContext by Authenticate() (exposed so
// tests and non-gRPC front ends can use the same path).
struct CallCredentials {
  std::string api_key;  // "" when none was sent
  // Identities of a verified client certificate (SAN entries, then the subject CN);
  // empty without mutual TLS.
  std::vector<std::string> certificate_names;
  std::string peer;  // e.g. "ipv4:127.0.0.1:53112"; used for failure throttling and logs
};

// A newly created API key: `api_key` is the only copy of the secret anywhere.
struct IssuedKey {
  std::string principal;
  std::string key_id;
  std::string api_key;  // "cops_<key_id>_<secret>"
};

class AccessControl : public Authorizer {
 public:
  // `store` must outlive nothing else: the AccessControl owns it.
  static absl::StatusOr<std::unique_ptr<AccessControl>> Open(
      std::unique_ptr<PrincipalStore> store, AccessControlOptions options = {});
  ~AccessControl() override;

  // Authorizer. Authenticate() reads the API key from metadata "authorization" (Bearer) or
  // "x-cops-api-key"; without one, the verified client-certificate identities. A key wins
  // over a certificate when both are present.
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) override;
  absl::Status Authorize(const Principal& principal, Action action,
                         std::string_view collection) const override;

  // UNAUTHENTICATED (logged) when nothing usable was presented, the key is malformed,
  // unknown or revoked, or the certificate names no known principal; RESOURCE_EXHAUSTED
  // instead once the peer host is past its failure limit (AccessControlOptions). Never
  // waits.
  absl::StatusOr<Principal> AuthenticateCredentials(const CallCredentials& credentials);

  // Collections `principal` may search or list: its grants; std::nullopt (no restriction)
  // for an admin without explicit grants.
  std::optional<std::vector<std::string>> UsableCollections(
      const Principal& principal) const override;
  // options_.checker_floors for a checker (its current role), none for others.
  CheckFloors CheckFloorsFor(const Principal& principal) const override;
  // The settings of `collection` (defaults when it was never created explicitly).
  CollectionPolicy PolicyFor(std::string_view collection) const override;
  // The collections created with template set, by name.
  std::vector<std::string> TemplateCollections() const override;
  // Creates `collection` with default settings unless it exists (the registration path
  // calls it before the first document goes in). The store's error when it cannot be written.
  absl::Status EnsureCollection(std::string_view collection) override;
  // NOT_FOUND unless `collection` is "" or has a record (ListCollections()).
  absl::Status RequireCollection(std::string_view collection) const override;

  // The access store, for the UsageLedger and the AuditSink that share it.
  PrincipalStore* store() const { return store_.get(); }

  // --- Administration (the handler first authorizes AuthorizeAdministration over the
  // collections each call touches) ---

  // The record of principal `name`; std::nullopt when there is none.
  std::optional<PrincipalRecord> FindPrincipal(std::string_view name) const;
  // The principal API key `key_id` belongs to; std::nullopt for an unknown key.
  std::optional<std::string> KeyOwner(std::string_view key_id) const;

  // Creates a principal and its first API key. Collections that do not exist yet are created
  // with default settings. ALREADY_EXISTS when the name is taken; INVALID_ARGUMENT on a bad
  // name or role. Limits left at 0 take the defaults described in PrincipalRecord.
  absl::StatusOr<IssuedKey> CreatePrincipal(const PrincipalRecord& record);
  // Another key for an existing principal (key rotation). NOT_FOUND when unknown.
  absl::StatusOr<IssuedKey> CreateKey(std::string_view principal);
  // Revokes at once. NOT_FOUND for an unknown key id; revoking twice is OK.
  absl::Status RevokeKey(std::string_view key_id);
  // Replaces the grants of an existing principal. NOT_FOUND when unknown.
  absl::Status SetCollections(std::string_view principal, std::vector<std::string> collections);
  std::vector<PrincipalRecord> ListPrincipals() const;
  std::vector<ApiKeyRecord> ListKeys() const;  // hashes included, never a secret
  // Creates or updates a collection's settings.
  absl::Status PutCollection(const CollectionRecord& record);
  std::vector<CollectionRecord> ListCollections() const;
  // Audit records of one document (the handler checks that the caller owns it).
  absl::StatusOr<std::vector<AuditRecord>> QueryAudit(uint64_t doc_id, int64_t since_unix_micros,
                                                      size_t limit) const;
  absl::StatusOr<UsageRecord> Usage(std::string_view principal) const;

  // When no admin principal exists yet, creates "admin" and returns its key (to be shown
  // once); std::nullopt when one already exists.
  absl::StatusOr<std::optional<IssuedKey>> BootstrapAdmin();

 private:
  struct PeerFailures {
    uint64_t count = 0;  // failures since the first of the current window
    int64_t last_micros = 0;
  };

  AccessControl(std::unique_ptr<PrincipalStore> store, AccessControlOptions options);
  absl::Status Load();
  absl::StatusOr<IssuedKey> IssueKeyLocked(const std::string& principal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status EnsureCollectionsLocked(const std::vector<std::string>& names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Principal> Fail(const CallCredentials& credentials, std::string_view reason)
      ABSL_LOCKS_EXCLUDED(failures_mu_);

  const std::unique_ptr<PrincipalStore> store_;
  const AccessControlOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, PrincipalRecord, std::less<>> principals_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ApiKeyRecord, std::less<>> keys_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, CollectionRecord, std::less<>> collections_ ABSL_GUARDED_BY(mu_);

  absl::Mutex failures_mu_;
  std::map<std::string, PeerFailures, std::less<>> failures_ ABSL_GUARDED_BY(failures_mu_);
};

// Opens the access store <data_dir>/access and the AccessControl over it. When
// `bootstrap_admin` and no admin principal exists yet, creates principal "admin", writes its
// API key to <data_dir>/admin.key (mode 0600, never overwriting an existing file) and logs the
// file's path and the key id (never the key) once.
absl::StatusOr<std::unique_ptr<AccessControl>> OpenAccessControl(const std::string& data_dir,
                                                                 bool bootstrap_admin,
                                                                 AccessControlOptions options = {});

// The Role named "owner", "checker" or "admin"; INVALID_ARGUMENT otherwise.
absl::StatusOr<Role> ParseRole(std::string_view name);
std::string_view RoleName(Role role);

// The rules of AccessControl::Authorize over the role and collections `principal` carries
// (its grants as given, not a stored record's): for identities a cluster node forwarded.
absl::Status AuthorizeGrants(const Principal& principal, Action action,
                             std::string_view collection);

}  // namespace cops

#endif  // COPS_ACCESS_ACCESS_CONTROL_H_
