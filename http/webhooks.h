#ifndef COPS_HTTP_WEBHOOKS_H_
#define COPS_HTTP_WEBHOOKS_H_

// Signed webhook deliveries of the HTTP API's jobs (docs/api.md, "Webhooks").
//
// A principal registers a signing secret (and optionally a default URL); when one of its jobs
// that names a callback ends, the job's JSON is POSTed there with
//   X-COPS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
// and retried with exponential backoff (first_backoff, then twice as long each time) until a
// 2xx answer or max_attempts attempts. Each attempt is recorded (time, HTTP status or error,
// next attempt); a delivery can be sent again (Resend) as a new delivery.
//
// Only allowed hosts are called (no SSRF): the URL's host must be on the allow-list
// (`copsd --webhook-allow HOST[:PORT]`, "*" = any host), and every address its name resolves
// to must be a public one, unless an allow-list entry names that address literally
// (e.g. 127.0.0.1:8080 for a receiver on the same machine). The name is resolved and checked
// again for each attempt, and the request goes to the address that was checked (a second
// resolution cannot swap it); redirects are not followed, nor proxies of the environment.
// An attempt (libcurl) lasts attempt_timeout at most and reads at most 64 KiB of the answer's
// headers (beyond: no answer) and 64 KiB of its body (then stops reading: the status counts).
//
// With WebhookOptions::store set (copsd sets it), registrations (URL and secret) and each
// job's deliveries (state, attempts, next attempt, body) are kept in the access store, the
// deliveries rewritten (synced) at each change: after a restart the listing keeps its
// attempts and a pending delivery resumes on the schedule its backoff set (one still in
// flight at a crash is attempted at once). Without a store all of it is memory only.
//
// Thread-safety: safe for concurrent use; `workers` threads make the attempts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace cops {

class PrincipalStore;

struct WebhookOptions {
  // HOST or HOST:PORT entries ("[v6]:PORT" for IPv6), "*" for any host with public
  // addresses; empty = no callbacks at all.
  std::vector<std::string> allow;
  uint32_t max_attempts = 6;                     // per delivery, the first included
  std::chrono::milliseconds first_backoff{1000};  // wait before the second attempt; doubles
  std::chrono::milliseconds attempt_timeout{10000};  // a whole attempt: connect, send, answer
  uint32_t workers = 2;                          // attempts made at once
  std::chrono::seconds keep{3600};               // a job's deliveries are listed this long
  size_t max_jobs = 10000;                       // jobs with deliveries kept at most
  uint64_t max_bytes = uint64_t{256} << 20;      // their bodies at most (pending ones stay)
  // Where registrations are kept across restarts (not owned; nullptr = memory only).
  PrincipalStore* store = nullptr;
};

// The "X-COPS-Signature" value of `body` sent at `unix_seconds`.
std::string WebhookSignature(const std::string& secret, int64_t unix_seconds,
                             const std::string& body);

// Why `address` (numeric IPv4 or IPv6) must not be called unless allowed explicitly:
// "loopback", "private", "link-local", ...; "" for a public address.
std::string SpecialAddressKind(const std::string& address);

// A callback URL that passed the checks, and the address to call.
struct CallbackTarget {
  std::string scheme;  // "http" or "https"
  std::string host;    // as in the URL (no brackets)
  int port = 0;
  std::string path;    // with the query; "/" at least
  std::string address;  // the checked address the request goes to
};

struct WebhookAttempt {
  int64_t unix_micros = 0;
  int http_status = 0;  // 0 when no answer came
  std::string error;    // "" after a 2xx answer
};

struct WebhookDelivery {
  uint32_t number = 0;  // 1 = the first delivery of the job, then each resend
  std::string url;
  std::string state;    // "pending", "delivered", "failed"
  std::vector<WebhookAttempt> attempts;
  int64_t next_attempt_unix_micros = 0;  // 0 unless pending
};

class Webhooks {
 public:
  explicit Webhooks(WebhookOptions options);
  ~Webhooks();  // Shutdown()
  Webhooks(const Webhooks&) = delete;
  Webhooks& operator=(const Webhooks&) = delete;

  // Reads the registrations and deliveries of options.store (nothing without one) and
  // schedules the pending deliveries; call once, before use. The store's error when it
  // cannot be read (a delivery record that cannot be decoded is logged and skipped).
  absl::Status Load();

