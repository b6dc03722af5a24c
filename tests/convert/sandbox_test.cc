#include "convert/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "convert/converter.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// Each test owns a temp dir and may point COPS_CONVERT_WORKER at a fake worker there.
class SandboxTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("COPS_CONVERT_WORKER"); }
  std::string FakeWorker(const std::string& script) {
    const std::string path = dir_.Join("fake-worker.sh");
    std::ofstream(path) << "#!/bin/sh\n" << script << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  testing::TempDir dir_{"cops_sandbox_test"};
};

TEST_F(SandboxTest, RealWorkerConvertsHtml) {
  ASSERT_FALSE(ConvertWorkerPath().empty());
  auto doc = Convert("<p>through the worker</p>", DocumentFormat::kHtml);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "through the worker");
  EXPECT_EQ(doc->format, DocumentFormat::kHtml);
}

TEST_F(SandboxTest, WorkerErrorsComeBackWithTheirCode) {
  auto doc = Convert("not a pdf", DocumentFormat::kPdf);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().substr(0, 4), "pdf:");
}

TEST_F(SandboxTest, HangingWorkerIsKilledAtTheWallClock) {
  setenv("COPS_CONVERT_WORKER", FakeWorker("exec sleep 30").c_str(), 1);
  ConvertLimits limits;
  limits.time_budget_ms = 50;
  auto doc = Convert("%PDF-1.4 whatever", DocumentFormat::kPdf, limits);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(doc.status().message().find("time budget"), std::string_view::npos);
}

TEST_F(SandboxTest, CrashingWorkerFailsOnlyThatDocument) {
  setenv("COPS_CONVERT_WORKER", FakeWorker("cat > /dev/null; kill -SEGV $$").c_str(), 1);
  auto doc = Convert("<p>x</p>", DocumentFormat::kHtml);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("signal"), std::string_view::npos);
}

TEST_F(SandboxTest, WorkerFailuresAndTimeoutsAreCountedButRejectedDocumentsAreNot) {
  ConvertWorkerCounts before = GetConvertWorkerCounts();
  EXPECT_FALSE(Convert("not a pdf", DocumentFormat::kPdf).ok());  // the document's fault
  ConvertWorkerCounts after = GetConvertWorkerCounts();
  EXPECT_EQ(after.failures, before.failures);
  EXPECT_EQ(after.timeouts, before.timeouts);

  setenv("COPS_CONVERT_WORKER", FakeWorker("cat > /dev/null; kill -SEGV $$").c_str(), 1);
  EXPECT_FALSE(Convert("<p>x</p>", DocumentFormat::kHtml).ok());
  after = GetConvertWorkerCounts();
  EXPECT_EQ(after.failures, before.failures + 1);
  EXPECT_EQ(after.timeouts, before.timeouts);

  setenv("COPS_CONVERT_WORKER", FakeWorker("exec sleep 30").c_str(), 1);
  ConvertLimits limits;
  limits.time_budget_ms = 50;
  EXPECT_FALSE(Convert("<p>x</p>", DocumentFormat::kHtml, limits).ok());
  after = GetConvertWorkerCounts();
  EXPECT_EQ(after.failures, before.failures + 1);
  EXPECT_EQ(after.timeouts, before.timeouts + 1);
}

TEST_F(SandboxTest, WorkerInheritsNoDescriptorButItsStdio) {
  // A pipe without O_CLOEXEC, as libraries in the caller open them.
  int leak[2];
  ASSERT_EQ(pipe(leak), 0);
  const std::string list = dir_.Join("fds");
  setenv("COPS_CONVERT_WORKER",
         FakeWorker("cat > /dev/null; ls /proc/$$/fd > " + list + "; kill -SEGV $$").c_str(), 1);
  EXPECT_FALSE(Convert("<p>x</p>", DocumentFormat::kHtml).ok());
  close(leak[0]);
  close(leak[1]);
  std::ifstream in(list);
  std::vector<int> fds;
  for (int fd; in >> fd;) fds.push_back(fd);
  ASSERT_FALSE(fds.empty());
  EXPECT_EQ(std::count(fds.begin(), fds.end(), leak[0]), 0);
  EXPECT_EQ(std::count(fds.begin(), fds.end(), leak[1]), 0);
}

TEST_F(SandboxTest, GarbageFromWorkerIsInternal) {
  setenv("COPS_CONVERT_WORKER", FakeWorker("cat > /dev/null; echo nonsense").c_str(), 1);
  auto doc = Convert("<p>x</p>", DocumentFormat::kHtml);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInternal);
}

TEST_F(SandboxTest, MissingWorkerIsInternalAndTrustedFormatsStillWork) {
  setenv("COPS_CONVERT_WORKER", dir_.Join("does-not-exist").c_str(), 1);
  auto doc = Convert("<p>x</p>", DocumentFormat::kHtml);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(doc.status().message().find("COPS_CONVERT_WORKER"), std::string_view::npos);
  auto text = Convert("plain text needs no worker", DocumentFormat::kText);
  ASSERT_OK(text);
  ConvertLimits in_process;
  in_process.in_process = true;
  auto html = Convert("<p>in process</p>", DocumentFormat::kHtml, in_process);
  ASSERT_OK(html);
  EXPECT_EQ(html->text, "in process");
}

TEST_F(SandboxTest, MemoryLimitFailsTheDocumentNotTheCaller) {
  // A worker held to 8 MB of address space cannot even map poppler's working memory.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of shadow memory: the worker sets no RLIMIT_AS";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan reserves terabytes of shadow memory: the worker sets no RLIMIT_AS";
#endif
#endif
  ConvertLimits limits;
  limits.max_memory_bytes = 8 << 20;
  const std::string pdf = testing::MakePdfFromParagraphs(testing::Prose(40));
  ASSERT_OK(Convert(pdf, DocumentFormat::kPdf));
  auto doc = Convert(pdf, DocumentFormat::kPdf, limits);
  ASSERT_FALSE(doc.ok());
  EXPECT_TRUE(doc.status().code() == absl::StatusCode::kResourceExhausted ||
              doc.status().code() == absl::StatusCode::kInvalidArgument)
      << doc.status();
  EXPECT_EQ(doc.status().message().substr(0, 4), "pdf:") << doc.status();
  // The caller is unaffected and the next document converts normally.
  auto next = Convert("<p>still fine</p>", DocumentFormat::kHtml);
  ASSERT_OK(next);
  EXPECT_EQ(next->text, "still fine");
}

TEST_F(SandboxTest, LargeInputStreamsThroughTheWorker) {
  std::string html = "<html><body>";
  for (int i = 0; i < 20000; ++i) html += "<p>paragraph number " + std::to_string(i) + "</p>";
  html += "</body></html>";
  auto doc = Convert(html, DocumentFormat::kHtml);
  ASSERT_OK(doc);
  EXPECT_NE(doc->text.find("paragraph number 19999"), std::string::npos);
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("number 19999"))),
            html.find("number 19999"));
}

}  // namespace
}  // namespace cops
