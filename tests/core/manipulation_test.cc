#include "core/manipulation.h"

#include <string>

#include "gtest/gtest.h"

namespace cops {
namespace {

TEST(ManipulationTest, CleanTextHasNone) {
  EXPECT_TRUE(FindManipulation("A plain sentence, with punctuation; and 3.14 numbers.").empty());
  // Other scripts on their own, accents, and joiners inside emoji are not manipulation.
  EXPECT_TRUE(FindManipulation("Привет мир. Γειά σου. café naïve. 👩\u200d💻").empty());
}

TEST(ManipulationTest, LookAlikeLettersInLatinWordsAreCountedWithTheirWords) {
  // "Pаypal" with a Cyrillic 'а' (2 bytes), then "ѕесurе" with four Cyrillic letters.
  const std::string text = "Pay with P\u0430ypal now, it is \u0455\u0435\u0441ur\u0435.";
  const std::vector<Manipulation> m = FindManipulation(text);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, ManipulationKind::kLookAlike);
  EXPECT_EQ(m[0].count, 5u);
  ASSERT_EQ(m[0].ranges.size(), 2u);
  EXPECT_EQ(text.substr(m[0].ranges[0].start, m[0].ranges[0].end - m[0].ranges[0].start),
            "P\u0430ypal");
  EXPECT_EQ(text.substr(m[0].ranges[1].start, m[0].ranges[1].end - m[0].ranges[1].start),
            "\u0455\u0435\u0441ur\u0435");
}

TEST(ManipulationTest, FullwidthAndMathematicalLettersInLatinWordsAreLookAlikes) {
  const std::vector<Manipulation> m = FindManipulation("co\uff50y and \U0001D41Cat");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].count, 2u);
  EXPECT_EQ(m[0].ranges.size(), 2u);
}

TEST(ManipulationTest, InvisibleCharactersAreCountedAndPlaced) {
  // A zero-width space inside a word, U+2800 between words (the tool in the wild), a soft
  // hyphen and a BOM in a row (one range, two characters).
  const std::string text = "in\u200bvisible words\u2800between them and\u00ad\ufeffhere";
  const std::vector<Manipulation> m = FindManipulation(text);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, ManipulationKind::kInvisible);
  EXPECT_EQ(m[0].count, 4u);
  ASSERT_EQ(m[0].ranges.size(), 3u);
  EXPECT_EQ(m[0].ranges[0].start, 2u);
  EXPECT_EQ(m[0].ranges[0].end, 5u);  // U+200B is 3 bytes
  EXPECT_EQ(text.substr(m[0].ranges[1].start, 3), "\u2800");
  EXPECT_EQ(m[0].ranges[2].end - m[0].ranges[2].start, 2u + 3);
}

TEST(ManipulationTest, BothKindsAreReportedInKindOrderAndRangesAreCapped) {
  std::string text;
  for (int i = 0; i < 150; ++i) text += "w\u200bord P\u0430ypal ";
  const std::vector<Manipulation> m = FindManipulation(text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].kind, ManipulationKind::kLookAlike);
  EXPECT_EQ(m[1].kind, ManipulationKind::kInvisible);
  EXPECT_EQ(m[0].count, 150u);
  EXPECT_EQ(m[1].count, 150u);
  EXPECT_EQ(m[0].ranges.size(), kMaxManipulationRanges);
  EXPECT_EQ(ManipulationKindName(m[1].kind), "invisible");
}

}  // namespace
}  // namespace cops
