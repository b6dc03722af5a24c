#ifndef COPS_ENGINE_PIPELINE_H_
#define COPS_ENGINE_PIPELINE_H_

// The steps of the register and check pipelines that need no index, shared by the server's
// CopyDetector (engine/copy_detector.h), `cops compare` (client/compare.h) and the
// evaluation (eval/evaluator.h), so that each runs the server's steps and not a copy:
//
//   ValidateInput -> Convert -> RegisterPrint / CheckPrint -> MapToOriginal
//   (a check: exclusions found in the converted text, mapped too, plus AddMarkupQuotes;
//   and FindTextManipulation).
//
// A library of its own (cops_pipeline: core and the in-process converters, no storage), so
// the client and the evaluation link it without RocksDB.
//
// Thread-safety: free functions over their arguments.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "convert/converter.h"
#include "core/exclusions.h"
#include "core/fingerprint.h"
#include "core/manipulation.h"
#include "core/match.h"

namespace cops {

// INVALID_ARGUMENT for an empty document or a format outside DocumentFormat;
// RESOURCE_EXHAUSTED above `max_bytes` (the message names both sizes).
absl::Status ValidateInput(std::string_view content, DocumentFormat format, uint64_t max_bytes);

// What a registration stores of converted `text`: every chunk (RegisterFingerprintOptions).
absl::Status RegisterPrint(const Fingerprinter& fingerprinter, std::string_view text,
                           DocumentFingerprint* fp);

// What a check under `check` looks up of converted `text` (CheckFingerprintOptions: unit
// spans, short texts in full; at most check.stem_pair_max_lookups content-stem pairs, 0 =
// all; the short lines when check.revision_share asks for heavy revisions), then, when
// 0 < sample_size < the chunks found, a sample of sample_size chunks drawn with
// `sample_seed` (SampleChunks).
absl::Status CheckPrint(const Fingerprinter& fingerprinter, std::string_view text,
                        uint32_t sample_size, uint64_t sample_seed, const CheckOptions& check,
                        DocumentFingerprint* fp);

// Chunk offsets come out of the fingerprinter in bytes of the converted text; reports and
// postings speak in bytes of the document as sent (`input_size` bytes). Maps the chunks and
// units of `fp` and, when not null, `excluded`.
void MapToOriginal(const ConvertedDocument& converted, size_t input_size, DocumentFingerprint* fp,
                   std::vector<ExcludedRange>* excluded = nullptr);

// The text manipulation of a checked document: FindManipulation() over the converted text,
// then the hidden text the converter found (ConvertedDocument::hidden), ranges mapped as
// MapToOriginal maps spans.
std::vector<Manipulation> FindTextManipulation(const ConvertedDocument& converted,
                                               size_t input_size);

// With `quotes`, adds the block quotes whose markers the converter of `format` dropped
// (Markdown '>' lines, HTML <blockquote>), found in the `original` bytes; then normalizes
// `excluded` (NormalizeRanges), in any case.
void AddMarkupQuotes(std::string_view original, DocumentFormat format, bool quotes,
                     std::vector<ExcludedRange>* excluded);

}  // namespace cops

#endif  // COPS_ENGINE_PIPELINE_H_
