#ifndef COPS_CORE_SIPHASH_H_
#define COPS_CORE_SIPHASH_H_

// Inline SipHash-2-4 (Aumasson & Bernstein), 64-bit output. Internal to core: the hot path
// hashes every unit and chunk, so it must not pay a call into a library per input.
//
// Thread-safety: pure function.

#include <cstdint>
#include <cstring>
#include <string_view>

namespace cops::internal {

inline uint64_t Rotl64(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t LoadLe64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

#define COPS_SIPROUND_                                    \
  do {                                                    \
    v0 += v1; v1 = Rotl64(v1, 13); v1 ^= v0; v0 = Rotl64(v0, 32); \
    v2 += v3; v3 = Rotl64(v3, 16); v3 ^= v2;              \
    v0 += v3; v3 = Rotl64(v3, 21); v3 ^= v0;              \
    v2 += v1; v1 = Rotl64(v1, 17); v1 ^= v2; v2 = Rotl64(v2, 32); \
  } while (0)

inline uint64_t SipHash24(uint64_t k0, uint64_t k1, const char* data, size_t len) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
  uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
  uint64_t v3 = 0x7465646279746573ULL ^ k1;
  const char* end = data + (len & ~size_t{7});
  for (const char* p = data; p != end; p += 8) {
    uint64_t m = LoadLe64(p);
    v3 ^= m;
    COPS_SIPROUND_;
    COPS_SIPROUND_;
    v0 ^= m;
  }
  uint64_t b = static_cast<uint64_t>(len) << 56;
  const unsigned char* t = reinterpret_cast<const unsigned char*>(end);
  switch (len & 7) {
    case 7: b |= uint64_t{t[6]} << 48; [[fallthrough]];
    case 6: b |= uint64_t{t[5]} << 40; [[fallthrough]];
    case 5: b |= uint64_t{t[4]} << 32; [[fallthrough]];
    case 4: b |= uint64_t{t[3]} << 24; [[fallthrough]];
    case 3: b |= uint64_t{t[2]} << 16; [[fallthrough]];
    case 2: b |= uint64_t{t[1]} << 8; [[fallthrough]];
    case 1: b |= uint64_t{t[0]}; break;
    case 0: break;
  }
  v3 ^= b;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  v0 ^= b;
  v2 ^= 0xff;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  return v0 ^ v1 ^ v2 ^ v3;
}

// SipHash24(k0, k1, m as 8 little-endian bytes): one message block, then the length block.
inline uint64_t SipHash24U64(uint64_t k0, uint64_t k1, uint64_t m) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
  uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
  uint64_t v3 = 0x7465646279746573ULL ^ k1;
  v3 ^= m;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  v0 ^= m;
  const uint64_t b = uint64_t{8} << 56;
  v3 ^= b;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  v0 ^= b;
  v2 ^= 0xff;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  COPS_SIPROUND_;
  return v0 ^ v1 ^ v2 ^ v3;
}

// SipHash24U64 of two messages at once: the two dependency chains interleave, so the
// core runs them in parallel (one SipHash is a long chain of dependent rounds).
inline void SipHash24U64x2(uint64_t k0, uint64_t k1, uint64_t* m0, uint64_t* m1) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0, w0 = v0;
  uint64_t v1 = 0x646f72616e646f6dULL ^ k1, w1 = v1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0, w2 = v2;
  uint64_t v3 = 0x7465646279746573ULL ^ k1, w3 = v3;
#define COPS_SIPROUND2_                                                          \
  do {                                                                           \
    v0 += v1; w0 += w1; v1 = Rotl64(v1, 13); w1 = Rotl64(w1, 13);               \
    v1 ^= v0; w1 ^= w0; v0 = Rotl64(v0, 32); w0 = Rotl64(w0, 32);               \
    v2 += v3; w2 += w3; v3 = Rotl64(v3, 16); w3 = Rotl64(w3, 16);               \
    v3 ^= v2; w3 ^= w2;                                                          \
    v0 += v3; w0 += w3; v3 = Rotl64(v3, 21); w3 = Rotl64(w3, 21);               \
    v3 ^= v0; w3 ^= w0;                                                          \
    v2 += v1; w2 += w1; v1 = Rotl64(v1, 17); w1 = Rotl64(w1, 17);               \
    v1 ^= v2; w1 ^= w2; v2 = Rotl64(v2, 32); w2 = Rotl64(w2, 32);               \
  } while (0)
  v3 ^= *m0;
  w3 ^= *m1;
  COPS_SIPROUND2_;
  COPS_SIPROUND2_;
  v0 ^= *m0;
  w0 ^= *m1;
  const uint64_t b = uint64_t{8} << 56;
  v3 ^= b;
  w3 ^= b;
  COPS_SIPROUND2_;
  COPS_SIPROUND2_;
  v0 ^= b;
  w0 ^= b;
  v2 ^= 0xff;
  w2 ^= 0xff;
  COPS_SIPROUND2_;
  COPS_SIPROUND2_;
  COPS_SIPROUND2_;
  COPS_SIPROUND2_;
#undef COPS_SIPROUND2_
  *m0 = v0 ^ v1 ^ v2 ^ v3;
  *m1 = w0 ^ w1 ^ w2 ^ w3;
}

#undef COPS_SIPROUND_

}  // namespace cops::internal

#endif  // COPS_CORE_SIPHASH_H_
