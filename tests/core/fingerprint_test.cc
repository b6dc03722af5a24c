#include "core/fingerprint.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/siphash.h"
#include "core/stem_pairs.h"
#include "core/units.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

HashKey Key(char last = '0') {
  std::string hex = "00112233445566778899aabbccddeef";
  hex.push_back(last);
  return HashKey::FromHex(hex).value();
}

std::unique_ptr<Fingerprinter> Make(ChunkingParams p, const HashKey& key = Key()) {
  p.key_id = key.Id();
  auto f = Fingerprinter::Create(p, key);
  EXPECT_OK(f);
  return std::move(f).value();
}

ChunkingParams Params(UnitKind u, ChunkStrategy s, uint32_t k, SelectionKind sel) {
  ChunkingParams p;
  p.unit = u;
  if (u != UnitKind::kWord) {  // verification grams are word grams
    p.verify_k = 0;
    p.dense_chunks = 0;
  }
  p.strategy = s;
  p.k = k;
  p.selection = sel;
  return p;
}

std::vector<ChunkHash> Hashes(const Fingerprinter& f, std::string_view text) {
  DocumentFingerprint fp;
  EXPECT_OK(f.Fingerprint(text, &fp));
  std::vector<ChunkHash> out;
  for (const Chunk& c : fp.chunks) out.push_back(c.hash);
  return out;
}

// Deterministic pseudo-English: words drawn from a small vocabulary.
std::string RandomText(uint32_t words, uint32_t seed) {
  static const char* kVocab[] = {"river", "stone", "light", "market", "winter", "paper",
                                 "garden", "signal", "copper", "valley", "morning", "engine",
                                 "silver", "harbor", "forest", "letter", "window", "bridge"};
  std::mt19937 rng(seed);
  std::string s;
  for (uint32_t i = 0; i < words; ++i) {
    if (i) s += (rng() % 9 == 0) ? ". " : " ";
    s += kVocab[rng() % std::size(kVocab)];
    s += std::to_string(rng() % 50);  // make units mostly distinct
  }
  return s;
}

TEST(FingerprinterTest, CreateChecksParamsAndKey) {
  ChunkingParams p;
  p.key_id = "not-the-key";
  EXPECT_EQ(Fingerprinter::Create(p, Key()).status().code(),
            absl::StatusCode::kInvalidArgument);
  p.key_id = Key().Id();
  p.k = 0;
  EXPECT_FALSE(Fingerprinter::Create(p, Key()).ok());
}

TEST(FingerprinterTest, SameTextSameHashesOtherKeyOtherHashes) {
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 5, SelectionKind::kAll);
  const std::string text = RandomText(200, 1);
  auto a = Make(p), a2 = Make(p), b = Make(p, Key('1'));
  const auto ha = Hashes(*a, text);
  ASSERT_EQ(ha.size(), 196u);
  EXPECT_EQ(ha, Hashes(*a2, text));
  EXPECT_EQ(ha, Hashes(*a, text));
  const auto hb = Hashes(*b, text);
  std::set<ChunkHash> sa(ha.begin(), ha.end());
  for (ChunkHash h : hb) EXPECT_EQ(sa.count(h), 0u);
}

// What placing a passage in a registered text reads (engine/copy_detector.h): the same
// units and digest as the whole fingerprint, nothing else.
TEST(FingerprinterTest, UnitsOnlyGivesTheWholeFingerprintsUnitsAndDigest) {
  auto f = Make(ChunkingParams{});
  for (const std::string& text : {RandomText(700, 3), std::string("Caf\xC3\xA9  \xEF\xBC\xA1" "bc, d-e!"),
                                  std::string()}) {
    FingerprintOptions whole;
    whole.unit_spans = true;
    FingerprintOptions units;
    units.units_only = true;
    DocumentFingerprint a, b;
    ASSERT_OK(f->Fingerprint(text, &a, whole));
    ASSERT_OK(f->Fingerprint(text, &b, units));
    ASSERT_EQ(a.units.size(), b.units.size());
    for (size_t i = 0; i < a.units.size(); ++i) {
      EXPECT_EQ(a.units[i].start, b.units[i].start);
      EXPECT_EQ(a.units[i].end, b.units[i].end);
    }
    EXPECT_EQ(a.sha256, b.sha256);
    EXPECT_EQ(a.total_units, b.total_units);
    EXPECT_TRUE(b.chunks.empty());
    EXPECT_TRUE(b.grams.empty());
  }
}

