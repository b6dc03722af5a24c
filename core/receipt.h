#ifndef COPS_CORE_RECEIPT_H_
#define COPS_CORE_RECEIPT_H_

// Signed registration receipts (docs/receipts.md): what a receipt states, its canonical
// encoding, and Ed25519 signing (libsodium) and verification (OpenSSL). Pure computation: keys
// come in and go out as PEM text, files are read and written by the callers (the server's
// ReceiptSigner, the `cops` command line).
//
// A receipt is three things: `payload`, the exact signed bytes (canonical JSON, below);
// `signature`, Ed25519 over those bytes (64 bytes); and `key_id`, naming the signing key.
// Whoever holds the server's public key checks it with any Ed25519 implementation, e.g.
// `openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in payload -sigfile sig`; nothing
// has to be re-encoded, because the payload is kept verbatim.
//
// Canonical payload: one JSON object, no whitespace, the keys of ReceiptFields in the
// order listed there, each always present; integers in decimal; strings escaped as
// nlohmann::json does with ensure_ascii (\" \\ \b \f \n \r \t, other bytes below 0x20 and
// everything from 0x7f up as \u00xx / \uxxxx in lowercase hex, UTF-16 surrogate pairs above
// U+FFFF; invalid UTF-8 becomes U+FFFD), so the payload is printable ASCII.
//
// Thread-safety: SigningKey and VerifyingKey are immutable; their methods may be called
// concurrently (each call uses its own OpenSSL context; libsodium's signing keeps no state).
// The functions are pure.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cops {

// What a receipt states about one registered document.
struct ReceiptFields {
  // The payload's first key, "receipt": the format and its version. on-wire: do not change.
  static constexpr char kFormat[] = "cops-registration-receipt/1";

  uint64_t doc_id = 0;
  // SHA-256 of the document's bytes as registered, lowercase hex; "" when the server does
  // not know them (an existing document registered without stored bytes).
  std::string content_sha256;
  // SHA-256 of the document's canonical text, lowercase hex (what exact duplicates share).
  std::string text_sha256;
  uint64_t size_bytes = 0;  // of the document as registered
  std::string format;       // the format parsed, e.g. "pdf"
  std::string chunking;     // ChunkingParams::Describe() of the index that holds it
  std::string hash_key_id;  // HashKey::Id() of the chunk-hashing key (never the key)
  std::string owner;
  std::string collection;
  std::string external_id;
  int64_t registered_unix_micros = 0;  // when the document was registered
  int64_t issued_unix_micros = 0;      // when this receipt was signed
  std::string signing_key_id;          // VerifyingKey::id() of the key that signed it

  bool operator==(const ReceiptFields&) const = default;
};

struct SignedReceipt {
  std::string payload;    // the canonical payload, exactly as signed
  std::string signature;  // Ed25519, 64 raw bytes
  std::string key_id;     // the signing key's id (repeated inside the payload)
};

// An Ed25519 public key.
class VerifyingKey {
 public:
  // The first public key in `pem` ("-----BEGIN PUBLIC KEY-----", SubjectPublicKeyInfo).
  // INVALID_ARGUMENT when there is none or it is not Ed25519.
  static absl::StatusOr<VerifyingKey> FromPem(std::string_view pem);

  // "-----BEGIN PUBLIC KEY-----\n...\n-----END PUBLIC KEY-----\n".
  std::string ToPem() const;
  // The key's id: the first 8 bytes of SHA-256 of its DER SubjectPublicKeyInfo, as 16
  // lowercase hex digits (`openssl pkey -pubin -outform DER | sha256sum | cut -c1-16`).
  const std::string& id() const { return id_; }
  // True when `signature` is this key's Ed25519 signature of `message`.
  bool Verify(std::string_view message, std::string_view signature) const;

 private:
  struct Key;
  VerifyingKey(std::shared_ptr<const Key> key, std::string id)
      : key_(std::move(key)), id_(std::move(id)) {}
  friend class SigningKey;

  std::shared_ptr<const Key> key_;
  std::string id_;
};

