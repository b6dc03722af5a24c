#include "http/webhooks.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <mutex>
#include <utility>

#include "core/status_macros.h"
#include "curl/curl.h"
#include "logging/log_event.h"
#include "nlohmann/json.hpp"
#include "storage/principal_store.h"

namespace cops {
namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "80" -> 80; 0 when it is no port number.
int ParsePort(const std::string& text) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  const int port = std::stoi(text);
  return port <= 65535 ? port : 0;
}

// The numeric form inet_ntop gives `host` when it is an IP literal, else "".
std::string NormalizedAddress(const std::string& host) {
  char text[INET6_ADDRSTRLEN] = {};
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return inet_ntop(AF_INET, &v4, text, sizeof(text)) != nullptr ? text : "";
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return inet_ntop(AF_INET6, &v6, text, sizeof(text)) != nullptr ? text : "";
  }
  return "";
}

struct HostPort {
  std::string host;  // lower case, without brackets or a trailing dot
  int port = 0;      // 0 = none given
};

// HOST, HOST:PORT, [V6], [V6]:PORT or a bare IPv6 address.
absl::StatusOr<HostPort> SplitAuthority(const std::string& text, const std::string& what) {
  HostPort out;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return absl::InvalidArgumentError(what + ": unclosed '['");
    out.host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return absl::InvalidArgumentError(what + ": junk after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) return absl::InvalidArgumentError(what + ": empty port");
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const size_t colon = text.find(':');
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (port_text.empty()) return absl::InvalidArgumentError(what + ": empty port");
  } else {
    out.host = text;
  }
  out.host = Lower(out.host);
  if (out.host.size() > 1 && out.host.back() == '.') out.host.pop_back();
  if (out.host.empty()) return absl::InvalidArgumentError(what + ": no host");
  const bool v6 = out.host.find(':') != std::string::npos;
  if (v6 ? NormalizedAddress(out.host).empty()
         : !std::all_of(out.host.begin(), out.host.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                    c == '_' || c == '*';
           })) {
    return absl::InvalidArgumentError(what + ": malformed host '" + out.host + "'");
  }
  if (!port_text.empty()) {
    out.port = ParsePort(port_text);
    if (out.port == 0) return absl::InvalidArgumentError(what + ": bad port '" + port_text + "'");
  }
  return out;
}

struct AllowEntry {
  std::string host;     // "*" = any
  int port = 0;         // 0 = any
  std::string address;  // the host's numeric form when it is an IP literal
};

absl::StatusOr<std::vector<AllowEntry>> ParseAllowList(const std::vector<std::string>& allow) {
  std::vector<AllowEntry> out;
  for (const std::string& entry : allow) {
    const std::string what = "--webhook-allow '" + entry + "'";
    absl::StatusOr<HostPort> hp = SplitAuthority(entry, what);
    if (!hp.ok()) return hp.status();
    if (hp->host.find('*') != std::string::npos && hp->host != "*") {
      return absl::InvalidArgumentError(what + ": '*' stands alone (any host), not in a name");
    }
    out.push_back(AllowEntry{hp->host, hp->port, NormalizedAddress(hp->host)});
  }
  return out;
}

// Network and prefix length checks over an address's bytes.
bool InPrefix(const unsigned char* addr, std::initializer_list<unsigned char> prefix, int bits) {
  const auto* p = prefix.begin();
  for (int i = 0; i < bits; i += 8, ++p) {
    const int take = std::min(8, bits - i);
    const auto mask = static_cast<unsigned char>(0xFF << (8 - take));
    if ((addr[i / 8] & mask) != (*p & mask)) return false;
  }
  return true;
}

std::string KindOfV4(const unsigned char* a) {
  struct Range {
    std::initializer_list<unsigned char> prefix;
    int bits;
    const char* kind;
  };
  static const Range kRanges[] = {
      {{0}, 8, "this-network (0.0.0.0/8)"},
      {{10}, 8, "private"},
      {{100, 64}, 10, "shared (carrier-grade NAT)"},
      {{127}, 8, "loopback"},
      {{169, 254}, 16, "link-local"},
      {{172, 16}, 12, "private"},
      {{192, 0, 0}, 24, "reserved (IETF protocol assignments)"},
      {{192, 0, 2}, 24, "documentation"},
      {{192, 168}, 16, "private"},
      {{198, 18}, 15, "benchmarking"},
      {{198, 51, 100}, 24, "documentation"},
      {{203, 0, 113}, 24, "documentation"},
      {{224}, 4, "multicast"},
      {{240}, 4, "reserved"},
  };
  for (const Range& r : kRanges) {
    if (InPrefix(a, r.prefix, r.bits)) return r.kind;
  }
  return "";
}

