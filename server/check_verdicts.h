#ifndef COPS_SERVER_CHECK_VERDICTS_H_
#define COPS_SERVER_CHECK_VERDICTS_H_

// Checks answered, by verdict, and violating checks by the evidence that decided them, for
// the metrics (server/metrics.h: cops_checks_total, cops_check_violations_total): an operator
// who turns on heavy revisions (copsd --heavy-revisions) or content-stem pairs sees how often
// each decides, beside the shared passages.
//
// Thread-safety: Count() and Read() from any thread.

#include <atomic>
#include <cstdint>

#include "proto/cops.pb.h"

namespace cops {

struct CheckVerdicts {
  uint64_t clean = 0;
  uint64_t violation = 0;
  // Violating checks with a violating match decided by its shared passages (chunks), its
  // content-stem pairs, its ordered 3-grams (a heavy revision): a check may count under
  // several kinds, once each.
  uint64_t by_chunks = 0;
  uint64_t by_stem_pairs = 0;
  uint64_t by_heavy_revision = 0;
};

class CheckVerdictCounter {
 public:
  // Counts one answered check.
  void Count(const v1::CheckDocumentReply& reply);
  CheckVerdicts Read() const;

 private:
  std::atomic<uint64_t> clean_{0};
  std::atomic<uint64_t> violation_{0};
  std::atomic<uint64_t> by_chunks_{0};
  std::atomic<uint64_t> by_stem_pairs_{0};
  std::atomic<uint64_t> by_heavy_revision_{0};
};

}  // namespace cops

#endif  // COPS_SERVER_CHECK_VERDICTS_H_
