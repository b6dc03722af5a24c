#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convert/converter.h"
#include "tests/convert/converted_text.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using testing::HiddenRuns;

absl::StatusOr<ConvertedDocument> Latex(std::string_view tex) {
  return Convert(tex, DocumentFormat::kLatex);
}

TEST(LatexConverterTest, DropsPreambleCommentsMathAndCommandsKeepsText) {
  auto doc = Latex(
      "\\documentclass{article}\n\\usepackage{amsmath}\n\\title{Preamble title}\n"
      "\\begin{document}\n"
      "\\section{Introduction}\\label{sec:intro}\n"
      "We study \\emph{copy detection} and \\textbf{bold claims} % a comment\n"
      "as in~\\cite{brin95}, where $x^2 + y$ holds.\n\n"
      "\\begin{equation}\n E = mc^2 \\end{equation}\n"
      "Display \\[ a = b \\] and inline \\( c \\) math go.\n"
      "\\end{document}\n"
      "Trailing junk after the document.\n");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kLatex);
  EXPECT_EQ(doc->text,
            "Introduction\n\nWe study copy detection and bold claims as in , where holds.\n\n"
            "Display and inline math go.");
}

TEST(LatexConverterTest, ListsEscapesQuotesAndDashes) {
  auto doc = Latex(
      "\\begin{itemize}\n\\item First item\n\\item[b)] Second 50\\% \\& more\n"
      "\\end{itemize}\n``Quoted''---dash and pages 3--4.\\\\ Next line.");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text,
            "First item\n\nSecond 50% & more\n\n\xE2\x80\x9CQuoted\xE2\x80\x9D\xE2\x80\x94"
            "dash and pages 3\xE2\x80\x93" "4.\nNext line.");
}

TEST(LatexConverterTest, OffsetsPointIntoTheSource) {
  const std::string tex = "\\section{Intro} Some \\emph{emphasised} words.";
  auto doc = Latex(tex);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "Intro\n\nSome emphasised words.");
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("emphasised"))),
            tex.find("emphasised"));
  EXPECT_EQ(doc->OriginalOffset(static_cast<uint32_t>(doc->text.find("words"))),
            tex.find("words"));
}

TEST(LatexConverterTest, HostileNestingAndUnterminatedMath) {
  std::string tex(200000, '{');
  tex += "deep";
  auto deep = Latex(tex);
  ASSERT_OK(deep);
  EXPECT_EQ(deep->text, "deep");
  auto math = Latex("before $ unterminated math \\begin{equation} never closed");
  ASSERT_OK(math);
  EXPECT_EQ(math->text, "before");
}

TEST(LatexConverterTest, AccentCommandsBecomeCombiningMarks) {
  auto doc = Latex("caf\\'e and na\\\"{i}ve");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "cafe\xCC\x81 and nai\xCC\x88ve");
}

// The hidden runs of `doc`, as text.
TEST(LatexConverterTest, TextHiddenFromAReaderIsMarkedHidden) {
  auto doc = Latex(
      "\\documentclass{article}\\usepackage{xcolor}\n"
      "\\definecolor{paper}{RGB}{255, 255, 255}\n"
      "\\begin{document}\n"
      "Shown \\textcolor{white}{white words} then {\\color{white} grouped} back "
      "\\phantom{ghost} and \\hphantom{wide} text {\\fontsize{1pt}{1pt}\\selectfont tiny} a "
      "\\textcolor[rgb]{1,1,1}{rgb} x \\textcolor[HTML]{FfFfFf}{hex} y "
      "{\\color{black!0} mixed {\\color{black} inner} again} z\n\n"
      "\\begin{center}\\color{paper} defined \\end{center} caf\\textcolor{white}{\\'e}\n"
      "\\end{document}\n");
  ASSERT_OK(doc);
  // The text stays (it is what was sent), without the colour arguments; each hidden run is
  // marked, and a colour ends with its group or environment.
  EXPECT_EQ(doc->text,
            "Shown white words then grouped back ghost and wide text tiny a rgb x hex y mixed "
            "inner again z\n\ndefined cafe\xCC\x81");
  EXPECT_EQ(HiddenRuns(*doc),
            (std::vector<std::string>{"white words", "grouped", "ghost", "wide", "tiny", "rgb",
                                      "hex", "mixed", "again", "defined", "e\xCC\x81"}));
}

TEST(LatexConverterTest, ColouredBoxedAndSizedTextIsNotHidden) {
  auto doc = Latex(
      "\\begin{document}\n"
      "\\textcolor{red}{red} {\\color{gray} grey} \\colorbox{black}{\\color{white} boxed} "
      "\\fcolorbox{red}{blue}{\\textcolor{white}{framed}} {\\fontsize{8}{10}\\selectfont "
      "small} \\textcolor{white!50!black}{half} \\textcolor[gray]{0.9}{light}\n"
      "\\end{document}\n");
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "red grey boxed framed small half light");
  EXPECT_EQ(HiddenRuns(*doc), std::vector<std::string>{});
  // On a page of another colour white text is the ordinary case.
  auto dark = Latex(
      "\\pagecolor{black}\\begin{document}\\color{white} Light on dark."
      "\\end{document}");
  ASSERT_OK(dark);
  EXPECT_EQ(dark->text, "Light on dark.");
  EXPECT_EQ(HiddenRuns(*dark), std::vector<std::string>{});
}

}  // namespace
}  // namespace cops