TEST(SipHashTest, U64FormMatchesByteForm) {
  // The chunk-hash finalization must be plain SipHash-2-4 of 8 little-endian bytes.
  const uint64_t m = 0x0123456789abcdefULL;
  const char bytes[8] = {'\xef', '\xcd', '\xab', '\x89', '\x67', '\x45', '\x23', '\x01'};
  EXPECT_EQ(internal::SipHash24U64(7, 11, m), internal::SipHash24(7, 11, bytes, 8));
  // Reference vector of the SipHash paper: key 00..0f, message 00..07.
  const char msg[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const uint64_t k0 = 0x0706050403020100ULL, k1 = 0x0f0e0d0c0b0a0908ULL;
  EXPECT_EQ(internal::SipHash24(k0, k1, msg, 8), 0x93f5f5799a932462ULL);
  EXPECT_EQ(internal::SipHash24U64(k0, k1, 0x0706050403020100ULL), 0x93f5f5799a932462ULL);
}

TEST(SipHashTest, PairFormMatchesTwoSingleCalls) {
  // Chunks are finalized two at a time with one odd one out: a chunk's hash must not depend
  // on which of the two forms it went through (its index parity).
  uint64_t m = 1;
  for (int i = 0; i < 64; ++i) {
    m = m * 0x9E3779B97F4A7C15ULL + 1;  // a simple LCG walk over 64-bit messages
    uint64_t a = m, b = ~m;
    const uint64_t want_a = internal::SipHash24U64(5, 9, a);
    const uint64_t want_b = internal::SipHash24U64(5, 9, b);
    internal::SipHash24U64x2(5, 9, &a, &b);
    EXPECT_EQ(a, want_a);
    EXPECT_EQ(b, want_b);
  }
}

TEST(FingerprinterTest, ChunkHashDependsOnWordsOrderAndBoundaries) {
  // Chunk hashes are derived from per-unit hashes: word order and word boundaries must
  // still count, and so must the number of units.
  auto f = Make(Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 3, SelectionKind::kAll));
  const auto abc = Hashes(*f, "alpha beta gamma");
  ASSERT_EQ(abc.size(), 1u);
  EXPECT_NE(abc, Hashes(*f, "beta alpha gamma"));
  EXPECT_NE(abc, Hashes(*f, "alphabeta gamma"));
  EXPECT_NE(Hashes(*f, "ab cd"), Hashes(*f, "a bcd"));
  auto one = Make(Params(UnitKind::kWord, ChunkStrategy::kOneUnit, 1, SelectionKind::kAll));
  const auto units = Hashes(*one, "alpha alpha beta");
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0], units[1]);
  EXPECT_NE(units[0], units[2]);
  EXPECT_NE(Hashes(*f, "alpha alpha"), Hashes(*f, "alpha"));
}

TEST(FingerprinterTest, HashedBreakpointsDependOnTheKey) {
  const std::string text = RandomText(400, 3);
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kHashedBreakpoints, 5,
                            SelectionKind::kAll);
  auto spans = [&](const HashKey& key) {
    auto f = Make(p, key);
    DocumentFingerprint fp;
    EXPECT_OK(f->Fingerprint(text, &fp));
    std::vector<uint32_t> ends;
    for (const Chunk& c : fp.chunks) ends.push_back(c.unit_end);
    return ends;
  };
  EXPECT_EQ(spans(Key()), spans(Key()));
  EXPECT_NE(spans(Key()), spans(Key('1')));
}

