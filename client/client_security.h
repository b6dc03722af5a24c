#ifndef COPS_CLIENT_CLIENT_SECURITY_H_
#define COPS_CLIENT_CLIENT_SECURITY_H_

// How the cops CLI proves who it is and checks whom it talks to: an API key sent as
// "authorization: Bearer <key>" on every call, TLS with a chosen CA (or the system roots), and
// a client certificate for mutual TLS. See docs/security.md.
//
// Global flags (each also read from the environment variable in brackets):
//   --api-key KEY      [COPS_API_KEY]   the principal's API key
//   --tls              [COPS_TLS]       use TLS, trusting the system's CA roots
//   --tls-ca FILE      [COPS_TLS_CA]    use TLS, trusting this CA bundle (PEM)
//   --tls-cert FILE    [COPS_TLS_CERT]  client certificate (PEM) for mutual TLS
//   --tls-key FILE     [COPS_TLS_KEY]   its private key (PEM)
//   --tls-server-name NAME              expect this name in the server certificate
//
// Thread-safety: plain functions and a value type.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace CLI {
class App;
}
namespace grpc {
class Channel;
class ChannelArguments;
class ClientContext;
}  // namespace grpc

namespace cops {

struct ClientSecurityOptions {
  std::string api_key;
  bool tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  // The HTTP API's client ("ipv4:ADDR:PORT"), sent as metadata x-cops-forwarded-peer so that
  // copsd counts failed authentications per HTTP client; copsd believes it only on its
  // in-process channel (access/access_control.cc). "" = not sent.
  std::string forwarded_peer;
  // The names of the client certificate the HTTP API's TLS handshake verified (mutual TLS),
  // sent as metadata x-cops-forwarded-certificate (one entry each), believed only on the
  // in-process channel as forwarded_peer. Empty = not sent.
  std::vector<std::string> forwarded_certificate_names;

  bool uses_tls() const { return tls || !tls_ca.empty() || !tls_cert.empty(); }
};

// Registers the flags above on `app`, storing into `options` (which must outlive parsing).
void AddClientSecurityFlags(CLI::App* app, ClientSecurityOptions* options);

// A channel to `target` ("host:port") with `args` (e.g. message size limits), plaintext or TLS
// as `options` say. INVALID_ARGUMENT when only one of --tls-cert/--tls-key is given; NOT_FOUND
// when a file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenSecureChannel(
    const std::string& target, const ClientSecurityOptions& options,
    const grpc::ChannelArguments& args);

// Adds the API key (if any) to the call's metadata.
void AttachApiKey(const ClientSecurityOptions& options, grpc::ClientContext* context);

}  // namespace cops

#endif  // COPS_CLIENT_CLIENT_SECURITY_H_
