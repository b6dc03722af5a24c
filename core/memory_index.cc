#include "core/memory_index.h"

namespace cops {

void MemoryIndex::Register(DocId id, const DocumentFingerprint& fp) {
  for (const Chunk& c : fp.chunks) {
    PostingList& list = postings_[c.hash];
    if (list.postings.empty() || list.postings.back().doc_id != id) ++list.doc_frequency;
    list.postings.push_back({id, c.ordinal, c.start, c.end});
  }
  stored_per_doc_[id] = static_cast<uint32_t>(fp.chunks.size());
  digest_per_doc_[id] = TextDigest(fp.sha256);
  if (!fp.grams.empty()) grams_per_doc_[id] = fp.grams;
  for (uint32_t pair : fp.stem_pairs) pair_holders_[pair].push_back(id);
  if (!fp.stem_pair_order.empty()) pair_order_[id] = fp.stem_pair_order;
  stem_pairs_ |= !fp.stem_pairs.empty();
  stored_ += fp.chunks.size();
  total_ += fp.total_chunks;
  grams_ += fp.grams.size();
}

absl::Status MemoryIndex::Lookup(std::span<const ChunkHash> hashes,
                                 std::vector<PostingList>* out) const {
  out->clear();
  out->resize(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto it = postings_.find(hashes[i]);
    if (it != postings_.end()) (*out)[i] = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemoryIndex::ReadCandidates(std::span<const DocId> ids,
                                         std::vector<CandidateRecord>* out) const {
  out->assign(ids.size(), CandidateRecord{});
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = stored_per_doc_.find(ids[i]);
    if (it == stored_per_doc_.end()) continue;
    (*out)[i] = CandidateRecord{true, it->second, false, digest_per_doc_.at(ids[i])};
  }
  return absl::OkStatus();
}

namespace {

// out->at(i) = what `per_doc` keeps for ids[i], empty when nothing.
void CopyPerDocument(const std::unordered_map<DocId, std::vector<uint32_t>>& per_doc,
                     std::span<const DocId> ids, std::vector<std::vector<uint32_t>>* out) {
  out->resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = per_doc.find(ids[i]);
    if (it == per_doc.end()) {
      (*out)[i].clear();
    } else {
      (*out)[i] = it->second;
    }
  }
}

}  // namespace

absl::Status MemoryIndex::ReadGrams(std::span<const DocId> ids,
                                    std::vector<std::vector<uint32_t>>* out) const {
  CopyPerDocument(grams_per_doc_, ids, out);
  return absl::OkStatus();
}

absl::StatusOr<bool> MemoryIndex::LookupStemPairs(std::span<const uint32_t> pairs,
                                                  uint32_t max_documents,
                                                  std::vector<std::vector<DocId>>* out) const {
  if (!stem_pairs_) return false;
  out->resize(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    (*out)[i].clear();
    auto it = pair_holders_.find(pairs[i]);
    if (it != pair_holders_.end() && it->second.size() < max_documents) (*out)[i] = it->second;
  }
  return true;
}

absl::Status MemoryIndex::ReadStemPairOrder(std::span<const DocId> ids,
                                            std::vector<std::vector<uint32_t>>* out) const {
  CopyPerDocument(pair_order_, ids, out);
  return absl::OkStatus();
}

uint32_t MemoryIndex::StoredChunks(DocId id) const {
  auto it = stored_per_doc_.find(id);
  return it == stored_per_doc_.end() ? 0 : it->second;
}

}  // namespace cops
