#include "milter/milter.h"

#include <libmilter/mfapi.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/check_stream.h"
#include "milter/message_check.h"
#include "server/request_log.h"

namespace cops {
namespace {

constexpr char kResultHeader[] = "X-COPS-Result";
constexpr char kMatchesHeader[] = "X-COPS-Matches";

// libmilter calls plain C functions: the process-wide state they share. Set once by
// RunMilter before smfi_main starts any connection thread; read-only afterwards except for
// the atomic counters.
struct MilterState {
  MilterOptions options;
  std::unique_ptr<Client> client;
  MilterCounters counters;
};
MilterState* g_state = nullptr;

class StreamPartChecker : public PartChecker {
 public:
  explicit StreamPartChecker(Client* client) : stream_(client) {}
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) override {
    return stream_.Check(std::move(requests), timeout);
  }

 private:
  CheckStream stream_;
};

// One SMTP connection (libmilter's private data): its check stream and the message being
// received, rebuilt as RFC 5322 bytes from the header and body callbacks.
struct Connection {
  explicit Connection(Client* client) : checker(client) {}
  void Reset() {
    message.clear();
    too_large = false;
    forged_results = 0;
    forged_matches = 0;
  }
  void Append(std::string_view bytes) {
    if (too_large) return;
    if (message.size() + bytes.size() > g_state->options.policy.max_message_bytes) {
      too_large = true;
      message = std::string();  // free it: the message will not be checked
      return;
    }
    message.append(bytes);
  }

  StreamPartChecker checker;
  std::string message;
  bool too_large = false;
  int forged_results = 0;  // X-COPS-* headers the message arrived with
  int forged_matches = 0;
};

// The connection's state, made on first use (an MTA may skip the connect step).
Connection* Conn(SMFICTX* ctx) {
  auto* conn = static_cast<Connection*>(smfi_getpriv(ctx));
  if (conn == nullptr) {
    g_state->counters.connections.fetch_add(1, std::memory_order_relaxed);
    conn = new Connection(g_state->client.get());
    smfi_setpriv(ctx, conn);
  }
  return conn;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// smfi_setreply treats '%' as a format character.
std::string EscapePercent(std::string_view text) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '%') out.push_back('%');
  }
  return out;
}

sfsistat Reject(SMFICTX* ctx, const MilterPolicy& policy) {
  std::string code = policy.reject_code;
  std::string status = policy.reject_status;
  std::string text = EscapePercent(policy.reject_text);
  smfi_setreply(ctx, code.data(), status.data(), text.data());
  return SMFIS_REJECT;
}

void AddHeader(SMFICTX* ctx, const char* name, const std::string& value) {
  std::string n = name;
  std::string v = value;
  smfi_addheader(ctx, n.data(), v.data());
}

void RemoveForgedHeaders(SMFICTX* ctx, const Connection& conn) {
  std::string result = kResultHeader;
  std::string matches = kMatchesHeader;
  for (int i = conn.forged_results; i >= 1; --i) smfi_chgheader(ctx, result.data(), i, nullptr);
  for (int i = conn.forged_matches; i >= 1; --i) smfi_chgheader(ctx, matches.data(), i, nullptr);
}

void LogStats(std::string_view event) {
  const MilterCounters& c = g_state->counters;
  const uint64_t messages = c.messages.load(std::memory_order_relaxed);
  const uint64_t latency_us = c.latency_us.load(std::memory_order_relaxed);
  char mean[32];
  std::snprintf(mean, sizeof(mean), "%.3f",
                messages == 0 ? 0.0 : static_cast<double>(latency_us) / 1000.0 / messages);
  auto n = [](const std::atomic<uint64_t>& v) {
    return std::to_string(v.load(std::memory_order_relaxed));
  };
  LogEvent(LogLevel::kInfo, event,
           {{"connections", n(c.connections)},
            {"messages", std::to_string(messages)},
            {"clean", n(c.clean)},
            {"violations", n(c.violations)},
            {"quarantined", n(c.quarantined)},
            {"rejected", n(c.rejected)},
            {"unchecked", n(c.unchecked)},
            {"parts", n(c.parts)},
            {"mean_latency_ms", mean}});
}

