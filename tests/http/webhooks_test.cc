// The webhook rules that need no network: which addresses are special (never called unless
// named), how callback URLs and allow-list entries are checked, and the signature format;
// and that a registration (URL and secret) kept in the access store survives a restart.

#include "http/webhooks.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/principal_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

TEST(SpecialAddressKindTest, InternalRangesAreNamedAndPublicOnesAreNot) {
  EXPECT_EQ(SpecialAddressKind("127.0.0.1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("127.255.0.9"), "loopback");
  EXPECT_EQ(SpecialAddressKind("169.254.169.254"), "link-local");  // cloud metadata
  EXPECT_EQ(SpecialAddressKind("10.1.2.3"), "private");
  EXPECT_EQ(SpecialAddressKind("172.16.0.1"), "private");
  EXPECT_EQ(SpecialAddressKind("172.31.255.255"), "private");
  EXPECT_EQ(SpecialAddressKind("192.168.1.1"), "private");
  EXPECT_EQ(SpecialAddressKind("100.64.0.1"), "shared (carrier-grade NAT)");
  EXPECT_EQ(SpecialAddressKind("0.0.0.0"), "this-network (0.0.0.0/8)");
  EXPECT_EQ(SpecialAddressKind("224.0.0.1"), "multicast");
  EXPECT_EQ(SpecialAddressKind("255.255.255.255"), "reserved");
  EXPECT_EQ(SpecialAddressKind("::1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("::"), "this-network (::)");
  EXPECT_EQ(SpecialAddressKind("fe80::1"), "link-local");
  EXPECT_EQ(SpecialAddressKind("fd00::5"), "private (unique local)");
  // IPv4 inside IPv6 is judged by the IPv4 address.
  EXPECT_EQ(SpecialAddressKind("::ffff:127.0.0.1"), "loopback");
  EXPECT_EQ(SpecialAddressKind("::ffff:10.0.0.1"), "private");
  EXPECT_EQ(SpecialAddressKind("64:ff9b::a9fe:a9fe"), "link-local");
  EXPECT_EQ(SpecialAddressKind("2002:7f00:1::"), "loopback");
  // Public.
  EXPECT_EQ(SpecialAddressKind("8.8.8.8"), "");
  EXPECT_EQ(SpecialAddressKind("172.32.0.1"), "");
  EXPECT_EQ(SpecialAddressKind("2606:4700::1111"), "");
  EXPECT_EQ(SpecialAddressKind("::ffff:8.8.8.8"), "");
}

TEST(WebhookSignatureTest, IsHmacSha256OfTimestampDotBody) {
  // Reference: printf '1700000000.{"id":"job_1"}' | openssl dgst -sha256 -hmac whsec_test
  EXPECT_EQ(WebhookSignature("whsec_test", 1700000000, R"({"id":"job_1"})"),
            "t=1700000000,v1=270236e1194a25b49b6be7643976ceaadf24e8d2e0795d96cb5a46ae962050a7");
}

TEST(WebhookAllowListTest, MalformedEntriesAreRefused) {
  EXPECT_OK(Webhooks::CheckAllowList({"*", "hooks.example.org", "hooks.example.org:8443",
                                      "127.0.0.1:9000", "[::1]:9000", "::1"}));
  for (const char* bad : {"", "host:", "host:99999", "host:x", "*.example.org", "[::1",
                          "a b", "[::1]x"}) {
    absl::Status s = Webhooks::CheckAllowList({bad});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
}

TEST(WebhookResolveTest, OnlyAllowedHostsAndAddressesAreCalled) {
  WebhookOptions options;
  options.workers = 1;
  options.allow = {"*", "127.0.0.1:9000"};
  Webhooks webhooks(options);
  ASSERT_OK_AND_ASSIGN(CallbackTarget target, webhooks.Resolve("http://127.0.0.1:9000/hook?x=1"));
  EXPECT_EQ(target.address, "127.0.0.1");
  EXPECT_EQ(target.port, 9000);
  EXPECT_EQ(target.path, "/hook?x=1");
  const struct {
    const char* url;
    const char* why;
  } kRefused[] = {
      {"http://127.0.0.1:9001/", "loopback"},  // the named address, another port
      {"http://169.254.169.254/latest/meta-data/", "link-local"},
      {"http://10.0.0.7/", "private"},
      {"http://[::1]:9000/", "loopback"},
      {"http://[::ffff:127.0.0.1]:9000/", "loopback"},
      {"http://localhost:9001/", "loopback"},  // a name is judged by its addresses
      {"http://0x7f000001:9001/", "loopback"},
      {"ftp://example.org/", "only http and https"},
      {"http://user@example.org/", "'@'"},
      {"/relative", "absolute"},
      {"http://exa mple.org/", "spaces"},
  };
  for (const auto& c : kRefused) {
    absl::StatusOr<CallbackTarget> t = webhooks.Resolve(c.url);
    ASSERT_FALSE(t.ok()) << c.url;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.url << ": " << t.status();
    EXPECT_NE(t.status().message().find(c.why), std::string::npos) << c.url << ": " << t.status();
  }
  WebhookOptions strict_options;
  strict_options.allow = {"hooks.example.org"};
  strict_options.workers = 1;
  Webhooks strict(strict_options);
  absl::StatusOr<CallbackTarget> t = strict.Resolve("http://other.example.org/");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not on the webhook allow-list"), std::string::npos)
      << t.status();
  Webhooks none(WebhookOptions{});
  EXPECT_FALSE(none.Resolve("http://127.0.0.1:9000/").ok());
}

// A restart (the store closed and opened again, new Webhooks) keeps each principal's URL and
// secret: a delivery after it is signed with the secret shown before it. A deletion is kept
// too.
TEST(WebhookStoreTest, ARestartKeepsTheWebhookAndItsSecret) {
  testing::TempDir dir("webhook_store");
  // The receiver: the signature header and body of what it is sent.
  absl::Mutex mu;
  std::string signature, body;
  httplib::Server receiver;
  receiver.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    signature = req.get_header_value("X-COPS-Signature");
    body = req.body;
    res.status = 204;
  });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { receiver.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  WebhookOptions options;
  options.allow = {"127.0.0.1"};
  std::string secret;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                         PrincipalStore::Open((dir.path() / "access").string()));
    options.store = store.get();
    Webhooks before(options);
    ASSERT_OK(before.Load());
    ASSERT_OK_AND_ASSIGN(secret, before.Register("acm-press", url));
    ASSERT_OK(before.Register("ieee-press", "").status());
    ASSERT_OK(before.Unregister("ieee-press"));
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                       PrincipalStore::Open((dir.path() / "access").string()));
  options.store = store.get();
  Webhooks after(options);
  ASSERT_OK(after.Load());
  EXPECT_EQ(after.RegisteredUrl("acm-press"), url);
  EXPECT_EQ(after.RegisteredUrl("ieee-press"), std::nullopt);
  after.Deliver("job-1", "owner-tag", "acm-press", url, R"({"id":"job-1","state":"done"})");
  std::string sent, sent_body;
  for (int i = 0; i < 3000 && sent.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    absl::MutexLock lock(&mu);
    sent = signature;
    sent_body = body;
  }
  receiver.stop();
  serving.join();
  ASSERT_TRUE(sent.starts_with("t=")) << sent;
  const int64_t t = std::stoll(sent.substr(2, sent.find(',') - 2));
  EXPECT_EQ(sent, WebhookSignature(secret, t, sent_body));
}

}  // namespace
}  // namespace cops
