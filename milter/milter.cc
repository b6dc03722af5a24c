#include "milter/milter.h"

#include <libmilter/mfapi.h>
#include <libmilter/mfdef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/check_stream.h"
#include "convert/worker_pool.h"
#include "logging/log_event.h"
#include "milter/message_check.h"
#include "milter/metrics.h"

// libmilter's own stop flag (exported by libmilter, not declared in mfapi.h): 0 (MILTER_CONT)
// until its signal thread, or smfi_stop(), asks the milter to stop.
extern "C" int mi_stop(void);

namespace cops {
namespace {

constexpr char kResultHeader[] = "X-COPS-Result";
constexpr char kMatchesHeader[] = "X-COPS-Matches";

// How long a stopping milter waits for the messages being checked to get their verdicts.
constexpr absl::Duration kStopDrain = absl::Milliseconds(500);

// libmilter calls plain C functions: the process-wide state they share. Set once by
// RunMilter before smfi_main starts any connection thread; read-only afterwards except for
// the atomic counters and the in-flight count.
struct MilterState {
  MilterOptions options;
  std::unique_ptr<Client> client;     // gRPC mode
  std::unique_ptr<CheckStreamPool> streams;  // gRPC mode, over `client`
  std::unique_ptr<LocalIndex> local;  // local mode (options.local.data_dir)
  std::unique_ptr<ConvertWorkerPool> pool;  // unless policy.convert_in_process
  SandboxConverter sandbox;                 // PDF, DOCX and ODT attachments
  MilterCounters counters;
  absl::Mutex mu;
  int checking ABSL_GUARDED_BY(mu) = 0;  // messages between end of data and their verdict
};
MilterState* g_state = nullptr;

// Checks over a stream borrowed for the message: an SMTP connection holds none between
// messages (see CheckStreamPool for why).
class StreamPartChecker : public PartChecker {
 public:
  explicit StreamPartChecker(CheckStreamPool* streams) : streams_(streams) {}
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) override {
    return streams_->Check(std::move(requests), timeout);
  }

