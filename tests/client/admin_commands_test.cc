#include "client/admin_commands.h"

#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "access/access_control.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/admin_service.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

// Runs `cops admin ...` in process against a real Admin service on a loopback port.
class AdminCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                         PrincipalStore::Open(dir_.Join("access")));
    ASSERT_OK_AND_ASSIGN(access_, AccessControl::Open(std::move(store)));
    ASSERT_OK_AND_ASSIGN(auto admin, access_->BootstrapAdmin());
    ASSERT_TRUE(admin.has_value());
    admin_key_ = admin->api_key;
    usage_ = std::make_unique<UsageLedger>(access_->store());
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                              /*generations=*/nullptr);
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get()}));
  }

  // Runs the command line; returns the exit code and fills out_/err_.
  int Run(std::vector<std::string> args, const std::string& api_key, bool json = true) {
    CLI::App app("cops");
    int exit_code = -1;
    AdminCommandEnv env;
    env.connect = [this] { return server_->channel(); };
    env.prepare = [api_key](grpc::ClientContext* ctx) { testing::PrepareCall(ctx, api_key); };
    env.json = &json;
    env.exit_code = &exit_code;
    AddAdminCommands(&app, env);
    std::ostringstream out, err;
    std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
    std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
    std::vector<std::string> argv = {"cops"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<const char*> cargv;
    for (const auto& a : argv) cargv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(cargv.size()), cargv.data());
    } catch (const CLI::ParseError& e) {
      exit_code = 2;
      err << e.what();
    }
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    out_ = out.str();
    err_ = err.str();
    return exit_code;
  }

  absl::StatusOr<Principal> Login(const std::string& key) {
    CallCredentials c;
    c.api_key = key;
    c.peer = "ipv4:127.0.0.1:1";
    return access_->AuthenticateCredentials(c);
  }

  testing::TempDir dir_{"admin_cli"};
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<testing::TestServer> server_;
  std::string admin_key_;
  std::string out_, err_;
};

TEST_F(AdminCommandsTest, CreatedKeyWorksUntilRevoked) {
  ASSERT_EQ(Run({"admin", "principal", "create", "acm-press", "--role", "owner", "--collection",
                 "acm", "--max-documents", "100"},
                admin_key_),
            0)
      << err_;
  auto created = nlohmann::json::parse(out_);
  const std::string key = created["api_key"];
  const std::string key_id = created["key_id"];
  auto p = Login(key);
  ASSERT_OK(p);
  EXPECT_EQ(p->role, Role::kOwner);
  EXPECT_EQ(p->collections, std::vector<std::string>{"acm"});

  ASSERT_EQ(Run({"admin", "principal", "list"}, admin_key_), 0) << err_;
  auto listed = nlohmann::json::parse(out_);
  bool found = false;
  for (const auto& pr : listed["principals"]) {
    if (pr["name"] == "acm-press") {
      found = true;
      EXPECT_EQ(pr["role"], "owner");
      EXPECT_EQ(pr["max_documents"], 100);
      EXPECT_EQ(pr["keys"][0]["key_id"], key_id);
    }
  }
  EXPECT_TRUE(found) << out_;

  ASSERT_EQ(Run({"admin", "key", "revoke", key_id}, admin_key_), 0) << err_;
  EXPECT_TRUE(absl::IsUnauthenticated(Login(key).status()));
}

TEST_F(AdminCommandsTest, NonAdminsAreRefused) {
  ASSERT_EQ(Run({"admin", "principal", "create", "pc", "--role", "checker", "--collection", "acm"},
                admin_key_),
            0);
  const std::string checker_key = nlohmann::json::parse(out_)["api_key"];
  EXPECT_EQ(Run({"admin", "principal", "list"}, checker_key), 2);
  EXPECT_NE(err_.find("PERMISSION_DENIED"), std::string::npos) << err_;
  EXPECT_EQ(Run({"admin", "collection", "list"}, "cops_0000000000000000_" + std::string(64, '0')), 2);
  EXPECT_NE(err_.find("UNAUTHENTICATED"), std::string::npos) << err_;
}

TEST_F(AdminCommandsTest, CollectionSettingsAndGrants) {
  ASSERT_EQ(Run({"admin", "collection", "create", "arxiv", "--show-titles", "--no-audit"}, admin_key_),
            0)
      << err_;
  EXPECT_TRUE(access_->PolicyFor("arxiv").show_titles_to_checkers);
  EXPECT_FALSE(access_->PolicyFor("arxiv").keep_audit);
  ASSERT_EQ(Run({"admin", "principal", "create", "pc", "--role", "checker", "--collection", "acm"},
                admin_key_),
            0);
  ASSERT_EQ(Run({"admin", "principal", "grant", "pc", "--collection", "arxiv", "--collection", "acm"},
                admin_key_),
            0)
      << err_;
  Principal pc{"pc", Role::kChecker, {}, {}};
  EXPECT_EQ(access_->UsableCollections(pc), (std::vector<std::string>{"arxiv", "acm"}));
  // Human output names the collection.
  ASSERT_EQ(Run({"admin", "collection", "list"}, admin_key_, /*json=*/false), 0);
  EXPECT_NE(out_.find("arxiv\tshow_titles_to_checkers=1\tkeep_audit=0"), std::string::npos) << out_;
}

TEST_F(AdminCommandsTest, BadRoleIsAUsageError) {
  EXPECT_EQ(Run({"admin", "principal", "create", "x", "--role", "superuser"}, admin_key_), 2);
  EXPECT_TRUE(access_->ListPrincipals().size() == 1);  // only the bootstrap admin
}

// An Admin service whose every ListPrincipals fails with `code`.
class FailingAdmin final : public v1::Admin::Service {
 public:
  explicit FailingAdmin(grpc::StatusCode code) : code_(code) {}
  grpc::Status ListPrincipals(grpc::ServerContext*, const v1::ListPrincipalsRequest*,
                              v1::ListPrincipalsResponse*) override {
    return grpc::Status(code_, "access store: malformed principal record");
  }

 private:
  const grpc::StatusCode code_;
};

TEST_F(AdminCommandsTest, ServerFaultsArePrintedWithTheirCodeName) {
  for (auto [code, name] : {std::pair{grpc::StatusCode::INTERNAL, "INTERNAL"},
                            {grpc::StatusCode::DATA_LOSS, "DATA_LOSS"},
                            {grpc::StatusCode::ABORTED, "ABORTED"}}) {
    FailingAdmin failing(code);
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({&failing}));
    EXPECT_EQ(Run({"admin", "principal", "list"}, admin_key_), 2);
    EXPECT_EQ(err_,
              std::string("cops admin: ") + name + ": access store: malformed principal record\n");
    server_.reset();  // before `failing` goes
  }
}

}  // namespace
}  // namespace cops
