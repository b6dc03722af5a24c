#include "core/receipt.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <optional>

#include "absl/strings/escaping.h"
#include "core/hash_key.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace cops {

// One OpenSSL key (public only, or private and public), freed with the last reference.
struct VerifyingKey::Key {
  explicit Key(EVP_PKEY* key) : pkey(key) {}
  ~Key() { EVP_PKEY_free(pkey); }
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
  EVP_PKEY* const pkey;
};

// The private key as libsodium signs with it: the 32-byte seed, then the public key.
struct SigningKey::Secret {
  Secret() = default;
  ~Secret() { sodium_memzero(bytes.data(), bytes.size()); }
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  std::array<unsigned char, crypto_sign_SECRETKEYBYTES> bytes{};
};

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kSignatureBytes = 64;  // Ed25519
constexpr size_t kKeyIdBytes = 8;

// on-wire: the payload's keys, in their canonical order; do not change.
constexpr const char* kPayloadKeys[] = {
    "receipt",     "doc_id",     "content_sha256", "text_sha256",   "size_bytes",
    "format",      "chunking",   "hash_key_id",    "owner",         "collection",
    "external_id", "registered_at", "issued_at",   "signing_key_id"};

// The reason OpenSSL gave for the last failure, and an empty error queue afterwards (the
// queue is per thread and shared with TLS).
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

Bio ReadBio(std::string_view text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

// Never asks for a passphrase (OpenSSL's default would read the terminal).
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return 0; }

// The DER SubjectPublicKeyInfo of `pkey`.
absl::StatusOr<std::string> PublicDer(EVP_PKEY* pkey) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(pkey, &der);
  if (n <= 0) return absl::InternalError("encoding a public key: " + OpenSslError());
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  return out;
}

absl::StatusOr<std::string> KeyIdOf(EVP_PKEY* pkey) {
  COPS_ASSIGN_OR_RETURN(const std::string der, PublicDer(pkey));
  const std::array<uint8_t, 32> digest = Sha256(der);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), kKeyIdBytes));
}

absl::Status RequireEd25519(EVP_PKEY* pkey, const char* what) {
  if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
    return absl::InvalidArgumentError(StrCat(what, " is not an Ed25519 key (it is ",
                                             EVP_PKEY_get0_type_name(pkey), ")"));
  }
  return absl::OkStatus();
}

constexpr int64_t kMicrosPerSecond = 1000000;

// The inverse of FormatReceiptTime; std::nullopt unless `text` has exactly its form.
std::optional<int64_t> ParseReceiptTime(std::string_view text) {
  // "YYYY-MM-DDTHH:MM:SS.ffffffZ"
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (text.size() != kShape.size()) return std::nullopt;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return std::nullopt;
  }
  auto number = [&](size_t at, size_t n) {
    int64_t v = 0;
    for (size_t i = at; i < at + n; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  using namespace std::chrono;
  const year_month_day date{year(static_cast<int>(number(0, 4))),
                            month(static_cast<unsigned>(number(5, 2))),
                            day(static_cast<unsigned>(number(8, 2)))};
  if (!date.ok() || number(11, 2) > 23 || number(14, 2) > 59 || number(17, 2) > 59) {
    return std::nullopt;
  }
  const int64_t days = sys_days(date).time_since_epoch().count();
  const int64_t seconds = days * 86400 + number(11, 2) * 3600 + number(14, 2) * 60 + number(17, 2);
  return seconds * kMicrosPerSecond + number(20, 6);
}

// The string or unsigned field `key` of `j`, or INVALID_ARGUMENT naming it.
absl::StatusOr<std::string> StringField(const Json& j, const char* key, const char* what) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return absl::InvalidArgumentError(StrCat(what, " has no string field \"", key, "\""));
  }
  return it->get<std::string>();
}

absl::StatusOr<uint64_t> UnsignedField(const Json& j, const char* key, const char* what) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) {
    return absl::InvalidArgumentError(
        StrCat(what, " has no unsigned integer field \"", key, "\""));
  }
  return it->get<uint64_t>();
}

absl::StatusOr<int64_t> TimeField(const Json& j, const char* key) {
  COPS_ASSIGN_OR_RETURN(const std::string text, StringField(j, key, "payload"));
  const std::optional<int64_t> micros = ParseReceiptTime(text);
  if (!micros.has_value()) {
    return absl::InvalidArgumentError(
        StrCat("payload field \"", key, "\" is not a time like 2025-01-31T23:59:59.000123Z"));
  }
  return *micros;
}

}  // namespace

