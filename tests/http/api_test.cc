// The HTTP/JSON API end to end over real loopback sockets: the real CopyDetection service
// with access control on (as copsd --auth=on), served by gRPC on 127.0.0.1:0, and HttpApi on
// 127.0.0.1:0 calling it. Registration, reads, listing, deletion, checks (JSON and HTML),
// jobs and Idempotency-Key replays; each kind of bad input with its status and JSON error;
// the OpenAPI description through a standard validator; and the curl examples of
// docs/api.md, run as written.

#include "http/api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "access/access_control.h"
#include "access/audit_sink.h"
#include "access/usage_ledger.h"
#include "client/check_report.h"
#include "client/client.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "server/admin_service.h"
#include "server/service.h"
#include "storage/data_dir.h"
#include "tests/server/test_certificates.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using nlohmann::json;
using testing_corpus::Prose;

// The source tree (docs/api.md, tools/npm), from the build: ctest's ENVIRONMENT property
// carries only the first of cops_add_test's variables.
constexpr const char* kSourceDir = COPS_HTTP_TEST_SOURCE_DIR;

// A webhook receiver on 127.0.0.1:0. POST /hook answers the next of `statuses` (the last
// repeats) and keeps what it was sent; /redirect answers 302 to /target, which counts hits.
class Receiver {
 public:
  struct Received {
    std::string body;
    std::string signature;  // X-COPS-Signature
  };