  // INVALID_ARGUMENT naming why when the allow-list has a malformed entry.
  static absl::Status CheckAllowList(const std::vector<std::string>& allow);

  // The target of `url` if it may be called now: INVALID_ARGUMENT naming why not (not
  // http(s), malformed, host not allowed, a resolved address loopback/private/...),
  // UNAVAILABLE when the name does not resolve.
  absl::StatusOr<CallbackTarget> Resolve(const std::string& url) const;

  // A new signing secret for `principal` (the only time it is shown), replacing any earlier
  // one, and its default callback URL ("" = none: jobs name theirs). INVALID_ARGUMENT as
  // Resolve() for a URL that may not be called; the store's error when it cannot be kept
  // (nothing changed then).
  absl::StatusOr<std::string> Register(const std::string& principal, const std::string& url);
  // The default URL of `principal`; std::nullopt without a registration.
  std::optional<std::string> RegisteredUrl(const std::string& principal) const;
  // NOT_FOUND without a registration; the store's error when it cannot be deleted there.
  absl::Status Unregister(const std::string& principal);

  // Starts delivering `body` (a job's JSON) for job `job_id` of `owner` (the job's owner
  // tag, http/jobs.h) to `url`, signed with the current secret of `principal` at each
  // attempt.
  void Deliver(const std::string& job_id, const std::string& owner, const std::string& principal,
               const std::string& url, const std::string& body);
  // The job's deliveries, first first; NOT_FOUND when it has none (yet), or is another
  // owner's.
  absl::StatusOr<std::vector<WebhookDelivery>> Deliveries(const std::string& job_id,
                                                          const std::string& owner) const;
  // A new delivery of the job's last body to its last URL; NOT_FOUND as Deliveries.
  absl::StatusOr<WebhookDelivery> Resend(const std::string& job_id, const std::string& owner);

  // Stops the workers (an attempt in flight ends first). Pending deliveries stay pending:
  // in the store, the next Load resumes them.
  void Shutdown();

 private:
  struct JobDeliveries {
    std::string owner;
    std::string principal;
    std::string body;
    int64_t last_change_unix_micros = 0;
    std::vector<WebhookDelivery> deliveries;
  };
  // A job's deliveries as stored, and back (DATA_LOSS naming what is wrong); `job_id` is
  // set as soon as it is read.
  static std::string EncodeJob(const std::string& job_id, const JobDeliveries& job);
  static absl::StatusOr<JobDeliveries> DecodeJob(const std::string& value, std::string* job_id);
  struct Due {
    std::string job_id;
    size_t index = 0;
  };
  void Run();
  // One attempt of delivery `index` of `job_id`: its outcome.
  WebhookAttempt Attempt(const std::string& url, const std::string& secret,
                         const std::string& body) const;
  void ScheduleLocked(const std::string& job_id, size_t index, int64_t at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets jobs without a pending delivery past `keep`, then the least recently changed
  // beyond max_jobs or max_bytes; their ids, for the store.
  std::vector<std::string> ForgetOldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A change for the store: the job's deliveries as they are now, or (nullopt) none.
  struct StoreWrite {
    std::string job_id;
    std::optional<std::string> value;
  };
  StoreWrite SnapshotLocked(const std::string& job_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `writes` to the store (if any) with mu_ released, in the order the changes were
  // made: store_mu_ is taken before mu_ is released. Logs a write that fails (the delivery
  // goes on in memory).
  void StoreAndUnlock(const std::vector<StoreWrite>& writes) ABSL_UNLOCK_FUNCTION(mu_);

  const WebhookOptions options_;
  // Serializes changes of registrations, so that the store and registrations_ agree; taken
  // before mu_, and held over the store's (synced) write without blocking deliveries.
  absl::Mutex register_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  struct Registration {
    std::string url;
    std::string secret;
  };
  std::map<std::string, Registration> registrations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, JobDeliveries> jobs_ ABSL_GUARDED_BY(mu_);
  std::multimap<int64_t, Due> schedule_ ABSL_GUARDED_BY(mu_);  // next attempts by time
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Serializes the store's writes of deliveries; taken with mu_ held (StoreAndUnlock).
  absl::Mutex store_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace cops

#endif  // COPS_HTTP_WEBHOOKS_H_
