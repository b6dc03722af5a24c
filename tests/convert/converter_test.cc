#include "convert/converter.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(ConverterTest, FormatNamesRoundTrip) {
  for (int i = 0; i <= 8; ++i) {
    const auto f = static_cast<DocumentFormat>(i);
    auto parsed = ParseDocumentFormat(DocumentFormatName(f));
    ASSERT_OK(parsed) << DocumentFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(DocumentFormatName(DocumentFormat::kPdf), "pdf");
  EXPECT_EQ(*ParseDocumentFormat("PDF"), DocumentFormat::kPdf);
  EXPECT_EQ(*ParseDocumentFormat("md"), DocumentFormat::kMarkdown);
  auto bad = ParseDocumentFormat("wordperfect");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("wordperfect"), std::string_view::npos);
}

TEST(ConverterTest, OriginalOffsetAndPageFollowSegments) {
  ConvertedDocument doc;
  doc.text = "aaaa\n\nbbbb";
  EXPECT_EQ(doc.OriginalOffset(7), 7u);  // no map: identity
  EXPECT_EQ(doc.PageOf(7), 0u);
  doc.segments = {{0, 100, 1}, {6, 500, 2}};
  EXPECT_EQ(doc.OriginalOffset(0), 100u);
  EXPECT_EQ(doc.OriginalOffset(3), 103u);
  EXPECT_EQ(doc.OriginalOffset(6), 500u);
  EXPECT_EQ(doc.OriginalOffset(9), 503u);
  EXPECT_EQ(doc.PageOf(2), 1u);
  EXPECT_EQ(doc.PageOf(8), 2u);
  // Text longer than its source never maps into the next segment's bytes.
  doc.segments = {{0, 10, 0}, {6, 12, 0}};
  EXPECT_EQ(doc.OriginalOffset(4), 11u);
}

TEST(ConverterTest, AutoConvertsPlainText) {
  auto doc = Convert("Plain words.", DocumentFormat::kAuto);
  ASSERT_OK(doc);
  EXPECT_EQ(doc->format, DocumentFormat::kText);
  EXPECT_EQ(doc->text, "Plain words.");
}

TEST(ConverterTest, FormatOutsideTheEnumIsInvalid) {
  auto doc = Convert("x", static_cast<DocumentFormat>(42));
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
}

// Inputs that once crashed a fuzz target (tests/convert/regressions/<format>-crash-*):
// each must now convert, or fail with a clear error, and keep the result's invariants.
TEST(ConverterTest, FuzzRegressionsKeepInvariants) {
  const std::filesystem::path dir = COPS_CONVERT_REGRESSIONS_DIR;
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto format = ParseDocumentFormat(name.substr(0, name.find('-')));
    ASSERT_OK(format) << name;
    ConvertLimits limits;
    limits.in_process = true;
    auto doc = Convert(testing::ReadFileOrEmpty(entry.path()), *format, limits);
    ++seen;
    if (!doc.ok()) {
      EXPECT_NE(doc.status().code(), absl::StatusCode::kInternal) << name;
      continue;
    }
    for (size_t i = 1; i < doc->segments.size(); ++i) {
      EXPECT_LT(doc->segments[i - 1].text_offset, doc->segments[i].text_offset) << name;
    }
    for (const ConvertedPart& p : doc->parts) {
      EXPECT_LE(p.text_start, p.text_end) << name;
      EXPECT_LE(p.text_end, doc->text.size()) << name;
    }
  }
  EXPECT_GT(seen, 0);
}

// Lower-cased 5-word shingles of a text: what a chunking fingerprinter would compare.
std::set<std::string> Shingles(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(word);
  std::set<std::string> out;
  for (size_t i = 0; i + 5 <= words.size(); ++i) {
    out.insert(words[i] + " " + words[i + 1] + " " + words[i + 2] + " " + words[i + 3] + " " +
               words[i + 4]);
  }
  return out;
}

double Overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  size_t common = 0;
  for (const std::string& s : a) common += b.count(s);
  return a.empty() ? 0.0 : static_cast<double>(common) / static_cast<double>(a.size());
}

// The same paragraphs written by each converter's format (plain text aside).
std::vector<std::pair<DocumentFormat, std::string>> InEveryFormat(
    const std::vector<std::string>& paragraphs) {
  return {
      {DocumentFormat::kPdf, testing::MakePdfFromParagraphs(paragraphs)},
      {DocumentFormat::kDocx, testing::MakeDocx(paragraphs)},
      {DocumentFormat::kOdt, testing::MakeOdt(paragraphs)},
      {DocumentFormat::kHtml, testing::MakeHtml(paragraphs)},
      {DocumentFormat::kLatex, testing::MakeLatex(paragraphs)},
      {DocumentFormat::kMarkdown, testing::MakeMarkdown(paragraphs)},
      {DocumentFormat::kEmail, testing::MakeEmail(paragraphs)},
  };
}

