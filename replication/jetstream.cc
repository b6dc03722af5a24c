#include "replication/jetstream.h"

#include <nats/nats.h>

#include <sstream>
#include <string>
#include <vector>

namespace cops {

absl::Status NatsError(int nats_status, const std::string& what) {
  const auto s = static_cast<natsStatus>(nats_status);
  std::string message = what + ": " + natsStatus_GetText(s);
  switch (s) {
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_TIMEOUT:
    case NATS_IO_ERROR:
    case NATS_NO_RESPONDERS:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

JetStream::JetStream(RegistrationStreamOptions options, natsConnection* connection,
                     jsCtx* context)
    : options_(std::move(options)), connection_(connection), context_(context) {}

JetStream::~JetStream() {
  jsCtx_Destroy(context_);
  natsConnection_Destroy(connection_);
}

absl::StatusOr<std::unique_ptr<JetStream>> JetStream::Connect(
    const RegistrationStreamOptions& options) {
  // natsOptions_SetURL takes one URL; a comma-separated list goes in as the server list.
  std::vector<std::string> urls;
  std::stringstream list(options.url);
  for (std::string url; std::getline(list, url, ',');) {
    if (!url.empty()) urls.push_back(url);
  }
  std::vector<const char*> servers;
  servers.reserve(urls.size());
  for (const std::string& url : urls) servers.push_back(url.c_str());
  natsOptions* nats_options = nullptr;
  natsStatus s = natsOptions_Create(&nats_options);
  if (s == NATS_OK) {
    s = natsOptions_SetServers(nats_options, servers.data(), static_cast<int>(servers.size()));
  }
  const NatsSecurity& security = options.security;
  if (security.user.empty() != security.password.empty() ||
      security.nkey.empty() != security.nkey_seed_file.empty() ||
      security.tls_cert.empty() != security.tls_key.empty()) {
    natsOptions_Destroy(nats_options);
    return absl::InvalidArgumentError(
        "NATS user and password, NKey and its seed file, TLS certificate and key go together");
  }
  if (s == NATS_OK && !security.user.empty()) {
    s = natsOptions_SetUserInfo(nats_options, security.user.c_str(), security.password.c_str());
  }
  if (s == NATS_OK && !security.creds_file.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(nats_options, security.creds_file.c_str(),
                                                nullptr);
  }
  if (s == NATS_OK && !security.nkey.empty()) {
    s = natsOptions_SetNKeyFromSeed(nats_options, security.nkey.c_str(),
                                    security.nkey_seed_file.c_str());
  }
  if (s == NATS_OK && !security.tls_ca.empty()) {
    s = natsOptions_SetSecure(nats_options, true);
    if (s == NATS_OK) s = natsOptions_LoadCATrustedCertificates(nats_options, security.tls_ca.c_str());
  }
  if (s == NATS_OK && !security.tls_cert.empty()) {
    s = natsOptions_LoadCertificatesChain(nats_options, security.tls_cert.c_str(),
                                          security.tls_key.c_str());
  }
  // Reconnect for ever: a follower outlives restarts of the NATS servers.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(nats_options, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(nats_options, 100);
  natsConnection* connection = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&connection, nats_options);
  natsOptions_Destroy(nats_options);
  if (s != NATS_OK) return NatsError(s, "connecting to NATS at " + options.url);

  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = options.publish_timeout_ms;
  jsCtx* context = nullptr;
  s = natsConnection_JetStream(&context, connection, &js_options);
  if (s != NATS_OK) {
    natsConnection_Destroy(connection);
    return NatsError(s, "opening JetStream at " + options.url);
  }
  std::unique_ptr<JetStream> js(new JetStream(options, connection, context));
  if (!options.create_stream) return js;

  // The stream's subjects: the single-partition subject and one per partition (its
  // children, "<subject>.<p>", replication/partitioning.h).
  const std::string partitions = options.subject + ".*";
  const char* subjects[] = {options.subject.c_str(), partitions.c_str()};
  jsStreamInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  s = js_GetStreamInfo(&info, context, options.stream.c_str(), nullptr, &err);
  if (s == NATS_OK) {
    if (info->Config->Replicas < options.replicas) {
      const int kept = static_cast<int>(info->Config->Replicas);
      jsStreamInfo_Destroy(info);
      return absl::FailedPreconditionError(
          "stream " + options.stream + " keeps " + std::to_string(kept) +
          (kept == 1 ? " copy" : " copies") + " of each event, fewer than the " +
          std::to_string(options.replicas) +
          " wanted: an acknowledged event is lost with one NATS server's store (raise it with "
          "`nats stream edit " + options.stream + " --replicas " +
          std::to_string(options.replicas) + "`, or accept it: copsd --log-replicas " +
          std::to_string(kept) + " --allow-unreplicated-log)");
    }
    // A stream created before partitions existed lacks their subject: add it.
    jsStreamConfig* existing = info->Config;
    bool has_partitions = false;
    for (int i = 0; i < existing->SubjectsLen; ++i) {
      has_partitions = has_partitions || partitions == existing->Subjects[i];
    }
    if (!has_partitions && existing->SubjectsLen == 1 && options.subject == existing->Subjects[0]) {
      const char** own_subjects = existing->Subjects;
      existing->Subjects = subjects;
      existing->SubjectsLen = 2;
      jsStreamInfo* updated = nullptr;
      s = js_UpdateStream(&updated, context, existing, nullptr, &err);
      existing->Subjects = own_subjects;  // the client frees its own array
      existing->SubjectsLen = 1;
      jsStreamInfo_Destroy(info);
      if (s != NATS_OK) return NatsError(s, "adding partition subjects to stream " + options.stream);
      jsStreamInfo_Destroy(updated);
      return js;
    }
    jsStreamInfo_Destroy(info);
    return js;
  }
  if (err != JSStreamNotFoundErr && s != NATS_NOT_FOUND) {
    return NatsError(s, "looking up stream " + options.stream);
  }
  if (!options.create_if_missing) return js;
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = options.stream.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 2;
  config.Storage = js_FileStorage;
  config.Retention = js_LimitsPolicy;
  config.Replicas = options.replicas;
  s = js_AddStream(&info, context, &config, nullptr, &err);
  if (s != NATS_OK && err != JSStreamNameExistErr) {
    return NatsError(s, "creating stream " + options.stream);
  }
  if (s == NATS_OK) jsStreamInfo_Destroy(info);
  return js;
}

}  // namespace cops
