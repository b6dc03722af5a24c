#include <gtest/gtest.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "convert/converter.h"
#include "tests/convert/converted_text.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::HiddenRuns;
using testing::MakePdf;
using testing::PdfOperators;

// Converts `pdf` the way a colour test needs: in the sandboxed worker where the kernel has
// Landlock, otherwise in this process. Without Landlock the worker may open no file, so it
// loads no font, renders no text and judges no colour (only size).
absl::StatusOr<ConvertedDocument> ConvertRendering(const std::string& pdf) {
  ConvertLimits limits;
  limits.in_process =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1;
  return Convert(pdf, DocumentFormat::kPdf, limits);
}

// The text of each hidden range.
TEST(PdfConverterTest, TextPerPageInOrderWithPageMap) {
  auto doc = Convert(MakePdf({{"First page opening line.", "", "Another paragraph here."},
                              {"Second page text."}}),
                     DocumentFormat::kPdf);
  ASSERT_OK(doc);
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
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text,
            "The committee found the submission to be an unattributed copy of an earlier "
            "paper.");
}

TEST(PdfConverterTest, LigatureGlyphsBecomeLetters) {
  // A font whose ToUnicode map sends byte 0xB0 to U+FB01 LATIN SMALL LIGATURE FI, as
  // typesetting systems emit.
  const std::string content = "BT /F1 12 Tf 72 700 Td (\\260nal of\\260ce) Tj ET\n";
  const std::string cmap =
      "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /L def\n"
      "1 begincodespacerange <00> <FF> endcodespacerange\n"
      "1 beginbfrange <20> <7E> <0020> endbfrange\n1 beginbfchar <B0> <FB01> endbfchar\n"
      "endcmap CMapName currentdict /CMap defineresource pop end end\n";
  std::string pdf = "%PDF-1.4\n";
  std::vector<size_t> offsets;
  const std::vector<std::string> objects = {
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
      "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /Type /Encoding "
      "/BaseEncoding /WinAnsiEncoding /Differences [176 /fi] >> /ToUnicode 6 0 R >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R "
      ">> >> /Contents 5 0 R >>",
      "<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "endstream",
      "<< /Length " + std::to_string(cmap.size()) + " >>\nstream\n" + cmap + "endstream"};
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
  }
  const size_t xref = pdf.size();
  pdf += "xref\n0 7\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%010zu 00000 n \n", off);
    pdf += buf;
  }
  pdf += "trailer\n<< /Size 7 /Root 1 0 R >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
  auto doc = Convert(pdf, DocumentFormat::kPdf);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "final office");
}

TEST(PdfConverterTest, Latin1TextIsDecoded) {
  auto doc = Convert(MakePdf({{"Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9."}}),
                     DocumentFormat::kPdf);
  ASSERT_OK(doc);
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
  ASSERT_OK(kept);
  EXPECT_NE(kept->text.find("Journal of Examples"), std::string::npos);
  EXPECT_NE(kept->text.find("Page 3"), std::string::npos);

  ConvertOptions options;
  options.drop_headers_footers = true;
  auto dropped = Convert(pdf, DocumentFormat::kPdf, ConvertLimits{}, options);
  ASSERT_OK(dropped);
  EXPECT_EQ(dropped->text,
            "Body text of page 1 continues.\n\nBody text of page 2 continues.\n\n"
            "Body text of page 3 continues.\n\nBody text of page 4 continues.");
  EXPECT_EQ(dropped->PageOf(static_cast<uint32_t>(dropped->text.find("page 3"))), 3u);
}

TEST(PdfConverterTest, WhiteTextIsHiddenAndStaysInTheText) {
  auto doc = ConvertRendering(
      MakePdf({{"Visible opening words here.", PdfOperators("1 1 1 rg"), "white secret words",
                PdfOperators("0 0 0 rg"), "Visible closing words."}}));
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Visible opening words here. white secret words Visible closing words.");
  EXPECT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"white secret words"}));
}

TEST(PdfConverterTest, InvisibleRenderModeIsHidden) {
  auto doc = ConvertRendering(
      MakePdf({{"Visible opening words here.", PdfOperators("3 Tr"), "render mode three",
                PdfOperators("0 Tr"), "Visible closing words."}}));
  ASSERT_OK(doc);
  EXPECT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"render mode three"}));
}

TEST(PdfConverterTest, OnePointTextIsHidden) {
  auto doc =
      Convert(MakePdf({{"Visible opening words here.", PdfOperators("/F1 1 Tf"), "one point words",
                        PdfOperators("/F1 11 Tf"), "Visible closing words."}}),
              DocumentFormat::kPdf);
  ASSERT_OK(doc);
  EXPECT_NE(doc->text.find("one point words"), std::string::npos);
  EXPECT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"one point words"}));
}

