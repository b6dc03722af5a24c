#include "convert/text_builder.h"

#include <gtest/gtest.h>

namespace cops {
namespace {

TEST(TextBuilderTest, LinearPiecesShareOneSegment) {
  TextBuilder b(1000);
  b.Append("abc", 10);
  b.Append("def", 13);  // continues linearly
  b.Append("xyz", 50);  // jumps
  ConvertedDocument doc;
  b.Finish(&doc);
  EXPECT_EQ(doc.text, "abcdefxyz");
  ASSERT_EQ(doc.segments.size(), 2u);
  EXPECT_EQ(doc.OriginalOffset(4), 14u);
  EXPECT_EQ(doc.OriginalOffset(7), 51u);
}

TEST(TextBuilderTest, ParagraphBreaksAreSingleBlankLinesAndTrimmed) {
  TextBuilder b(1000);
  b.ParagraphBreak();  // nothing to end yet
  b.AppendCollapsed("  one   two  ", 0);
  b.ParagraphBreak();
  b.ParagraphBreak();
  b.LineBreak();
  b.AppendCollapsed("\n three", 20);
  b.LineBreak();
  b.AppendCollapsed("four ", 30);
  b.ParagraphBreak();
  ConvertedDocument doc;
  b.Finish(&doc);
  EXPECT_EQ(doc.text, "one two\n\nthree\nfour");
  EXPECT_EQ(doc.OriginalOffset(static_cast<uint32_t>(doc.text.find("three"))), 22u);
}

TEST(TextBuilderTest, StopsAtTheOutputCap) {
  TextBuilder b(5);
  b.Append("abc", 0);
  EXPECT_FALSE(b.overflowed());
  b.Append("def", 3);
  EXPECT_TRUE(b.overflowed());
  EXPECT_EQ(b.text(), "abc");
}

TEST(TextBuilderTest, PagesSplitSegments) {
  TextBuilder b(1000);
  b.Append("p1", 0, 1);
  b.Append("p2", 2, 2);  // linear offsets but another page
  ConvertedDocument doc;
  b.Finish(&doc);
  EXPECT_EQ(doc.PageOf(0), 1u);
  EXPECT_EQ(doc.PageOf(3), 2u);
}

TEST(TextBuilderTest, SegmentsStaySortedWhenTrailingSpaceIsTrimmed) {
  // Found by fuzz_markdown: a mapped space trimmed by a paragraph break left a segment
  // starting past the end of the text.
  TextBuilder b(1000);
  b.Append("word", 0);
  b.Append(" ", 100);
  b.ParagraphBreak();  // trims the mapped space
  b.Append(" ", 200);
  b.LineBreak();
  b.Append("next", 300);
  ConvertedDocument doc;
  b.Finish(&doc);
  EXPECT_EQ(doc.text, "word\n\nnext");
  for (size_t i = 1; i < doc.segments.size(); ++i) {
    EXPECT_LT(doc.segments[i - 1].text_offset, doc.segments[i].text_offset);
  }
  EXPECT_EQ(doc.OriginalOffset(6), 300u);
}

TEST(TextBuilderTest, HiddenRunMarkedAroundEarlierRunsSwallowsThem) {
  TextBuilder b(1000);
  b.Append("shown", 0);
  b.ParagraphBreak();
  const uint32_t paragraph = static_cast<uint32_t>(b.size());
  b.Append("a ", 10);
  const uint32_t word = static_cast<uint32_t>(b.size());
  b.Append("white", 12);
  b.MarkHidden(word);
  b.Append(" word", 17);
  b.MarkHidden(paragraph);  // the whole paragraph turns out hidden (ODT hidden-paragraph)
  ConvertedDocument doc;
  b.Finish(&doc);
  ASSERT_EQ(doc.hidden.size(), 1u);
  EXPECT_EQ(
      doc.text.substr(doc.hidden[0].text_start, doc.hidden[0].text_end - doc.hidden[0].text_start),
      "a white word");
}

TEST(TextBuilderTest, ImagesCountOnlyWithAWordCharacterRightOnBothSides) {
  TextBuilder b(1000);
  // After a space that the paragraph break trims (leaving no text): must not land inside
  // the word that comes next.
  b.AppendUnmapped(" ");
  b.MarkImage();
  b.ParagraphBreak();
  b.Append("Pay", 0);
  b.MarkImage();  // "Pay|al": inside
  b.Append("al", 10);
  b.AppendUnmapped(" ");
  b.MarkImage();  // " |and": a space before
  b.Append("and", 20);
  b.AppendUnmapped(" ");
  b.MarkImage();  // after a space the line break trims
  b.LineBreak();
  b.Append("n", 30);
  b.MarkImage();  // "n|e|xt": two in one word, one range
  b.Append("e", 40);
  b.MarkImage();
  b.Append("xt.", 50);
  b.MarkImage();  // "xt.|": punctuation before, the end of the text after
  ConvertedDocument doc;
  b.Finish(&doc);
  EXPECT_EQ(doc.text, "Payal and\nnext.");
  ASSERT_EQ(doc.image_in_word.size(), 2u);
  EXPECT_EQ(doc.image_in_word[0].text_start, 0u);
  EXPECT_EQ(doc.image_in_word[0].text_end, 5u);
  EXPECT_EQ(doc.image_in_word[0].images, 1u);
  EXPECT_EQ(doc.image_in_word[1].text_start, 10u);
  EXPECT_EQ(doc.image_in_word[1].text_end, 14u);
  EXPECT_EQ(doc.image_in_word[1].images, 2u);
}

}  // namespace
}  // namespace cops
