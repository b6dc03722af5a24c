#include "storage/access_records.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops::access_records {
namespace {

TEST(AccessRecordsTest, RecordsRoundTrip) {
  PrincipalRecord p;
  p.name = "acm-press";
  p.role = 1;
  p.collections = {"acm", "acm-archive"};
  p.requests_per_second = 2.5;
  p.burst = 10;
  p.max_documents = uint64_t{1} << 40;
  p.max_bytes = 1 << 20;
  ASSERT_OK_AND_ASSIGN(const PrincipalRecord p2, DecodePrincipal(EncodePrincipal(p)));
  EXPECT_EQ(p2.name, p.name);
  EXPECT_EQ(p2.role, p.role);
  EXPECT_EQ(p2.collections, p.collections);
  EXPECT_EQ(p2.requests_per_second, p.requests_per_second);
  EXPECT_EQ(p2.burst, p.burst);
  EXPECT_EQ(p2.max_documents, p.max_documents);
  EXPECT_EQ(p2.max_bytes, p.max_bytes);

  ApiKeyRecord k;
  k.key_id = "0123456789abcdef";
  k.salt = std::string("\x00\x01\xff salt", 8);
  k.hash = std::string(32, '\x7f');
  k.revoked_unix_micros = -5;
  ASSERT_OK_AND_ASSIGN(const ApiKeyRecord k2, DecodeKey(EncodeKey(k)));
  EXPECT_EQ(k2.salt, k.salt);
  EXPECT_EQ(k2.hash, k.hash);
  EXPECT_EQ(k2.revoked_unix_micros, -5);
}

TEST(AccessRecordsTest, NotAnObjectIsDataLossNamingTheRecord) {
  const absl::Status not_object = DecodePrincipal("[1]").status();
  EXPECT_EQ(not_object.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(not_object.message(), "access store: malformed principal record");
  EXPECT_EQ(DecodeUsage("{\"documents\":").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeKey("{\"salt\":\"zz\"}").status().code(), absl::StatusCode::kDataLoss);
}

// A number outside its field's type (found by fuzz/access_records_fuzzer.cc: a float past
// uint32 was cast, which is undefined behaviour, and an integer past a field's width wrapped,
// so a damaged role 257 read as 1, an owner) decodes as the field's default.
TEST(AccessRecordsTest, NumbersOutsideTheFieldsRangeDecodeAsTheDefault) {
  ASSERT_OK_AND_ASSIGN(const PrincipalRecord p,
                       DecodePrincipal(R"({"name":"p","role":257,"burst":4294967297.0,)"
                                       R"("max_documents":-1,"max_bytes":1e30,"rps":1e30})"));
  EXPECT_EQ(p.role, 0);
  EXPECT_EQ(p.burst, 0u);
  EXPECT_EQ(p.max_documents, 0u);
  EXPECT_EQ(p.max_bytes, 0u);
  EXPECT_EQ(p.requests_per_second, 1e30);  // a double field takes any number

  ASSERT_OK_AND_ASSIGN(const PrincipalRecord in_range,
                       DecodePrincipal(R"({"role":3,"burst":7.0,"max_bytes":18446744073709551615})"));
  EXPECT_EQ(in_range.role, 3);
  EXPECT_EQ(in_range.burst, 7u);
  EXPECT_EQ(in_range.max_bytes, 18446744073709551615u);

  ASSERT_OK_AND_ASSIGN(const UsageRecord u,
                       DecodeUsage(R"({"documents":1.8446744073709552e19,"bytes":-0.5})"));
  EXPECT_EQ(u.documents, 0u);  // 2^64: one past uint64
  EXPECT_EQ(u.bytes, 0u);
}

}  // namespace
}  // namespace cops::access_records
