#ifndef COPS_ACCESS_CALL_POLICY_H_
#define COPS_ACCESS_CALL_POLICY_H_

// The rules a call on documents follows before and after the engine works, the same for a
// single copsd (server/service.cc) and the router (server/router.cc): which collections a
// check may name and search, which existing documents a caller may reach, what a
// registration records and costs, and which hits go to the audit trail. Each is a decision
// over an Authorizer: none changes anything (EnsureCollection aside, which the caller does).
//
// Thread-safety: plain functions over thread-safe arguments.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "access/access_control.h"
#include "access/authorizer.h"
#include "access/usage_ledger.h"
#include "storage/index.h"

namespace cops {

// OK when `principal` may check against `collections` (each one; none: the whole index).
// Asked first, so that a refused check takes no token and waits for nothing.
absl::Status AuthorizeCheck(const Authorizer& authorizer, const Principal& principal,
                            const std::vector<std::string>& collections);

// Authorizes `action` on a collection a call names, then requires it to exist: recorded by
// the authorizer, or holding documents in `index` (a follower's index holds collections
// registered on the primary, whose access store it does not share). A caller without access
// learns PERMISSION_DENIED whether or not it exists, one with access NOT_FOUND for a
// collection that does not.
absl::Status AuthorizeNamedCollection(const Authorizer& authorizer, const Principal& principal,
                                      Action action, std::string_view collection,
                                      const Index& index);

// The collections a check searches: those asked for (each authorized and existing), narrowed
// to those the caller may use; std::nullopt = all.
absl::StatusOr<std::optional<std::vector<std::string>>> CheckCollections(
    const Authorizer& authorizer, const Principal& principal,
    const std::vector<std::string>& requested, const Index& index);

// The template collections a check searches: all of them, or those among `collections`.
std::vector<std::string> SearchedTemplates(
    const Authorizer& authorizer, const std::optional<std::vector<std::string>>& collections);

// AuthorizeDocument, but a caller who may not see the document's collection at all learns
// only NOT_FOUND, so ids of other tenants cannot be probed.
absl::Status AuthorizeExisting(const Authorizer& authorizer, const Principal& principal,
                               Action action, const DocumentRecord& record);

// The hits of a check that go to the audit trail: those whose collection keeps audits.
std::vector<AuditRecord> AuditedHits(const Authorizer& authorizer, std::vector<AuditRecord> hits);

// The metadata a registration by `principal` records, from the request's `asked`: an owner
// registers as itself whatever it asked; without an expiry, the retention of `policy` (the
// collection's, bounded as PutCollection bounds it) decides one; then sizes and lifetime are checked at
// `now_micros` (INVALID_ARGUMENT). Every node of a cluster applies the expiry decided here.
absl::StatusOr<DocumentRecord> RegistrationRecord(const CollectionPolicy& policy,
                                                  const Principal& principal,
                                                  DocumentRecord asked, int64_t now_micros);

// What registering `content_bytes` with `meta` costs: one document, and the content with
// the stored metadata (kept as long as the content).
UsageCost RegistrationCost(uint64_t content_bytes, const DocumentRecord& meta);

// Gives every collection that holds documents in `index` a record in `access` (those
// registered into with --auth=off by builds that did not record them), so that it is listed
// and a check may name it. A failure is logged: such a collection is still searched by checks
// that name no collection.
void RecordIndexedCollections(const Index& index, AccessControl& access);

// The principal's name of an API key, or else of a client certificate's names, presented
// from `peer` ("ipv4:ADDR:PORT", for the failure limit), by `access`
// (AccessControl::AuthenticateCredentials): for the HTTP API, which must know a caller before
// it queues a job. `access` must outlive the function.
std::function<absl::StatusOr<std::string>(const std::string& api_key,
                                          const std::vector<std::string>& certificate_names,
                                          const std::string& peer)>
ApiKeyAuthenticator(AccessControl* access);

}  // namespace cops

#endif  // COPS_ACCESS_CALL_POLICY_H_
