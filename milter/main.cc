// cops-milter: checks mail passing through Postfix or Sendmail against copsd (milter/milter.h).
//
//   cops-milter --listen inet:PORT@HOST|unix:PATH --server HOST:PORT
//               --action headers|quarantine|reject [--threshold T] [--config FILE]
//               [--metrics-listen HOST:PORT]
//
// Runs in the foreground, logs to stderr, exits 0 on SIGTERM. Flags win over the config
// file (milter/policy.h lists its keys).

#include <iostream>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "client/client_security.h"
#include "logging/log_event.h"
#include "milter/milter.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{"cops-milter: checks mail against a COPS server (copsd)"};
  MilterOptions options;
  options.client.target = "127.0.0.1:7411";
  options.client.max_reconnect_backoff_ms = 1000;  // resume within a second of a restart
  std::string config_file, action, on_failure, log_level = "info";
  std::optional<double> threshold;
  std::optional<uint32_t> timeout_ms;
  bool log_json = false;
  app.add_option("--listen", options.listen, "inet:PORT@HOST, inet6:PORT@HOST or unix:PATH")
      ->required();
  app.add_option("--server", options.client.target, "copsd address HOST:PORT")
      ->capture_default_str();
  app.add_option("--action", action, "What a violation leads to: headers, quarantine, reject");
  app.add_option("--threshold", threshold, "Match-ratio threshold in (0, 1] (default: copsd's)");
  app.add_option("--config", config_file, "Policy file (JSON object, see milter/policy.h)");
  app.add_option("--timeout-ms", timeout_ms, "Deadline of one message's check (default 2000)");
  app.add_option("--on-failure", on_failure,
                 "When a message cannot be checked: accept (fail open, default), tempfail, reject");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any free one)");
  app.add_option("--log-level", log_level, "debug, info, warn, error")->capture_default_str();
  app.add_flag("--log-json", log_json, "One JSON object per log line");
  AddClientSecurityFlags(&app, &options.client.security);
  CLI11_PARSE(app, argc, argv);

  SetJsonLogs(log_json);
  spdlog::set_level(spdlog::level::from_str(log_level));
  auto fail = [](const absl::Status& s) {
    std::cerr << "cops-milter: " << s.message() << "\n";
    return 2;
  };
  MilterPolicy& policy = options.policy;
  if (!config_file.empty()) {
    if (absl::Status s = ApplyPolicyFile(config_file, &policy); !s.ok()) return fail(s);
  }
  if (!action.empty()) {
    absl::StatusOr<MilterAction> a = ParseMilterAction(action);
    if (!a.ok()) return fail(a.status());
    policy.action = *a;
  }
  if (!on_failure.empty()) {
    absl::StatusOr<FailureAction> f = ParseFailureAction(on_failure);
    if (!f.ok()) return fail(f.status());
    policy.on_failure = *f;
  }
  if (threshold.has_value()) policy.threshold = threshold;
  if (timeout_ms.has_value()) policy.timeout_ms = *timeout_ms;
  if (absl::Status s = RunMilter(options); !s.ok()) return fail(s);
  return 0;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  try {
    return cops::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cops-milter: " << e.what() << "\n";
    return 2;
  }
}
