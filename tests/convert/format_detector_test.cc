#include <gtest/gtest.h>
#include <unicode/ucnv.h>
#include <unicode/unistr.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "convert/charset.h"
#include "convert/converter.h"
#include "convert/formats.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
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

// The kinds of random input the server must not take for text. Random printable ASCII is
// not among them: it is valid UTF-8 without control bytes, as base64, hex dumps and source
// code are, and is accepted as text (docs/converters.md).
// Below kMinStatisticalTextBytes a few random bytes can spell text ("\xe9t\xe9" is "été" in
// windows-1252) and uchardet often misnames real text's charset: the guarantee starts there.
constexpr double kMinRandomTextBytes = kMinStatisticalTextBytes;

enum class RandomKind { kUniform, kNoNul, kHighBit, kCount };

std::string RandomInput(RandomKind kind, size_t n, std::mt19937_64& gen) {
  std::string s(n, '\0');
  for (char& c : s) {
    uint8_t b = static_cast<uint8_t>(gen());
    if (kind == RandomKind::kNoNul) {
      while (b == 0) b = static_cast<uint8_t>(gen());
    } else if (kind == RandomKind::kHighBit) {
      b |= 0x80;
    }
    c = static_cast<char>(b);
  }
  return s;
}

// 1,000 random inputs of every kind, 64 bytes to 64 KiB (log-uniform), declared auto, text
// or Markdown, through Convert() as copsd calls it: none is text. The run's seed is printed;
// COPS_RANDOM_INPUT_SEED=<seed> replays a run.
TEST(FormatDetectorTest, NoRandomInputIsTakenForText) {
  uint64_t seed = std::random_device()();
  if (const char* env = std::getenv("COPS_RANDOM_INPUT_SEED"); env != nullptr) {
    seed = std::strtoull(env, nullptr, 10);
  }
  std::cout << "COPS_RANDOM_INPUT_SEED=" << seed << "\n";
  std::mt19937_64 gen(seed);
  const DocumentFormat formats[] = {DocumentFormat::kAuto, DocumentFormat::kText,
                                    DocumentFormat::kMarkdown};
  int accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto kind = static_cast<RandomKind>(i % static_cast<int>(RandomKind::kCount));
    const double log_size = std::uniform_real_distribution<double>(std::log(kMinRandomTextBytes),
                                                                   std::log(64 << 10))(gen);
    const std::string input = RandomInput(kind, static_cast<size_t>(std::exp(log_size)), gen);
    const DocumentFormat format = formats[(i / 3) % 3];
    absl::StatusOr<ConvertedDocument> doc = Convert(input, format);
    if (doc.status().code() == absl::StatusCode::kInvalidArgument &&
        doc.status().message().find("looks like") != std::string::npos) {
      continue;
    }
    ++accepted;
    ADD_FAILURE() << "input " << i << " (kind " << static_cast<int>(kind) << ", " << input.size()
                  << " bytes, declared " << DocumentFormatName(format)
                  << ") was not refused as binary: " << doc.status()
                  << (doc.ok() ? " as " + std::string(DocumentFormatName(doc->format)) + " in " +
                                     doc->charset
                               : "")
                  << "; replay with COPS_RANDOM_INPUT_SEED=" << seed;
  }
  EXPECT_EQ(accepted, 0) << "COPS_RANDOM_INPUT_SEED=" << seed;
}

TEST(FormatDetectorTest, RandomPrintableAsciiIsAcceptedAsText) {
  std::mt19937_64 gen(7);
  std::string gibberish(4096, ' ');
  for (char& c : gibberish) c = static_cast<char>(' ' + gen() % 95);
  ASSERT_OK(Convert(gibberish, DocumentFormat::kAuto));
  EXPECT_OK(CheckLooksLikeText(gibberish, DocumentFormat::kText));
}