TEST(FingerprinterTest, CosmeticVariantsYieldSameChunks) {
  const std::string base = "The copper bridge crossed a quiet valley near the old harbor town";
  const std::vector<std::string> variants = {
      "THE COPPER BRIDGE CROSSED A QUIET VALLEY NEAR THE OLD HARBOR TOWN",
      "The   copper\tbridge\n crossed a quiet valley,  near the old harbor town.",
      "The cop\u200Bper bridge cro\u00ADssed a quiet val\u200Dley near the old harbor town",
      "The copper bridge crossed \u0430 quiet v\u0430lley ne\u0430r the \u043Eld h\u0430rbor town",
      "\uFEFFThe copper bridge crossed a quiet valley near the old harbor town\u200E",
  };
  for (ChunkStrategy s : {ChunkStrategy::kOneUnit, ChunkStrategy::kNonOverlapping,
                          ChunkStrategy::kOverlapping, ChunkStrategy::kHashedBreakpoints}) {
    auto f = Make(Params(UnitKind::kWord, s, 3, SelectionKind::kAll));
    const auto want = Hashes(*f, base);
    ASSERT_FALSE(want.empty());
    for (const std::string& v : variants) EXPECT_EQ(Hashes(*f, v), want) << v;
  }
}

TEST(FingerprinterTest, InsertingAUnitShiftsOnlyNonOverlapping) {
  const std::string text = RandomText(400, 2);
  const std::string shifted = "inserted " + text;
  auto shared = [&](ChunkStrategy s) {
    auto f = Make(Params(UnitKind::kWord, s, 4, SelectionKind::kAll));
    const auto a = Hashes(*f, text);
    const auto b = Hashes(*f, shifted);
    std::set<ChunkHash> sb(b.begin(), b.end());
    size_t common = 0;
    for (ChunkHash h : a) common += sb.count(h);
    return static_cast<double>(common) / a.size();
  };
  EXPECT_GT(shared(ChunkStrategy::kOverlapping), 0.99);
  EXPECT_GT(shared(ChunkStrategy::kHashedBreakpoints), 0.95);
  EXPECT_LT(shared(ChunkStrategy::kNonOverlapping), 0.05);
}

TEST(FingerprinterTest, ChunkSpansMapBackToOriginalBytes) {
  const std::string text = "Ünïcödé wörds\u200B here. Sö\u00ADft hyphen ände 3.14 done";
  auto f = Make(Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 2, SelectionKind::kAll));
  DocumentFingerprint fp;
  ASSERT_OK(f->Fingerprint(text, &fp));
  ASSERT_EQ(fp.chunks.size(), 7u);  // 8 words -> 7 word pairs
  auto span = [&](int i) {
    return text.substr(fp.chunks[i].start, fp.chunks[i].end - fp.chunks[i].start);
  };
  EXPECT_EQ(span(0), "Ünïcödé wörds");
  EXPECT_EQ(span(1), "wörds\u200B here");
  EXPECT_EQ(span(3), "Sö\u00ADft hyphen");
  EXPECT_EQ(span(5), "ände 3.14");
  EXPECT_EQ(span(6), "3.14 done");
  EXPECT_EQ(fp.chunks[6].unit_begin, 6u);
  EXPECT_EQ(fp.chunks[6].unit_end, 8u);
  EXPECT_EQ(fp.total_units, 8u);
}

TEST(FingerprinterTest, EmptyAndInvalidInput) {
  auto f = Make(ChunkingParams());
  DocumentFingerprint fp;
  ASSERT_OK(f->Fingerprint("", &fp));
  EXPECT_TRUE(fp.chunks.empty());
  EXPECT_EQ(fp.total_units, 0u);
  ASSERT_OK(f->Fingerprint("\xff\xfe\xfd \xc0\xaf", &fp));
  EXPECT_TRUE(fp.chunks.empty());
  std::string garbage;
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) garbage.push_back(static_cast<char>(rng()));
  ASSERT_OK(f->Fingerprint(garbage, &fp));
  for (const Chunk& c : fp.chunks) {
    EXPECT_LE(c.start, c.end);
    EXPECT_LE(c.end, garbage.size());
  }
}

