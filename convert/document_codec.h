#ifndef COPS_CONVERT_DOCUMENT_CODEC_H_
#define COPS_CONVERT_DOCUMENT_CODEC_H_

// The byte protocol between Convert() and the worker process (same machine, same build:
// native byte order, no versioning beyond a magic tag).
//   request  = "COPSCVT1" format:u8 limits options input-bytes...   (input runs to its end)
//   response = 'D' document | 'E' code:u32 message
// Each travels as one frame, length:u64 then the bytes, so that a worker process can serve
// one request (convert/sandbox.h) or many in turn (convert/worker_pool.h) on one socket.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "convert/converter.h"

namespace cops {

struct ConvertRequest {
  DocumentFormat format = DocumentFormat::kAuto;
  ConvertLimits limits;
  ConvertOptions options;
  std::string_view input;  // points into the buffer given to DecodeRequest
};

// The request header; the input bytes follow it on the stream.
std::string EncodeRequestHeader(DocumentFormat format, const ConvertLimits& limits,
                                const ConvertOptions& options);
// Parses header + input. INVALID_ARGUMENT when malformed.
absl::StatusOr<ConvertRequest> DecodeRequest(std::string_view bytes);

// The frame prefix of a payload of `payload_bytes` bytes.
std::string EncodeFrameLength(uint64_t payload_bytes);
// The payload length a frame starting at `bytes` announces; nullopt for fewer than 8 bytes.
std::optional<uint64_t> DecodeFrameLength(std::string_view bytes);

std::string EncodeResponse(const absl::StatusOr<ConvertedDocument>& result);
// The worker's result: the document or the error it reported. INTERNAL when `bytes` is
// not a well-formed response.
absl::StatusOr<ConvertedDocument> DecodeResponse(std::string_view bytes);

}  // namespace cops

#endif  // COPS_CONVERT_DOCUMENT_CODEC_H_
