// The cluster key's file format and the signatures of events and records.

#include "replication/cluster_signature.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

TEST(ClusterSignatureTest, VerifiesItsOwnAndRefusesUnsignedOtherKeysAndOtherContexts) {
  const std::string key(32, 'k');
  const std::string signature = ClusterSignature(key, "cops.registrations.0", "event");
  EXPECT_EQ(signature.size(), 64u);
  EXPECT_OK(VerifyClusterSignature(key, "cops.registrations.0", "event", signature));
  EXPECT_TRUE(absl::IsDataLoss(VerifyClusterSignature(key, "cops.registrations.0", "event", "")));
  EXPECT_TRUE(absl::IsDataLoss(
      VerifyClusterSignature(std::string(32, 'x'), "cops.registrations.0", "event", signature)));
  // Bound to its subject: not valid in another partition.
  EXPECT_TRUE(absl::IsDataLoss(
      VerifyClusterSignature(key, "cops.registrations.1", "event", signature)));
  EXPECT_TRUE(absl::IsDataLoss(
      VerifyClusterSignature(key, "cops.registrations.0", "event!", signature)));
}

TEST(ClusterSignatureTest, AKeyFileHoldsAtLeast32BytesOfHex) {
  testing::TempDir dir;
  const std::string good = dir.Join("good.key");
  std::ofstream(good) << std::string(64, 'a') << "\n";
  ASSERT_OK_AND_ASSIGN(const std::string key, ReadClusterKey(good));
  EXPECT_EQ(key, std::string(32, '\xaa'));
  const std::string short_key = dir.Join("short.key");
  std::ofstream(short_key) << std::string(62, 'a');
  EXPECT_TRUE(absl::IsInvalidArgument(ReadClusterKey(short_key).status()));
  const std::string not_hex = dir.Join("text.key");
  std::ofstream(not_hex) << std::string(63, 'a') << "z";
  EXPECT_TRUE(absl::IsInvalidArgument(ReadClusterKey(not_hex).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadClusterKey(dir.Join("missing")).status()));
}

}  // namespace
}  // namespace cops