std::string KindOfV6(const unsigned char* a) {
  static const unsigned char kZero[16] = {};
  if (std::equal(a, a + 15, kZero)) {
    return a[15] == 0 ? "this-network (::)" : a[15] == 1 ? "loopback" : "reserved (IPv4-compatible)";
  }
  // Addresses that carry an IPv4 address: that one decides.
  if (InPrefix(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF}, 96) ||
      InPrefix(a, {0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0}, 96)) {
    return KindOfV4(a + 12);
  }
  if (InPrefix(a, {0x20, 0x02}, 16)) return KindOfV4(a + 2);  // 6to4
  if (InPrefix(a, {0xFC}, 7)) return "private (unique local)";
  if (InPrefix(a, {0xFE, 0x80}, 10)) return "link-local";
  if (InPrefix(a, {0xFE, 0xC0}, 10)) return "site-local";
  if (InPrefix(a, {0xFF}, 8)) return "multicast";
  if (InPrefix(a, {0x20, 0x01, 0x0D, 0xB8}, 32)) return "documentation";
  if (InPrefix(a, {0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64)) return "reserved (discard)";
  return "";
}

// A callback URL, split: http(s)://HOST[:PORT][/PATH][?QUERY] (a fragment is dropped).
struct ParsedUrl {
  std::string scheme;
  HostPort authority;
  std::string path;
};

absl::StatusOr<ParsedUrl> ParseUrl(const std::string& url) {
  const auto bad = [&url](const std::string& why) {
    return absl::InvalidArgumentError("field 'callback_url': '" + url.substr(0, 200) + "' " + why);
  };
  if (url.size() > 2048) return bad("is longer than 2048 bytes");
  if (!std::all_of(url.begin(), url.end(), [](char c) { return c > ' ' && c < 127; })) {
    return bad("holds spaces or control characters");
  }
  ParsedUrl out;
  const size_t sep = url.find("://");
  if (sep == std::string::npos) return bad("is not an absolute http:// or https:// URL");
  out.scheme = Lower(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") {
    return bad("has scheme '" + out.scheme + "': only http and https are called");
  }
  std::string rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find('#'));
  const size_t end = rest.find_first_of("/?");
  const std::string authority = rest.substr(0, end);
  out.path = end == std::string::npos ? "/" : rest.substr(end);
  if (out.path.front() == '?') out.path = "/" + out.path;
  if (authority.find('@') != std::string::npos) return bad("carries user information ('@')");
  absl::StatusOr<HostPort> hp = SplitAuthority(authority, "field 'callback_url'");
  if (!hp.ok()) return hp.status();
  if (hp->host.find('*') != std::string::npos) return bad("has a malformed host");
  out.authority = *hp;
  if (out.authority.port == 0) out.authority.port = out.scheme == "https" ? 443 : 80;
  return out;
}

}  // namespace

std::string WebhookSignature(const std::string& secret, int64_t unix_seconds,
                             const std::string& body) {
  const std::string signed_text = std::to_string(unix_seconds) + "." + body;
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac.data(),
       &mac_size);
  return "t=" + std::to_string(unix_seconds) + ",v1=" + Hex(mac.data(), mac_size);
}

std::string SpecialAddressKind(const std::string& address) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    return KindOfV4(reinterpret_cast<const unsigned char*>(&v4.s_addr));
  }
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return KindOfV6(v6.s6_addr);
  return "unparsable";
}

Webhooks::Webhooks(WebhookOptions options) : options_(std::move(options)) {
  // Once per process, before any worker can make an attempt (curl_global_init is not
  // thread-safe with every libcurl build).
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  for (uint32_t i = 0; i < std::max<uint32_t>(options_.workers, 1); ++i) {
    workers_.emplace_back([this] { Run(); });
  }
}

Webhooks::~Webhooks() { Shutdown(); }

void Webhooks::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    schedule_.clear();
    changed_.SignalAll();
  }
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

absl::Status Webhooks::CheckAllowList(const std::vector<std::string>& allow) {
  return ParseAllowList(allow).status();
}

