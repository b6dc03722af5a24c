#include "access/transport_security.h"

#include <filesystem>
#include <memory>
#include <string>

#include "access/access_control.h"
#include "access/open_authorizer.h"
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

TEST(ListenerSecurityTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:7411"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3:1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:7411"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:7411"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:7411"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:7411"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.7:7411"));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1.evil.example:7411"));
  EXPECT_FALSE(IsLoopbackAddress(":7411"));
}

TEST(ListenerSecurityTest, RemoteListenerNeedsTlsAndAuthUnlessAllowed) {
  EXPECT_OK(CheckListenerSecurity("127.0.0.1:7411", false, false, false));
  absl::Status s = CheckListenerSecurity("0.0.0.0:7411", /*tls=*/false, /*auth=*/true, false);
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_NE(s.message().find("--tls-cert"), std::string::npos) << s;
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckListenerSecurity("0.0.0.0:7411", true, false, false)));
  EXPECT_OK(CheckListenerSecurity("0.0.0.0:7411", true, true, false));
  EXPECT_OK(CheckListenerSecurity("0.0.0.0:7411", false, false, /*allow=*/true));
}

TEST(ListenerSecurityTest, AuthModes) {
  const TlsFiles none;
  const TlsFiles tls{"server.pem", "server.key", ""};
  const TlsFiles mutual{"server.pem", "server.key", "ca.pem"};
  EXPECT_EQ(AuthRequired(*ParseAuthMode("auto"), "0.0.0.0:1", none).value(), true);
  EXPECT_EQ(AuthRequired(*ParseAuthMode("auto"), "127.0.0.1:1", none).value(), false);
  EXPECT_EQ(AuthRequired(*ParseAuthMode("auto"), "127.0.0.1:1", tls).value(), false);
  EXPECT_EQ(AuthRequired(*ParseAuthMode("on"), "127.0.0.1:1", none).value(), true);
  EXPECT_EQ(AuthRequired(*ParseAuthMode("off"), "0.0.0.0:1", none).value(), false);
  // Client certificates name principals: with mutual TLS, auto is on even on loopback, and
  // off is refused.
  EXPECT_EQ(AuthRequired(*ParseAuthMode("auto"), "127.0.0.1:1", mutual).value(), true);
  EXPECT_EQ(AuthRequired(*ParseAuthMode("on"), "127.0.0.1:1", mutual).value(), true);
  absl::Status off = AuthRequired(*ParseAuthMode("off"), "127.0.0.1:1", mutual).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(off)) << off;
  EXPECT_NE(off.message().find("--tls-client-ca"), std::string::npos) << off;
  EXPECT_TRUE(absl::IsInvalidArgument(ParseAuthMode("yes").status()));
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.Create(dir_.path())) << "openssl could not make the test certificates";
    ASSERT_TRUE(pki_.MakeClient("admin-client", "tls-admin"));
    ASSERT_TRUE(pki_.MakeClient("checker-client", "pc-member"));
    ASSERT_TRUE(pki_.MakeClient("stranger-client", "stranger"));
    ASSERT_TRUE(pki_.MakeClient("forged-client", "tls-admin", "other-ca"));

    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                         PrincipalStore::Open(dir_.Join("access")));
    ASSERT_OK_AND_ASSIGN(access_, AccessControl::Open(std::move(store)));
    PrincipalRecord admin;
    admin.name = "tls-admin";
    admin.role = static_cast<uint8_t>(Role::kAdmin);
    ASSERT_OK_AND_ASSIGN(auto key, access_->CreatePrincipal(admin));
    admin_key_ = key.api_key;
    PrincipalRecord checker;
    checker.name = "pc-member";
    checker.role = static_cast<uint8_t>(Role::kChecker);
    checker.collections = {"acm"};
    ASSERT_OK_AND_ASSIGN(key, access_->CreatePrincipal(checker));
    checker_key_ = key.api_key;
    usage_ = std::make_unique<UsageLedger>(access_->store());
    service_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                              /*generations=*/nullptr);
  }

  void Start(const TlsFiles& files) {
    ASSERT_OK_AND_ASSIGN(auto creds, MakeServerCredentials(files));
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get()}, creds));
  }

  TlsFiles ServerFiles(bool mutual) const {
    return TlsFiles{pki_.Path("server.pem"), pki_.Path("server.key"),
                    mutual ? pki_.Path("ca.pem") : ""};
  }

  // A TLS channel trusting the test CA, optionally presenting client certificate `client`.
  std::unique_ptr<v1::Admin::Stub> TlsStub(const std::string& client = "") {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = pki_.Pem("ca.pem");
    if (!client.empty()) {
      options.pem_cert_chain = pki_.Pem(client + ".pem");
      options.pem_private_key = pki_.Pem(client + ".key");
    }
    // An IP target (no DNS lookup) checked against the certificate's name "localhost".
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return v1::Admin::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::SslCredentials(options), args));
  }

  grpc::Status List(v1::Admin::Stub* stub, const std::string& api_key = "") {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, api_key);
    v1::ListCollectionsRequest req;
    v1::ListCollectionsResponse resp;
    return stub->ListCollections(&ctx, req, &resp);
  }

  testing::TempDir dir_{"tls"};
  testing::TestPki pki_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AdminService> service_;
  std::unique_ptr<testing::TestServer> server_;
  std::string admin_key_;
  std::string checker_key_;
};

