#ifndef COPS_CORE_SCRATCH_H_
#define COPS_CORE_SCRATCH_H_

// Per-thread scratch buffers (thread_local, in core/, server/ and storage/) keep their
// capacity between calls, so that a check or registration of a typical document allocates
// nothing on the hot path. After each call a buffer that grew beyond kScratchKeepBytes is
// released, and a set of buffers used together (the fingerprinter's, the detector's) that
// grew beyond kScratchSetKeepBytes in all is released whole, so that one large document does
// not pin its memory to a handler thread for the life of the thread: what a thread keeps does
// not grow with the documents it saw. A typical document (64 KiB of text) stays well below
// both limits.
//
// Thread-safety: pure functions over the caller's buffers.

#include <cstddef>

namespace cops {

inline constexpr size_t kScratchKeepBytes = size_t{1} << 20;     // per buffer
inline constexpr size_t kScratchSetKeepBytes = size_t{4} << 20;  // per set of buffers

// The heap bytes `buffer` (a std::vector or std::string) holds: its capacity.
template <typename Buffer>
size_t CapacityBytes(const Buffer& buffer) {
  return buffer.capacity() * sizeof(typename Buffer::value_type);
}

// Releases the memory of `buffer` (a std::vector or std::string; it is left empty) when
// its capacity is above `keep_bytes`; otherwise leaves it as it is. The elements' own heap
// memory (of nested vectors) is not counted.
template <typename Buffer>
void ReleaseIfLarge(Buffer* buffer, size_t keep_bytes = kScratchKeepBytes) {
  if (CapacityBytes(*buffer) > keep_bytes) Buffer().swap(*buffer);
}

// ReleaseIfLarge for a vector whose elements own heap memory too (nested vectors):
// `owned_bytes(element)` is counted for each element with the vector's own capacity.
template <typename Buffer, typename OwnedBytes>
void ReleaseNestedIfLarge(Buffer* buffer, OwnedBytes owned_bytes,
                          size_t keep_bytes = kScratchKeepBytes) {
  size_t bytes = CapacityBytes(*buffer);
  for (const auto& element : *buffer) bytes += owned_bytes(element);
  if (bytes > keep_bytes) Buffer().swap(*buffer);
}

}  // namespace cops

#endif  // COPS_CORE_SCRATCH_H_
