// The copsd binary as an operator runs it, outside any service manager: what it leaves on
// disk. (Flags: server_config_test.cc; the whole server under load: overload_test.cc.)

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "client/load_generator.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "server/malloc_tuning.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

TEST(CopsdTest, EveryFileOfTheDataDirectoryIsTheOwnersAlone) {
  testing::TempDir dir("copsd_files");
  ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {}));
  ClientOptions options;
  options.target = copsd->address();
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(options));
  v1::Document doc;
  doc.set_content(SyntheticText(/*seed=*/9, 1, 2000));
  doc.mutable_metadata()->set_title("stored text");
  ASSERT_OK(client->Register(doc).status());
  client.reset();
  EXPECT_EQ(copsd->Stop(), 0) << copsd->Log();

  // The index (texts included), its key, the access store: none readable by other users.
  const std::filesystem::path data = dir.path() / "data";
  ASSERT_TRUE(std::filesystem::exists(data / "index"));
  EXPECT_EQ(testing::NotOwnerOnly(data), std::vector<std::string>{});
}

// The environment of a running process as /proc/PID/environ holds it: NUL-separated
// "NAME=value" strings. (glibc 2.36 ends each tunable it parsed with a NUL there, so that
// GLIBC_TUNABLES=a:b may read "GLIBC_TUNABLES=a", "b".)
std::string EnvironOf(pid_t pid) {
  return testing::ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/environ");
}

// Restores the test process's GLIBC_TUNABLES when it goes.
class TunablesEnvironment {
 public:
  TunablesEnvironment() {
    if (const char* v = std::getenv("GLIBC_TUNABLES")) saved_ = v;
  }
  ~TunablesEnvironment() {
    if (saved_.has_value()) {
      setenv("GLIBC_TUNABLES", saved_->c_str(), 1);
    } else {
      unsetenv("GLIBC_TUNABLES");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(CopsdTest, StartsWithItsMallocTunablesUnlessTheOperatorGaveSome) {
  TunablesEnvironment restore;
  const std::vector<std::string> own = absl::StrSplit(kCopsdMallocTunables, ':');
  ASSERT_EQ(own.size(), 2u);
  {
    // Started without: copsd runs again with its own (the same process, so the same pid).
    unsetenv("GLIBC_TUNABLES");
    testing::TempDir dir("copsd_tunables");
    ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {}));
    const std::string environ = EnvironOf(copsd->pid());
    EXPECT_THAT(environ, ::testing::HasSubstr(std::string("GLIBC_TUNABLES=") + own[0]));
    for (const std::string& tunable : own) {
      EXPECT_THAT(environ, ::testing::HasSubstr(tunable));
    }
    // Under its own name still (ps, top, pgrep and systemd show /proc/PID/comm).
    EXPECT_EQ(testing::ReadFileOrEmpty("/proc/" + std::to_string(copsd->pid()) + "/comm"),
              "copsd\n");
    EXPECT_EQ(copsd->Stop(), 0) << copsd->Log();
  }
  // The operator's, even none at all, are kept.
  for (const std::string given : {"glibc.malloc.arena_max=3", ""}) {
    setenv("GLIBC_TUNABLES", given.c_str(), 1);
    testing::TempDir dir("copsd_tunables_given");
    ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {}));
    const std::string environ = EnvironOf(copsd->pid());
    EXPECT_THAT(environ, ::testing::HasSubstr("GLIBC_TUNABLES=" + given + '\0'));
    EXPECT_THAT(environ, ::testing::Not(::testing::HasSubstr("hugetlb")));
    EXPECT_EQ(copsd->Stop(), 0) << copsd->Log();
  }
}

// Threads of a running process.
size_t ThreadsOf(pid_t pid) {
  return static_cast<size_t>(std::distance(
      std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"),
      std::filesystem::directory_iterator()));
}

// copsd's threads a second after eight callers sent checks side by side, with --kept-threads.
size_t ThreadsAfterABurst(uint32_t kept_threads) {
  testing::TempDir dir("copsd_kept_threads");
  auto copsd = testing::CopsdProcess::Start(
      dir.path(), {"--kept-threads", std::to_string(kept_threads), "--threads", "32"});
  EXPECT_TRUE(copsd.ok()) << copsd.status();
  if (!copsd.ok()) return 0;
  ClientOptions options;
  options.target = (*copsd)->address();
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&options, c] {
      auto client = Client::Connect(options);
      ASSERT_OK(client.status());
      v1::CheckDocumentRequest check;
      check.set_content(SyntheticText(/*seed=*/3, c, 3000));
      for (int i = 0; i < 40; ++i) EXPECT_OK((*client)->Check(check).status());
    });
  }
  for (std::thread& t : callers) t.join();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const size_t threads = ThreadsOf((*copsd)->pid());
  EXPECT_EQ((*copsd)->Stop(), 0) << (*copsd)->Log();
  return threads;
}

// Handler threads that served a burst stay for the next one (--kept-threads), instead of
// ending with their calls (gRPC keeps 2 unless told).
TEST(CopsdTest, ARequestWithTextThatIsNotUtf8IsInvalidArgumentWithAMessage) {
  // proto3 string fields hold UTF-8 only. A request with other bytes in one (a Latin-1
  // title, as any client but cops may send: protobuf serializes it with a logged error)
  // does not parse, and gRPC by itself answers INTERNAL with no message at all.
  testing::TempDir dir("copsd_utf8");
  ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {}));
  auto stub = v1::CopyDetection::NewStub(
      grpc::CreateChannel(copsd->address(), grpc::InsecureChannelCredentials()));
  auto call = [&](const std::string& title) {
    v1::RegisterDocumentRequest request;
    request.mutable_document()->set_content("A document with a title in Latin-1.");
    request.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
    request.mutable_document()->mutable_metadata()->set_title(title);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::RegisterDocumentReply reply;
    return stub->RegisterDocument(&context, request, &reply);
  };
  for (int i = 0; i < 2; ++i) {  // and copsd answers the next one alike
    const grpc::Status status = call("Caf\xe9");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("UTF-8"));
  }
  // A request that parses goes on to the service (here: no API key, auth is on by default).
  EXPECT_NE(call("Café").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(CopsdTest, KeepsTheHandlerThreadsOfABurst) {
  const size_t kept = ThreadsAfterABurst(16);
  const size_t few = ThreadsAfterABurst(1);
  std::cout << "threads after the burst: " << kept << " kept, " << few << " with --kept-threads 1\n";
  EXPECT_GE(kept, few + 4) << "kept " << kept << ", with --kept-threads 1: " << few;
}

}  // namespace
}  // namespace cops