  explicit Receiver(std::vector<int> statuses) : statuses_(std::move(statuses)) {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      received_.push_back({req.body, req.get_header_value("X-COPS-Signature")});
      res.status = from_now_on_ != 0 ? from_now_on_
                                     : statuses_[std::min(received_.size(), statuses_.size()) - 1];
      res.set_content("{}", "application/json");
    });
    server_.Post("/redirect", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/target", 302);
    });
    server_.Post("/target", [this](const httplib::Request&, httplib::Response&) {
      absl::MutexLock lock(&mu_);
      ++target_hits_;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // What /hook received once it received `n` requests (what it has after ~30 s otherwise).
  std::vector<Received> WaitFor(size_t n) {
    for (int i = 0; i < 3000; ++i) {
      {
        absl::MutexLock lock(&mu_);
        if (received_.size() >= n) return received_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    absl::MutexLock lock(&mu_);
    return received_;
  }
  // Answers `status` to every later request.
  void AnswerFromNowOn(int status) {
    absl::MutexLock lock(&mu_);
    from_now_on_ = status;
  }
  size_t received() {
    absl::MutexLock lock(&mu_);
    return received_.size();
  }
  size_t target_hits() {
    absl::MutexLock lock(&mu_);
    return target_hits_;
  }

 private:
  const std::vector<int> statuses_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  size_t target_hits_ ABSL_GUARDED_BY(mu_) = 0;
  int from_now_on_ ABSL_GUARDED_BY(mu_) = 0;
};

// Verifies a delivery as a receiver must: the HMAC-SHA256 of "<t>.<body>" under the secret.
bool SignatureIsValid(const std::string& secret, const Receiver::Received& got) {
  std::smatch m;
  if (!std::regex_match(got.signature, m, std::regex("t=([0-9]+),v1=([0-9a-f]{64})"))) {
    return false;
  }
  const std::string signed_text = m[1].str() + "." + got.body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac, &size);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", mac[i]);
    hex += byte;
  }
  return hex == m[2].str();
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IndexGenerationsOptions options;
    options.data_dir = dir_.path().string();
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    AccessControlOptions access_options;
    ASSERT_OK_AND_ASSIGN(access_, OpenAccessControl(dir_.path().string(),
                                                    /*bootstrap_admin=*/true, access_options));
    std::ifstream(dir_.path() / "admin.key") >> admin_key_;
    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()),
                                         MatchesFrom(access_->store()));
    ASSERT_OK_AND_ASSIGN(receipts_, ReceiptSigner::Open(DataDir(dir_.path().string())));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), access_.get(),
                                                      usage_.get(), audit_.get(), receipts_.get());
    admin_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                            generations_.get(), receipts_.get());
    grpc::EnableDefaultHealthCheckService(true);  // as copsd: /healthz asks it
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get(), admin_.get()}));
    acm_key_ = NewPrincipal("acm-press", Role::kOwner, {"acm"});
    ieee_key_ = NewPrincipal("ieee-press", Role::kOwner, {"ieee"});
    pc_key_ = NewPrincipal("sigmod-pc", Role::kChecker, {"acm"});
    StartHttp(HttpApiOptions());
  }

  void StartHttp(HttpApiOptions options) {
    http_.reset();
    options.listen = "127.0.0.1:0";
    if (options.max_body_bytes == HttpApiOptions().max_body_bytes) {
      options.max_body_bytes = 1 << 20;
    }
    // As copsd wires it: the service's own access control, over the in-process channel.
    AccessControl* access = access_.get();
    options.authenticate = [access](const std::string& key,
                                    const std::vector<std::string>& names,
                                    const std::string& peer) -> absl::StatusOr<std::string> {
      absl::StatusOr<Principal> principal =
          access->AuthenticateCredentials(CallCredentials{key, names, peer});
      if (!principal.ok()) return principal.status();
      return principal->name;
    };
    ASSERT_OK_AND_ASSIGN(http_, HttpApi::Start(options, server_->InProcessChannel()));
  }

  std::string NewPrincipal(const std::string& name, Role role, std::vector<std::string> cols) {
    PrincipalRecord r;
    r.name = name;
    r.role = static_cast<uint8_t>(role);
    r.collections = std::move(cols);
    auto issued = access_->CreatePrincipal(r);
    EXPECT_OK(issued);
    return issued.ok() ? issued->api_key : "";
  }

  httplib::Client Http(const std::string& key) const {
    httplib::Client client("127.0.0.1", http_->port());
    client.set_read_timeout(30, 0);
    if (!key.empty()) client.set_default_headers({{"Authorization", "Bearer " + key}});
    return client;
  }

  // A socket connected to the HTTP API whose reads give up after 10 s; -1 when it cannot
  // connect (a test failure).
  int ConnectRaw() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(http_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ADD_FAILURE() << "cannot connect to the HTTP API: " << std::strerror(errno);
      close(fd);
      return -1;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }

  // POST of a raw text document; the reply (status, body).
  httplib::Result PostText(const std::string& key, const std::string& target,
                           const std::string& text, httplib::Headers headers = {}) const {
    httplib::Client client = Http(key);
    return client.Post(target.c_str(), headers, text, "text/plain");
  }

  // Registers `text` into `collection` as `key`; its doc_id.
  uint64_t Register(const std::string& key, const std::string& text,
                    const std::string& collection, const std::string& title = "Paper") {
    httplib::Result res =
        PostText(key, "/v1/documents?title=" + title + "&collection=" + collection, text);
    EXPECT_TRUE(res);
    if (!res) return 0;
    EXPECT_EQ(res->status, 201) << res->body;
    return json::parse(res->body).value("doc_id", uint64_t{0});
  }

  static void ExpectError(const httplib::Result& res, int status, const std::string& code,
                          const std::string& message_part = "") {
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    const json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << res->body;
    EXPECT_EQ(body.value("code", ""), code) << res->body;
    EXPECT_NE(body.value("message", "").find(message_part), std::string::npos) << res->body;
  }

  json WaitForJob(const std::string& key, const std::string& id) const {
    for (int i = 0; i < 3000; ++i) {
      httplib::Result res = Http(key).Get(("/v1/jobs/" + id).c_str());
      if (!res || res->status != 200) return json();
      json job = json::parse(res->body);
      if (job["state"] == "done" || job["state"] == "failed") return job;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return json();
  }

  // The job's deliveries once the last one is no longer pending.
  json WaitForDeliveries(const std::string& key, const std::string& id) const {
    for (int i = 0; i < 3000; ++i) {
      httplib::Result res = Http(key).Get(("/v1/jobs/" + id + "/deliveries").c_str());
      if (!res || res->status != 200) return json();
      json list = json::parse(res->body)["deliveries"];
      if (!list.empty() && list.back()["state"] != "pending") return list;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return json();
  }

  // PUT /v1/webhook as `key`: the secret.
  std::string RegisterWebhook(const std::string& key, const std::string& url) const {
    httplib::Result res =
        Http(key).Put("/v1/webhook", url.empty() ? "{}" : json({{"url", url}}).dump(),
                      "application/json");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body, nullptr, false).value("secret", "");
  }

  static HttpApiOptions WebhookOptionsFor(const std::vector<std::string>& allow) {
    HttpApiOptions options;
    options.webhooks.allow = allow;
    options.webhooks.first_backoff = std::chrono::milliseconds(20);
    options.webhooks.max_attempts = 3;
    return options;
  }

  testing::TempDir dir_{"http_api"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::unique_ptr<ReceiptSigner> receipts_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<HttpApi> http_;  // stops before the server it calls
  std::string admin_key_, acm_key_, ieee_key_, pc_key_;
};

TEST_F(HttpApiTest, RegisterAnswers201WithTheCliObjectAndASignedReceipt) {
  const std::string text = Prose(1, 300);
  httplib::Result res = PostText(acm_key_, "/v1/documents?title=Paper&collection=acm", text);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const json reply = json::parse(res->body);
  // The same object `cops --json register` prints (path = the title), plus the receipt.
  for (const char* field : {"doc_id", "path", "chunks", "stored_chunks", "duplicate_of",
                            "created", "format", "charset", "receipt"}) {
    EXPECT_TRUE(reply.contains(field)) << field << " missing in " << res->body;
  }
  EXPECT_EQ(reply["path"], "Paper");
  EXPECT_EQ(reply["created"], true);
  EXPECT_EQ(reply["format"], "text");
  EXPECT_TRUE(reply["duplicate_of"].is_null());
  EXPECT_TRUE(reply["receipt"].contains("signature")) << reply["receipt"].dump();
  EXPECT_EQ(res->get_header_value("Location"),
            "/v1/documents/" + std::to_string(reply["doc_id"].get<uint64_t>()));
  // The same text again is the existing document: 200, not created.
  httplib::Result again = PostText(acm_key_, "/v1/documents?collection=acm", text);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(json::parse(again->body)["doc_id"], reply["doc_id"]);
}

// receipt=false registers the document without a receipt; asked again, it gets one.
TEST_F(HttpApiTest, RegisterWithReceiptFalseAnswersWithoutAReceipt) {
  const std::string text = Prose(5, 300);
  httplib::Result res = PostText(acm_key_, "/v1/documents?collection=acm&receipt=false", text);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const json reply = json::parse(res->body);
  EXPECT_FALSE(reply.contains("receipt")) << res->body;
  httplib::Result again = PostText(acm_key_, "/v1/documents?collection=acm", text);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  const json repeated = json::parse(again->body);
  EXPECT_EQ(repeated["doc_id"], reply["doc_id"]);
  EXPECT_TRUE(repeated["receipt"].contains("signature")) << again->body;
  httplib::Result bad = PostText(acm_key_, "/v1/documents?collection=acm&receipt=maybe", text);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
}

TEST_F(HttpApiTest, MultipartRegistrationTakesTheFileAndItsMetadata) {
  httplib::MultipartFormDataItems items = {
      {"file", Prose(2, 300), "essay.txt", "text/plain"},
      {"title", "An essay", "", ""},
      {"collection", "acm", "", ""},
      {"external_id", "sub-17", "", ""},
  };
  httplib::Result res = Http(acm_key_).Post("/v1/documents", items);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const uint64_t id = json::parse(res->body)["doc_id"];
  httplib::Result got = Http(acm_key_).Get(("/v1/documents/" + std::to_string(id)).c_str());
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  const json info = json::parse(got->body);
  EXPECT_EQ(info["title"], "An essay");
  EXPECT_EQ(info["collection"], "acm");
  EXPECT_EQ(info["external_id"], "sub-17");
  EXPECT_EQ(info["owner"], "acm-press");
}

TEST_F(HttpApiTest, DocumentsAreListedInPagesAndDeleted) {
  const uint64_t a = Register(acm_key_, Prose(3, 200), "acm", "A");
  const uint64_t b = Register(acm_key_, Prose(4, 200), "acm", "B");
  Register(ieee_key_, Prose(5, 200), "ieee", "C");  // another tenant's: never listed to acm
  std::vector<uint64_t> listed;
  std::string token;
  for (int page = 0; page < 5; ++page) {
    httplib::Result res =
        Http(acm_key_).Get(("/v1/documents?page_size=1&page_token=" + token).c_str());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = json::parse(res->body);
    for (const json& d : body["documents"]) listed.push_back(d["doc_id"]);
    token = body["next_page_token"];
    if (token.empty()) break;
  }
  EXPECT_EQ(listed, (std::vector<uint64_t>{a, b}));

  httplib::Result deleted = Http(acm_key_).Delete(("/v1/documents/" + std::to_string(a)).c_str());
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 204);
  ExpectError(Http(acm_key_).Get(("/v1/documents/" + std::to_string(a)).c_str()), 404,
              "NOT_FOUND");
  ExpectError(Http(acm_key_).Get("/v1/documents/abc"), 400, "INVALID_ARGUMENT", "not a number");
}

