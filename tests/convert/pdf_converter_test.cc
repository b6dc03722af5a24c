#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/convert/fixtures.h"

namespace cops {
namespace {

using testing::MakePdf;

TEST(PdfConverterTest, TextPerPageInOrderWithPageMap) {
  auto doc = Convert(MakePdf({{"First page opening line.", "", "Another paragraph here."},
                              {"Second page text."}}),
                     DocumentFormat::kPdf);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->format, DocumentFormat::kPdf);
  EXPECT_EQ(doc->text,
            "First page opening line.\n\nAnother paragraph here.\n\nSecond page text.");
  EXPECT_EQ(doc->PageOf(0), 1u);
  EXPECT_EQ(doc->PageOf(static_cast<uint32_t>(doc->text.find("Another"))), 1u);
  EXPECT_EQ(doc->PageOf(static_cast<uint32_t>(doc->text.find("Second"))), 2u);
}

TEST(PdfConverterTest, JoinsLinesAndRejoinsHyphenatedWords) {
  auto doc = Convert(MakePdf({{"The committee found the sub-", "mission to be an unattri-",
                               "buted copy of an earlier paper."}}),
                     DocumentFormat::kPdf);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->text,
            "The committee found the submission to be an unattributed copy of an earlier "
            "paper.");
}

TEST(PdfConverterTest, Latin1TextIsDecoded) {
  auto doc = Convert(MakePdf({{"Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9."}}),
                     DocumentFormat::kPdf);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->text, "Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9.");
}

TEST(PdfConverterTest, RepeatedHeadersAndFootersDroppedOnRequest) {
  std::vector<testing::PdfPage> pages;
  for (int i = 1; i <= 4; ++i) {
    pages.push_back({"Journal of Examples, Vol. 7", "", "Body text of page " +
                     std::to_string(i) + " continues.", "", "Page " + std::to_string(i)});
  }
  const std::string pdf = MakePdf(pages);
  auto kept = Convert(pdf, DocumentFormat::kPdf);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_NE(kept->text.find("Journal of Examples"), std::string::npos);
  EXPECT_NE(kept->text.find("Page 3"), std::string::npos);

  ConvertOptions options;
  options.drop_headers_footers = true;
  auto dropped = Convert(pdf, DocumentFormat::kPdf, ConvertLimits{}, options);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->text,
            "Body text of page 1 continues.\n\nBody text of page 2 continues.\n\n"
            "Body text of page 3 continues.\n\nBody text of page 4 continues.");
  EXPECT_EQ(dropped->PageOf(static_cast<uint32_t>(dropped->text.find("page 3"))), 3u);
}

TEST(PdfConverterTest, EncryptedPdfIsInvalidArgument) {
  auto doc = Convert(MakePdf({{"secret text"}}, /*encrypt=*/true), DocumentFormat::kPdf);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("encrypted"), std::string_view::npos)
      << doc.status();
}

TEST(PdfConverterTest, GarbageDeclaredAsPdfIsInvalidArgument) {
  auto doc = Convert("GIF89a this is not a pdf at all", DocumentFormat::kPdf);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().substr(0, 4), "pdf:");
}

TEST(PdfConverterTest, TruncatedPdfFailsCleanlyOrKeepsWhatIsReadable) {
  const std::string pdf = MakePdf({{"Readable first page."}, {"Second page."}});
  for (size_t cut : {size_t{20}, pdf.size() / 3, pdf.size() - 40}) {
    auto doc = Convert(pdf.substr(0, cut), DocumentFormat::kPdf);
    if (!doc.ok()) {
      EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument) << doc.status();
      EXPECT_EQ(doc.status().message().substr(0, 4), "pdf:");
    }
  }
}

TEST(PdfConverterTest, DetectedByAuto) {
  auto doc = Convert(MakePdf({{"auto detected"}}), DocumentFormat::kAuto);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->format, DocumentFormat::kPdf);
  EXPECT_EQ(doc->text, "auto detected");
}

}  // namespace
}  // namespace cops
