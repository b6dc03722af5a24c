// cops-milter: checks mail passing through Postfix or Sendmail against copsd (milter/milter.h),
// or in process against a read-only copy of copsd's data directory (milter/local_checker.h).
//
//   cops-milter --listen inet:PORT@HOST|unix:PATH
//               (--server HOST:PORT | --data-dir DIR [--key-file FILE] [--reopen-s N])
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
#include "proto/grpc_process.h"
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
  CLI::Option* server =
      app.add_option("--server", options.client.target, "copsd address HOST:PORT")
          ->capture_default_str();
  CLI::Option* data_dir =
      app.add_option("--data-dir", options.local.data_dir,
                     "Check in process against this copy of copsd's data directory (a "
                     "snapshot, or copsd's own on this host), opened read-only, not copsd");
  data_dir->excludes(server);
  app.add_option("--key-file", options.local.key_file,
                 "With --data-dir: the hashing key's file when the directory lacks it "
                 "(as copsd's --key-file)")
      ->needs(data_dir);
  app.add_option("--reopen-s", options.reopen_s,
                 "With --data-dir: reopen it every N seconds to see new registrations "
                 "(0: never)")
      ->needs(data_dir)
      ->check(CLI::NonNegativeNumber);
  bool warm_cache = true;
  app.add_option("--warm-cache", warm_cache,
                 "With --data-dir: read the index into the block cache (up to 90%) after "
                 "opening it, on a low-priority thread while serving, and after each reopen, "
                 "before switching to it")
      ->capture_default_str()
      ->needs(data_dir);
  app.add_option("--action", action, "What a violation leads to: headers, quarantine, reject");
  app.add_option("--threshold", threshold, "Match-ratio threshold in (0, 1] (default: copsd's)");
  app.add_option("--config", config_file, "Policy file (JSON object, see milter/policy.h)");
  app.add_option("--timeout-ms", timeout_ms, "Deadline of one message's check (default 2000)");
  app.add_option("--check-streams", options.check_streams,
                 "Checks in flight to copsd at most, over as many CheckStream calls (at most "
                 "copsd's --max-streams-per-connection)")
      ->capture_default_str()
      ->excludes(data_dir)
      ->check(CLI::PositiveNumber);
  app.add_option("--on-failure", on_failure,
                 "When a message cannot be checked: accept (fail open, default), tempfail, reject");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any free one)");
  app.add_option("--log-level", log_level, "debug, info, warn, error")->capture_default_str();
  app.add_flag("--log-json", log_json, "One JSON object per log line");
  AddClientSecurityFlags(&app, &options.client.security);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the error (or --help)
    return rc == 0 ? 0 : 2;
  }

  if (!warm_cache) options.local.warm_cache_fill = 0;
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
  cops::PrepareGrpcProcess();
  try {
    return cops::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cops-milter: " << e.what() << "\n";
    return 2;
  }
}