 private:
  CheckStreamPool* const streams_;
};

// The checker of a new connection: the check streams to copsd, or the local index.
std::unique_ptr<PartChecker> NewChecker() {
  if (g_state->local != nullptr) return std::make_unique<LocalPartChecker>(g_state->local.get());
  return std::make_unique<StreamPartChecker>(g_state->streams.get());
}

// One SMTP connection (libmilter's private data): its checker and the message being
// received, rebuilt as RFC 5322 bytes from the header and body callbacks.
struct Connection {
  Connection() : checker(NewChecker()) {}
  void Reset() {
    message.clear();
    recipients.clear();
    too_large = false;
    in_body = false;
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
  // The blank line between the header block and the body, once: at the end of the headers
  // when the MTA sends that step, else before the first body chunk or at the end of data.
  void EndHeaders() {
    if (in_body) return;
    in_body = true;
    Append("\r\n");
  }

  // SMFIS_NOREPLY for the steps whose replies the MTA agreed to go without (`step`: an
  // SMFIP_NR_* bit), else SMFIS_CONTINUE.
  sfsistat Continue(unsigned long step) const {
    return (no_reply & step) != 0 ? SMFIS_NOREPLY : SMFIS_CONTINUE;
  }

  std::unique_ptr<PartChecker> checker;
  unsigned long no_reply = 0;  // SMFIP_NR_* bits negotiated with the MTA
  std::string message;
  std::vector<std::string> recipients;  // envelope recipients (RCPT TO) of the message
  bool too_large = false;
  bool in_body = false;  // the header block has been ended (EndHeaders)
  int forged_results = 0;  // X-COPS-* headers the message arrived with
  int forged_matches = 0;
};

// The connection's state, made on first use (an MTA may skip the connect step).
Connection* Conn(SMFICTX* ctx) {
  auto* conn = static_cast<Connection*>(smfi_getpriv(ctx));
  if (conn == nullptr) {
    g_state->counters.connections.fetch_add(1, std::memory_order_relaxed);
    conn = new Connection();
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

// Only the end of the message needs an answer: every earlier step, the MTA may send without
// waiting for one (SMFIP_NR_*; Postfix and Sendmail 8.14+ offer them), which saves a round
// trip per header and body chunk. Steps the milter has no use for are not sent at all, which
// saves libmilter a poll and two reads per command: HELO, unknown commands, DATA, MAIL (a
// message's state is reset at its end and on abort), the end of the headers (the body or the
// end of data ends them), and RCPT unless the policy has rules per recipient domain.
constexpr unsigned long kNoReplySteps = SMFIP_NR_CONN | SMFIP_NR_MAIL | SMFIP_NR_RCPT |
                                        SMFIP_NR_HDR | SMFIP_NR_EOH | SMFIP_NR_BODY;
constexpr unsigned long kSkippedSteps =
    SMFIP_NOHELO | SMFIP_NOUNKNOWN | SMFIP_NODATA | SMFIP_NOMAIL | SMFIP_NOEOH;
constexpr unsigned long kActions = SMFIF_ADDHDRS | SMFIF_CHGHDRS | SMFIF_QUARANTINE;

extern "C" sfsistat OnNegotiate(SMFICTX* ctx, unsigned long actions, unsigned long steps,
                                unsigned long /*f2*/, unsigned long /*f3*/,
                                unsigned long* use_actions, unsigned long* use_steps,
                                unsigned long* f2, unsigned long* f3) {
  Connection* conn = Conn(ctx);
  *use_actions = actions & kActions;
  conn->no_reply = steps & kNoReplySteps;
  unsigned long skipped = kSkippedSteps;
  if (g_state->options.policy.domains.empty()) skipped |= SMFIP_NORCPT;
  *use_steps = conn->no_reply | (steps & skipped);
  *f2 = 0;
  *f3 = 0;
  return SMFIS_CONTINUE;
}

extern "C" sfsistat OnConnect(SMFICTX* ctx, char* /*host*/, _SOCK_ADDR* /*addr*/) {
  return Conn(ctx)->Continue(SMFIP_NR_CONN);
}

extern "C" sfsistat OnEnvelopeFrom(SMFICTX* ctx, char** /*argv*/) {
  Connection* conn = Conn(ctx);
  conn->Reset();
  return conn->Continue(SMFIP_NR_MAIL);
}

extern "C" sfsistat OnEnvelopeRecipient(SMFICTX* ctx, char** argv) {
  Connection* conn = Conn(ctx);
  if (argv[0] != nullptr) conn->recipients.emplace_back(argv[0]);
  return conn->Continue(SMFIP_NR_RCPT);
}

extern "C" sfsistat OnHeader(SMFICTX* ctx, char* name, char* value) {
  Connection* conn = Conn(ctx);
  if (EqualsIgnoreCase(name, kResultHeader)) ++conn->forged_results;
  if (EqualsIgnoreCase(name, kMatchesHeader)) ++conn->forged_matches;
  conn->Append(name);
  conn->Append(": ");
  conn->Append(value);
  conn->Append("\r\n");
  return conn->Continue(SMFIP_NR_HDR);
}

extern "C" sfsistat OnEndOfHeaders(SMFICTX* ctx) {
  Connection* conn = Conn(ctx);
  conn->EndHeaders();
  return conn->Continue(SMFIP_NR_EOH);
}

extern "C" sfsistat OnBody(SMFICTX* ctx, unsigned char* bytes, size_t size) {
  Connection* conn = Conn(ctx);
  conn->EndHeaders();
  conn->Append(std::string_view(reinterpret_cast<const char*>(bytes), size));
  return conn->Continue(SMFIP_NR_BODY);
}

// The "milter_message" line of one message's verdict (built only when it is logged).
void LogMessage(SMFICTX* ctx, const MessageVerdict& verdict, const std::string& action,
                int64_t latency_us, LogLevel level) {
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
  if (!verdict.domains.empty()) {
    fields.emplace_back("domains", absl::StrJoin(verdict.domains, ","));
  }
  if (!verdict.error.ok()) fields.emplace_back("error", verdict.error.ToString());
  LogEvent(level, "milter_message", fields);
}

// Counts a message as being checked while it lives (the stop drain waits for none).
class CheckingScope {
 public:
  CheckingScope() {
    absl::MutexLock lock(&g_state->mu);
    ++g_state->checking;
  }
  ~CheckingScope() {
    absl::MutexLock lock(&g_state->mu);
    --g_state->checking;
  }
  CheckingScope(const CheckingScope&) = delete;
  CheckingScope& operator=(const CheckingScope&) = delete;
};

extern "C" sfsistat OnEndOfMessage(SMFICTX* ctx) {
  const CheckingScope checking;
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
    conn->EndHeaders();  // a message without a body
    verdict = CheckMessage(conn->message, policy, conn->recipients, g_state->sandbox,
                           conn->checker.get());
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
      // Let through unchecked: say so, lest a reader (or a later filter) take it for clean.
      if (policy.on_failure == FailureAction::kAccept) {
        AddHeader(ctx, kResultHeader, verdict.ResultHeader());
      }
      break;
  }
  const auto latency = std::chrono::steady_clock::now() - start;
  const auto latency_us = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
  counters.messages.fetch_add(1, std::memory_order_relaxed);
  counters.parts.fetch_add(verdict.parts, std::memory_order_relaxed);
  counters.RecordLatency(static_cast<uint64_t>(latency_us));

  const LogLevel level = verdict.error.ok() ? LogLevel::kInfo : LogLevel::kWarn;
  if (LogEnabled(level)) LogMessage(ctx, verdict, action, latency_us, level);
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

// A socket this process listens on (libmilter's, found after smfi_opensocket).
struct Listener {
  sockaddr_storage address = {};
  socklen_t length = 0;
};

// libmilter keeps its listening socket to itself: find it among the process's sockets (gRPC
// clients listen on none). On a TCP one, TCP_NODELAY, which accepted connections inherit:
// the replies at end of message (headers added, then the verdict) go out as several small
// writes, and Nagle's algorithm would hold the last one back until the MTA acknowledged the
// first, about 40 ms with delayed acknowledgements.
std::vector<Listener> TuneListeners() {
  std::vector<Listener> out;
  const int max_fd = static_cast<int>(sysconf(_SC_OPEN_MAX));
  for (int fd = 0; fd < max_fd && fd < 65536; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
      continue;
    }
    Listener l;
    l.length = sizeof(l.address);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&l.address), &l.length) != 0) continue;
    if (l.address.ss_family == AF_INET || l.address.ss_family == AF_INET6) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    out.push_back(l);
  }
  return out;
}

