// End to end through gRPC: the CopyDetection and Admin services over a real index with
// access control on, as copsd runs them with --auth=on: each role allowed and refused per RPC,
// collection isolation in reports and listings, privacy of registered text, revoked keys, rate
// limits, quotas, the audit trail, and signed registration receipts.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "access/access_control.h"
#include "core/hash_key.h"
#include "core/receipt.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "proto/cops_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "server/service.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using testing_corpus::Prose;

class ServiceAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IndexGenerationsOptions options;
    options.data_dir = dir_.path().string();
    options.detector.now_micros = [this] { return now_.load(); };
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    ASSERT_OK_AND_ASSIGN(access_,
                         OpenAccessControl(dir_.path().string(), /*bootstrap_admin=*/true));
    std::ifstream(dir_.path() / "admin.key") >> admin_key_;

    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()),
                                         MatchesFrom(access_->store()));
    ASSERT_OK_AND_ASSIGN(receipts_, ReceiptSigner::Open(DataDir(dir_.path().string()),
                                                        [this] { return now_.load(); }));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), access_.get(),
                                                      usage_.get(), audit_.get(), receipts_.get());
    admin_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                            generations_.get(), receipts_.get());
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get(), admin_.get()}));
    stub_ = server_->NewStub<v1::CopyDetection>();
    admin_stub_ = server_->NewStub<v1::Admin>();

    acm_key_ = NewPrincipal("acm-press", Role::kOwner, {"acm"});
    acm2_key_ = NewPrincipal("acm-second", Role::kOwner, {"acm"});
    ieee_key_ = NewPrincipal("ieee-press", Role::kOwner, {"ieee"});
    pc_key_ = NewPrincipal("sigmod-pc", Role::kChecker, {"acm"});
  }
  std::string NewPrincipal(const std::string& name, Role role, std::vector<std::string> cols,
                           double rps = 0, uint32_t burst = 0, uint64_t max_documents = 0) {
    PrincipalRecord r;
    r.name = name;
    r.role = static_cast<uint8_t>(role);
    r.collections = std::move(cols);
    r.requests_per_second = rps;
    r.burst = burst;
    r.max_documents = max_documents;
    auto issued = access_->CreatePrincipal(r);
    EXPECT_OK(issued);
    return issued.ok() ? issued->api_key : "";
  }

  grpc::Status Register(const std::string& key, const std::string& text,
                        const std::string& collection, uint64_t* id = nullptr,
                        v1::DocumentFormat format = v1::DOCUMENT_FORMAT_TEXT,
                        v1::RegisterDocumentReply* reply_out = nullptr) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::RegisterDocumentRequest req;
    req.mutable_document()->set_content(text);
    req.mutable_document()->set_format(format);
    req.mutable_document()->mutable_metadata()->set_title("Secret title " + collection);
    req.mutable_document()->mutable_metadata()->set_collection(collection);
    v1::RegisterDocumentReply reply;
    grpc::Status s = stub_->RegisterDocument(&ctx, req, &reply);
    if (id != nullptr) *id = reply.doc_id();
    if (reply_out != nullptr) *reply_out = reply;
    return s;
  }

  // One RegisterDocuments stream of `texts` into `collection`; text i asks for no receipt when
  // omit_receipt(i).
  grpc::Status RegisterStream(const std::string& key, const std::vector<std::string>& texts,
                              const std::string& collection, v1::RegisterDocumentsReply* reply,
                              const std::function<bool(size_t)>& omit_receipt = nullptr) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    std::unique_ptr<grpc::ClientWriter<v1::RegisterDocumentRequest>> writer =
        stub_->RegisterDocuments(&ctx, reply);
    for (size_t i = 0; i < texts.size(); ++i) {
      v1::RegisterDocumentRequest req;
      req.mutable_document()->set_content(texts[i]);
      req.mutable_document()->mutable_metadata()->set_collection(collection);
      req.set_omit_receipt(omit_receipt != nullptr && omit_receipt(i));
      if (!writer->Write(req)) break;  // the server ended the call: Finish() says why
    }
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status Check(const std::string& key, const std::string& text,
                     std::vector<std::string> collections, v1::CheckDocumentReply* reply) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::CheckDocumentRequest req;
    req.set_content(text);
    req.set_format(v1::DOCUMENT_FORMAT_TEXT);
    for (const auto& c : collections) req.add_collections(c);
    return stub_->CheckDocument(&ctx, req, reply);
  }

  grpc::Status Get(const std::string& key, uint64_t id, bool content, v1::GetDocumentReply* r) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::GetDocumentRequest req;
    req.set_doc_id(id);
    req.set_include_content(content);
    return stub_->GetDocument(&ctx, req, r);
  }

  grpc::Status Unregister(const std::string& key, uint64_t id) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::UnregisterDocumentRequest req;
    req.set_doc_id(id);
    v1::UnregisterDocumentReply reply;
    return stub_->UnregisterDocument(&ctx, req, &reply);
  }

  grpc::Status List(const std::string& key, v1::ListDocumentsReply* reply) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    return stub_->ListDocuments(&ctx, v1::ListDocumentsRequest(), reply);
  }

  grpc::Status Stats(const std::string& key) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::GetStatsReply reply;
    return stub_->GetStats(&ctx, v1::GetStatsRequest(), &reply);
  }

  // The public keys the caller `key` is given by Admin.ListSigningKeys.
  std::vector<VerifyingKey> SigningKeys(const std::string& key) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::ListSigningKeysResponse keys;
    EXPECT_OK(admin_stub_->ListSigningKeys(&ctx, v1::ListSigningKeysRequest(), &keys));
    std::vector<VerifyingKey> out;
    for (const v1::SigningKeyInfo& k : keys.keys()) {
      absl::StatusOr<VerifyingKey> parsed = VerifyingKey::FromPem(k.public_key_pem());
      EXPECT_OK(parsed);
      if (parsed.ok()) out.push_back(*parsed);
    }
    return out;
  }

  grpc::Status Matches(const std::string& key, v1::ListMatchesReply* reply, uint64_t doc_id = 0,
                       const std::string& owner = "", int64_t since = 0) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::ListMatchesRequest req;
    req.set_doc_id(doc_id);
    req.set_owner(owner);
    req.set_since_unix_micros(since);
    reply->Clear();
    return stub_->ListMatches(&ctx, req, reply);
  }

  grpc::Status Audit(const std::string& key, uint64_t doc_id, v1::QueryAuditResponse* reply) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::QueryAuditRequest req;
    req.set_doc_id(doc_id);
    reply->Clear();
    return admin_stub_->QueryAudit(&ctx, req, reply);
  }

  // The receipts' and the index's clock (registration times, expiries): 2025-02-01.
  std::atomic<int64_t> now_{1738368000000000};
  testing::TempDir dir_{"svc_access"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::unique_ptr<ReceiptSigner> receipts_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<testing::TestServer> server_;  // stops before the services go
  std::unique_ptr<v1::CopyDetection::Stub> stub_;
  std::unique_ptr<v1::Admin::Stub> admin_stub_;
  std::string admin_key_, acm_key_, acm2_key_, ieee_key_, pc_key_;
};

