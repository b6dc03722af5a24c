#include "client/client_security.h"

#include <fstream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "core/status_macros.h"
#include "grpcpp/grpcpp.h"

namespace cops {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(std::string(what) + " " + path + " cannot be read");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

void AddClientSecurityFlags(CLI::App* app, ClientSecurityOptions* options) {
  app->add_option("--api-key", options->api_key, "API key of the principal making the calls")
      ->envname("COPS_API_KEY");
  app->add_flag("--tls", options->tls, "Use TLS, trusting the system's CA roots")
      ->envname("COPS_TLS");
  app->add_option("--tls-ca", options->tls_ca, "Use TLS, trusting this CA bundle (PEM)")
      ->envname("COPS_TLS_CA");
  app->add_option("--tls-cert", options->tls_cert, "Client certificate (PEM) for mutual TLS")
      ->envname("COPS_TLS_CERT");
  app->add_option("--tls-key", options->tls_key, "Private key (PEM) of --tls-cert")
      ->envname("COPS_TLS_KEY");
  app->add_option("--tls-server-name", options->tls_server_name,
                  "Name expected in the server certificate (default: the --server host)");
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenSecureChannel(
    const std::string& target, const ClientSecurityOptions& options,
    const grpc::ChannelArguments& args) {
  if (!options.uses_tls()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("mutual TLS needs both --tls-cert and --tls-key");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca.empty()) {
    COPS_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile(options.tls_ca, "CA bundle"));
  }
  if (!options.tls_cert.empty()) {
    COPS_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadFile(options.tls_cert, "client certificate"));
    COPS_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFile(options.tls_key, "client key"));
  }
  grpc::ChannelArguments channel_args = args;
  if (!options.tls_server_name.empty()) {
    channel_args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), channel_args);
}

void AttachApiKey(const ClientSecurityOptions& options, grpc::ClientContext* context) {
  if (!options.api_key.empty()) context->AddMetadata("authorization", "Bearer " + options.api_key);
  if (!options.forwarded_peer.empty()) {
    context->AddMetadata("x-cops-forwarded-peer", options.forwarded_peer);
  }
  for (const std::string& name : options.forwarded_certificate_names) {
    context->AddMetadata("x-cops-forwarded-certificate", name);
  }
}

}  // namespace cops
