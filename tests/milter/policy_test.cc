#include "milter/policy.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(MilterPolicyTest, DefaultsAddHeadersAndFailOpen) {
  MilterPolicy p;
  EXPECT_EQ(p.action, MilterAction::kHeaders);
  EXPECT_EQ(p.on_failure, FailureAction::kAccept);
  EXPECT_FALSE(p.threshold.has_value());
  EXPECT_TRUE(p.Validate().ok());
}

TEST(MilterPolicyTest, JsonSetsEveryKey) {
  MilterPolicy p;
  ASSERT_OK(ApplyPolicyJson(R"({
      "action": "quarantine", "threshold": 0.2, "collections": ["hr", "legal"],
      "collection_actions": {"legal": "reject"}, "timeout_ms": 500, "on_failure": "tempfail",
      "reject_code": "554", "reject_status": "5.7.0", "reject_text": "no",
      "quarantine_reason": "held", "max_message_bytes": 1000, "max_parts": 3,
      "convert_in_process": true, "max_matches_header": 2, "stats_interval_s": 0})",
                            &p));
  EXPECT_EQ(p.action, MilterAction::kQuarantine);
  EXPECT_DOUBLE_EQ(*p.threshold, 0.2);
  EXPECT_EQ(p.collections, (std::vector<std::string>{"hr", "legal"}));
  EXPECT_EQ(p.ActionFor("legal"), MilterAction::kReject);
  EXPECT_EQ(p.ActionFor("hr"), MilterAction::kQuarantine);  // no override: the default
  EXPECT_EQ(p.timeout_ms, 500u);
  EXPECT_EQ(p.on_failure, FailureAction::kTempfail);
  EXPECT_EQ(p.reject_code, "554");
  EXPECT_EQ(p.reject_status, "5.7.0");
  EXPECT_EQ(p.reject_text, "no");
  EXPECT_EQ(p.quarantine_reason, "held");
  EXPECT_EQ(p.max_message_bytes, 1000u);
  EXPECT_EQ(p.max_parts, 3u);
  EXPECT_TRUE(p.convert_in_process);
  EXPECT_EQ(p.max_matches_header, 2u);
  EXPECT_EQ(p.stats_interval_s, 0u);
}

TEST(MilterPolicyTest, BadConfigIsRefusedNamingTheKeyAndLeavesThePolicyAlone) {
  MilterPolicy p;
  struct Case {
    const char* json;
    const char* names;
  } cases[] = {
      {R"({"action": "drop"})", "drop"},
      {R"({"acton": "reject"})", "acton"},
      {R"({"threshold": 1.5})", "threshold"},
      {R"({"threshold": "high"})", "threshold"},
      {R"({"reject_code": "450"})", "reject_code"},
      {R"({"reject_status": "4.7.1"})", "reject_status"},
      {R"({"reject_text": "two\nlines"})", "reject_text"},
      {R"({"on_failure": "ignore"})", "ignore"},
      {R"({"timeout_ms": 0})", "timeout_ms"},
      {R"({"collection_actions": {"x": "bounce"}})", "bounce"},
      {R"(["headers"])", "JSON object"},
  };
  for (const Case& c : cases) {
    absl::Status s = ApplyPolicyJson(c.json, &p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_NE(s.message().find(c.names), std::string::npos) << s;
  }
  EXPECT_EQ(p.action, MilterAction::kHeaders);
  EXPECT_FALSE(p.threshold.has_value());
}

TEST(MilterPolicyTest, MissingFileIsNotFound) {
  MilterPolicy p;
  EXPECT_EQ(ApplyPolicyFile("/nonexistent/milter.json", &p).code(), absl::StatusCode::kNotFound);
}

TEST(MilterPolicyTest, ActionNamesRoundTrip) {
  for (MilterAction a :
       {MilterAction::kHeaders, MilterAction::kQuarantine, MilterAction::kReject}) {
    EXPECT_EQ(*ParseMilterAction(MilterActionName(a)), a);
  }
  for (FailureAction f :
       {FailureAction::kAccept, FailureAction::kTempfail, FailureAction::kReject}) {
    EXPECT_EQ(*ParseFailureAction(FailureActionName(f)), f);
  }
}

}  // namespace
}  // namespace cops
