#include "convert/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "convert/sandbox.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// Each test owns a temp dir and may point COPS_CONVERT_WORKER at a fake worker there.
class WorkerPoolTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("COPS_CONVERT_WORKER"); }
  void UseFakeWorker(const std::string& script) {
    const std::string path = dir_.Join("fake-worker.sh");
    std::ofstream(path) << "#!/bin/sh\n" << script << "\n";
    chmod(path.c_str(), 0755);
    setenv("COPS_CONVERT_WORKER", path.c_str(), 1);
  }
  // The processes this test process started and has not reaped (/proc/PID/stat: "pid (comm)
  // state ppid ...").
  static std::vector<pid_t> Children() {
    std::vector<pid_t> pids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::ifstream in(entry.path() / "stat");
      std::string stat;
      if (!std::getline(in, stat)) continue;
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 1));
      char state = 0;
      pid_t ppid = 0;
      if (rest >> state >> ppid && ppid == getpid()) pids.push_back(std::stoi(stat));
    }
    return pids;
  }
  testing::TempDir dir_{"cops_worker_pool_test"};
};

TEST_F(WorkerPoolTest, OneProcessServesDocumentAfterDocument) {
  ConvertWorkerPool pool({.max_workers = 2, .max_uses = 100});
  const std::string pdf = testing::MakePdfFromParagraphs({"A paragraph of the first report."});
  for (int i = 0; i < 3; ++i) {
    auto doc = pool.Convert(pdf, DocumentFormat::kPdf, {}, {});
    ASSERT_OK(doc);
    EXPECT_EQ(doc->text, "A paragraph of the first report.");
  }
  auto docx = pool.Convert(testing::MakeDocx({"Then a DOCX."}), DocumentFormat::kDocx, {}, {});
  ASSERT_OK(docx);
  EXPECT_EQ(docx->text, "Then a DOCX.");
  EXPECT_EQ(pool.started(), 1u);
  EXPECT_EQ(Children().size(), 1u);  // one worker, idle between documents
}

TEST_F(WorkerPoolTest, ProcessesAreReplacedAfterMaxUses) {
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 2});
  for (int i = 0; i < 5; ++i) ASSERT_OK(pool.Convert("<p>x</p>", DocumentFormat::kHtml, {}, {}));
  EXPECT_EQ(pool.started(), 3u);
}

TEST_F(WorkerPoolTest, ConcurrentConversionsShareAtMostMaxWorkers) {
  ConvertWorkerPool pool({.max_workers = 2, .max_uses = 1000});
  std::vector<std::thread> threads;
  std::atomic<int> converted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, &converted, t] {
      for (int i = 0; i < 5; ++i) {
        const std::string text = "thread " + std::to_string(t) + " document " + std::to_string(i);
        auto doc = pool.Convert("<p>" + text + "</p>", DocumentFormat::kHtml, {}, {});
        if (doc.ok() && doc->text == text) converted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(converted.load(), 20);
  EXPECT_LE(pool.started(), 2u);
}

TEST_F(WorkerPoolTest, RejectedDocumentGetsItsErrorAndTheNextAFreshWorker) {
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  auto bad = pool.Convert("not a pdf", DocumentFormat::kPdf, {}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().substr(0, 4), "pdf:");
  ASSERT_OK(pool.Convert("<p>next</p>", DocumentFormat::kHtml, {}, {}));
  EXPECT_EQ(pool.started(), 2u);
}

TEST_F(WorkerPoolTest, CrashFailsThatDocumentOnly) {
  UseFakeWorker("head -c 1 > /dev/null; kill -SEGV $$");
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  const ConvertWorkerCounts before = GetConvertWorkerCounts();
  auto doc = pool.Convert("%PDF-1.4 hostile", DocumentFormat::kPdf, {}, {});
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("signal"), std::string_view::npos) << doc.status();
  EXPECT_EQ(GetConvertWorkerCounts().failures, before.failures + 1);
  unsetenv("COPS_CONVERT_WORKER");
  auto next = pool.Convert("<p>still fine</p>", DocumentFormat::kHtml, {}, {});
  ASSERT_OK(next);
  EXPECT_EQ(next->text, "still fine");
}

TEST_F(WorkerPoolTest, HangingWorkerIsKilledAtTheWallClock) {
  UseFakeWorker("exec sleep 30");
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  ConvertLimits limits;
  limits.time_budget_ms = 50;
  const ConvertWorkerCounts before = GetConvertWorkerCounts();
  auto doc = pool.Convert("%PDF-1.4 whatever", DocumentFormat::kPdf, limits, {});
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(doc.status().message().find("time budget"), std::string_view::npos);
  EXPECT_EQ(GetConvertWorkerCounts().timeouts, before.timeouts + 1);
  EXPECT_TRUE(Children().empty());  // killed and reaped
}

TEST_F(WorkerPoolTest, WorkerKilledWhileIdleIsReplacedSilently) {
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  ASSERT_OK(pool.Convert("<p>first</p>", DocumentFormat::kHtml, {}, {}));
  const std::vector<pid_t> workers = Children();
  ASSERT_EQ(workers.size(), 1u);
  kill(workers[0], SIGKILL);
  auto doc = pool.Convert("<p>second</p>", DocumentFormat::kHtml, {}, {});
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "second");
  EXPECT_EQ(pool.started(), 2u);
}

TEST_F(WorkerPoolTest, BusyPoolFailsWithinTheBudget) {
  UseFakeWorker("exec sleep 30");
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  ConvertLimits slow;
  slow.time_budget_ms = 200;
  std::thread holder([&] { (void)pool.Convert("%PDF-1.4", DocumentFormat::kPdf, slow, {}); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.started() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ConvertLimits quick;
  quick.time_budget_ms = 20;
  auto doc = pool.Convert("%PDF-1.4", DocumentFormat::kPdf, quick, {});
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(doc.status().message().find("busy"), std::string_view::npos) << doc.status();
  holder.join();
}

TEST_F(WorkerPoolTest, MissingWorkerIsInternal) {
  setenv("COPS_CONVERT_WORKER", dir_.Join("does-not-exist").c_str(), 1);
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 100});
  for (int i = 0; i < 2; ++i) {  // the slot is given back each time
    auto doc = pool.Convert("<p>x</p>", DocumentFormat::kHtml, {}, {});
    ASSERT_FALSE(doc.ok());
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInternal);
  }
}

TEST_F(WorkerPoolTest, DestructorEndsIdleWorkers) {
  {
    ConvertWorkerPool pool({.max_workers = 2, .max_uses = 100});
    ASSERT_OK(pool.Convert("<p>x</p>", DocumentFormat::kHtml, {}, {}));
    EXPECT_EQ(Children().size(), 1u);
  }
  EXPECT_TRUE(Children().empty());
}

}  // namespace
}  // namespace cops