absl::StatusOr<CallbackTarget> Webhooks::Resolve(const std::string& url) const {
  absl::StatusOr<ParsedUrl> parsed = ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::vector<AllowEntry>> allow = ParseAllowList(options_.allow);
  if (!allow.ok()) return allow.status();
  const HostPort& target = parsed->authority;
  const std::string shown = target.host + ":" + std::to_string(target.port);
  const bool host_allowed = std::any_of(allow->begin(), allow->end(), [&](const AllowEntry& e) {
    return (e.host == "*" || e.host == target.host) && (e.port == 0 || e.port == target.port);
  });
  if (!host_allowed) {
    return absl::InvalidArgumentError("field 'callback_url': host " + shown +
                                      " is not on the webhook allow-list (copsd "
                                      "--webhook-allow HOST[:PORT])");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(target.host.c_str(), nullptr, &hints, &found); rc != 0) {
    return absl::UnavailableError("field 'callback_url': cannot resolve " + target.host + ": " +
                                  gai_strerror(rc));
  }
  std::vector<std::string> addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = a->ai_family == AF_INET
                          ? static_cast<const void*>(
                                &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(
                                &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
        inet_ntop(a->ai_family, raw, text, sizeof(text)) != nullptr &&
        std::find(addresses.begin(), addresses.end(), text) == addresses.end()) {
      addresses.emplace_back(text);
    }
  }
  freeaddrinfo(found);
  if (addresses.empty()) {
    return absl::UnavailableError("field 'callback_url': " + target.host + " has no address");
  }
  // Every address, not just the first: a name with one public and one internal address
  // would otherwise reach the internal one on another attempt.
  for (const std::string& address : addresses) {
    const std::string kind = SpecialAddressKind(address);
    if (kind.empty()) continue;
    const bool named = std::any_of(allow->begin(), allow->end(), [&](const AllowEntry& e) {
      return e.address == address && (e.port == 0 || e.port == target.port);
    });
    if (!named) {
      std::string why = "field 'callback_url': " + target.host + " is ";
      if (address != target.host) why += "resolved to " + address + ", ";
      why += "a " + kind + " address: not called unless allowed by address (copsd ";
      why += "--webhook-allow ";
      why += address.find(':') != std::string::npos ? "[" + address + "]" : address;
      why += ":" + std::to_string(target.port) + ")";
      return absl::InvalidArgumentError(why);
    }
  }
  return CallbackTarget{parsed->scheme, target.host, target.port, parsed->path,
                        addresses.front()};
}

absl::StatusOr<std::string> Webhooks::Register(const std::string& principal,
                                               const std::string& url) {
  if (!url.empty()) {
    absl::StatusOr<CallbackTarget> target = Resolve(url);
    if (!target.ok()) return target.status();
  }
  unsigned char bytes[32] = {};
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("no randomness for a webhook secret");
  }
  std::string secret = "whsec_" + Hex(bytes, sizeof(bytes));
  absl::MutexLock registering(&register_mu_);
  if (options_.store != nullptr) {
    COPS_RETURN_IF_ERROR(options_.store->PutWebhook(WebhookRecord{principal, url, secret}));
  }
  absl::MutexLock lock(&mu_);
  registrations_[principal] = Registration{url, secret};
  return secret;
}

absl::Status Webhooks::Load() {
  if (options_.store == nullptr) return absl::OkStatus();
  COPS_ASSIGN_OR_RETURN(std::vector<WebhookRecord> records, options_.store->ListWebhooks());
  COPS_ASSIGN_OR_RETURN(std::vector<std::string> stored, options_.store->ListWebhookDeliveries());
  absl::MutexLock registering(&register_mu_);
  mu_.Lock();
  for (WebhookRecord& r : records) {
    registrations_[r.principal] = Registration{std::move(r.url), std::move(r.secret)};
  }
  const int64_t now = NowMicros();
  for (const std::string& value : stored) {
    std::string job_id;
    absl::StatusOr<JobDeliveries> job = DecodeJob(value, &job_id);
    if (!job.ok()) {
      LogEvent(LogLevel::kWarn, "webhook_deliveries_unreadable",
               {{"job", job_id}, {"error", job.status().ToString()}});
      continue;
    }
    JobDeliveries& loaded = jobs_[job_id] = *std::move(job);
    for (size_t i = 0; i < loaded.deliveries.size(); ++i) {
      WebhookDelivery& d = loaded.deliveries[i];
      // 0: the attempt was in flight when copsd stopped.
      if (d.state == "pending") {
        ScheduleLocked(job_id, i, d.next_attempt_unix_micros == 0 ? now : d.next_attempt_unix_micros);
      }
    }
  }
  std::vector<StoreWrite> writes;
  for (std::string& id : ForgetOldLocked()) writes.push_back(StoreWrite{std::move(id), std::nullopt});
  StoreAndUnlock(writes);
  return absl::OkStatus();
}

