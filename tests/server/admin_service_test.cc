#include "server/admin_service.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "engine/index_generations.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

// The Admin service on a loopback port, over a real AccessControl and an index holding two
// documents of two owners.
class AdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(access_,
                         OpenAccessControl(dir_.path().string(), /*bootstrap_admin=*/true));
    std::ifstream(dir_.path() / "admin.key") >> admin_key_;
    IndexGenerationsOptions options;
    options.data_dir = dir_.path().string();
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    uint32_t seed = 0;
    for (auto [id, owner] : {std::pair<DocId, const char*>{1, "acm-press"}, {2, "acm-other"}}) {
      DocumentRecord r;
      r.owner = owner;
      r.collection = "acm";
      ASSERT_OK(generations_->WithWriter([&](CopyDetector& detector) -> absl::Status {
        auto registered =
            detector.Register(testing_corpus::Prose(++seed, 200), DocumentFormat::kText, r);
        if (!registered.ok()) return registered.status();
        EXPECT_EQ(registered->outcome.id, id);
        return absl::OkStatus();
      }));
    }
    usage_ = std::make_unique<UsageLedger>(access_->store());
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                              generations_.get());
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get()}));
    stub_ = server_->NewStub<v1::Admin>();
    owner_key_ = CreatePrincipal("acm-press", v1::PRINCIPAL_ROLE_OWNER, "acm");
    checker_key_ = CreatePrincipal("sigmod-pc", v1::PRINCIPAL_ROLE_CHECKER, "acm");
  }
  std::string CreatePrincipal(const std::string& name, v1::PrincipalRole role,
                              const std::string& collection) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, admin_key_);
    v1::CreatePrincipalRequest req;
    req.set_name(name);
    req.set_role(role);
    req.add_collections(collection);
    v1::CreatePrincipalResponse resp;
    EXPECT_OK(stub_->CreatePrincipal(&ctx, req, &resp));
    return resp.api_key();
  }

  grpc::Status Audit(const std::string& key, DocId id, v1::QueryAuditResponse* resp) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::QueryAuditRequest req;
    req.set_doc_id(id);
    return stub_->QueryAudit(&ctx, req, resp);
  }

  grpc::Status Snapshot(const std::string& key, const std::string& name) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::CreateSnapshotRequest req;
    req.set_name(name);
    v1::CreateSnapshotResponse resp;
    return stub_->CreateSnapshot(&ctx, req, &resp);
  }

  testing::TempDir dir_{"admin_svc"};
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<testing::TestServer> server_;  // stops before the services go
  std::unique_ptr<v1::Admin::Stub> stub_;
  std::string admin_key_, owner_key_, checker_key_;
};

TEST_F(AdminServiceTest, OwnersReadTheAuditOfTheirOwnDocumentsOnly) {
  ASSERT_OK(access_->store()->AppendAudit({{1, "acm", 1, "sigmod-pc", 0.8, 0.5, 12, true, "", ""},
                                           {2, "acm", 2, "sigmod-pc", 0.3, 0.1, 4, false, "", ""}}));
  v1::QueryAuditResponse resp;
  ASSERT_OK(Audit(owner_key_, 1, &resp));
  ASSERT_EQ(resp.entries_size(), 1);
  EXPECT_EQ(resp.entries(0).checker(), "sigmod-pc");
  EXPECT_DOUBLE_EQ(resp.entries(0).ratio(), 0.8);
  EXPECT_TRUE(resp.entries(0).violation());
  // Another owner's document in the same collection.
  EXPECT_EQ(Audit(owner_key_, 2, &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Checkers cannot learn who else checked.
  EXPECT_EQ(Audit(checker_key_, 1, &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Audit(owner_key_, 99, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::QueryAuditResponse all;
  ASSERT_OK(Audit(admin_key_, 2, &all));
  EXPECT_EQ(all.entries_size(), 1);
  EXPECT_EQ(Audit("", 1, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AdminServiceTest, AdminRpcsRefuseOtherRoles) {
  for (const std::string& key : {owner_key_, checker_key_}) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::ListPrincipalsResponse resp;
    EXPECT_EQ(stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &resp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(Snapshot(owner_key_, "s1").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "snapshots" / "s1"));
}

TEST_F(AdminServiceTest, ListingsNeverCarrySecrets) {
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  v1::ListPrincipalsResponse resp;
  ASSERT_OK(stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &resp));
  EXPECT_EQ(resp.principals_size(), 3);
  const std::string dump = resp.DebugString();
  for (const std::string& key : {admin_key_, owner_key_, checker_key_}) {
    EXPECT_EQ(dump.find(key.substr(key.rfind('_') + 1)), std::string::npos);
  }
}

TEST_F(AdminServiceTest, SnapshotsStayUnderTheSnapshotDirectory) {
  EXPECT_EQ(Snapshot(admin_key_, "../escape").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Snapshot(admin_key_, "..").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Snapshot(admin_key_, "a/b").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_OK(Snapshot(admin_key_, "gateway-1"));
  const std::filesystem::path snapshot = dir_.path() / "snapshots" / "gateway-1";
  EXPECT_TRUE(std::filesystem::exists(snapshot / "index" / "CURRENT")) << "a data directory";
  EXPECT_TRUE(std::filesystem::exists(snapshot / "hash.key"));
  EXPECT_EQ(std::filesystem::directory_iterator(dir_.path() / "snapshots")->path(), snapshot);
  EXPECT_EQ(Snapshot(admin_key_, "gateway-1").error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

TEST_F(AdminServiceTest, RevokedKeyFailsOnTheNextCall) {
  std::string key = CreatePrincipal("temp-admin", v1::PRINCIPAL_ROLE_ADMIN, "acm");
  const std::string key_id = key.substr(5, 16);
  v1::QueryAuditResponse resp;
  ASSERT_OK(Audit(key, 1, &resp));
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  v1::RevokeApiKeyRequest req;
  req.set_key_id(key_id);
  v1::RevokeApiKeyResponse revoked;
  ASSERT_OK(stub_->RevokeApiKey(&ctx, req, &revoked));
  EXPECT_EQ(Audit(key, 1, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AdminServiceTest, EachCallLogsOneRpcLine) {
  std::ostringstream lines;
  auto previous = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
  sink->set_pattern("%v");
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("admin-test", sink));
  ASSERT_OK(Snapshot(admin_key_, "nightly"));
  EXPECT_EQ(Snapshot(owner_key_, "mine").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  spdlog::set_default_logger(previous);

  std::vector<std::string> rpcs;
  std::istringstream in(lines.str());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("rpc ", 0) == 0) rpcs.push_back(line);
  }
  ASSERT_EQ(rpcs.size(), 2u) << lines.str();
  EXPECT_NE(rpcs[0].find("method=CreateSnapshot status=OK"), std::string::npos) << rpcs[0];
  EXPECT_NE(rpcs[0].find("principal=admin"), std::string::npos) << rpcs[0];
  EXPECT_NE(rpcs[1].find("method=CreateSnapshot status=PERMISSION_DENIED"), std::string::npos)
      << rpcs[1];
  EXPECT_NE(rpcs[1].find("principal=acm-press"), std::string::npos) << rpcs[1];
}

}  // namespace
}  // namespace cops
