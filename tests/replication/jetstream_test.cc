// JetStream::Connect with NATS's own security, against a real nats-server whose users have
// per-subject permissions (the least-privilege setup of docs/scale-out.md, "NATS's own
// security"). Skipped with a message when nats-server is not installed.

#include "replication/jetstream.h"

#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "replication/partitioning.h"
#include "replication/registration_event.h"
#include "replication/registration_log.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// A router may publish to the partitions' subjects and use the JetStream API; a follower may
// only use the API to read (consumers, acks): it publishes no event.
constexpr char kAuthorization[] = R"(
authorization {
  users = [
    {user: router, password: "router-secret",
     permissions: {publish: {allow: ["cops.registrations.>", "$JS.API.>"]},
                   subscribe: {allow: ["_INBOX.>"]}}}
    {user: follower, password: "follower-secret",
     permissions: {publish: {allow: ["$JS.API.INFO", "$JS.API.STREAM.INFO.>",
                                     "$JS.API.CONSUMER.>", "$JS.ACK.>"]},
                   subscribe: {allow: ["_INBOX.>"]}}}
  ]
}
)";

class NatsSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    const std::string config = dir_.Join("nats.conf");
    std::ofstream(config) << kAuthorization;
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::StartWith(dir_.Join("nats"), 0,
                                                               {"-c", config}));
  }

  RegistrationStreamOptions As(const std::string& user, const std::string& password) const {
    RegistrationStreamOptions options;
    options.url = nats_->url();
    options.security.user = user;
    options.security.password = password;
    options.publish_timeout_ms = 1000;
    return options;
  }

  static RegistrationEvent Unregistration() {
    RegistrationEvent event;
    event.kind = RegistrationEventKind::kUnregister;
    event.doc_id = 7;
    return event;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NatsServer> nats_;
};

// Without credentials, or with a wrong password, no connection is made, so nothing can be
// published to the registration subjects; the router's credentials publish.
TEST_F(NatsSecurityTest, AClientWithoutCredentialsCannotPublishRegistrations) {
  RegistrationStreamOptions anonymous = As("", "");
  EXPECT_FALSE(JetStream::Connect(anonymous).ok());
  EXPECT_FALSE(JetStream::Connect(As("router", "guess")).ok());

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> router,
                       JetStream::Connect(As("router", "router-secret")));
  RegistrationLog log(router.get());
  EXPECT_OK(log.PublishTo(PartitionSubject(router->options().subject, 0), Unregistration())
                .status());
}

// A follower's credentials connect (the stream exists) but publish no event.
TEST_F(NatsSecurityTest, AFollowerCannotPublishRegistrations) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> router,
                       JetStream::Connect(As("router", "router-secret")));
  RegistrationStreamOptions follower_options = As("follower", "follower-secret");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> follower,
                       JetStream::Connect(follower_options));
  RegistrationLog log(follower.get());
  EXPECT_FALSE(
      log.PublishTo(PartitionSubject(follower->options().subject, 0), Unregistration()).ok());
}

// Options that go together are refused apart, before any connection.
TEST_F(NatsSecurityTest, AUserWithoutPasswordIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(JetStream::Connect(As("router", "")).status()));
}

}  // namespace
}  // namespace cops
