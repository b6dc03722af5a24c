#include "convert/converter.h"

#include <gtest/gtest.h>

namespace cops {
namespace {

TEST(ConverterTest, FormatNamesRoundTrip) {
  for (int i = 0; i <= 8; ++i) {
    const auto f = static_cast<DocumentFormat>(i);
    auto parsed = ParseDocumentFormat(DocumentFormatName(f));
    ASSERT_TRUE(parsed.ok()) << DocumentFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(DocumentFormatName(DocumentFormat::kPdf), "pdf");
  EXPECT_EQ(*ParseDocumentFormat("PDF"), DocumentFormat::kPdf);
  EXPECT_EQ(*ParseDocumentFormat("md"), DocumentFormat::kMarkdown);
  auto bad = ParseDocumentFormat("wordperfect");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("wordperfect"), std::string_view::npos);
}

TEST(ConverterTest, OriginalOffsetAndPageFollowSegments) {
  ConvertedDocument doc;
  doc.text = "aaaa\n\nbbbb";
  EXPECT_EQ(doc.OriginalOffset(7), 7u);  // no map: identity
  EXPECT_EQ(doc.PageOf(7), 0u);
  doc.segments = {{0, 100, 1}, {6, 500, 2}};
  EXPECT_EQ(doc.OriginalOffset(0), 100u);
  EXPECT_EQ(doc.OriginalOffset(3), 103u);
  EXPECT_EQ(doc.OriginalOffset(6), 500u);
  EXPECT_EQ(doc.OriginalOffset(9), 503u);
  EXPECT_EQ(doc.PageOf(2), 1u);
  EXPECT_EQ(doc.PageOf(8), 2u);
  // Text longer than its source never maps into the next segment's bytes.
  doc.segments = {{0, 10, 0}, {6, 12, 0}};
  EXPECT_EQ(doc.OriginalOffset(4), 11u);
}

TEST(ConverterTest, DetectsFormatsFromContent) {
  EXPECT_EQ(DetectFormat("%PDF-1.4\n%..."), DocumentFormat::kPdf);
  EXPECT_EQ(DetectFormat("<!DOCTYPE html><html><body><p>x</p></body></html>"),
            DocumentFormat::kHtml);
  EXPECT_EQ(DetectFormat("From: a@example.org\nTo: b@example.org\nSubject: hi\n"
                         "Date: Mon, 1 Jan 2024 10:00:00 +0000\n\nBody text.\n"),
            DocumentFormat::kEmail);
  EXPECT_EQ(DetectFormat("\\documentclass{article}\n\\begin{document}\nHi\n\\end{document}\n"),
            DocumentFormat::kLatex);
  EXPECT_EQ(DetectFormat("# Title\n\nSome *text* with a [link](http://x).\n\n## More\n"),
            DocumentFormat::kMarkdown);
  EXPECT_EQ(DetectFormat("Just a few words of plain prose, nothing else."),
            DocumentFormat::kText);
  EXPECT_EQ(DetectFormat(""), DocumentFormat::kText);
}

TEST(ConverterTest, AutoConvertsPlainText) {
  auto doc = Convert("Plain words.", DocumentFormat::kAuto);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->format, DocumentFormat::kText);
  EXPECT_EQ(doc->text, "Plain words.");
}

TEST(ConverterTest, FormatOutsideTheEnumIsInvalid) {
  auto doc = Convert("x", static_cast<DocumentFormat>(42));
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cops
