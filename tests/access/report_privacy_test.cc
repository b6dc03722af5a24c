#include "access/report_privacy.h"

#include <array>
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
  absl::Status Authorize(const Principal&, Action, std::string_view) const override {
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
    // A final report of a check searching "acm" and "open-titles", in ratio order.
    report_.matches = {Match(2, 0.7, true), Match(3, 0.4, false), Match(4, 0.3, false)};
    report_.violation = true;
    records_ = {Record(2, "acm", "acm-press"), Record(3, "open-titles", "acm-press"),
                Record(4, "acm", "other-press")};
  }
  FakeAuthorizer authz_;
  Report report_;
  std::vector<DocumentRecord> records_;
};

TEST_F(ReportPrivacyTest, MatchesRatiosAndTheVerdictAreKept) {
  Principal pc{"sigmod-pc", Role::kChecker, {"acm", "open-titles"}, {}};
  std::vector<AuditRecord> hits = RedactReport(authz_, pc, &report_, &records_);
  ASSERT_EQ(report_.matches.size(), 3u);
  ASSERT_EQ(records_.size(), 3u);
  EXPECT_EQ(report_.matches[0].doc_id, 2u);
  EXPECT_DOUBLE_EQ(report_.matches[0].ratio, 0.7);
  EXPECT_TRUE(report_.violation);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].doc_id, 2u);
  EXPECT_EQ(hits[0].collection, "acm");
  EXPECT_TRUE(hits[0].violation);
  EXPECT_DOUBLE_EQ(hits[1].ratio, 0.4);
}

TEST_F(ReportPrivacyTest, CheckersLearnOnlyIdsRatiosAndTheirOwnSpans) {
  Principal pc{"sigmod-pc", Role::kChecker, {"acm", "open-titles"}, {}};
  RedactReport(authz_, pc, &report_, &records_);
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

// Redaction is by allow-list: every field of the record and of the spans that is not the
// id, collection, title or the test document's side is cleared for a non-owner, including
// fields the reply does not carry today (a digest of the registered text confirms a guess).
TEST_F(ReportPrivacyTest, EverythingOutsideTheAllowListIsClearedForCheckers) {
  for (DocumentRecord& r : records_) {
    r.format = "pdf";
    r.registered_unix_micros = 1700000000000000;
    r.sha256.fill(0xab);
    r.total_chunks = 400;
    r.stored_chunks = 80;
    r.size_bytes = 4096;
    r.expires_unix_micros = 1900000000000000;
    r.not_before_unix_micros = 1600000000000000;
  }
  for (DocumentMatch& m : report_.matches) {
    for (Span& s : m.spans) {
      s.registered_unit_begin = 17;
      s.registered_unit_end = 29;
      s.chunks = 3;
      s.units = 12;
    }
  }
  Principal pc{"sigmod-pc", Role::kChecker, {"acm", "open-titles"}, {}};
  RedactReport(authz_, pc, &report_, &records_);
  for (size_t i = 0; i < records_.size(); ++i) {
    const DocumentRecord& r = records_[i];
    EXPECT_EQ(r.id, report_.matches[i].doc_id);
    EXPECT_FALSE(r.collection.empty());
    EXPECT_EQ(r.format, "");
    EXPECT_EQ(r.registered_unix_micros, 0);
    EXPECT_EQ(r.sha256, (std::array<uint8_t, 32>{}));
    EXPECT_EQ(r.total_chunks, 0u);
    EXPECT_EQ(r.stored_chunks, 0u);
    EXPECT_EQ(r.size_bytes, 0u);
    EXPECT_EQ(r.expires_unix_micros, 0);
    EXPECT_EQ(r.not_before_unix_micros, 0);
    for (const Span& s : report_.matches[i].spans) {
      EXPECT_EQ(s.registered_unit_begin, 0u);
      EXPECT_EQ(s.registered_unit_end, 0u);
      EXPECT_EQ(s.registered_end, 0u);
      EXPECT_EQ(s.chunks, 3u);  // the test document's side stays
      EXPECT_EQ(s.units, 12u);
    }
  }
}

TEST_F(ReportPrivacyTest, OwnersSeeTheirOwnDocumentsInFull) {
  Principal acm{"acm-press", Role::kOwner, {"acm"}, {}};
  RedactReport(authz_, acm, &report_, &records_);
  EXPECT_EQ(records_[0].owner, "acm-press");
  EXPECT_EQ(records_[0].title, "Title 2");
  EXPECT_TRUE(report_.matches[0].spans[0].has_registered);
  EXPECT_EQ(report_.matches[0].spans[0].registered_start, 1000u);
  // Another owner's document in the same collection is redacted.
  EXPECT_TRUE(records_[2].owner.empty());
  EXPECT_FALSE(report_.matches[2].spans[0].has_registered);
}

TEST_F(ReportPrivacyTest, AdminsSeeEverything) {
  Principal admin{"root", Role::kAdmin, {}, {}};
  std::vector<AuditRecord> hits = RedactReport(authz_, admin, &report_, &records_);
  EXPECT_EQ(hits.size(), 3u);
  EXPECT_EQ(records_[2].owner, "other-press");
  EXPECT_EQ(records_[2].author, "Author 4");
}

}  // namespace
}  // namespace cops
