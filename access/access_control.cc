#include "access/access_control.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_join.h"
#include "core/strings.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "spdlog/spdlog.h"
#include "storage/data_dir.h"

namespace cops {
namespace {

constexpr std::string_view kKeyPrefix = "cops_";
constexpr size_t kKeyIdBytes = 8;    // 16 hex digits
constexpr size_t kSecretBytes = 32;  // 64 hex digits: 256 bits, beyond brute force
constexpr size_t kSaltBytes = 16;
constexpr size_t kMaxTrackedPeers = 10000;

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 15]);
  }
  return out;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

absl::StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return absl::InternalError("OpenSSL RAND_bytes failed: no entropy for a new key");
  }
  return out;
}

// SHA-256(salt || secret). API keys carry 256 random bits, so one salted hash is enough:
// a slow KDF protects low-entropy passwords, not keys nobody can enumerate.
std::string SaltedHash(std::string_view salt, std::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, salt.data(), salt.size());
  EVP_DigestUpdate(ctx, secret.data(), secret.size());
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<char*>(digest), len);
}

struct ParsedKey {
  std::string_view key_id;
  std::string_view secret;
};

// "cops_<16 hex>_<64 hex>"
std::optional<ParsedKey> ParseApiKey(std::string_view key) {
  if (!key.starts_with(kKeyPrefix)) return std::nullopt;
  key.remove_prefix(kKeyPrefix.size());
  if (key.size() != 2 * kKeyIdBytes + 1 + 2 * kSecretBytes || key[2 * kKeyIdBytes] != '_') {
    return std::nullopt;
  }
  ParsedKey parsed{key.substr(0, 2 * kKeyIdBytes), key.substr(2 * kKeyIdBytes + 1)};
  if (!IsLowerHex(parsed.key_id) || !IsLowerHex(parsed.secret)) return std::nullopt;
  return parsed;
}

// "ipv4:10.0.0.7:53112" -> "ipv4:10.0.0.7": throttling is per host, not per connection.
// copsd's HTTP API calls the service over the in-process channel, where every call has this
// one peer, and forwards its client's address as metadata x-cops-forwarded-peer
// (client/client_security.h). Only a call on that channel may name its peer so: a network
// client's header is ignored (its peer is "ipv4:..." or "ipv6:...", never these).
bool IsInProcessPeer(std::string_view peer) { return peer == "unknown" || peer == "inproc"; }

bool IsForwardablePeer(std::string_view peer) {
  return peer.size() <= 64 && (peer.starts_with("ipv4:") || peer.starts_with("ipv6:"));
}

std::string PeerHost(std::string_view peer) {
  size_t colon = peer.rfind(':');
  size_t first = peer.find(':');
  if (colon == std::string_view::npos || colon == first) return std::string(peer);
  return std::string(peer.substr(0, colon));
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Principal ToPrincipal(const PrincipalRecord& r) {
  UsageLimits limits;
  limits.requests_per_second = r.requests_per_second;
  limits.burst = r.burst;
  limits.max_documents = r.max_documents;
  limits.max_bytes = r.max_bytes;
  return Principal{r.name, static_cast<Role>(r.role), r.collections, limits};
}

std::string_view ActionName(Action a) {
  switch (a) {
    case Action::kRegister: return "register";
    case Action::kUnregister: return "unregister";
    case Action::kReadDocument: return "read document metadata";
    case Action::kReadText: return "read registered text";
    case Action::kCheck: return "check";
    case Action::kStats: return "read server statistics";
    case Action::kAdmin: return "administer";
    case Action::kReadMatches: return "list the matches of its documents";
  }
  return "?";
}

// The role table of access_control.h, before collection grants.
bool RoleAllows(Role role, Action action) {
  switch (role) {
    case Role::kAdmin:
      return true;
    case Role::kOwner:
      return action == Action::kRegister || action == Action::kUnregister ||
             action == Action::kReadDocument || action == Action::kReadText ||
             action == Action::kCheck || action == Action::kReadMatches;
    case Role::kChecker:
      return action == Action::kCheck;
  }
  return false;
}

}  // namespace

