#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::MakeDocx;
using testing::MakeOdt;
using testing::MakeZip;

TEST(OfficeConverterTest, DocxBodyTextInOrderWithParagraphs) {
  auto doc = Convert(MakeDocx({"First paragraph of the report.", "Second one\twith a tab.",
                               "Caf\xC3\xA9 au lait."}),
                     DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kDocx);
  EXPECT_EQ(doc->text,
            "First paragraph of the report.\n\nSecond one\twith a tab.\n\nCaf\xC3\xA9 au lait.");
}

TEST(OfficeConverterTest, DocxSkipsDeletedRevisions) {
  const std::string xml =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:body><w:p><w:r><w:t>kept </w:t></w:r><w:del><w:r><w:delText>deleted</w:delText>"
      "</w:r></w:del><w:r><w:t>text</w:t></w:r></w:p></w:body></w:document>";
  auto doc = Convert(MakeZip({{"word/document.xml", xml}}), DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "kept text");
}

TEST(OfficeConverterTest, DocxFootnotesFollowTheBody) {
  const std::string body =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:body><w:p><w:r><w:t>Body claim.</w:t></w:r><w:r><w:footnoteReference w:id=\"1\"/>"
      "</w:r></w:p></w:body></w:document>";
  const std::string notes =
      "<w:footnotes xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:footnote w:type=\"separator\" w:id=\"0\"><w:p><w:r><w:separator/></w:r></w:p>"
      "</w:footnote><w:footnote w:id=\"1\"><w:p><w:r><w:t>Source of the claim.</w:t></w:r>"
      "</w:p></w:footnote></w:footnotes>";
  auto doc = Convert(MakeZip({{"word/document.xml", body}, {"word/footnotes.xml", notes}}),
                     DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Body claim.\n\nSource of the claim.");
}

TEST(OfficeConverterTest, OdtHeadingsParagraphsSpansAndSpaces) {
  auto doc = Convert(MakeOdt({"The Title", "Body text in a span.", "Another\tparagraph."}),
                     DocumentFormat::kOdt);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kOdt);
  EXPECT_EQ(doc->text, "The Title\n\nBody text in a span.\n\nAnother\tparagraph.");
}

TEST(OfficeConverterTest, AutoDetectsDocxAndOdt) {
  auto docx = Convert(MakeDocx({"detected docx"}), DocumentFormat::kAuto);
  ASSERT_OK(docx);
  EXPECT_EQ(docx->format, DocumentFormat::kDocx);
  auto odt = Convert(MakeOdt({"detected odt"}), DocumentFormat::kAuto);
  ASSERT_OK(odt);
  EXPECT_EQ(odt->format, DocumentFormat::kOdt);
}

TEST(OfficeConverterTest, TruncatedZipIsInvalidArgument) {
  const std::string docx = MakeDocx({"some text that will be cut off"});
  auto doc = Convert(docx.substr(0, docx.size() / 2), DocumentFormat::kDocx);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().substr(0, 5), "docx:");
}

TEST(OfficeConverterTest, GarbageAndWrongContainerAreInvalidArgument) {
  auto garbage = Convert("this is not a zip file at all", DocumentFormat::kDocx);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  auto other_zip = Convert(MakeZip({{"readme.txt", "hello"}}), DocumentFormat::kOdt);
  ASSERT_FALSE(other_zip.ok());
  EXPECT_EQ(other_zip.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other_zip.status().message().find("content.xml"), std::string_view::npos);
}

TEST(OfficeConverterTest, MalformedBodyXmlNamesThePart) {
  auto doc = Convert(MakeZip({{"word/document.xml", "<w:document><w:body><w:p>unclosed"}}),
                     DocumentFormat::kDocx);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("word/document.xml"), std::string_view::npos);
}

TEST(OfficeConverterTest, ZipBombHitsTheDecompressionLimit) {
  // 4 MB of one repeated character deflates to a few KB.
  const std::string xml =
      "<w:document xmlns:w=\"x\"><w:body><w:p><w:t>" + std::string(4 << 20, 'a') +
      "</w:t></w:p></w:body></w:document>";
  const std::string bomb = MakeZip({{"word/document.xml", xml}});
  ASSERT_LT(bomb.size(), 64u << 10);
  ConvertLimits limits;
  limits.max_uncompressed_bytes = 1 << 20;
  auto doc = Convert(bomb, DocumentFormat::kDocx, limits);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(doc.status().message().find("decompressed"), std::string_view::npos);
}

