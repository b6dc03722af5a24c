#ifndef COPS_PROTOCOL_CHECK_REPLY_H_
#define COPS_PROTOCOL_CHECK_REPLY_H_

// A check as the protocol carries it (proto/cops.proto): the request's options in, the
// engine's result out, and the merge of the partitions' replies a router answers with.
// Every field of CheckDocumentReply is filled here (FillCheckReply) and has its merge rule
// here (CheckReplyFieldMerges), so a new reply field is written in this one file.
//
// Thread-safety: plain functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/match.h"
#include "core/params.h"
#include "engine/copy_detector.h"
#include "proto/cops.pb.h"

namespace cops {

// Matches a check reports when the request sets no max_results.
inline constexpr uint32_t kDefaultMaxResults = 20;

// The request's decision options with defaults applied (see CheckOptions in cops.proto);
// `heavy_revisions` is the server's default for a request that leaves heavy_revisions unset
// (CopyDetectorOptions::heavy_revisions). INVALID_ARGUMENT for an unknown decision function;
// ranges are checked by CheckOptions::Validate().
absl::StatusOr<CheckOptions> CheckOptionsFromProto(const v1::CheckOptions& options,
                                                   bool heavy_revisions);

// The check `request` asks for, as sent: its content (a view into `request`, which must
// outlive the result), format, decision options (`heavy_revisions` as above), sampling and
// exclusions. The collections searched, the policy's floors and the cancellation are the
// caller's to add. INVALID_ARGUMENT for an unknown format or decision function.
absl::StatusOr<CheckRequestInfo> CheckRequestFromProto(const v1::CheckDocumentRequest& request,
                                                       bool heavy_revisions);

// The reply of the check `info` (the request's options `asked`) whose result is `result`,
// under the index's `params`.
void FillCheckReply(const CheckResult& result, const CheckRequestInfo& info,
                    const v1::CheckOptions& asked, const ChunkingParams& params,
                    v1::CheckDocumentReply* reply);

// A CheckStream message's reply to a check that failed with `status`: only its request id
// and the error.
void FillCheckError(const absl::Status& status, const std::string& request_id,
                    v1::CheckDocumentReply* reply);

// How MergeCheckReplies makes each field of the merged CheckDocumentReply from the
// partitions' replies. Every field of the message has a rule: a field without one is left
// out of the merged reply (tests/protocol/check_reply_test.cc fails on it), never passed on by
// accident.
enum class ReplyFieldMerge {
  kFromFirst,    // a figure of the test document or the check's parameters: the same on
                 // every partition; the first reply's
  kAny,          // bool: true when any partition's is
  kAll,          // bool: true when every partition's is
  kMax,          // number: the largest (an error bound: the most cautious)
  kMatches,      // united, ordered as one node orders them, cut at max_results
  kExcluded,     // passages united, each once, in text order
  kSetByRouter,  // not a replica's: request_id, partial, missing_partitions, the stream's
                 // per-message error
};
// The rule of each field of v1::CheckDocumentReply, by field name.
const std::map<std::string, ReplyFieldMerge>& CheckReplyFieldMerges();

// The reply of a check over all partitions, from `replies[p]`, partition p's reply
// (std::nullopt: no replica of p answered), as one node holding every partition's documents
// answers: matches ordered as the detector orders them (templates last, ratio descending,
// then id) and cut at `max_results` (0 = all); violation when any partition found one;
// excluded passages united. partial and missing_partitions name the partitions without a
// reply. REQUIRES: at least one reply.
v1::CheckDocumentReply MergeCheckReplies(
    const std::vector<std::optional<v1::CheckDocumentReply>>& replies, uint32_t max_results);

}  // namespace cops

#endif  // COPS_PROTOCOL_CHECK_REPLY_H_