absl::StatusOr<Role> ParseRole(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "owner") return Role::kOwner;
  if (lower == "checker") return Role::kChecker;
  if (lower == "admin") return Role::kAdmin;
  return absl::InvalidArgumentError(
      StrCat("unknown role '", name, "': expected owner, checker or admin"));
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kOwner: return "owner";
    case Role::kChecker: return "checker";
    case Role::kAdmin: return "admin";
  }
  return "unknown";
}

AccessControl::AccessControl(std::unique_ptr<PrincipalStore> store, AccessControlOptions options)
    : store_(std::move(store)), options_([&] {
        if (!options.now_micros) options.now_micros = WallClockMicros;
        return std::move(options);
      }()) {}

AccessControl::~AccessControl() = default;

absl::StatusOr<std::unique_ptr<AccessControl>> AccessControl::Open(
    std::unique_ptr<PrincipalStore> store, AccessControlOptions options) {
  if (store == nullptr) return absl::InvalidArgumentError("AccessControl needs a store");
  std::unique_ptr<AccessControl> ac(new AccessControl(std::move(store), std::move(options)));
  absl::Status loaded = ac->Load();
  if (!loaded.ok()) return loaded;
  return ac;
}

absl::Status AccessControl::Load() {
  auto principals = store_->ListPrincipals();
  if (!principals.ok()) return principals.status();
  auto keys = store_->ListKeys();
  if (!keys.ok()) return keys.status();
  auto collections = store_->ListCollections();
  if (!collections.ok()) return collections.status();
  absl::MutexLock lock(&mu_);
  for (auto& p : *principals) principals_[p.name] = std::move(p);
  for (auto& k : *keys) keys_[k.key_id] = std::move(k);
  for (auto& c : *collections) collections_[c.name] = std::move(c);
  return absl::OkStatus();
}

// ---------------------------------------------------------------- authentication

absl::StatusOr<Principal> AccessControl::Authenticate(const grpc::ServerContextBase& context) {
  CallCredentials creds;
  creds.peer = context.peer();
  for (const auto& [name, value] : context.client_metadata()) {
    std::string_view n(name.data(), name.size());
    std::string_view v(value.data(), value.size());
    if (n == "authorization") {
      // RFC 6750: the scheme is case-insensitive.
      std::string scheme(v.substr(0, 7));
      for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (scheme == "bearer ") creds.api_key = Trim(v.substr(7));
    } else if (n == "x-cops-api-key" && creds.api_key.empty()) {
      creds.api_key = Trim(v);
    } else if (n == "x-cops-forwarded-peer" && IsInProcessPeer(context.peer()) &&
               IsForwardablePeer(v)) {
      creds.peer = std::string(v);
    } else if (n == "x-cops-forwarded-certificate" && IsInProcessPeer(context.peer())) {
      // The HTTP API's listener verified this client certificate (--tls-client-ca).
      if (!Contains(creds.certificate_names, v)) creds.certificate_names.emplace_back(v);
    }
  }
  // Only a certificate the TLS handshake verified names a principal (copsd requires and
  // verifies client certificates whenever it is given a client CA).
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
      for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
        std::string name(v.data(), v.size());
        if (!Contains(creds.certificate_names, name)) creds.certificate_names.push_back(name);
      }
    }
  }
  return AuthenticateCredentials(creds);
}

