#ifndef COPS_CLIENT_LOAD_GENERATOR_H_
#define COPS_CLIENT_LOAD_GENERATOR_H_

// `cops bench`: a load generator that registers synthetic documents and then checks
// synthetic messages against them over gRPC from many threads at once, and reports
// throughput and p50/p90/p99 latency of each phase. Documents are English-like text generated
// deterministically from the seed and their number, so runs are repeatable and nothing is
// kept in memory. Half of the checked messages (--copy-fraction) embed a passage copied from a
// registered document.
//
// Thread-safety: RunLoad runs its own worker threads; call it from one thread.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "client/client.h"

namespace CLI {
class App;
}

namespace cops {

struct LoadOptions {
  uint32_t documents = 1000;     // registered in the register phase (0 = skip it)
  uint32_t document_bytes = 4000;
  uint32_t checks = 1000;        // checks in the check phase (0 = skip it)
  // The first check's number: checks are numbered from here, so that runs with different
  // first checks send different messages (and copy different documents).
  uint32_t first_check = 0;
  uint32_t check_bytes = 20000;  // size of each checked message
  uint32_t concurrency = 4;      // client threads, each with its own calls in flight
  uint32_t connections = 1;      // TCP connections the threads take turns on
  double copy_fraction = 0.5;    // checked messages that embed a copied passage
  // Checks ask for heavy revisions (> 0), not (< 0) or leave it to copsd (0; it looks for them
  // unless --heavy-revisions=false): CheckOptions.heavy_revisions.
  int heavy_revisions = 0;
  uint64_t seed = 1;
  std::string collection = "bench";
  // Documents already registered by an earlier run with the same seed (checks copy from
  // documents [0, existing + documents)).
  uint32_t existing = 0;
  // > 0: register through RegisterDocuments streams of this many documents (the bulk path;
  // latency is then per stream); 0: one RegisterDocument call per document.
  uint32_t bulk = 0;
  bool receipts = true;  // false: registrations set omit_receipt (an import keeping none)
  bool json = false;
};

void AddLoadFlags(CLI::App* app, LoadOptions* options);

// Runs the phases over `clients` (client thread t calls clients[t % size]; REQUIRES: not
// empty) and prints one report line (or JSON object) per phase to `out`. False when any call
// failed (the failures are counted by status code in the report and the first is shown).
bool RunLoad(const std::vector<Client*>& clients, const LoadOptions& options, std::ostream& out);

// The deterministic English-like text of document `n` under `seed`, about `bytes` long.
std::string SyntheticText(uint64_t seed, uint64_t n, uint32_t bytes);

}  // namespace cops

#endif  // COPS_CLIENT_LOAD_GENERATOR_H_
