// core/scratch.h and the per-thread buffers that follow it: after a call on a huge input the
// thread keeps no more than the limit, so memory per handler thread does not grow to the
// largest document it ever saw.

#include "core/scratch.h"

#include <malloc.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/fingerprint.h"
#include "core/hash_key.h"
#include "core/verify.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

TEST(ReleaseIfLargeTest, KeepsSmallBuffersAndReleasesLargeOnes) {
  std::vector<uint64_t> small;
  small.reserve(kScratchKeepBytes / sizeof(uint64_t));
  small.push_back(1);
  ReleaseIfLarge(&small);
  EXPECT_EQ(small.size(), 1u);  // at the limit: kept as it is
  EXPECT_EQ(small.capacity(), kScratchKeepBytes / sizeof(uint64_t));

  std::vector<uint64_t> large(kScratchKeepBytes / sizeof(uint64_t) + 1);
  ReleaseIfLarge(&large);
  EXPECT_TRUE(large.empty());
  EXPECT_EQ(large.capacity(), 0u);

  std::string text(100, 'x');
  ReleaseIfLarge(&text, /*keep_bytes=*/64);
  EXPECT_TRUE(text.empty());
}

TEST(ReleaseIfLargeTest, NestedVectorsCountTheirElements) {
  // 16 inner vectors of 128 KiB: the outer vector is small, what it holds is 2 MiB.
  std::vector<std::vector<uint64_t>> lists(16, std::vector<uint64_t>(16384));
  auto inner_bytes = [](const std::vector<uint64_t>& l) { return l.capacity() * sizeof(uint64_t); };
  ReleaseNestedIfLarge(&lists, inner_bytes, /*keep_bytes=*/4u << 20);
  EXPECT_EQ(lists.size(), 16u);  // below the limit: kept
  ReleaseNestedIfLarge(&lists, inner_bytes);
  EXPECT_TRUE(lists.empty());
  EXPECT_EQ(lists.capacity(), 0u);
}

// Heap bytes in use (glibc): small blocks plus mmapped ones.
size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

bool HeapIsMeasurable() {
#if defined(__SANITIZE_ADDRESS__)
  return false;  // the sanitizer's allocator does not report through mallinfo2
#else
  return true;
#endif
}

constexpr size_t kHuge = 4u << 20;

// A fingerprinter whose thread buffers a small document has already warmed up (nullptr on
// failure).
std::unique_ptr<Fingerprinter> WarmFingerprinter() {
  const HashKey key = HashKey::FromHex("00112233445566778899aabbccddeeff").value();
  ChunkingParams params;
  params.key_id = key.Id();
  auto fingerprinter = Fingerprinter::Create(params, key);
  if (!fingerprinter.ok()) return nullptr;
  DocumentFingerprint fp;
  if (!(*fingerprinter)->Fingerprint("A small document warms the buffers up.", &fp).ok()) {
    return nullptr;
  }
  return std::move(*fingerprinter);
}

// Distinct words, a sentence every 12, up to `bytes`.
std::string Words(size_t bytes) {
  std::string text;
  for (uint32_t i = 0; text.size() < bytes; ++i) {
    text += "word" + std::to_string(i) + (i % 12 == 11 ? ". " : " ");
  }
  return text;
}
constexpr size_t kMaxRetained = 2u << 20;

TEST(ScratchTest, FingerprintingAHugeDocumentLeavesTheThreadSmall) {
  if (!HeapIsMeasurable()) GTEST_SKIP() << "no heap statistics under AddressSanitizer";
  std::unique_ptr<Fingerprinter> fingerprinter = WarmFingerprinter();
  ASSERT_NE(fingerprinter, nullptr);
  FingerprintOptions options;
  options.unit_spans = true;
  const std::string huge = Words(kHuge);
  const size_t before = HeapInUse();
  {
    DocumentFingerprint big;
    ASSERT_TRUE(fingerprinter->Fingerprint(huge, &big, options).ok());
    EXPECT_GT(big.total_units, 300'000u);
  }
  EXPECT_LT(HeapInUse(), before + kMaxRetained);
}

TEST(ScratchTest, FingerprintingAMidSizedDocumentLeavesTheThreadSmall) {
  if (!HeapIsMeasurable()) GTEST_SKIP() << "no heap statistics under AddressSanitizer";
  std::unique_ptr<Fingerprinter> fingerprinter = WarmFingerprinter();
  ASSERT_NE(fingerprinter, nullptr);
  // 512 KiB: each buffer stays below kScratchKeepBytes, all of them together do not.
  const std::string text = Words(512u << 10);
  const size_t before = HeapInUse();
  {
    DocumentFingerprint mid;
    FingerprintOptions options;
    options.unit_spans = true;
    ASSERT_TRUE(fingerprinter->Fingerprint(text, &mid, options).ok());
    EXPECT_GT(mid.total_units, 50'000u);
  }
  EXPECT_LT(HeapInUse(), before + kMaxRetained);
}

TEST(ScratchTest, VerifyingAHugeDocumentLeavesTheThreadSmall) {
  if (!HeapIsMeasurable()) GTEST_SKIP() << "no heap statistics under AddressSanitizer";
  std::vector<uint32_t> grams(kHuge / sizeof(uint64_t));  // pairs of 8 bytes each
  std::iota(grams.begin(), grams.end(), 1000);
  const size_t before = HeapInUse();
  {
    TestGrams test;
    test.Build(grams);
    Verification v;
    Verify(test, grams, VerifyOptions(), &v);
    EXPECT_EQ(v.matched_test_grams, grams.size());
  }
  EXPECT_LT(HeapInUse(), before + kMaxRetained);
}

}  // namespace
}  // namespace cops
