#include "replication/cluster_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace cops {
namespace {

constexpr size_t kMinKeyBytes = 32;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<std::string> ReadClusterKey(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cluster key file " + path + " cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string hex;
  for (char c : buffer.str()) {
    if (std::isspace(static_cast<unsigned char>(c)) == 0) hex += c;
  }
  std::string key;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int high = HexDigit(hex[i]);
    const int low = HexDigit(hex[i + 1]);
    if (high < 0 || low < 0) break;
    key += static_cast<char>(high * 16 + low);
  }
  if (hex.size() % 2 != 0 || key.size() * 2 != hex.size() || key.size() < kMinKeyBytes) {
    return absl::InvalidArgumentError(
        "cluster key file " + path + " must hold at least " + std::to_string(kMinKeyBytes) +
        " bytes as hex digits (openssl rand -hex 32)");
  }
  return key;
}

std::string ClusterSignature(std::string_view key, std::string_view context,
                             std::string_view bytes) {
  std::string message;
  message.reserve(context.size() + 1 + bytes.size());
  message.append(context);
  message.push_back('\0');
  message.append(bytes);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

absl::Status VerifyClusterSignature(std::string_view key, std::string_view context,
                                    std::string_view bytes, std::string_view signature) {
  if (signature.empty()) {
    return absl::DataLossError(std::string(context) + ": unsigned (no cluster signature)");
  }
  const std::string expected = ClusterSignature(key, context, bytes);
  if (signature.size() != expected.size() ||
      CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) != 0) {
    return absl::DataLossError(std::string(context) +
                               ": bad cluster signature (not written with this cluster's key)");
  }
  return absl::OkStatus();
}

}  // namespace cops
