#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(TextConverterTest, Utf8PassesThroughWithIdentityMap) {
  const std::string input = "First paragraph, na\xC3\xAFve.\n\nSecond one.\n";
  auto doc = Convert(input, DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, input);
  EXPECT_EQ(doc->charset, "UTF-8");
  EXPECT_EQ(doc->format, DocumentFormat::kText);
  for (uint32_t i : {0u, 7u, 25u, 30u}) EXPECT_EQ(doc->OriginalOffset(i), i);
  EXPECT_EQ(doc->PageOf(3), 0u);
}

TEST(TextConverterTest, Utf8BomIsDroppedAndOffsetsShiftPastIt) {
  auto doc = Convert("\xEF\xBB\xBFhello world", DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "hello world");
  EXPECT_EQ(doc->OriginalOffset(6), 9u);  // 'w'
}

TEST(TextConverterTest, Utf16LittleEndianWithBom) {
  std::string input("\xFF\xFE", 2);
  for (char c : std::string("Gr\xFC\xDF" "e")) {  // "Gruesse" with u-umlaut and sharp s
    input.push_back(c);
    input.push_back('\0');
  }
  auto doc = Convert(input, DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Gr\xC3\xBC\xC3\x9F" "e");
  EXPECT_EQ(doc->charset, "UTF-16LE");
  EXPECT_EQ(doc->OriginalOffset(0), 2u);   // after the BOM
  EXPECT_EQ(doc->OriginalOffset(6), 10u);  // 'e': 5th code unit
}

TEST(TextConverterTest, Utf16BigEndianWithBom) {
  std::string input("\xFE\xFF\0H\0i\x20\xAC", 8);  // "Hi€"
  auto doc = Convert(input, DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Hi\xE2\x82\xAC");
}

TEST(TextConverterTest, Windows1252IsDetectedAndDecodedWithMapBackToBytes) {
  const std::string input =
      "The \x93" "caf\xE9\x94 on the corner was closed; we walked on to the mus\xE9" "e.";
  auto doc = Convert(input, DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->charset, "windows-1252");
  EXPECT_EQ(doc->text,
            "The \xE2\x80\x9C" "caf\xC3\xA9\xE2\x80\x9D on the corner was closed; we walked on "
            "to the mus\xC3\xA9" "e.");
  // Every word maps back to where it starts in the original bytes.
  const size_t text_pos = doc->text.find("corner");
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(text_pos)), input.find("corner"));
  const size_t museum = doc->text.find("mus");
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(museum)), input.find("mus"));
}

TEST(TextConverterTest, BinaryInputIsRejectedNamingTheFormat) {
  const std::string input("\x7F" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0", 20);
  auto doc = Convert(input, DocumentFormat::kText);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().substr(0, 5), "text:");
}

TEST(TextConverterTest, OversizedInputAndOutputAreResourceExhausted) {
  ConvertLimits limits;
  limits.max_input_bytes = 10;
  auto big = Convert("this is more than ten bytes", DocumentFormat::kText, limits);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);

  limits = ConvertLimits{};
  limits.max_output_bytes = 8;
  auto wide = Convert("caf\xE9 caf\xE9 caf\xE9", DocumentFormat::kText, limits);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TextConverterTest, EmptyInputGivesEmptyText) {
  auto doc = Convert("", DocumentFormat::kText);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "");
  EXPECT_EQ(doc->OriginalOffset(0), 0u);
}

}  // namespace
}  // namespace cops