absl::StatusOr<Principal> AccessControl::AuthenticateCredentials(
    const CallCredentials& credentials) {
  std::optional<PrincipalRecord> found;
  if (!credentials.api_key.empty()) {
    std::optional<ParsedKey> parsed = ParseApiKey(credentials.api_key);
    if (!parsed) return Fail(credentials, "malformed API key (expected cops_<id>_<secret>)");
    ApiKeyRecord key;
    {
      absl::MutexLock lock(&mu_);
      auto it = keys_.find(parsed->key_id);
      if (it == keys_.end()) {
        return Fail(credentials, StrCat("unknown API key id ", parsed->key_id));
      }
      key = it->second;
    }
    std::string hash = SaltedHash(key.salt, parsed->secret);
    // Constant-time: the comparison must not tell an attacker how many bytes matched.
    if (hash.size() != key.hash.size() ||
        CRYPTO_memcmp(hash.data(), key.hash.data(), hash.size()) != 0) {
      return Fail(credentials, StrCat("wrong secret for API key id ", key.key_id));
    }
    absl::MutexLock lock(&mu_);
    // Re-read under the lock: a revocation racing with this call wins.
    auto k = keys_.find(key.key_id);
    if (k == keys_.end() || k->second.revoked_unix_micros != 0) {
      return Fail(credentials, StrCat("revoked API key id ", key.key_id));
    }
    auto p = principals_.find(key.principal);
    if (p == principals_.end()) {
      return Fail(credentials, StrCat("API key id ", key.key_id,
                                            " belongs to a deleted principal"));
    }
    found = p->second;
  } else if (!credentials.certificate_names.empty()) {
    absl::MutexLock lock(&mu_);
    for (const std::string& name : credentials.certificate_names) {
      auto p = principals_.find(name);
      if (p != principals_.end()) {
        found = p->second;
        break;
      }
    }
    if (!found) {
      return Fail(credentials, StrCat("client certificate '",
                                            credentials.certificate_names.front(),
                                            "' names no known principal"));
    }
  } else {
    return Fail(credentials,
                "no credentials: send 'authorization: Bearer <API key>' or use a client "
                "certificate");
  }
  // A success does not clear the host's failures: behind a NAT, one valid client would
  // otherwise reset the limit of everyone guessing beside it.
  return ToPrincipal(*found);
}

absl::StatusOr<Principal> AccessControl::Fail(const CallCredentials& credentials,
                                              std::string_view reason) {
  const int64_t now = options_.now_micros();
  const int64_t window = options_.failure_window_ms * 1000;
  const std::string host = PeerHost(credentials.peer);
  uint64_t count = 0;
  {
    absl::MutexLock lock(&failures_mu_);
    if (failures_.size() >= kMaxTrackedPeers) {
      std::erase_if(failures_,
                    [&](const auto& kv) { return now - kv.second.last_micros > window; });
      if (failures_.size() >= kMaxTrackedPeers) failures_.clear();
    }
    PeerFailures& f = failures_[host];
    if (now - f.last_micros > window) f.count = 0;
    f.count++;
    f.last_micros = now;
    count = f.count;
  }
  // Answered at once: a wait here would hold one of the server's few handler threads.
  const bool over_limit = count > options_.failure_limit;
  // Never log a secret: reasons name key ids only. Past the limit, at powers of two only.
  if (!over_limit || (count & (count - 1)) == 0) {
    spdlog::warn("authentication failed from {} ({} failures in the last {} s{}): {}",
                 credentials.peer, count, options_.failure_window_ms / 1000,
                 over_limit ? ", over its limit: logged at powers of two" : "", reason);
  }
  if (over_limit) {
    return absl::ResourceExhaustedError(StrCat(
        "too many failed authentications from ", host, " (", count, " within ",
        options_.failure_window_ms / 1000, " s; the limit is ", options_.failure_limit,
        "): these credentials were not accepted; valid ones still are"));
  }
  // The caller learns what kind of problem it has, not which of unknown/revoked/wrong.
  if (credentials.api_key.empty() && credentials.certificate_names.empty()) {
    return absl::UnauthenticatedError(std::string(reason));
  }
  if (!credentials.api_key.empty()) {
    if (reason.starts_with("malformed")) {
      return absl::UnauthenticatedError(std::string(reason));
    }
    return absl::UnauthenticatedError("API key is unknown or revoked");
  }
  return absl::UnauthenticatedError(std::string(reason));
}

// ---------------------------------------------------------------- authorization

