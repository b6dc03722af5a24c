// CopyDetectionService's size limits: what a caller sends is bounded before it is stored,
// and what a reply carries is bounded before it would outgrow gRPC's message limit, without
// losing what was acknowledged. (Admission: service_test.cc; access: service_access_test.cc.)

#include <memory>
#include <string>

#include "access/access_control.h"
#include "access/audit_sink.h"
#include "access/open_authorizer.h"
#include "access/usage_ledger.h"
#include "client/load_generator.h"
#include "engine/index_generations.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using ::testing::HasSubstr;

class ServiceLimitsTest : public ::testing::Test {
 protected:
  // The real service over a fresh data directory, every caller a local admin (--auth=off),
  // with `detector` options.
  void Start(CopyDetectorOptions detector = {}) {
    IndexGenerationsOptions options;
    options.data_dir = dir_.Join("data");
    options.detector = detector;
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    ASSERT_OK_AND_ASSIGN(access_, OpenAccessControl(dir_.Join("data"), false));
    authorizer_ = std::make_unique<OpenAuthorizer>(access_.get());
    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), authorizer_.get(),
                                                      usage_.get(), audit_.get());
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get()}));
    stub_ = server_->NewStub<v1::CopyDetection>();
  }

  static v1::Document Doc(int n) {
    v1::Document doc;
    doc.set_content(SyntheticText(/*seed=*/5, n, 1500));
    doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
    return doc;
  }

  grpc::Status Register(const v1::Document& doc, v1::RegisterDocumentReply* reply) {
    grpc::ClientContext context;
    testing::PrepareCall(&context, "");
    v1::RegisterDocumentRequest request;
    *request.mutable_document() = doc;
    return stub_->RegisterDocument(&context, request, reply);
  }

  const testing::TempDir dir_{"service_limits"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<OpenAuthorizer> authorizer_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<v1::CopyDetection::Stub> stub_;
};

TEST_F(ServiceLimitsTest, TitleAuthorAndExternalIdAreBoundedNamingTheField) {
  Start();
  const std::string at_limit(kMaxMetadataFieldBytes, 't');
  const std::string over(kMaxMetadataFieldBytes + 1, 'x');
  int n = 0;
  for (const char* field : {"title", "author", "external_id"}) {
    SCOPED_TRACE(field);
    auto set = [&](v1::Document& doc, const std::string& value) {
      const std::string f = field;
      if (f == "title") doc.mutable_metadata()->set_title(value);
      if (f == "author") doc.mutable_metadata()->set_author(value);
      if (f == "external_id") doc.mutable_metadata()->set_external_id(value);
    };
    v1::Document doc = Doc(++n);
    set(doc, over);
    v1::RegisterDocumentReply reply;
    const grpc::Status refused = Register(doc, &reply);
    EXPECT_EQ(refused.error_code(), grpc::INVALID_ARGUMENT) << refused.error_message();
    EXPECT_THAT(refused.error_message(), HasSubstr(field));
    set(doc, at_limit);
    EXPECT_OK(Register(doc, &reply));
  }
  EXPECT_EQ(generations_->Current()->index()->Stats().documents, 3u);
}

TEST_F(ServiceLimitsTest, ABulkStreamPastItsLimitKeepsEveryAcknowledgedReceipt) {
  CopyDetectorOptions detector;
  detector.bulk_window_documents = 2;
  detector.max_documents_per_stream = 5;
  Start(detector);
  grpc::ClientContext context;
  testing::PrepareCall(&context, "");
  v1::RegisterDocumentsReply reply;
  auto writer = stub_->RegisterDocuments(&context, &reply);
  v1::RegisterDocumentRequest request;
  for (int n = 0; n < 8; ++n) {
    *request.mutable_document() = Doc(100 + n);
    if (!writer->Write(request)) break;  // the server ended the stream
  }
  writer->WritesDone();
  ASSERT_OK(writer->Finish()) << "the documents registered are acknowledged, not lost";
  EXPECT_EQ(reply.registered(), 5u);
  ASSERT_EQ(reply.results_size(), 6);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(reply.results(i).has_reply()) << i;
    EXPECT_NE(reply.results(i).reply().doc_id(), 0u) << i;
  }
  const v1::RegisterResult& refused = reply.results(5);
  EXPECT_EQ(refused.index(), 5u);
  EXPECT_EQ(refused.error_code(), static_cast<int>(grpc::RESOURCE_EXHAUSTED));
  EXPECT_THAT(refused.error_message(), HasSubstr("at most 5 documents"));
  EXPECT_EQ(generations_->Current()->index()->Stats().documents, 5u);
}

}  // namespace
}  // namespace cops