TEST_F(HttpApiTest, CheckAnswersTheCliJsonObjectAndTheHtmlReport) {
  const std::string text = Prose(6, 400);
  const uint64_t id = Register(acm_key_, text, "acm");
  httplib::Result res = PostText(pc_key_, "/v1/checks?collection=acm", text);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json report = json::parse(res->body);
  EXPECT_EQ(report["violation"], true);
  ASSERT_FALSE(report["matches"].empty());
  EXPECT_EQ(report["matches"][0]["doc_id"], id);
  // Exactly what `cops --json check` prints for the same check over gRPC.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> grpc_client, [&] {
    ClientOptions o;
    o.target = server_->address();
    o.security.api_key = pc_key_;
    return Client::Connect(o);
  }());
  v1::CheckDocumentRequest request;
  request.set_content(text);
  request.set_format(v1::DOCUMENT_FORMAT_TEXT);
  request.add_collections("acm");
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, grpc_client->Check(request));
  EXPECT_EQ(report, json::parse(CheckJsonLine(reply)));
  // Heavy revisions are looked for unless the check says not to, and the report says which.
  EXPECT_EQ(report["params"]["heavy_revisions"], true);
  EXPECT_EQ(report["matches"][0]["decided_by"], json({"chunks"}));
  httplib::Result plain =
      PostText(pc_key_, "/v1/checks?collection=acm&heavy_revisions=false", text);
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->status, 200) << plain->body;
  const json unasked = json::parse(plain->body);
  EXPECT_EQ(unasked["params"]["heavy_revisions"], false);
  EXPECT_EQ(unasked["matches"][0]["doc_id"], id);
  // Without heavy revisions (or stem pairs) only passages decide: no decided_by is given.
  EXPECT_FALSE(unasked["matches"][0].contains("decided_by")) << unasked;

  httplib::Result html = PostText(pc_key_, "/v1/checks?collection=acm", text,
                                  {{"Accept", "text/html"}});
  ASSERT_TRUE(html);
  ASSERT_EQ(html->status, 200);
  EXPECT_TRUE(html->get_header_value("Content-Type").starts_with("text/html"));
  EXPECT_NE(html->body.find("<html"), std::string::npos);
  EXPECT_NE(html->get_header_value("Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
}

TEST_F(HttpApiTest, AJobRunsACheckAndKeepsItsResult) {
  const std::string text = Prose(7, 400);
  const uint64_t id = Register(acm_key_, text, "acm");
  httplib::Result res = PostText(pc_key_, "/v1/jobs?collection=acm", text);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const json accepted = json::parse(res->body);
  ASSERT_TRUE(accepted.contains("id"));
  EXPECT_TRUE(accepted["state"] == "queued" || accepted["state"] == "running");
  const json job = WaitForJob(pc_key_, accepted["id"]);
  ASSERT_EQ(job["state"], "done") << job.dump();
  EXPECT_EQ(job["result"]["violation"], true);
  EXPECT_EQ(job["result"]["matches"][0]["doc_id"], id);
  // Another principal cannot see it.
  ExpectError(Http(acm_key_).Get(("/v1/jobs/" + accepted["id"].get<std::string>()).c_str()), 404,
              "NOT_FOUND");
}

TEST_F(HttpApiTest, AFailedJobShowsItsError) {
  httplib::Result res = PostText(pc_key_, "/v1/jobs?collection=ieee", Prose(8, 200));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const json job = WaitForJob(pc_key_, json::parse(res->body)["id"]);
  ASSERT_EQ(job["state"], "failed") << job.dump();
  EXPECT_EQ(job["error"]["code"], "PERMISSION_DENIED");
  EXPECT_FALSE(job["error"]["message"].get<std::string>().empty());
}

TEST_F(HttpApiTest, ABatchJobAnswersTheCompareResult) {
  const std::string shared = Prose(9, 200);
  httplib::MultipartFormDataItems items = {
      {"file", Prose(10, 100) + " " + shared, "a.txt", "text/plain"},
      {"file", shared + " " + Prose(11, 100), "b.txt", "text/plain"},
      {"file", Prose(12, 200), "c.txt", "text/plain"},
  };
  httplib::Result res = Http(admin_key_).Post("/v1/jobs", items);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const json job = WaitForJob(admin_key_, json::parse(res->body)["id"]);
  ASSERT_EQ(job["state"], "done") << job.dump();
  const json& result = job["result"];
  ASSERT_EQ(result["documents"].size(), 3u) << result.dump();
  EXPECT_EQ(result["documents"][0]["path"], "a.txt");
  ASSERT_EQ(result["pairs"].size(), 1u) << result.dump();
  EXPECT_EQ(result["pairs"][0]["a"], "a.txt");
  EXPECT_EQ(result["pairs"][0]["b"], "b.txt");
  EXPECT_EQ(result["corpus"].size(), 3u);
}

TEST_F(HttpApiTest, AnIdempotencyKeyRegistersAndSubmitsOnce) {
  const std::string text = Prose(13, 300);
  const httplib::Headers key = {{"Idempotency-Key", "retry-1"}};
  httplib::Result first = PostText(acm_key_, "/v1/documents?collection=acm", text, key);
  httplib::Result retry = PostText(acm_key_, "/v1/documents?collection=acm", text, key);
  ASSERT_TRUE(first && retry);
  EXPECT_EQ(first->status, 201);
  // Without the key the retry would be "not created" (200); with it, the first reply again.
  EXPECT_EQ(retry->status, 201);
  EXPECT_EQ(retry->body, first->body);
  EXPECT_EQ(retry->get_header_value("Idempotent-Replayed"), "true");
  // The same key for a different document is refused.
  ExpectError(PostText(acm_key_, "/v1/documents?collection=acm", Prose(14, 300), key), 422,
              "INVALID_ARGUMENT", "Idempotency-Key");

  httplib::Result job1 = PostText(pc_key_, "/v1/jobs", text, {{"Idempotency-Key", "job-1"}});
  httplib::Result job2 = PostText(pc_key_, "/v1/jobs", text, {{"Idempotency-Key", "job-1"}});
  ASSERT_TRUE(job1 && job2);
  EXPECT_EQ(json::parse(job1->body)["id"], json::parse(job2->body)["id"]);
}

TEST_F(HttpApiTest, BadInputGetsItsStatusAndAJsonError) {
  // No key: 401 before anything is read.
  ExpectError(PostText("", "/v1/checks", "some text"), 401, "UNAUTHENTICATED", "Bearer");
  EXPECT_EQ(PostText("", "/v1/checks", "x")->get_header_value("WWW-Authenticate"), "Bearer");
  // A wrong key: the service's own refusal.
  ExpectError(PostText("cops_0000000000000000_wrong", "/v1/checks", "some text"), 401,
              "UNAUTHENTICATED");
  // A collection the caller may not use.
  ExpectError(PostText(pc_key_, "/v1/checks?collection=ieee", Prose(15, 100)), 403,
              "PERMISSION_DENIED");
  ExpectError(PostText(acm_key_, "/v1/documents?collection=ieee", Prose(16, 100)), 403,
              "PERMISSION_DENIED");
  // A content type that is no document.
  ExpectError(Http(pc_key_).Post("/v1/checks", "\x89PNG", "image/png"), 415, "INVALID_ARGUMENT",
              "image/png");
  // Malformed JSON bodies name the field.
  ExpectError(Http(pc_key_).Post("/v1/checks", R"({"content": 5})", "application/json"), 400,
              "INVALID_ARGUMENT", "'content'");
  ExpectError(Http(pc_key_).Post("/v1/checks", R"({"content": "a b c", "threshold": "high"})",
                                 "application/json"),
              400, "INVALID_ARGUMENT", "'threshold'");
  ExpectError(Http(pc_key_).Post("/v1/checks", R"({"content": "a b c", "treshold": 0.5})",
                                 "application/json"),
              400, "INVALID_ARGUMENT", "'treshold'");
  ExpectError(Http(pc_key_).Post("/v1/checks", R"({"content": )", "application/json"), 400,
              "INVALID_ARGUMENT", "malformed JSON");
  ExpectError(PostText(pc_key_, "/v1/checks?threshold=2", "a b c"), 400, "INVALID_ARGUMENT",
              "threshold");
  // Integers are 64-bit: the largest is taken, one more is named too large.
  httplib::Result seed =
      PostText(pc_key_, "/v1/checks?sample_size=4&sample_seed=18446744073709551615", "a b c");
  ASSERT_TRUE(seed);
  EXPECT_EQ(seed->status, 200) << seed->body;
  ExpectError(PostText(pc_key_, "/v1/checks?sample_seed=18446744073709551616", "a b c"), 400,
              "INVALID_ARGUMENT", "field 'sample_seed': 18446744073709551616 is too large");
  ExpectError(PostText(pc_key_, "/v1/checks?sample_seed=-1", "a b c"), 400, "INVALID_ARGUMENT",
              "field 'sample_seed': expected a non-negative integer");
  // Unknown job, unknown route.
  ExpectError(Http(pc_key_).Get("/v1/jobs/job_00000000000000000000000000000000"), 404,
              "NOT_FOUND");
  ExpectError(Http(pc_key_).Get("/v1/nothing"), 404, "NOT_FOUND");
}

TEST_F(HttpApiTest, AJsonBodyNestedDeeplyIs400AndTheServerLivesOn) {
  // Half a million nested arrays (1 MB, under this server's body limit): copying or printing
  // such a value recursed until the stack ran out (SIGSEGV). Any JSON body of any route.
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  ExpectError(
      Http(acm_key_).Post("/v1/documents", R"({"content": "a short text", "title": )" + deep + "}",
                          "application/json"),
      400, "INVALID_ARGUMENT", "nested deeper than 32");
  ExpectError(Http(pc_key_).Post("/v1/checks", "{\"content\": " + deep + "}", "application/json"),
              400, "INVALID_ARGUMENT", "nested deeper than 32");
  ExpectError(Http(acm_key_).Put("/v1/webhook", "{\"url\": " + deep + "}", "application/json"), 400,
              "INVALID_ARGUMENT", "nested deeper than 32");
  // Nesting as deep as the limit is only a wrong type; the server still answers.
  const std::string at_limit = std::string(31, '[') + "\"x\"" + std::string(31, ']');
  ExpectError(Http(acm_key_).Post("/v1/documents",
                                  R"({"content": "a short text", "title": )" + at_limit + "}",
                                  "application/json"),
              400, "INVALID_ARGUMENT", "field 'title': expected a string");
  EXPECT_GT(Register(acm_key_, Prose(25, 100), "acm"), 0u);
}

TEST_F(HttpApiTest, ABrowsersCrossSiteRequestThatChangesSomethingIs403) {
  // A page on another site can make the browser POST a form or plain text here (no CORS
  // preflight), with the credentials the browser adds itself: a client certificate, or none
  // on a copsd without authentication. Browsers say where such a request comes from.
  const std::string text = Prose(26, 100);
  const std::string self = "http://127.0.0.1:" + std::to_string(http_->port());
  ExpectError(
      PostText(acm_key_, "/v1/documents?collection=acm", text, {{"Sec-Fetch-Site", "cross-site"}}),
      403, "PERMISSION_DENIED", "cross-origin");
  ExpectError(
      PostText(acm_key_, "/v1/documents?collection=acm", text, {{"Sec-Fetch-Site", "same-site"}}),
      403, "PERMISSION_DENIED", "cross-origin");
  ExpectError(PostText(acm_key_, "/v1/documents?collection=acm", text,
                       {{"Origin", "https://evil.example"}}),
              403, "PERMISSION_DENIED", "https://evil.example");
  ExpectError(Http(acm_key_).Delete("/v1/webhook", {{"Sec-Fetch-Site", "cross-site"}}), 403,
              "PERMISSION_DENIED", "cross-origin");
  ExpectError(PostText(pc_key_, "/v1/checks", text, {{"Origin", "null"}}), 403, "PERMISSION_DENIED",
              "cross-origin");
  // Reading is not refused (the browser keeps the answer from the other site).
  httplib::Result list = Http(acm_key_).Get("/v1/documents", {{"Sec-Fetch-Site", "cross-site"}});
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200) << list->body;
  EXPECT_EQ(json::parse(list->body)["documents"].size(), 0u) << "a refused request registered";
  // The web page's own requests, older browsers' same-origin ones, and clients that are not
  // browsers (no such headers) go through.
  httplib::Result own = PostText(acm_key_, "/v1/documents?collection=acm", text,
                                 {{"Sec-Fetch-Site", "same-origin"}, {"Origin", self}});
  ASSERT_TRUE(own);
  EXPECT_EQ(own->status, 201) << own->body;
  httplib::Result old = PostText(pc_key_, "/v1/checks", text, {{"Origin", self}});
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 200) << old->body;
  httplib::Result typed = PostText(pc_key_, "/v1/checks", text, {{"Sec-Fetch-Site", "none"}});
  ASSERT_TRUE(typed);
  EXPECT_EQ(typed->status, 200) << typed->body;
}

