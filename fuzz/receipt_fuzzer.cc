// libFuzzer entry for registration receipts (core/receipt.h), which `cops receipt verify`
// reads from files anyone may hand it: receipt files, payloads, signatures and PEM keys.
// The first byte picks the parser; the rest is its input. Errors are INVALID_ARGUMENT; a
// payload that decodes is canonical (it encodes back to the same bytes), and a receipt that
// verifies was signed by the fuzzer's key over exactly its payload. Seeds: fuzz/fuzz_seeds.cc
// ("receipt"), receipt files, payloads and keys as copsd writes them.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/receipt.h"

namespace {

void Require(bool invariant) {
  if (!invariant) std::abort();
}

const cops::SigningKey& Key() {
  static const cops::SigningKey* key = [] {
    auto k = cops::SigningKey::Generate();
    if (!k.ok()) std::abort();
    return new cops::SigningKey(*std::move(k));
  }();
  return *key;
}

void RequireInvalidArgument(const absl::Status& status) {
  Require(status.ok() || status.code() == absl::StatusCode::kInvalidArgument);
}

void Payload(std::string_view payload) {
  auto fields = cops::DecodeReceiptPayload(payload);
  RequireInvalidArgument(fields.status());
  if (!fields.ok()) return;
  Require(cops::EncodeReceiptPayload(*fields) == payload);
  // Whatever decodes can be signed and verified again.
  auto signed_receipt = cops::SignReceipt(Key(), *fields);
  Require(signed_receipt.ok());
  const std::vector<cops::VerifyingKey> keys = {Key().verifying_key()};
  auto verified = cops::VerifyReceipt(*signed_receipt, keys);
  Require(verified.ok());
  cops::ReceiptFields expected = *fields;
  expected.signing_key_id = Key().verifying_key().id();
  Require(*verified == expected);
}

// A receipt file; when it parses, verified against the fuzzer's key: only a payload this
// key signed may verify.
void File(std::string_view text) {
  auto receipt = cops::DecodeReceiptFile(text);
  RequireInvalidArgument(receipt.status());
  if (!receipt.ok()) return;
  (void)cops::EncodeReceiptFile(*receipt);
  const std::vector<cops::VerifyingKey> keys = {Key().verifying_key()};
  auto verified = cops::VerifyReceipt(*receipt, keys);
  RequireInvalidArgument(verified.status());
  if (verified.ok()) {
    Require(Key().verifying_key().Verify(receipt->payload, receipt->signature));
  }
}

// A receipt given field by field: key id, signature and payload, NUL-separated.
void Parts(std::string_view in) {
  cops::SignedReceipt receipt;
  const size_t a = in.find('\0');
  receipt.key_id = std::string(in.substr(0, a));
  if (a != std::string_view::npos) {
    in.remove_prefix(a + 1);
    const size_t b = in.find('\0');
    receipt.signature = std::string(in.substr(0, b));
    if (b != std::string_view::npos) receipt.payload = std::string(in.substr(b + 1));
  }
  const std::vector<cops::VerifyingKey> keys = {Key().verifying_key()};
  RequireInvalidArgument(cops::VerifyReceipt(receipt, keys).status());
}

void Pem(std::string_view pem) {
  auto keys = cops::ParseVerifyingKeys(pem);
  RequireInvalidArgument(keys.status());
  if (keys.ok()) {
    for (const cops::VerifyingKey& k : *keys) {
      auto again = cops::VerifyingKey::FromPem(k.ToPem());
      Require(again.ok() && again->id() == k.id());
    }
  }
  auto private_key = cops::SigningKey::FromPem(pem);
  RequireInvalidArgument(private_key.status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: Payload(in); break;
    case 1: File(in); break;
    case 2: Parts(in); break;
    default: Pem(in); break;
  }
  return 0;
}
