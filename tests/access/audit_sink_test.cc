#include "access/audit_sink.h"

#include <atomic>
#include <memory>
#include <sstream>
#include <string>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

constexpr int64_t kNow = 1'700'000'000'000'000;

// One registered document a check reported, as RedactReport hands it to the sink.
AuditRecord Hit(uint64_t doc_id, double ratio = 0.5, bool violation = false) {
  AuditRecord hit;
  hit.doc_id = doc_id;
  hit.collection = "acm";
  hit.ratio = ratio;
  hit.containment = ratio / 2;
  hit.matched_chunks = 10;
  hit.violation = violation;
  return hit;
}

AuditSinkOptions FixedClock(size_t max_queued_records = 65536) {
  AuditSinkOptions options;
  options.max_queued_records = max_queued_records;
  options.now_micros = [] { return kNow; };
  return options;
}

TEST(AuditSinkTest, RecordedCheckArrivesInTheStore) {
  const testing::TempDir dir("audit");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                       PrincipalStore::Open(dir.Join("access")));
  AuditSink sink(AppendTo(store.get()), FixedClock());
  sink.Record("sigmod-pc", {Hit(41, 0.8, true), Hit(42, 0.2)});
  sink.Flush();
  ASSERT_OK_AND_ASSIGN(std::vector<AuditRecord> hits, store->QueryAudit(41, 0, 10));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].checker, "sigmod-pc");
  EXPECT_EQ(hits[0].collection, "acm");
  EXPECT_EQ(hits[0].unix_micros, kNow);
  EXPECT_DOUBLE_EQ(hits[0].ratio, 0.8);
  EXPECT_TRUE(hits[0].violation);
  EXPECT_EQ(store->QueryAudit(42, 0, 10)->size(), 1u);
  const AuditSink::Counters c = sink.counters();
  EXPECT_EQ(c.written, 2u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.dropped, 0u);
}

TEST(AuditSinkTest, FailingWriterIsCounted) {
  std::atomic<int> calls{0};
  AuditSink sink(
      [&](const std::vector<AuditRecord>&) {
        ++calls;
        return absl::UnavailableError("disk full");
      },
      FixedClock());
  sink.Record("pc", {Hit(1), Hit(2)});
  sink.Record("pc", {Hit(3)});
  sink.Flush();
  const AuditSink::Counters c = sink.counters();
  EXPECT_EQ(c.failed, 3u);
  EXPECT_EQ(c.written, 0u);
  EXPECT_GE(calls.load(), 1);
}

// A full queue drops records, never silently: they are counted (exported as
// cops_audit_records_dropped_total, tests/server/metrics_test.cc) and logged as an error.
TEST(AuditSinkTest, FullQueueDropsCountsAndLogs) {
  std::ostringstream lines;
  auto previous = spdlog::default_logger();
  auto log = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
  log->set_pattern("%l %v");
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("audit-test", log));
  absl::Notification writing, go_on;
  std::atomic<size_t> written{0};
  AuditSink sink(
      [&](const std::vector<AuditRecord>& batch) {
        if (!writing.HasBeenNotified()) writing.Notify();
        go_on.WaitForNotification();
        written += batch.size();
        return absl::OkStatus();
      },
      FixedClock(/*max_queued_records=*/2));
  sink.Record("pc", {Hit(1)});
  writing.WaitForNotification();  // the writer holds record 1: the queue is empty again
  sink.Record("pc", {Hit(2), Hit(3), Hit(4)});
  EXPECT_EQ(sink.counters().dropped, 1u);
  go_on.Notify();
  sink.Flush();
  spdlog::set_default_logger(previous);
  EXPECT_EQ(written.load(), 3u);
  EXPECT_EQ(sink.counters().written, 3u);
  EXPECT_NE(lines.str().find("error audit queue full"), std::string::npos) << lines.str();
  EXPECT_NE(lines.str().find("1 audit records of a check by 'pc' dropped"), std::string::npos)
      << lines.str();
}

TEST(AuditSinkTest, DestructorWritesWhatIsQueued) {
  std::atomic<size_t> written{0};
  {
    AuditSink sink(
        [&](const std::vector<AuditRecord>& batch) {
          written += batch.size();
          return absl::OkStatus();
        },
        FixedClock());
    for (uint64_t i = 0; i < 100; ++i) sink.Record("pc", {Hit(i)});
  }
  EXPECT_EQ(written.load(), 100u);
}

}  // namespace
}  // namespace cops
