#include "milter/metrics.h"

#include <atomic>
#include <exception>
#include <limits>
#include <utility>
#include <vector>

#include "convert/sandbox.h"
#include "milter/milter.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace cops {
namespace {

double Load(const std::atomic<uint64_t>& v) {
  return static_cast<double>(v.load(std::memory_order_relaxed));
}

class MilterCollector : public prometheus::Collectable {
 public:
  MilterCollector(const MilterCounters* counters, std::function<int()> checking)
      : counters_(counters), checking_(std::move(checking)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const MilterCounters& c = *counters_;
    std::vector<prometheus::MetricFamily> out;
    // One sample of family `name` (a new family unless it continues the last one).
    auto sample = [&out](std::string name, std::string help, prometheus::MetricType type,
                         std::vector<prometheus::ClientMetric::Label> labels)
        -> prometheus::ClientMetric& {
      if (out.empty() || out.back().name != name) {
        out.push_back({std::move(name), std::move(help), type, {}});
      }
      prometheus::ClientMetric& metric = out.back().metric.emplace_back();
      metric.label = std::move(labels);
      return metric;
    };
    using prometheus::MetricType;
    sample("cops_milter_connections_total", "MTA connections accepted.", MetricType::Counter, {})
        .counter.value = Load(c.connections);
    const std::string messages = "Messages given a verdict, by verdict.";
    sample("cops_milter_messages_total", messages, MetricType::Counter, {{"verdict", "clean"}})
        .counter.value = Load(c.clean);
    sample("cops_milter_messages_total", messages, MetricType::Counter,
           {{"verdict", "violation"}})
        .counter.value = Load(c.violations);
    sample("cops_milter_messages_total", messages, MetricType::Counter,
           {{"verdict", "unchecked"}})
        .counter.value = Load(c.unchecked);
    const std::string actions = "Violating messages quarantined or rejected.";
    sample("cops_milter_actions_total", actions, MetricType::Counter, {{"action", "quarantine"}})
        .counter.value = Load(c.quarantined);
    sample("cops_milter_actions_total", actions, MetricType::Counter, {{"action", "reject"}})
        .counter.value = Load(c.rejected);
    sample("cops_milter_parts_total", "Texts (message bodies, attachments) sent to copsd.",
           MetricType::Counter, {})
        .counter.value = Load(c.parts);
    prometheus::ClientMetric::Histogram& h =
        sample("cops_milter_message_seconds",
               "Time from the end of a message's data to its verdict, in seconds.",
               MetricType::Histogram, {})
            .histogram;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kMilterLatencyBoundsUs.size(); ++i) {
      cumulative += c.latency_buckets[i].load(std::memory_order_relaxed);
      h.bucket.push_back({cumulative, static_cast<double>(kMilterLatencyBoundsUs[i]) / 1e6});
    }
    cumulative += c.latency_buckets.back().load(std::memory_order_relaxed);
    h.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
    h.sample_count = cumulative;
    h.sample_sum = Load(c.latency_us) / 1e6;
    sample("cops_milter_checking", "Messages awaiting their verdict.", MetricType::Gauge, {})
        .gauge.value = checking_();
    const ConvertWorkerCounts worker = GetConvertWorkerCounts();
    sample("cops_converter_worker_failures_total",
           "Attachment conversions whose worker process crashed, could not start or gave no "
           "result.",
           MetricType::Counter, {})
        .counter.value = static_cast<double>(worker.failures);
    sample("cops_converter_worker_timeouts_total",
           "Attachment conversions whose worker was stopped at its time or CPU budget.",
           MetricType::Counter, {})
        .counter.value = static_cast<double>(worker.timeouts);
    return out;
  }

 private:
  const MilterCounters* const counters_;
  const std::function<int()> checking_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MilterMetrics>> MilterMetrics::Start(
    const std::string& listen, const MilterCounters* counters, std::function<int()> checking) {
  std::unique_ptr<MilterMetrics> metrics(new MilterMetrics());
  metrics->collector_ = std::make_shared<MilterCollector>(counters, std::move(checking));
  try {
    // civetweb throws when it cannot listen.
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError("metrics: cannot listen on " + listen + ": " + e.what());
  }
  metrics->exposer_->RegisterCollectable(metrics->collector_);
  return metrics;
}

MilterMetrics::~MilterMetrics() = default;

int MilterMetrics::port() const {
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace cops
