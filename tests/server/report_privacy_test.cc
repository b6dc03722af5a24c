#include "server/report_privacy.h"

#include <string>

#include "gtest/gtest.h"

namespace cops {
namespace {

// Collections and policies as an access-controlled server would hand them out.
class FakeAuthorizer : public Authorizer {
 public:
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase&) override {
    return absl::UnimplementedError("not used");
  }
  absl::Status Authorize(const Principal&, Action, std::string_view, uint64_t) override {
    return absl::OkStatus();
  }
  std::optional<std::vector<std::string>> UsableCollections(const Principal& p) const override {
    if (p.role == Role::kAdmin) return std::nullopt;
    return p.collections;
  }
  CollectionPolicy PolicyFor(std::string_view collection) const override {
    return CollectionPolicy{collection == "open-titles", true};
  }
};

DocumentMatch Match(DocId id, double ratio, bool violation) {
  DocumentMatch m;
  m.doc_id = id;
  m.ratio = ratio;
  m.matched_chunks = 10;
  m.violation = violation;
  Span s;
  s.test_start = 5;
  s.test_end = 50;
  s.has_registered = true;
  s.registered_start = 1000;
  s.registered_end = 1045;
  m.spans.push_back(s);
  return m;
}

DocumentRecord Record(DocId id, std::string collection, std::string owner) {
  DocumentRecord r;
  r.id = id;
  r.collection = std::move(collection);
  r.owner = std::move(owner);
  r.title = "Title " + std::to_string(id);
  r.author = "Author " + std::to_string(id);
  r.external_id = "ext-" + std::to_string(id);
  return r;
}

class ReportPrivacyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Ratio order, as MatchSet::Decide returns it: another tenant's document first.
    report_.matches = {Match(1, 0.9, true), Match(2, 0.7, true), Match(3, 0.4, false),
                       Match(4, 0.3, false)};
    report_.violation = true;
    records_ = {Record(1, "ieee", "ieee-press"), Record(2, "acm", "acm-press"),
                Record(3, "open-titles", "acm-press"), Record(4, "acm", "acm-press")};
  }
  FakeAuthorizer authz_;
  Report report_;
  std::vector<DocumentRecord> records_;
};

TEST_F(ReportPrivacyTest, OtherTenantsDocumentsNeverAppear) {
  Principal pc{"sigmod-pc", Role::kChecker, {"acm", "open-titles"}};
  std::vector<CheckHit> hits = RestrictReport(authz_, pc, /*max_results=*/2, &report_, &records_);
  ASSERT_EQ(report_.matches.size(), 2u);  // doc 1 dropped, then the limit applies
  EXPECT_EQ(report_.matches[0].doc_id, 2u);
  EXPECT_EQ(report_.matches[1].doc_id, 3u);
  ASSERT_EQ(records_.size(), 2u);
  EXPECT_EQ(records_[0].id, 2u);
  EXPECT_TRUE(report_.violation);  // doc 2 still violates
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].doc_id, 2u);
  EXPECT_EQ(hits[0].collection, "acm");
  EXPECT_DOUBLE_EQ(hits[1].ratio, 0.4);
}

TEST_F(ReportPrivacyTest, ViolationIsRecomputedFromVisibleMatches) {
  Principal pc{"pc", Role::kChecker, {"open-titles"}};
  RestrictReport(authz_, pc, 0, &report_, &records_);
  ASSERT_EQ(report_.matches.size(), 1u);
  EXPECT_FALSE(report_.violation);  // only the hidden doc 1 and 2 violated
}

TEST_F(ReportPrivacyTest, CheckersLearnOnlyIdsRatiosAndTheirOwnSpans) {
  Principal pc{"sigmod-pc", Role::kChecker, {"acm", "open-titles"}};
  RestrictReport(authz_, pc, 0, &report_, &records_);
  ASSERT_EQ(records_.size(), 3u);
  for (size_t i = 0; i < records_.size(); ++i) {
    EXPECT_TRUE(records_[i].owner.empty());
    EXPECT_TRUE(records_[i].author.empty());
    EXPECT_TRUE(records_[i].external_id.empty());
    for (const Span& s : report_.matches[i].spans) {
      EXPECT_FALSE(s.has_registered);
      EXPECT_EQ(s.registered_start, 0u);
      EXPECT_EQ(s.test_start, 5u);  // its own document's span stays
      EXPECT_EQ(s.test_end, 50u);
    }
  }
  EXPECT_EQ(records_[0].title, "");         // acm hides titles
  EXPECT_EQ(records_[1].title, "Title 3");  // open-titles shows them
}

TEST_F(ReportPrivacyTest, OwnersSeeTheirOwnDocumentsInFull) {
  Principal acm{"acm-press", Role::kOwner, {"acm"}};
  RestrictReport(authz_, acm, 0, &report_, &records_);
  ASSERT_EQ(records_.size(), 2u);
  EXPECT_EQ(records_[0].owner, "acm-press");
  EXPECT_EQ(records_[0].title, "Title 2");
  EXPECT_TRUE(report_.matches[0].spans[0].has_registered);
  EXPECT_EQ(report_.matches[0].spans[0].registered_start, 1000u);
}

TEST_F(ReportPrivacyTest, AdminsSeeEverything) {
  Principal admin{"root", Role::kAdmin, {}};
  std::vector<CheckHit> hits = RestrictReport(authz_, admin, 0, &report_, &records_);
  EXPECT_EQ(report_.matches.size(), 4u);
  EXPECT_EQ(hits.size(), 4u);
  EXPECT_EQ(records_[0].owner, "ieee-press");
}

}  // namespace
}  // namespace cops