TEST(OfficeConverterTest, TooManyEntriesIsResourceExhausted) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (int i = 0; i < 30; ++i) entries.push_back({"f" + std::to_string(i), "x"});
  entries.push_back({"word/document.xml", "<w:document/>"});
  ConvertLimits limits;
  limits.max_zip_entries = 10;
  auto doc = Convert(MakeZip(entries), DocumentFormat::kDocx, limits);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(OfficeConverterTest, EncryptedOdtIsReportedAsEncrypted) {
  const std::string manifest =
      "<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\">"
      "<manifest:file-entry manifest:full-path=\"content.xml\"><manifest:encryption-data "
      "manifest:checksum-type=\"SHA1/1K\"/></manifest:file-entry></manifest:manifest>";
  auto doc = Convert(MakeZip({{"mimetype", "application/vnd.oasis.opendocument.text"},
                              {"META-INF/manifest.xml", manifest},
                              {"content.xml", "\x8f\x01\x99 encrypted bytes"}}),
                     DocumentFormat::kOdt);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("encrypted"), std::string_view::npos);
}

TEST(OfficeConverterTest, EncryptedDocxContainerIsReportedAsEncrypted) {
  // Password-protected Office files are OLE compound files, not zips.
  std::string ole("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8);
  ole += std::string(512, '\0');
  auto doc = Convert(ole, DocumentFormat::kDocx);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("encrypted"), std::string_view::npos);
}

TEST(OfficeConverterTest, DocxRunsHiddenFromAReaderAreMarkedHidden) {
  const std::string xml =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:body><w:p><w:r><w:t xml:space=\"preserve\">shown </w:t></w:r>"
      "<w:r><w:rPr><w:vanish/></w:rPr><w:t>vanished</w:t></w:r>"
      "<w:r><w:t xml:space=\"preserve\"> text </w:t></w:r>"
      "<w:r><w:rPr><w:color w:val=\"FFFFFF\"/></w:rPr><w:t>white</w:t></w:r>"
      "<w:r><w:t xml:space=\"preserve\"> and </w:t></w:r>"
      "<w:r><w:rPr><w:sz w:val=\"2\"/></w:rPr><w:t>tiny</w:t></w:r>"
      "<w:r><w:rPr><w:vanish w:val=\"0\"/><w:sz w:val=\"24\"/><w:color w:val=\"000000\"/>"
      "</w:rPr><w:t xml:space=\"preserve\"> normal</w:t></w:r></w:p></w:body></w:document>";
  auto doc = Convert(MakeZip({{"word/document.xml", xml}}), DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "shown vanished text white and tiny normal");
  std::vector<std::string> hidden;
  for (const HiddenText& h : doc->hidden) {
    hidden.push_back(doc->text.substr(h.text_start, h.text_end - h.text_start));
  }
  EXPECT_EQ(hidden, (std::vector<std::string>{"vanished", "white", "tiny"}));
}

// The words of `doc` that held images, with how many: "Payal:1".
std::vector<std::string> ImageWords(const ConvertedDocument& doc) {
  std::vector<std::string> out;
  for (const ImageInWord& w : doc.image_in_word) {
    out.push_back(doc.text.substr(w.text_start, w.text_end - w.text_start) + ":" +
                  std::to_string(w.images));
  }
  return out;
}

// A DOCX body of `paragraphs`, each of raw run XML.
std::string DocxOfRuns(const std::vector<std::string>& paragraphs) {
  std::string xml =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" "
      "xmlns:wp=\"http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing\" "
      "xmlns:mc=\"http://schemas.openxmlformats.org/markup-compatibility/2006\" "
      "xmlns:v=\"urn:schemas-microsoft-com:vml\"><w:body>";
  for (const std::string& p : paragraphs) xml += "<w:p>" + p + "</w:p>";
  return MakeZip({{"word/document.xml", xml + "</w:body></w:document>"}});
}

