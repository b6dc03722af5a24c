// CheckStream against the real service in process on a loopback port: batches answered in
// order over one call, the call surviving a server restart, deadlines when the server is
// down or never answers, and CheckStreamPool under the server's limit of streams.

#include "client/check_stream.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/client/copy_detection_server.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using testing_corpus::Corpus;
using testing_corpus::ParagraphInsideNewText;
using testing_corpus::UnrelatedText;

v1::CheckDocumentRequest TextRequest(const std::string& text) {
  v1::CheckDocumentRequest r;
  r.set_content(text);
  r.set_format(v1::DOCUMENT_FORMAT_TEXT);
  return r;
}

class CheckStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(stack_.ok());
    StartServer();
    ASSERT_NO_FATAL_FAILURE(Connect());
    v1::Document doc;
    doc.set_content(Corpus()[0].body);
    doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
    doc.mutable_metadata()->set_collection("essays");
    auto reg = client_->Register(doc);
    ASSERT_OK(reg);
    doc_id_ = reg->doc_id();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
  }
  // A new channel to the server (client_).
  void Connect() {
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(port_);
    options.max_reconnect_backoff_ms = 200;
    auto client = Client::Connect(options);
    ASSERT_OK(client);
    client_ = *std::move(client);
  }

  // On the same port after the first start, as a restarted copsd would be (which
  // testing::TestServer, always on a fresh port, cannot do).
  // `max_streams` > 0: the streams one client connection may open at once (copsd
  // --max-streams-per-connection).
  void StartServer(int max_streams = 0) {
    grpc::ServerBuilder builder;
    if (max_streams > 0) builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, max_streams);
    const std::string address = "127.0.0.1:" + std::to_string(port_);
    testing::AddTestListener(&builder, address, grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(stack_.service());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
  }
  void StopServer() {
    server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
  }

  testing::TempDir dir_{"check_stream"};
  testing::CopyDetectionStack stack_{dir_};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<Client> client_;
  uint64_t doc_id_ = 0;
};

TEST_F(CheckStreamTest, BatchesAreAnsweredInOrderOverOneCall) {
  CheckStream stream(client_.get());
  EXPECT_FALSE(stream.open());
  for (int round = 0; round < 3; ++round) {
    auto replies =
        stream.Check({TextRequest(UnrelatedText()),
                      TextRequest(ParagraphInsideNewText(Corpus()[0].body)), TextRequest("")},
                     std::chrono::seconds(20));
    ASSERT_OK(replies);
    ASSERT_EQ(replies->size(), 3u);
    EXPECT_FALSE((*replies)[0].violation());
    EXPECT_TRUE((*replies)[1].violation());
    ASSERT_GE((*replies)[1].matches_size(), 1);
    EXPECT_EQ((*replies)[1].matches(0).doc_id(), doc_id_);
    EXPECT_EQ((*replies)[1].matches(0).collection(), "essays");
    // An empty document is the server's INVALID_ARGUMENT, inside its reply.
    EXPECT_EQ((*replies)[2].error_code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
    EXPECT_TRUE(stream.open());
  }
  auto none = stream.Check({}, std::chrono::seconds(1));
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(CheckStreamTest, ServerDownIsUnavailableAndARestartIsPickedUp) {
  CheckStream stream(client_.get());
  ASSERT_OK(stream.Check({TextRequest(UnrelatedText())}, std::chrono::seconds(20)));
  StopServer();
  const auto start = std::chrono::steady_clock::now();
  auto down = stream.Check({TextRequest(UnrelatedText())}, std::chrono::seconds(2));
  EXPECT_FALSE(down.ok());
  EXPECT_TRUE(down.status().code() == absl::StatusCode::kUnavailable ||
              down.status().code() == absl::StatusCode::kDeadlineExceeded)
      << down.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_FALSE(stream.open());

  StartServer();
  // gRPC reconnects with backoff: the first batches may still find the channel failing.
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> up;
  for (int i = 0; i < 50; ++i) {
    up = stream.Check({TextRequest(ParagraphInsideNewText(Corpus()[0].body))},
                      std::chrono::seconds(2));
    if (up.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_OK(up);
  EXPECT_TRUE((*up)[0].violation());
}

// A server lets a connection open only so many streams: a CheckStream per thread leaves the
// threads past that limit waiting until their deadline; a pool of that many streams serves
// every thread.
TEST_F(CheckStreamTest, ThreadsPastTheServersStreamLimitShareThePoolsStreams) {
  StopServer();
  StartServer(/*max_streams=*/2);
  // A new channel: the old one may not have taken in the stopped server's GOAWAY yet, and a
  // call it starts then fails UNAVAILABLE (1 run in 3 on a loaded host).
  ASSERT_NO_FATAL_FAILURE(Connect());
  {
    CheckStream first(client_.get()), second(client_.get()), third(client_.get());
    ASSERT_OK(first.Check({TextRequest(UnrelatedText())}, std::chrono::seconds(20)));
    ASSERT_OK(second.Check({TextRequest(UnrelatedText())}, std::chrono::seconds(20)));
    auto waiting = third.Check({TextRequest(UnrelatedText())}, std::chrono::milliseconds(500));
    EXPECT_EQ(waiting.status().code(), absl::StatusCode::kDeadlineExceeded) << waiting.status();
  }

  CheckStreamPool pool(client_.get(), 2);
  std::vector<std::thread> threads;
  std::atomic<int> violations{0}, failures{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 2; ++round) {
        auto replies = pool.Check({TextRequest(ParagraphInsideNewText(Corpus()[0].body))},
                                  std::chrono::seconds(30));
        if (!replies.ok()) {
          ++failures;
        } else if ((*replies)[0].violation()) {
          ++violations;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(violations.load(), 12);
}

TEST_F(CheckStreamTest, ServerThatNeverAnswersHitsTheDeadline) {
  // A TCP listener that accepts nothing: the connection never completes its handshake.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto silent = Client::Connect(options);
  ASSERT_OK(silent);
  CheckStream stream(silent->get());
  const auto start = std::chrono::steady_clock::now();
  auto r = stream.Check({TextRequest(UnrelatedText())}, std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(2));
  close(fd);
}

}  // namespace
}  // namespace cops
