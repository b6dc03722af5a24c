#include "core/units.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cops {
namespace {

// Original text of each unit, as the user wrote it.
std::vector<std::string> Units(const std::string& in, UnitKind kind, Enhancements enh = {}) {
  CanonicalText canon;
  Canonicalize(in, &canon);
  UnitStream s;
  BuildUnits(canon, kind, enh, &s);
  std::vector<std::string> out;
  for (const Unit& u : s.units) out.push_back(in.substr(u.input_begin, u.input_end - u.input_begin));
  return out;
}

using Strings = std::vector<std::string>;

TEST(SentenceSplitTest, BreaksAtTerminators) {
  EXPECT_EQ(Units("It rains. We stay! Do we? Yes", UnitKind::kSentence),
            (Strings{"It rains", "We stay", "Do we", "Yes"}));
}

TEST(SentenceSplitTest, KeepsAbbreviationsInitialsDecimalsAndEllipses) {
  EXPECT_EQ(Units("Dr. Smith met Mr. Jones in the U.S. Army. They left.", UnitKind::kSentence),
            (Strings{"Dr. Smith met Mr. Jones in the U.S. Army", "They left"}));
  EXPECT_EQ(Units("Read J. R. R. Tolkien now. Then sleep.", UnitKind::kSentence),
            (Strings{"Read J. R. R. Tolkien now", "Then sleep"}));
  EXPECT_EQ(Units("Pi is 3.14 roughly. Fruit, e.g. apples, etc. Are good.", UnitKind::kSentence),
            (Strings{"Pi is 3.14 roughly", "Fruit, e.g. apples, etc. Are good"}));
  EXPECT_EQ(Units("Wait... Then go. end", UnitKind::kSentence),
            (Strings{"Wait... Then go. end"}));
}

TEST(SentenceSplitTest, BlankLineEndsSentenceAndParagraph) {
  const std::string in = "first para line one\nline two\n\nsecond para";
  EXPECT_EQ(Units(in, UnitKind::kSentence),
            (Strings{"first para line one\nline two", "second para"}));
  EXPECT_EQ(Units(in, UnitKind::kParagraph),
            (Strings{"first para line one\nline two", "second para"}));
}

TEST(EnhancementsTest, DropNumbersShortWordsAndStopWords) {
  Enhancements e;
  e.drop_numbers = true;
  EXPECT_EQ(Units("in 1995 we had 3.14 cakes", UnitKind::kWord, e),
            (Strings{"in", "we", "had", "cakes"}));
  e = {};
  e.min_word_chars = 3;
  EXPECT_EQ(Units("in 1995 we had cakes", UnitKind::kWord, e),
            (Strings{"1995", "had", "cakes"}));
  e = {};
  e.drop_stop_words = true;
  EXPECT_EQ(Units("The cat sat on the mat", UnitKind::kWord, e),
            (Strings{"cat", "sat", "mat"}));
}

TEST(StopWordsTest, TheListHoldsExactlyTheWordsIsStopWordAnswers) {
  const std::vector<std::string>& list = CanonicalStopWords();
  ASSERT_GT(list.size(), 100u);
  for (const std::string& w : list) EXPECT_TRUE(IsStopWord(w)) << w;
  std::vector<std::string> sorted = list;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // each once
  for (const char* w : {"the", "and", "yourselves", "i"}) {
    EXPECT_TRUE(std::binary_search(sorted.begin(), sorted.end(), w)) << w;
  }
  for (const char* w : {"gardener", "thee", "an d", ""}) EXPECT_FALSE(IsStopWord(w)) << w;
}

TEST(EnhancementsTest, DropShortSentences) {
  Enhancements e;
  e.min_sentence_words = 3;
  EXPECT_EQ(Units("Yes. This one stays here. No! Also this stays.", UnitKind::kSentence, e),
            (Strings{"This one stays here", "Also this stays"}));
}

}  // namespace
}  // namespace cops