std::string TextRun(const std::string& text) {
  return "<w:r><w:t xml:space=\"preserve\">" + text + "</w:t></w:r>";
}

constexpr std::string_view kDrawingRun =
    "<w:r><w:drawing><wp:inline><wp:extent cx=\"91440\" cy=\"91440\"/><wp:docPr id=\"1\" "
    "name=\"p.png\"/></wp:inline></w:drawing></w:r>";

TEST(OfficeConverterTest, DocxPictureRunInsideAWordIsFound) {
  auto doc = Convert(DocxOfRuns({TextRun("Log in to your ") + TextRun("Pay") +
                                 std::string(kDrawingRun) + TextRun("al account")}),
                     DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Log in to your Payal account");
  ASSERT_EQ(doc->image_in_word.size(), 1u);
  EXPECT_EQ(doc->image_in_word[0].text_start, 15u);
  EXPECT_EQ(doc->image_in_word[0].text_end, 20u);
  EXPECT_EQ(doc->image_in_word[0].images, 1u);

  // VML pictures and embedded objects too; a DrawingML picture with its VML fallback for old
  // readers (mc:AlternateContent) is one picture, and the shape it nests is part of it.
  doc = Convert(
      DocxOfRuns({TextRun("sec") +
                  "<w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing><wp:inline/>"
                  "</w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:imagedata/>"
                  "</v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>" +
                  TextRun("ure and cop") + "<w:r><w:object><v:shape/></w:object></w:r>" +
                  TextRun("ied")}),
      DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "secure and copied");
  EXPECT_EQ(ImageWords(*doc), (std::vector<std::string>{"secure:1", "copied:1"}));
}

TEST(OfficeConverterTest, DocxPicturesBesideWordsAreNotInsideThem) {
  auto doc = Convert(
      DocxOfRuns(
          {TextRun("A figure follows."), std::string(kDrawingRun),
           TextRun("Figure ") + std::string(kDrawingRun) + TextRun(" shows") +
               std::string(kDrawingRun) + TextRun(": the logo") + std::string(kDrawingRun),
           TextRun("end") + std::string(kDrawingRun) + "<w:r><w:br/></w:r>" + TextRun("line"),
           // A floating picture stands beside the text, wherever its anchor run is.
           TextRun("Pay") +
               "<w:r><w:drawing><wp:anchor><wp:docPr id=\"2\" name=\"logo.png\"/>"
               "</wp:anchor></w:drawing></w:r>" +
               TextRun("pal")}),
      DocumentFormat::kDocx);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "A figure follows.\n\nFigure  shows: the logo\n\nend\nline\n\nPaypal");
  EXPECT_EQ(ImageWords(*doc), std::vector<std::string>{});
}

TEST(OfficeConverterTest, OdtImageFrameInsideAWordIsFound) {
  const std::string content =
      "<office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
      "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
      "xmlns:draw=\"urn:oasis:names:tc:opendocument:xmlns:drawing:1.0\" "
      "xmlns:xlink=\"http://www.w3.org/1999/xlink\"><office:body><office:text>"
      // A frame's second image is an alternative format of the first: one picture.
      "<text:p>Pay<draw:frame text:anchor-type=\"as-char\"><draw:image xlink:href=\"p.svg\"/>"
      "<draw:image xlink:href=\"p.png\"/></draw:frame>al account</text:p>"
      "<text:p>A logo <draw:frame text:anchor-type=\"as-char\"><draw:image xlink:href=\"x.png\"/>"
      "</draw:frame> here</text:p>"
      // A frame anchored to a character or paragraph floats beside the text.
      "<text:p>Pay<draw:frame text:anchor-type=\"char\"><draw:image xlink:href=\"l.png\"/>"
      "</draw:frame>pal</text:p>"
      "</office:text></office:body></office:document-content>";
  auto doc = Convert(MakeZip({{"content.xml", content}}), DocumentFormat::kOdt);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Payal account\n\nA logo  here\n\nPaypal");
  EXPECT_EQ(ImageWords(*doc), (std::vector<std::string>{"Payal:1"}));
}

}  // namespace
}  // namespace cops
