#include "server/check_verdicts.h"

namespace cops {

void CheckVerdictCounter::Count(const v1::CheckDocumentReply& reply) {
  if (!reply.violation()) {
    clean_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  violation_.fetch_add(1, std::memory_order_relaxed);
  bool chunks = false, stem_pairs = false, heavy_revision = false;
  for (const v1::Match& m : reply.matches()) {
    if (!m.violation()) continue;
    chunks |= m.chunk_violation();
    stem_pairs |= m.stem_pair_violation();
    heavy_revision |= m.revision_violation();
  }
  if (chunks) by_chunks_.fetch_add(1, std::memory_order_relaxed);
  if (stem_pairs) by_stem_pairs_.fetch_add(1, std::memory_order_relaxed);
  if (heavy_revision) by_heavy_revision_.fetch_add(1, std::memory_order_relaxed);
}

CheckVerdicts CheckVerdictCounter::Read() const {
  return {.clean = clean_.load(std::memory_order_relaxed),
          .violation = violation_.load(std::memory_order_relaxed),
          .by_chunks = by_chunks_.load(std::memory_order_relaxed),
          .by_stem_pairs = by_stem_pairs_.load(std::memory_order_relaxed),
          .by_heavy_revision = by_heavy_revision_.load(std::memory_order_relaxed)};
}

}  // namespace cops