TEST(FingerprinterTest, Sha256IdentifiesCanonicalText) {
  auto f = Make(ChunkingParams());
  DocumentFingerprint a, b, c;
  ASSERT_OK(f->Fingerprint("Hello,   World", &a));
  ASSERT_OK(f->Fingerprint("hello world", &b));
  ASSERT_OK(f->Fingerprint("hello worlds", &c));
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_NE(a.sha256, c.sha256);
}

TEST(FingerprinterTest, WithoutContentDigestOnlyTheDigestIsLeftOut) {
  auto f = Make(ChunkingParams());
  const std::string text = "the quick brown fox jumps over the lazy dog again and again";
  DocumentFingerprint with, without;
  ASSERT_OK(f->Fingerprint(text, &with));
  FingerprintOptions o;
  o.content_digest = false;
  ASSERT_OK(f->Fingerprint(text, &without, o));
  EXPECT_NE(with.sha256, (std::array<uint8_t, 32>{}));
  EXPECT_EQ(without.sha256, (std::array<uint8_t, 32>{}));
  ASSERT_EQ(with.chunks.size(), without.chunks.size());
  for (size_t i = 0; i < with.chunks.size(); ++i) {
    EXPECT_EQ(with.chunks[i].hash, without.chunks[i].hash);
  }
  EXPECT_EQ(with.grams, without.grams);
  // A reused fingerprint keeps no digest of its previous text.
  ASSERT_OK(f->Fingerprint(text, &with, o));
  EXPECT_EQ(with.sha256, (std::array<uint8_t, 32>{}));
}

TEST(SelectionTest, ModPSelectsSameChunksInBothDocuments) {
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 3, SelectionKind::kModP);
  p.p = 5;
  auto f = Make(p);
  const std::string shared = RandomText(300, 3);
  const auto a = Hashes(*f, RandomText(100, 4) + " " + shared);
  const auto b = Hashes(*f, shared + " " + RandomText(100, 5));
  const auto s = Hashes(*f, shared);
  ASSERT_GT(s.size(), 20u);
  EXPECT_LT(s.size(), 150u);
  std::set<ChunkHash> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  size_t in_both = 0;
  for (ChunkHash h : s) in_both += sa.count(h) && sb.count(h);
  EXPECT_GE(in_both + 2, s.size());  // boundary chunks may differ
  for (ChunkHash h : s) EXPECT_EQ(h % 5, 0u);
}

TEST(SelectionTest, AShortTextKeepingEveryChunkMarksWhatTheSelectionKeeps) {
  for (SelectionKind sel : {SelectionKind::kWinnowing, SelectionKind::kModP, SelectionKind::kAll}) {
    ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 5, sel);
    auto f = Make(p);
    const std::string text = RandomText(300, 7);
    DocumentFingerprint all;
    ASSERT_OK(f->Fingerprint(text, &all, {.keep_all_chunks_up_to = 1000, .mark_selection = true}));
    ASSERT_EQ(all.chunks.size(), all.total_chunks);
    std::vector<ChunkHash> marked;
    for (uint32_t i : all.selection) marked.push_back(all.chunks[i].hash);
    EXPECT_EQ(marked, Hashes(*f, text)) << static_cast<int>(sel);
    // Without mark_selection, or when the selection is what is kept, nothing is marked.
    DocumentFingerprint plain;
    ASSERT_OK(f->Fingerprint(text, &plain, {.keep_all_chunks_up_to = 1000}));
    EXPECT_TRUE(plain.selection.empty());
    ASSERT_OK(f->Fingerprint(text, &plain, {.mark_selection = true}));
    EXPECT_TRUE(plain.selection.empty());
  }
}

TEST(SelectionTest, WinnowingGuaranteesAHashForLongMatches) {
  const uint32_t k = 4, w = 6;
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, k, SelectionKind::kWinnowing);
  p.w = w;
  auto f = Make(p);
  auto all = Make(Params(UnitKind::kWord, ChunkStrategy::kOverlapping, k, SelectionKind::kAll));
  for (uint32_t trial = 0; trial < 30; ++trial) {
    // Two unrelated documents sharing exactly one run of w + k - 1 words.
    const std::string run = RandomText(w + k - 1, 100 + trial);
    const std::string a = RandomText(60, 200 + trial) + " zz " + run + " zz " + RandomText(60, 300 + trial);
    const std::string b = RandomText(40, 400 + trial) + " yy " + run + " yy " + RandomText(70, 500 + trial);
    const auto ha = Hashes(*f, a), hb = Hashes(*f, b);
    std::set<ChunkHash> sb(hb.begin(), hb.end());
    bool shared = false;
    for (ChunkHash h : ha) shared = shared || sb.count(h);
    EXPECT_TRUE(shared) << "trial " << trial;
    // Density is about 2 / (w + 1).
    EXPECT_LT(ha.size(), Hashes(*all, a).size() / 2);
  }
}

