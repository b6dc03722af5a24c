// The check's reply as the protocol carries it: the merge of partitions' replies a router
// answers with, and the rule every field of CheckDocumentReply must have.

#include "protocol/check_reply.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

v1::Match MatchOf(uint64_t id, double ratio, bool from_template = false) {
  v1::Match m;
  m.set_doc_id(id);
  m.set_ratio(ratio);
  m.set_from_template(from_template);
  return m;
}

v1::CheckDocumentReply ReplyOf(std::vector<v1::Match> matches, bool violation) {
  v1::CheckDocumentReply r;
  r.set_total_chunks(40);
  r.set_considered_chunks(38);
  r.set_format("text");
  r.set_verified(true);
  r.set_violation(violation);
  for (v1::Match& m : matches) *r.add_matches() = std::move(m);
  return r;
}

std::vector<uint64_t> Ids(const v1::CheckDocumentReply& r) {
  std::vector<uint64_t> ids;
  for (const v1::Match& m : r.matches()) ids.push_back(m.doc_id());
  return ids;
}

// CheckOptions.heavy_revisions asks for the heavy-revision rule at its measured share, or
// not; left unset, the server's default decides. The reply says which document it decided,
// the chain it found, and that it was looked for.
TEST(CheckReplyTest, HeavyRevisionsAreAskedForAndReported) {
  v1::CheckOptions asked;
  for (const bool server_default : {false, true}) {
    absl::StatusOr<CheckOptions> unsaid = CheckOptionsFromProto(asked, server_default);
    ASSERT_TRUE(unsaid.ok());
    EXPECT_EQ(unsaid->revision_share, server_default ? kHeavyRevisionShare : 0);
  }
  asked.set_heavy_revisions(false);
  absl::StatusOr<CheckOptions> off = CheckOptionsFromProto(asked, /*heavy_revisions=*/true);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->revision_share, 0);
  asked.set_heavy_revisions(true);
  absl::StatusOr<CheckOptions> on = CheckOptionsFromProto(asked, /*heavy_revisions=*/false);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->revision_share, kHeavyRevisionShare);

  CheckResult result;
  DocumentMatch revised;
  revised.doc_id = 4;
  revised.violation = true;
  revised.revision_violation = true;
  revised.revision_grams = 13;
  result.report.matches.push_back(revised);
  result.report.violation = true;
  result.records.resize(1);
  CheckRequestInfo info;
  info.options = *on;
  v1::CheckDocumentReply reply;
  FillCheckReply(result, info, asked, ChunkingParams{}, &reply);
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_TRUE(reply.matches(0).revision_violation());
  EXPECT_FALSE(reply.matches(0).chunk_violation());
  EXPECT_EQ(reply.matches(0).revision_grams(), 13u);
  EXPECT_TRUE(reply.params().heavy_revisions());
  info.options = *off;
  FillCheckReply(CheckResult{}, info, v1::CheckOptions{}, ChunkingParams{}, &reply);
  EXPECT_FALSE(reply.params().heavy_revisions());
}

TEST(MergeCheckRepliesTest, OrdersAsOneNodeAndCutsAtMaxResults) {
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      ReplyOf({MatchOf(7, 0.5), MatchOf(3, 0.2), MatchOf(9, 0.9, /*from_template=*/true)}, true),
      ReplyOf({MatchOf(4, 0.5), MatchOf(12, 0.7)}, false)};
  const v1::CheckDocumentReply merged = MergeCheckReplies(replies, 0);
  // Ratio descending, equal ratios by id, templates last whatever their ratio.
  EXPECT_EQ(Ids(merged), (std::vector<uint64_t>{12, 4, 7, 3, 9}));
  EXPECT_TRUE(merged.violation());
  EXPECT_FALSE(merged.partial());
  EXPECT_EQ(merged.total_chunks(), 40u);
  EXPECT_EQ(merged.considered_chunks(), 38u);
  EXPECT_EQ(Ids(MergeCheckReplies(replies, 2)), (std::vector<uint64_t>{12, 4}));
}

TEST(MergeCheckRepliesTest, ViolationCutOffOnAPartitionStillCounts) {
  // Partition 0 found a violation that its own max_results cut off: no match is shown, the
  // flag stays (as one node's report keeps it).
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      ReplyOf({}, true), ReplyOf({MatchOf(2, 0.01)}, false)};
  EXPECT_TRUE(MergeCheckReplies(replies, 1).violation());
}