absl::Status AccessControl::Authorize(const Principal& principal, Action action,
                                      std::string_view collection) const {
  // Decide on the current record, not the copy taken at authentication: a grant removed
  // a moment ago no longer counts.
  PrincipalRecord record;
  {
    absl::MutexLock lock(&mu_);
    auto it = principals_.find(principal.name);
    if (it == principals_.end()) {
      return absl::PermissionDeniedError(
          StrCat("principal '", principal.name, "' no longer exists"));
    }
    record = it->second;
  }
  Principal current = principal;
  current.role = static_cast<Role>(record.role);
  current.collections = std::move(record.collections);
  return AuthorizeGrants(current, action, collection);
}

absl::Status AuthorizeGrants(const Principal& principal, Action action,
                             std::string_view collection) {
  const Role role = principal.role;
  if (!RoleAllows(role, action)) {
    return absl::PermissionDeniedError(StrCat("principal '", principal.name, "' (role ",
                                           RoleName(role), ") may not ", ActionName(action)));
  }
  const bool unrestricted = role == Role::kAdmin && principal.collections.empty();
  if (collection.empty()) {
    if (!unrestricted && (action == Action::kAdmin || action == Action::kStats)) {
      return absl::PermissionDeniedError(
          StrCat("principal '", principal.name, "' administers collections ",
                 absl::StrJoin(principal.collections, ", "), " only; to ", ActionName(action),
                 " for the whole server takes an admin without collections"));
    }
    if (!unrestricted && action != Action::kCheck && action != Action::kReadDocument &&
        action != Action::kReadMatches) {
      return absl::PermissionDeniedError(StrCat("principal '", principal.name,
                                                "' must name a collection to ", ActionName(action)));
    }
  } else if (!unrestricted && !Contains(principal.collections, collection)) {
    return absl::PermissionDeniedError(StrCat("principal '", principal.name,
                                              "' has no access to collection '", collection, "'"));
  }
  return absl::OkStatus();
}

std::optional<std::vector<std::string>> AccessControl::UsableCollections(
    const Principal& principal) const {
  absl::MutexLock lock(&mu_);
  auto it = principals_.find(principal.name);
  if (it == principals_.end()) return std::vector<std::string>{};
  const PrincipalRecord& r = it->second;
  if (static_cast<Role>(r.role) == Role::kAdmin && r.collections.empty()) return std::nullopt;
  return r.collections;
}

CheckFloors AccessControl::CheckFloorsFor(const Principal& principal) const {
  absl::MutexLock lock(&mu_);
  auto it = principals_.find(principal.name);
  // A principal deleted meanwhile gets the floors too (its calls are refused anyway).
  if (it != principals_.end() && static_cast<Role>(it->second.role) != Role::kChecker) {
    return {};
  }
  return options_.checker_floors;
}

CollectionPolicy AccessControl::PolicyFor(std::string_view collection) const {
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(collection);
  if (it == collections_.end()) return CollectionPolicy{};
  return CollectionPolicy{it->second.show_titles_to_checkers, it->second.keep_audit,
                          it->second.retention_seconds};
}

std::vector<std::string> AccessControl::TemplateCollections() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, record] : collections_) {
    if (record.template_source) out.push_back(name);
  }
  return out;
}

