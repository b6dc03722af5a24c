#include "client/receipt_commands.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/hash_key.h"
#include "core/receipt.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Verdict {
  int exit_code;
  std::string out;
  std::string err;
};

// A receipt for `document` signed by a fresh key, saved as the client saves one, and the
// key's public PEM in keys.pem: what an owner hands a third party.
class ReceiptCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(SigningKey key, SigningKey::Generate());
    Write("document.txt", document_);
    Write("keys.pem", "# key_id " + key.verifying_key().id() + " live\n" +
                          key.verifying_key().ToPem());
    ReceiptFields fields;
    fields.doc_id = 42;
    fields.content_sha256 = Sha256Hex(document_);
    fields.text_sha256 = std::string(64, 'c');
    fields.owner = "alice";
    ASSERT_OK_AND_ASSIGN(SignedReceipt receipt, SignReceipt(key, fields));
    v1::RegisterDocumentReply reply;
    reply.set_doc_id(42);
    reply.mutable_receipt()->set_payload(receipt.payload);
    reply.mutable_receipt()->set_signature(receipt.signature);
    reply.mutable_receipt()->set_key_id(receipt.key_id);
    ASSERT_OK_AND_ASSIGN(receipt_path_, SaveReceipt(dir_.Join("receipts"), reply));
  }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = dir_.Join(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    return path;
  }

  Verdict Verify(const std::string& receipt, const std::string& document = "",
                 bool json = false) {
    VerifyReceiptArgs args{receipt, dir_.Join("keys.pem"), document, json};
    std::ostringstream out, err;
    const int code = RunVerifyReceipt(args, out, err);
    return {code, out.str(), err.str()};
  }

  testing::TempDir dir_{"receipt_cmds"};
  const std::string document_ = "The minutes of the meeting, as registered.\n";
  std::string receipt_path_;
};

TEST_F(ReceiptCommandsTest, ASavedReceiptIsNamedByItsDocumentAndVerifies) {
  EXPECT_EQ(receipt_path_, dir_.Join("receipts/42.receipt.json"));
  const Verdict v = Verify(receipt_path_, dir_.Join("document.txt"));
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr("VALID: signed by key"));
  EXPECT_THAT(v.out, HasSubstr("document.txt is the registered document"));
  EXPECT_THAT(v.out, HasSubstr("  doc_id: 42\n"));
  EXPECT_THAT(v.out, HasSubstr("  owner: alice\n"));

  const Verdict j = Verify(receipt_path_, "", /*json=*/true);
  EXPECT_EQ(j.exit_code, 0);
  const nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["valid"], true);
  EXPECT_EQ(parsed["receipt"]["doc_id"], 42);
  EXPECT_TRUE(parsed["document"].is_null());
}

TEST_F(ReceiptCommandsTest, ATamperedOrTruncatedReceiptOrAnotherDocumentIsInvalid) {
  const std::string saved = testing::ReadFileOrEmpty(receipt_path_);
  std::string tampered = saved;
  const std::string owner = R"(\"owner\":\"alice\")";
  const size_t at = tampered.find(owner);
  ASSERT_NE(at, std::string::npos) << saved;
  tampered.replace(at, owner.size(), R"(\"owner\":\"mallet\")");
  Verdict v = Verify(Write("tampered.json", tampered));
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("INVALID: the signature does not verify"));

  v = Verify(Write("truncated.json", saved.substr(0, saved.size() / 2)));
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("INVALID: the receipt file is not a JSON object"));

  v = Verify(receipt_path_, Write("other.txt", document_ + "and a line added later\n"));
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr("other.txt is not the registered document"));

  // A key list without the receipt's key.
  ASSERT_OK_AND_ASSIGN(SigningKey stranger, SigningKey::Generate());
  Write("keys.pem", stranger.verifying_key().ToPem());
  v = Verify(receipt_path_, "", /*json=*/true);
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_THAT(v.out, HasSubstr(R"("valid":false,"reason":"unknown signing key id)"));
}

TEST_F(ReceiptCommandsTest, UnreadableFilesAreErrors) {
  Verdict v = Verify(dir_.Join("missing.json"));
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_THAT(v.err, HasSubstr("cannot read"));
  v = Verify(receipt_path_, dir_.Join("missing.txt"));
  EXPECT_EQ(v.exit_code, 2);
  Write("keys.pem", "not a key\n");
  v = Verify(receipt_path_);
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_THAT(v.err, HasSubstr("keys.pem"));
  EXPECT_EQ(v.out, "");
}

TEST_F(ReceiptCommandsTest, AReplyWithoutAReceiptIsNotSaved) {
  v1::RegisterDocumentReply reply;
  reply.set_doc_id(7);
  EXPECT_EQ(SaveReceipt(dir_.Join("receipts"), reply).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(dir_.Join("receipts/7.receipt.json")));
}

}  // namespace
}  // namespace cops