constexpr grpc::StatusCode kDenied = grpc::StatusCode::PERMISSION_DENIED;
constexpr grpc::StatusCode kUnauthenticated = grpc::StatusCode::UNAUTHENTICATED;

TEST_F(ServiceAccessTest, AnonymousCallersAreUnauthenticated) {
  const std::string text = Prose(1, 200);
  uint64_t id = 0;
  ASSERT_OK(Register(acm_key_, text, "acm", &id));
  v1::CheckDocumentReply check;
  v1::GetDocumentReply get;
  v1::ListDocumentsReply list;
  EXPECT_EQ(Register("", text, "acm").error_code(), kUnauthenticated);
  EXPECT_EQ(Check("", text, {}, &check).error_code(), kUnauthenticated);
  EXPECT_EQ(Get("", id, false, &get).error_code(), kUnauthenticated);
  EXPECT_EQ(List("", &list).error_code(), kUnauthenticated);
  EXPECT_EQ(Unregister("", id).error_code(), kUnauthenticated);
  EXPECT_EQ(Stats("").error_code(), kUnauthenticated);
  EXPECT_EQ(Stats("cops_0123456789abcdef_" + std::string(64, 'f')).error_code(),
            kUnauthenticated);
}

TEST_F(ServiceAccessTest, EachRoleAllowedAndRefusedPerRpc) {
  const std::string text = Prose(2, 200);
  uint64_t id = 0;
  // Owner: registers into its collection only, reads and unregisters its own documents.
  ASSERT_OK(Register(acm_key_, text, "acm", &id));
  EXPECT_EQ(Register(acm_key_, Prose(3, 200), "ieee").error_code(), kDenied);
  v1::GetDocumentReply get;
  ASSERT_OK(Get(acm_key_, id, /*content=*/true, &get));
  EXPECT_EQ(get.document().content(), text);
  EXPECT_EQ(get.document().metadata().owner(), "acm-press");  // forced to the principal
  EXPECT_EQ(Stats(acm_key_).error_code(), kDenied);
  // A second owner of the same collection may not touch the first one's document.
  EXPECT_EQ(Unregister(acm2_key_, id).error_code(), kDenied);
  EXPECT_EQ(Get(acm2_key_, id, /*content=*/true, &get).error_code(), kDenied);

  // Checker: checks, nothing else.
  v1::CheckDocumentReply check;
  EXPECT_OK(Check(pc_key_, text, {}, &check));
  EXPECT_EQ(Register(pc_key_, Prose(4, 200), "acm").error_code(), kDenied);
  EXPECT_EQ(Get(pc_key_, id, /*content=*/true, &get).error_code(), kDenied);
  EXPECT_EQ(Unregister(pc_key_, id).error_code(), kDenied);
  EXPECT_EQ(Stats(pc_key_).error_code(), kDenied);
  v1::ListDocumentsReply list;
  EXPECT_EQ(List(pc_key_, &list).error_code(), kDenied);

  // Admin: everything.
  EXPECT_OK(Stats(admin_key_));
  EXPECT_OK(Get(admin_key_, id, true, &get));
  EXPECT_OK(Unregister(acm_key_, id));
}

TEST_F(ServiceAccessTest, CollectionsIsolateTenantsInReportsAndListings) {
  const std::string acm_text = Prose(10, 300);
  const std::string ieee_text = Prose(11, 300);
  uint64_t acm_id = 0, ieee_id = 0;
  ASSERT_OK(Register(acm_key_, acm_text, "acm", &acm_id));
  ASSERT_OK(Register(ieee_key_, ieee_text, "ieee", &ieee_id));

  // The admin sees that the ieee text is registered...
  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(admin_key_, ieee_text, {}, &reply));
  ASSERT_GE(reply.matches_size(), 1);
  EXPECT_EQ(reply.matches(0).doc_id(), ieee_id);
  // ...but the acm checker's report never mentions it.
  ASSERT_OK(Check(pc_key_, ieee_text, {}, &reply));
  EXPECT_EQ(reply.matches_size(), 0);
  EXPECT_FALSE(reply.violation());
  EXPECT_EQ(Check(pc_key_, ieee_text, {"ieee"}, &reply).error_code(), kDenied);
  // Its own collection's copy is reported with no registered text, offsets, title or owner.
  ASSERT_OK(Check(pc_key_, acm_text, {"acm"}, &reply));
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_TRUE(reply.violation());
  EXPECT_EQ(reply.matches(0).doc_id(), acm_id);
  EXPECT_EQ(reply.matches(0).title(), "");
  EXPECT_EQ(reply.matches(0).owner(), "");
  ASSERT_GE(reply.matches(0).spans_size(), 1);
  for (const auto& span : reply.matches(0).spans()) EXPECT_FALSE(span.has_registered());

  // Listings: each owner sees its own collection only.
  v1::ListDocumentsReply list;
  ASSERT_OK(List(ieee_key_, &list));
  ASSERT_EQ(list.documents_size(), 1);
  EXPECT_EQ(list.documents(0).doc_id(), ieee_id);
  // Another tenant's document does not exist as far as the caller can tell.
  EXPECT_EQ(Unregister(ieee_key_, acm_id).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GetDocumentReply get;
  EXPECT_EQ(Get(ieee_key_, acm_id, false, &get).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceAccessTest, TitlesFollowTheCollectionSetting) {
  const std::string text = Prose(20, 300);
  ASSERT_OK(Register(acm_key_, text, "acm"));
  CollectionRecord acm;
  acm.name = "acm";
  acm.show_titles_to_checkers = true;
  ASSERT_OK(access_->PutCollection(acm));
  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(pc_key_, text, {}, &reply));
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_EQ(reply.matches(0).title(), "Secret title acm");
  EXPECT_EQ(reply.matches(0).owner(), "");
}

