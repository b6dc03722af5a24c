#ifndef COPS_TESTS_CLIENT_TEST_SERVER_H_
#define COPS_TESTS_CLIENT_TEST_SERVER_H_

// The real CopyDetection service over a fresh data directory in a temp directory, on an
// ephemeral loopback port with authentication off (copsd --auth=off), and a Client of it:
// what the client library's tests talk to.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "client/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/audit_sink.h"
#include "server/index_generations.h"
#include "server/open_authorizer.h"
#include "server/service.h"
#include "server/usage_ledger.h"
#include "storage/principal_store.h"

namespace cops::testing_server {

class TestServer {
 public:
  // Check ok() afterwards; a failure has been reported to gtest already.
  TestServer() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cops_client_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp";
      return;
    }
    dir_ = tmpl;
    // Default options (a new key, the default chunking), a principal store for usage and
    // audit, and every caller a local admin (as with copsd --auth=off).
    IndexGenerationsOptions index_options;
    index_options.data_dir = (dir_ / "data").string();
    auto generations = IndexGenerations::Open(index_options);
    auto store = PrincipalStore::Open((dir_ / "access").string());
    if (!generations.ok() || !store.ok()) {
      ADD_FAILURE() << generations.status() << " " << store.status();
      return;
    }
    generations_ = *std::move(generations);
    store_ = *std::move(store);
    usage_ = std::make_unique<UsageLedger>(store_.get());
    audit_ = std::make_unique<AuditSink>(AppendTo(store_.get()));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), &authorizer_,
                                                      usage_.get(), audit_.get());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(port_);
    options.timeout = std::chrono::seconds(30);
    auto client = Client::Connect(options);
    if (server_ == nullptr || !client.ok()) {
      ADD_FAILURE() << "cannot start the test server";
      return;
    }
    client_ = *std::move(client);
  }
  ~TestServer() {
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    service_.reset();
    audit_.reset();
    usage_.reset();
    store_.reset();
    generations_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool ok() const { return client_ != nullptr; }
  Client* client() { return client_.get(); }
  // A directory for the test's own files, removed with the server.
  const std::filesystem::path& dir() const { return dir_; }

  // Writes `content` to dir()/name (creating folders) and returns the path.
  std::string Write(const std::string& name, const std::string& content) const {
    const std::filesystem::path p = dir_ / name;
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
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? reply->doc_id() : 0;
  }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<PrincipalStore> store_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  OpenAuthorizer authorizer_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<Client> client_;
};

}  // namespace cops::testing_server

#endif  // COPS_TESTS_CLIENT_TEST_SERVER_H_