std::optional<std::string> Webhooks::RegisteredUrl(const std::string& principal) const {
  absl::MutexLock lock(&mu_);
  auto it = registrations_.find(principal);
  if (it == registrations_.end()) return std::nullopt;
  return it->second.url;
}

absl::Status Webhooks::Unregister(const std::string& principal) {
  absl::MutexLock registering(&register_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (!registrations_.contains(principal)) {
      return absl::NotFoundError("no webhook is registered for this principal");
    }
  }
  if (options_.store != nullptr) COPS_RETURN_IF_ERROR(options_.store->DeleteWebhook(principal));
  absl::MutexLock lock(&mu_);
  registrations_.erase(principal);
  return absl::OkStatus();
}

void Webhooks::ScheduleLocked(const std::string& job_id, size_t index, int64_t at) {
  jobs_[job_id].deliveries[index].next_attempt_unix_micros = at;
  schedule_.emplace(at, Due{job_id, index});
  changed_.Signal();
}

std::vector<std::string> Webhooks::ForgetOldLocked() {
  const int64_t horizon =
      NowMicros() - std::chrono::duration_cast<std::chrono::microseconds>(options_.keep).count();
  // The jobs without a pending delivery, least recently changed first, and what all bodies hold.
  std::vector<std::pair<int64_t, const std::string*>> done;
  uint64_t bytes = 0;
  for (const auto& [id, job] : jobs_) {
    bytes += job.body.size();
    if (std::none_of(job.deliveries.begin(), job.deliveries.end(),
                     [](const WebhookDelivery& d) { return d.state == "pending"; })) {
      done.emplace_back(job.last_change_unix_micros, &id);
    }
  }
  std::sort(done.begin(), done.end());
  // The old ones, then the least recently changed while there are too many (room for one
  // more) or their bodies hold too much.
  std::vector<std::string> forgotten;
  for (const auto& [changed, id] : done) {
    if (changed > horizon && jobs_.size() < options_.max_jobs && bytes <= options_.max_bytes) {
      break;
    }
    auto it = jobs_.find(*id);
    bytes -= it->second.body.size();
    forgotten.push_back(*id);
    jobs_.erase(it);
  }
  return forgotten;
}

std::string Webhooks::EncodeJob(const std::string& job_id, const JobDeliveries& job) {
  nlohmann::json deliveries = nlohmann::json::array();
  for (const WebhookDelivery& d : job.deliveries) {
    nlohmann::json attempts = nlohmann::json::array();
    for (const WebhookAttempt& a : d.attempts) {
      attempts.push_back({{"t", a.unix_micros}, {"status", a.http_status}, {"error", a.error}});
    }
    deliveries.push_back({{"number", d.number},
                          {"url", d.url},
                          {"state", d.state},
                          {"next", d.next_attempt_unix_micros},
                          {"attempts", std::move(attempts)}});
  }
  return nlohmann::json{{"job", job_id},
                        {"owner", job.owner},
                        {"principal", job.principal},
                        {"body", job.body},
                        {"changed", job.last_change_unix_micros},
                        {"deliveries", std::move(deliveries)}}
      .dump();
}

absl::StatusOr<Webhooks::JobDeliveries> Webhooks::DecodeJob(const std::string& value,
                                                            std::string* job_id) {
  const nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::DataLossError("a webhook delivery record is not JSON");
  try {
    *job_id = j.at("job").get<std::string>();
    JobDeliveries job;
    job.owner = j.at("owner").get<std::string>();
    job.principal = j.at("principal").get<std::string>();
    job.body = j.at("body").get<std::string>();
    job.last_change_unix_micros = j.at("changed").get<int64_t>();
    for (const nlohmann::json& d : j.at("deliveries")) {
      WebhookDelivery delivery;
      delivery.number = d.at("number").get<uint32_t>();
      delivery.url = d.at("url").get<std::string>();
      delivery.state = d.at("state").get<std::string>();
      delivery.next_attempt_unix_micros = d.at("next").get<int64_t>();
      for (const nlohmann::json& a : d.at("attempts")) {
        delivery.attempts.push_back(WebhookAttempt{a.at("t").get<int64_t>(),
                                                   a.at("status").get<int>(),
                                                   a.at("error").get<std::string>()});
      }
      job.deliveries.push_back(std::move(delivery));
    }
    return job;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(std::string("a webhook delivery record lacks a field: ") +
                               e.what());
  }
}

