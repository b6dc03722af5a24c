#include "engine/receipt_signer.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

ReceiptFields Fields(uint64_t doc_id) {
  ReceiptFields f;
  f.doc_id = doc_id;
  f.text_sha256 = std::string(64, '0');
  f.owner = "alice";
  return f;
}

// The public keys a third party would be given: every key the signer lists.
std::vector<VerifyingKey> PublicKeys(const ReceiptSigner& signer) {
  std::string listing;
  for (const SigningKeyInfo& k : signer.Keys()) listing += k.public_pem;
  absl::StatusOr<std::vector<VerifyingKey>> keys = ParseVerifyingKeys(listing);
  EXPECT_OK(keys);
  return keys.ok() ? *keys : std::vector<VerifyingKey>{};
}

class ReceiptSignerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_);
    fs::create_directories(root_.path() / "trash");
  }

  testing::TempDir root_{"receipt_signer"};
  const fs::path dir_ = root_.path() / "data";
};

TEST_F(ReceiptSignerTest, TheFirstStartCreatesAPrivateKeyThatSurvivesARestart) {
  ASSERT_OK_AND_ASSIGN(auto signer, ReceiptSigner::Open(DataDir(dir_.string())));
  ASSERT_EQ(signer->Keys().size(), 1u);
  const SigningKeyInfo key = signer->Keys()[0];
  EXPECT_TRUE(key.live);
  EXPECT_EQ(key.number, 1u);
  struct stat st;
  ASSERT_EQ(stat((dir_ / "signing_key.1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "signing_key.1.pub"), key.public_pem);
  ASSERT_OK_AND_ASSIGN(SignedReceipt receipt, signer->Sign(Fields(7)));
  EXPECT_EQ(receipt.key_id, key.key_id);

  signer.reset();
  ASSERT_OK_AND_ASSIGN(signer, ReceiptSigner::Open(DataDir(dir_.string())));
  ASSERT_EQ(signer->Keys().size(), 1u);
  EXPECT_EQ(signer->Keys()[0].key_id, key.key_id) << "the same key after the restart";
  ASSERT_OK_AND_ASSIGN(ReceiptFields fields, VerifyReceipt(receipt, PublicKeys(*signer)));
  EXPECT_EQ(fields.doc_id, 7u);
  ASSERT_OK_AND_ASSIGN(SignedReceipt again, signer->Sign(Fields(8)));
  EXPECT_EQ(again.key_id, key.key_id);
}

TEST_F(ReceiptSignerTest, TheIssueTimeComesFromTheClock) {
  int64_t now = 1738368000000000;
  ASSERT_OK_AND_ASSIGN(auto signer,
                       ReceiptSigner::Open(DataDir(dir_.string()), [&now] { return now; }));
  ASSERT_OK_AND_ASSIGN(SignedReceipt receipt, signer->Sign(Fields(1)));
  EXPECT_THAT(receipt.payload, ::testing::HasSubstr(R"("issued_at":"2025-02-01T00:00:00.000000Z")"));
  now += 1500000;
  ASSERT_OK_AND_ASSIGN(receipt, signer->Sign(Fields(1)));
  EXPECT_THAT(receipt.payload, ::testing::HasSubstr(R"("issued_at":"2025-02-01T00:00:01.500000Z")"));
}

TEST_F(ReceiptSignerTest, RotationDestroysTheOldPrivateKeyAndKeepsOldReceiptsVerifiable) {
  ASSERT_OK_AND_ASSIGN(auto signer, ReceiptSigner::Open(DataDir(dir_.string())));
  ASSERT_OK_AND_ASSIGN(SignedReceipt before, signer->Sign(Fields(1)));
  ASSERT_OK_AND_ASSIGN(SigningKeyInfo rotated, signer->Rotate());
  EXPECT_EQ(rotated.number, 2u);
  EXPECT_TRUE(rotated.live);
  EXPECT_NE(rotated.key_id, before.key_id);
  ASSERT_OK_AND_ASSIGN(SignedReceipt after, signer->Sign(Fields(2)));
  EXPECT_EQ(after.key_id, rotated.key_id);
  EXPECT_FALSE(fs::exists(dir_ / "signing_key.1"));
  EXPECT_TRUE(fs::exists(dir_ / "signing_key.1.pub"));

  for (int restart = 0; restart < 2; ++restart) {
    SCOPED_TRACE(restart == 0 ? "running" : "after a restart");
    const std::vector<SigningKeyInfo> keys = signer->Keys();
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0].key_id, before.key_id);
    EXPECT_FALSE(keys[0].live);
    EXPECT_EQ(keys[1].key_id, rotated.key_id);
    EXPECT_TRUE(keys[1].live);
    EXPECT_OK(VerifyReceipt(before, PublicKeys(*signer)));
    EXPECT_OK(VerifyReceipt(after, PublicKeys(*signer)));
    signer.reset();
    ASSERT_OK_AND_ASSIGN(signer, ReceiptSigner::Open(DataDir(dir_.string())));
  }
  ASSERT_OK_AND_ASSIGN(SignedReceipt restarted, signer->Sign(Fields(3)));
  EXPECT_EQ(restarted.key_id, rotated.key_id);
}

// A rotation crashed at each of its file operations, then a power loss: the next start has
// one live private key, and every receipt signed before the crash still verifies.
TEST_F(ReceiptSignerTest, ACrashAtAnyStepOfARotationKeepsEveryKeyThatSigned) {
  int landed_on_old = 0, landed_on_new = 0;
  for (int crash_at = 1;; ++crash_at) {
    SCOPED_TRACE("crash at operation " + std::to_string(crash_at));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    FaultFileSystem faulty((root_.path() / "trash").string());
    ASSERT_OK_AND_ASSIGN(auto signer, ReceiptSigner::Open(DataDir(dir_.string(), &faulty)));
    ASSERT_OK(faulty.SyncDir(dir_.string()));
    std::vector<SignedReceipt> signed_receipts = {signer->Sign(Fields(1)).value()};
    const std::string old_id = signed_receipts[0].key_id;

    faulty.CrashAtOperation(faulty.operations() + crash_at);
    absl::StatusOr<SigningKeyInfo> rotated = signer->Rotate();
    if (rotated.ok()) signed_receipts.push_back(signer->Sign(Fields(2)).value());
    const bool finished = !faulty.crashed();
    signer.reset();
    ASSERT_OK(faulty.DropUnsyncedChanges());

    ASSERT_OK_AND_ASSIGN(signer, ReceiptSigner::Open(DataDir(dir_.string(), &faulty)));
    for (const SignedReceipt& r : signed_receipts) EXPECT_OK(VerifyReceipt(r, PublicKeys(*signer)));
    const DataDir::SigningKeyFiles files = DataDir(dir_.string()).ListSigningKeys().value();
    EXPECT_EQ(files.private_keys.size(), 1u);
    const std::string live = signer->Sign(Fields(3)).value().key_id;
    ++(live == old_id ? landed_on_old : landed_on_new);
    if (rotated.ok()) {
      EXPECT_EQ(live, rotated->key_id);
    }
    if (finished) {
      EXPECT_NE(live, old_id);
      EXPECT_GT(crash_at, 5);
      break;
    }
  }
  // A new private key that reached the disk whole becomes live at the next start.
  EXPECT_GT(landed_on_old, 0);
  EXPECT_GT(landed_on_new, 0);
}

TEST_F(ReceiptSignerTest, AnIncompleteNewKeyIsDroppedButACorruptLiveKeyIsDataLoss) {
  ASSERT_OK_AND_ASSIGN(auto signer, ReceiptSigner::Open(DataDir(dir_.string())));
  const std::string id = signer->Keys()[0].key_id;
  signer.reset();
  // A crash while key 2 was written: a partial file and no .pub.
  std::ofstream(dir_ / "signing_key.2") << "-----BEGIN PRIVATE KEY-----\nMC4CAQ";
  ASSERT_OK_AND_ASSIGN(signer, ReceiptSigner::Open(DataDir(dir_.string())));
  EXPECT_EQ(signer->Keys().back().key_id, id);
  EXPECT_FALSE(fs::exists(dir_ / "signing_key.2"));
  ASSERT_OK_AND_ASSIGN(SigningKeyInfo rotated, signer->Rotate());
  EXPECT_EQ(rotated.number, 3u) << "numbers are not reused";
  signer.reset();

  std::ofstream(dir_ / "signing_key.3", std::ios::trunc) << "garbage";
  absl::StatusOr<std::unique_ptr<ReceiptSigner>> corrupt =
      ReceiptSigner::Open(DataDir(dir_.string()));
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.status().message(), ::testing::HasSubstr("signing_key.3"));
}

}  // namespace
}  // namespace cops
