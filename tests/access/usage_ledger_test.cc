#include "access/usage_ledger.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

class UsageLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  // A new ledger (and store) over the same directory, as after a restart.
  void Reopen() {
    ledger_.reset();
    store_.reset();
    ASSERT_OK_AND_ASSIGN(store_, PrincipalStore::Open(dir_.Join("access")));
    UsageLedgerOptions options;
    options.now_micros = [this] { return now_; };
    ledger_ = std::make_unique<UsageLedger>(store_.get(), options);
  }

  static Principal Owner(std::string name, uint64_t max_documents, uint64_t max_bytes = 0) {
    Principal p{std::move(name), Role::kOwner, {"acm"}, {}};
    p.limits.max_documents = max_documents;
    p.limits.max_bytes = max_bytes;
    return p;
  }

  UsageRecord Stored(const std::string& name) {
    auto usage = store_->GetUsage(name);
    EXPECT_OK(usage);
    return usage.ok() ? *usage : UsageRecord{};
  }

  testing::TempDir dir_{"ledger"};
  int64_t now_ = 1'700'000'000'000'000;
  std::unique_ptr<PrincipalStore> store_;
  std::unique_ptr<UsageLedger> ledger_;
};

TEST_F(UsageLedgerTest, RateLimitRefillsWithTime) {
  Principal p{"gateway", Role::kChecker, {"acm"}, {}};
  p.limits.requests_per_second = 2;
  p.limits.burst = 3;
  for (int i = 0; i < 3; ++i) EXPECT_OK(ledger_->Reserve(p, {})) << i;
  absl::Status limited = ledger_->Reserve(p, {}).status();
  EXPECT_TRUE(absl::IsResourceExhausted(limited)) << limited;
  now_ += 500'000;  // half a second at 2/s: one token back
  EXPECT_OK(ledger_->Reserve(p, {}));
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(p, {}).status()));
  now_ += 60'000'000;  // a long pause refills only up to the burst
  for (int i = 0; i < 3; ++i) EXPECT_OK(ledger_->Reserve(p, {})) << i;
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(p, {}).status()));
  // Another principal has its own bucket.
  Principal other{"other", Role::kChecker, {"acm"}, {}};
  EXPECT_OK(ledger_->Reserve(other, {}));
}

TEST_F(UsageLedgerTest, CommittedUsageCountsAgainstQuotasAndPersists) {
  Principal docs = Owner("small", /*max_documents=*/2);
  for (int i = 0; i < 2; ++i) {
    auto r = ledger_->Reserve(docs, {1, 100});
    ASSERT_OK(r);
    r->Commit();
  }
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(docs, {1, 100}).status()));
  EXPECT_OK(ledger_->Reserve(docs, {}));  // operations without a cost are not quota'd
  EXPECT_EQ(Stored("small").documents, 2u);
  EXPECT_EQ(Stored("small").bytes, 200u);

  Principal bytes = Owner("bytes", 0, /*max_bytes=*/1000);
  ledger_->Reserve(bytes, {1, 900})->Commit();
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(bytes, {1, 200}).status()));
  ledger_->Reserve(bytes, {1, 100})->Commit();
  EXPECT_EQ(Stored("bytes").bytes, 1000u);

  Reopen();  // usage is persistent
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(docs, {1, 1}).status()));
}

TEST_F(UsageLedgerTest, ReleasedReservationUsesNoQuota) {
  Principal p = Owner("small", /*max_documents=*/1);
  {
    auto r = ledger_->Reserve(p, {1, 10});
    ASSERT_OK(r);
    r->Release();
  }
  {
    auto r = ledger_->Reserve(p, {1, 10});
    ASSERT_OK(r);
  }  // neither committed nor released: the destructor releases
  EXPECT_EQ(Stored("small").documents, 0u);
  auto last = ledger_->Reserve(p, {1, 10});
  ASSERT_OK(last);
  last->Commit();
  last->Release();  // after a commit, nothing is left to release
  EXPECT_EQ(Stored("small").documents, 1u);
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(p, {1, 10}).status()));
}

TEST_F(UsageLedgerTest, ReservationsInProgressCannotOvershootTogether) {
  Principal p = Owner("small", /*max_documents=*/2);
  auto a = ledger_->Reserve(p, {1, 0});
  auto b = ledger_->Reserve(p, {1, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(ledger_->Reserve(p, {1, 0}).status()));
  auto account = ledger_->AccountOf("small");
  ASSERT_OK(account);
  EXPECT_EQ(account->reserved.documents, 2u);
  EXPECT_EQ(account->committed.documents, 0u);
  a->Release();  // e.g. a duplicate
  auto c = ledger_->Reserve(p, {1, 0});
  EXPECT_OK(c);
}

TEST_F(UsageLedgerTest, MovedReservationSettlesOnce) {
  Principal p = Owner("small", /*max_documents=*/1);
  auto r = ledger_->Reserve(p, {1, 5});
  ASSERT_OK(r);
  Reservation moved = *std::move(r);
  Reservation target;
  target = std::move(moved);
  target.Commit();
  moved.Release();  // moved-from: holds nothing
  EXPECT_EQ(Stored("small").documents, 1u);
  EXPECT_EQ(ledger_->AccountOf("small")->reserved.documents, 0u);
}

TEST_F(UsageLedgerTest, UnlimitedPrincipalIsNeitherLimitedNorCounted) {
  Principal local{"local", Role::kAdmin, {}, {}};
  local.limits.unlimited = true;
  local.limits.burst = 1;
  local.limits.max_documents = 1;
  for (int i = 0; i < 10; ++i) {
    auto r = ledger_->Reserve(local, {1, 100});
    ASSERT_OK(r);
    r->Commit();
  }
  EXPECT_EQ(Stored("local").documents, 0u);
}

}  // namespace
}  // namespace cops