Webhooks::StoreWrite Webhooks::SnapshotLocked(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return StoreWrite{job_id, std::nullopt};
  return StoreWrite{job_id, EncodeJob(job_id, it->second)};
}

void Webhooks::StoreAndUnlock(const std::vector<StoreWrite>& writes) {
  if (options_.store == nullptr || writes.empty()) {
    mu_.Unlock();
    return;
  }
  // Taken before mu_ is released: writes reach the store in the order of the changes.
  store_mu_.Lock();
  mu_.Unlock();
  for (const StoreWrite& w : writes) {
    const absl::Status s = w.value.has_value()
                               ? options_.store->PutWebhookDeliveries(w.job_id, *w.value)
                               : options_.store->DeleteWebhookDeliveries(w.job_id);
    if (!s.ok()) {
      LogEvent(LogLevel::kWarn, "webhook_deliveries_not_stored",
               {{"job", w.job_id}, {"error", s.ToString()}});
    }
  }
  store_mu_.Unlock();
}

void Webhooks::Deliver(const std::string& job_id, const std::string& owner,
                       const std::string& principal, const std::string& url,
                       const std::string& body) {
  mu_.Lock();
  if (stopping_) {
    mu_.Unlock();
    return;
  }
  std::vector<StoreWrite> writes;
  for (std::string& id : ForgetOldLocked()) writes.push_back(StoreWrite{std::move(id), std::nullopt});
  JobDeliveries& job = jobs_[job_id];
  job.owner = owner;
  job.principal = principal;
  job.body = body;
  job.last_change_unix_micros = NowMicros();
  WebhookDelivery d;
  d.number = static_cast<uint32_t>(job.deliveries.size() + 1);
  d.url = url;
  d.state = "pending";
  job.deliveries.push_back(std::move(d));
  ScheduleLocked(job_id, job.deliveries.size() - 1, NowMicros());
  writes.push_back(SnapshotLocked(job_id));
  StoreAndUnlock(writes);
}

absl::StatusOr<std::vector<WebhookDelivery>> Webhooks::Deliveries(const std::string& job_id,
                                                                  const std::string& owner) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.owner != owner) {
    return absl::NotFoundError("job " + job_id +
                               " has no webhook deliveries (no callback, not finished yet, or "
                               "expired)");
  }
  return it->second.deliveries;
}

absl::StatusOr<WebhookDelivery> Webhooks::Resend(const std::string& job_id,
                                                 const std::string& owner) {
  std::string principal, url, body;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end() || it->second.owner != owner) {
      return absl::NotFoundError("job " + job_id +
                                 " has no webhook delivery to resend (no callback, not finished "
                                 "yet, or expired)");
    }
    principal = it->second.principal;
    url = it->second.deliveries.back().url;
    body = it->second.body;
  }
  Deliver(job_id, owner, principal, url, body);
  absl::MutexLock lock(&mu_);
  return jobs_[job_id].deliveries.back();
}

