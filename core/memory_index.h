#ifndef COPS_CORE_MEMORY_INDEX_H_
#define COPS_CORE_MEMORY_INDEX_H_

// An in-memory index with the semantics of storage/index.h (postings ordered by doc_id then
// ordinal, doc_frequency = distinct documents, verification grams per document): the
// detection pipeline (core/detect.h) over documents that are not registered. The evaluation
// sweeps parameter settings with it without a RocksDB round trip; `cops compare`
// (client/compare.h) compares a batch with itself through it. Memory: about 24 bytes per
// stored chunk (plus the hash table's) and 4 bytes per verification gram (one per word).
//
// Thread-safety: not thread-safe while registering; the CandidateSource reads are safe
// concurrently once registration is done.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/detect.h"
#include "core/fingerprint.h"
#include "core/match.h"

namespace cops {

class MemoryIndex final : public CandidateSource {
 public:
  // REQUIRES: ids increase from call to call (keeps postings ordered).
  void Register(DocId id, const DocumentFingerprint& fp);

  // out->at(i) holds the postings of hashes[i] (empty when unknown).
  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override;
  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override;
  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override;

  absl::StatusOr<bool> LookupStemPairs(std::span<const uint32_t> pairs, uint32_t max_documents,
                                       std::vector<std::vector<DocId>>* out) const override;
  absl::Status ReadStemPairOrder(std::span<const DocId> ids,
                                 std::vector<std::vector<uint32_t>>* out) const override;

  // Stored (selected) chunks of a registered document; 0 when unknown.
  uint32_t StoredChunks(DocId id) const;

  uint64_t stored_chunks() const { return stored_; }  // over all documents
  uint64_t total_chunks() const { return total_; }    // before selection
  uint64_t grams() const { return grams_; }           // verification grams, all documents

 private:
  std::unordered_map<ChunkHash, PostingList> postings_;
  std::unordered_map<DocId, uint32_t> stored_per_doc_;
  std::unordered_map<DocId, uint64_t> digest_per_doc_;  // CandidateRecord::text_digest
  std::unordered_map<DocId, std::vector<uint32_t>> grams_per_doc_;
  // Content-stem pair -> the documents holding it, ascending; `stem_pairs_` is set when a
  // document registered with pairs (an index that keeps them).
  std::unordered_map<uint32_t, std::vector<DocId>> pair_holders_;
  std::unordered_map<DocId, std::vector<uint32_t>> pair_order_;  // in each text's order
  bool stem_pairs_ = false;
  uint64_t stored_ = 0;
  uint64_t total_ = 0;
  uint64_t grams_ = 0;
};

}  // namespace cops

#endif  // COPS_CORE_MEMORY_INDEX_H_