TEST(SelectionTest, WinnowingKeepsTheRightmostMinimumOfEveryWindow) {
  // Repeated words give equal chunk hashes, so the tie rule (rightmost minimum) and the
  // window edges are exercised; the reference is the definition, window by window.
  std::mt19937 rng(11);
  for (uint32_t w : {1u, 2u, 3u, 8u}) {
    ChunkingParams p =
        Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 2, SelectionKind::kWinnowing);
    p.w = w;
    auto f = Make(p);
    auto all = Make(Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 2, SelectionKind::kAll));
    for (int trial = 0; trial < 40; ++trial) {
      std::string text;
      const int words = 1 + static_cast<int>(rng() % 40);
      for (int i = 0; i < words; ++i) {
        text += static_cast<char>('a' + rng() % 3);
        text += ' ';
      }
      DocumentFingerprint fa, fw;
      ASSERT_OK(all->Fingerprint(text, &fa));
      ASSERT_OK(f->Fingerprint(text, &fw));
      const size_t n = fa.chunks.size(), win = std::min<size_t>(w, n);
      std::vector<uint32_t> want;
      for (size_t i = win - 1; i < n; ++i) {
        size_t m = i + 1 - win;
        for (size_t j = m; j <= i; ++j) {
          if (fa.chunks[j].hash <= fa.chunks[m].hash) m = j;
        }
        if (want.empty() || want.back() != m) want.push_back(static_cast<uint32_t>(m));
      }
      std::vector<uint32_t> got;
      for (const Chunk& c : fw.chunks) got.push_back(c.ordinal);
      EXPECT_EQ(got, want) << "w " << w << " text \"" << text << "\"";
    }
  }
}

TEST(SelectionTest, OrdinalsCountAllChunks) {
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 5, SelectionKind::kModP);
  p.p = 3;
  auto f = Make(p);
  DocumentFingerprint fp;
  ASSERT_OK(f->Fingerprint(RandomText(500, 9), &fp));
  EXPECT_EQ(fp.total_chunks, 496u);
  for (size_t i = 1; i < fp.chunks.size(); ++i) {
    EXPECT_LT(fp.chunks[i - 1].ordinal, fp.chunks[i].ordinal);
    EXPECT_EQ(fp.chunks[i].unit_begin, fp.chunks[i].ordinal);
  }
}

TEST(FingerprinterTest, SentenceUnitsIgnoreFormatting) {
  auto f = Make(Params(UnitKind::kSentence, ChunkStrategy::kOneUnit, 1, SelectionKind::kAll));
  const auto a = Hashes(*f, "Dr. Who flew. The U.S. agreed! Fine");
  const auto b = Hashes(*f, "dr who flew.\n\nthe u.s. AGREED!  fine");
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b);
}