namespace {

// What an attempt reads of an answer at most: its headers, and of its body (read only to
// let the receiver finish; the status decides).
constexpr size_t kMaxAnswerHeaderBytes = 64 << 10;
constexpr size_t kMaxAnswerBodyBytes = 64 << 10;

struct CurlEasyCloser {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct CurlListCloser {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// A part of the answer (its headers, or its body) as libcurl hands it over: counted, not
// kept, and the transfer stopped once it passes `limit`.
struct AnswerPart {
  explicit AnswerPart(size_t max) : limit(max) {}
  size_t limit;
  size_t bytes = 0;
  bool over = false;
};

size_t CountAnswerPart(char* /*data*/, size_t size, size_t n, void* part) {
  auto* p = static_cast<AnswerPart*>(part);
  p->bytes += size * n;
  if (p->bytes <= p->limit) return size * n;
  p->over = true;
  return 0;  // stops the transfer
}

}  // namespace

WebhookAttempt Webhooks::Attempt(const std::string& url, const std::string& secret,
                                 const std::string& body) const {
  WebhookAttempt attempt;
  attempt.unix_micros = NowMicros();
  if (secret.empty()) {
    attempt.error = "no signing secret: the principal's webhook was removed";
    return attempt;
  }
  absl::StatusOr<CallbackTarget> target = Resolve(url);
  if (!target.ok()) {
    attempt.error = std::string(target.status().message());
    return attempt;
  }
  std::unique_ptr<CURL, CurlEasyCloser> curl(curl_easy_init());
  if (curl == nullptr) {
    attempt.error = "no HTTP client (curl_easy_init failed)";
    return attempt;
  }
  const bool v6 = target->address.find(':') != std::string::npos;
  const bool host_v6 = target->host.find(':') != std::string::npos;
  const std::string host = host_v6 ? "[" + target->host + "]" : target->host;
  const std::string port = std::to_string(target->port);
  const std::string full_url = target->scheme + "://" + host + ":" + port + target->path;
  // The connection goes to the address just checked, whatever the name resolves to next (an
  // address in the URL is that address: nothing to resolve).
  std::unique_ptr<curl_slist, CurlListCloser> resolve;
  if (target->host != target->address) {
    resolve.reset(curl_slist_append(
        nullptr,
        (host + ":" + port + ":" + (v6 ? "[" + target->address + "]" : target->address)).c_str()));
  }
  std::unique_ptr<curl_slist, CurlListCloser> headers(curl_slist_append(
      nullptr,
      ("X-COPS-Signature: " + WebhookSignature(secret, attempt.unix_micros / 1000000, body))
          .c_str()));
  for (const char* h : {"Content-Type: application/json", "User-Agent: cops-webhook/1",
                        "Expect:"}) {  // "Expect:" sends the body without asking first
    headers.reset(curl_slist_append(headers.release(), h));
  }
  AnswerPart answer_headers(kMaxAnswerHeaderBytes), answer_body(kMaxAnswerBodyBytes);
  CURL* c = curl.get();
  const long timeout_ms = static_cast<long>(options_.attempt_timeout.count());
  curl_easy_setopt(c, CURLOPT_URL, full_url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_RESOLVE, resolve.get());
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // never through a proxy from the environment
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &CountAnswerPart);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &answer_headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &CountAnswerPart);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer_body);
  const CURLcode done = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (answer_headers.over) {
    attempt.error = "no answer: its headers over the limit of " +
                    std::to_string(kMaxAnswerHeaderBytes) + " bytes";
    return attempt;
  }
  if (done != CURLE_OK && !answer_body.over) {
    attempt.error = std::string("no answer: ") + curl_easy_strerror(done);
    return attempt;
  }
  attempt.http_status = static_cast<int>(status);
  if (status < 200 || status > 299) attempt.error = "answered HTTP " + std::to_string(status);
  return attempt;
}

void Webhooks::Run() {
  mu_.Lock();
  while (!stopping_) {
    if (schedule_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    const int64_t now = NowMicros();
    auto first = schedule_.begin();
    if (first->first > now) {
      changed_.WaitWithTimeout(&mu_, absl::Microseconds(first->first - now));
      continue;
    }
    const Due due = first->second;
    schedule_.erase(first);
    auto job = jobs_.find(due.job_id);
    if (job == jobs_.end() || due.index >= job->second.deliveries.size()) continue;
    WebhookDelivery& d = job->second.deliveries[due.index];
    d.next_attempt_unix_micros = 0;  // in flight
    const std::string url = d.url;
    const std::string body = job->second.body;
    auto reg = registrations_.find(job->second.principal);
    const std::string secret = reg == registrations_.end() ? "" : reg->second.secret;
    mu_.Unlock();
    WebhookAttempt attempt = Attempt(url, secret, body);
    mu_.Lock();
    job = jobs_.find(due.job_id);
    if (job == jobs_.end() || due.index >= job->second.deliveries.size()) continue;
    WebhookDelivery& done = job->second.deliveries[due.index];
    job->second.last_change_unix_micros = NowMicros();
    const bool delivered = attempt.error.empty();
    done.attempts.push_back(std::move(attempt));
    if (delivered) {
      done.state = "delivered";
    } else if (done.attempts.size() >= options_.max_attempts) {
      done.state = "failed";
    } else {
      // Also while stopping: the stored delivery stays pending, and the next start resumes it.
      const int64_t backoff =
          std::chrono::duration_cast<std::chrono::microseconds>(options_.first_backoff).count()
          << std::min<size_t>(done.attempts.size() - 1, 30);
      ScheduleLocked(due.job_id, due.index, NowMicros() + backoff);
    }
    StoreAndUnlock({SnapshotLocked(due.job_id)});
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace cops
