#ifndef COPS_ACCESS_USAGE_LEDGER_H_
#define COPS_ACCESS_USAGE_LEDGER_H_

// Rate limits and quotas: what each principal has used. A handler reserves before the
// operation runs and settles after it:
//
//   COPS_ASSIGN_OR_RETURN(Reservation usage, ledger.Reserve(principal, cost));
//   ... run the operation ...
//   if (it created something) usage.Commit();   // else the destructor releases
//
// Reserve() takes one token from the principal's token bucket (every operation counts
// against the rate, whether it then succeeds or not) and holds `cost` against its quotas, so
// that concurrent registrations cannot overshoot a quota together. Commit() charges the cost
// for good (the usage counters of the access store, docs/security.md); Release() gives it
// back, so a registration that fails or turns out to be a duplicate uses no quota.
//
// Thread-safety: safe for concurrent use. Token buckets and reservations live in memory under
// one mutex; committed usage is read from the store once per principal and written through
// on every Commit().

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "access/authorizer.h"
#include "engine/wall_clock.h"
#include "storage/principal_store.h"

namespace cops {

// What an operation counts against the quotas (a registration: 1 document and its content
// bytes; everything else: nothing, only the rate).
struct UsageCost {
  uint64_t documents = 0;
  uint64_t bytes = 0;
};

class UsageLedger;

// A cost held against a principal's quotas until Commit() or Release(). Move-only; the
// destructor releases what was neither committed nor released. Empty (default-constructed,
// or for an unlimited principal) it holds nothing and both calls do nothing.
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() { Release(); }

  // Charges the reserved cost to the principal's usage. A failure to persist it is logged;
  // the charge still holds in memory for the life of the ledger.
  void Commit();
  // Returns the reserved cost.
  void Release();

 private:
  friend class UsageLedger;
  Reservation(UsageLedger* ledger, std::string principal, UsageCost cost)
      : ledger_(ledger), principal_(std::move(principal)), cost_(cost) {}

  UsageLedger* ledger_ = nullptr;  // nullptr once settled
  std::string principal_;
  UsageCost cost_;
};

struct UsageLedgerOptions {
  // Rate limit of principals whose limits leave it at 0: a token bucket refilled at
  // `requests_per_second` holding at most `burst` tokens. Higher values serve bursty
  // gateways better and protect the index less.
  double default_requests_per_second = 200;
  uint32_t default_burst = 400;
  // Wall clock in microseconds since the epoch (replaceable for tests).
  std::function<int64_t()> now_micros = WallClockMicros;
};

class UsageLedger {
 public:
  // `store` is not owned and must outlive the ledger (and every Reservation it hands out).
  explicit UsageLedger(PrincipalStore* store, UsageLedgerOptions options = {});
  UsageLedger(const UsageLedger&) = delete;
  UsageLedger& operator=(const UsageLedger&) = delete;

  // Takes one rate token and reserves `cost` under principal.limits. RESOURCE_EXHAUSTED when
  // the bucket is empty or committed + reserved + cost would pass a quota (nothing is
  // reserved then); the store's error when its usage counters cannot be read. A principal
  // with limits.unlimited gets an empty reservation at once.
  absl::StatusOr<Reservation> Reserve(const Principal& principal, UsageCost cost);

  // What `principal` has committed and what it holds reserved right now.
  struct Account {
    UsageRecord committed;
    UsageRecord reserved;
  };
  absl::StatusOr<Account> AccountOf(std::string_view principal);

 private:
  friend class Reservation;
  struct Bucket {
    double tokens = 0;
    int64_t last_micros = 0;
  };

  absl::Status TakeToken(const Principal& principal) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Account*> AccountLocked(std::string_view principal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Settle(const std::string& principal, UsageCost cost, bool commit)
      ABSL_LOCKS_EXCLUDED(mu_);

  PrincipalStore* const store_;
  const UsageLedgerOptions options_;

  absl::Mutex mu_;
  std::map<std::string, Bucket, std::less<>> buckets_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Account, std::less<>> accounts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cops

#endif  // COPS_ACCESS_USAGE_LEDGER_H_