std::string FormatReceiptTime(int64_t unix_micros) {
  using namespace std::chrono;
  const sys_time<microseconds> t{microseconds(unix_micros)};
  const sys_days days = floor<std::chrono::days>(t);
  const year_month_day date(days);
  const int64_t in_day = (t - days).count();  // microseconds since midnight, >= 0
  const int64_t seconds = in_day / kMicrosPerSecond;
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<long long>(seconds / 3600),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60),
                static_cast<long long>(in_day % kMicrosPerSecond));
  return text;
}

absl::StatusOr<VerifyingKey> VerifyingKey::FromPem(std::string_view pem) {
  Bio bio = ReadBio(pem);
  EVP_PKEY* pkey = PEM_read_bio_PUBKEY(bio.get(), nullptr, NoPassphrase, nullptr);
  if (pkey == nullptr) {
    return absl::InvalidArgumentError("no PEM public key: " + OpenSslError());
  }
  auto key = std::make_shared<const Key>(pkey);
  COPS_RETURN_IF_ERROR(RequireEd25519(pkey, "the public key"));
  COPS_ASSIGN_OR_RETURN(std::string id, KeyIdOf(pkey));
  return VerifyingKey(std::move(key), std::move(id));
}

std::string VerifyingKey::ToPem() const {
  Bio bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_PUBKEY(bio.get(), key_->pkey) != 1) {
    ERR_clear_error();
    return "";
  }
  return BioText(bio.get());
}

bool VerifyingKey::Verify(std::string_view message, std::string_view signature) const {
  MdCtx ctx(EVP_MD_CTX_new());
  const bool ok =
      ctx != nullptr &&
      EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_->pkey) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1;
  ERR_clear_error();
  return ok;
}

absl::StatusOr<SigningKey> SigningKey::FromKey(std::shared_ptr<const VerifyingKey::Key> key) {
  COPS_RETURN_IF_ERROR(RequireEd25519(key->pkey, "the private key"));
  static const bool sodium_ready = sodium_init() >= 0;  // once; thread-safe and idempotent
  if (!sodium_ready) return absl::InternalError("libsodium failed to initialize");
  auto secret = std::make_shared<Secret>();
  unsigned char* raw_seed = secret->bytes.data();
  unsigned char* raw = secret->bytes.data() + crypto_sign_SEEDBYTES;
  size_t seed_size = crypto_sign_SEEDBYTES;
  size_t raw_size = crypto_sign_PUBLICKEYBYTES;
  if (EVP_PKEY_get_raw_private_key(key->pkey, raw_seed, &seed_size) != 1 ||
      seed_size != crypto_sign_SEEDBYTES ||
      EVP_PKEY_get_raw_public_key(key->pkey, raw, &raw_size) != 1 ||
      raw_size != crypto_sign_PUBLICKEYBYTES) {
    return absl::InternalError("reading an Ed25519 key: " + OpenSslError());
  }
  // The public half as a key of its own, so a VerifyingKey never holds private material.
  EVP_PKEY* pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw, raw_size);
  if (pub == nullptr) return absl::InternalError("copying a public key: " + OpenSslError());
  auto pub_key = std::make_shared<const VerifyingKey::Key>(pub);
  COPS_ASSIGN_OR_RETURN(std::string id, KeyIdOf(pub));
  return SigningKey(std::move(key), std::move(secret),
                    VerifyingKey(std::move(pub_key), std::move(id)));
}

absl::StatusOr<SigningKey> SigningKey::Generate() {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (pkey == nullptr) return absl::InternalError("generating an Ed25519 key: " + OpenSslError());
  return FromKey(std::make_shared<const VerifyingKey::Key>(pkey));
}

absl::StatusOr<SigningKey> SigningKey::FromPem(std::string_view pem) {
  Bio bio = ReadBio(pem);
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr);
  if (pkey == nullptr) {
    return absl::InvalidArgumentError("no unencrypted PEM private key: " + OpenSslError());
  }
  return FromKey(std::make_shared<const VerifyingKey::Key>(pkey));
}

std::string SigningKey::ToPem() const {
  Bio bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_PrivateKey(bio.get(), key_->pkey, nullptr, nullptr, 0,
                                                 nullptr, nullptr) != 1) {
    ERR_clear_error();
    return "";
  }
  return BioText(bio.get());
}