absl::Status AccessControl::EnsureCollection(std::string_view collection) {
  if (collection.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return EnsureCollectionsLocked({std::string(collection)});
}

absl::Status AccessControl::RequireCollection(std::string_view collection) const {
  if (collection.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (collections_.count(collection) != 0) return absl::OkStatus();
  return absl::NotFoundError(StrCat("collection '", collection, "' does not exist"));
}

// ---------------------------------------------------------------- administration

absl::Status AccessControl::EnsureCollectionsLocked(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (collections_.count(name) != 0) continue;
    CollectionRecord c;
    c.name = name;
    c.created_unix_micros = options_.now_micros();
    absl::Status s = store_->PutCollection(c);
    if (!s.ok()) return s;
    collections_[name] = c;
  }
  return absl::OkStatus();
}

absl::StatusOr<IssuedKey> AccessControl::IssueKeyLocked(const std::string& principal) {
  auto id = RandomBytes(kKeyIdBytes);
  if (!id.ok()) return id.status();
  auto secret_bytes = RandomBytes(kSecretBytes);
  if (!secret_bytes.ok()) return secret_bytes.status();
  auto salt = RandomBytes(kSaltBytes);
  if (!salt.ok()) return salt.status();
  ApiKeyRecord key;
  key.key_id = Hex(reinterpret_cast<const unsigned char*>(id->data()), id->size());
  if (keys_.count(key.key_id) != 0) {
    return absl::InternalError("API key id collision; try again");
  }
  const std::string secret =
      Hex(reinterpret_cast<const unsigned char*>(secret_bytes->data()), secret_bytes->size());
  key.principal = principal;
  key.salt = *salt;
  key.hash = SaltedHash(key.salt, secret);
  key.created_unix_micros = options_.now_micros();
  absl::Status s = store_->PutKey(key);
  if (!s.ok()) return s;
  keys_[key.key_id] = key;
  return IssuedKey{principal, key.key_id, StrCat(kKeyPrefix, key.key_id, "_", secret)};
}

absl::StatusOr<IssuedKey> AccessControl::CreatePrincipal(const PrincipalRecord& in) {
  absl::Status valid = ValidateAccessName("principal", in.name);
  if (!valid.ok()) return valid;
  if (in.role < static_cast<uint8_t>(Role::kOwner) || in.role > static_cast<uint8_t>(Role::kAdmin)) {
    return absl::InvalidArgumentError(StrCat("principal '", in.name,
                                                   "': role must be owner, checker or admin"));
  }
  for (const std::string& c : in.collections) {
    valid = ValidateAccessName("collection", c);
    if (!valid.ok()) return valid;
  }
  if (static_cast<Role>(in.role) != Role::kAdmin && in.collections.empty()) {
    return absl::InvalidArgumentError(StrCat(
        "principal '", in.name, "': owners and checkers need at least one collection"));
  }
  PrincipalRecord record = in;
  record.created_unix_micros = options_.now_micros();
  absl::MutexLock lock(&mu_);
  if (principals_.count(record.name) != 0) {
    return absl::AlreadyExistsError(StrCat("principal '", record.name, "' already exists"));
  }
  absl::Status s = EnsureCollectionsLocked(record.collections);
  if (!s.ok()) return s;
  s = store_->PutPrincipal(record);
  if (!s.ok()) return s;
  principals_[record.name] = record;
  spdlog::info("created principal '{}' (role {})", record.name,
               RoleName(static_cast<Role>(record.role)));
  return IssueKeyLocked(record.name);
}

absl::StatusOr<IssuedKey> AccessControl::CreateKey(std::string_view principal) {
  absl::MutexLock lock(&mu_);
  auto it = principals_.find(principal);
  if (it == principals_.end()) {
    return absl::NotFoundError(StrCat("no principal named '", principal, "'"));
  }
  return IssueKeyLocked(it->first);
}

absl::Status AccessControl::RevokeKey(std::string_view key_id) {
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) {
    return absl::NotFoundError(StrCat("no API key with id '", key_id, "'"));
  }
  if (it->second.revoked_unix_micros != 0) return absl::OkStatus();
  ApiKeyRecord revoked = it->second;
  revoked.revoked_unix_micros = options_.now_micros();
  // Durable first, then visible: once this returns the key fails everywhere.
  absl::Status s = store_->PutKey(revoked);
  if (!s.ok()) return s;
  it->second = revoked;
  spdlog::info("revoked API key id {} of principal '{}'", revoked.key_id, revoked.principal);
  return absl::OkStatus();
}

absl::Status AccessControl::SetCollections(std::string_view principal,
                                           std::vector<std::string> collections) {
  for (const std::string& c : collections) {
    absl::Status valid = ValidateAccessName("collection", c);
    if (!valid.ok()) return valid;
  }
  absl::MutexLock lock(&mu_);
  auto it = principals_.find(principal);
  if (it == principals_.end()) {
    return absl::NotFoundError(StrCat("no principal named '", principal, "'"));
  }
  absl::Status s = EnsureCollectionsLocked(collections);
  if (!s.ok()) return s;
  PrincipalRecord updated = it->second;
  updated.collections = std::move(collections);
  s = store_->PutPrincipal(updated);
  if (!s.ok()) return s;
  it->second = std::move(updated);
  return absl::OkStatus();
}

