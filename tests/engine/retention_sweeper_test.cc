#include "engine/retention_sweeper.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "engine/document_writes.h"
#include "engine/index_generations.h"
#include "gtest/gtest.h"
#include "storage/principal_store.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using testing_corpus::Prose;

constexpr int64_t kSecond = 1000000;
constexpr int64_t kDay = 86400 * kSecond;

// A data directory as copsd opens it (IndexGenerations and the access store), with one
// hand-moved clock for the detector and the sweeper.
class RetentionSweeperTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    IndexGenerationsOptions options;
    options.data_dir = dir_.Join("data");
    options.detector.now_micros = [this] { return now_.load(); };
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    ASSERT_OK_AND_ASSIGN(store_, PrincipalStore::Open(dir_.Join("access")));
  }
  void Close() {
    store_.reset();
    generations_.reset();
  }

  RetentionSweeperOptions SweepOptions(size_t batch = 256) {
    RetentionSweeperOptions o;
    o.documents_per_batch = batch;
    o.audit_retention_seconds = 30 * 86400;
    o.now_micros = [this] { return now_.load(); };
    return o;
  }

  // Registers Prose(seed) expiring at `expires` (0 = never); its id.
  DocId Register(uint32_t seed, int64_t expires) {
    DocumentRecord meta;
    meta.expires_unix_micros = expires;
    absl::StatusOr<RegisterResultInfo> r =
        generations_->Current()->Register(Prose(seed, 200), DocumentFormat::kText, meta);
    EXPECT_OK(r);
    return r.ok() ? r->outcome.id : 0;
  }
  bool Present(DocId id) { return generations_->Current()->Get(id).ok(); }
  uint64_t Documents() { return generations_->Current()->Stats().documents; }

  std::atomic<int64_t> now_{int64_t{1748736000} * kSecond};  // 2025-06-01T00:00:00Z
  testing::TempDir dir_{"retention_sweeper"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<PrincipalStore> store_;
};

TEST_F(RetentionSweeperTest, RemovesExpiredDocumentsAndOldAuditEntriesOnly) {
  const int64_t t0 = now_.load();
  const DocId soon = Register(1, t0 + 10 * kSecond);
  const DocId later = Register(2, t0 + kDay);
  const DocId never = Register(3, 0);
  AuditRecord old_hit, new_hit;
  old_hit.doc_id = never;
  old_hit.unix_micros = t0 - 31 * kDay;
  old_hit.owner = "alice";
  new_hit = old_hit;
  new_hit.unix_micros = t0 - 29 * kDay;
  ASSERT_OK(store_->AppendAudit({old_hit, new_hit}));

  RetentionSweeper sweeper(generations_.get(), store_.get(), SweepOptions());
  ASSERT_OK_AND_ASSIGN(SweepResult first, sweeper.SweepOnce());
  EXPECT_EQ(first.documents_removed, 0u);
  EXPECT_EQ(first.audit_entries_removed, 1u);  // older than 30 days
  EXPECT_EQ(store_->QueryAuditOfOwner("alice", 0, 0, 10)->size(), 1u);

  now_ = t0 + 10 * kSecond;
  ASSERT_OK_AND_ASSIGN(SweepResult second, sweeper.SweepOnce());
  EXPECT_EQ(second.documents_removed, 1u);
  EXPECT_FALSE(Present(soon));
  EXPECT_TRUE(Present(later));
  EXPECT_TRUE(Present(never));
  EXPECT_EQ(Documents(), 2u);
}

TEST_F(RetentionSweeperTest, ASweepCutShortResumesAtTheNextStart) {
  const int64_t t0 = now_.load();
  std::vector<DocId> expiring;
  for (uint32_t i = 0; i < 7; ++i) expiring.push_back(Register(10 + i, t0 + (i + 1) * kSecond));
  const DocId kept = Register(20, t0 + kDay);
  now_ = t0 + 60 * kSecond;
  // One batch of three, then the process stops (a crash between batches: each batch is
  // one atomic write, tests/storage/index_test.cc kills a process there).
  ASSERT_OK_AND_ASSIGN(size_t removed,
                       generations_->Current()->index()->RemoveExpired(now_.load(), 3));
  EXPECT_EQ(removed, 3u);
  Close();

  Open();
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(Present(expiring[i])) << i;
  for (size_t i = 3; i < 7; ++i) EXPECT_TRUE(Present(expiring[i])) << i;
  RetentionSweeper sweeper(generations_.get(), store_.get(), SweepOptions(/*batch=*/3));
  ASSERT_OK_AND_ASSIGN(SweepResult swept, sweeper.SweepOnce());
  EXPECT_EQ(swept.documents_removed, 4u);
  for (DocId id : expiring) EXPECT_FALSE(Present(id)) << id;
  EXPECT_TRUE(Present(kept));
  // The survivor is still found by a check.
  CheckRequestInfo check;
  const std::string text = Prose(20, 200);
  check.content = text;
  ASSERT_OK_AND_ASSIGN(CheckResult result, generations_->Current()->Check(check));
  ASSERT_FALSE(result.report.matches.empty());
  EXPECT_EQ(result.report.matches.front().doc_id, kept);
}

