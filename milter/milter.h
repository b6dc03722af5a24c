#ifndef COPS_MILTER_MILTER_H_
#define COPS_MILTER_MILTER_H_

// cops-milter: the milter protocol (Debian's libmilter, spoken by Postfix and Sendmail) around
// the message path of milter/message_check.h. libmilter serves the SMTP connections from a
// pool of threads; each message's check borrows one of at most options.check_streams
// CheckStream calls to copsd (CheckStreamPool, client/check_stream.h), opened as needed, kept
// for the next message and reopened after copsd restarts, over one gRPC channel; or, with
// options.local.data_dir, every connection checks in its own thread against a copy of copsd's
// data directory opened read-only (milter/local_checker.h), reopened every options.reopen_s
// seconds. Messages are parsed in process; their PDF, DOCX and
// ODT attachments go to a pool of policy.convert_workers converter worker processes
// (convert/worker_pool.h) shared by all connections. Accepted TCP connections have
// TCP_NODELAY set (the verdict's replies are several small writes).
//
// Per message, at end of data: any X-COPS-Result / X-COPS-Matches headers the message came
// with are removed (a sender cannot forge a verdict), then
//   clean      X-COPS-Result: clean
//   violation  X-COPS-Result: violation (...) and X-COPS-Matches: doc=.. ratio=.. ..., then
//              per the policy's action: headers only, quarantine (Postfix's hold queue, with
//              policy.quarantine_reason), or reject with reject_code/status/text;
//   unchecked  (copsd down or slow, message too large) policy.on_failure: accept (no
//              headers added), tempfail (4xx) or reject (5xx).
// One "milter_message" log line per message: queue_id, verdict, action, parts, docs,
// latency_ms (the milter's own time at end of data), domains (the policy's "domains" entries
// the message was checked under, if any), error. Counters (MilterCounters) are
// logged as one "milter_stats" line every policy.stats_interval_s seconds and at exit, and
// served to Prometheus at options.metrics_listen (milter/metrics.h).
//
// Thread-safety: RunMilter runs once per process (libmilter keeps global state).

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"
#include "milter/local_checker.h"
#include "milter/policy.h"

namespace cops {

struct MilterOptions {
  // "inet:PORT@HOST", "inet6:PORT@HOST" or "unix:PATH" (libmilter's smfi_setconn syntax).
  std::string listen;
  ClientOptions client;  // copsd address and credentials; the timeout is policy.timeout_ms
  // Checks in flight to copsd at most (CheckStream calls; the others' messages wait for one
  // within their timeout). At most copsd's --max-streams-per-connection (16 by default).
  size_t check_streams = 8;
  // Set (local.data_dir not empty): checks in process against that directory, not copsd.
  LocalIndexOptions local;
  // Seconds between two reopenings of the local index (registrations since become
  // visible); 0 = never. A failed reopening is logged and the open copy kept.
  int reopen_s = 0;
  MilterPolicy policy;
  // Seconds libmilter waits on the MTA's socket before dropping a connection.
  int mta_timeout_s = 300;
  // HOST:PORT of the Prometheus endpoint (/metrics); empty = none.
  std::string metrics_listen;
};

// Upper bounds, in microseconds, of the buckets of the per-message latency histogram.
inline constexpr std::array<uint64_t, 12> kMilterLatencyBoundsUs = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000};

// Totals since start. Thread-safe (relaxed atomics).
struct MilterCounters {
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> clean{0};
  std::atomic<uint64_t> violations{0};
  std::atomic<uint64_t> quarantined{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> unchecked{0};   // on_failure applied
  std::atomic<uint64_t> parts{0};       // texts sent to copsd
  std::atomic<uint64_t> latency_us{0};  // sum of per-message latency
  // Messages by latency: [i] up to kMilterLatencyBoundsUs[i] (and above the bound before),
  // the last one above every bound.
  std::array<std::atomic<uint64_t>, kMilterLatencyBoundsUs.size() + 1> latency_buckets{};

  // Counts one message's latency in latency_us and its bucket.
  void RecordLatency(uint64_t us) {
    latency_us.fetch_add(us, std::memory_order_relaxed);
    size_t bucket = 0;
    while (bucket < kMilterLatencyBoundsUs.size() && us > kMilterLatencyBoundsUs[bucket]) ++bucket;
    latency_buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  }
};

// Listens on options.listen and serves until SIGTERM, SIGINT or SIGHUP, then returns OK
// within about 100 ms, plus up to 500 ms for the messages being checked to get their
// verdicts; connections still open are dropped (the MTA applies milter_default_action).
// INVALID_ARGUMENT for a bad listen address or policy, UNAVAILABLE when the socket cannot be
// opened, LocalIndex::Open's errors for a local index that cannot be used. Logs "milter_listening" once the socket accepts connections.
absl::Status RunMilter(const MilterOptions& options);

}  // namespace cops

#endif  // COPS_MILTER_MILTER_H_