TEST_F(ServiceAccessTest, OwnersSeeWhichChecksHitTheirDocuments) {
  const std::string text = Prose(30, 300);
  uint64_t id = 0;
  ASSERT_OK(Register(acm_key_, text, "acm", &id));
  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(pc_key_, text, {}, &reply));
  audit_->Flush();  // the record is written off the check path
  EXPECT_EQ(audit_->counters().written, 1u);
  v1::QueryAuditResponse audit;
  ASSERT_OK(Audit(acm_key_, id, &audit));
  ASSERT_EQ(audit.entries_size(), 1);
  EXPECT_EQ(audit.entries(0).checker(), "sigmod-pc");
  EXPECT_TRUE(audit.entries(0).violation());
  EXPECT_EQ(Audit(acm2_key_, id, &audit).error_code(), kDenied);
}

TEST_F(ServiceAccessTest, RevokedKeyFailsOnTheNextCall) {
  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(pc_key_, Prose(40, 100), {}, &reply));
  const std::string key_id = pc_key_.substr(5, 16);
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  v1::RevokeApiKeyRequest req;
  req.set_key_id(key_id);
  v1::RevokeApiKeyResponse resp;
  ASSERT_OK(admin_stub_->RevokeApiKey(&ctx, req, &resp));
  EXPECT_EQ(Check(pc_key_, Prose(40, 100), {}, &reply).error_code(), kUnauthenticated);
}