TEST_F(RetentionSweeperTest, StartSweepsAtOnceInTheBackground) {
  const int64_t t0 = now_.load();
  const DocId doomed = Register(30, t0 + kSecond);
  now_ = t0 + 2 * kSecond;
  RetentionSweeperOptions options = SweepOptions();
  options.interval = std::chrono::hours(1);  // only the sweep at start can run
  RetentionSweeper sweeper(generations_.get(), store_.get(), options);
  sweeper.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Present(doomed) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling for the condition
  }
  EXPECT_FALSE(Present(doomed));
  // The destructor stops the waiting thread at once, not after the interval.
}

// The writes of a registration log as the primary's sweeper sees them: each unregistration
// is "published" (recorded) and applied to the index, as LoggedWrites does through the log.
class RecordingLogWrites : public DocumentWrites {
 public:
  explicit RecordingLogWrites(IndexGenerations* generations) : generations_(generations) {}
  absl::StatusOr<RegisterResultInfo> Register(std::string_view, DocumentFormat,
                                              const DocumentRecord&) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::StatusOr<uint64_t> Unregister(DocId id) override {
    published.push_back(id);
    COPS_RETURN_IF_ERROR(
        generations_->WithWriter([id](CopyDetector& detector) { return detector.Unregister(id); }));
    return published.size();
  }
  std::vector<DocId> published;

 private:
  IndexGenerations* const generations_;
};

TEST_F(RetentionSweeperTest, UnderARegistrationLogExpiredDocumentsAreUnregisteredThroughIt) {
  const int64_t t0 = now_.load();
  const DocId first = Register(40, t0 + 2 * kSecond);
  const DocId second = Register(41, t0 + kSecond);
  const DocId kept = Register(42, t0 + kDay);
  now_ = t0 + 3 * kSecond;

  RecordingLogWrites log(generations_.get());
  RetentionSweeperOptions primary = SweepOptions(/*batch=*/1);
  primary.documents = ExpiredDocuments::kUnregisterInLog;
  primary.log_writes = &log;
  ASSERT_OK_AND_ASSIGN(SweepResult swept, RetentionSweeper(generations_.get(), store_.get(),
                                                           primary)
                                              .SweepOnce());
  EXPECT_EQ(swept.documents_removed, 2u);
  EXPECT_EQ(log.published, (std::vector<DocId>{second, first}));  // earliest expiry first
  EXPECT_FALSE(Present(first));
  EXPECT_TRUE(Present(kept));
}

TEST_F(RetentionSweeperTest, AFollowerLeavesExpiredDocumentsToThePrimary) {
  const int64_t t0 = now_.load();
  const DocId expired = Register(50, t0 + kSecond);
  now_ = t0 + 2 * kSecond;
  RetentionSweeperOptions follower = SweepOptions();
  follower.documents = ExpiredDocuments::kLeaveToPrimary;
  ASSERT_OK_AND_ASSIGN(SweepResult swept, RetentionSweeper(generations_.get(), store_.get(),
                                                           follower)
                                              .SweepOnce());
  EXPECT_EQ(swept.documents_removed, 0u);
  EXPECT_TRUE(Present(expired));  // until the primary's unregistration arrives
  // Checks ignore it meanwhile.
  CheckRequestInfo check;
  const std::string text = Prose(50, 200);
  check.content = text;
  ASSERT_OK_AND_ASSIGN(CheckResult result, generations_->Current()->Check(check));
  EXPECT_TRUE(result.report.matches.empty());
}

}  // namespace
}  // namespace cops