TEST_F(TlsTest, TlsCarriesApiKeys) {
  Start(ServerFiles(/*mutual=*/false));
  auto stub = TlsStub();
  EXPECT_OK(List(stub.get(), admin_key_));
  EXPECT_EQ(List(stub.get(), checker_key_).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(List(stub.get()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A plaintext client cannot talk to a TLS listener at all.
  auto plain = server_->NewStub<v1::Admin>();
  EXPECT_EQ(List(plain.get(), admin_key_).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, MutualTlsCertificateNamesThePrincipal) {
  Start(ServerFiles(/*mutual=*/true));
  // No API key: the verified certificate's CN is the principal.
  auto admin = TlsStub("admin-client");
  EXPECT_OK(List(admin.get()));
  auto checker = TlsStub("checker-client");
  EXPECT_EQ(List(checker.get()).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  auto stranger = TlsStub("stranger-client");
  EXPECT_EQ(List(stranger.get()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // An API key wins over the certificate.
  EXPECT_OK(List(stranger.get(), admin_key_));
}

// The open authorizer (every caller a local admin) served over mutual TLS, which copsd
// refuses to start: any certificate, naming a principal or not, is still refused per call.
TEST_F(TlsTest, OpenModeRefusesEveryClientCertificate) {
  OpenAuthorizer open(access_.get());
  AdminService open_service(&open, access_.get(), usage_.get(), /*generations=*/nullptr);
  ASSERT_OK_AND_ASSIGN(auto creds, MakeServerCredentials(ServerFiles(/*mutual=*/true)));
  ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({&open_service}, creds));
  for (const char* client : {"stranger-client", "admin-client"}) {
    auto stub = TlsStub(client);
    const grpc::Status status = List(stub.get());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << client;
    EXPECT_NE(status.error_message().find("--auth=off"), std::string::npos)
        << status.error_message();
  }
  server_.reset();  // before open_service goes
  // Without mutual TLS no certificate is asked for, and the open mode serves the caller.
  ASSERT_OK_AND_ASSIGN(creds, MakeServerCredentials(ServerFiles(/*mutual=*/false)));
  ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({&open_service}, creds));
  auto stub = TlsStub();
  EXPECT_OK(List(stub.get()));
  server_.reset();
}

TEST_F(TlsTest, MutualTlsRefusesMissingOrForeignCertificates) {
  Start(ServerFiles(/*mutual=*/true));
  auto anonymous = TlsStub();
  EXPECT_EQ(List(anonymous.get(), admin_key_).error_code(), grpc::StatusCode::UNAVAILABLE);
  // Same CN as the admin, signed by another CA: the handshake fails.
  auto forged = TlsStub("forged-client");
  EXPECT_EQ(List(forged.get()).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, CredentialFilesAreValidated) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      MakeServerCredentials({pki_.Path("server.pem"), "", ""}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MakeServerCredentials({"", "", pki_.Path("ca.pem")}).status()));
  EXPECT_TRUE(absl::IsNotFound(
      MakeServerCredentials({pki_.Path("missing.pem"), pki_.Path("server.key"), ""}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      MakeServerCredentials({pki_.Path("server.ext"), pki_.Path("server.key"), ""}).status()));
}

}  // namespace
}  // namespace cops
