#include "core/receipt.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

using ::testing::HasSubstr;

ReceiptFields Fields() {
  ReceiptFields f;
  f.doc_id = 42;
  f.content_sha256 = std::string(64, 'a');
  f.text_sha256 = std::string(64, 'b');
  f.size_bytes = 1234;
  f.format = "text";
  f.chunking = "unit=word k=5";
  f.hash_key_id = "0123456789abcdef";
  f.owner = "alice";
  f.collection = "essays";
  f.external_id = "isbn-1";
  f.registered_unix_micros = 1738367999000123;  // 2025-01-31T23:59:59.000123Z
  f.issued_unix_micros = 1738368000000000;
  return f;
}

class ReceiptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(key_, SigningKey::Generate());
    ASSERT_OK_AND_ASSIGN(other_, SigningKey::Generate());
    keys_ = {key_->verifying_key()};
  }

  SignedReceipt Signed(const ReceiptFields& fields) {
    absl::StatusOr<SignedReceipt> r = SignReceipt(*key_, fields);
    EXPECT_OK(r);
    return r.ok() ? *r : SignedReceipt{};
  }

  // The reason VerifyReceipt gives for `r`; "" when it is valid.
  std::string Reason(const SignedReceipt& r) {
    absl::StatusOr<ReceiptFields> f = VerifyReceipt(r, keys_);
    if (f.ok()) return "";
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(f.status().message());
  }

  std::optional<SigningKey> key_, other_;
  std::vector<VerifyingKey> keys_;
};

TEST_F(ReceiptTest, PayloadIsTheDocumentedCanonicalJson) {
  ReceiptFields f = Fields();
  f.signing_key_id = "fedcba9876543210";
  EXPECT_EQ(EncodeReceiptPayload(f),
            R"({"receipt":"cops-registration-receipt/1","doc_id":42,"content_sha256":")" +
                std::string(64, 'a') + R"(","text_sha256":")" + std::string(64, 'b') +
                R"(","size_bytes":1234,"format":"text","chunking":"unit=word k=5",)"
                R"("hash_key_id":"0123456789abcdef","owner":"alice","collection":"essays",)"
                R"("external_id":"isbn-1","registered_at":"2025-01-31T23:59:59.000123Z",)"
                R"("issued_at":"2025-02-01T00:00:00.000000Z","signing_key_id":"fedcba9876543210"})");
  ASSERT_OK_AND_ASSIGN(ReceiptFields back, DecodeReceiptPayload(EncodeReceiptPayload(f)));
  EXPECT_EQ(back, f);
}

TEST_F(ReceiptTest, NonAsciiAndQuotesAreEscapedSoThePayloadIsPrintableAscii) {
  ReceiptFields f = Fields();
  f.owner = "caf\xc3\xa9 \"x\"\n\xf0\x9f\x93\x84";  // café "x", newline, U+1F4C4
  const std::string payload = EncodeReceiptPayload(f);
  EXPECT_THAT(payload, HasSubstr(R"("owner":"caf\u00e9 \"x\"\n\ud83d\udcc4")"));
  for (char c : payload) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
  ASSERT_OK_AND_ASSIGN(ReceiptFields back, DecodeReceiptPayload(payload));
  EXPECT_EQ(back.owner, f.owner);
}

// The payload is written field by field, copying strings that need no escape; it must be
// byte for byte what nlohmann writes for the whole object (the canonical form receipts
// signed before were checked against), whatever the strings hold.
TEST_F(ReceiptTest, PayloadIsWhatNlohmannWritesForAnyStrings) {
  const std::vector<std::string> strings = {
      "", "plain ascii ~!", "quote\" and back\\slash", "tab\there", std::string("nul\0x", 5),
      "\x1f unit separator", "\x7f delete", "caf\xc3\xa9", "\xf0\x9f\x93\x84 U+1F4C4",
      "\xff invalid", "cut \xe2\x82", "\xc3", "~\x80 lone continuation"};
  for (const std::string& s : strings) {
    ReceiptFields f = Fields();
    f.content_sha256 = f.text_sha256 = f.format = f.chunking = f.hash_key_id = f.owner =
        f.collection = f.external_id = f.signing_key_id = s;
    nlohmann::ordered_json j;
    j["receipt"] = ReceiptFields::kFormat;
    j["doc_id"] = f.doc_id;
    j["content_sha256"] = f.content_sha256;
    j["text_sha256"] = f.text_sha256;
    j["size_bytes"] = f.size_bytes;
    j["format"] = f.format;
    j["chunking"] = f.chunking;
    j["hash_key_id"] = f.hash_key_id;
    j["owner"] = f.owner;
    j["collection"] = f.collection;
    j["external_id"] = f.external_id;
    j["registered_at"] = FormatReceiptTime(f.registered_unix_micros);
    j["issued_at"] = FormatReceiptTime(f.issued_unix_micros);
    j["signing_key_id"] = f.signing_key_id;
    EXPECT_EQ(EncodeReceiptPayload(f),
              j.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::ordered_json::error_handler_t::replace))
        << absl::CEscape(s);
  }
}

