#ifndef COPS_TESTS_CLIENT_COPY_DETECTION_SERVER_H_
#define COPS_TESTS_CLIENT_COPY_DETECTION_SERVER_H_

// The real CopyDetection service over a fresh data directory in a TempDir, for the client
// library's tests: CopyDetectionStack (the service) and CopyDetectionServer (served, with a
// Client).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "access/access_control.h"
#include "access/audit_sink.h"
#include "access/open_authorizer.h"
#include "access/usage_ledger.h"
#include "client/client.h"
#include "engine/index_generations.h"
#include "gtest/gtest.h"
#include "server/service.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops::testing {

// The real CopyDetection service, not yet served: a data directory under `root`
// (IndexGenerations with default options), an access store for collections, usage and audit,
// and every caller a local admin, as with copsd --auth=off. For tests that run their own
// grpc::Server (check_stream_test restarts one on the same port).
class CopyDetectionStack {
 public:
  // Check ok() afterwards; a failure has been reported to gtest already. Checks and
  // registrations go through `admission` when given; the detector reads `now_micros` (the
  // wall clock when null) for registration times, expiries and embargoes.
  // REQUIRES: `root` and `admission` outlive the stack.
  explicit CopyDetectionStack(const TempDir& root, AdmissionControl* admission = nullptr,
                              std::function<int64_t()> now_micros = nullptr) {
    IndexGenerationsOptions index_options;
    index_options.data_dir = root.Join("data");
    if (now_micros != nullptr) index_options.detector.now_micros = std::move(now_micros);
    auto generations = IndexGenerations::Open(index_options);
    EXPECT_OK(generations.status());
    auto access = OpenAccessControl(root.Join("data"), /*bootstrap_admin=*/false);
    EXPECT_OK(access.status());
    if (!generations.ok() || !access.ok()) return;
    generations_ = *std::move(generations);
    access_ = *std::move(access);
    authorizer_ = std::make_unique<OpenAuthorizer>(access_.get());
    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()),
                                         MatchesFrom(access_->store()));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), authorizer_.get(),
                                                      usage_.get(), audit_.get(),
                                                      /*receipts=*/nullptr, /*writes=*/nullptr,
                                                      admission);
  }

  bool ok() const { return service_ != nullptr; }
  CopyDetectionService* service() { return service_.get(); }
  IndexGenerations* generations() { return generations_.get(); }
  AccessControl* access() { return access_.get(); }

 private:
  // Declared in order of construction; destroyed in reverse.
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<OpenAuthorizer> authorizer_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::unique_ptr<CopyDetectionService> service_;
};

// CopyDetectionStack served in process (testing::TestServer), and a Client of it: what the
// client library's tests talk to.
class CopyDetectionServer {
 public:
  // Check ok() afterwards; a failure has been reported to gtest already.
  CopyDetectionServer() : dir_("cops_client"), stack_(dir_) {
    if (!stack_.ok()) return;
    auto server = TestServer::Start({stack_.service()});
    EXPECT_OK(server.status());
    if (!server.ok()) return;
    server_ = *std::move(server);
    ClientOptions options;
    options.target = server_->address();
    options.timeout = std::chrono::seconds(30);
    auto client = Client::Connect(options);
    EXPECT_OK(client.status());
    if (client.ok()) client_ = *std::move(client);
  }

  bool ok() const { return client_ != nullptr; }
  Client* client() { return client_.get(); }
  // A directory for the test's own files, removed with the server.
  const std::filesystem::path& dir() const { return dir_.path(); }

  // Writes `content` to dir()/name (creating folders) and returns the path.
  std::string Write(const std::string& name, const std::string& content) const {
    const std::filesystem::path p = dir_.path() / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

  // Registers `content` in `collection`; its doc_id, 0 on failure (reported to gtest).
  uint64_t Register(const std::string& title, const std::string& content,
                    const std::string& collection = "") {
    v1::Document d;
    d.set_content(content);
    d.mutable_metadata()->set_title(title);
    d.mutable_metadata()->set_collection(collection);
    auto reply = client_->Register(d);
    EXPECT_OK(reply.status());
    return reply.ok() ? reply->doc_id() : 0;
  }

 private:
  // Declared in order of construction; destroyed in reverse (client, server, stack, dir).
  TempDir dir_;
  CopyDetectionStack stack_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_CLIENT_COPY_DETECTION_SERVER_H_