TEST(MergeCheckRepliesTest, StemPairViolationsSurviveTheCut) {
  // Partition 1's document shares no passage (ratio 0) but is a violation by its content-stem
  // pairs: the merged report that says "violation" names it, ahead of higher ratios below the
  // decision, and equal ratios are ordered by stem-pair share as one node orders them.
  v1::Match by_pairs = MatchOf(8, 0);
  by_pairs.set_violation(true);
  by_pairs.set_stem_pair_violation(true);
  by_pairs.set_stem_pair_share(0.3);
  v1::Match weaker = MatchOf(2, 0);
  weaker.set_stem_pair_share(0.05);
  v1::CheckDocumentReply a = ReplyOf({MatchOf(5, 0.04), weaker}, false);
  v1::CheckDocumentReply b = ReplyOf({by_pairs}, true);
  a.set_stem_pairs(60);
  b.set_stem_pairs(60);
  a.set_stem_pairs_checked(true);
  b.set_stem_pairs_checked(true);
  const v1::CheckDocumentReply merged = MergeCheckReplies({a, b}, 1);
  EXPECT_TRUE(merged.violation());
  EXPECT_EQ(Ids(merged), (std::vector<uint64_t>{8}));
  EXPECT_TRUE(merged.matches(0).stem_pair_violation());
  EXPECT_EQ(merged.stem_pairs(), 60u);
  EXPECT_TRUE(merged.stem_pairs_checked());
  EXPECT_EQ(Ids(MergeCheckReplies({a, b}, 0)), (std::vector<uint64_t>{5, 8, 2}));
  // A partition whose index keeps no pairs: the evidence is not complete.
  b.set_stem_pairs_checked(false);
  EXPECT_FALSE(MergeCheckReplies({a, b}, 0).stem_pairs_checked());
}

