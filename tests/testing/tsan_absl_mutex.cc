// ThreadSanitizer builds only (cmake -DCOPS_SANITIZE=thread; linked into every test binary by
// tests/CMakeLists.txt). Debian's Abseil is compiled without TSan, so absl::Mutex locks and
// unlocks with atomics and futexes inside libabsl_synchronization.so that TSan never sees: it
// then reports every access an absl::Mutex guards as a data race (a two-thread counter under
// a MutexLock is enough). The definitions below interpose the library's Mutex and CondVar
// entry points (an executable's definition wins over a shared library's), call the library's
// own through dlsym(RTLD_NEXT), and announce each lock and unlock with TSan's mutex
// annotations, as Abseil does when it is built with TSan: accesses between pre_ and post_ are
// ignored, which covers the Conditions that absl::Mutex evaluates inside Unlock on behalf of
// waiters. Nothing else changes: the library does the locking.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

#if !defined(ABSL_OPTION_USE_INLINE_NAMESPACE) || ABSL_OPTION_USE_INLINE_NAMESPACE != 1
#error "tsan_absl_mutex.cc names Debian 12's Abseil symbols (inline namespace debian3)"
#endif

namespace {

// The library's definition of `mangled` (a member function, `this` first).
template <typename Fn>
Fn Real(const char* mangled) {
  void* fn = dlsym(RTLD_NEXT, mangled);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: %s not found in libabsl: %s\n", mangled, dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

#define COPS_ABSL(name) "_ZN4absl7debian3" name

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<void (*)(Mutex*)>(COPS_ABSL("5Mutex4LockEv"));
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<void (*)(Mutex*)>(COPS_ABSL("5Mutex10ReaderLockEv"));
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<bool (*)(Mutex*)>(COPS_ABSL("5Mutex7TryLockEv"));
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

bool Mutex::ReaderTryLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<bool (*)(Mutex*)>(COPS_ABSL("5Mutex13ReaderTryLockEv"));
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<void (*)(Mutex*)>(COPS_ABSL("5Mutex6UnlockEv"));
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<void (*)(Mutex*)>(COPS_ABSL("5Mutex12ReaderUnlockEv"));
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

namespace {

// A call of `real` that returns holding `mu` (`flags`: 0 or __tsan_mutex_read_lock).
template <typename Fn, typename... Args>
auto Locking(Mutex* mu, unsigned flags, Fn real, Args... args) {
  __tsan_mutex_pre_lock(mu, flags);
  auto result = real(mu, args...);
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

// A call of `real` (on `self`) that releases `mu` while it waits and holds it again on
// return: an unlock, then a lock.
template <typename Fn, typename Self, typename... Args>
auto Waiting(Mutex* mu, Fn real, Self* self, Args... args) {
  __tsan_mutex_pre_unlock(mu, 0);
  auto result = real(self, args...);
  __tsan_mutex_post_unlock(mu, 0);
  __tsan_mutex_pre_lock(mu, 0);
  __tsan_mutex_post_lock(mu, 0, 0);
  return result;
}

}  // namespace

void Mutex::LockWhen(const Condition& cond) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>(COPS_ABSL("5Mutex8LockWhenERKNS0_9ConditionE"));
  __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      COPS_ABSL("5Mutex14ReaderLockWhenERKNS0_9ConditionE"));
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this, cond);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

// Each ...WithTimeout below is its ...WithDeadline with the deadline now + timeout, as in
// the library, which calls its own ...WithDeadline through the PLT, so into the definition
// here: annotating both announced every wait's unlock twice ("unlock of an unlocked mutex",
// then false races on what the mutex guards).
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return LockWhenWithDeadline(cond, Now() + timeout);  // held either way
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      COPS_ABSL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  return Locking(this, 0, real, std::cref(cond), deadline);
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return ReaderLockWhenWithDeadline(cond, Now() + timeout);
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      COPS_ABSL("5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  return Locking(this, __tsan_mutex_read_lock, real, std::cref(cond), deadline);
}

// Await and CondVar::Wait release the mutex while they wait and hold it again on return.
void Mutex::Await(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>(COPS_ABSL("5Mutex5AwaitERKNS0_9ConditionE"));
  __tsan_mutex_pre_unlock(this, 0);
  real(this, cond);
  __tsan_mutex_post_unlock(this, 0);
  __tsan_mutex_pre_lock(this, 0);
  __tsan_mutex_post_lock(this, 0, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  return AwaitWithDeadline(cond, Now() + timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      COPS_ABSL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  return Waiting(this, real, this, std::cref(cond), deadline);
}

void CondVar::Wait(Mutex* mu) {
  static const auto real =
      Real<void (*)(CondVar*, Mutex*)>(COPS_ABSL("7CondVar4WaitEPNS0_5MutexE"));
  __tsan_mutex_pre_unlock(mu, 0);
  real(this, mu);
  __tsan_mutex_post_unlock(mu, 0);
  __tsan_mutex_pre_lock(mu, 0);
  __tsan_mutex_post_lock(mu, 0, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  return WaitWithDeadline(mu, Now() + timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      COPS_ABSL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"));
  return Waiting(mu, real, this, mu, deadline);
}

ABSL_NAMESPACE_END
}  // namespace absl