std::optional<PrincipalRecord> AccessControl::FindPrincipal(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = principals_.find(name);
  if (it == principals_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> AccessControl::KeyOwner(std::string_view key_id) const {
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) return std::nullopt;
  return it->second.principal;
}

std::vector<PrincipalRecord> AccessControl::ListPrincipals() const {
  absl::MutexLock lock(&mu_);
  std::vector<PrincipalRecord> out;
  for (const auto& [name, r] : principals_) out.push_back(r);
  return out;
}

std::vector<ApiKeyRecord> AccessControl::ListKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<ApiKeyRecord> out;
  for (const auto& [id, r] : keys_) out.push_back(r);
  return out;
}

absl::Status AccessControl::PutCollection(const CollectionRecord& in) {
  CollectionRecord record = in;
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(record.name);
  record.created_unix_micros =
      it != collections_.end() ? it->second.created_unix_micros : options_.now_micros();
  absl::Status s = store_->PutCollection(record);
  if (!s.ok()) return s;
  collections_[record.name] = record;
  return absl::OkStatus();
}

std::vector<CollectionRecord> AccessControl::ListCollections() const {
  absl::MutexLock lock(&mu_);
  std::vector<CollectionRecord> out;
  for (const auto& [name, r] : collections_) out.push_back(r);
  return out;
}

absl::StatusOr<std::vector<AuditRecord>> AccessControl::QueryAudit(uint64_t doc_id,
                                                                   int64_t since_unix_micros,
                                                                   size_t limit) const {
  return store_->QueryAudit(doc_id, since_unix_micros, limit);
}

absl::StatusOr<UsageRecord> AccessControl::Usage(std::string_view principal) const {
  return store_->GetUsage(principal);
}

absl::StatusOr<std::optional<IssuedKey>> AccessControl::BootstrapAdmin() {
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, r] : principals_) {
      if (static_cast<Role>(r.role) == Role::kAdmin) return std::optional<IssuedKey>();
    }
  }
  PrincipalRecord admin;
  admin.name = "admin";
  admin.role = static_cast<uint8_t>(Role::kAdmin);
  auto issued = CreatePrincipal(admin);
  if (!issued.ok()) return issued.status();
  return std::optional<IssuedKey>(*std::move(issued));
}

}  // namespace cops

namespace cops {

absl::StatusOr<std::unique_ptr<AccessControl>> OpenAccessControl(const std::string& data_dir,
                                                                 bool bootstrap_admin,
                                                                 AccessControlOptions options) {
  DataDir dir(data_dir);
  absl::Status created = dir.Create();
  if (!created.ok()) return absl::FailedPreconditionError(created.message());
  PrincipalStoreOptions store_options;
  store_options.min_free_disk_mb = options.min_free_disk_mb;
  auto store = PrincipalStore::Open(dir.AccessStorePath(), std::move(store_options));
  if (!store.ok()) return store.status();
  auto access = AccessControl::Open(*std::move(store), std::move(options));
  if (!access.ok() || !bootstrap_admin) return access;
  auto issued = (*access)->BootstrapAdmin();
  if (!issued.ok()) return issued.status();
  if (!issued->has_value()) return access;
  const std::string path = dir.AdminKeyPath();
  // Exclusive: never overwrite a key file someone else put there; 0600: only copsd's user
  // reads it.
  absl::Status written =
      CreateFileDurably(dir.fs(), path, (*issued)->api_key + "\n", /*mode=*/0600);
  if (!written.ok()) {
    (void)(*access)->RevokeKey((*issued)->key_id);
    return absl::FailedPreconditionError(
        "cannot create " + path + " for the bootstrap admin key: " +
        std::string(written.message()) + " (the new key was revoked)");
  }
  spdlog::warn(
      "authentication is on and there was no admin: created principal 'admin' with key id {}; "
      "its API key is in {} (mode 0600). Use it to create principals, then delete the file.",
      (*issued)->key_id, path);
  return access;
}

}  // namespace cops