TEST(PdfConverterTest, TextPaintedOverIsHidden) {
  // A white rectangle drawn after the first line covers it (the PDF's y axis points up).
  auto doc =
      ConvertRendering(MakePdf({{"covered words first", "", "", "", "", "", "Visible words below.",
                                 PdfOperators("ET 1 1 1 rg 0 740 612 52 re f BT")}}));
  ASSERT_OK(doc);
  EXPECT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"covered words first"}));
}

TEST(PdfConverterTest, VisibleTextIsNotHidden) {
  // Black, dark blue and light grey text, 6 pt text, thin glyphs, a rejoined hyphenation,
  // on two pages.
  auto doc = ConvertRendering(MakePdf(
      {{"Plain black text of a report, with i l , . ! | alone.", "The sub-", "mission was late.",
        PdfOperators("0 0 0.4 rg"), "Dark blue visible words.", PdfOperators("0.9 0.9 0.9 rg"),
        "Light grey words.", PdfOperators("0 g /F1 6 Tf"), "Six point words i l."},
       {"Second page text."}}));
  ASSERT_OK(doc);
  EXPECT_NE(doc->text.find("submission"), std::string::npos);
  EXPECT_TRUE(doc->hidden.empty()) << ::testing::PrintToString(HiddenRuns(*doc));
}

TEST(PdfConverterTest, InvisibleTextOverAScanIsNotHidden) {
  // A scanned page and its OCR layer: invisible text (as OCR tools write it) over an image
  // with detail under every word, as the scan's own letters are.
  std::string hex;
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 120; ++x) hex += (x + y) % 2 == 0 ? "ff" : "00";
  }
  auto doc = ConvertRendering(MakePdf(
      {{PdfOperators("ET q 300 0 0 40 60 730 cm BI /W 120 /H 16 /CS /G /BPC 8 /F /AHx ID " +
                     hex + "> EI Q BT /F1 11 Tf 14 TL 72 760 Td 3 Tr"),
        "scanned words read by OCR", "second line of the scan"}}));
  ASSERT_OK(doc);
  EXPECT_NE(doc->text.find("scanned words read by OCR"), std::string::npos) << doc->text;
  EXPECT_TRUE(doc->hidden.empty()) << ::testing::PrintToString(HiddenRuns(*doc));
}

TEST(PdfConverterTest, HiddenWordsAreFoundWhereTheyAreInColumns) {
  // Two columns: poppler's text puts their lines side by side, its word list one column
  // after the other. The hidden "two beta" of the right column also appears, visible, in
  // the left one.
  auto doc = ConvertRendering(
      MakePdf({{"Left one alpha", "left two beta", PdfOperators("ET BT /F1 11 Tf 14 TL 320 760 Td"),
                "Right one delta", PdfOperators("(gamma ) Tj 1 1 1 rg (two beta) Tj 0 g T*"),
                "right three"}}));
  ASSERT_OK(doc);
  ASSERT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"two beta"}));
  EXPECT_EQ(doc->hidden[0].text_start, doc->text.find("gamma two beta") + 6) << doc->text;
}

TEST(PdfConverterTest, HiddenTextOnALaterPageIsMarkedThere) {
  auto doc = ConvertRendering(MakePdf(
      {{"First page text."}, {"Second page text.", PdfOperators("1 1 1 rg"), "page two secret"}}));
  ASSERT_OK(doc);
  ASSERT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"page two secret"}));
  EXPECT_EQ(doc->PageOf(doc->hidden[0].text_start), 2u);
}

TEST(PdfConverterTest, HiddenTextIsNotLookedForOnRequest) {
  const std::string pdf = MakePdf({{"Visible words.", PdfOperators("/F1 1 Tf"), "tiny words",
                                    PdfOperators("/F1 11 Tf 1 1 1 rg"), "white words"}});
  ConvertOptions options;
  options.find_hidden_text = false;
  auto doc = Convert(pdf, DocumentFormat::kPdf, ConvertLimits{}, options);
  ASSERT_OK(doc);
  EXPECT_NE(doc->text.find("tiny words"), std::string::npos);
  EXPECT_NE(doc->text.find("white words"), std::string::npos);
  EXPECT_TRUE(doc->hidden.empty());
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
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kPdf);
  EXPECT_EQ(doc->text, "auto detected");
}

}  // namespace
}  // namespace cops