TEST(FormatDetectorTest, EveryControlByteIsCountedWhereverItSits) {
  // Control bytes are counted eight bytes at a time where a word holds none: one at any
  // offset (or in the tail after the last whole word) still makes 60 bytes binary (> 1%),
  // and tabs and line breaks are not control bytes.
  for (const char control : {'\x01', '\x7F', '\x1F', '\0'}) {
    for (size_t at = 0; at < 60; ++at) {
      std::string text(60, 'a');
      text[at] = control;
      absl::Status s = CheckLooksLikeTextWithoutMagic(text, DocumentFormat::kText);
      EXPECT_NE(s.message().find(" 1 control bytes in the first 60"), std::string::npos)
          << int{control} << " at " << at << ": " << s;
    }
  }
  EXPECT_OK(CheckLooksLikeTextWithoutMagic("tab\there\r\nand\fform feed\x1B[0m, ok", DocumentFormat::kText));
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

// `utf8` in `charset` (ICU's converter), characters it cannot hold as '?'.
std::string Encode(const std::string& utf8, const char* charset) {
  UErrorCode err = U_ZERO_ERROR;
  UConverter* conv = ucnv_open(charset, &err);
  EXPECT_TRUE(U_SUCCESS(err)) << charset;
  if (U_FAILURE(err)) return "";
  if (ucnv_getMinCharSize(conv) == 1) ucnv_setSubstChars(conv, "?", 1, &err);
  const icu::UnicodeString text = icu::UnicodeString::fromUTF8(utf8);
  std::string out(static_cast<size_t>(text.length()) * 4 + 16, '\0');
  const int32_t n = ucnv_fromUChars(conv, out.data(), static_cast<int32_t>(out.size()),
                                    text.getBuffer(), text.length(), &err);
  ucnv_close(conv);
  EXPECT_TRUE(U_SUCCESS(err)) << charset << ": " << u_errorName(err);
  out.resize(U_SUCCESS(err) ? n : 0);
  return out;
}

// Whole lines of `text` starting near `at` (a fraction of it), about `chars` bytes of UTF-8.
std::string Excerpt(const std::string& text, double at, size_t chars) {
  size_t start = text.find('\n', static_cast<size_t>(text.size() * at));
  start = start == std::string::npos ? 0 : start + 1;
  size_t end = text.find('\n', std::min(text.size(), start + chars));
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Human text Debian ships, re-encoded in the charsets people wrote that language in, whole
// and in excerpts down to ~64 bytes: all of it is text, through Convert() as copsd calls it.
TEST(FormatDetectorTest, RealTextFromDebianFilesIsTextInEveryEncoding) {
  struct Source {
    std::string path;
    std::vector<const char*> charsets;
  };
  const std::string tutor = "/usr/share/vim/vim90/tutor/";  // vim-runtime
  const std::vector<Source> sources = {
      {"/usr/share/common-licenses/GPL-3", {"windows-1252", "UTF-16LE", "UTF-16BE"}},
      {"/usr/share/common-licenses/MPL-2.0", {"ISO-8859-1", "UTF-16"}},
      {"/usr/share/doc/libglib2.0-0/copyright", {"UTF-16"}},
      {tutor + "tutor.ru.utf-8", {"KOI8-R", "windows-1251", "ISO-8859-5", "UTF-16"}},
      {tutor + "tutor.uk.utf-8", {"KOI8-U", "windows-1251"}},
      {tutor + "tutor.bg.utf-8", {"windows-1251"}},
      {tutor + "tutor.ja.utf-8", {"Shift_JIS", "EUC-JP", "UTF-16"}},
      {tutor + "tutor.ko.utf-8", {"EUC-KR", "UTF-16"}},
      {tutor + "tutor.zh_cn.utf-8", {"GB18030", "GBK"}},
      {tutor + "tutor.zh_tw.utf-8", {"Big5"}},
      {tutor + "tutor.el.utf-8", {"ISO-8859-7", "windows-1253"}},
      {tutor + "tutor.pl.utf-8", {"ISO-8859-2", "windows-1250"}},
      {tutor + "tutor.cs.utf-8", {"ISO-8859-2", "windows-1250"}},
      {tutor + "tutor.hu.utf-8", {"ISO-8859-2"}},
      {tutor + "tutor.tr.utf-8", {"ISO-8859-9"}},
      {tutor + "tutor.de.utf-8", {"windows-1252", "ISO-8859-15"}},
      {tutor + "tutor.fr.utf-8", {"windows-1252"}},
      {tutor + "tutor.es.utf-8", {"ISO-8859-1"}},
      {tutor + "tutor.vi.utf-8", {"windows-1258"}},
  };
  int checked = 0;
  for (const Source& source : sources) {
    const std::string utf8 = testing::ReadFileOrEmpty(source.path);
    if (utf8.empty()) {
      std::cout << "not installed, left out: " << source.path << "\n";
      continue;
    }
    for (const char* charset : source.charsets) {
      const std::string samples[] = {utf8, Excerpt(utf8, 0.5, 4000), Excerpt(utf8, 0.3, 600),
                                     Excerpt(utf8, 0.7, 150), Excerpt(utf8, 0.2, 64)};
      for (const std::string& sample : samples) {
        const std::string bytes = Encode(sample, charset);
        absl::StatusOr<ConvertedDocument> doc = Convert(bytes, DocumentFormat::kAuto);
        EXPECT_TRUE(doc.ok()) << source.path << " in " << charset << ", " << bytes.size()
                              << " bytes: " << doc.status() << "\n"
                              << sample;
        EXPECT_OK(Convert(bytes, DocumentFormat::kText)) << source.path << " in " << charset;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
  // The legacy files vim ships as they are.
  for (const char* name : {"tutor.ja.sjis", "tutor.ja.euc", "tutor.ko.euc", "tutor.zh.big5",
                           "tutor.zh.euc", "tutor.ru.cp1251", "tutor.pl.cp1250", "tutor.cs.cp1250",
                           "tutor.tr.iso9", "tutor.hu", "tutor.fr"}) {
    const std::string bytes = testing::ReadFileOrEmpty(tutor + name);
    if (bytes.empty()) continue;
    absl::StatusOr<ConvertedDocument> doc = Convert(bytes, DocumentFormat::kAuto);
    EXPECT_TRUE(doc.ok()) << name << ": " << doc.status();
  }
}

}  // namespace
}  // namespace cops
