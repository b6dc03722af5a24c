#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/testing/documents.h"

namespace cops {
namespace {

TEST(FormatDetectorTest, DetectsFormatsFromContent) {
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

TEST(FormatDetectorTest, RecognisesContainersAndMailVariants) {
  EXPECT_EQ(DetectFormat(testing::MakeDocx({"x"})), DocumentFormat::kDocx);
  EXPECT_EQ(DetectFormat(testing::MakeOdt({"x"})), DocumentFormat::kOdt);
  EXPECT_EQ(DetectFormat(testing::MakeZip({{"a.txt", "not a document"}})) ==
                DocumentFormat::kDocx,
            false);
  EXPECT_EQ(DetectFormat("Received: from mx.example.org\r\nFrom: a@example.org\r\n"
                         "Subject: x\r\n\r\nbody\r\n"),
            DocumentFormat::kEmail);
  EXPECT_EQ(DetectFormat("From alice@example.org Mon Jan  1 10:00:00 2024\nFrom: alice@example.org\n"
                         "Subject: mbox\n\nbody\n"),
            DocumentFormat::kEmail);
  // Prose that merely mentions a colon is not mail.
  EXPECT_EQ(DetectFormat("Note: this is prose.\nIt has two lines.\n"), DocumentFormat::kText);
  EXPECT_EQ(DetectFormat("  \n\n<html><body>indented</body></html>"), DocumentFormat::kHtml);
}

}  // namespace
}  // namespace cops