TEST_F(ServiceAccessTest, RateLimitAnswersResourceExhausted) {
  // Two calls of burst, refilled once every 1000 s: the third call is refused.
  const std::string key = NewPrincipal("slow", Role::kAdmin, {}, /*rps=*/0.001, /*burst=*/2);
  EXPECT_OK(Stats(key));
  EXPECT_OK(Stats(key));
  EXPECT_EQ(Stats(key).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  grpc::ClientContext ctx;  // the Admin service draws on the same bucket
  testing::PrepareCall(&ctx, key);
  v1::ListPrincipalsResponse principals;
  EXPECT_EQ(admin_stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &principals)
                .error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_OK(Stats(admin_key_));  // others are unaffected
}

TEST_F(ServiceAccessTest, FailedOrDuplicateRegistrationsUseNoQuota) {
  const std::string key = NewPrincipal("small", Role::kOwner, {"acm"}, 0, 0,
                                       /*max_documents=*/2);
  auto documents = [&] { return access_->Usage("small")->documents; };
  const std::string text = Prose(50, 200);
  ASSERT_OK(Register(key, text, "acm"));
  EXPECT_EQ(documents(), 1u);
  // The same text again: the existing document is returned and nothing is charged.
  ASSERT_OK(Register(key, text, "acm"));
  EXPECT_EQ(documents(), 1u);
  // A registration that fails after its quota was reserved (the content is no PDF).
  EXPECT_EQ(Register(key, "not a PDF at all", "acm", nullptr, v1::DOCUMENT_FORMAT_PDF)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(documents(), 1u);
  // So the second document still fits; the third does not.
  ASSERT_OK(Register(key, Prose(51, 200), "acm"));
  EXPECT_EQ(documents(), 2u);
  EXPECT_EQ(Register(key, Prose(52, 200), "acm").error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(ServiceAccessTest, ARegistrationCreatesItsCollectionACheckDoesNot) {
  auto names = [&] {
    std::vector<std::string> out;
    for (const CollectionRecord& c : access_->ListCollections()) out.push_back(c.name);
    return out;
  };
  const std::vector<std::string> before = names();
  v1::CheckDocumentReply reply;
  EXPECT_EQ(Check(admin_key_, Prose(60, 100), {"brand-new"}, &reply).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(names(), before);
  ASSERT_OK(Register(admin_key_, Prose(60, 100), "brand-new"));
  std::vector<std::string> after = before;
  after.push_back("brand-new");
  std::sort(after.begin(), after.end());
  EXPECT_EQ(names(), after);
  ASSERT_OK(Check(admin_key_, Prose(60, 100), {"brand-new"}, &reply));
  EXPECT_TRUE(reply.violation());
}

// A check or listing naming a collection that does not exist is NOT_FOUND, never an empty
// "no violation"; a caller without access to the name learns only PERMISSION_DENIED, so
// which collections exist stays hidden from it.
TEST_F(ServiceAccessTest, NamingAnUnknownCollectionIsNotFound) {
  const std::string text = Prose(70, 200);
  ASSERT_OK(Register(acm_key_, text, "acm"));
  v1::CheckDocumentReply reply;
  const grpc::Status unknown = Check(admin_key_, text, {"acm", "nosuch"}, &reply);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(unknown.error_message().find("collection 'nosuch' does not exist"),
            std::string::npos)
      << unknown.error_message();
  EXPECT_EQ(Check(pc_key_, text, {"nosuch"}, &reply).error_code(), kDenied);
  EXPECT_EQ(Check(pc_key_, text, {"ieee"}, &reply).error_code(), kDenied);
  // A collection that holds documents exists without a record, as on a follower that
  // applies the primary's registration log to its index alone.
  DocumentRecord replicated;
  replicated.collection = "replicated";
  ASSERT_OK(generations_->Current()->Register(text, DocumentFormat::kText, replicated));
  ASSERT_OK(Check(admin_key_, text, {"replicated"}, &reply));
  EXPECT_TRUE(reply.violation());

  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  v1::ListDocumentsRequest list;
  list.set_collection("nosuch");
  v1::ListDocumentsReply listed;
  EXPECT_EQ(stub_->ListDocuments(&ctx, list, &listed).error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext ctx2;
  testing::PrepareCall(&ctx2, ieee_key_);
  EXPECT_EQ(stub_->ListDocuments(&ctx2, list, &listed).error_code(), kDenied);

  // In a check stream the message fails alone, with the same status.
  grpc::ClientContext stream_ctx;
  testing::PrepareCall(&stream_ctx, admin_key_);
  auto stream = stub_->CheckStream(&stream_ctx);
  v1::CheckDocumentRequest request;
  request.set_content(text);
  request.add_collections("nosuch");
  ASSERT_TRUE(stream->Write(request));
  request.set_collections(0, "acm");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.error_code(), 0);
  EXPECT_TRUE(reply.violation());
  EXPECT_OK(stream->Finish());
}

TEST_F(ServiceAccessTest, TextSharedWithATemplateCollectionNeverCountsAgainstACheck) {
  auto set_template = [&](bool on) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, admin_key_);
    v1::CreateCollectionRequest req;
    req.mutable_collection()->set_name("cfp");
    req.mutable_collection()->set_keep_audit(true);
    req.mutable_collection()->set_template_(on);
    v1::CreateCollectionResponse resp;
    EXPECT_OK(admin_stub_->CreateCollection(&ctx, req, &resp));
    EXPECT_EQ(resp.collection().template_(), on);
  };
  set_template(true);
  // The call for papers, in the template collection; an earlier paper repeating its first
  // part; and the checked paper, which repeats it too and otherwise says its own things.
  const std::string call = Prose(40, 160);
  const std::string repeated = call.substr(0, call.size() / 2);
  uint64_t call_id = 0, earlier_id = 0;
  ASSERT_OK(Register(admin_key_, call, "cfp", &call_id));
  ASSERT_OK(Register(acm_key_, repeated + " " + Prose(41, 200), "acm", &earlier_id));
  const std::string text = repeated + " " + Prose(42, 240);

  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(admin_key_, text, {}, &reply));
  EXPECT_FALSE(reply.violation());
  ASSERT_EQ(reply.matches_size(), 2);
  EXPECT_EQ(reply.matches(0).doc_id(), earlier_id);
  EXPECT_DOUBLE_EQ(reply.matches(0).ratio(), 0);
  ASSERT_GT(reply.matches(0).spans_size(), 0);
  EXPECT_EQ(reply.matches(0).spans(0).excluded(), v1::EXCLUSION_TEMPLATE);
  EXPECT_EQ(reply.matches(1).doc_id(), call_id);
  EXPECT_TRUE(reply.matches(1).from_template());
  EXPECT_FALSE(reply.matches(1).violation());
  ASSERT_EQ(reply.excluded_size(), 1);
  EXPECT_EQ(reply.excluded(0).reason(), v1::EXCLUSION_TEMPLATE);
  EXPECT_EQ(reply.excluded(0).test_start(), 0u);
  ASSERT_EQ(reply.params().template_collections_size(), 1);
  EXPECT_EQ(reply.params().template_collections(0), "cfp");

  // A check that does not search the template collection, or once it is a template no more:
  // the shared text counts.
  ASSERT_OK(Check(admin_key_, text, {"acm"}, &reply));
  EXPECT_TRUE(reply.violation());
  EXPECT_EQ(reply.params().template_collections_size(), 0);
  set_template(false);
  ASSERT_OK(Check(admin_key_, text, {}, &reply));
  EXPECT_TRUE(reply.violation());
  EXPECT_EQ(reply.excluded_size(), 0);
}

SignedReceipt ReceiptOf(const v1::RegisterDocumentReply& reply) {
  return SignedReceipt{reply.receipt().payload(), reply.receipt().signature(),
                       reply.receipt().key_id()};
}

TEST_F(ServiceAccessTest, ARegistrationReturnsAReceiptThatVerifiesOffline) {
  const std::string text = Prose(70, 200);
  v1::RegisterDocumentReply reply;
  ASSERT_OK(Register(acm_key_, text, "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &reply));
  ASSERT_TRUE(reply.has_receipt());
  // Any principal may fetch the public keys, the checker too.
  ASSERT_OK_AND_ASSIGN(ReceiptFields fields, VerifyReceipt(ReceiptOf(reply), SigningKeys(pc_key_)));

  v1::GetDocumentReply get;
  ASSERT_OK(Get(admin_key_, reply.doc_id(), false, &get));
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  v1::GetStatsReply stats;
  ASSERT_OK(stub_->GetStats(&ctx, v1::GetStatsRequest(), &stats));
  EXPECT_EQ(fields.doc_id, reply.doc_id());
  EXPECT_EQ(fields.content_sha256, Sha256Hex(text));
  EXPECT_EQ(fields.text_sha256, get.document().sha256());
  EXPECT_EQ(fields.size_bytes, text.size());
  EXPECT_EQ(fields.format, "text");
  EXPECT_EQ(fields.chunking, stats.chunking());
  EXPECT_EQ(fields.hash_key_id, stats.key_id());
  EXPECT_EQ(fields.owner, "acm-press");
  EXPECT_EQ(fields.collection, "acm");
  EXPECT_EQ(fields.registered_unix_micros, get.document().registered_unix_micros());
  EXPECT_EQ(fields.issued_unix_micros, now_);
  EXPECT_EQ(fields.signing_key_id, reply.receipt().key_id());
  EXPECT_THAT(reply.receipt().payload(), ::testing::Not(::testing::HasSubstr("Secret title")));
}

TEST_F(ServiceAccessTest, ARepeatedRegistrationGetsTheExistingDocumentsReceiptIfItMayReadIt) {
  const std::string text = Prose(71, 200);
  v1::RegisterDocumentReply first, again, other_owner, other_tenant;
  ASSERT_OK(Register(acm_key_, text, "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &first));
  now_ += 60000000;
  ASSERT_OK(Register(acm_key_, text, "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &again));
  EXPECT_FALSE(again.created());
  ASSERT_OK_AND_ASSIGN(ReceiptFields a, VerifyReceipt(ReceiptOf(first), SigningKeys(acm_key_)));
  ASSERT_OK_AND_ASSIGN(ReceiptFields b, VerifyReceipt(ReceiptOf(again), SigningKeys(acm_key_)));
  // The same document and registration time; only the issue time is this call's.
  EXPECT_EQ(b.doc_id, a.doc_id);
  EXPECT_EQ(b.registered_unix_micros, a.registered_unix_micros);
  EXPECT_EQ(b.content_sha256, a.content_sha256);
  EXPECT_EQ(b.issued_unix_micros, a.issued_unix_micros + 60000000);

  // Another owner of the same collection may read the record: the receipt of the original.
  ASSERT_OK(Register(acm2_key_, text, "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &other_owner));
  EXPECT_EQ(other_owner.duplicate_of(), first.doc_id());
  ASSERT_OK_AND_ASSIGN(ReceiptFields c,
                       VerifyReceipt(ReceiptOf(other_owner), SigningKeys(acm2_key_)));
  EXPECT_EQ(c.owner, "acm-press");
  // Another tenant's copy is a document of its own (duplicates are per collection): its
  // receipt names that tenant, never acm's owner or collection.
  ASSERT_OK(Register(ieee_key_, text, "ieee", nullptr, v1::DOCUMENT_FORMAT_TEXT, &other_tenant));
  EXPECT_TRUE(other_tenant.created());
  EXPECT_FALSE(other_tenant.has_duplicate_of());
  ASSERT_OK_AND_ASSIGN(ReceiptFields d,
                       VerifyReceipt(ReceiptOf(other_tenant), SigningKeys(ieee_key_)));
  EXPECT_EQ(d.doc_id, other_tenant.doc_id());
  EXPECT_EQ(d.owner, "ieee-press");
  EXPECT_EQ(d.collection, "ieee");
}

TEST_F(ServiceAccessTest, EachDocumentOfABulkRegistrationHasItsReceipt) {
  const std::vector<std::string> texts = {Prose(72, 200), Prose(73, 200), Prose(72, 200)};
  v1::RegisterDocumentsReply reply;
  ASSERT_OK(RegisterStream(acm_key_, texts, "acm", &reply));
  ASSERT_EQ(reply.results_size(), 3);
  const std::vector<VerifyingKey> keys = SigningKeys(acm_key_);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ASSERT_OK_AND_ASSIGN(ReceiptFields f, VerifyReceipt(ReceiptOf(reply.results(i).reply()), keys));
    EXPECT_EQ(f.doc_id, reply.results(i).reply().doc_id());
    EXPECT_EQ(f.content_sha256, Sha256Hex(texts[i]));
  }
  EXPECT_EQ(reply.results(2).reply().doc_id(), reply.results(0).reply().doc_id());
}

// A caller that keeps no receipt asks for none (omit_receipt): its registration is made, its
// reply carries no receipt, and the others of the same stream still get theirs. The receipt
// is had later by registering the text again.
TEST_F(ServiceAccessTest, ARegistrationThatOmitsItsReceiptIsMadeWithoutOne) {
  const std::vector<std::string> texts = {Prose(75, 200), Prose(76, 200), Prose(77, 200)};
  v1::RegisterDocumentsReply reply;
  ASSERT_OK(RegisterStream(acm_key_, texts, "acm", &reply, [](size_t i) { return i == 1; }));
  ASSERT_EQ(reply.registered(), 3u);
  const std::vector<VerifyingKey> keys = SigningKeys(acm_key_);
  EXPECT_OK(VerifyReceipt(ReceiptOf(reply.results(0).reply()), keys));
  EXPECT_TRUE(reply.results(1).reply().created());
  EXPECT_FALSE(reply.results(1).reply().has_receipt());
  EXPECT_OK(VerifyReceipt(ReceiptOf(reply.results(2).reply()), keys));

  // One call alike; the same text again, asking for it, gets the document's receipt.
  grpc::ClientContext one;
  testing::PrepareCall(&one, acm_key_);
  v1::RegisterDocumentRequest req;
  req.mutable_document()->set_content(Prose(78, 200));
  req.mutable_document()->mutable_metadata()->set_collection("acm");
  req.set_omit_receipt(true);
  v1::RegisterDocumentReply omitted;
  ASSERT_OK(stub_->RegisterDocument(&one, req, &omitted));
  EXPECT_TRUE(omitted.created());
  EXPECT_FALSE(omitted.has_receipt());
  v1::RegisterDocumentReply again;
  ASSERT_OK(Register(acm_key_, Prose(78, 200), "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &again));
  EXPECT_EQ(again.doc_id(), omitted.doc_id());
  ASSERT_OK_AND_ASSIGN(ReceiptFields f, VerifyReceipt(ReceiptOf(again), keys));
  EXPECT_EQ(f.doc_id, omitted.doc_id());
  EXPECT_EQ(f.content_sha256, Sha256Hex(Prose(78, 200)));
}

TEST_F(ServiceAccessTest, OnlyAdminsRotateTheSigningKeyAndOldReceiptsStillVerify) {
  v1::RegisterDocumentReply before, after;
  ASSERT_OK(Register(acm_key_, Prose(74, 200), "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &before));
  v1::RotateSigningKeyResponse rotated;
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, acm_key_);
    EXPECT_EQ(admin_stub_->RotateSigningKey(&ctx, v1::RotateSigningKeyRequest(), &rotated)
                  .error_code(),
              kDenied);
  }
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, admin_key_);
  ASSERT_OK(admin_stub_->RotateSigningKey(&ctx, v1::RotateSigningKeyRequest(), &rotated));
  EXPECT_TRUE(rotated.key().live());
  EXPECT_NE(rotated.key().key_id(), before.receipt().key_id());
  ASSERT_OK(Register(acm_key_, Prose(75, 200), "acm", nullptr, v1::DOCUMENT_FORMAT_TEXT, &after));
  EXPECT_EQ(after.receipt().key_id(), rotated.key().key_id());
  const std::vector<VerifyingKey> keys = SigningKeys(acm_key_);
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_OK(VerifyReceipt(ReceiptOf(before), keys));
  EXPECT_OK(VerifyReceipt(ReceiptOf(after), keys));
}

// Another tenant's byte-identical copy is its own document, registered in its own
// collection; no reply names the first tenant's document.
TEST_F(ServiceAccessTest, ACopyOfAnotherTenantsTextIsRegisteredInTheCallersCollection) {
  const std::string text = Prose(80, 300);
  uint64_t acm_id = 0;
  ASSERT_OK(Register(acm_key_, text, "acm", &acm_id));
  auto register_reply = [&](const std::string& key, const std::string& collection) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::RegisterDocumentRequest req;
    req.mutable_document()->set_content(text);
    req.mutable_document()->mutable_metadata()->set_collection(collection);
    v1::RegisterDocumentReply reply;
    EXPECT_OK(stub_->RegisterDocument(&ctx, req, &reply));
    return reply;
  };
  const v1::RegisterDocumentReply ieee = register_reply(ieee_key_, "ieee");
  EXPECT_TRUE(ieee.created());
  EXPECT_FALSE(ieee.has_duplicate_of());
  EXPECT_NE(ieee.doc_id(), acm_id);
  // Within a collection a copy is still the duplicate it was.
  const v1::RegisterDocumentReply again = register_reply(ieee_key_, "ieee");
  EXPECT_FALSE(again.created());
  EXPECT_EQ(again.duplicate_of(), ieee.doc_id());
  const v1::RegisterDocumentReply acm_again = register_reply(acm2_key_, "acm");
  EXPECT_EQ(acm_again.duplicate_of(), acm_id);

  // The ieee copy is protected: it is ieee's, and ieee's checks report it alone.
  v1::GetDocumentReply get;
  ASSERT_OK(Get(ieee_key_, ieee.doc_id(), /*content=*/true, &get));
  EXPECT_EQ(get.document().metadata().collection(), "ieee");
  EXPECT_EQ(get.document().metadata().owner(), "ieee-press");
  v1::CheckDocumentReply reply;
  ASSERT_OK(Check(ieee_key_, text, {}, &reply));
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_EQ(reply.matches(0).doc_id(), ieee.doc_id());
  ASSERT_OK(Check(pc_key_, text, {}, &reply));
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_EQ(reply.matches(0).doc_id(), acm_id);
  EXPECT_EQ(access_->Usage("ieee-press")->documents, 1u);
}

std::string HexSha256(const std::string& bytes) {
  std::string hex;
  char buf[3];
  for (uint8_t b : Sha256(bytes)) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

TEST_F(ServiceAccessTest, OwnersListTheMatchesOfTheirOwnDocumentsOnly) {
  const std::string a_text = Prose(40, 300), b_text = Prose(41, 300), c_text = Prose(42, 300);
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_OK(Register(acm_key_, a_text, "acm", &a));
  ASSERT_OK(Register(acm2_key_, b_text, "acm", &b));
  ASSERT_OK(Register(ieee_key_, c_text, "ieee", &c));
  // The checker's document: a copy of a inside text of its own.
  const std::string checked = "A preface of the checker's own words, which the owner of the "
                              "registered document must never see. " + a_text;
  v1::CheckDocumentReply check;
  ASSERT_OK(Check(pc_key_, checked, {}, &check));
  ASSERT_OK(Check(pc_key_, b_text, {}, &check));
  ASSERT_OK(Check(admin_key_, c_text, {}, &check));
  audit_->Flush();

  v1::ListMatchesReply mine;
  ASSERT_OK(Matches(acm_key_, &mine));
  ASSERT_EQ(mine.entries_size(), 1);
  const v1::AuditEntry& e = mine.entries(0);
  EXPECT_EQ(e.doc_id(), a);
  EXPECT_EQ(e.checker(), "sigmod-pc");
  EXPECT_EQ(e.collection(), "acm");
  EXPECT_GT(e.ratio(), 0.5);
  EXPECT_TRUE(e.violation());
  EXPECT_EQ(e.test_sha256(), HexSha256(checked));
  // The checked text itself is not in what the owner gets, nor anywhere in the entry.
  EXPECT_EQ(mine.SerializeAsString().find("preface of the checker"), std::string::npos);

  // Each owner sees its own documents' checks, whatever document id it names.
  ASSERT_OK(Matches(acm_key_, &mine, /*doc_id=*/b));
  EXPECT_EQ(mine.entries_size(), 0);
  ASSERT_OK(Matches(acm_key_, &mine, /*doc_id=*/c));
  EXPECT_EQ(mine.entries_size(), 0);
  ASSERT_OK(Matches(acm_key_, &mine, /*doc_id=*/a));
  EXPECT_EQ(mine.entries_size(), 1);
  ASSERT_OK(Matches(acm2_key_, &mine));
  ASSERT_EQ(mine.entries_size(), 1);
  EXPECT_EQ(mine.entries(0).doc_id(), b);
  ASSERT_OK(Matches(ieee_key_, &mine));
  ASSERT_EQ(mine.entries_size(), 1);
  EXPECT_EQ(mine.entries(0).checker(), "admin");
  // Nobody reads another owner's list but an admin; checkers have none.
  EXPECT_EQ(Matches(acm_key_, &mine, 0, "ieee-press").error_code(), kDenied);
  EXPECT_EQ(Matches(pc_key_, &mine).error_code(), kDenied);
  ASSERT_OK(Matches(admin_key_, &mine, 0, "acm-press"));
  ASSERT_EQ(mine.entries_size(), 1);
  EXPECT_EQ(mine.entries(0).doc_id(), a);
  // --since: only later checks.
  ASSERT_OK(Matches(acm_key_, &mine, 0, "", e.unix_micros() + 1));
  EXPECT_EQ(mine.entries_size(), 0);
  // Admin.QueryAudit shows the digest too.
  v1::QueryAuditResponse audit;
  ASSERT_OK(Audit(acm_key_, a, &audit));
  ASSERT_EQ(audit.entries_size(), 1);
  EXPECT_EQ(audit.entries(0).test_sha256(), HexSha256(checked));
}

TEST_F(ServiceAccessTest, ExpiryEmbargoAndCollectionRetentionThroughTheService) {
  constexpr int64_t kSecond = 1000000;
  const int64_t t0 = now_.load();
  CollectionRecord acm;
  acm.name = "acm";
  acm.retention_seconds = 3600;
  ASSERT_OK(access_->PutCollection(acm));

  // No expiry given: the collection's retention sets one.
  const std::string retained = Prose(50, 300);
  uint64_t id = 0;
  ASSERT_OK(Register(acm_key_, retained, "acm", &id));
  v1::GetDocumentReply get;
  ASSERT_OK(Get(acm_key_, id, false, &get));
  EXPECT_EQ(get.document().metadata().expires_unix_micros(), t0 + 3600 * kSecond);
  EXPECT_EQ(get.document().registered_unix_micros(), t0);

  // An explicit expiry and an embargo are kept as given and shown.
  const std::string embargoed = Prose(51, 300);
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, acm_key_);
  v1::RegisterDocumentRequest req;
  req.mutable_document()->set_content(embargoed);
  v1::DocumentMetadata* m = req.mutable_document()->mutable_metadata();
  m->set_collection("acm");
  m->set_expires_unix_micros(t0 + 7200 * kSecond);
  m->set_not_before_unix_micros(t0 + 60 * kSecond);
  v1::RegisterDocumentReply reply;
  ASSERT_OK(stub_->RegisterDocument(&ctx, req, &reply));
  ASSERT_OK(Get(acm_key_, reply.doc_id(), false, &get));
  EXPECT_EQ(get.document().metadata().expires_unix_micros(), t0 + 7200 * kSecond);
  EXPECT_EQ(get.document().metadata().not_before_unix_micros(), t0 + 60 * kSecond);
  v1::CheckDocumentReply check;
  ASSERT_OK(Check(pc_key_, embargoed, {}, &check));
  EXPECT_EQ(check.matches_size(), 0);  // under embargo
  now_ = t0 + 60 * kSecond;
  ASSERT_OK(Check(pc_key_, embargoed, {}, &check));
  ASSERT_EQ(check.matches_size(), 1);
  EXPECT_EQ(check.matches(0).doc_id(), reply.doc_id());
  now_ = t0 + 3600 * kSecond;
  ASSERT_OK(Check(pc_key_, retained, {}, &check));
  EXPECT_EQ(check.matches_size(), 0);  // its retention ran out

  // An expiry in the past: INVALID_ARGUMENT naming it, nothing stored, no quota used.
  grpc::ClientContext past_ctx;
  testing::PrepareCall(&past_ctx, acm_key_);
  m->set_expires_unix_micros(t0);
  m->set_not_before_unix_micros(0);
  req.mutable_document()->set_content(Prose(52, 300));
  grpc::Status past = stub_->RegisterDocument(&past_ctx, req, &reply);
  EXPECT_EQ(past.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(past.error_message().find("is not in the future"), std::string::npos)
      << past.error_message();
  EXPECT_EQ(access_->Usage("acm-press")->documents, 2u);
}

// A stream authenticates when it opens; a key revoked while it is open ends it at the next
// message, for checks and for bulk registrations alike.
TEST_F(ServiceAccessTest, ARevokedKeyEndsItsOpenStreams) {
  grpc::ClientContext check_ctx;
  testing::PrepareCall(&check_ctx, pc_key_);
  auto checks = stub_->CheckStream(&check_ctx);
  v1::CheckDocumentRequest check;
  check.set_content(Prose(41, 100));
  check.set_format(v1::DOCUMENT_FORMAT_TEXT);
  v1::CheckDocumentReply reply;
  ASSERT_TRUE(checks->Write(check) && checks->Read(&reply));
  EXPECT_EQ(reply.error_code(), 0) << reply.error_message();

  grpc::ClientContext register_ctx;
  testing::PrepareCall(&register_ctx, acm_key_);
  v1::RegisterDocumentsReply registered;
  auto registrations = stub_->RegisterDocuments(&register_ctx, &registered);
  v1::RegisterDocumentRequest doc;
  doc.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
  doc.mutable_document()->mutable_metadata()->set_collection("acm");
  doc.mutable_document()->set_content(Prose(42, 150));
  ASSERT_TRUE(registrations->Write(doc));

  for (const std::string& key : {pc_key_, acm_key_}) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, admin_key_);
    v1::RevokeApiKeyRequest req;
    req.set_key_id(key.substr(5, 16));
    v1::RevokeApiKeyResponse resp;
    ASSERT_OK(admin_stub_->RevokeApiKey(&ctx, req, &resp));
  }

  // The next check is not served: the stream ends UNAUTHENTICATED.
  check.set_content(Prose(43, 100));
  reply.Clear();
  if (checks->Write(check) && checks->Read(&reply)) {
    ADD_FAILURE() << "a check was answered on a revoked key's stream, error_code "
                  << reply.error_code();
  }
  checks->WritesDone();
  EXPECT_EQ(checks->Finish().error_code(), kUnauthenticated);

  // The documents sent after the revocation are not registered.
  doc.mutable_document()->set_content(Prose(44, 150));
  registrations->Write(doc);
  registrations->WritesDone();
  EXPECT_EQ(registrations->Finish().error_code(), kUnauthenticated);
  v1::CheckDocumentReply found;
  ASSERT_OK(Check(admin_key_, Prose(44, 150), {}, &found));
  EXPECT_EQ(found.matches_size(), 0);
}

// A LogPosition that counts the calls that would wait for the log.
class CountingLogPosition final : public LogPosition {
 public:
  absl::Status AwaitApplied(uint64_t, std::chrono::steady_clock::time_point) override {
    ++waits;
    return absl::OkStatus();
  }
  absl::StatusOr<RegisterResultInfo> OutcomeOf(uint64_t,
                                               std::chrono::steady_clock::time_point) override {
    ++waits;
    return absl::UnavailableError("not applied");
  }
  std::atomic<int> waits{0};
};

// A read-your-writes wait holds the caller's thread: it comes after the rate limit, so a
// caller over its limit (or without access) never gets to wait.
TEST_F(ServiceAccessTest, ReadYourWritesWaitsComeAfterTheRateLimit) {
  CountingLogPosition position;
  CopyDetectionService follower(generations_.get(), access_.get(), usage_.get(), audit_.get(),
                                receipts_.get(), /*writes=*/nullptr, /*admission=*/nullptr,
                                &position);
  ASSERT_OK_AND_ASSIGN(auto server, testing::TestServer::Start({&follower}));
  auto stub = server->NewStub<v1::CopyDetection>();
  // One call of burst, refilled once every 1000 s.
  const std::string key = NewPrincipal("one-shot", Role::kChecker, {"acm"}, 0.001, 1);
  auto check = [&](std::vector<std::string> collections) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::CheckDocumentRequest req;
    req.set_content(Prose(45, 100));
    req.set_format(v1::DOCUMENT_FORMAT_TEXT);
    req.set_min_log_sequence(1000000);
    for (const auto& c : collections) req.add_collections(c);
    v1::CheckDocumentReply reply;
    return stub->CheckDocument(&ctx, req, &reply).error_code();
  };
  EXPECT_EQ(check({"ieee"}), kDenied);  // no access: refused before any wait
  EXPECT_EQ(position.waits.load(), 0);
  EXPECT_EQ(check({}), grpc::StatusCode::OK);
  EXPECT_EQ(position.waits.load(), 1);
  EXPECT_EQ(check({}), grpc::StatusCode::RESOURCE_EXHAUSTED);  // over its rate
  EXPECT_EQ(position.waits.load(), 1);
  grpc::ClientContext ctx;
  testing::PrepareCall(&ctx, key);
  v1::GetDocumentRequest get;
  get.set_log_sequence(1000000);
  v1::GetDocumentReply got;
  EXPECT_EQ(stub->GetDocument(&ctx, get, &got).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(position.waits.load(), 1);
}

// Spans and counts as an oracle: a checker asking for passages and counts of one unit would
// learn, a few words at a time, which phrases a registered document holds. Its checks use
// the server's floors (copsd --checker-min-passage-units 8, --checker-min-count 10, the
// defaults), an owner's checks what it asks.
TEST_F(ServiceAccessTest, CheckersCannotLowerPassagesAndCountsBelowTheFloors) {
  const std::string registered = Prose(70, 400);
  ASSERT_OK(Register(acm_key_, registered, "acm"));
  std::vector<std::string> words;
  for (size_t i = 0, j; i < registered.size(); i = j + 1) {
    j = registered.find(' ', i);
    if (j == std::string::npos) j = registered.size();
    words.push_back(registered.substr(i, j - i));
  }
  // Probes: ten words of the registered text amid new text, at 12 places.
  int owner_found = 0, checker_found = 0;
  for (int probe = 0; probe < 12; ++probe) {
    std::string excerpt;
    for (int w = 0; w < 10; ++w) excerpt += words[30 * probe + w] + " ";
    const std::string test = Prose(200 + probe, 80) + " " + excerpt + Prose(300 + probe, 80);
    for (const std::string* key : {&acm_key_, &pc_key_}) {
      grpc::ClientContext ctx;
      testing::PrepareCall(&ctx, *key);
      v1::CheckDocumentRequest req;
      req.set_content(test);
      req.set_format(v1::DOCUMENT_FORMAT_TEXT);
      req.mutable_options()->set_function(v1::DECISION_FUNCTION_MATCH_COUNT);
      req.mutable_options()->set_min_count(1);
      req.mutable_options()->set_min_passage_units(1);
      v1::CheckDocumentReply reply;
      ASSERT_OK(stub_->CheckDocument(&ctx, req, &reply));
      const bool checker = key == &pc_key_;
      EXPECT_EQ(reply.params().min_passage_units(), checker ? 8u : 1u);
      EXPECT_EQ(reply.params().min_count(), checker ? 10u : 1u);
      if (reply.violation()) ++(checker ? checker_found : owner_found);
    }
  }
  EXPECT_GT(owner_found, 0) << "the probes find the owner's own text";
  EXPECT_EQ(checker_found, 0);
  // At the default options both see the same: the floors equal the defaults.
  v1::CheckDocumentReply owner_reply, checker_reply;
  ASSERT_OK(Check(acm_key_, registered, {}, &owner_reply));
  ASSERT_OK(Check(pc_key_, registered, {}, &checker_reply));
  EXPECT_TRUE(owner_reply.violation());
  EXPECT_EQ(checker_reply.violation(), owner_reply.violation());
  EXPECT_EQ(checker_reply.params().min_passage_units(),
            owner_reply.params().min_passage_units());
  EXPECT_EQ(checker_reply.params().min_count(), owner_reply.params().min_count());
  ASSERT_EQ(checker_reply.matches_size(), 1);
  EXPECT_EQ(checker_reply.matches(0).spans_size(), owner_reply.matches(0).spans_size());
}

// Streams hold a handler thread while open: an idle one is ended after the idle timeout, a
// busy one at its maximum age, and the client learns it (CANCELLED; what was done stays).
TEST_F(ServiceAccessTest, IdleOrOldStreamsAreEnded) {
  StreamWatchdog idle_watchdog({.idle_timeout = absl::Milliseconds(200), .max_age = {}});
  StreamWatchdog age_watchdog({.idle_timeout = {}, .max_age = absl::Milliseconds(500)});
  for (StreamWatchdog* watchdog : {&idle_watchdog, &age_watchdog}) {
    CopyDetectionService service(generations_.get(), access_.get(), usage_.get(),
                                 audit_.get(), receipts_.get(), nullptr, nullptr, nullptr,
                                 watchdog);
    ASSERT_OK_AND_ASSIGN(auto server, testing::TestServer::Start({&service}));
    auto stub = server->NewStub<v1::CopyDetection>();
    const bool busy = watchdog == &age_watchdog;

    grpc::ClientContext check_ctx;
    testing::PrepareCall(&check_ctx, pc_key_, std::chrono::seconds(60));
    auto checks = stub->CheckStream(&check_ctx);
    v1::CheckDocumentRequest check;
    check.set_content(Prose(46, 60));
    check.set_format(v1::DOCUMENT_FORMAT_TEXT);
    v1::CheckDocumentReply reply;
    ASSERT_TRUE(checks->Write(check) && checks->Read(&reply));
    EXPECT_EQ(reply.error_code(), 0);
    // Idle: nothing more is sent. Busy: a check after another until the stream ends (the
    // loop is bounded by the call's deadline).
    int answered = 1;
    while (busy && checks->Write(check) && checks->Read(&reply)) ++answered;
    if (!busy) {
      EXPECT_FALSE(checks->Read(&reply));
    }
    EXPECT_EQ(checks->Finish().error_code(), grpc::StatusCode::CANCELLED)
        << (busy ? "busy" : "idle") << " stream after " << answered << " checks";

    grpc::ClientContext register_ctx;
    testing::PrepareCall(&register_ctx, acm_key_, std::chrono::seconds(60));
    v1::RegisterDocumentsReply registered;
    auto registrations = stub->RegisterDocuments(&register_ctx, &registered);
    v1::RegisterDocumentRequest doc;
    doc.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
    doc.mutable_document()->mutable_metadata()->set_collection("acm");
    // Busy: a document every 10 ms, so that the stream outlives its maximum age long before
    // it reaches the per-stream document limit (written without pauses, 50,000 buffered
    // writes can pass in under 500 ms). Bounded: 2,000 documents take 20 s.
    int sent = 0;
    do {
      doc.mutable_document()->set_content(Prose(500 + sent, 60));
      ++sent;
      if (busy) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (registrations->Write(doc) && busy && sent < 2000);
    EXPECT_EQ(registrations->Finish().error_code(), grpc::StatusCode::CANCELLED)
        << (busy ? "busy" : "idle") << " stream after " << sent << " documents";
  }
  EXPECT_EQ(idle_watchdog.ended(), 2u);
  EXPECT_EQ(age_watchdog.ended(), 2u);
}

}  // namespace
}  // namespace cops
