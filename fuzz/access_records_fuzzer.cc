// libFuzzer entry for the access store's record decoders (storage/access_records.h): the
// principals, API keys, collections, audit records and usage counters that authentication
// and quotas read back. The first byte picks the record kind; the rest is the value, as a
// damaged access store would hand it over. A malformed value must be a status, never a crash
// or undefined behaviour (a number outside its field's type included); a value that decodes
// must encode to a value that decodes to the same record. Seeds: fuzz/fuzz_seeds.cc
// ("access_records"), records the encoders wrote.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "storage/access_records.h"

namespace {

namespace records = cops::access_records;

// Decode, encode, decode again: the second encoding equals the first.
template <typename Decode, typename Encode>
void RoundTrip(std::string_view value, Decode decode, Encode encode) {
  auto first = decode(value);
  if (!first.ok()) {
    if (first.status().code() != absl::StatusCode::kDataLoss) std::abort();
    return;
  }
  const std::string encoded = encode(*first);
  auto second = decode(encoded);
  if (!second.ok() || encode(*second) != encoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: RoundTrip(value, records::DecodePrincipal, records::EncodePrincipal); break;
    case 1: RoundTrip(value, records::DecodeKey, records::EncodeKey); break;
    case 2: RoundTrip(value, records::DecodeCollection, records::EncodeCollection); break;
    case 3: RoundTrip(value, records::DecodeAudit, records::EncodeAudit); break;
    default: RoundTrip(value, records::DecodeUsage, records::EncodeUsage); break;
  }
  return 0;
}