TEST(FingerprinterTest, LookalikeLettersOfEveryScriptAndCaseLeaveTheChunksUnchanged) {
  // A licence text with the letters of every other word swapped for Greek and Cyrillic
  // look-alikes, capitals included ("Τhese", "GENERΑL"): every chunk must stay the same.
  const std::string original =
      "THESE TERMS AND CONDITIONS apply to the GENERAL PUBLIC LICENSE. By using, copying or "
      "modifying the Program you accept them. This Program is distributed in the hope that "
      "it will be useful, but WITHOUT ANY WARRANTY; without even the implied warranty of "
      "MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. Keep a copy of the notice.";
  const std::vector<std::pair<char, std::string>> lookalikes = {
      {'A', "\u0391"}, {'B', "\u0392"}, {'E', "\u0395"}, {'H', "\u0397"}, {'I', "\u0399"},
      {'K', "\u039A"}, {'M', "\u039C"}, {'N', "\u039D"}, {'O', "\u039F"}, {'P', "\u03A1"},
      {'T', "\u03A4"}, {'X', "\u03A7"}, {'Y', "\u03A5"}, {'C', "\u0421"}, {'a', "\u0430"},
      {'e', "\u0435"}, {'o', "\u043E"}, {'p', "\u0440"}, {'c', "\u0441"}, {'x', "\u0445"},
      {'y', "\u0443"}};
  std::string disguised;
  int word = 0;
  bool in_word = false;
  for (char c : original) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c));
    if (letter && !in_word) ++word;
    in_word = letter;
    std::string out(1, c);
    if (letter && word % 2 == 1) {
      for (const auto& [from, to] : lookalikes) {
        if (c == from) out = to;
      }
    }
    disguised += out;
  }
  ASSERT_NE(disguised, original);
  ChunkingParams p = Params(UnitKind::kWord, ChunkStrategy::kOverlapping, 3,
                            SelectionKind::kAll);
  auto f = Make(p);
  DocumentFingerprint a, b;
  ASSERT_OK(f->Fingerprint(original, &a));
  ASSERT_OK(f->Fingerprint(disguised, &b));
  ASSERT_EQ(a.chunks.size(), b.chunks.size());
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    EXPECT_EQ(a.chunks[i].hash, b.chunks[i].hash) << "chunk " << i;
  }
  EXPECT_EQ(a.grams, b.grams);
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

ChunkingParams StemParams(uint32_t sample) {
  ChunkingParams p;
  p.stem_pairs = sample;
  p.stem_version = kStemPairsVersion;
  p.key_id = Key().Id();
  return p;
}

std::vector<uint32_t> Pairs(const Fingerprinter& f, std::string_view text) {
  DocumentFingerprint fp;
  EXPECT_OK(f.Fingerprint(text, &fp));
  return fp.stem_pairs;
}

std::vector<uint32_t> Common(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

TEST(StemPairsFingerprintTest, StopWordsAndInflectionsDoNotChangeThePairs) {
  auto f = Make(StemParams(1));
  const std::vector<uint32_t> a = Pairs(*f, "The gardeners flushed the lines and checked emitters.");
  EXPECT_EQ(a.size(), 4u);  // gardener-flush, flush-line, line-check, check-emitter
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(Pairs(*f, "A gardener is flushing all of its lines, then checks the EMITTER"), a);
  EXPECT_NE(Pairs(*f, "The gardeners checked emitters and flushed the lines."), a);  // order
  EXPECT_TRUE(Pairs(*f, "the and of it").empty());
  EXPECT_TRUE(Pairs(*f, "gardeners").empty());
  // Keyed: the same text under another key gives other pairs.
  auto g = Make(StemParams(1), Key('1'));
  EXPECT_TRUE(Common(Pairs(*g, "The gardeners flushed the lines and checked emitters."), a).empty());
  // Without stem_pairs none are made.
  EXPECT_TRUE(Pairs(*Make(ChunkingParams{}), "gardeners flushed lines").empty());
}

TEST(StemPairsFingerprintTest, EveryStopWordIsLeftOutOfThePairsAndNoOtherWordIs) {
  auto f = Make(StemParams(1));
  const std::vector<uint32_t> two = Pairs(*f, "gardeners flushed");
  ASSERT_EQ(two.size(), 1u);
  for (const std::string& w : CanonicalStopWords()) {
    EXPECT_EQ(Pairs(*f, "gardeners " + w + " flushed"), two) << w;
    // In upper case too: canonicalization folds it to the listed word.
    std::string upper = w;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(Pairs(*f, "gardeners " + upper + " flushed"), two) << upper;
  }
  // Content words spelled like stop words with a letter more or less stay: two pairs.
  for (const char* w : {"theme", "andes", "wills", "thes", "ourselve"}) {
    EXPECT_EQ(Pairs(*f, std::string("gardeners ") + w + " flushed").size(), 2u) << w;
  }
}

TEST(StemPairsFingerprintTest, PairsInTextOrderAreTheSamePairsAtTheirFirstOccurrence) {
  auto f = Make(StemParams(1));
  DocumentFingerprint one, pair_at_a_time;
  // gardener-flush, flush-line, line-check, check-emitter, emitter-gardener, gardener-flush
  // again (not listed twice), flush-pump.
  ASSERT_OK(f->Fingerprint("Gardeners flushed lines, checked emitters; gardeners flushed pumps",
                           &one));
  ASSERT_EQ(one.stem_pairs.size(), 6u);
  std::vector<uint32_t> sorted = one.stem_pair_order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, one.stem_pairs);  // the same pairs, each once
  // Each text's pairs, one at a time, give the order.
  for (const char* text : {"gardeners flushed", "flushed lines", "lines checked",
                           "checked emitters", "emitters gardeners", "flushed pumps"}) {
    ASSERT_OK(f->Fingerprint(text, &pair_at_a_time));
    ASSERT_EQ(pair_at_a_time.stem_pairs.size(), 1u) << text;
    sorted.push_back(pair_at_a_time.stem_pairs[0]);
  }
  EXPECT_EQ(std::vector<uint32_t>(sorted.begin() + 6, sorted.end()), one.stem_pair_order);
}

