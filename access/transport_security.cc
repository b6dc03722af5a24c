#include "access/transport_security.h"

#include <fstream>
#include <sstream>

#include "grpcpp/security/server_credentials.h"

namespace cops {

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(std::string(what) + " file " + path + " cannot be read");
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string pem = buf.str();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(std::string(what) + " file " + path +
                                      " holds no PEM block");
  }
  return pem;
}

namespace {

std::string_view HostOf(std::string_view address) {
  if (!address.empty() && address.front() == '[') {
    size_t close = address.find(']');
    return close == std::string_view::npos ? address : address.substr(1, close - 1);
  }
  // A bare IPv6 address has several colons and no port.
  if (address.find(':') != address.rfind(':')) return address;
  size_t colon = address.rfind(':');
  return colon == std::string_view::npos ? address : address.substr(0, colon);
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (files.cert_path.empty() && files.key_path.empty()) {
    if (!files.client_ca_path.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS first)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.cert_path.empty() || files.key_path.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");
  }
  auto cert = ReadPem(files.cert_path, "TLS certificate");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(files.key_path, "TLS private key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  if (!files.client_ca_path.empty()) {
    auto ca = ReadPem(files.client_ca_path, "client CA");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    // Only verified certificates may name principals (AccessControl trusts the names).
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else {
    options.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  }
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

bool IsLoopbackAddress(std::string_view address) {
  std::string_view host = HostOf(address);
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8
  if (host.starts_with("127.")) {
    int dots = 0;
    for (char c : host) {
      if (c == '.') {
        ++dots;
      } else if (c < '0' || c > '9') {
        return false;
      }
    }
    return dots == 3;
  }
  return false;
}

absl::Status CheckListenerSecurity(std::string_view address, bool tls, bool auth,
                                   bool allow_insecure_remote) {
  if (allow_insecure_remote || IsLoopbackAddress(address)) return absl::OkStatus();
  if (!auth) {
    return absl::FailedPreconditionError(
        "refusing to listen on " + std::string(address) +
        " with --auth=off: anyone on the network could read and delete the corpus. Use "
        "--auth=on (the default off loopback), or pass --allow-insecure-remote to accept the "
        "risk");
  }
  if (tls) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "refusing to listen on " + std::string(address) +
      " without TLS: anyone on the network could read documents and API keys in transit. "
      "Pass --tls-cert and --tls-key (and --tls-client-ca for mutual TLS), listen on "
      "127.0.0.1 behind a TLS proxy, or pass --allow-insecure-remote to accept the risk");
}

absl::StatusOr<AuthMode> ParseAuthMode(std::string_view text) {
  if (text == "auto") return AuthMode::kAuto;
  if (text == "on") return AuthMode::kOn;
  if (text == "off") return AuthMode::kOff;
  return absl::InvalidArgumentError("--auth must be auto, on or off, got '" +
                                    std::string(text) + "'");
}

absl::StatusOr<bool> AuthRequired(AuthMode mode, std::string_view listen_address,
                                  const TlsFiles& files) {
  const bool mutual_tls = !files.client_ca_path.empty();
  switch (mode) {
    case AuthMode::kOn: return true;
    case AuthMode::kOff:
      if (mutual_tls) {
        return absl::FailedPreconditionError(
            "--auth=off with --tls-client-ca: client certificates name principals, which "
            "--auth=off never checks (any certificate of the CA would act as the local "
            "admin). Use --auth=on (or auto), or drop --tls-client-ca");
      }
      return false;
    case AuthMode::kAuto: return mutual_tls || !IsLoopbackAddress(listen_address);
  }
  return true;
}

}  // namespace cops
