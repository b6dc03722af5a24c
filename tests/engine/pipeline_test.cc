#include "engine/pipeline.h"

#include <string>
#include <vector>

#include "core/hash_key.h"
#include "core/params.h"
#include "gtest/gtest.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

// A fingerprinter of the default parameters under a fixed key (value() throws, failing the
// test, if either cannot be made).
std::unique_ptr<Fingerprinter> TestFingerprinter() {
  const HashKey key = HashKey::FromBytes(std::string(HashKey::kSize, 'k')).value();
  ChunkingParams params;
  params.key_id = key.Id();
  return Fingerprinter::Create(params, key).value();
}

TEST(ValidateInputTest, RefusesEmptyOversizedAndUnknownFormats) {
  EXPECT_OK(ValidateInput("text", DocumentFormat::kText, 4));
  EXPECT_EQ(ValidateInput("", DocumentFormat::kText, 4).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status big = ValidateInput("12345", DocumentFormat::kText, 4);
  EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.message().find("5 bytes"), std::string_view::npos) << big;
  EXPECT_EQ(ValidateInput("x", static_cast<DocumentFormat>(200), 4).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MapToOriginalTest, ChunkSpansLandOnTheBytesAsSent) {
  // HTML markup is dropped by the converter: a chunk of the text maps past the tags.
  const std::string html = "<p><b>" + testing_corpus::Prose(7, 80) + "</b></p>";
  ASSERT_OK_AND_ASSIGN(ConvertedDocument converted, Convert(html, DocumentFormat::kHtml));
  const std::unique_ptr<Fingerprinter> f = TestFingerprinter();
  DocumentFingerprint fp;
  ASSERT_OK(RegisterPrint(*f, converted.text, &fp));
  ASSERT_FALSE(fp.chunks.empty());
  const uint32_t first_in_text = fp.chunks.front().start;
  MapToOriginal(converted, html.size(), &fp);
  EXPECT_EQ(fp.chunks.front().start, first_in_text + 6);  // after "<p><b>"
  for (const Chunk& c : fp.chunks) EXPECT_LE(c.end, html.size() - 8);  // before "</b></p>"
}

TEST(MapToOriginalTest, PlainTextSpansStayAndTheInputsEndStillBoundsThem) {
  const std::unique_ptr<Fingerprinter> f = TestFingerprinter();
  const std::string text = testing_corpus::Prose(5, 120);
  ASSERT_OK_AND_ASSIGN(ConvertedDocument converted, Convert(text, DocumentFormat::kText));
  for (uint32_t i = 0; i <= converted.text.size(); i += 7) {
    ASSERT_EQ(converted.OriginalOffset(i), i);  // UTF-8 as sent: the identity map
  }
  DocumentFingerprint fp;
  ASSERT_OK(RegisterPrint(*f, converted.text, &fp));
  ASSERT_FALSE(fp.chunks.empty());
  const DocumentFingerprint before = fp;
  MapToOriginal(converted, text.size(), &fp);
  ASSERT_EQ(fp.chunks.size(), before.chunks.size());
  for (size_t i = 0; i < fp.chunks.size(); ++i) {
    EXPECT_EQ(fp.chunks[i].start, before.chunks[i].start);
    EXPECT_EQ(fp.chunks[i].end, before.chunks[i].end);
  }
  // Told the input was shorter than the text (never so from Convert), spans are clamped to it.
  const uint32_t cut = before.chunks.back().start;
  MapToOriginal(converted, cut, &fp);
  for (const Chunk& c : fp.chunks) EXPECT_LE(c.end, cut);
  for (const UnitSpan& u : fp.units) EXPECT_LE(u.end, cut);
}

TEST(CheckPrintTest, SamplesOnlyWhenAskedForFewerChunks) {
  const std::unique_ptr<Fingerprinter> f = TestFingerprinter();
  const std::string text = testing_corpus::Prose(3, 400);
  DocumentFingerprint all, sampled;
  ASSERT_OK(CheckPrint(*f, text, 0, 0, CheckOptions{}, &all));
  ASSERT_GT(all.chunks.size(), 4u);
  ASSERT_OK(CheckPrint(*f, text, 4, 1, CheckOptions{}, &sampled));
  EXPECT_EQ(sampled.chunks.size(), 4u);
}

// The heavy-revision rule skips a template's headings and labels (lines of under
// kShortLineUnits words): a check that asks for it marks them; another check does no such work.
TEST(CheckPrintTest, MarksShortLinesOnlyForAHeavyRevisionCheck) {
  const std::unique_ptr<Fingerprinter> f = TestFingerprinter();
  const std::string text = "Installation\n\n" + testing_corpus::Prose(3, 60) + "\n\nUsage\n";
  DocumentFingerprint plain, heavy;
  ASSERT_OK(CheckPrint(*f, text, 0, 0, CheckOptions{}, &plain));
  EXPECT_TRUE(plain.short_lines.empty());
  CheckOptions asked;
  asked.revision_share = kHeavyRevisionShare;
  ASSERT_OK(CheckPrint(*f, text, 0, 0, asked, &heavy));
  ASSERT_EQ(heavy.short_lines.size(), 2u);
  EXPECT_EQ(heavy.short_lines.front().begin, 0u);  // "Installation"
  EXPECT_EQ(heavy.short_lines.front().end, 1u);
  EXPECT_EQ(heavy.short_lines.back().end, heavy.total_units);  // "Usage"
  EXPECT_EQ(heavy.chunks.size(), plain.chunks.size());
}

TEST(AddMarkupQuotesTest, MarkdownQuoteLinesAreExcludedOnlyWhenAsked) {
  const std::string md = "intro\n> quoted line\nafter\n";
  std::vector<ExcludedRange> excluded;
  AddMarkupQuotes(md, DocumentFormat::kMarkdown, /*quotes=*/false, &excluded);
  EXPECT_TRUE(excluded.empty());
  AddMarkupQuotes(md, DocumentFormat::kMarkdown, /*quotes=*/true, &excluded);
  ASSERT_EQ(excluded.size(), 1u);
  EXPECT_EQ(md.substr(excluded[0].start, 3), "> q");
  std::vector<ExcludedRange> text_only;
  AddMarkupQuotes(md, DocumentFormat::kText, /*quotes=*/true, &text_only);
  EXPECT_TRUE(text_only.empty());
}

}  // namespace
}  // namespace cops
