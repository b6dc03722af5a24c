#ifndef COPS_STORAGE_CODEC_H_
#define COPS_STORAGE_CODEC_H_

// Byte encodings of everything the index writes to disk (internal to storage/). The layout
// is described as prose in docs/storage-format.md; every tag below has a fixed value.
//
// Thread-safety: stateless functions.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/match.h"
#include "storage/document_record.h"

namespace cops::storage_codec {

// Current on-disk schema, recorded in the meta column family. Bump it whenever a format
// below changes incompatibly; an index with a newer schema is refused at open, one older than
// kSchemaVersionBase is upgraded by a writable open (docs/storage-format.md, "Compatibility").
//   1: the duplicate map (column family "sha256") keyed by the canonical text's SHA-256.
//   2: the duplicate map keyed by (collection, SHA-256).
//   3: document records may carry an expiry and a not-before time
//      (DocumentRecord::expires_unix_micros, not_before_unix_micros) and the meta family
//      holds their `expiry/` entries. Recorded in the write batch of the first such document,
//      not at open: builds of schema 2 keep opening an index that never used lifetimes, and
//      refuse one they would misread (they would report expired and embargoed documents).
//   4: the postings are bucketed by hash prefix (storage/bucket_codec.h) in the "buckets"
//      families, their layout under the meta key "postings_buckets". Recorded when an index is
//      created so, or by the upgrade that rewrites a schema-2/3 index's postings
//      (Index::UpgradePostings); an index of schema 2 or 3 keeps its per-hash postings.
//   5: a document may have no chunk list ("doc_chunks"): its hashes are recomputed from its
//      stored text at removal (IndexOptions::chunk_recomputer). Recorded in the write batch
//      of the first such document, as 3 is: a build before it would fail every removal of
//      one with DATA_LOSS. Says nothing of the postings' layout (the meta key
//      "postings_buckets" does).
//   6: the bucketed postings of such a document carry no positions (one per hash, ordinal,
//      start and end 0) when the index verifies (ChunkingParams::verify_k > 0): a check
//      places its reported passages in the stored text's units instead
//      (engine/copy_detector.h). They are written under the tag
//      bucket_codec::kBucketValuePositionless, which a build before it fails to decode.
//      Recorded in the write batch of the first such document.
// on-disk: do not change the numbers.
inline constexpr uint32_t kSchemaVersion = 6;
inline constexpr uint32_t kSchemaVersionBase = 2;  // new indexes; writable opens upgrade to it
inline constexpr uint32_t kSchemaVersionLifetimes = 3;
inline constexpr uint32_t kSchemaVersionBuckets = 4;
inline constexpr uint32_t kSchemaVersionRecomputedChunks = 5;
inline constexpr uint32_t kSchemaVersionPositionlessPostings = 6;

// Leading byte of a document record value. on-disk: do not change.
inline constexpr uint8_t kDocumentRecordV1 = 1;

// Leading byte of a postings merge operand. on-disk: do not change.
enum class PostingOp : uint8_t {
  kAdd = 1,     // the postings of one document for this chunk
  kRemove = 2,  // the document is unregistered
};

// LEB128 varints, as in LevelDB.
void PutVarint64(std::string* dst, uint64_t v);
// Consumes a varint from the front of `in`; false on truncation or overlong input.
bool GetVarint64(std::string_view* in, uint64_t* v);
void PutLengthPrefixed(std::string* dst, std::string_view s);
bool GetLengthPrefixed(std::string_view* in, std::string_view* s);

// 8-byte big-endian: keys sort numerically (documents in id order).
void PutFixed64BE(std::string* dst, uint64_t v);
void EncodeFixed64BE(char* dst, uint64_t v);  // writes dst[0..8)
uint64_t DecodeFixed64BE(const char* p);
std::string ChunkKey(ChunkHash hash);
std::string DocKey(DocId id);

// A posting list value: doc frequency, then per document (ascending ids, delta-coded) its
// postings (ascending ordinals, delta-coded; start zigzag-delta-coded; length = end - start).
// REQUIRES: list.postings ordered by (doc_id, ordinal).
std::string EncodePostingList(const PostingList& list);
// DATA_LOSS on a malformed value.
absl::Status DecodePostingList(std::string_view value, PostingList* out);

// Merge operands for the postings column family.
// REQUIRES: postings ordered by ordinal, all with doc_id == doc.
std::string EncodeAddOperand(DocId doc, std::span<const Posting> postings);
// EncodeAddOperand appended to `dst`: a caller writing many operands reuses one buffer.
void AppendAddOperand(std::string* dst, DocId doc, std::span<const Posting> postings);
std::string EncodeRemoveOperand(DocId doc);

// Applies `operands` in order to `existing` (nullopt = no value yet) and writes the new
// value to `out`. An add for a document already listed is ignored (idempotent); an add
// that would grow the list beyond `max_postings` (0 = no limit) only counts the document
// in doc_frequency. A remove drops the document's postings, or, for a document counted
// but not listed, only decrements doc_frequency. False on a malformed value or operand.
bool MergePostings(const std::optional<std::string_view>& existing,
                   std::span<const std::string_view> operands, uint32_t max_postings,
                   std::string* out);

// Appends expiry and not-before (zigzag varints) only when one is set, so that records
// without them keep the layout of the first revision.
std::string EncodeDocumentRecord(const DocumentRecord& record);
// `id` comes from the key. DATA_LOSS on a malformed value or an unknown record tag.
absl::Status DecodeDocumentRecord(DocId id, std::string_view value, DocumentRecord* out);

// A document's verification grams (DocumentFingerprint::grams, kVerifyGramBits wide): tag
// byte 1, then each gram as 2 bytes little-endian, in unit order.
std::string EncodeGrams(std::span<const uint32_t> grams);
// DATA_LOSS on an unknown tag or a length that is not a whole number of grams.
absl::Status DecodeGrams(DocId id, std::string_view value, std::vector<uint32_t>* out);

}  // namespace cops::storage_codec

#endif  // COPS_STORAGE_CODEC_H_