// libmilter's listener notices a stop request only between two waits on its socket (5 s
// apart), and its stop call waits for that: a connection of our own ends the wait at once.
void WakeListener(const Listener& listener) {
  Listener target = listener;
  // A wildcard address is reached through loopback.
  if (target.address.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&target.address);
    if (in->sin_addr.s_addr == htonl(INADDR_ANY)) in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else if (target.address.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&target.address);
    if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) in6->sin6_addr = in6addr_loopback;
  }
  const int fd = socket(target.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  // Whether it connects does not matter: the listener may be gone already.
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&target.address), target.length);
  close(fd);
}

// The milter's sandbox for PDF, DOCX and ODT attachments: a pool of converter workers, or
// this process when the policy says so.
SandboxConverter MakeSandbox(MilterState* state) {
  const MilterPolicy& policy = state->options.policy;
  if (policy.convert_in_process) {
    return [](std::string_view input, DocumentFormat format, const ConvertLimits& limits,
              const ConvertOptions& options) {
      return ConvertInProcess(input, format, limits, options);
    };
  }
  state->pool = std::make_unique<ConvertWorkerPool>(
      ConvertWorkerPool::Options{.max_workers = policy.convert_workers, .max_uses = 256});
  ConvertWorkerPool* pool = state->pool.get();
  return [pool](std::string_view input, DocumentFormat format, const ConvertLimits& limits,
                const ConvertOptions& options) {
    return pool->Convert(input, format, limits, options);
  };
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
  if (options.local.data_dir.empty()) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options.client);
    if (!client.ok()) return client.status();
    state->client = *std::move(client);
    state->streams = std::make_unique<CheckStreamPool>(
        state->client.get(), std::max<size_t>(options.check_streams, 1));
  } else {
    absl::StatusOr<std::unique_ptr<LocalIndex>> local = LocalIndex::Open(options.local);
    if (!local.ok()) return local.status();
    state->local = *std::move(local);
  }
  state->sandbox = MakeSandbox(state);
  g_state = state;

  std::string listen = options.listen;
  std::string name = "cops-milter";
  struct smfiDesc desc = {};
  desc.xxfi_name = name.data();
  desc.xxfi_version = SMFI_VERSION;
  desc.xxfi_flags = kActions;
  desc.xxfi_negotiate = OnNegotiate;
  desc.xxfi_connect = OnConnect;
  desc.xxfi_envfrom = OnEnvelopeFrom;
  desc.xxfi_envrcpt = OnEnvelopeRecipient;
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
  const std::vector<Listener> listeners = TuneListeners();
  std::unique_ptr<MilterMetrics> metrics;
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MilterMetrics>> started =
        MilterMetrics::Start(options.metrics_listen, &state->counters, [state] {
          absl::MutexLock lock(&state->mu);
          return state->checking;
        });
    if (!started.ok()) return started.status();
    metrics = *std::move(started);
    LogEvent(LogLevel::kInfo, "milter_metrics",
             {{"listen", options.metrics_listen}, {"port", std::to_string(metrics->port())}});
  }
  std::vector<LogField> listening = {{"listen", listen}};
  if (state->local != nullptr) {
    listening.emplace_back("index", options.local.data_dir);
    listening.emplace_back("documents", std::to_string(state->local->documents()));
    listening.emplace_back("key_id", state->local->params().key_id);
  } else {
    listening.emplace_back("server", options.client.target);
  }
  listening.emplace_back("action", std::string(MilterActionName(options.policy.action)));
  listening.emplace_back("on_failure", std::string(FailureActionName(options.policy.on_failure)));
  LogEvent(LogLevel::kInfo, "milter_listening", listening);

  // Logs the counters every stats_interval_s, reopens the local index every reopen_s and,
  // once libmilter has been asked to stop (SIGTERM, SIGINT, SIGHUP), wakes its listener
  // until smfi_main returns.
  absl::Notification stopped;
  std::thread watcher([&stopped, &listeners, state, interval = options.policy.stats_interval_s,
                       reopen = state->local != nullptr ? options.reopen_s : 0] {
    absl::Time next_stats = absl::Now() + absl::Seconds(interval);
    absl::Time next_reopen = absl::Now() + absl::Seconds(reopen);
    while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (mi_stop() != 0) {
        for (const Listener& l : listeners) WakeListener(l);
        continue;
      }
      if (interval > 0 && absl::Now() >= next_stats) {
        LogStats("milter_stats");
        next_stats += absl::Seconds(interval);
      }
      if (reopen > 0 && absl::Now() >= next_reopen) {
        if (absl::Status s = state->local->Reopen([] { return mi_stop() != 0; }); !s.ok()) {
          LogEvent(LogLevel::kWarn, "milter_reopen_failed", {{"error", s.ToString()}});
        }
        next_reopen = absl::Now() + absl::Seconds(reopen);
      }
    }
  });
  const int rc = smfi_main();
  stopped.Notify();
  watcher.join();
  // Messages being checked get a short while to hear their verdicts; connections libmilter
  // still serves end with the process (the MTA applies milter_default_action to them).
  {
    absl::MutexLock lock(&state->mu);
    auto idle = [state]() ABSL_SHARED_LOCKS_REQUIRED(state->mu) { return state->checking == 0; };
    state->mu.AwaitWithTimeout(absl::Condition(&idle), kStopDrain);
  }
  LogStats("milter_stopped");
  if (rc == MI_FAILURE) return absl::InternalError("libmilter's main loop failed");
  return absl::OkStatus();
}

}  // namespace cops
