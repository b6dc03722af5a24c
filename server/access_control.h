#ifndef COPS_SERVER_ACCESS_CONTROL_H_
#define COPS_SERVER_ACCESS_CONTROL_H_

// The real Authorizer: principals with roles and collections, identified by API keys
// ("authorization: Bearer cops_<key_id>_<secret>" or "x-cops-api-key: cops_...") or by the
// verified client certificate of a mutual-TLS connection; slowed-down failed authentication;
// collection privacy settings; and the administration of all of these in the access store.
// Rate limits and quotas are the UsageLedger's (server/usage_ledger.h), the audit trail the
// AuditSink's (server/audit_sink.h); both share this object's PrincipalStore. The model is
// described in docs/security.md.
//
// What each role may do (admin may do everything):
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
// UsableCollections(), or to the caller's own documents).
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
#include "engine/wall_clock.h"
#include "server/authorizer.h"
#include "storage/principal_store.h"

namespace cops {

struct AccessControlOptions {
  // Failed authentication: the first failure from a peer host costs nothing, then each
  // further one waits failure_base_delay_ms * 2^(n-2), capped at failure_max_delay_ms,
  // before answering UNAUTHENTICATED. A peer's count resets after failure_window_ms
  // without failures, or on a success.
  int64_t failure_base_delay_ms = 100;
  int64_t failure_max_delay_ms = 3000;
  int64_t failure_window_ms = 60000;
  // Injectable for tests: wall clock in microseconds since the epoch, and the delay used
  // to slow down failed authentication. Defaults: the system clock and sleep_for.
  std::function<int64_t()> now_micros;
  std::function<void(int64_t millis)> sleep_millis;
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

  // UNAUTHENTICATED (logged, and slowed down per peer host) when nothing usable was
  // presented, the key is malformed, unknown or revoked, or the certificate names no known
  // principal.
  absl::StatusOr<Principal> AuthenticateCredentials(const CallCredentials& credentials);

  // Collections `principal` may search or list: its grants; std::nullopt (no restriction)
  // for an admin without explicit grants.
  std::optional<std::vector<std::string>> UsableCollections(
      const Principal& principal) const override;
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

  // --- Administration (the handler first authorizes Action::kAdmin) ---

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
    uint32_t count = 0;
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

}  // namespace cops

#endif  // COPS_SERVER_ACCESS_CONTROL_H_
