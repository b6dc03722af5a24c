#include "engine/document_writes.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using testing_corpus::Prose;

class LocalWritesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IndexGenerationsOptions options;
    options.data_dir = dir_.Join("data");
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    writes_ = std::make_unique<LocalWrites>(generations_.get());
  }

  testing::TempDir dir_{"document_writes"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<LocalWrites> writes_;
};

TEST_F(LocalWritesTest, RegisterReachesTheLiveIndexAndNamesItsParams) {
  DocumentRecord meta;
  meta.owner = "alice";
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo r,
                       writes_->Register(Prose(1, 200), DocumentFormat::kText, meta));
  EXPECT_TRUE(r.outcome.created);
  EXPECT_EQ(r.params.key_id, generations_->Current()->params().key_id);
  ASSERT_OK_AND_ASSIGN(DocumentRecord stored, generations_->Current()->Get(r.outcome.id));
  EXPECT_EQ(stored.owner, "alice");
}

TEST_F(LocalWritesTest, BatchKeepsOrderAndRefusesBadInputsAlone) {
  DocumentRecord meta;
  const std::string a = Prose(2, 200), b = Prose(3, 200);
  std::vector<RegisterInput> inputs = {{a, DocumentFormat::kText, &meta},
                                       {"", DocumentFormat::kText, &meta},
                                       {b, DocumentFormat::kText, &meta}};
  std::vector<absl::StatusOr<RegisterResultInfo>> out;
  ASSERT_OK(writes_->RegisterBatch(inputs, &out));
  ASSERT_EQ(out.size(), 3u);
  ASSERT_OK(out[0]);
  EXPECT_EQ(out[1].status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK(out[2]);
  EXPECT_NE(out[0]->outcome.id, out[2]->outcome.id);
  EXPECT_EQ(generations_->Current()->Stats().documents, 2u);
}

TEST_F(LocalWritesTest, UnregisterRemovesAndAnUnknownIdIsNotFound) {
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo r,
                       writes_->Register(Prose(4, 200), DocumentFormat::kText, {}));
  ASSERT_OK_AND_ASSIGN(const uint64_t sequence, writes_->Unregister(r.outcome.id));
  EXPECT_EQ(sequence, 0u) << "no log, no log sequence";
  EXPECT_EQ(generations_->Current()->Get(r.outcome.id).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(writes_->Unregister(r.outcome.id).status().code(), absl::StatusCode::kNotFound);
}

// The default batch of an implementation without one (the log's): one Register per input,
// in order, an input without metadata refused on its own.
class CountingWrites : public DocumentWrites {
 public:
  absl::StatusOr<RegisterResultInfo> Register(std::string_view content, DocumentFormat,
                                              const DocumentRecord&) override {
    seen.emplace_back(content);
    RegisterResultInfo r;
    r.outcome.id = seen.size();
    return r;
  }
  absl::StatusOr<uint64_t> Unregister(DocId) override { return 0; }
  std::vector<std::string> seen;
};

TEST(DocumentWritesTest, DefaultBatchRegistersEachInOrder) {
  CountingWrites writes;
  DocumentRecord meta;
  std::vector<RegisterInput> inputs = {
      {"one", DocumentFormat::kText, &meta}, {"two", DocumentFormat::kText, nullptr},
      {"three", DocumentFormat::kText, &meta}};
  std::vector<absl::StatusOr<RegisterResultInfo>> out;
  ASSERT_OK(writes.RegisterBatch(inputs, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(writes.seen, (std::vector<std::string>{"one", "three"}));
  EXPECT_EQ(out[1].status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK(out[2]);
  EXPECT_EQ(out[2]->outcome.id, 2u);
}

}  // namespace
}  // namespace cops