// An Ed25519 private key.
class SigningKey {
 public:
  // A new random key (OpenSSL's CSPRNG). INTERNAL if OpenSSL fails.
  static absl::StatusOr<SigningKey> Generate();
  // The private key in `pem` ("-----BEGIN PRIVATE KEY-----", PKCS#8, unencrypted).
  // INVALID_ARGUMENT when it does not hold one or it is not Ed25519.
  static absl::StatusOr<SigningKey> FromPem(std::string_view pem);

  // PKCS#8 PEM, unencrypted: keep it secret (a mode 0600 file).
  std::string ToPem() const;
  const VerifyingKey& verifying_key() const { return public_; }
  // The Ed25519 signature of `message`, 64 bytes (RFC 8032: deterministic, the same bytes
  // OpenSSL's EVP_DigestSign gives). Signed by libsodium, ~2x faster than OpenSSL 3.0's
  // Ed25519, which took a sixth of copsd's CPU per registered 4 KB document.
  absl::StatusOr<std::string> Sign(std::string_view message) const;

 private:
  struct Secret;  // libsodium's form of the key (seed, then public key)
  // Takes the OpenSSL key `key` holds; INVALID_ARGUMENT unless it is Ed25519.
  static absl::StatusOr<SigningKey> FromKey(std::shared_ptr<const VerifyingKey::Key> key);
  SigningKey(std::shared_ptr<const VerifyingKey::Key> key, std::shared_ptr<const Secret> secret,
             VerifyingKey verifying)
      : key_(std::move(key)), secret_(std::move(secret)), public_(std::move(verifying)) {}

  std::shared_ptr<const VerifyingKey::Key> key_;
  std::shared_ptr<const Secret> secret_;
  VerifyingKey public_;
};

// Every public key in `pem`, in order: the PEM blocks may be separated by other lines
// (`cops admin public-key` prints a "# key_id ..." line before each). INVALID_ARGUMENT when
// there is none, or a block is not an Ed25519 public key.
absl::StatusOr<std::vector<VerifyingKey>> ParseVerifyingKeys(std::string_view pem);

// The canonical payload of `fields` (see the top of this file).
std::string EncodeReceiptPayload(const ReceiptFields& fields);
// The fields of a canonical payload. INVALID_ARGUMENT naming the defect when `payload` is not
// JSON, not a receipt of format kFormat, lacks or mistypes a field, or is not in canonical
// form (re-ordered or re-spaced keys, other escapes).
absl::StatusOr<ReceiptFields> DecodeReceiptPayload(std::string_view payload);

// `fields` with signing_key_id set to key's id, encoded and signed.
absl::StatusOr<SignedReceipt> SignReceipt(const SigningKey& key, ReceiptFields fields);

// The fields of `receipt` when it is valid against one of `keys`; otherwise
// INVALID_ARGUMENT with the reason: an unknown key id, a signature of the wrong length
// (truncated), a signature that does not verify (a forged signature, or a payload modified,
// truncated or re-ordered after signing), a payload that does not decode, or a payload
// naming another key than the receipt.
absl::StatusOr<ReceiptFields> VerifyReceipt(const SignedReceipt& receipt,
                                            std::span<const VerifyingKey> keys);

// The receipt file a client keeps (docs/receipts.md): a JSON object
//   {"receipt": "cops-registration-receipt/1", "key_id": "...",
//    "signature": "<base64>", "payload": "<the payload as a JSON string>"}
// with a newline at the end. The payload is printable ASCII, so `jq -j .payload` gives
// back its exact bytes.
std::string EncodeReceiptFile(const SignedReceipt& receipt);
// The receipt in a receipt file. INVALID_ARGUMENT when it is not one (e.g. truncated JSON,
// a missing field, a signature that is not base64).
absl::StatusOr<SignedReceipt> DecodeReceiptFile(std::string_view text);

// `unix_micros` as RFC 3339 UTC with microseconds, "2025-01-31T23:59:59.000123Z".
std::string FormatReceiptTime(int64_t unix_micros);

}  // namespace cops

#endif  // COPS_CORE_RECEIPT_H_
