#include "client/client_security.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops_admin.grpc.pb.h"
#include "server/access_control.h"
#include "server/admin_service.h"
#include "server/transport_security.h"
#include "tests/server/test_certificates.h"

namespace cops {
namespace {

class ClientSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "client_tls_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(pki_.Create(dir_));
    ASSERT_TRUE(pki_.MakeClient("client", "gateway"));
    auto ac = OpenAccessControl(dir_.string(), /*bootstrap_admin=*/true);
    ASSERT_TRUE(ac.ok()) << ac.status();
    access_ = *std::move(ac);
    std::ifstream(dir_ / "admin.key") >> admin_key_;
    PrincipalRecord gateway;
    gateway.name = "gateway";
    gateway.role = static_cast<uint8_t>(Role::kAdmin);
    ASSERT_TRUE(access_->CreatePrincipal(gateway).ok());
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), AdminIndexHooks{}, "");
    auto creds = MakeServerCredentials(
        {pki_.Path("server.pem"), pki_.Path("server.key"), pki_.Path("ca.pem")});
    ASSERT_TRUE(creds.ok()) << creds.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *creds, &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  grpc::Status List(const ClientSecurityOptions& options) {
    auto channel = OpenSecureChannel("127.0.0.1:" + std::to_string(port_), options,
                                     grpc::ChannelArguments());
    EXPECT_TRUE(channel.ok()) << channel.status();
    auto stub = v1::Admin::NewStub(*channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    AttachApiKey(options, &ctx);
    v1::ListCollectionsResponse resp;
    return stub->ListCollections(&ctx, v1::ListCollectionsRequest(), &resp);
  }

  std::filesystem::path dir_;
  testing::TestPki pki_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string admin_key_;
};

TEST_F(ClientSecurityTest, MutualTlsWithCertificateOrKey) {
  ClientSecurityOptions options;
  options.tls_ca = pki_.Path("ca.pem");
  options.tls_cert = pki_.Path("client.pem");
  options.tls_key = pki_.Path("client.key");
  options.tls_server_name = "localhost";
  EXPECT_TRUE(List(options).ok());  // the certificate names principal "gateway"
  options.api_key = admin_key_;
  EXPECT_TRUE(List(options).ok());
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
