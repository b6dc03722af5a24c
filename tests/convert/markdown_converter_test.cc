#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

absl::StatusOr<ConvertedDocument> Markdown(std::string_view md) {
  return Convert(md, DocumentFormat::kMarkdown);
}

TEST(MarkdownConverterTest, RemovesMarkupKeepsText) {
  auto doc = Markdown(
      "# The *Title* #\n\nSome **bold**, _italic_ and `code` text with a\n"
      "[link](http://example.org) and ![an image](img.png).\n\n"
      "- first item\n- second item\n\n> quoted line\n\n1. numbered\n\n"
      "[ref]: http://example.org/ref\n---\nsnake_case stays, 2 * 3 too.\n");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kMarkdown);
  EXPECT_EQ(doc->text,
            "The Title\n\nSome bold, italic and code text with a link and an image.\n\n"
            "first item\n\nsecond item\n\nquoted line\n\nnumbered\n\n"
            "snake_case stays, 2 * 3 too.");
}

TEST(MarkdownConverterTest, FencedCodeTablesAndSetextHeadings) {
  auto doc = Markdown(
      "Heading\n=======\n\n```cpp\nint x = 1;\n```\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Heading\n\nint x = 1;\n\na b 1 2");
}

TEST(MarkdownConverterTest, OffsetsPointIntoTheSource) {
  const std::string md = "## Head\n\nA **strong** word.\n";
  auto doc = Markdown(md);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Head\n\nA strong word.");
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("strong"))),
            md.find("strong"));
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("word"))),
            md.find("word"));
}

TEST(MarkdownConverterTest, HostileInputStaysLinear) {
  std::string md;
  for (int i = 0; i < 20000; ++i) md += "[[**`_";
  auto doc = Markdown(md);
  EXPECT_OK(doc);
}

}  // namespace
}  // namespace cops
