#include "core/canonicalizer.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cops {
namespace {

std::string Canon(std::string_view in) {
  CanonicalText t;
  Canonicalize(in, &t);
  return t.text;
}

TEST(CanonicalizeTest, FoldsCaseWhitespaceAndPunctuation) {
  EXPECT_EQ(Canon("The  quick,\tbrown -- fox!"), Canon("the quick brown fox"));
  EXPECT_EQ(Canon("  \n\n "), "");
  EXPECT_EQ(Canon(""), "");
}

TEST(CanonicalizeTest, GreekAndCyrillicCapitalLookalikesFoldToTheLatinWord) {
  // Capitals whose case folding leaves a letter no skeleton maps back (Greek tau, beta,
  // alpha), alone and inside Latin words; Cyrillic capitals too.
  EXPECT_EQ(Canon("\u03A4hese"), Canon("These"));                // Τhese
  EXPECT_EQ(Canon("\u0392y"), Canon("by"));                      // Βy
  EXPECT_EQ(Canon("GENER\u0391L"), Canon("general"));            // GENERΑL
  EXPECT_EQ(Canon("\u0422\u0415\u0425T"), Canon("text"));       // Cyrillic ТЕХ + T
  EXPECT_EQ(Canon("\u039A\u0399\u039D\u0397"), Canon("kinh")); // ΚΙΝΗ
  // ASCII capitals still fold before the skeleton: "In" is "in", not "ln".
  EXPECT_EQ(Canon("In THE Middle"), Canon("in the middle"));
}

TEST(CanonicalizeTest, VersionTwoKeepsItsCanonicalText) {
  // An index built under normalization version 2 keeps hashing as it did.
  CanonicalText v2, v3;
  Canonicalize("\u03A4hese", &v2, 2);
  Canonicalize("\u03A4hese", &v3, 3);
  EXPECT_NE(v2.text, v3.text);
  EXPECT_EQ(v3.text, Canon("these"));
  Canonicalize("p\u0430ypal", &v2, 2);
  EXPECT_EQ(v2.text, Canon("paypal"));
}

TEST(CanonicalizeTest, RemovesInvisibleCharactersInsideWords) {
  const std::string plain = Canon("invisible text");
  EXPECT_EQ(Canon("in\u200Bvisible text"), plain);       // zero-width space
  EXPECT_EQ(Canon("invis\u00ADible text"), plain);       // soft hyphen
  EXPECT_EQ(Canon("in\u200Dvisi\u200Cble text"), plain);  // joiners
  EXPECT_EQ(Canon("\uFEFFinvisible \u202Etext"), plain);  // BOM, bidi override
}

TEST(CanonicalizeTest, MapsHomoglyphsAndCompatibilityForms) {
  // Cyrillic 'а' (U+0430) and 'о' (U+043E) for Latin letters.
  EXPECT_EQ(Canon("p\u0430ypal l\u043Egin"), Canon("paypal login"));
  // Fullwidth letters and ligatures (NFKC).
  EXPECT_EQ(Canon("\uFF21\uFF22\uFF23 of\uFB01ce"), Canon("abc office"));
  // Greek capital omicron inside a Latin word.
  EXPECT_EQ(Canon("W\u039FRD"), Canon("word"));
  // Composed vs decomposed accents.
  EXPECT_EQ(Canon("caf\u00E9"), Canon("cafe\u0301"));
  EXPECT_NE(Canon("cafe"), Canon("card"));
}

TEST(CanonicalizeTest, InvalidUtf8IsReplacedNotFatal) {
  const std::string bad = std::string("ab\xff\xfe" "cd \xc3") + "\x28 e\xe2\x82";
  CanonicalText t;
  Canonicalize(bad, &t);
  // Invalid bytes separate words: "ab" "cd" "e"; the truncated tail is dropped.
  ASSERT_EQ(t.tokens.size(), 3u);
  EXPECT_EQ(t.Word(t.tokens[0]), Canon("ab"));
  EXPECT_EQ(t.Word(t.tokens[1]), Canon("cd"));
  EXPECT_EQ(t.Word(t.tokens[2]), Canon("e"));
  EXPECT_EQ(t.tokens[2].input_end, bad.size() - 2);
}

TEST(CanonicalizeTest, TokensMapBackToExactInputBytes) {
  const std::string in = "Grüße, \u200BWörld!  ta\u00ADble 3.14 end";
  CanonicalText t;
  Canonicalize(in, &t);
  ASSERT_EQ(t.tokens.size(), 5u);
  auto orig = [&](int i) {
    return in.substr(t.tokens[i].input_begin, t.tokens[i].input_end - t.tokens[i].input_begin);
  };
  EXPECT_EQ(orig(0), "Grüße");
  EXPECT_EQ(orig(1), "Wörld");
  EXPECT_EQ(orig(2), "ta\u00ADble");
  EXPECT_EQ(orig(3), "3.14");
  EXPECT_EQ(orig(4), "end");
  EXPECT_TRUE(t.tokens[3].flags & kTokenNumber);
  EXPECT_EQ(t.InputOffsetOf(t.tokens[2].canon_begin), t.tokens[2].input_begin);
}

TEST(CanonicalizeTest, AsciiFastPathAgreesWithUnicodePath) {
  // A word with one non-ASCII letter goes through ICU as a whole; its ASCII part must map
  // exactly as the table does.
  const std::string ascii = "Programming Mammals 0123456789 Illinois";
  const std::string mixed = "Programming Mammals 0123456789 Illinois\u00E9";
  const std::string c1 = Canon(ascii), c2 = Canon(mixed);
  EXPECT_EQ(c2.substr(0, c1.size()), c1);
}

TEST(CanonicalizeTest, OutputLongerThanInputGrowsTheBuffer) {
  // Canonical text is written into a buffer sized from the input; mappings that expand
  // (ASCII "m" -> "rn", a 3-byte ligature -> 18 letters) must still come out whole, also
  // when they fill the buffer and an ASCII run follows.
  const std::string lig = Canon("\uFDFA");
  ASSERT_GT(lig.size(), 6u);
  std::string in, want;
  for (int i = 0; i < 500; ++i) {
    in += "\uFDFA mm ";
    want += lig + " " + Canon("mm") + " ";
  }
  in += std::string(3000, 'm');
  std::string tail;
  for (int i = 0; i < 3000; ++i) tail += Canon("m");
  want += tail;
  EXPECT_EQ(Canon(in), want);
  CanonicalText t;
  Canonicalize(in, &t);
  ASSERT_EQ(t.tokens.size(), 1001u);
  EXPECT_EQ(t.Word(t.tokens.back()), tail);
  EXPECT_EQ(t.tokens.back().input_end, in.size());
}

TEST(CanonicalizeTest, LongAsciiWordsAndGapsMapLikeSingleLetters) {
  // ASCII runs are scanned 16 bytes at a time; words and separator runs of every length,
  // with expanding letters ("m") at any offset and near the end of the input, must give
  // what mapping each letter on its own gives.
  std::mt19937 rng(7);
  const std::string letters = "abcmMxyzIO01Z9m";
  const std::string gaps = " \t-\n/!?";  // no "." or ",": they may join digits
  for (int round = 0; round < 200; ++round) {
    std::string in, want;
    std::vector<std::pair<uint32_t, uint32_t>> spans;
    const int words = 1 + static_cast<int>(rng() % 6);
    for (int w = 0; w < words; ++w) {
      if (w > 0) {
        const size_t gap = 1 + rng() % 40;
        for (size_t g = 0; g < gap; ++g) in += gaps[rng() % gaps.size()];
        want += ' ';
      }
      const size_t len = 1 + rng() % 70;
      const uint32_t begin = static_cast<uint32_t>(in.size());
      for (size_t c = 0; c < len; ++c) {
        const char ch = letters[rng() % letters.size()];
        in += ch;
        want += Canon(std::string(1, ch));
      }
      spans.emplace_back(begin, static_cast<uint32_t>(in.size()));
    }
    CanonicalText t;
    Canonicalize(in, &t);
    EXPECT_EQ(t.text, want) << in;
    ASSERT_EQ(t.tokens.size(), spans.size()) << in;
    for (size_t w = 0; w < spans.size(); ++w) {
      EXPECT_EQ(t.tokens[w].input_begin, spans[w].first);
      EXPECT_EQ(t.tokens[w].input_end, spans[w].second);
    }
  }
}

TEST(CanonicalizeTest, RecordsSentencePunctuation) {
  CanonicalText t;
  Canonicalize("One. Two... three! Four\n\nFive", &t);
  ASSERT_EQ(t.tokens.size(), 5u);
  EXPECT_TRUE(t.tokens[0].flags & kTokenPeriodAfter);
  EXPECT_FALSE(t.tokens[1].flags & kTokenPeriodAfter);  // ellipsis
  EXPECT_TRUE(t.tokens[2].flags & kTokenStrongEndAfter);
  EXPECT_TRUE(t.tokens[3].flags & kTokenParagraphAfter);
  EXPECT_TRUE(t.tokens[4].flags & kTokenUpper);
}

}  // namespace
}  // namespace cops
