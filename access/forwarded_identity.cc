#include "access/forwarded_identity.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "access/access_control.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

// SHA-256 of the DER form of the PEM certificate, lowercase hex; "" when it does not parse.
std::string Fingerprint(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (bio == nullptr) return "";
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (cert == nullptr) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (X509_digest(cert.get(), EVP_sha256(), digest, &length) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

bool IsForwardingHeader(std::string_view name) {
  return name == kForwardedPrincipalHeader || name == kForwardedRoleHeader ||
         name == kForwardedCollectionHeader;
}

}  // namespace

absl::StatusOr<TrustedNodes> ParseTrustedNodes(const std::vector<std::string>& entries) {
  TrustedNodes nodes;
  for (const std::string& entry : entries) {
    if (entry.empty()) return absl::InvalidArgumentError("--trusted-nodes: an empty entry");
    if (entry.rfind("sha256:", 0) != 0) {
      nodes.names.push_back(entry);
      continue;
    }
    std::string hex;
    bool digits = true;
    for (char c : entry.substr(7)) {
      if (c == ':') continue;
      digits = digits && std::isxdigit(static_cast<unsigned char>(c)) != 0;
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (hex.size() != 64 || !digits) {
      return absl::InvalidArgumentError(
          "--trusted-nodes: '" + entry +
          "' is not sha256:<64 hex digits> (openssl x509 -noout -fingerprint -sha256)");
    }
    nodes.fingerprints.push_back(hex);
  }
  return nodes;
}

std::vector<std::pair<std::string, std::string>> ForwardedIdentityMetadata(
    const Principal& principal) {
  std::vector<std::pair<std::string, std::string>> out = {
      {kForwardedPrincipalHeader, principal.name},
      {kForwardedRoleHeader, std::string(RoleName(principal.role))}};
  for (const std::string& c : principal.collections) out.emplace_back(kForwardedCollectionHeader, c);
  return out;
}

ForwardedIdentityAuthorizer::ForwardedIdentityAuthorizer(Authorizer* base, TrustedNodes nodes,
                                                         CheckFloors checker_floors)
    : base_(base), nodes_(std::move(nodes)), checker_floors_(checker_floors) {}

std::optional<std::string> ForwardedIdentityAuthorizer::TrustedNode(
    const grpc::ServerContextBase& context) const {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  // Only a certificate the handshake verified against the listener's client CA counts.
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return std::nullopt;
  for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
      const std::string name(v.data(), v.size());
      if (std::find(nodes_.names.begin(), nodes_.names.end(), name) != nodes_.names.end()) {
        return name;
      }
    }
  }
  if (nodes_.fingerprints.empty()) return std::nullopt;
  for (const grpc::string_ref& pem : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
    const std::string fingerprint = Fingerprint(std::string_view(pem.data(), pem.size()));
    if (!fingerprint.empty() && std::find(nodes_.fingerprints.begin(), nodes_.fingerprints.end(),
                                          fingerprint) != nodes_.fingerprints.end()) {
      return "sha256:" + fingerprint;
    }
  }
  return std::nullopt;
}

absl::StatusOr<Principal> ForwardedIdentityAuthorizer::Authenticate(
    const grpc::ServerContextBase& context) {
  bool forwarded = false;
  std::optional<std::string> name;
  std::optional<std::string> role;
  std::vector<std::string> collections;
  for (const auto& [key, value] : context.client_metadata()) {
    const std::string_view k(key.data(), key.size());
    if (!IsForwardingHeader(k)) continue;
    forwarded = true;
    std::string v(value.data(), value.size());
    if (k == kForwardedPrincipalHeader) {
      name = std::move(v);
    } else if (k == kForwardedRoleHeader) {
      role = std::move(v);
    } else {
      collections.push_back(std::move(v));
    }
  }
  if (!forwarded) return base_->Authenticate(context);
  const std::optional<std::string> node = TrustedNode(context);
  if (!node) {
    spdlog::warn("forwarded identity '{}' refused from {}: not a trusted node's certificate",
                 name.value_or(""), context.peer());
    return absl::UnauthenticatedError(
        std::string(kForwardedPrincipalHeader) +
        " is accepted only from a cluster node (a client certificate on this server's "
        "--trusted-nodes); this caller is not one");
  }
  if (!name || name->empty() || !role) {
    return absl::UnauthenticatedError(
        "node " + *node + " forwarded an identity without a principal name or role");
  }
  absl::StatusOr<Role> parsed = ParseRole(*role);
  if (!parsed.ok()) {
    return absl::UnauthenticatedError("node " + *node + " forwarded an identity with " +
                                      std::string(parsed.status().message()));
  }
  Principal principal;
  principal.name = *std::move(name);
  principal.role = *parsed;
  principal.collections = std::move(collections);
  principal.limits.unlimited = true;  // charged by the node that forwarded it
  principal.forwarded_by = *node;
  return principal;
}

absl::Status ForwardedIdentityAuthorizer::Authorize(const Principal& principal, Action action,
                                                    std::string_view collection) const {
  if (principal.forwarded_by.empty()) return base_->Authorize(principal, action, collection);
  return AuthorizeGrants(principal, action, collection);
}

std::optional<std::vector<std::string>> ForwardedIdentityAuthorizer::UsableCollections(
    const Principal& principal) const {
  if (principal.forwarded_by.empty()) return base_->UsableCollections(principal);
  if (principal.role == Role::kAdmin && principal.collections.empty()) return std::nullopt;
  return principal.collections;
}

CheckFloors ForwardedIdentityAuthorizer::CheckFloorsFor(const Principal& principal) const {
  if (principal.forwarded_by.empty()) return base_->CheckFloorsFor(principal);
  return principal.role == Role::kChecker ? checker_floors_ : CheckFloors{};
}

CollectionPolicy ForwardedIdentityAuthorizer::PolicyFor(std::string_view collection) const {
  return base_->PolicyFor(collection);
}

std::vector<std::string> ForwardedIdentityAuthorizer::TemplateCollections() const {
  return base_->TemplateCollections();
}

absl::Status ForwardedIdentityAuthorizer::EnsureCollection(std::string_view collection) {
  return base_->EnsureCollection(collection);
}

absl::Status ForwardedIdentityAuthorizer::RequireCollection(std::string_view collection) const {
  return base_->RequireCollection(collection);
}

}  // namespace cops
