#include "server/admin_service.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

// The Admin service on a loopback port, over a real AccessControl and a fake index holding
// two documents of two owners.
class AdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "admin_svc_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto ac = OpenAccessControl(dir_.string(), /*bootstrap_admin=*/true);
    ASSERT_TRUE(ac.ok()) << ac.status();
    access_ = *std::move(ac);
    std::ifstream(dir_ / "admin.key") >> admin_key_;
    for (auto [id, owner] : {std::pair<DocId, const char*>{1, "acm-press"}, {2, "acm-other"}}) {
      DocumentRecord r;
      r.id = id;
      r.owner = owner;
      r.collection = "acm";
      docs_[id] = r;
    }
    AdminIndexHooks hooks;
    hooks.get_document = [this](DocId id) -> absl::StatusOr<DocumentRecord> {
      auto it = docs_.find(id);
      if (it == docs_.end()) return absl::NotFoundError("no document " + std::to_string(id));
      return it->second;
    };
    hooks.create_snapshot = [this](const std::string& dir) {
      snapshots_.push_back(dir);
      std::filesystem::create_directories(dir);
      return absl::OkStatus();
    };
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), std::move(hooks),
                                              (dir_ / "snapshots").string());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Admin::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                                   grpc::InsecureChannelCredentials()));
    owner_key_ = CreatePrincipal("acm-press", v1::PRINCIPAL_ROLE_OWNER, "acm");
    checker_key_ = CreatePrincipal("sigmod-pc", v1::PRINCIPAL_ROLE_CHECKER, "acm");
  }
  void TearDown() override {
    server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  void Prepare(grpc::ClientContext* ctx, const std::string& key) {
    ctx->AddMetadata("authorization", "Bearer " + key);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  std::string CreatePrincipal(const std::string& name, v1::PrincipalRole role,
                              const std::string& collection) {
    grpc::ClientContext ctx;
    Prepare(&ctx, admin_key_);
    v1::CreatePrincipalRequest req;
    req.set_name(name);
    req.set_role(role);
    req.add_collections(collection);
    v1::CreatePrincipalResponse resp;
    grpc::Status s = stub_->CreatePrincipal(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.api_key();
  }

  grpc::Status Audit(const std::string& key, DocId id, v1::QueryAuditResponse* resp) {
    grpc::ClientContext ctx;
    Prepare(&ctx, key);
    v1::QueryAuditRequest req;
    req.set_doc_id(id);
    return stub_->QueryAudit(&ctx, req, resp);
  }

  grpc::Status Snapshot(const std::string& key, const std::string& name) {
    grpc::ClientContext ctx;
    Prepare(&ctx, key);
    v1::CreateSnapshotRequest req;
    req.set_name(name);
    v1::CreateSnapshotResponse resp;
    return stub_->CreateSnapshot(&ctx, req, &resp);
  }

  std::filesystem::path dir_;
  std::map<DocId, DocumentRecord> docs_;
  std::vector<std::string> snapshots_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Admin::Stub> stub_;
  int port_ = 0;
  std::string admin_key_, owner_key_, checker_key_;
};

TEST_F(AdminServiceTest, OwnersReadTheAuditOfTheirOwnDocumentsOnly) {
  Principal pc{"sigmod-pc", Role::kChecker, {"acm"}};
  access_->RecordCheck(pc, {{1, "acm", 0.8, 0.5, 12, true}, {2, "acm", 0.3, 0.1, 4, false}});
  v1::QueryAuditResponse resp;
  ASSERT_TRUE(Audit(owner_key_, 1, &resp).ok());
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
  ASSERT_TRUE(Audit(admin_key_, 2, &all).ok());
  EXPECT_EQ(all.entries_size(), 1);
  EXPECT_EQ(Audit("", 1, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AdminServiceTest, AdminRpcsRefuseOtherRoles) {
  for (const std::string& key : {owner_key_, checker_key_}) {
    grpc::ClientContext ctx;
    Prepare(&ctx, key);
    v1::ListPrincipalsResponse resp;
    EXPECT_EQ(stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &resp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(Snapshot(owner_key_, "s1").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(snapshots_.empty());
}

TEST_F(AdminServiceTest, ListingsNeverCarrySecrets) {
  grpc::ClientContext ctx;
  Prepare(&ctx, admin_key_);
  v1::ListPrincipalsResponse resp;
  ASSERT_TRUE(stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &resp).ok());
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
  ASSERT_TRUE(Snapshot(admin_key_, "gateway-1").ok());
  ASSERT_EQ(snapshots_.size(), 1u);
  EXPECT_EQ(snapshots_[0], (dir_ / "snapshots" / "gateway-1").string());
  EXPECT_EQ(Snapshot(admin_key_, "gateway-1").error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

TEST_F(AdminServiceTest, RevokedKeyFailsOnTheNextCall) {
  std::string key = CreatePrincipal("temp-admin", v1::PRINCIPAL_ROLE_ADMIN, "acm");
  const std::string key_id = key.substr(5, 16);
  v1::QueryAuditResponse resp;
  ASSERT_TRUE(Audit(key, 1, &resp).ok());
  grpc::ClientContext ctx;
  Prepare(&ctx, admin_key_);
  v1::RevokeApiKeyRequest req;
  req.set_key_id(key_id);
  v1::RevokeApiKeyResponse revoked;
  ASSERT_TRUE(stub_->RevokeApiKey(&ctx, req, &revoked).ok());
  EXPECT_EQ(Audit(key, 1, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace cops
