#include "access/call_policy.h"

#include <algorithm>
#include <utility>

#include "core/status_macros.h"
#include "engine/copy_detector.h"
#include "logging/log_event.h"

namespace cops {
namespace {

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

absl::Status AuthorizeCheck(const Authorizer& authorizer, const Principal& principal,
                            const std::vector<std::string>& collections) {
  if (collections.empty()) return authorizer.Authorize(principal, Action::kCheck, "");
  for (const std::string& c : collections) {
    COPS_RETURN_IF_ERROR(authorizer.Authorize(principal, Action::kCheck, c));
  }
  return absl::OkStatus();
}

absl::Status AuthorizeNamedCollection(const Authorizer& authorizer, const Principal& principal,
                                      Action action, std::string_view collection,
                                      const Index& index) {
  COPS_RETURN_IF_ERROR(authorizer.Authorize(principal, action, collection));
  absl::Status recorded = authorizer.RequireCollection(collection);
  if (!absl::IsNotFound(recorded)) return recorded;
  COPS_ASSIGN_OR_RETURN(const bool indexed, index.HasCollection(collection));
  return indexed ? absl::OkStatus() : recorded;
}

absl::StatusOr<std::optional<std::vector<std::string>>> CheckCollections(
    const Authorizer& authorizer, const Principal& principal,
    const std::vector<std::string>& requested, const Index& index) {
  std::optional<std::vector<std::string>> usable = authorizer.UsableCollections(principal);
  if (requested.empty()) return usable;
  std::vector<std::string> out;
  for (const std::string& c : requested) {
    COPS_RETURN_IF_ERROR(
        AuthorizeNamedCollection(authorizer, principal, Action::kCheck, c, index));
    if (!usable || Contains(*usable, c)) out.push_back(c);
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

std::vector<std::string> SearchedTemplates(
    const Authorizer& authorizer, const std::optional<std::vector<std::string>>& collections) {
  std::vector<std::string> templates = authorizer.TemplateCollections();
  if (collections.has_value()) {
    std::erase_if(templates, [&](const std::string& t) { return !Contains(*collections, t); });
  }
  return templates;
}

absl::Status AuthorizeExisting(const Authorizer& authorizer, const Principal& principal,
                               Action action, const DocumentRecord& record) {
  absl::Status s =
      authorizer.AuthorizeDocument(principal, action, record.collection, record.owner);
  if (s.code() == absl::StatusCode::kPermissionDenied) {
    const std::optional<std::vector<std::string>> usable =
        authorizer.UsableCollections(principal);
    if (usable && !Contains(*usable, record.collection)) {
      return absl::NotFoundError("document " + std::to_string(record.id) + " not found");
    }
  }
  return s;
}

std::vector<AuditRecord> AuditedHits(const Authorizer& authorizer, std::vector<AuditRecord> hits) {
  std::erase_if(hits, [&](const AuditRecord& hit) {
    return !authorizer.PolicyFor(hit.collection).keep_audit;
  });
  return hits;
}

absl::StatusOr<DocumentRecord> RegistrationRecord(const CollectionPolicy& policy,
                                                  const Principal& principal,
                                                  DocumentRecord asked, int64_t now_micros) {
  DocumentRecord meta = std::move(asked);
  if (principal.role == Role::kOwner) meta.owner = principal.name;
  COPS_RETURN_IF_ERROR(ValidateMetadataSizes(meta));
  if (meta.expires_unix_micros == 0) {
    // Bounded as PutCollection bounds it (a record stored before the bound may hold more).
    const int64_t retention = std::min(policy.retention_seconds, CollectionRecord::kMaxRetentionSeconds);
    if (retention > 0) meta.expires_unix_micros = now_micros + retention * 1000000;
  }
  COPS_RETURN_IF_ERROR(ValidateLifetime(meta, now_micros));
  return meta;
}

UsageCost RegistrationCost(uint64_t content_bytes, const DocumentRecord& meta) {
  return UsageCost{1, content_bytes + meta.title.size() + meta.author.size() +
                          meta.external_id.size()};
}

void RecordIndexedCollections(const Index& index, AccessControl& access) {
  absl::StatusOr<std::vector<std::string>> indexed = index.Collections();
  if (!indexed.ok()) {
    LogEvent(LogLevel::kWarn, "collections_not_recorded", {{"error", indexed.status().ToString()}});
    return;
  }
  for (const std::string& collection : *indexed) {
    absl::Status recorded = access.EnsureCollection(collection);
    if (!recorded.ok()) {
      LogEvent(LogLevel::kWarn, "collection_not_recorded",
               {{"collection", collection}, {"error", recorded.ToString()}});
    }
  }
}

std::function<absl::StatusOr<std::string>(const std::string& api_key,
                                          const std::vector<std::string>& certificate_names,
                                          const std::string& peer)>
ApiKeyAuthenticator(AccessControl* access) {
  return [access](const std::string& api_key, const std::vector<std::string>& certificate_names,
                  const std::string& peer) -> absl::StatusOr<std::string> {
    COPS_ASSIGN_OR_RETURN(const Principal principal, access->AuthenticateCredentials(CallCredentials{
                                                         api_key, certificate_names, peer}));
    return principal.name;
  };
}

}  // namespace cops