TEST_F(ReceiptTest, TimesAreRfc3339UtcWithMicroseconds) {
  EXPECT_EQ(FormatReceiptTime(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatReceiptTime(1738367999000123), "2025-01-31T23:59:59.000123Z");
  EXPECT_EQ(FormatReceiptTime(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatReceiptTime(951782400000000), "2000-02-29T00:00:00.000000Z");
}

TEST_F(ReceiptTest, ASignedReceiptVerifiesAndStatesItsFields) {
  const SignedReceipt r = Signed(Fields());
  EXPECT_EQ(r.key_id, key_->verifying_key().id());
  EXPECT_EQ(r.signature.size(), 64u);
  ASSERT_OK_AND_ASSIGN(ReceiptFields got, VerifyReceipt(r, keys_));
  ReceiptFields want = Fields();
  want.signing_key_id = r.key_id;
  EXPECT_EQ(got, want);
}

TEST_F(ReceiptTest, KeyIdIsSixteenHexDigitsAndSurvivesPem) {
  const std::string& id = key_->verifying_key().id();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_NE(id, other_->verifying_key().id());

  const std::string private_pem = key_->ToPem();
  EXPECT_THAT(private_pem, HasSubstr("-----BEGIN PRIVATE KEY-----"));
  ASSERT_OK_AND_ASSIGN(SigningKey reread, SigningKey::FromPem(private_pem));
  EXPECT_EQ(reread.verifying_key().id(), id);
  const std::string public_pem = key_->verifying_key().ToPem();
  EXPECT_THAT(public_pem, HasSubstr("-----BEGIN PUBLIC KEY-----"));
  EXPECT_THAT(public_pem, ::testing::Not(HasSubstr("PRIVATE")));
  ASSERT_OK_AND_ASSIGN(VerifyingKey pub, VerifyingKey::FromPem(public_pem));
  EXPECT_EQ(pub.id(), id);
  // A receipt signed by the re-read key verifies under the re-read public key.
  ASSERT_OK_AND_ASSIGN(SignedReceipt r, SignReceipt(reread, Fields()));
  EXPECT_OK(VerifyReceipt(r, std::vector<VerifyingKey>{pub}));
}

TEST_F(ReceiptTest, ParsesEveryPublicKeyOfAListingWithCommentLines) {
  const std::string listing = "# key_id " + key_->verifying_key().id() + "\n" +
                              key_->verifying_key().ToPem() + "# key_id " +
                              other_->verifying_key().id() + " (live)\n" +
                              other_->verifying_key().ToPem();
  ASSERT_OK_AND_ASSIGN(std::vector<VerifyingKey> keys, ParseVerifyingKeys(listing));
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].id(), key_->verifying_key().id());
  EXPECT_EQ(keys[1].id(), other_->verifying_key().id());

  EXPECT_FALSE(ParseVerifyingKeys("no keys here").ok());
  EXPECT_FALSE(ParseVerifyingKeys(key_->ToPem()).ok()) << "a private key is not a public key";
  const std::string pem = key_->verifying_key().ToPem();
  absl::StatusOr<std::vector<VerifyingKey>> cut = ParseVerifyingKeys(pem.substr(0, pem.size() / 2));
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("truncated"));
}

// The key of RFC 8032's test vectors as PKCS#8 PEM: its DER prefix, then the 32-byte seed.
std::string Rfc8032Pem(const std::string& seed_hex) {
  const std::string der = absl::HexStringToBytes("302e020100300506032b657004220420") +
                          absl::HexStringToBytes(seed_hex);
  return "-----BEGIN PRIVATE KEY-----\n" + absl::Base64Escape(der) +
         "\n-----END PRIVATE KEY-----\n";
}

