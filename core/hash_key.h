#ifndef COPS_CORE_HASH_KEY_H_
#define COPS_CORE_HASH_KEY_H_

// The deployment's secret key for the keyed chunk hash (SipHash-2-4). Whoever lacks it
// cannot predict chunk hashes, which chunks are kept, or where breakpoints fall.
//
// Thread-safety: immutable value type.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cops {

class HashKey {
 public:
  static constexpr size_t kSize = 16;  // bytes

  // INVALID_ARGUMENT unless `bytes` is exactly kSize bytes.
  static absl::StatusOr<HashKey> FromBytes(std::string_view bytes);
  // Parses 32 hex digits (the key file format). INVALID_ARGUMENT otherwise.
  static absl::StatusOr<HashKey> FromHex(std::string_view hex);

  std::string ToHex() const;
  // Public identifier of the key: first 8 bytes of SHA-256("cops-key-id" || key), hex.
  // Safe to log and to store in the index; reveals nothing usable about the key.
  std::string Id() const;

  uint64_t k0() const { return k0_; }
  uint64_t k1() const { return k1_; }

 private:
  HashKey(uint64_t k0, uint64_t k1) : k0_(k0), k1_(k1) {}
  uint64_t k0_;
  uint64_t k1_;
};

// SipHash-2-4 of `data` under `key` (inline; no library call per chunk).
uint64_t KeyedHash(const HashKey& key, std::string_view data);

// SHA-256 of `data` (OpenSSL), 32 raw bytes.
std::array<uint8_t, 32> Sha256(std::string_view data);
// The same as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace cops

#endif  // COPS_CORE_HASH_KEY_H_
