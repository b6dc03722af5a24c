#include "convert/charset.h"
#include "tests/testing/status_matchers.h"

#include <gtest/gtest.h>

namespace cops {
namespace {

TEST(CharsetTest, RecognisesUtf8AndRejectsMalformedSequences) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("caf\xE9"));             // Latin-1 byte
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));            // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));        // surrogate
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));            // truncated
}

TEST(CharsetTest, FindsAMalformedByteWhereverItSitsInTheAsciiAroundIt) {
  // IsValidUtf8 skips ASCII eight bytes at a time: a non-ASCII byte at any offset of those
  // words, or in the tail after the last whole word, must still be decoded.
  for (size_t at = 0; at < 27; ++at) {
    std::string text(27, 'x');
    text[at] = '\xE9';  // Latin-1
    EXPECT_FALSE(IsValidUtf8(text)) << at;
    if (at + 2 <= text.size()) {
      text.replace(at, 2, "\xC3\xA9");  // the same letter in UTF-8
      EXPECT_TRUE(IsValidUtf8(text)) << at;
    }
  }
}

TEST(CharsetTest, DetectsByBomThenValidityThenStatistics) {
  EXPECT_EQ(DetectCharset("\xEF\xBB\xBFhello"), "UTF-8");
  EXPECT_EQ(DetectCharset(std::string("\xFF\xFEh\0i\0", 6)), "UTF-16LE");
  EXPECT_EQ(DetectCharset(std::string("\xFE\xFF\0h\0i", 6)), "UTF-16BE");
  EXPECT_EQ(DetectCharset("na\xC3\xAFve"), "UTF-8");
  // Latin-1 / Windows-1252 prose: smart quotes 0x93/0x94 and accented letters.
  EXPECT_EQ(DetectCharset("Le \x93" "caf\xE9\x94 est ferm\xE9 le dimanche, d\xE9j\xE0 vu."),
            "windows-1252");
}

TEST(CharsetTest, DecodesWindows1252WithOffsetsIntoTheOriginal) {
  const std::string input = "caf\xE9 \x93ok\x94";
  TextBuilder out(1 << 20);
  auto used = DecodeToUtf8(input, "windows-1252", 100, &out);
  ASSERT_OK(used);
  EXPECT_EQ(out.text(), "caf\xC3\xA9 \xE2\x80\x9Cok\xE2\x80\x9D");
  ConvertedDocument doc;
  out.Finish(&doc);
  // "ok" starts after 'caf', e-acute (2 bytes), space, left quote (3 bytes) = byte 9 of the
  // text and byte 6 of the original (+ base 100).
  EXPECT_EQ(doc.OriginalOffset(9), 106u);
  EXPECT_EQ(doc.OriginalOffset(0), 100u);
  EXPECT_EQ(doc.OriginalOffset(5), 104u);  // the space after e-acute
}

TEST(CharsetTest, UnknownCharsetNameIsAnError) {
  TextBuilder out(1 << 20);
  auto used = DecodeToUtf8("abc", "no-such-charset-xyz", 0, &out);
  ASSERT_FALSE(used.ok());
  EXPECT_EQ(used.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(used.status().message().find("no-such-charset-xyz"), std::string_view::npos);
  EXPECT_EQ(ToUtf8("caf\xE9", "no-such-charset-xyz"), "caf\xC3\xA9");  // falls back
}

}  // namespace
}  // namespace cops