absl::StatusOr<std::string> SigningKey::Sign(std::string_view message) const {
  std::string signature(crypto_sign_BYTES, '\0');
  unsigned long long size = 0;  // NOLINT(google-runtime-int): libsodium's type
  if (crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), &size,
                           reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                           secret_->bytes.data()) != 0 ||
      size != kSignatureBytes) {
    return absl::InternalError("Ed25519 signing failed (libsodium)");
  }
  return signature;
}

absl::StatusOr<std::vector<VerifyingKey>> ParseVerifyingKeys(std::string_view pem) {
  static constexpr std::string_view kBegin = "-----BEGIN PUBLIC KEY-----";
  static constexpr std::string_view kEnd = "-----END PUBLIC KEY-----";
  std::vector<VerifyingKey> keys;
  for (size_t at = pem.find(kBegin); at != std::string_view::npos; at = pem.find(kBegin, at)) {
    const size_t end = pem.find(kEnd, at);
    if (end == std::string_view::npos) {
      return absl::InvalidArgumentError(
          StrCat("public key ", keys.size() + 1, " has no END line (truncated?)"));
    }
    absl::StatusOr<VerifyingKey> key = VerifyingKey::FromPem(pem.substr(at, end + kEnd.size() - at));
    if (!key.ok()) {
      return absl::InvalidArgumentError(
          StrCat("public key ", keys.size() + 1, ": ", key.status().message()));
    }
    keys.push_back(*std::move(key));
    at = end + kEnd.size();
  }
  if (keys.empty()) return absl::InvalidArgumentError("no \"" + std::string(kBegin) + "\" block");
  return keys;
}

namespace {

// Appends `s` as a JSON string exactly as nlohmann's dump(ensure_ascii, replace) writes it,
// the payload's canonical form. Printable ASCII without '"' or '\\' (every field of an
// ordinary receipt) needs no escape and is copied; any other string goes through nlohmann.
// Building and dumping a JSON object per receipt was ~3% of copsd's CPU in a registration.
void AppendJsonString(std::string* out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out->append(Json(std::string(s)).dump(-1, ' ', /*ensure_ascii=*/true,
                                          Json::error_handler_t::replace));
    return;
  }
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

}  // namespace

std::string EncodeReceiptPayload(const ReceiptFields& f) {
  std::string out;
  out.reserve(512);
  size_t next_key = 0;
  // The keys are printable ASCII: written as they are, in kPayloadKeys' order.
  auto key = [&]() -> std::string& {
    out.append(next_key == 0 ? "{\"" : ",\"");
    out.append(kPayloadKeys[next_key++]);
    out.append("\":");
    return out;
  };
  AppendJsonString(&key(), ReceiptFields::kFormat);
  key().append(std::to_string(f.doc_id));
  AppendJsonString(&key(), f.content_sha256);
  AppendJsonString(&key(), f.text_sha256);
  key().append(std::to_string(f.size_bytes));
  AppendJsonString(&key(), f.format);
  AppendJsonString(&key(), f.chunking);
  AppendJsonString(&key(), f.hash_key_id);
  AppendJsonString(&key(), f.owner);
  AppendJsonString(&key(), f.collection);
  AppendJsonString(&key(), f.external_id);
  AppendJsonString(&key(), FormatReceiptTime(f.registered_unix_micros));
  AppendJsonString(&key(), FormatReceiptTime(f.issued_unix_micros));
  AppendJsonString(&key(), f.signing_key_id);
  assert(next_key == std::size(kPayloadKeys));
  out.push_back('}');
  return out;
}

namespace {

// The JSON object `text` (`what`, for messages) whose "receipt" field names kFormat.
absl::StatusOr<Json> ParseReceiptObject(std::string_view text, const char* what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(StrCat(what, " is not a JSON object (truncated?)"));
  }
  COPS_ASSIGN_OR_RETURN(const std::string format, StringField(j, "receipt", what));
  if (format != ReceiptFields::kFormat) {
    return absl::InvalidArgumentError(
        StrCat(what, " is a \"", format, "\", not a \"", ReceiptFields::kFormat, "\""));
  }
  return j;
}

}  // namespace

