#ifndef COPS_HTTP_API_H_
#define COPS_HTTP_API_H_

// The HTTP/JSON API (docs/api.md): `copsd --http-listen HOST:PORT`. A transport over the
// same CopyDetection service as gRPC: each request becomes one call of that service over a
// channel into it (copsd's in-process channel), carrying the request's
// `Authorization: Bearer <API key>` as the call's metadata, so authentication, roles,
// collections, rate limits, quotas, admission, audit and report privacy are the service's
// own. The service's status becomes the HTTP status (HttpStatusOf) and one JSON body
// {"code": "NOT_FOUND", "message": "..."}.
//
// Routes: POST /v1/documents, GET /v1/documents, GET and DELETE /v1/documents/{id},
// POST /v1/checks, POST /v1/jobs, GET /v1/jobs/{id}, GET /v1/jobs/{id}/deliveries,
// POST /v1/jobs/{id}/deliveries:resend, PUT, GET and DELETE /v1/webhook,
// GET /v1/openapi.json, GET /healthz; for the web page (http/page.h): GET / and its files,
// GET /v1/session, GET /v1/matches, GET /v1/documents/{id}/content. A job may name a
// callback (http/webhooks.h).
// Refused before the body is read: a body over max_body_bytes (413), an unsupported content
// type (415), a POST without Content-Length (411), a /v1 request without an API key when
// authentication is on (401).
//
// Thread-safety: Start() returns a serving object; Stop() may be called from any thread,
// once.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "http/jobs.h"
#include "http/webhooks.h"

namespace grpc {
class Channel;
}

namespace cops {

// The header of a 204 to DELETE /v1/documents/{id} that names the unregistration's
// registration-log event (where the service keeps a log): a check's min_log_sequence.
inline constexpr char kLogSequenceHeader[] = "Cops-Log-Sequence";

struct HttpApiOptions {
  std::string listen = "127.0.0.1:7412";  // HOST:PORT; port 0 picks a free port
  // Authentication is on in the service: a /v1 request without a key gets 401 at once
  // (with it off, every caller is the service's local admin, as over gRPC).
  bool auth_required = true;
  // Largest request body, bytes (a document plus its multipart or JSON framing); larger
  // bodies get 413 before they are read.
  uint64_t max_body_bytes = (32ull << 20) + (1ull << 20);
  // Connections served at once (one thread each) and accepted connections waiting for one;
  // a connection beyond both gets 503 and is closed.
  uint32_t threads = 8;
  uint32_t max_queued_connections = 64;
  // A request's headers and body must arrive within request_timeout of its first byte (slow
  // clients are cut off); a connection waits idle_timeout for its next request.
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds idle_timeout{5000};
  // Deadline of the service call behind a request (a job's calls included).
  std::chrono::milliseconds call_timeout{60000};
  JobQueueOptions jobs;
  WebhookOptions webhooks;
  // HTTPS: PEM files as copsd's --tls-cert, --tls-key and --tls-client-ca (http/transport.h).
  // With a client CA every connection must present a certificate that CA signed; a request
  // without an API key is then the principal its certificate names (as over gRPC).
  std::string tls_cert;  // "" = plain HTTP
  std::string tls_key;
  std::string tls_client_ca;
  // Authenticates a caller where the API must know it before it accepts work (POST /v1/jobs,
  // /v1/webhook) from its key or, without one, its verified client certificate's names:
  // the principal's name, or the service's UNAUTHENTICATED (401) or
  // RESOURCE_EXHAUSTED (429). `peer` is the client's address as gRPC writes one
  // ("ipv4:ADDR:PORT"), for the failure limit. It must be the access control of the service
  // behind `channel` (copsd wires it); unset, every caller is one principal "" (as with
  // authentication off) and a wrong key shows when the job runs.
  std::function<absl::StatusOr<std::string>(const std::string& api_key,
                                            const std::vector<std::string>& certificate_names,
                                            const std::string& peer)>
      authenticate;
  // How long the reply of a request with an Idempotency-Key is replayed to its retries, and
  // the bytes such replies are kept in at most (beyond, the oldest are forgotten first).
  std::chrono::seconds idempotency_keep{86400};
  uint64_t idempotency_max_bytes = IdempotentReplies::kDefaultMaxBytes;
  // The service's default for checks that do not say (copsd --heavy-revisions), told to the
  // web page by GET /v1/session so that its box starts as the server would decide.
  bool heavy_revisions = true;
};

class HttpApi {
 public:
  // Listens on options.listen and serves until Stop(), calling the service over `channel`
  // (which must reach a CopyDetection service). UNAVAILABLE when it cannot listen,
  // INVALID_ARGUMENT for a malformed address.
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(const HttpApiOptions& options,
                                                        std::shared_ptr<grpc::Channel> channel);
  ~HttpApi();  // Stop()s
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  int port() const;
  // Stops accepting connections, lets those being served finish, and stops the jobs.
  void Stop();

 private:
  struct Impl;
  explicit HttpApi(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The HTTP status of a canonical status code (as grpc-gateway maps them): NOT_FOUND 404,
// INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE 400, UNAUTHENTICATED 401,
// PERMISSION_DENIED 403, RESOURCE_EXHAUSTED 429, ALREADY_EXISTS / ABORTED 409,
// DEADLINE_EXCEEDED 504, UNAVAILABLE 503, UNIMPLEMENTED 501, CANCELLED 499, others 500.
int HttpStatusOf(absl::StatusCode code);

// {"code": "<CANONICAL_NAME>", "message": "<message>"}.
std::string ErrorJson(const absl::Status& status);

}  // namespace cops

#endif  // COPS_HTTP_API_H_
