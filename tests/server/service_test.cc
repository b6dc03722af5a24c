// CopyDetectionService under admission control: with no room, each kind of document call is
// refused with RESOURCE_EXHAUSTED the way its RPC reports errors, and works again once there
// is room. (Access control per RPC: service_access_test.cc.)

#include "server/service.h"

#include <memory>
#include <optional>
#include <string>

#include "client/load_generator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/copy_detection_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using ::testing::HasSubstr;

AdmissionLimits OneCallNoWaiting() {
  AdmissionLimits limits;
  limits.max_calls = 1;
  limits.max_bytes = 64 << 20;
  limits.max_waiting = 0;
  return limits;
}

class ServiceAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(stack_.ok());
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({stack_.service()}));
    stub_ = server_->NewStub<v1::CopyDetection>();
  }

  // Takes the only place at work, as a long check would.
  void FillUp() {
    ASSERT_OK_AND_ASSIGN(busy_.emplace(), admission_.Admit(1, absl::InfiniteFuture()));
  }

  static v1::Document Doc(int n) {
    v1::Document doc;
    doc.set_content(SyntheticText(/*seed=*/3, n, 2000));
    doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
    return doc;
  }

  grpc::Status Check(const std::string& text, v1::CheckDocumentReply* reply) {
    grpc::ClientContext context;
    testing::PrepareCall(&context, "");
    v1::CheckDocumentRequest request;
    request.set_content(text);
    return stub_->CheckDocument(&context, request, reply);
  }

  const testing::TempDir dir_{"service"};
  AdmissionControl admission_{OneCallNoWaiting()};
  testing::CopyDetectionStack stack_{dir_, &admission_};
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<v1::CopyDetection::Stub> stub_;
  std::optional<AdmissionControl::Permit> busy_;
};

TEST_F(ServiceAdmissionTest, CheckWithoutRoomIsRefusedThenServed) {
  FillUp();
  v1::CheckDocumentReply reply;
  const grpc::Status refused = Check(SyntheticText(3, 1, 2000), &reply);
  EXPECT_EQ(refused.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      refused.error_message(),
      HasSubstr("server busy: checks and registrations at work 1 (limit 1), waiting 0 (limit 0); "
                "retry later"));

  busy_.reset();
  EXPECT_OK(Check(SyntheticText(3, 1, 2000), &reply));
  const AdmissionLoad load = admission_.load();
  EXPECT_EQ(load.refused, 1u);
  EXPECT_EQ(load.admitted, 2u);  // the test's own place, then the check
  EXPECT_EQ(load.calls, 0u);
}

TEST_F(ServiceAdmissionTest, RegistrationWithoutRoomIsRefusedAndStoresNothing) {
  FillUp();
  grpc::ClientContext context;
  testing::PrepareCall(&context, "");
  v1::RegisterDocumentRequest request;
  *request.mutable_document() = Doc(1);
  v1::RegisterDocumentReply reply;
  EXPECT_EQ(stub_->RegisterDocument(&context, request, &reply).error_code(),
            grpc::RESOURCE_EXHAUSTED);

  busy_.reset();
  grpc::ClientContext again;
  testing::PrepareCall(&again, "");
  ASSERT_OK(stub_->RegisterDocument(&again, request, &reply));
  EXPECT_TRUE(reply.created());  // the refused attempt left nothing behind
}

TEST_F(ServiceAdmissionTest, BulkWindowWithoutRoomFailsEachOfItsDocuments) {
  FillUp();
  grpc::ClientContext context;
  testing::PrepareCall(&context, "");
  v1::RegisterDocumentsReply reply;
  auto writer = stub_->RegisterDocuments(&context, &reply);
  v1::RegisterDocumentRequest request;
  for (int n = 0; n < 3; ++n) {
    *request.mutable_document() = Doc(n);
    ASSERT_TRUE(writer->Write(request));
  }
  writer->WritesDone();
  ASSERT_OK(writer->Finish());  // the stream itself succeeds; its documents failed
  EXPECT_EQ(reply.registered(), 0u);
  EXPECT_EQ(reply.failed(), 3u);
  ASSERT_EQ(reply.results_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(reply.results(i).index(), static_cast<uint32_t>(i));
    EXPECT_EQ(reply.results(i).error_code(), grpc::RESOURCE_EXHAUSTED);
    EXPECT_THAT(reply.results(i).error_message(), HasSubstr("server busy"));
  }
}

TEST_F(ServiceAdmissionTest, StreamedCheckWithoutRoomGetsAnErrorReplyAndTheStreamGoesOn) {
  FillUp();
  grpc::ClientContext context;
  testing::PrepareCall(&context, "");
  auto stream = stub_->CheckStream(&context);
  v1::CheckDocumentRequest request;
  request.set_content(SyntheticText(3, 1, 2000));
  request.set_request_id("first");
  ASSERT_TRUE(stream->Write(request));
  v1::CheckDocumentReply reply;
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.request_id(), "first");
  EXPECT_EQ(reply.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(reply.error_message(), HasSubstr("server busy"));

  busy_.reset();
  request.set_request_id("second");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.request_id(), "second");
  EXPECT_EQ(reply.error_code(), 0);
  stream->WritesDone();
  EXPECT_OK(stream->Finish());
}

}  // namespace
}  // namespace cops