TEST(ConverterTest, SameContentInEveryFormatGivesNearlyTheSameText) {
  std::vector<std::string> paragraphs = testing::Prose(12, 7);
  paragraphs[0] = "Copy detection for digital documents";
  const std::string reference_text = testing::MakeText(paragraphs);
  const std::set<std::string> reference = Shingles(reference_text);
  ASSERT_GT(reference.size(), 200u);
  const std::vector<std::pair<DocumentFormat, std::string>> inputs = InEveryFormat(paragraphs);
  for (const auto& [format, bytes] : inputs) {
    auto doc = Convert(bytes, DocumentFormat::kAuto);
    ASSERT_OK(doc) << DocumentFormatName(format);
    EXPECT_EQ(doc->format, format);
    const std::set<std::string> got = Shingles(doc->text);
    EXPECT_GE(Overlap(reference, got), 0.9) << DocumentFormatName(format) << "\n" << doc->text;
    EXPECT_GE(Overlap(got, reference), 0.9) << DocumentFormatName(format);
    // Paragraph structure survives too.
    EXPECT_NE(doc->text.find(paragraphs[3].substr(0, 40)), std::string::npos)
        << DocumentFormatName(format);
  }
}

// The walker answers as OriginalOffset whatever the order of the offsets asked for: forwards
// (a pass over spans), backwards, and jumping both ways, over maps of every converter.
TEST(OriginalOffsetWalkerTest, AnswersAsOriginalOffsetInAnyOrder) {
  std::vector<std::string> paragraphs = testing::Prose(12, 7);
  std::vector<std::pair<DocumentFormat, std::string>> inputs = InEveryFormat(paragraphs);
  inputs.emplace_back(DocumentFormat::kText, testing::MakeText(paragraphs));
  std::mt19937 gen(11);
  for (const auto& [format, bytes] : inputs) {
    ASSERT_OK_AND_ASSIGN(ConvertedDocument doc, Convert(bytes, format));
    if (format == DocumentFormat::kHtml || format == DocumentFormat::kLatex) {
      EXPECT_GT(doc.segments.size(), 10u) << DocumentFormatName(format);  // a map to walk
    }
    const auto size = static_cast<uint32_t>(doc.text.size());
    OriginalOffsetWalker forwards(doc);
    for (uint32_t t = 0; t <= size + 2; ++t) {
      ASSERT_EQ(forwards(t), doc.OriginalOffset(t)) << DocumentFormatName(format) << " " << t;
    }
    OriginalOffsetWalker backwards(doc);
    for (uint32_t t = size + 2; t-- > 0;) {
      ASSERT_EQ(backwards(t), doc.OriginalOffset(t)) << DocumentFormatName(format) << " " << t;
    }
    OriginalOffsetWalker jumping(doc);
    for (int i = 0; i < 2000; ++i) {
      const uint32_t t = gen() % (size + 3);
      ASSERT_EQ(jumping(t), doc.OriginalOffset(t)) << DocumentFormatName(format) << " " << t;
    }
  }
}

// The table is the one place a format is named: every row parses back from its name and
// aliases, and values outside it are refused.
TEST(DocumentFormatTableTest, NamesParseBackAndTheRangeIsTheTable) {
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    EXPECT_EQ(DocumentFormatName(f.format), f.name);
    ASSERT_OK_AND_ASSIGN(DocumentFormat parsed, ParseDocumentFormat(f.name));
    EXPECT_EQ(parsed, f.format);
    for (std::string_view alias : f.aliases) {
      if (alias.empty()) continue;
      ASSERT_OK_AND_ASSIGN(DocumentFormat by_alias, ParseDocumentFormat(alias));
      EXPECT_EQ(by_alias, f.format);
    }
    EXPECT_TRUE(IsDocumentFormat(static_cast<int>(f.format)));
  }
  EXPECT_FALSE(IsDocumentFormat(-1));
  EXPECT_FALSE(IsDocumentFormat(static_cast<int>(std::size(kDocumentFormats))));
  // Its media types name it back (the HTTP API's Content-Type), and every format but
  // kAuto has a converter.
  for (const DocumentFormatInfo& f : kDocumentFormats) {
    EXPECT_EQ(f.convert == nullptr, f.format == DocumentFormat::kAuto) << f.name;
    EXPECT_FALSE(f.mime_types[0].empty()) << f.name;
    for (std::string_view m : f.mime_types) {
      if (m.empty()) continue;
      EXPECT_EQ(DocumentFormatOfMimeType(m), f.format) << m;
    }
    EXPECT_EQ(SpansIndexExtractedText(f.format), f.offsets == ReportOffsets::kExtractedText);
  }
  EXPECT_EQ(DocumentFormatOfMimeType("application/octet-stream"), DocumentFormat::kAuto);
  EXPECT_EQ(DocumentFormatOfMimeType("image/png"), std::nullopt);
  EXPECT_NE(DocumentMimeTypes().find("application/pdf"), std::string::npos);
  EXPECT_TRUE(SpansIndexExtractedText(DocumentFormat::kPdf));
  EXPECT_FALSE(SpansIndexExtractedText(DocumentFormat::kMarkdown));
  absl::StatusOr<DocumentFormat> unknown = ParseDocumentFormat("rtf");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("markdown"), std::string_view::npos);
}

}  // namespace
}  // namespace cops