TEST(MergeCheckRepliesTest, MissingPartitionsMakeThePartialFlag) {
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      std::nullopt, ReplyOf({MatchOf(5, 0.3)}, false), std::nullopt};
  const v1::CheckDocumentReply merged = MergeCheckReplies(replies, 20);
  EXPECT_TRUE(merged.partial());
  EXPECT_EQ(std::vector<uint32_t>(merged.missing_partitions().begin(),
                                  merged.missing_partitions().end()),
            (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(Ids(merged), (std::vector<uint64_t>{5}));
  EXPECT_FALSE(merged.violation());
}

TEST(MergeCheckRepliesTest, ExcludedPassagesAreUnitedOnce) {
  v1::CheckDocumentReply a = ReplyOf({}, false), b = ReplyOf({}, false);
  for (v1::CheckDocumentReply* r : {&a, &b}) {
    v1::ExcludedPassage* e = r->add_excluded();
    e->set_test_start(10);
    e->set_test_end(20);
    e->set_reason(v1::EXCLUSION_QUOTE);
  }
  v1::ExcludedPassage* t = b.add_excluded();
  t->set_test_start(0);
  t->set_test_end(5);
  t->set_reason(v1::EXCLUSION_TEMPLATE);
  const v1::CheckDocumentReply merged = MergeCheckReplies({a, b}, 20);
  ASSERT_EQ(merged.excluded_size(), 2);
  EXPECT_EQ(merged.excluded(0).test_start(), 0u);
  EXPECT_EQ(merged.excluded(1).reason(), v1::EXCLUSION_QUOTE);
}

// Every field of CheckDocumentReply is merged on purpose: a field added to the message
// without a rule in CheckReplyFieldMerges fails here (and is left out of routed replies).
TEST(MergeCheckRepliesTest, EveryReplyFieldHasAMergeRule) {
  const google::protobuf::Descriptor* reply = v1::CheckDocumentReply::descriptor();
  const std::map<std::string, ReplyFieldMerge>& rules = CheckReplyFieldMerges();
  for (int i = 0; i < reply->field_count(); ++i) {
    EXPECT_EQ(rules.count(reply->field(i)->name()), 1u)
        << "CheckDocumentReply." << reply->field(i)->name()
        << " has no merge rule: say in CheckReplyFieldMerges (server/router.cc) how the "
           "router merges it";
  }
  for (const auto& [name, rule] : rules) {
    EXPECT_NE(reply->FindFieldByName(name), nullptr) << name << " is no field of the reply";
  }
}

// Each field's rule is what the merged reply shows, whatever the field: set through the
// descriptor to one value on partition 0 and another on partition 1.
TEST(MergeCheckRepliesTest, EachFieldIsMergedByItsRule) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* descriptor = v1::CheckDocumentReply::descriptor();
  const google::protobuf::Reflection* reflection = v1::CheckDocumentReply::GetReflection();
  for (const auto& [name, rule] : CheckReplyFieldMerges()) {
    SCOPED_TRACE(name);
    const FieldDescriptor* field = descriptor->FindFieldByName(name);
    ASSERT_NE(field, nullptr);
    v1::CheckDocumentReply a, b;
    switch (rule) {
      case ReplyFieldMerge::kAny:
        reflection->SetBool(&a, field, false);
        reflection->SetBool(&b, field, true);
        EXPECT_TRUE(reflection->GetBool(MergeCheckReplies({a, b}, 0), field));
        EXPECT_FALSE(reflection->GetBool(MergeCheckReplies({a, a}, 0), field));
        break;
      case ReplyFieldMerge::kAll:
        reflection->SetBool(&a, field, true);
        reflection->SetBool(&b, field, false);
        EXPECT_FALSE(reflection->GetBool(MergeCheckReplies({a, b}, 0), field));
        EXPECT_TRUE(reflection->GetBool(MergeCheckReplies({a, a}, 0), field));
        break;
      case ReplyFieldMerge::kMax:
        ASSERT_EQ(field->cpp_type(), FieldDescriptor::CPPTYPE_DOUBLE);
        reflection->SetDouble(&a, field, 0.1);
        reflection->SetDouble(&b, field, 0.3);
        EXPECT_EQ(reflection->GetDouble(MergeCheckReplies({a, b}, 0), field), 0.3);
        EXPECT_EQ(reflection->GetDouble(MergeCheckReplies({b, a}, 0), field), 0.3);
        break;
      case ReplyFieldMerge::kFromFirst: {
        if (field->is_repeated()) {
          // The test document's manipulations: the first reply's list, whole.
          ASSERT_EQ(name, "manipulations") << "a repeated field this test does not set yet";
          a.add_manipulations()->set_kind(v1::MANIPULATION_INVISIBLE);
          a.add_manipulations()->set_kind(v1::MANIPULATION_HIDDEN_TEXT);
          b.add_manipulations()->set_kind(v1::MANIPULATION_LOOK_ALIKE);
        } else switch (field->cpp_type()) {
          case FieldDescriptor::CPPTYPE_UINT32:
            reflection->SetUInt32(&a, field, 5);
            reflection->SetUInt32(&b, field, 9);
            break;
          case FieldDescriptor::CPPTYPE_BOOL:
            reflection->SetBool(&a, field, true);
            break;
          case FieldDescriptor::CPPTYPE_STRING:
            reflection->SetString(&a, field, "first");
            reflection->SetString(&b, field, "second");
            break;
          case FieldDescriptor::CPPTYPE_MESSAGE:
            a.mutable_params()->set_function("first");
            b.mutable_params()->set_function("second");
            break;
          default:
            FAIL() << "a type this test does not set yet: extend it";
        }
        const v1::CheckDocumentReply merged = MergeCheckReplies({a, b}, 0);
        v1::CheckDocumentReply only_field, expected;
        only_field.CopyFrom(merged);
        expected.CopyFrom(a);
        for (int i = 0; i < descriptor->field_count(); ++i) {
          if (descriptor->field(i) == field) continue;
          reflection->ClearField(&only_field, descriptor->field(i));
          reflection->ClearField(&expected, descriptor->field(i));
        }
        EXPECT_EQ(only_field.SerializeAsString(), expected.SerializeAsString());
        break;
      }
      case ReplyFieldMerge::kMatches:
      case ReplyFieldMerge::kExcluded:
        break;  // the tests above
      case ReplyFieldMerge::kSetByRouter: {
        // A replica's value never passes: the router sets these.
        if (field->is_repeated()) {
          reflection->AddUInt32(&a, field, 3);
          EXPECT_EQ(reflection->FieldSize(MergeCheckReplies({a, b}, 0), field), 0);
        } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          reflection->SetString(&a, field, "replica's");
          EXPECT_EQ(reflection->GetString(MergeCheckReplies({a, b}, 0), field), "");
        } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
          reflection->SetInt32(&a, field, 13);
          EXPECT_EQ(reflection->GetInt32(MergeCheckReplies({a, b}, 0), field), 0);
        } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
          reflection->SetBool(&a, field, true);
          EXPECT_FALSE(reflection->GetBool(MergeCheckReplies({a, b}, 0), field));
        } else {
          FAIL() << "a type this test does not set yet: extend it";
        }
        break;
      }
    }
  }
}

}  // namespace
}  // namespace cops
