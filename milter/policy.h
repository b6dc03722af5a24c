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
//   "max_parts"         at most this many texts checked per message (body + attachments)  [32]
//   "convert_in_process" parse messages with attachments in the milter process too, instead
//                       of in the sandboxed converter worker (one process per message):
//                       faster, but a parser crash on a hostile attachment then takes the
//                       milter down (and milter_default_action applies to every open
//                       connection). Messages without attachments are always parsed in
//                       process (gmime, text and HTML converters; fuzzed)  [false]
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
  bool convert_in_process = false;
  uint32_t max_matches_header = 10;
  uint32_t stats_interval_s = 60;

  // The action for a violation found in `collection`.
  MilterAction ActionFor(const std::string& collection) const;
  // INVALID_ARGUMENT naming the field: threshold outside (0, 1], timeout 0, a reply code
  // that is not 5xx, a status that does not start with "5.", max_parts 0.
  absl::Status Validate() const;
};

// Applies the JSON object `json` (see above) over `policy`. INVALID_ARGUMENT naming the key
// for unknown keys, wrong types and bad values.
absl::Status ApplyPolicyJson(std::string_view json, MilterPolicy* policy);
// Reads FILE and applies it; NOT_FOUND when it cannot be read.
absl::Status ApplyPolicyFile(const std::string& path, MilterPolicy* policy);

}  // namespace cops

#endif  // COPS_MILTER_POLICY_H_
