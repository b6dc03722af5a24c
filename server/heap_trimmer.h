#ifndef COPS_SERVER_HEAP_TRIMMER_H_
#define COPS_SERVER_HEAP_TRIMMER_H_

// Hands the heap's free pages back to the system once copsd has gone quiet after checks and
// registrations. glibc's malloc keeps what a thread freed in that thread's arena, so after a
// burst of large documents the process would keep the burst's peak for good (1.2-1.5 GB after
// 64 concurrent checks of 4 MB: docs/performance.md, "Overload").
//
// Every `period` the trimmer reads the admission counters (access/admission_control.h). Once
// a whole period has passed with no call admitted or refused and none is at work or waiting
// (the server has gone quiet), and calls came since its last trim, it trims, and once more a
// period later: a request's memory is freed after its call ends, and gRPC refuses some calls
// on its own. Under load, even light load with gaps between calls, it does nothing: a trim
// walks the whole heap (the block cache's blocks too) under the arenas' locks and would stall
// the calls. An idle server costs one look at the counters per period.
//
// Thread-safety: runs one thread of its own; Tick() may be called from any thread.

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "access/admission_control.h"

namespace cops {

struct HeapTrimmerOptions {
  // Between looks; absl::InfiniteDuration() starts no thread (tests call Tick()).
  absl::Duration period = absl::Seconds(1);
  std::function<AdmissionLoad()> load;  // the admission counters; REQUIRES: set
  std::function<void()> trim;           // returns free heap pages (copsd: malloc_trim(0))
};

class HeapTrimmer {
 public:
  explicit HeapTrimmer(HeapTrimmerOptions options);
  // Stops the thread (waits for a trim in progress).
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // One look: trims when due (see above). True when it trimmed.
  bool Tick();

 private:
  void Run();

  const HeapTrimmerOptions options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t looked_calls_ ABSL_GUARDED_BY(mu_) = 0;   // admitted + refused at the last look
  uint64_t trimmed_calls_ ABSL_GUARDED_BY(mu_) = 0;  // admitted + refused at the last trim
  bool follow_up_ ABSL_GUARDED_BY(mu_) = false;   // trim once more at the next quiet look
  std::thread thread_;
};

}  // namespace cops

#endif  // COPS_SERVER_HEAP_TRIMMER_H_