extern "C" sfsistat OnConnect(SMFICTX* ctx, char* /*host*/, _SOCK_ADDR* /*addr*/) {
  Conn(ctx);
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnEnvelopeFrom(SMFICTX* ctx, char** /*argv*/) {
  Conn(ctx)->Reset();
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnHeader(SMFICTX* ctx, char* name, char* value) {
  Connection* conn = Conn(ctx);
  if (EqualsIgnoreCase(name, kResultHeader)) ++conn->forged_results;
  if (EqualsIgnoreCase(name, kMatchesHeader)) ++conn->forged_matches;
  conn->Append(name);
  conn->Append(": ");
  conn->Append(value);
  conn->Append("\r\n");
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnEndOfHeaders(SMFICTX* ctx) {
  Conn(ctx)->Append("\r\n");
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnBody(SMFICTX* ctx, unsigned char* bytes, size_t size) {
  Conn(ctx)->Append(std::string_view(reinterpret_cast<const char*>(bytes), size));
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnEndOfMessage(SMFICTX* ctx) {
  Connection* conn = Conn(ctx);
  const auto start = std::chrono::steady_clock::now();
  const MilterPolicy& policy = g_state->options.policy;
  MilterCounters& counters = g_state->counters;

  MessageVerdict verdict;
  if (conn->too_large) {
    verdict.outcome = MessageVerdict::Outcome::kUnchecked;
    verdict.error = absl::ResourceExhaustedError(
        absl::StrCat("message exceeds max_message_bytes ", policy.max_message_bytes));
  } else {
    verdict = CheckMessage(conn->message, policy, &conn->checker);
  }
  RemoveForgedHeaders(ctx, *conn);

  sfsistat result = SMFIS_CONTINUE;  // at end of message: accept with our changes
  std::string action;
  switch (verdict.outcome) {
    case MessageVerdict::Outcome::kClean:
      AddHeader(ctx, kResultHeader, verdict.ResultHeader());
      counters.clean.fetch_add(1, std::memory_order_relaxed);
      action = "accept";
      break;
    case MessageVerdict::Outcome::kViolation:
      counters.violations.fetch_add(1, std::memory_order_relaxed);
      action = MilterActionName(verdict.action);
      if (verdict.action == MilterAction::kReject) {
        counters.rejected.fetch_add(1, std::memory_order_relaxed);
        result = Reject(ctx, policy);
        break;
      }
      AddHeader(ctx, kResultHeader, verdict.ResultHeader());
      AddHeader(ctx, kMatchesHeader, verdict.MatchesHeader(policy.max_matches_header));
      if (verdict.action == MilterAction::kQuarantine) {
        counters.quarantined.fetch_add(1, std::memory_order_relaxed);
        std::string reason = policy.quarantine_reason;
        smfi_quarantine(ctx, reason.data());
      }
      break;
    case MessageVerdict::Outcome::kUnchecked:
      counters.unchecked.fetch_add(1, std::memory_order_relaxed);
      action = "on_failure_" + std::string(FailureActionName(policy.on_failure));
      if (policy.on_failure == FailureAction::kTempfail) result = SMFIS_TEMPFAIL;
      if (policy.on_failure == FailureAction::kReject) result = SMFIS_REJECT;
      break;
  }
  const auto latency = std::chrono::steady_clock::now() - start;
  const auto latency_us = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
  counters.messages.fetch_add(1, std::memory_order_relaxed);
  counters.parts.fetch_add(verdict.parts, std::memory_order_relaxed);
  counters.latency_us.fetch_add(static_cast<uint64_t>(latency_us), std::memory_order_relaxed);

  const char* queue_id = smfi_getsymval(ctx, const_cast<char*>("i"));
  std::string docs;
  for (const ViolatedDocument& d : verdict.violations) {
    absl::StrAppend(&docs, docs.empty() ? "" : ",", d.doc_id);
  }
  char latency_ms[32];
  std::snprintf(latency_ms, sizeof(latency_ms), "%.3f", latency_us / 1000.0);
  const char* outcome = verdict.outcome == MessageVerdict::Outcome::kClean       ? "clean"
                        : verdict.outcome == MessageVerdict::Outcome::kViolation ? "violation"
                                                                                 : "unchecked";
  std::vector<LogField> fields = {{"queue_id", queue_id == nullptr ? "-" : queue_id},
                                  {"verdict", outcome},
                                  {"action", action},
                                  {"parts", std::to_string(verdict.parts)},
                                  {"docs", docs.empty() ? "-" : docs},
                                  {"latency_ms", latency_ms}};
  if (!verdict.error.ok()) fields.emplace_back("error", verdict.error.ToString());
  LogEvent(verdict.error.ok() ? LogLevel::kInfo : LogLevel::kWarn, "milter_message", fields);
  conn->Reset();
  return result;
}

extern "C" sfsistat OnAbort(SMFICTX* ctx) {
  Conn(ctx)->Reset();
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnClose(SMFICTX* ctx) {
  delete static_cast<Connection*>(smfi_getpriv(ctx));
  smfi_setpriv(ctx, nullptr);
  return SMFIS_CONTINUE;
}

}  // namespace

absl::Status RunMilter(const MilterOptions& options) {
  if (absl::Status s = options.policy.Validate(); !s.ok()) return s;
  if (!options.listen.starts_with("inet:") && !options.listen.starts_with("inet6:") &&
      !options.listen.starts_with("unix:") && !options.listen.starts_with("local:")) {
    return absl::InvalidArgumentError("--listen '" + options.listen +
                                      "': expected inet:PORT@HOST or unix:PATH");
  }
  // libmilter's signal thread takes SIGTERM/SIGINT/SIGHUP with sigwait(): every thread must
  // block them, including the gRPC threads the channel starts, so block them first.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Never freed: connection threads libmilter has not joined may still read it at exit.
  auto* state = new MilterState();
  state->options = options;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options.client);
  if (!client.ok()) return client.status();
  state->client = *std::move(client);
  g_state = state;

  std::string listen = options.listen;
  std::string name = "cops-milter";
  struct smfiDesc desc = {};
  desc.xxfi_name = name.data();
  desc.xxfi_version = SMFI_VERSION;
  desc.xxfi_flags = SMFIF_ADDHDRS | SMFIF_CHGHDRS | SMFIF_QUARANTINE;
  desc.xxfi_connect = OnConnect;
  desc.xxfi_envfrom = OnEnvelopeFrom;
  desc.xxfi_header = OnHeader;
  desc.xxfi_eoh = OnEndOfHeaders;
  desc.xxfi_body = OnBody;
  desc.xxfi_eom = OnEndOfMessage;
  desc.xxfi_abort = OnAbort;
  desc.xxfi_close = OnClose;
  absl::Status status;
  if (smfi_setconn(listen.data()) == MI_FAILURE) {
    status = absl::InvalidArgumentError("--listen '" + listen + "' is not a milter address");
  } else if (smfi_settimeout(options.mta_timeout_s) == MI_FAILURE ||
             smfi_register(desc) == MI_FAILURE) {
    status = absl::InternalError("libmilter refused the filter registration");
  } else if (smfi_opensocket(/*rmsocket=*/true) == MI_FAILURE) {
    status = absl::UnavailableError("cannot listen on " + listen +
                                    " (address in use, or no permission?)");
  }
  if (!status.ok()) return status;
  LogEvent(LogLevel::kInfo, "milter_listening",
           {{"listen", listen},
            {"server", options.client.target},
            {"action", std::string(MilterActionName(options.policy.action))},
            {"on_failure", std::string(FailureActionName(options.policy.on_failure))}});

  absl::Notification stop;
  std::thread stats([&stop, interval = options.policy.stats_interval_s] {
    if (interval == 0) return;
    while (!stop.WaitForNotificationWithTimeout(absl::Seconds(interval))) LogStats("milter_stats");
  });
  const int rc = smfi_main();
  stop.Notify();
  stats.join();
  LogStats("milter_stopped");
  if (rc == MI_FAILURE) return absl::InternalError("libmilter's main loop failed");
  return absl::OkStatus();
}

}  // namespace cops
