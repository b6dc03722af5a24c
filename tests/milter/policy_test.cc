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
      "domains": {"Partner.example": {"action": "reject"}}, "convert_workers": 4,
      "convert_in_process": true, "max_matches_header": 2, "stats_interval_s": 0})",
                            &p));
  EXPECT_EQ(p.action, MilterAction::kQuarantine);
  EXPECT_DOUBLE_EQ(*p.threshold, 0.2);
  EXPECT_EQ(p.collections, (std::vector<std::string>{"hr", "legal"}));
  EXPECT_EQ(p.ActionFor(p.Defaults(), "legal"), MilterAction::kReject);
  EXPECT_EQ(p.ActionFor(p.Defaults(), "hr"), MilterAction::kQuarantine);  // no override
  EXPECT_EQ(p.timeout_ms, 500u);
  EXPECT_EQ(p.on_failure, FailureAction::kTempfail);
  EXPECT_EQ(p.reject_code, "554");
  EXPECT_EQ(p.reject_status, "5.7.0");
  EXPECT_EQ(p.reject_text, "no");
  EXPECT_EQ(p.quarantine_reason, "held");
  EXPECT_EQ(p.max_message_bytes, 1000u);
  EXPECT_EQ(p.max_parts, 3u);
  ASSERT_EQ(p.domains.count("partner.example"), 1u);  // keys are lowercased
  EXPECT_EQ(p.domains["partner.example"].action, MilterAction::kReject);
  EXPECT_EQ(p.convert_workers, 4u);
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
      {R"({"convert_workers": 0})", "convert_workers"},
      {R"({"domains": ["example.com"]})", "domains"},
      {R"({"domains": {"example.com": {"action": "drop"}}})", "drop"},
      {R"({"domains": {"example.com": {"threshold": 2}}})", "example.com"},
      {R"({"domains": {"example.com": {"on_failure": "accept"}}})", "on_failure"},
      {R"({"domains": {"": {"action": "reject"}}})", "empty domain"},
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

TEST(MilterPolicyTest, RecipientDomainsChooseTheirRules) {
  MilterPolicy p;
  ASSERT_OK(ApplyPolicyJson(R"({
      "action": "headers", "threshold": 0.3, "collections": ["all-staff"],
      "domains": {
        "partner.example": {"action": "reject", "threshold": 0.05, "collections": ["legal"]},
        ".partner.example": {"action": "quarantine"},
        "eu.partner.example": {"threshold": 0.1}}})",
                            &p));
  auto domains_of = [&p](const std::vector<std::string>& recipients) {
    std::vector<std::string> out;
    for (const CheckRules& r : p.RulesFor(recipients)) out.push_back(r.domain);
    return out;
  };
  using V = std::vector<std::string>;
  // The exact key, the longest ".suffix" key, then nothing (the message-wide values).
  EXPECT_EQ(domains_of({"<ann@Partner.EXAMPLE>"}), V{"partner.example"});
  EXPECT_EQ(domains_of({"bob@sales.partner.example"}), V{".partner.example"});
  EXPECT_EQ(domains_of({"cy@eu.partner.example"}), V{"eu.partner.example"});
  EXPECT_EQ(domains_of({"<dan@example.org>"}), V{""});
  EXPECT_EQ(domains_of({"postmaster"}), V{""});
  EXPECT_EQ(domains_of({}), V{""});
  // Several recipients: each distinct rule set once, the message-wide values first.
  EXPECT_EQ(domains_of({"a@partner.example", "b@example.org", "c@partner.example"}),
            (V{"", "partner.example"}));

  const std::vector<CheckRules> rules = p.RulesFor({"a@partner.example", "b@x.partner.example"});
  ASSERT_EQ(rules.size(), 2u);  // in key order
  EXPECT_EQ(rules[1].domain, "partner.example");
  EXPECT_EQ(rules[1].action, MilterAction::kReject);
  EXPECT_DOUBLE_EQ(*rules[1].threshold, 0.05);
  EXPECT_EQ(rules[1].collections, V{"legal"});
  // Unset keys take the message-wide values.
  EXPECT_EQ(rules[0].domain, ".partner.example");
  EXPECT_EQ(rules[0].action, MilterAction::kQuarantine);
  EXPECT_DOUBLE_EQ(*rules[0].threshold, 0.3);
  EXPECT_EQ(rules[0].collections, V{"all-staff"});
  EXPECT_EQ(p.RulesFor({"cy@eu.partner.example"})[0].action, MilterAction::kHeaders);
}

TEST(MilterPolicyTest, CollectionActionsApplyUnderEveryDomainsRules) {
  MilterPolicy p;
  ASSERT_OK(ApplyPolicyJson(R"({"collection_actions": {"secret": "reject"},
                                "domains": {"partner.example": {"action": "quarantine"}}})",
                            &p));
  const CheckRules partner = p.RulesFor({"a@partner.example"})[0];
  EXPECT_EQ(p.ActionFor(partner, "secret"), MilterAction::kReject);
  EXPECT_EQ(p.ActionFor(partner, "public"), MilterAction::kQuarantine);
  EXPECT_EQ(p.ActionFor(p.Defaults(), "public"), MilterAction::kHeaders);
}

TEST(MilterPolicyTest, RecipientDomainIsTheLowercaseDomainOfTheAddress) {
  EXPECT_EQ(RecipientDomain("<Ann@Example.COM>"), "example.com");
  EXPECT_EQ(RecipientDomain("bob@example.org."), "example.org");
  EXPECT_EQ(RecipientDomain("\"odd@name\"@example.net"), "example.net");
  EXPECT_EQ(RecipientDomain("<postmaster>"), "");
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
