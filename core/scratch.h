#ifndef COPS_CORE_SCRATCH_H_
#define COPS_CORE_SCRATCH_H_

// Per-thread scratch buffers (thread_local, in core/, server/ and storage/) keep their
// capacity between calls, so that a check or registration of a typical document allocates
// nothing on the hot path. After each call a buffer that grew beyond kScratchKeepBytes is
// released, so that one huge document does not pin its memory to a handler thread for the
// life of the thread. A typical document (64 KiB of text) stays well below the limit.
//
// Thread-safety: pure functions over the caller's buffers.

#include <cstddef>

namespace cops {

inline constexpr size_t kScratchKeepBytes = size_t{1} << 20;  // per buffer

// Releases the memory of `buffer` (a std::vector or std::string; it is left empty) when
// its capacity is above `keep_bytes`; otherwise leaves it as it is. The elements' own heap
// memory (of nested vectors) is not counted.
template <typename Buffer>
void ReleaseIfLarge(Buffer* buffer, size_t keep_bytes = kScratchKeepBytes) {
  if (buffer->capacity() * sizeof(typename Buffer::value_type) > keep_bytes) {
    Buffer().swap(*buffer);
  }
}

}  // namespace cops

#endif  // COPS_CORE_SCRATCH_H_