absl::StatusOr<ReceiptFields> DecodeReceiptPayload(std::string_view payload) {
  COPS_ASSIGN_OR_RETURN(const Json j, ParseReceiptObject(payload, "payload"));
  for (const auto& item : j.items()) {
    if (std::find(std::begin(kPayloadKeys), std::end(kPayloadKeys), item.key()) ==
        std::end(kPayloadKeys)) {
      return absl::InvalidArgumentError(StrCat("payload has an unknown field \"", item.key(), "\""));
    }
  }
  ReceiptFields f;
  COPS_ASSIGN_OR_RETURN(f.doc_id, UnsignedField(j, "doc_id", "payload"));
  COPS_ASSIGN_OR_RETURN(f.content_sha256, StringField(j, "content_sha256", "payload"));
  COPS_ASSIGN_OR_RETURN(f.text_sha256, StringField(j, "text_sha256", "payload"));
  COPS_ASSIGN_OR_RETURN(f.size_bytes, UnsignedField(j, "size_bytes", "payload"));
  COPS_ASSIGN_OR_RETURN(f.format, StringField(j, "format", "payload"));
  COPS_ASSIGN_OR_RETURN(f.chunking, StringField(j, "chunking", "payload"));
  COPS_ASSIGN_OR_RETURN(f.hash_key_id, StringField(j, "hash_key_id", "payload"));
  COPS_ASSIGN_OR_RETURN(f.owner, StringField(j, "owner", "payload"));
  COPS_ASSIGN_OR_RETURN(f.collection, StringField(j, "collection", "payload"));
  COPS_ASSIGN_OR_RETURN(f.external_id, StringField(j, "external_id", "payload"));
  COPS_ASSIGN_OR_RETURN(f.registered_unix_micros, TimeField(j, "registered_at"));
  COPS_ASSIGN_OR_RETURN(f.issued_unix_micros, TimeField(j, "issued_at"));
  COPS_ASSIGN_OR_RETURN(f.signing_key_id, StringField(j, "signing_key_id", "payload"));
  if (EncodeReceiptPayload(f) != payload) {
    return absl::InvalidArgumentError(
        "payload is not in canonical form (fields re-ordered, re-spaced or re-escaped)");
  }
  return f;
}

absl::StatusOr<SignedReceipt> SignReceipt(const SigningKey& key, ReceiptFields fields) {
  fields.signing_key_id = key.verifying_key().id();
  SignedReceipt receipt;
  receipt.payload = EncodeReceiptPayload(fields);
  COPS_ASSIGN_OR_RETURN(receipt.signature, key.Sign(receipt.payload));
  receipt.key_id = fields.signing_key_id;
  return receipt;
}

absl::StatusOr<ReceiptFields> VerifyReceipt(const SignedReceipt& receipt,
                                            std::span<const VerifyingKey> keys) {
  const VerifyingKey* key = nullptr;
  for (const VerifyingKey& k : keys) {
    if (k.id() == receipt.key_id) key = &k;
  }
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        StrCat("unknown signing key id \"", receipt.key_id, "\": none of the ", keys.size(),
               " public key(s) given has it"));
  }
  if (receipt.signature.size() != kSignatureBytes) {
    return absl::InvalidArgumentError(StrCat("the signature is ", receipt.signature.size(),
                                             " bytes, not ", kSignatureBytes, " (truncated?)"));
  }
  if (!key->Verify(receipt.payload, receipt.signature)) {
    return absl::InvalidArgumentError(
        StrCat("the signature does not verify under key ", receipt.key_id,
               ": the payload was modified, truncated or re-ordered after signing, or the "
               "signature is forged"));
  }
  COPS_ASSIGN_OR_RETURN(ReceiptFields fields, DecodeReceiptPayload(receipt.payload));
  if (fields.signing_key_id != receipt.key_id) {
    return absl::InvalidArgumentError(StrCat("the payload names signing key ",
                                             fields.signing_key_id, ", the receipt ",
                                             receipt.key_id));
  }
  return fields;
}

std::string EncodeReceiptFile(const SignedReceipt& receipt) {
  Json j;
  j["receipt"] = ReceiptFields::kFormat;
  j["key_id"] = receipt.key_id;
  j["signature"] = absl::Base64Escape(receipt.signature);
  j["payload"] = receipt.payload;
  return j.dump(2, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace) + "\n";
}

absl::StatusOr<SignedReceipt> DecodeReceiptFile(std::string_view text) {
  COPS_ASSIGN_OR_RETURN(const Json j, ParseReceiptObject(text, "the receipt file"));
  SignedReceipt receipt;
  COPS_ASSIGN_OR_RETURN(receipt.key_id, StringField(j, "key_id", "the receipt file"));
  COPS_ASSIGN_OR_RETURN(const std::string signature,
                        StringField(j, "signature", "the receipt file"));
  if (!absl::Base64Unescape(signature, &receipt.signature)) {
    return absl::InvalidArgumentError("the receipt's signature is not base64");
  }
  COPS_ASSIGN_OR_RETURN(receipt.payload, StringField(j, "payload", "the receipt file"));
  return receipt;
}

}  // namespace cops