TEST(StemPairsFingerprintTest, SampledPairsAreTheSameInEveryTextThatHoldsThem) {
  std::string a, b;
  for (int i = 0; i < 400; ++i) a += "alpha" + std::to_string(i) + " ";
  for (int i = 200; i < 600; ++i) b += "alpha" + std::to_string(i) + " ";  // half shared
  auto all = Make(StemParams(1));
  auto sampled = Make(StemParams(4));
  const std::vector<uint32_t> a1 = Pairs(*all, a), b1 = Pairs(*all, b);
  const std::vector<uint32_t> a4 = Pairs(*sampled, a), b4 = Pairs(*sampled, b);
  EXPECT_EQ(a1.size(), 399u);
  // A quarter kept (a binomial draw of 399: within 5 standard deviations of 100).
  EXPECT_GT(a4.size(), 57u);
  EXPECT_LT(a4.size(), 143u);
  EXPECT_EQ(Common(a4, a1), a4);  // a sample of the same pairs
  // A pair both texts hold is kept in both or in neither: the shared sample is the sample of
  // the shared pairs.
  const std::vector<uint32_t> shared = Common(a1, b1);
  EXPECT_EQ(shared.size(), 199u);
  EXPECT_EQ(Common(a4, b4), Common(a4, shared));
  EXPECT_EQ(Common(a4, b4), Common(b4, shared));
  EXPECT_FALSE(Common(a4, b4).empty());
}

