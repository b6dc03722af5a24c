#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/convert/converted_text.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::HiddenRuns;
using testing::ImageWords;
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

// The hidden runs of `doc`, as text.
// An ODT of `styles` (the common styles of styles.xml), `automatic` (content.xml's automatic
// styles) and `body` (raw XML of office:text).
std::string OdtOf(const std::string& styles, const std::string& automatic,
                  const std::string& body) {
  const std::string ns =
      "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
      "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\" "
      "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
      "xmlns:fo=\"urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0\"";
  return MakeZip({
      {"mimetype", "application/vnd.oasis.opendocument.text"},
      {"styles.xml", "<office:document-styles " + ns + "><office:styles>" + styles +
                         "</office:styles></office:document-styles>"},
      {"content.xml", "<office:document-content " + ns + "><office:automatic-styles>" + automatic +
                          "</office:automatic-styles><office:body><office:text>" + body +
                          "</office:text></office:body></office:document-content>"},
  });
}

// A <style:style> of `family` named `name` with text properties `props` (and `extra`
// attributes on the style element).
std::string OdtStyle(const std::string& family, const std::string& name, const std::string& props,
                     const std::string& extra = "") {
  return "<style:style style:name=\"" + name + "\" style:family=\"" + family + "\"" + extra +
         "><style:text-properties " + props + "/></style:style>";
}

TEST(OfficeConverterTest, OdtTextHiddenByItsStyleIsMarkedHidden) {
  const std::string styles =
      "<style:default-style style:family=\"paragraph\"><style:text-properties "
      "fo:font-size=\"12pt\"/></style:default-style>" +
      OdtStyle("text", "Ghost", "fo:color=\"#FFFFFF\"");
  const std::string automatic =
      OdtStyle("text", "T1", "fo:font-weight=\"bold\"", " style:parent-style-name=\"Ghost\"") +
      OdtStyle("text", "T2", "fo:font-size=\"1pt\"") +
      OdtStyle("text", "T3", "fo:font-size=\"5%\"") +  // of 12pt: 0.6pt
      OdtStyle("text", "T4", "text:display=\"none\"") +
      OdtStyle("text", "T5", "fo:color=\"#000000\"") +
      OdtStyle("paragraph", "P1", "fo:color=\"#ffffff\"");
  const std::string body =
      "<text:p>shown <text:span text:style-name=\"T1\">inherited</text:span> text "
      "<text:span text:style-name=\"T2\">tiny</text:span> and "
      "<text:span text:style-name=\"T3\">shrunk</text:span> "
      "<text:span text:style-name=\"T4\">vanished</text:span> end</text:p>"
      "<text:p text:style-name=\"P1\"><text:span text:style-name=\"T5\">black</text:span> "
      "white paragraph</text:p>"
      "<text:p>field <text:hidden-text text:condition=\"ooow:1\" text:string-value=\"secret\" "
      "text:is-hidden=\"true\">secret</text:hidden-text> end</text:p>"
      "<text:p>before <text:hidden-paragraph text:condition=\"ooow:1\" text:is-hidden=\"true\"/>"
      "gone <text:span text:style-name=\"T2\">paragraph</text:span></text:p>"
      "<text:p>between</text:p>"
      "<text:section text:name=\"S\" text:display=\"none\"><text:p>section text</text:p>"
      "</text:section><text:p>last</text:p>";
  auto doc = Convert(OdtOf(styles, automatic, body), DocumentFormat::kOdt);
  ASSERT_OK(doc);
  // The text stays (it is what was sent); each hidden run is marked.
  EXPECT_EQ(doc->text,
            "shown inherited text tiny and shrunk vanished end\n\nblack white paragraph\n\n"
            "field secret end\n\nbefore gone paragraph\n\nbetween\n\nsection text\n\nlast");
  EXPECT_EQ(HiddenRuns(*doc),
            (std::vector<std::string>{"inherited", "tiny", "shrunk vanished", "white paragraph",
                                      "secret", "before gone paragraph", "section text"}));
}

TEST(OfficeConverterTest, OdtColouredSizedAndShownTextIsNotHidden) {
  const std::string automatic =
      OdtStyle("text", "Red", "fo:color=\"#ff0000\"") +
      OdtStyle("text", "Small", "fo:font-size=\"8pt\"") +
      OdtStyle("text", "Half", "fo:font-size=\"50%\"") +
      OdtStyle("text", "Boxed", "fo:color=\"#ffffff\" fo:background-color=\"#000080\"") +
      OdtStyle("text", "Shown", "text:display=\"true\"") +
      OdtStyle("text", "White", "fo:color=\"#ffffff\"") +
      "<style:style style:name=\"Dark\" style:family=\"paragraph\"><style:paragraph-properties "
      "fo:background-color=\"#000000\"/></style:style>";
  const std::string body =
      "<text:p><text:span text:style-name=\"Red\">red</text:span> "
      "<text:span text:style-name=\"Small\">small</text:span> "
      "<text:span text:style-name=\"Half\">half</text:span> "
      "<text:span text:style-name=\"Boxed\">boxed</text:span> "
      "<text:span text:style-name=\"Shown\">shown</text:span> "
      "<text:span text:style-name=\"Missing\">unknown style</text:span> "
      "<text:hidden-text text:condition=\"ooow:0\" text:string-value=\"x\" "
      "text:is-hidden=\"false\">condition false</text:hidden-text></text:p>"
      "<text:p text:style-name=\"Dark\"><text:span text:style-name=\"White\">white on dark"
      "</text:span></text:p>";
  auto doc = Convert(OdtOf("", automatic, body), DocumentFormat::kOdt);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "red small half boxed shown unknown style condition false\n\nwhite on dark");
  EXPECT_EQ(HiddenRuns(*doc), std::vector<std::string>{});
}

TEST(OfficeConverterTest, OdtStylesAreReadWhateverPrefixesTheWriterChose) {
  // docutils' rst2odt, for one, writes ns0:, ns2:, ...: namespaces count, not prefixes.
  const std::string content =
      "<o:document-content xmlns:o=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
      "xmlns:s=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\" "
      "xmlns:t=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
      "xmlns:f=\"urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0\">"
      "<o:automatic-styles><s:style s:name=\"W\" s:family=\"text\"><s:text-properties "
      "f:color=\"#ffffff\"/></s:style></o:automatic-styles><o:body><o:text><t:p>shown "
      "<t:span t:style-name=\"W\">white</t:span></t:p></o:text></o:body></o:document-content>";
  auto doc = Convert(
      MakeZip({{"mimetype", "application/vnd.oasis.opendocument.text"}, {"content.xml", content}}),
      DocumentFormat::kOdt);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "shown white");
  EXPECT_EQ(HiddenRuns(*doc), std::vector<std::string>{"white"});
}

// The words of `doc` that held images, with how many: "Payal:1".
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
