#include <gtest/gtest.h>

#include "convert/converter.h"
#include "tests/convert/converted_text.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::HiddenRuns;
using testing::ImageWords;

absl::StatusOr<ConvertedDocument> Html(std::string_view html) {
  return Convert(html, DocumentFormat::kHtml);
}

TEST(HtmlConverterTest, KeepsVisibleTextDropsScriptsStylesAndComments) {
  auto doc = Html(
      "<!DOCTYPE html><html><head><title>Tab title</title><style>p{color:red}</style>"
      "<script>document.write('hidden')</script></head><body>"
      "<h1>Heading</h1><p>First <b>bold</b> and <i>italic</i> text.</p>"
      "<!-- secret comment --><div>Second&nbsp;block &amp; entities &eacute;&#233;&#x41;.</div>"
      "<ul><li>one</li><li>two</li></ul>line<br>break</body></html>");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kHtml);
  EXPECT_EQ(doc->text,
            "Heading\n\nFirst bold and italic text.\n\nSecond\xC2\xA0" "block & entities "
            "\xC3\xA9\xC3\xA9" "A.\n\none\n\ntwo\n\nline\nbreak");
}

TEST(HtmlConverterTest, CollapsesWhitespaceButKeepsPre) {
  auto doc = Html("<p>  many\n\n   spaces\there </p><pre>a  b\n  c</pre>");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "many spaces here\n\na  b\n  c");
}

TEST(HtmlConverterTest, OffsetsPointBackIntoTheMarkup) {
  const std::string html = "<html><body><p>Alpha beta</p><p>gamma delta</p></body></html>";
  auto doc = Html(html);
  ASSERT_OK(doc);
  const size_t gamma = doc->text.find("gamma");
  ASSERT_NE(gamma, std::string::npos);
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(gamma)), html.find("gamma"));
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("beta"))),
            html.find("beta"));
}

TEST(HtmlConverterTest, HonoursDeclaredCharsetAndMapsToOriginalBytes) {
  const std::string html =
      "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; "
      "charset=windows-1252\"></head><body><p>caf\xE9 \x93quoted\x94 end</p></body></html>";
  auto doc = Html(html);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "caf\xC3\xA9 \xE2\x80\x9Cquoted\xE2\x80\x9D end");
  EXPECT_EQ(doc->charset, "windows-1252");
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("end"))),
            html.find("end"));
}

TEST(HtmlConverterTest, TablesSeparateCells) {
  auto doc = Html("<table><tr><td>a1</td><td>b1</td></tr><tr><td>a2</td><td>b2</td></tr></table>");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "a1 b1\n\na2 b2");
}

TEST(HtmlConverterTest, DeeplyNestedMarkupIsHandled) {
  std::string html = "<html><body>";
  for (int i = 0; i < 50000; ++i) html += "<div><span>";
  html += "deep text";
  for (int i = 0; i < 50000; ++i) html += "</span></div>";
  html += "</body></html>";
  auto doc = Html(html);
  // Either the text, or a clear error: never a crash.
  if (doc.ok()) {
    EXPECT_NE(doc->text.find("deep text"), std::string::npos);
  } else {
    EXPECT_EQ(doc.status().message().substr(0, 5), "html:");
  }
}

TEST(HtmlConverterTest, TruncatedAndUnclosedMarkupStillYieldsText) {
  auto doc = Html("<html><body><p>Unclosed paragraph <b>bold <i>and ita");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Unclosed paragraph bold and ita");
}

TEST(HtmlConverterTest, DetectedFromContentWithAuto) {
  auto doc = Convert("<!doctype html><p>Hello <em>world</em></p>", DocumentFormat::kAuto);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kHtml);
  EXPECT_EQ(doc->text, "Hello world");
}

// The hidden runs of `doc` as text.
TEST(HtmlConverterTest, TextHiddenFromAReaderIsMarkedHidden) {
  auto doc = Html(
      "<p>Shown <span style=\"display: none\">gone</span> words<br>"
      "<span style='visibility:hidden'>ghost</span> more <b style=\"font-size:0px\">tiny</b> "
      "and <i style=\"FONT-SIZE: 1px\">small</i> "
      "<span style=\"color:#FFFFFF\">white</span> <span hidden>attr</span> end "
      "<span style=\"color:white;background:black\">readable</span> "
      "<span style=\"font-size:12px;color:#333\">visible</span></p>");
  ASSERT_OK(doc);
  // The text stays (it is what was sent); each hidden run is marked, the visible ones not
  // (runs apart by spaces only are one).
  EXPECT_NE(doc->text.find("gone"), std::string::npos);
  EXPECT_EQ(HiddenRuns(*doc),
            (std::vector<std::string>{"gone", "ghost", "tiny", "small white attr"}));
}

TEST(HtmlConverterTest, HiddenElementsNestAndEnd) {
  auto doc = Html("<div style=\"display:none\"><p>one <span>two</span> three</p></div>"
                  "<p>after <img src=x> all</p>");
  ASSERT_OK(doc);
  EXPECT_EQ(HiddenRuns(*doc), (std::vector<std::string>{"one two three"}));
}

// The words of `doc` that held images, with how many: "Payal:1".
TEST(HtmlConverterTest, ImageReplacingLettersInsideAWordIsFound) {
  auto doc = Html("<p>Log in to your Pay<img src=\"p.png\">al account</p>");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Log in to your Payal account");
  ASSERT_EQ(doc->image_in_word.size(), 1u);
  EXPECT_EQ(doc->image_in_word[0].text_start, 15u);
  EXPECT_EQ(doc->image_in_word[0].text_end, 20u);
  EXPECT_EQ(doc->image_in_word[0].images, 1u);

  // Two in one word count twice on one word; inline markup around them and non-ASCII
  // letters are still the word; an inline SVG is an image too.
  doc = Html(
      "<p>P<img src=a.png>y<b><IMG SRC=p.png></b>al and "
      "caf<svg><text>e</text></svg>\xC3\xA9 4<img src=2.png>2</p>");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Pyal and caf\xC3\xA9 42");
  EXPECT_EQ(ImageWords(*doc), (std::vector<std::string>{"Pyal:2", "caf\xC3\xA9:1", "42:1"}));
}

TEST(HtmlConverterTest, ImagesBesideWordsAreNotInsideThem) {
  // A space, a line break, a paragraph or punctuation on either side: an ordinary picture.
  for (const char* html :
       {"<p>A logo <img src=\"x.png\"> here</p>", "<p>two <img src=x.png>words</p>",
        "<p>two<img src=x.png> words</p>", "<p>line<img src=x.png><br>break</p>",
        "<p>end</p><img src=x.png><p>start</p>",
        "<p>quote<img src=x.png>\" and (<img src=x.png>paren)</p>",
        "<p><img src=x.png>first and last<img src=x.png></p>",
        "<p>one <span>  </span><img src=x.png><br> two</p>"}) {
    auto doc = Html(html);
    ASSERT_OK(doc);
    EXPECT_EQ(ImageWords(*doc), std::vector<std::string>{}) << html;
  }
  // Images a reader does not see, or that are no part of the text, are not counted.
  auto doc = Html(
      "<p>Pay<span style=\"display:none\"><img src=p.png></span>al "
      "Pay<img src=p.png hidden>al Pay<noscript><img src=p.png></noscript>al</p>");
  ASSERT_OK(doc);
  EXPECT_EQ(ImageWords(*doc), std::vector<std::string>{});
}

}  // namespace
}  // namespace cops