TEST_F(HttpApiTest, TextFieldsThatAreNotUtf8Are400NamingTheField) {
  const std::string latin1 = "Caf\xE9";  // ISO-8859-1, not UTF-8
  // A query parameter (percent-decoded by the server), a multipart field.
  ExpectError(PostText(acm_key_, "/v1/documents?title=Caf%E9&collection=acm", Prose(21, 100)), 400,
              "INVALID_ARGUMENT", "field 'title': not valid UTF-8");
  ExpectError(PostText(pc_key_, "/v1/checks?collection=%FF%FE", Prose(21, 100)), 400,
              "INVALID_ARGUMENT", "field 'collection': not valid UTF-8");
  ExpectError(Http(acm_key_).Post("/v1/documents",
                                  httplib::MultipartFormDataItems{
                                      {"file", Prose(22, 100), "essay.txt", "text/plain"},
                                      {"title", latin1, "", ""},
                                      {"collection", "acm", "", ""}}),
              400, "INVALID_ARGUMENT", "field 'title': not valid UTF-8");
  // Named in UTF-8 it registers; a file's name that is not UTF-8 (curl sends it as it is)
  // is the title with its bytes shown as U+FFFD, as `cops register` gives it.
  EXPECT_GT(Register(acm_key_, Prose(24, 100), "acm", "Caf%C3%A9"), 0u);
  httplib::Result file = Http(acm_key_).Post(
      "/v1/documents",
      httplib::MultipartFormDataItems{{"file", Prose(23, 100), latin1 + ".txt", "text/plain"},
                                      {"collection", "acm", "", ""}});
  ASSERT_TRUE(file);
  EXPECT_EQ(file->status, 201) << file->body;
  // Nothing of the refused requests was registered.
  httplib::Result list = Http(acm_key_).Get("/v1/documents");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200) << list->body;
  const json docs = json::parse(list->body)["documents"];
  ASSERT_EQ(docs.size(), 2u) << list->body;
  EXPECT_EQ(docs[0]["title"], "Caf\xC3\xA9");
  EXPECT_EQ(docs[1]["title"], "Caf\xEF\xBF\xBD.txt");
}

