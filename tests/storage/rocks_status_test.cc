#include "storage/rocks_status.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(FromRocksTest, MapsCodesAndKeepsContext) {
  EXPECT_OK(FromRocks(rocksdb::Status::OK(), "x"));
  absl::Status s = FromRocks(rocksdb::Status::Corruption("bad block"), "reading document 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("reading document 7"), absl::string_view::npos);
  EXPECT_NE(s.message().find("bad block"), absl::string_view::npos);
  EXPECT_EQ(FromRocks(rocksdb::Status::NotFound(), "").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FromRocks(rocksdb::Status::NoSpace(), "").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(FromRocks(rocksdb::Status::IOError(), "").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(FromRocks(rocksdb::Status::InvalidArgument(), "").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FromRocks(rocksdb::Status::NotSupported(), "").code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace cops
