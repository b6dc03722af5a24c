#ifndef COPS_ACCESS_TRANSPORT_SECURITY_H_
#define COPS_ACCESS_TRANSPORT_SECURITY_H_

// How copsd protects its listener: TLS from PEM files, optional mutual TLS (client
// certificates verified against a CA, their names then identify principals), the rule that a
// non-loopback listener needs TLS unless explicitly allowed, and whether authentication is
// on. See docs/security.md.
//
// Thread-safety: free functions without shared state.

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc {
class ServerCredentials;
}

namespace cops {

struct TlsFiles {
  std::string cert_path;       // server certificate chain, PEM ("" = no TLS)
  std::string key_path;        // its private key, PEM
  // CA bundle (PEM) for client certificates. When set, the handshake requires and verifies
  // a client certificate (mutual TLS); its SAN entries and subject CN name the principal.
  std::string client_ca_path;

  bool enabled() const { return !cert_path.empty(); }
};

// The PEM text in `path` (`what` names it in errors): NOT_FOUND when it cannot be read,
// INVALID_ARGUMENT when it holds no PEM block.
absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what);

// Insecure credentials when `files` is empty, TLS otherwise. INVALID_ARGUMENT when only one
// of cert/key is given or a client CA comes without them; NOT_FOUND when a file is missing;
// INVALID_ARGUMENT when a file holds no PEM block.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files);

// True when the "host:port" listen address can only be reached from this machine:
// 127.0.0.0/8, [::1], localhost. Wildcards (0.0.0.0, [::], "") are not loopback.
bool IsLoopbackAddress(std::string_view address);

// FAILED_PRECONDITION, with the flags that fix it, for a non-loopback listener without TLS
// or without authentication, unless `allow_insecure_remote` (then OK, and the caller logs a
// warning).
absl::Status CheckListenerSecurity(std::string_view address, bool tls, bool auth,
                                   bool allow_insecure_remote);

enum class AuthMode {
  kAuto,  // on unless the listener is loopback without mutual TLS (the default)
  kOn,
  kOff,   // the open authorizer: everyone is a local admin; only sensible on loopback
};

// Parses "auto", "on" or "off"; INVALID_ARGUMENT otherwise.
absl::StatusOr<AuthMode> ParseAuthMode(std::string_view text);

// Whether calls are authenticated: kOn always; kAuto off loopback, and with mutual TLS
// (`files.client_ca_path` set) on loopback too, since a client certificate claims a principal
// that only authentication checks. kOff with mutual TLS is FAILED_PRECONDITION: every
// certificate, naming a principal or not, would be served as the local admin.
absl::StatusOr<bool> AuthRequired(AuthMode mode, std::string_view listen_address,
                                  const TlsFiles& files);

}  // namespace cops

#endif  // COPS_ACCESS_TRANSPORT_SECURITY_H_
