#include "client/client_security.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "access/access_control.h"
#include "access/transport_security.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "tests/server/test_certificates.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

class ClientSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.Create(dir_.path()));
    ASSERT_TRUE(pki_.MakeClient("client", "gateway"));
    ASSERT_OK_AND_ASSIGN(access_,
                         OpenAccessControl(dir_.path().string(), /*bootstrap_admin=*/true));
    std::ifstream(dir_.path() / "admin.key") >> admin_key_;
    PrincipalRecord gateway;
    gateway.name = "gateway";
    gateway.role = static_cast<uint8_t>(Role::kAdmin);
    ASSERT_OK(access_->CreatePrincipal(gateway));
    usage_ = std::make_unique<UsageLedger>(access_->store());
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                              /*generations=*/nullptr);
    ASSERT_OK_AND_ASSIGN(
        auto creds,
        MakeServerCredentials({pki_.Path("server.pem"), pki_.Path("server.key"),
                               pki_.Path("ca.pem")}));
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get()}, creds));
  }

  grpc::Status List(const ClientSecurityOptions& options) {
    auto channel = OpenSecureChannel(server_->address(), options, grpc::ChannelArguments());
    EXPECT_OK(channel);
    auto stub = v1::Admin::NewStub(*channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    AttachApiKey(options, &ctx);
    v1::ListCollectionsResponse resp;
    return stub->ListCollections(&ctx, v1::ListCollectionsRequest(), &resp);
  }

  testing::TempDir dir_{"client_tls"};
  testing::TestPki pki_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<testing::TestServer> server_;
  std::string admin_key_;
};

TEST_F(ClientSecurityTest, MutualTlsWithCertificateOrKey) {
  ClientSecurityOptions options;
  options.tls_ca = pki_.Path("ca.pem");
  options.tls_cert = pki_.Path("client.pem");
  options.tls_key = pki_.Path("client.key");
  options.tls_server_name = "localhost";
  EXPECT_OK(List(options));  // the certificate names principal "gateway"
  options.api_key = admin_key_;
  EXPECT_OK(List(options));
  options.api_key = "cops_0123456789abcdef_" + std::string(64, 'a');
  EXPECT_EQ(List(options).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Without a client certificate the handshake fails.
  options.tls_cert.clear();
  options.tls_key.clear();
  options.api_key = admin_key_;
  EXPECT_EQ(List(options).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ClientSecurityTest, BadFilesAreReported) {
  ClientSecurityOptions options;
  options.tls_cert = pki_.Path("client.pem");
  EXPECT_TRUE(absl::IsInvalidArgument(
      OpenSecureChannel("127.0.0.1:1", options, grpc::ChannelArguments()).status()));
  options.tls_cert.clear();
  options.tls_ca = pki_.Path("nonexistent.pem");
  EXPECT_TRUE(absl::IsNotFound(
      OpenSecureChannel("127.0.0.1:1", options, grpc::ChannelArguments()).status()));
}

TEST(ClientSecurityFlagsTest, ApiKeyComesFromFlagOrEnvironment) {
  ClientSecurityOptions options;
  CLI::App app;
  AddClientSecurityFlags(&app, &options);
  setenv("COPS_API_KEY", "cops_from_env", 1);
  app.parse(std::vector<std::string>{});
  EXPECT_EQ(options.api_key, "cops_from_env");
  EXPECT_FALSE(options.uses_tls());
  ClientSecurityOptions flagged;
  CLI::App app2;
  AddClientSecurityFlags(&app2, &flagged);
  // CLI11 parses a reversed argument vector.
  app2.parse(std::vector<std::string>{"ca.pem", "--tls-ca", "cops_from_flag", "--api-key"});
  unsetenv("COPS_API_KEY");
  EXPECT_EQ(flagged.api_key, "cops_from_flag");
  EXPECT_TRUE(flagged.uses_tls());
}

}  // namespace
}  // namespace cops
