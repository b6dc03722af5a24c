#include "core/hash_key.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

std::string Bytes(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(i));
  return s;
}

HashKey ReferenceKey() { return HashKey::FromBytes(Bytes(16)).value(); }

TEST(KeyedHashTest, MatchesSipHashReferenceVectors) {
  // Vectors from the SipHash paper / reference implementation (key 00..0f, message 00..n-1).
  EXPECT_EQ(KeyedHash(ReferenceKey(), ""), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(KeyedHash(ReferenceKey(), Bytes(15)), 0xa129ca6149be45e5ULL);
}

TEST(KeyedHashTest, OtherKeyGivesOtherHash) {
  HashKey a = HashKey::FromHex("000102030405060708090a0b0c0d0e0f").value();
  HashKey b = HashKey::FromHex("000102030405060708090a0b0c0d0e1f").value();
  EXPECT_NE(KeyedHash(a, "the quick brown fox"), KeyedHash(b, "the quick brown fox"));
  EXPECT_EQ(KeyedHash(a, "the quick brown fox"), KeyedHash(a, "the quick brown fox"));
}

TEST(HashKeyTest, HexRoundTrip) {
  const std::string hex = "00112233445566778899aabbccddeeff";
  auto key = HashKey::FromHex(hex);
  ASSERT_OK(key);
  EXPECT_EQ(key->ToHex(), hex);
  EXPECT_EQ(HashKey::FromHex("00112233445566778899AABBCCDDEEFF")->ToHex(), hex);
  EXPECT_EQ(ReferenceKey().ToHex(), "000102030405060708090a0b0c0d0e0f");
}

TEST(HashKeyTest, RejectsMalformedKeys) {
  EXPECT_EQ(HashKey::FromBytes("short").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HashKey::FromHex("0011").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HashKey::FromHex("zz112233445566778899aabbccddeeff").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HashKeyTest, IdIsStableShortAndDiffersFromKey) {
  HashKey a = HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  HashKey b = HashKey::FromHex("00112233445566778899aabbccddeefe").value();
  EXPECT_EQ(a.Id().size(), 16u);
  EXPECT_EQ(a.Id(), a.Id());
  EXPECT_NE(a.Id(), b.Id());
  EXPECT_EQ(a.ToHex().find(a.Id()), std::string::npos);
}

TEST(Sha256Test, KnownDigest) {
  auto d = Sha256("abc");
  EXPECT_EQ(d[0], 0xba);
  EXPECT_EQ(d[1], 0x78);
  EXPECT_EQ(d[31], 0xad);
}

}  // namespace
}  // namespace cops
