#include "access/usage_ledger.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace cops {

Reservation::Reservation(Reservation&& other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)),
      principal_(std::move(other.principal_)),
      cost_(other.cost_) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    ledger_ = std::exchange(other.ledger_, nullptr);
    principal_ = std::move(other.principal_);
    cost_ = other.cost_;
  }
  return *this;
}

void Reservation::Commit() {
  if (ledger_ == nullptr) return;
  std::exchange(ledger_, nullptr)->Settle(principal_, cost_, /*commit=*/true);
}

void Reservation::Release() {
  if (ledger_ == nullptr) return;
  std::exchange(ledger_, nullptr)->Settle(principal_, cost_, /*commit=*/false);
}

UsageLedger::UsageLedger(PrincipalStore* store, UsageLedgerOptions options)
    : store_(store), options_(std::move(options)) {}

absl::Status UsageLedger::TakeToken(const Principal& principal) {
  const UsageLimits& limits = principal.limits;
  const double rate = limits.requests_per_second > 0 ? limits.requests_per_second
                                                     : options_.default_requests_per_second;
  const double burst =
      std::max<double>(1, limits.burst > 0 ? limits.burst : options_.default_burst);
  const int64_t now = options_.now_micros();
  auto [it, inserted] = buckets_.try_emplace(principal.name, Bucket{burst, now});
  Bucket& b = it->second;
  if (!inserted && now > b.last_micros) {
    b.tokens = std::min(burst, b.tokens + rate * static_cast<double>(now - b.last_micros) / 1e6);
  }
  b.last_micros = std::max(b.last_micros, now);
  if (b.tokens < 1) {
    return absl::ResourceExhaustedError(
        fmt::format("principal '{}' exceeded its rate limit of {:g} requests per second (burst "
                    "{:g}); retry later",
                    principal.name, rate, burst));
  }
  b.tokens -= 1;
  return absl::OkStatus();
}

absl::StatusOr<UsageLedger::Account*> UsageLedger::AccountLocked(std::string_view principal) {
  auto it = accounts_.find(principal);
  if (it != accounts_.end()) return &it->second;
  // First use since start: the counters committed by earlier runs.
  absl::StatusOr<UsageRecord> stored = store_->GetUsage(principal);
  if (!stored.ok()) return stored.status();
  Account& account = accounts_[std::string(principal)];
  account.committed = *stored;
  return &account;
}

absl::StatusOr<Reservation> UsageLedger::Reserve(const Principal& principal, UsageCost cost) {
  if (principal.limits.unlimited) return Reservation();
  absl::MutexLock lock(&mu_);
  if (absl::Status token = TakeToken(principal); !token.ok()) return token;
  if (cost.documents == 0 && cost.bytes == 0) return Reservation();
  absl::StatusOr<Account*> account = AccountLocked(principal.name);
  if (!account.ok()) return account.status();
  UsageRecord& committed = (*account)->committed;
  UsageRecord& reserved = (*account)->reserved;
  const UsageLimits& limits = principal.limits;
  if (limits.max_documents != 0 &&
      committed.documents + reserved.documents + cost.documents > limits.max_documents) {
    return absl::ResourceExhaustedError(
        fmt::format("principal '{}' reached its quota of {} documents ({} registered, {} in "
                    "progress)",
                    principal.name, limits.max_documents, committed.documents,
                    reserved.documents));
  }
  if (limits.max_bytes != 0 &&
      committed.bytes + reserved.bytes + cost.bytes > limits.max_bytes) {
    return absl::ResourceExhaustedError(fmt::format(
        "principal '{}' would exceed its quota of {} bytes ({} used, {} in progress, {} more "
        "requested)",
        principal.name, limits.max_bytes, committed.bytes, reserved.bytes, cost.bytes));
  }
  reserved.documents += cost.documents;
  reserved.bytes += cost.bytes;
  return Reservation(this, principal.name, cost);
}

void UsageLedger::Settle(const std::string& principal, UsageCost cost, bool commit) {
  {
    absl::MutexLock lock(&mu_);
    // Present: Reserve() created the entry and entries are never erased.
    Account& account = accounts_[principal];
    account.reserved.documents -= cost.documents;
    account.reserved.bytes -= cost.bytes;
    if (!commit) return;
    account.committed.documents += cost.documents;
    account.committed.bytes += cost.bytes;
  }
  // Outside the lock: the store's read-modify-write is atomic and additions commute. The
  // quota is checked at Reserve(), so no limit is passed here.
  absl::StatusOr<UsageRecord> stored =
      store_->AddUsage(principal, cost.documents, cost.bytes, /*max_documents=*/0,
                       /*max_bytes=*/0);
  if (!stored.ok()) {
    spdlog::error("usage of principal '{}' (+{} documents, +{} bytes) not persisted: {}",
                  principal, cost.documents, cost.bytes, stored.status().ToString());
  }
}

absl::StatusOr<UsageLedger::Account> UsageLedger::AccountOf(std::string_view principal) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Account*> account = AccountLocked(principal);
  if (!account.ok()) return account.status();
  return **account;
}

}  // namespace cops
