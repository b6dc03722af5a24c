#ifndef COPS_ENGINE_KEY_ROTATION_PROGRESS_H_
#define COPS_ENGINE_KEY_ROTATION_PROGRESS_H_

// The progress of a rotation of the chunk-hashing key (server/index_generations.h), as the
// Admin service reports it.
//
// Thread-safety: plain value type.

#include <cstdint>
#include <string>

namespace cops {

// on-wire: values equal v1::KeyRotationState (proto/cops_admin.proto); do not change.
enum class KeyRotationState {
  kIdle = 1,        // no rotation since the server started
  kRebuilding = 2,  // the new generation is being built from the stored texts
  kSwitching = 3,   // final catch-up under the registration lock, then the switch
  kDone = 4,        // the last rotation switched; the old generation and key are gone
  kFailed = 5,      // the last rotation failed (see error); the old generation stays live
};

struct KeyRotationProgress {
  KeyRotationState state = KeyRotationState::kIdle;
  uint64_t generation = 0;  // the live generation's number
  std::string key_id;       // the live key's public id
  std::string new_key_id;   // the key being (or last) rotated to; empty when idle
  uint64_t documents_done = 0;   // re-keyed or found present in the new generation
  uint64_t documents_total = 0;  // documents in the live generation when the rotation began
  uint64_t documents_dropped = 0;  // documents without stored text, dropped on request
  std::string error;               // why the last rotation failed
};

}  // namespace cops

#endif  // COPS_ENGINE_KEY_ROTATION_PROGRESS_H_