TEST(ReceiptSigningTest, SignaturesAreRfc8032s) {
  // RFC 8032 section 7.1, tests 1 and 2: Ed25519 is deterministic, so whichever library
  // signs (libsodium), the bytes are these and any Ed25519 verifier (OpenSSL) accepts them.
  struct Vector {
    const char* seed;
    const char* message;
    const char* signature;
  } vectors[] = {
      {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "",
       "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
       "1cf9b46bd25bf5f0595bbe24655141438e7a100b"},
      {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "72",
       "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613"
       "d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
  };
  for (const Vector& v : vectors) {
    ASSERT_OK_AND_ASSIGN(SigningKey key, SigningKey::FromPem(Rfc8032Pem(v.seed)));
    const std::string message = absl::HexStringToBytes(v.message);
    ASSERT_OK_AND_ASSIGN(std::string signature, key.Sign(message));
    EXPECT_EQ(absl::BytesToHexString(signature), v.signature);
    EXPECT_TRUE(key.verifying_key().Verify(message, signature));
  }
}

TEST_F(ReceiptTest, AForgedSignatureIsInvalid) {
  // Signed by another key, but claiming this server's key id.
  ReceiptFields f = Fields();
  f.signing_key_id = key_->verifying_key().id();
  SignedReceipt forged;
  forged.payload = EncodeReceiptPayload(f);
  forged.signature = other_->Sign(forged.payload).value();
  forged.key_id = key_->verifying_key().id();
  EXPECT_THAT(Reason(forged), HasSubstr("does not verify"));
}

TEST_F(ReceiptTest, AModifiedPayloadIsInvalid) {
  SignedReceipt r = Signed(Fields());
  const size_t at = r.payload.find("\"doc_id\":42");
  ASSERT_NE(at, std::string::npos);
  r.payload.replace(at, 11, "\"doc_id\":43");
  EXPECT_THAT(Reason(r), HasSubstr("does not verify"));
}

TEST_F(ReceiptTest, ATruncatedPayloadOrSignatureIsInvalid) {
  SignedReceipt payload_cut = Signed(Fields());
  payload_cut.payload.resize(payload_cut.payload.size() - 1);
  EXPECT_THAT(Reason(payload_cut), HasSubstr("does not verify"));
  SignedReceipt signature_cut = Signed(Fields());
  signature_cut.signature.resize(40);
  EXPECT_THAT(Reason(signature_cut), HasSubstr("40 bytes, not 64"));
}

TEST_F(ReceiptTest, AReorderedPayloadIsInvalidAndNotCanonical) {
  SignedReceipt r = Signed(Fields());
  // Swap "owner" and "collection": the same JSON object, other bytes.
  const std::string owner = R"("owner":"alice",)", collection = R"("collection":"essays",)";
  const size_t at = r.payload.find(owner + collection);
  ASSERT_NE(at, std::string::npos) << r.payload;
  r.payload.replace(at, owner.size() + collection.size(), collection + owner);
  EXPECT_THAT(Reason(r), HasSubstr("does not verify"));
  absl::StatusOr<ReceiptFields> decoded = DecodeReceiptPayload(r.payload);
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("canonical"));
}

TEST_F(ReceiptTest, AnUnknownKeyIdIsInvalid) {
  ASSERT_OK_AND_ASSIGN(SignedReceipt r, SignReceipt(*other_, Fields()));
  EXPECT_THAT(Reason(r), HasSubstr("unknown signing key id \"" + other_->verifying_key().id()));
  // With the other key among those given, it verifies: old keys stay usable.
  keys_.push_back(other_->verifying_key());
  EXPECT_EQ(Reason(r), "");
}

TEST_F(ReceiptTest, PayloadDefectsAreNamed) {
  EXPECT_THAT(DecodeReceiptPayload(R"({"receipt":"cops-registration-receipt/1")").status().message(),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(DecodeReceiptPayload(R"({"receipt":"other/1"})").status().message(),
              HasSubstr("not a \"cops-registration-receipt/1\""));
  EXPECT_THAT(DecodeReceiptPayload(R"({"receipt":"cops-registration-receipt/1","doc_id":"x"})")
                  .status()
                  .message(),
              HasSubstr("\"doc_id\""));
  ReceiptFields f = Fields();
  std::string payload = EncodeReceiptPayload(f);
  payload.insert(payload.size() - 1, R"(,"extra":1)");
  EXPECT_THAT(DecodeReceiptPayload(payload).status().message(), HasSubstr("unknown field \"extra\""));
}

TEST_F(ReceiptTest, ReceiptFileRoundTripsAndATruncatedFileIsRefused) {
  ReceiptFields f = Fields();
  f.owner = "caf\xc3\xa9";
  const SignedReceipt r = Signed(f);
  const std::string file = EncodeReceiptFile(r);
  EXPECT_EQ(file.back(), '\n');
  EXPECT_THAT(file, HasSubstr("\"receipt\": \"cops-registration-receipt/1\""));
  ASSERT_OK_AND_ASSIGN(SignedReceipt back, DecodeReceiptFile(file));
  EXPECT_EQ(back.payload, r.payload);
  EXPECT_EQ(back.signature, r.signature);
  EXPECT_EQ(back.key_id, r.key_id);
  EXPECT_OK(VerifyReceipt(back, keys_));

  absl::StatusOr<SignedReceipt> cut = DecodeReceiptFile(file.substr(0, file.size() / 2));
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("truncated"));
  EXPECT_FALSE(DecodeReceiptFile(R"({"receipt":"cops-registration-receipt/1","key_id":"k",)"
                                 R"("signature":"!!","payload":"{}"})")
                   .ok())
      << "a signature that is not base64";
}

}  // namespace
}  // namespace cops
