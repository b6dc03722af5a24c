#ifndef COPS_MILTER_POLICY_H_
#define COPS_MILTER_POLICY_H_

// What cops-milter does with a message, read from its configuration.
//
// Config file (--config FILE): one JSON object; every key is optional and command-line flags
// win over it. Keys (defaults in brackets):
//   "action"            "headers" | "quarantine" | "reject"   what a violation leads to [headers]
//   "threshold"         match-ratio threshold sent with each check, in (0, 1]  [server's, 0.08]
//   "collections"       ["name", ...] collections to check against  [every one the key may use]
//   "collection_actions" {"name": "reject", ...} the action for violations of that collection;
//                       the strongest action among a message's violating matches wins
//   "timeout_ms"        deadline of the whole check of one message (all its parts)  [2000]
//   "on_failure"        "accept" (fail open) | "tempfail" (fail closed, 4xx: the sender
//                       retries) | "reject" (5xx): what happens to a message that could not be
//                       checked (copsd down or slow, message too large); Postfix's
//                       milter_default_action has the same three meanings  [accept]
//   "reject_code" "reject_status" "reject_text"  the SMTP reply of a rejection
//                       ["550", "5.7.1", "Message contains registered confidential text"]
//   "quarantine_reason" the reason Postfix records with a held message
//                       ["COPS: registered confidential text"]
//   "max_message_bytes" larger messages are not checked (on_failure applies)  [32 MiB]
//   "max_parts"         at most this many texts checked per message (body + attachments);
//                       a message with more is "unchecked" (on_failure applies) unless a
//                       violation is found among the first max_parts  [32]
//   "domains"           {"DOMAIN": {"action": .., "threshold": .., "collections": [..]}, ...}
//                       per-recipient-domain policy: a message to a recipient in DOMAIN (a key
//                       ".example.com" matches every subdomain of example.com; an exact key
//                       wins over the longest such suffix) is checked with that entry's
//                       values, each key optional (unset: the message-wide value above).
//                       A message to recipients under several entries (or some under none) is
//                       checked once under each distinct set, in one batch, and the strongest
//                       resulting action applies  [none]
//   "convert_workers"   converter worker processes kept for PDF, DOCX and ODT attachments
//                       (convert/worker_pool.h); the rest of a message (MIME, text and HTML
//                       parts) is parsed in the milter process: gmime and those converters
//                       are fuzzed (fuzz/milter_fuzzer.cc)  [2]
//   "convert_in_process" parse PDF, DOCX and ODT attachments in the milter process too: no
//                       worker round trip, but a parser crash on a hostile attachment then
//                       takes the milter down (and milter_default_action applies to every
//                       open connection)  [false]
//   "max_matches_header" document ids listed in X-COPS-Matches  [10]
//   "stats_interval_s"  seconds between "milter_stats" counter lines, 0 = only at exit  [60]
//
// Thread-safety: a value type; read-only after start-up.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace cops {

// Ordered by strength: the strongest action of a message's violations wins.
enum class MilterAction { kHeaders = 0, kQuarantine = 1, kReject = 2 };
// What a message that could not be checked gets.
enum class FailureAction { kAccept, kTempfail, kReject };

std::string_view MilterActionName(MilterAction action);  // "headers", "quarantine", "reject"
absl::StatusOr<MilterAction> ParseMilterAction(std::string_view name);
std::string_view FailureActionName(FailureAction action);  // "accept", "tempfail", "reject"
absl::StatusOr<FailureAction> ParseFailureAction(std::string_view name);

// A "domains" entry: what messages to that recipient domain are checked with. Unset fields
// take the message-wide values of the MilterPolicy.
struct DomainPolicy {
  std::optional<MilterAction> action;
  std::optional<double> threshold;
  std::optional<std::vector<std::string>> collections;
};

// The rules one check of a message runs under: the message-wide values, or a "domains"
// entry's applied over them.
struct CheckRules {
  std::string domain;  // the "domains" key that chose them, "" for the message-wide values
  MilterAction action = MilterAction::kHeaders;
  std::optional<double> threshold;
  std::vector<std::string> collections;

  bool operator==(const CheckRules&) const = default;
};

struct MilterPolicy {
  MilterAction action = MilterAction::kHeaders;
  std::optional<double> threshold;  // unset: the server's default
  std::vector<std::string> collections;
  std::map<std::string, MilterAction> collection_actions;
  uint32_t timeout_ms = 2000;
  FailureAction on_failure = FailureAction::kAccept;
  std::string reject_code = "550";
  std::string reject_status = "5.7.1";
  std::string reject_text = "Message contains registered confidential text";
  std::string quarantine_reason = "COPS: registered confidential text";
  uint64_t max_message_bytes = 32ull << 20;
  uint32_t max_parts = 32;
  std::map<std::string, DomainPolicy> domains;  // keys lowercase
  uint32_t convert_workers = 2;
  bool convert_in_process = false;
  uint32_t max_matches_header = 10;
  uint32_t stats_interval_s = 60;

  // The message-wide rules (no "domains" entry).
  CheckRules Defaults() const;
  // The distinct rules a message to `recipients` (envelope addresses, "<user@domain>" or
  // bare, any case) is checked under: one per "domains" entry some recipient falls under,
  // then the message-wide rules when some recipient (or the empty list) falls under none.
  std::vector<CheckRules> RulesFor(const std::vector<std::string>& recipients) const;
  // The action for a violation found in `collection` under `rules`: collection_actions when
  // it names the collection, else rules.action.
  MilterAction ActionFor(const CheckRules& rules, const std::string& collection) const;
  // INVALID_ARGUMENT naming the field: threshold (also a domain's) outside (0, 1], timeout 0,
  // a reply code that is not 5xx, a status that does not start with "5.", max_parts 0,
  // convert_workers 0, an empty domain.
  absl::Status Validate() const;

 private:
  // The "domains" key for `domain` (lowercase): the exact key, else the longest ".suffix"
  // key; nullptr for none.
  const std::string* DomainKeyFor(std::string_view domain) const;
};

// The lowercase domain of an envelope address ("<user@Example.COM>" -> "example.com"); "" for
// an address without one.
std::string RecipientDomain(std::string_view address);

// Applies the JSON object `json` (see above) over `policy`. INVALID_ARGUMENT naming the key
// for unknown keys, wrong types and bad values.
absl::Status ApplyPolicyJson(std::string_view json, MilterPolicy* policy);
// Reads FILE and applies it; NOT_FOUND when it cannot be read.
absl::Status ApplyPolicyFile(const std::string& path, MilterPolicy* policy);

}  // namespace cops

#endif  // COPS_MILTER_POLICY_H_
