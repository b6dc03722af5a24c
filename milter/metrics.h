#ifndef COPS_MILTER_METRICS_H_
#define COPS_MILTER_METRICS_H_

// cops-milter's Prometheus metrics (`--metrics-listen HOST:PORT`), served in the text
// exposition format at http://HOST:PORT/metrics by prometheus-cpp's pull exposer, as copsd
// serves its own (server/metrics.h), read from MilterCounters at each scrape:
//   cops_milter_connections_total                          MTA connections accepted
//   cops_milter_messages_total{verdict="clean"|"violation"|"unchecked"}
//   cops_milter_actions_total{action="quarantine"|"reject"}  violations acted on beyond headers
//   cops_milter_parts_total                                texts sent to copsd
//   cops_milter_message_seconds                            histogram: end of data to verdict
//   cops_milter_checking                                   messages awaiting their verdict now
//   cops_converter_worker_failures_total, cops_converter_worker_timeouts_total  attachments
//
// Thread-safety: a started MilterMetrics is thread-safe; scrapes run on the exposer's threads.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace cops {

struct MilterCounters;

class MilterMetrics {
 public:
  // Serves /metrics on `listen` (HOST:PORT; port 0 picks a free port). `counters` and
  // `checking` (the messages awaiting their verdict) must outlive the server. UNAVAILABLE when
  // the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MilterMetrics>> Start(const std::string& listen,
                                                              const MilterCounters* counters,
                                                              std::function<int()> checking);
  ~MilterMetrics();
  MilterMetrics(const MilterMetrics&) = delete;
  MilterMetrics& operator=(const MilterMetrics&) = delete;

  // The bound port.
  int port() const;

 private:
  MilterMetrics() = default;

  std::shared_ptr<prometheus::Collectable> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace cops

#endif  // COPS_MILTER_METRICS_H_
