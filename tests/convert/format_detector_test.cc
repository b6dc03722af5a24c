#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"

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

TEST(FormatDetectorTest, CleanUtf8IsClassifiedWithoutLibmagicAsLibmagicWould) {
  // HTML fragments without a doctype: a tag libmagic looks for in the first 4 KiB.
  EXPECT_EQ(DetectFormat("\n  <head><title>Call for papers</title></head>\n<p>Dates</p>"),
            DocumentFormat::kHtml);
  EXPECT_EQ(DetectFormat("<p>Intro</p>\n<TABLE><tr><td>r\u00e9sum\u00e9</td></tr></TABLE>"),
            DocumentFormat::kHtml);
  // A tag only after the first 4 KiB, or prose with angle brackets, is not HTML.
  EXPECT_EQ(DetectFormat(std::string(5000, 'x') + " <table>"), DocumentFormat::kText);
  EXPECT_EQ(DetectFormat("If a < b and b > c then \u00e9t\u00e9 is warm."), DocumentFormat::kText);
  // Non-ASCII UTF-8 prose stays text; Windows-1252 prose (not UTF-8) too, through libmagic.
  EXPECT_EQ(DetectFormat("Caf\u00e9 cr\u00e8me \u201cquoted\u201d, na\u00efve r\u00e9sum\u00e9."),
            DocumentFormat::kText);
  EXPECT_EQ(DetectFormat("Caf\xe9 cr\xe8me \x93quoted\x94, plain prose."), DocumentFormat::kText);
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

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xFF);
  return s;
}

TEST(FormatDetectorTest, RandomBytesAreNotTextInAnyTextualFormat) {
  // Random bytes used to be accepted as Markdown whenever a stray "**" or "](" appeared.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::string bytes = RandomBytes(64 << 10, seed);
    std::vector<DocumentFormat> formats = {DocumentFormat::kAuto};
    if (seed <= 3) {  // declared formats are checked too
      formats.insert(formats.end(), {DocumentFormat::kText, DocumentFormat::kMarkdown,
                                     DocumentFormat::kLatex, DocumentFormat::kHtml});
    }
    for (DocumentFormat f : formats) {
      absl::StatusOr<ConvertedDocument> doc = ConvertInProcess(bytes, f);
      ASSERT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument)
          << "seed " << seed << " format " << DocumentFormatName(f);
      EXPECT_NE(doc.status().message().find("looks like binary data"), std::string::npos)
          << doc.status();
    }
  }
}

TEST(FormatDetectorTest, BinaryFilesAreNamedByWhatTheyLookLike) {
  // A gzip header followed by text-like bytes: few control bytes, but libmagic knows it.
  std::string gz("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  gz += std::string(4000, 'a');
  absl::Status s = CheckLooksLikeText(gz, DocumentFormat::kText);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("application/gzip"), std::string::npos) << s;
  // Formats with their own container checks are left to their converters.
  EXPECT_OK(CheckLooksLikeText(gz, DocumentFormat::kPdf));
}

TEST(FormatDetectorTest, TextInLegacyAndWideEncodingsIsStillText) {
  const std::string prose = "The harbour master kept a log of every ship that came in. ";
  std::string cp1252;
  for (int i = 0; i < 50; ++i) cp1252 += prose + "Caf\xe9 cr\xe8me \x93quoted\x94. ";
  EXPECT_OK(CheckLooksLikeText(cp1252, DocumentFormat::kText));
  std::string utf16le("\xff\xfe", 2);
  for (char c : prose) utf16le += std::string{c, '\0'};
  EXPECT_OK(CheckLooksLikeText(utf16le, DocumentFormat::kText));
  std::string utf16_no_bom;
  for (int i = 0; i < 20; ++i) {
    for (char c : prose) utf16_no_bom += std::string{c, '\0'};
  }
  EXPECT_OK(CheckLooksLikeText(utf16_no_bom, DocumentFormat::kText));
  absl::StatusOr<ConvertedDocument> wide = ConvertInProcess(utf16_no_bom, DocumentFormat::kAuto);
  ASSERT_OK(wide);
  EXPECT_EQ(wide->charset, "UTF-16LE");
  EXPECT_EQ(wide->text.substr(0, prose.size()), prose);
  // A long UTF-8 text whose first 64 KiB end inside a character.
  std::string long_utf8 = std::string((64 << 10) - 1, 'a') + "\xc3\xa9" + prose;
  EXPECT_OK(CheckLooksLikeText(long_utf8, DocumentFormat::kText));
  // ISO-2022-JP switches character sets with ESC sequences.
  std::string jis;
  for (int i = 0; i < 50; ++i) jis += "\x1b$B$3$s$K$A$O\x1b(B hello world\n";
  EXPECT_OK(CheckLooksLikeText(jis, DocumentFormat::kText));
  absl::StatusOr<ConvertedDocument> md =
      ConvertInProcess("# Title\n\nSome **bold** text and a [link](http://x).\n", DocumentFormat::kAuto);
  ASSERT_OK(md);
  EXPECT_EQ(md->format, DocumentFormat::kMarkdown);
}

}  // namespace
}  // namespace cops