// A check makes only the pairs it looks up (FingerprintOptions::max_stem_pairs): a cap of
// distinct pairs out of the text's own, the same ones each time, chosen by a keyed fold (under
// another key another cap), in text order; a text with no more pairs than the cap, or an index
// that samples its pairs, keeps them all.
TEST(StemPairsFingerprintTest, ACappedTextMakesAnEvenKeyedSubsetOfItsPairs) {
  std::string text;
  for (int i = 0; i < 600; ++i) text += "alpha" + std::to_string(i % 450) + " ";  // repeats
  auto f = Make(StemParams(1));
  FingerprintOptions capped;
  capped.max_stem_pairs = 100;
  DocumentFingerprint all, some, again;
  ASSERT_OK(f->Fingerprint(text, &all));
  ASSERT_OK(f->Fingerprint(text, &some, capped));
  ASSERT_OK(f->Fingerprint(text, &again, capped));
  ASSERT_EQ(all.stem_pairs.size(), 450u);  // 449 + the pair closing the cycle
  EXPECT_EQ(some.stem_pairs.size(), 100u);
  EXPECT_TRUE(std::is_sorted(some.stem_pairs.begin(), some.stem_pairs.end()));
  EXPECT_EQ(Common(some.stem_pairs, all.stem_pairs), some.stem_pairs);
  EXPECT_EQ(again.stem_pairs, some.stem_pairs);
  // Not the smallest stored hashes (the uncapped check's choice): another keyed order.
  EXPECT_NE(some.stem_pairs,
            std::vector<uint32_t>(all.stem_pairs.begin(), all.stem_pairs.begin() + 100));
  // The order is the uncapped order with the others left out.
  std::vector<uint32_t> order;
  for (uint32_t pair : all.stem_pair_order) {
    if (std::binary_search(some.stem_pairs.begin(), some.stem_pairs.end(), pair)) {
      order.push_back(pair);
    }
  }
  EXPECT_EQ(some.stem_pair_order, order);
  // Keyed: another key keeps another share of the same text's pairs. Compared by position in
  // the text (the pairs' values differ with the key): which of the 450 pairs are kept.
  auto g = Make(StemParams(1), Key('1'));
  DocumentFingerprint all_g, some_g;
  ASSERT_OK(g->Fingerprint(text, &all_g));
  ASSERT_OK(g->Fingerprint(text, &some_g, capped));
  auto kept_positions = [](const DocumentFingerprint& whole, const DocumentFingerprint& part) {
    std::vector<size_t> kept;
    for (size_t i = 0; i < whole.stem_pair_order.size(); ++i) {
      if (std::binary_search(part.stem_pairs.begin(), part.stem_pairs.end(),
                             whole.stem_pair_order[i])) {
        kept.push_back(i);
      }
    }
    return kept;
  };
  EXPECT_EQ(kept_positions(all_g, some_g).size(), 100u);
  EXPECT_NE(kept_positions(all_g, some_g), kept_positions(all, some));
  // Under the cap, or with sampled pairs (stem_pairs = 4), the cap changes nothing.
  capped.max_stem_pairs = 450;
  ASSERT_OK(f->Fingerprint(text, &some, capped));
  EXPECT_EQ(some.stem_pairs, all.stem_pairs);
  EXPECT_EQ(some.stem_pair_order, all.stem_pair_order);
  auto sampled = Make(StemParams(4));
  capped.max_stem_pairs = 10;
  ASSERT_OK(sampled->Fingerprint(text, &all));
  ASSERT_OK(sampled->Fingerprint(text, &some, capped));
  EXPECT_GT(all.stem_pairs.size(), 10u);
  EXPECT_EQ(some.stem_pairs, all.stem_pairs);
}

// The pairs are stored in indexes: a change in which pairs a text yields is an index format
// change (kStemPairsVersion). These values were taken from the first implementation; a
// rewrite for speed must give them again. The text repeats words (as prose does), mixes
// stop words, inflections, capitals, digits, long and non-ASCII words.
TEST(StemPairsFingerprintTest, PairsOfAFixedTextAreThoseOfTheFirstImplementation) {
  const char* const words[] = {
      "The",      "gardeners", "flushed",   "lines",    "and",         "checked",
      "emitters", "of",        "studies",   "running",  "STOPPED",     "reaches",
      "it",       "public",    "licenses",  "source",   "code",        "internationalization",
      "café",     "naïve",     "x",         "is",       "happily",     "moved",
      "42",       "themselves", "classes",  "buses",    "analysis",    "falling"};
  std::string text;
  uint64_t state = 7;
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    text += words[(state >> 33) % std::size(words)];
    text += (state >> 20) % 11 == 0 ? ". " : " ";
  }
  auto checksum = [](const std::vector<uint32_t>& pairs) {
    uint64_t h = 1469598103934665603ULL;
    for (uint32_t v : pairs) h = (h ^ v) * 1099511628211ULL;
    return h;
  };
  const std::vector<uint32_t> all = Pairs(*Make(StemParams(1)), text);
  const std::vector<uint32_t> sampled = Pairs(*Make(StemParams(3)), text);
  EXPECT_EQ(all.size(), 564u);
  EXPECT_EQ(checksum(all), 1811066444525556800u);
  EXPECT_EQ(sampled.size(), 170u);
  EXPECT_EQ(checksum(sampled), 4519474821877665395u);
}

}  // namespace
}  // namespace cops
