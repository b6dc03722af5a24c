#include "core/exclusions.h"

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace cops {
namespace {

// The excluded texts, for readable expectations.
std::vector<std::string> Texts(std::string_view text, const std::vector<ExcludedRange>& ranges) {
  std::vector<std::string> out;
  for (const ExcludedRange& r : ranges) {
    out.emplace_back(text.substr(r.start, r.end - r.start));
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(FindQuotesTest, AsciiDoubleQuotes) {
  const std::string t = R"(He said "the model fails on long inputs" and left.)";
  EXPECT_EQ(Texts(t, FindQuotes(t)), Strings{R"("the model fails on long inputs")"});
  for (const ExcludedRange& r : FindQuotes(t)) EXPECT_EQ(r.reason, Exclusion::kQuote);
}

TEST(FindQuotesTest, CurlyGermanFrenchAndCjkQuotes) {
  const std::string curly =
      "As noted, \xE2\x80\x9C"
      "copying is easy\xE2\x80\x9D"
      " indeed.";
  EXPECT_EQ(Texts(curly, FindQuotes(curly)), Strings{"\xE2\x80\x9C"
                                                     "copying is easy\xE2\x80\x9D"});
  const std::string german =
      "Er schrieb \xE2\x80\x9E"
      "das ist neu\xE2\x80\x9C"
      " gestern.";
  EXPECT_EQ(Texts(german, FindQuotes(german)), Strings{"\xE2\x80\x9E"
                                                       "das ist neu\xE2\x80\x9C"});
  const std::string french = "Il dit \xC2\xAB la copie \xC2\xBB puis part.";
  EXPECT_EQ(Texts(french, FindQuotes(french)), Strings{"\xC2\xAB la copie \xC2\xBB"});
  const std::string reversed =
      "Er sagte \xC2\xBB"
      "Hallo Welt\xC2\xAB"
      " und ging.";
  EXPECT_EQ(Texts(reversed, FindQuotes(reversed)), Strings{"\xC2\xBB"
                                                           "Hallo Welt\xC2\xAB"});
  const std::string cjk =
      "\xE4\xBB\x96\xE8\xAF\xB4\xE3\x80\x8C\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x8D";
  EXPECT_EQ(Texts(cjk, FindQuotes(cjk)),
            Strings{"\xE3\x80\x8C\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x8D"});
}

TEST(FindQuotesTest, NestedQuotesMergeIntoTheOuterOne) {
  const std::string t =
      "She wrote \xE2\x80\x9Cthe reviewer said \"reject it\" twice\xE2\x80\x9D"
      " yesterday.";
  EXPECT_EQ(Texts(t, FindQuotes(t)),
            Strings{"\xE2\x80\x9Cthe reviewer said \"reject it\" twice\xE2\x80\x9D"});
}

TEST(FindQuotesTest, UnbalancedQuotesExcludeNothingPastTheirParagraph) {
  // The opening mark is never closed in its paragraph; the next paragraph is not a quote.
  const std::string t = "He said \"this never closes.\n\nA normal paragraph follows here.";
  EXPECT_TRUE(FindQuotes(t).empty());
  // An inch mark closes nothing and opens nothing; the real quote after it is found.
  const std::string inches = "A 12\" screen, as he said \"is enough\" for us.";
  EXPECT_EQ(Texts(inches, FindQuotes(inches)), Strings{"\"is enough\""});
  // An ASCII opening mark that cannot close makes the older open one unbalanced.
  const std::string stray = "Stray \"mark then a \"real quote\" here.";
  EXPECT_EQ(Texts(stray, FindQuotes(stray)), Strings{"\"real quote\""});
  // A closing mark without an opening one excludes nothing.
  const std::string closing = "Nothing opened\xE2\x80\x9D here \xC2\xBB either.";
  EXPECT_TRUE(FindQuotes(closing).empty());
}

TEST(FindQuotesTest, BlockQuoteLines) {
  const std::string t = "Reply text here.\n> quoted line one\n  > quoted line two\r\nMore x > y.\n";
  EXPECT_EQ(Texts(t, FindQuotes(t)), (Strings{"> quoted line one", "  > quoted line two"}));
}

TEST(FindQuotesTest, NormalProseHasNoQuotes) {
  const std::string t =
      "The method improves recall by ten points. It's the authors' claim, and the\n"
      "results (Table 2) support it; x > y holds for every run.\n\nA second paragraph.";
  EXPECT_TRUE(FindQuotes(t).empty());
}

TEST(FindHtmlBlockQuotesTest, NestedAndUnclosedElements) {
  const std::string html =
      "<p>a</p><BlockQuote class=x>one<blockquote>two</blockquote>three</BLOCKQUOTE><p>b</p>"
      "<blockquotes>not one</blockquotes><blockquote>open";
  EXPECT_EQ(Texts(html, FindHtmlBlockQuotes(html)),
            (Strings{"<BlockQuote class=x>one<blockquote>two</blockquote>three</BLOCKQUOTE>",
                     "<blockquote>open"}));
}

TEST(FindReferencesTest, HeadingVariants) {
  for (const std::string heading :
       {"References", "REFERENCES", "References:", "7. References", "VII. Bibliography",
        "A. Works Cited", "## Literatur", "**Bibliography**", "Literaturverzeichnis",
        "R\xC3\x89"
        "F\xC3\x89RENCES",
        "\\section*{References}", "\\chapter{Bibliography}", "  Works   Cited  ",
        "\xD0\xA1\xD0\xBF\xD0\xB8\xD1\x81\xD0\xBE\xD0\xBA "
        "\xD0\xBB\xD0\xB8\xD1\x82\xD0\xB5\xD1\x80\xD0\xB0\xD1\x82\xD1\x83\xD1\x80\xD1\x8B"}) {
    const std::string body = "Some text of the paper.\n\n";
    const std::string t = body + heading + "\n[1] A. Author. A title. 2001.\n";
    const std::optional<ExcludedRange> r = FindReferences(t);
    ASSERT_TRUE(r.has_value()) << heading;
    EXPECT_EQ(r->start, body.size()) << heading;
    EXPECT_EQ(r->end, t.size()) << heading;
    EXPECT_EQ(r->reason, Exclusion::kReferences);
  }
}

TEST(FindReferencesTest, TheLastHeadingWinsAndProseIsNoHeading) {
  const std::string toc = "Contents\nIntroduction\nReferences\n\nIntroduction\nText.\n";
  const std::string t = toc + "References\n[1] X.\n";
  ASSERT_TRUE(FindReferences(t).has_value());
  EXPECT_EQ(FindReferences(t)->start, toc.size());
  // "references" inside a sentence, a longer title, or a heading with other words is none.
  for (const std::string prose :
       {"We list the references below.\nMore text.", "References to prior work are many\n",
        "Literature Review\nText.", "The bibliography of this field is large.\n"}) {
    EXPECT_FALSE(FindReferences(prose).has_value()) << prose;
  }
}

TEST(FindReferencesTest, LatexBibliographyEnvironment) {
  const std::string before = "Text \\cite{a}.\n";
  const std::string env = "\\begin{thebibliography}{9}\n\\bibitem{a} A.\n\\end{thebibliography}";
  const std::string t = before + env + "\n\\end{document}\n";
  const std::optional<ExcludedRange> r = FindReferences(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(t.substr(r->start, r->end - r->start), env);
}

TEST(FindExclusionsTest, OnlyWhatIsAskedForSortedAndDisjoint) {
  const std::string t = "Intro \"a quote\" text.\n\nReferences\n[1] \"Quoted title\". 2001.\n";
  EXPECT_TRUE(FindExclusions(t, {}).empty());
  EXPECT_EQ(Texts(t, FindExclusions(t, {.quotes = true})),
            (Strings{"\"a quote\"", "\"Quoted title\""}));
  const std::vector<ExcludedRange> both = FindExclusions(t, {.quotes = true, .references = true});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].reason, Exclusion::kQuote);
  EXPECT_EQ(both[1].reason, Exclusion::kReferences);
  EXPECT_EQ(t.substr(both[1].start), "References\n[1] \"Quoted title\". 2001.\n");
}

TEST(NormalizeRangesTest, MergesSameReasonAndKeepsTheFirstOfAnOverlap) {
  std::vector<ExcludedRange> r = {{50, 60, Exclusion::kQuote}, {0, 10, Exclusion::kQuote},
                                  {10, 20, Exclusion::kQuote}, {55, 90, Exclusion::kTemplate},
                                  {70, 80, Exclusion::kQuote}, {95, 95, Exclusion::kQuote}};
  NormalizeRanges(&r);
  EXPECT_EQ(r, (std::vector<ExcludedRange>{{0, 20, Exclusion::kQuote},
                                           {50, 60, Exclusion::kQuote},
                                           {60, 90, Exclusion::kTemplate}}));
}

TEST(ExcludedUnitsTest, AUnitOverlappingARangeIsExcluded) {
  const std::vector<UnitSpan> units = {{0, 3}, {4, 9}, {10, 14}, {15, 20}, {21, 25}};
  const std::vector<ExcludedRange> ranges = {{3, 10, Exclusion::kQuote},
                                             {18, 30, Exclusion::kReferences}};
  std::vector<Exclusion> out;
  ExcludedUnits(units, ranges, &out);
  EXPECT_EQ(out, (std::vector<Exclusion>{Exclusion::kNone, Exclusion::kQuote, Exclusion::kNone,
                                         Exclusion::kReferences, Exclusion::kReferences}));
  ExcludedUnits(units, {}, &out);
  EXPECT_EQ(out, std::vector<Exclusion>(5, Exclusion::kNone));
}

TEST(ExclusionNameTest, Names) {
  EXPECT_EQ(ExclusionName(Exclusion::kNone), "");
  EXPECT_EQ(ExclusionName(Exclusion::kQuote), "quote");
  EXPECT_EQ(ExclusionName(Exclusion::kReferences), "references");
  EXPECT_EQ(ExclusionName(Exclusion::kTemplate), "template");
  EXPECT_EQ(ExclusionName(Exclusion::kShortMatch), "short_match");
}

}  // namespace
}  // namespace cops
