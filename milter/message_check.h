#ifndef COPS_MILTER_MESSAGE_CHECK_H_
#define COPS_MILTER_MESSAGE_CHECK_H_

// The message path of cops-milter, free of the milter protocol: one RFC 5322 message is
// parsed once, in process, by the email converter (ConvertEmailInProcess, convert/converter.h:
// headers, MIME parts, text and HTML parts and attachments), with its PDF, DOCX and ODT
// attachments converted by a sandbox (a pool of converter worker processes in cops-milter);
// its texts (the subject and body, then each document attachment) are checked against copsd
// in one batch, under each set of rules its recipients' domains call for, and the replies are
// turned into a verdict and the action the policy asks for.
//
// Thread-safety: the functions are thread-safe; a PartChecker is used by one thread at a time.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "convert/converter.h"
#include "milter/policy.h"
#include "proto/cops.pb.h"

namespace cops {

// One text of a message to check.
struct MessageText {
  std::string name;  // "message" (subject and body), an attachment's file name, or "raw"
  std::string text;  // UTF-8
};

// Parses `message` and returns its texts: first "message" (subject and body parts), then one
// per converted document attachment, at most policy.max_parts in all; texts with nothing but
// white space are left out. The texts past max_parts are counted in `*left_out` (when not
// null): a message with any is not fully checked. PDF, DOCX and ODT attachments go to
// `sandbox`. A message the email converter cannot read (no header block) is checked as it
// is, as one text "raw", so malformed mail cannot slip through unread. RESOURCE_EXHAUSTED
// when the message is larger than policy.max_message_bytes or parsing exceeds the time
// budget; INTERNAL when the sandbox cannot run.
absl::StatusOr<std::vector<MessageText>> ExtractMessageTexts(std::string_view message,
                                                             const MilterPolicy& policy,
                                                             std::chrono::milliseconds budget,
                                                             const SandboxConverter& sandbox,
                                                             uint32_t* left_out = nullptr);

// Sends a batch of check requests to copsd and returns one reply per request, in order
// (client/check_stream.h in the milter; a fake in tests).
class PartChecker {
 public:
  virtual ~PartChecker() = default;
  virtual absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) = 0;
};

// A registered document a message violates.
struct ViolatedDocument {
  uint64_t doc_id = 0;
  double ratio = 0;  // the best ratio over the message's texts
  std::string collection;
  std::string part;  // the text it was found in ("message" or an attachment name)
};

struct MessageVerdict {
  enum class Outcome { kClean, kViolation, kUnchecked };
  Outcome outcome = Outcome::kClean;
  std::vector<ViolatedDocument> violations;      // ratio descending, then doc_id; one per doc
  MilterAction action = MilterAction::kHeaders;  // for kViolation: the strongest that applies
  absl::Status error;  // for kUnchecked: why (copsd down or slow, too large, ...)
  uint32_t parts = 0;  // texts checked
  std::vector<std::string> domains;  // the "domains" entries checked under (CheckRules::domain)

  // X-COPS-Result: "violation (N documents, best ratio R)" for kViolation, "unchecked
  // (<why>)" for kUnchecked (the milter adds it when on_failure lets the message through),
  // else "clean".
  std::string ResultHeader() const;
  // X-COPS-Matches: "doc=ID ratio=R collection=C part=P" for at most `max` documents,
  // separated by ";" and folded one per line; never registered text. "" when clean.
  std::string MatchesHeader(uint32_t max) const;
};

// The requests for `texts` under `rules` (threshold, collections; spans are not asked for:
// the milter reports documents, never text).
std::vector<v1::CheckDocumentRequest> MakeCheckRequests(const std::vector<MessageText>& texts,
                                                        const CheckRules& rules);

// Combines the replies to MakeCheckRequests(texts, rules[0]), then (texts, rules[1]), ...,
// concatenated, into a verdict. A violation anywhere wins, with the strongest action of its
// matches (policy.ActionFor under the rules it was found with); otherwise a reply carrying an
// error, or a router's partial reply (some partitions did not answer: UNAVAILABLE naming
// them), makes the message kUnchecked: "no violation" from part of the index is no answer.
MessageVerdict DecideVerdict(const std::vector<MessageText>& texts,
                             const std::vector<v1::CheckDocumentReply>& replies,
                             const MilterPolicy& policy, const std::vector<CheckRules>& rules);

// The whole path: extract, check under each of policy.RulesFor(recipients) in one batch,
// within policy.timeout_ms (parsing included), decide. Failures (parse limits, copsd errors,
// timeouts, partial replies) and texts left out past max_parts (RESOURCE_EXHAUSTED) give
// kUnchecked with the error unless a violation was found; the caller applies
// policy.on_failure.
MessageVerdict CheckMessage(std::string_view message, const MilterPolicy& policy,
                            const std::vector<std::string>& recipients,
                            const SandboxConverter& sandbox, PartChecker* checker);

}  // namespace cops

#endif  // COPS_MILTER_MESSAGE_CHECK_H_