TEST_F(HttpApiTest, ARequestWhoseLengthIsAmbiguousIs400) {
  // Two lengths, or a length and chunked coding: a proxy in front reading the other one would
  // take the rest of the body for another request (smuggling). The first was served.
  auto raw = [this](const std::string& request) {
    const int fd = ConnectRaw();
    EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
      reply.append(buf, static_cast<size_t>(n));
    close(fd);
    return reply;
  };
  const std::string head = "POST /v1/checks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                           pc_key_ + "\r\nContent-Type: text/plain\r\nConnection: close\r\n";
  std::string reply = raw(head + "Content-Length: 5\r\nContent-Length: 7\r\n\r\nhello12");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 400 ")) << reply;
  EXPECT_NE(reply.find("Content-Length given twice, as 5 and 7"), std::string::npos) << reply;
  reply =
      raw(head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 400 ")) << reply;
  EXPECT_NE(reply.find("both Content-Length and Transfer-Encoding"), std::string::npos) << reply;
  reply = raw(head + "Content-Length: -5\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 400 ")) << reply;
  EXPECT_NE(reply.find("Content-Length '-5' is not a number of bytes"), std::string::npos) << reply;
  // The same length twice is one length.
  reply = raw(head + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 ")) << reply;
}

TEST_F(HttpApiTest, ABodyOverTheLimitIs413BeforeItIsRead) {
  // Headers announcing 100 MiB, then nothing: the answer must come without the body, with
  // and without `Expect: 100-continue` (curl's way for large bodies).
  for (const std::string expect : {"", "Expect: 100-continue\r\n"}) {
    const int fd = ConnectRaw();
    ASSERT_GE(fd, 0);
    const std::string head = "POST /v1/checks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                             pc_key_ + "\r\n" + expect +
                             "Content-Type: text/plain\r\nContent-Length: 104857600\r\n\r\n";
    ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
      reply.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 413")) << expect << reply;
    EXPECT_NE(reply.find("\"code\":\"RESOURCE_EXHAUSTED\""), std::string::npos) << reply;
  }
}

TEST_F(HttpApiTest, HealthAndOpenApiNeedNoKey) {
  httplib::Result health = Http("").Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  httplib::Result spec = Http("").Get("/v1/openapi.json");
  ASSERT_TRUE(spec);
  ASSERT_EQ(spec->status, 200);
  const json doc = json::parse(spec->body, nullptr, false);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["openapi"].get<std::string>().substr(0, 2), "3.");
  for (const char* path : {"/v1/documents", "/v1/documents/{id}", "/v1/checks", "/v1/jobs",
                           "/v1/jobs/{id}", "/v1/jobs/{id}/deliveries",
                           "/v1/jobs/{id}/deliveries:resend", "/v1/webhook", "/healthz",
                           "/v1/openapi.json"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
  }
}

// The validator scripts/install-deps.sh installs from npm into tools/npm (not in git).
TEST_F(HttpApiTest, TheOpenApiDescriptionPassesAStandardValidator) {
  const char* source = kSourceDir;
  const std::filesystem::path validator =
      std::filesystem::path(source) / "tools/npm/node_modules/.bin/swagger-cli";
  if (!std::filesystem::exists(validator)) {
    GTEST_SKIP() << validator << " is missing: scripts/install-deps.sh installs it with npm "
                 << "(skipped when npm could not reach its registry)";
  }
  httplib::Result spec = Http("").Get("/v1/openapi.json");
  ASSERT_TRUE(spec);
  const std::string file = (dir_.path() / "openapi.json").string();
  std::ofstream(file) << spec->body;
  const std::string command = validator.string() + " validate " + file + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  EXPECT_EQ(pclose(pipe), 0) << output;
}

// docs/api.md's examples: each ```sh block after the first (which sets COPS_URL and COPS_KEY)
// runs as written with bash, against this server, and must succeed (they use curl --fail).
TEST_F(HttpApiTest, TheCurlExamplesOfTheDocsRunAsWritten) {
  const char* source = kSourceDir;
  std::ifstream doc(std::filesystem::path(source) / "docs/api.md");
  ASSERT_TRUE(doc.good());
  std::stringstream text;
  text << doc.rdbuf();
  const std::regex block("```sh\n([\\s\\S]*?)```");
  std::vector<std::string> blocks;
  const std::string all = text.str();
  for (std::sregex_iterator it(all.begin(), all.end(), block), end; it != end; ++it) {
    blocks.push_back((*it)[1]);
  }
  ASSERT_GE(blocks.size(), 5u);
  // The examples' files, in the directory they run in.
  std::ofstream(dir_.path() / "paper.txt") << Prose(20, 300);
  std::ofstream(dir_.path() / "draft.txt") << Prose(20, 300) + " " + Prose(21, 50);
  std::ofstream(dir_.path() / "other.txt") << Prose(22, 200);
  Receiver receiver({200});  // the webhook examples' receiver
  StartHttp(WebhookOptionsFor({"127.0.0.1:" + std::to_string(receiver.port())}));
  const std::string env = "cd " + dir_.path().string() + " && export COPS_URL=http://127.0.0.1:" +
                          std::to_string(http_->port()) + " COPS_KEY=" + admin_key_ +
                          " HOOK_URL=" + receiver.Url("/hook") + "; ";
  std::string script = env;
  for (size_t i = 1; i < blocks.size(); ++i) script += "set -euo pipefail\n" + blocks[i] + "\n";
  const std::string path = (dir_.path() / "examples.sh").string();
  std::ofstream(path) << script;
  FILE* pipe = popen(("bash " + path + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  EXPECT_EQ(pclose(pipe), 0) << output;
  EXPECT_NE(output.find("\"violation\":true"), std::string::npos) << output;
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

TEST_F(HttpApiTest, AJobsWebhookIsDeliveredSignedWhenItEnds) {
  Receiver receiver({200});
  StartHttp(WebhookOptionsFor({"127.0.0.1:" + std::to_string(receiver.port())}));
  const std::string text = Prose(30, 400);
  const uint64_t doc = Register(acm_key_, text, "acm");
  const std::string secret = RegisterWebhook(pc_key_, receiver.Url("/hook"));
  ASSERT_TRUE(secret.starts_with("whsec_")) << secret;
  // Shown once: reading the registration back gives the URL only.
  httplib::Result shown = Http(pc_key_).Get("/v1/webhook");
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->status, 200);
  EXPECT_EQ(json::parse(shown->body), json({{"url", receiver.Url("/hook")}}));

  httplib::Result res = PostText(pc_key_, "/v1/jobs?collection=acm", text);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = json::parse(res->body)["id"];
  const std::vector<Receiver::Received> got = receiver.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(SignatureIsValid(secret, got[0])) << got[0].signature;
  EXPECT_FALSE(SignatureIsValid(secret + "x", got[0]));
  const json delivered = json::parse(got[0].body);
  EXPECT_EQ(delivered["id"], id);
  EXPECT_EQ(delivered["state"], "done");
  EXPECT_EQ(delivered["result"]["matches"][0]["doc_id"], doc);
  // The same JSON GET /v1/jobs/{id} answers.
  EXPECT_EQ(delivered, json::parse(Http(pc_key_).Get(("/v1/jobs/" + id).c_str())->body));

  const json deliveries = WaitForDeliveries(pc_key_, id);
  ASSERT_EQ(deliveries.size(), 1u) << deliveries.dump();
  EXPECT_EQ(deliveries[0]["state"], "delivered");
  EXPECT_EQ(deliveries[0]["url"], receiver.Url("/hook"));
  ASSERT_EQ(deliveries[0]["attempts"].size(), 1u);
  EXPECT_EQ(deliveries[0]["attempts"][0]["http_status"], 200);
  EXPECT_FALSE(deliveries[0].contains("next_attempt_unix_micros"));
  // Another principal sees neither the job nor its deliveries.
  ExpectError(Http(acm_key_).Get(("/v1/jobs/" + id + "/deliveries").c_str()), 404, "NOT_FOUND");
  ExpectError(Http(acm_key_).Post(("/v1/jobs/" + id + "/deliveries:resend").c_str()), 404,
              "NOT_FOUND");
}

TEST_F(HttpApiTest, AFailingReceiverIsRetriedWithBackoffAndADeliveryCanBeResent) {
  Receiver receiver({500, 503, 200});
  StartHttp(WebhookOptionsFor({"127.0.0.1:" + std::to_string(receiver.port())}));
  const std::string secret = RegisterWebhook(pc_key_, "");  // a secret, no default URL
  httplib::Result res = Http(pc_key_).Post(
      "/v1/jobs",
      json({{"content", Prose(31, 200)}, {"callback_url", receiver.Url("/hook")}}).dump(),
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = json::parse(res->body)["id"];
  json deliveries = WaitForDeliveries(pc_key_, id);
  ASSERT_EQ(deliveries.size(), 1u) << deliveries.dump();
  EXPECT_EQ(deliveries[0]["state"], "delivered") << deliveries.dump();
  const json& attempts = deliveries[0]["attempts"];
  ASSERT_EQ(attempts.size(), 3u) << deliveries.dump();
  EXPECT_EQ(attempts[0]["http_status"], 500);
  EXPECT_EQ(attempts[0]["error"], "answered HTTP 500");
  EXPECT_EQ(attempts[1]["http_status"], 503);
  EXPECT_EQ(attempts[2]["http_status"], 200);
  EXPECT_FALSE(attempts[2].contains("error"));
  // Backoff: 20 ms before the second attempt, 40 ms before the third (at least).
  EXPECT_GE(attempts[1]["unix_micros"].get<int64_t>() - attempts[0]["unix_micros"].get<int64_t>(),
            20000);
  EXPECT_GE(attempts[2]["unix_micros"].get<int64_t>() - attempts[1]["unix_micros"].get<int64_t>(),
            40000);
  std::vector<Receiver::Received> got = receiver.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  for (const Receiver::Received& r : got) {
    EXPECT_EQ(r.body, got[0].body);
    EXPECT_TRUE(SignatureIsValid(secret, r));
  }

  httplib::Result resent = Http(pc_key_).Post(("/v1/jobs/" + id + "/deliveries:resend").c_str());
  ASSERT_TRUE(resent);
  ASSERT_EQ(resent->status, 202) << resent->body;
  EXPECT_EQ(json::parse(resent->body)["number"], 2);
  got = receiver.WaitFor(4);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].body, got[0].body);
  EXPECT_TRUE(SignatureIsValid(secret, got[3]));
  deliveries = WaitForDeliveries(pc_key_, id);
  ASSERT_EQ(deliveries.size(), 2u) << deliveries.dump();
  EXPECT_EQ(deliveries[1]["state"], "delivered");
  EXPECT_EQ(deliveries[1]["attempts"].size(), 1u);
}

TEST_F(HttpApiTest, ADeliveryGivesUpAfterItsLastAttemptAndFollowsNoRedirect) {
  Receiver receiver({503});
  StartHttp(WebhookOptionsFor({"127.0.0.1:" + std::to_string(receiver.port())}));
  RegisterWebhook(pc_key_, "");
  for (const std::string path : {"/hook", "/redirect"}) {
    httplib::Result res = Http(pc_key_).Post(
        "/v1/jobs", json({{"content", Prose(32, 100)}, {"callback_url", receiver.Url(path)}}).dump(),
        "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 202) << res->body;
    const json deliveries = WaitForDeliveries(pc_key_, json::parse(res->body)["id"]);
    ASSERT_EQ(deliveries.size(), 1u) << deliveries.dump();
    EXPECT_EQ(deliveries[0]["state"], "failed") << deliveries.dump();
    ASSERT_EQ(deliveries[0]["attempts"].size(), 3u) << deliveries.dump();  // max_attempts
    EXPECT_EQ(deliveries[0]["attempts"][2]["http_status"], path == "/hook" ? 503 : 302);
    EXPECT_FALSE(deliveries[0].contains("next_attempt_unix_micros"));
  }
  EXPECT_EQ(receiver.target_hits(), 0u);
}

// SSRF: with any public host allowed ("*"), callbacks to loopback, link-local (the cloud
// metadata address) and private addresses are refused at submission, naming why; so is a
// host off the allow-list. Nothing is queued and nothing is called.
TEST_F(HttpApiTest, CallbacksToInternalAddressesAreRefusedNamingWhy) {
  Receiver receiver({200});
  StartHttp(WebhookOptionsFor({"*"}));
  const std::string port = std::to_string(receiver.port());
  const auto post_job = [&](const std::string& url) {
    return Http(pc_key_).Post(
        "/v1/jobs", json({{"content", Prose(33, 100)}, {"callback_url", url}}).dump(),
        "application/json");
  };
  ExpectError(post_job(receiver.Url("/hook")), 400, "INVALID_ARGUMENT", "PUT /v1/webhook");
  RegisterWebhook(pc_key_, "");
  const struct {
    std::string url;
    std::string why;
  } kRefused[] = {
      {receiver.Url("/hook"), "127.0.0.1 is a loopback address"},
      {"http://169.254.169.254/latest/meta-data/", "a link-local address"},
      {"http://10.0.0.1:" + port + "/hook", "a private address"},
      {"http://localhost:" + port + "/hook", "loopback address"},
      {"http://[::1]:" + port + "/hook", "a loopback address"},
      {"http://0177.0.0.1:" + port + "/hook", "loopback address"},
      {"gopher://127.0.0.1:" + port + "/", "only http and https"},
  };
  for (const auto& c : kRefused) {
    ExpectError(post_job(c.url), 400, "INVALID_ARGUMENT", c.why);
    ExpectError(Http(pc_key_).Put("/v1/webhook", json({{"url", c.url}}).dump(), "application/json"),
                400, "INVALID_ARGUMENT", c.why);
  }
  StartHttp(WebhookOptionsFor({"hooks.example.org"}));
  RegisterWebhook(pc_key_, "");
  ExpectError(post_job(receiver.Url("/hook")), 400, "INVALID_ARGUMENT",
              "not on the webhook allow-list");
  EXPECT_TRUE(receiver.WaitFor(0).empty());
}

// A wrong key on POST /v1/jobs is refused before anything is queued (it used to give a
// job that failed with UNAUTHENTICATED).
TEST_F(HttpApiTest, AWrongKeyOnAJobIs401AtOnce) {
  httplib::Result res = PostText("cops_0000000000000000_wrong", "/v1/jobs", Prose(34, 100));
  ExpectError(res, 401, "UNAUTHENTICATED");
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_TRUE(res->get_header_value("Location").empty());
}

// HTTPS with mutual TLS, as copsd serves it with --tls-cert, --tls-key and --tls-client-ca:
// a request without a key is the principal its client certificate names (as over gRPC),
// held to that principal's collections; a certificate naming nobody is 401, a connection
// without a certificate is refused, and a key still wins over the certificate.
TEST_F(HttpApiTest, MutualTlsMakesTheCertificatesPrincipalTheCaller) {
  testing::TestPki pki;
  std::filesystem::create_directories(dir_.path() / "pki");
  ASSERT_TRUE(pki.Create(dir_.path() / "pki")) << "openssl could not make the test PKI";
  ASSERT_TRUE(pki.MakeClient("acm", "acm-press"));
  ASSERT_TRUE(pki.MakeClient("nobody", "no-such-principal"));
  HttpApiOptions options;
  options.tls_cert = pki.Path("server.pem");
  options.tls_key = pki.Path("server.key");
  options.tls_client_ca = pki.Path("ca.pem");
  StartHttp(options);
  auto https = [&](const std::string& client) {
    auto c = client.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", http_->port())
                            : std::make_unique<httplib::SSLClient>(
                                  "127.0.0.1", http_->port(), pki.Path(client + ".pem"),
                                  pki.Path(client + ".key"));
    c->set_ca_cert_path(pki.Path("ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(30, 0);
    return c;
  };
  const std::string text = Prose(35, 300);
  httplib::Result res = https("acm")->Post("/v1/documents?title=Paper&collection=acm", text,
                                           "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 201) << res->body;
  // acm-press owns acm only: its certificate does not make it an admin.
  ExpectError(https("acm")->Post("/v1/documents?collection=ieee", text, "text/plain"), 403,
              "PERMISSION_DENIED");
  // A job is the certificate's: submitted and read back with it.
  res = https("acm")->Post("/v1/jobs?collection=acm", text, "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = json::parse(res->body).value("id", "");
  json job = json::object();
  for (int i = 0; i < 3000 && job.value("state", "") != "done"; ++i) {
    httplib::Result got = https("acm")->Get(("/v1/jobs/" + id).c_str());
    ASSERT_TRUE(got);
    ASSERT_EQ(got->status, 200) << got->body;
    job = json::parse(got->body);
    if (job.value("state", "") == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(job["result"]["violation"], true) << job.dump();
  // A key over the same connection wins: ieee-press may register into ieee.
  auto with_key = https("acm");
  with_key->set_default_headers({{"Authorization", "Bearer " + ieee_key_}});
  res = with_key->Post("/v1/documents?collection=ieee", Prose(36, 300), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  ExpectError(https("nobody")->Post("/v1/jobs", text, "text/plain"), 401, "UNAUTHENTICATED");
  EXPECT_FALSE(https("")->Get("/healthz"));
  httplib::Result plain = Http("").Get("/healthz");  // plain HTTP: told to use https
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 400);
}

// The web page's sign-in under mutual TLS: GET /v1/session, which the page asks first,
// names the principal of the client certificate and says it came from the certificate, so
// the page signs in without asking for a key (http/page/app.js); with a key it names the
// key's principal, and without either credential it is 401 (the page then asks for a key).
TEST_F(HttpApiTest, MutualTlsSignsThePageInWithoutAKey) {
  testing::TestPki pki;
  std::filesystem::create_directories(dir_.path() / "pki");
  ASSERT_TRUE(pki.Create(dir_.path() / "pki")) << "openssl could not make the test PKI";
  ASSERT_TRUE(pki.MakeClient("acm", "acm-press"));
  ASSERT_TRUE(pki.MakeClient("pc", "sigmod-pc"));
  ASSERT_TRUE(pki.MakeClient("nobody", "no-such-principal"));
  HttpApiOptions options;
  options.auth_required = true;
  options.tls_cert = pki.Path("server.pem");
  options.tls_key = pki.Path("server.key");
  options.tls_client_ca = pki.Path("ca.pem");
  StartHttp(options);
  auto session = [&](const std::string& client, const std::string& key) {
    httplib::SSLClient c("127.0.0.1", http_->port(), pki.Path(client + ".pem"),
                         pki.Path(client + ".key"));
    c.set_ca_cert_path(pki.Path("ca.pem").c_str());
    c.enable_server_certificate_verification(true);
    if (!key.empty()) c.set_default_headers({{"Authorization", "Bearer " + key}});
    httplib::Result res = c.Get("/v1/session");
    if (!res) return json({{"error", httplib::to_string(res.error())}});
    json body = json::parse(res->body, nullptr, false);
    body["http_status"] = res->status;
    return body;
  };
  json s = session("acm", "");
  EXPECT_EQ(s["http_status"], 200) << s.dump();
  EXPECT_EQ(s["principal"], "acm-press") << s.dump();
  EXPECT_EQ(s["credential"], "certificate") << s.dump();
  EXPECT_EQ(s["auth_required"], true) << s.dump();
  EXPECT_EQ(s["may_register"], true) << s.dump();
  s = session("pc", "");
  EXPECT_EQ(s["principal"], "sigmod-pc") << s.dump();
  EXPECT_EQ(s["may_register"], false) << s.dump();
  s = session("acm", ieee_key_);  // a key wins over the certificate
  EXPECT_EQ(s["principal"], "ieee-press") << s.dump();
  EXPECT_EQ(s["credential"], "api_key") << s.dump();
  s = session("nobody", "");
  EXPECT_EQ(s["http_status"], 401) << s.dump();
  EXPECT_EQ(s["code"], "UNAUTHENTICATED") << s.dump();
}

// The failure limit counts each HTTP client's address: one client flooding wrong keys gets
// 429, another client's wrong key is still 401, and a valid key always works.
TEST_F(HttpApiTest, TheFailureLimitCountsEachHttpClientApart) {
  const std::string wrong = "cops_0000000000000000_wrong";
  int last = 0;
  for (int i = 0; i < 25; ++i) {  // the limit is 20
    httplib::Result res = PostText(wrong, "/v1/checks", "some text");
    ASSERT_TRUE(res);
    last = res->status;
  }
  EXPECT_EQ(last, 429);
  httplib::Client other("127.0.0.1", http_->port());
  other.set_interface("127.0.0.2");  // another source address on the loopback network
  other.set_default_headers({{"Authorization", "Bearer " + wrong}});
  ExpectError(other.Post("/v1/checks", "some text", "text/plain"), 401, "UNAUTHENTICATED");
  ExpectError(other.Post("/v1/jobs", "some text", "text/plain"), 401, "UNAUTHENTICATED");
  httplib::Result valid = PostText(pc_key_, "/v1/checks", "some text");
  ASSERT_TRUE(valid);
  EXPECT_EQ(valid->status, 200) << valid->body;
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

// examples/webhook_example.py (Python's standard library only) against the real copsd:
// it registers a document, submits a copy as a job, receives the webhook and verifies its
// signature.
TEST(HttpExampleTest, ThePythonWebhookExampleRunsAgainstARealCopsd) {
  testing::TempDir dir("http_example");
  const std::filesystem::path http_port = dir.path() / "http.port";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<testing::CopsdProcess> copsd,
                       testing::CopsdProcess::Start(
                           dir.path(), {"--auth", "on", "--http-listen", "127.0.0.1:0",
                                        "--http-port-file", http_port.string(),
                                        "--webhook-allow", "127.0.0.1"}));
  for (int i = 0; i < 1500 && !std::filesystem::exists(http_port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int port = 0;
  std::ifstream(http_port) >> port;
  ASSERT_GT(port, 0) << copsd->Log();
  std::string key;
  std::ifstream(dir.path() / "data" / "admin.key") >> key;
  ASSERT_FALSE(key.empty());
  const std::filesystem::path paper = dir.path() / "paper.txt";
  std::ofstream(paper) << Prose(40, 300);
  const std::string command = "COPS_URL=http://127.0.0.1:" + std::to_string(port) +
                              " COPS_KEY=" + key + " python3 " + kSourceDir +
                              "/examples/webhook_example.py " + paper.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  EXPECT_EQ(pclose(pipe), 0) << output << copsd->Log();
  EXPECT_NE(output.find("webhook verified"), std::string::npos) << output;
  EXPECT_NE(output.find("violation=true"), std::string::npos) << output;
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

// copsd keeps a principal's webhook (URL and secret) in its access store: after a restart
// GET /v1/webhook still shows the URL, and the secret signs (WebhookStoreTest checks the
// signature itself).
TEST(HttpRestartTest, ARestartOfCopsdKeepsTheWebhook) {
  testing::TempDir dir("http_restart");
  const std::filesystem::path http_port = dir.path() / "http.port";
  const std::vector<std::string> flags = {"--auth", "on", "--http-listen", "127.0.0.1:0",
                                          "--http-port-file", http_port.string(),
                                          "--webhook-allow", "127.0.0.1"};
  auto port_of = [&]() {
    int port = 0;
    for (int i = 0; i < 1500 && port == 0; ++i) {
      std::ifstream(http_port) >> port;
      if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return port;
  };
  const std::string url = "http://127.0.0.1:9/hook";
  std::string key;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<testing::CopsdProcess> copsd,
                         testing::CopsdProcess::Start(dir.path(), flags));
    const int port = port_of();
    ASSERT_GT(port, 0) << copsd->Log();
    std::ifstream(dir.path() / "data" / "admin.key") >> key;
    httplib::Client client("127.0.0.1", port);
    client.set_default_headers({{"Authorization", "Bearer " + key}});
    httplib::Result res = client.Put("/v1/webhook", json({{"url", url}}).dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(copsd->Stop(), 0);
  }
  std::filesystem::remove(http_port);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<testing::CopsdProcess> copsd,
                       testing::CopsdProcess::Start(dir.path(), flags));
  const int port = port_of();
  ASSERT_GT(port, 0) << copsd->Log();
  httplib::Client client("127.0.0.1", port);
  client.set_default_headers({{"Authorization", "Bearer " + key}});
  httplib::Result res = client.Get("/v1/webhook");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body).value("url", ""), url);
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

// A delivery still pending when copsd stops resumes after the restart: the receiver failed
// the attempts before the stop (HTTP 500), the retry comes after the restart, on the
// schedule its backoff set, signed with the same secret; and the job's deliveries, listed by
// the same key after the restart, keep the earlier attempts.
TEST(HttpRestartTest, APendingDeliveryResumesAfterARestartWithItsAttempts) {
  testing::TempDir dir("http_restart_delivery");
  Receiver receiver({500});
  const std::filesystem::path http_port = dir.path() / "http.port";
  const std::vector<std::string> flags = {
      "--auth", "on", "--http-listen", "127.0.0.1:0", "--http-port-file", http_port.string(),
      "--webhook-allow", "127.0.0.1:" + std::to_string(receiver.port()),
      "--webhook-first-backoff-ms", "1500"};
  auto port_of = [&]() {
    int port = 0;
    for (int i = 0; i < 1500 && port == 0; ++i) {
      std::ifstream(http_port) >> port;
      if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return port;
  };
  auto deliveries_of = [](httplib::Client& client, const std::string& id) {
    httplib::Result res = client.Get(("/v1/jobs/" + id + "/deliveries").c_str());
    if (!res) return json();
    if (res->status != 200) return json({{"status", res->status}, {"body", res->body}});
    return json::parse(res->body)["deliveries"];
  };
  std::string key, secret, id;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<testing::CopsdProcess> copsd,
                         testing::CopsdProcess::Start(dir.path(), flags));
    const int port = port_of();
    ASSERT_GT(port, 0) << copsd->Log();
    std::ifstream(dir.path() / "data" / "admin.key") >> key;
    httplib::Client client("127.0.0.1", port);
    client.set_default_headers({{"Authorization", "Bearer " + key}});
    httplib::Result res = client.Put("/v1/webhook", "{}", "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    secret = json::parse(res->body)["secret"];
    res = client.Post(
        "/v1/jobs",
        json({{"content", Prose(33, 200)}, {"callback_url", receiver.Url("/hook")}}).dump(),
        "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 202) << res->body;
    id = json::parse(res->body)["id"];
    json deliveries;
    for (int i = 0; i < 3000; ++i) {
      deliveries = deliveries_of(client, id);
      if (deliveries.is_array() && deliveries.size() == 1 &&
          !deliveries[0]["attempts"].empty() &&
          deliveries[0].contains("next_attempt_unix_micros")) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(deliveries[0]["state"], "pending") << deliveries.dump();
    EXPECT_EQ(copsd->Stop(), 0);  // an attempt in flight ends first, and is kept
  }
  // However many attempts came before the stop (1 unless the host is slow), the next one
  // comes after the restart and succeeds.
  const size_t before = receiver.received();
  ASSERT_GE(before, 1u);
  receiver.AnswerFromNowOn(200);
  std::filesystem::remove(http_port);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<testing::CopsdProcess> copsd,
                       testing::CopsdProcess::Start(dir.path(), flags));
  const int port = port_of();
  ASSERT_GT(port, 0) << copsd->Log();
  const std::vector<Receiver::Received> got = receiver.WaitFor(before + 1);
  ASSERT_EQ(got.size(), before + 1) << copsd->Log();
  EXPECT_EQ(got.back().body, got[0].body);
  EXPECT_TRUE(SignatureIsValid(secret, got.back())) << got.back().signature;
  httplib::Client client("127.0.0.1", port);
  client.set_default_headers({{"Authorization", "Bearer " + key}});
  json deliveries;
  for (int i = 0; i < 3000; ++i) {
    deliveries = deliveries_of(client, id);
    if (deliveries.is_array() && !deliveries.empty() && deliveries[0]["state"] != "pending") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(deliveries.is_array()) << deliveries.dump();
  ASSERT_EQ(deliveries.size(), 1u) << deliveries.dump();
  EXPECT_EQ(deliveries[0]["state"], "delivered") << deliveries.dump();
  const json& attempts = deliveries[0]["attempts"];
  ASSERT_EQ(attempts.size(), before + 1) << deliveries.dump();
  for (size_t i = 0; i < before; ++i) EXPECT_EQ(attempts[i]["http_status"], 500);
  EXPECT_EQ(attempts[before]["http_status"], 200);
  // The backoff the schedule set before the stop: 1.5 s, doubled after each failure.
  EXPECT_GE(attempts[before]["unix_micros"].get<int64_t>() -
                attempts[before - 1]["unix_micros"].get<int64_t>(),
            int64_t{1500000} << (before - 1));
  // Another principal's key still sees none of it.
  httplib::Client anonymous("127.0.0.1", port);
  httplib::Result res = anonymous.Get(("/v1/jobs/" + id + "/deliveries").c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
}

}  // namespace
}  // namespace cops
