#include "storage/data_dir.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "core/status_macros.h"

namespace cops {
namespace {

// on-disk: names in the data directory; do not change.
constexpr char kIndexDir0[] = "index";
constexpr char kKeyFile0[] = "hash.key";
constexpr char kIndexDirPrefix[] = "index.";
constexpr char kKeyFilePrefix[] = "hash_key.";
constexpr char kTmpSuffix[] = ".tmp";  // WriteFileDurably's temporary
constexpr std::string_view kSnapshotTmpSuffix = "~tmp";
constexpr char kSigningKeyPrefix[] = "signing_key.";
constexpr char kPublicSuffix[] = ".pub";

constexpr uint32_t kKeyFileMode = 0600;
constexpr uint32_t kPublicFileMode = 0644;

std::string Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

// The generation `name` ("index.<n>" or "hash_key.<n>", n >= 1 in canonical decimal)
// denotes; 0 when it denotes none.
uint64_t GenerationOf(std::string_view name) {
  std::string_view digits;
  if (name.substr(0, sizeof kIndexDirPrefix - 1) == kIndexDirPrefix) {
    digits = name.substr(sizeof kIndexDirPrefix - 1);
  } else if (name.substr(0, sizeof kKeyFilePrefix - 1) == kKeyFilePrefix) {
    digits = name.substr(sizeof kKeyFilePrefix - 1);
  } else {
    return 0;
  }
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return std::stoull(std::string(digits));
}

// The n of "signing_key.<n>" (n >= 1 in canonical decimal); 0 for any other name.
uint64_t SigningKeyNumberOf(std::string_view name) {
  if (name.substr(0, sizeof kSigningKeyPrefix - 1) != kSigningKeyPrefix) return 0;
  const std::string_view digits = name.substr(sizeof kSigningKeyPrefix - 1);
  if (digits.empty() || digits.size() > 18 || digits[0] == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return std::stoull(std::string(digits));
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// The bytes of `hex`; std::nullopt unless it is an even number of hex digits.
std::optional<std::string> FromHex(std::string_view hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = value(hex[i]), lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    bytes += static_cast<char>(hi << 4 | lo);
  }
  return bytes;
}

}  // namespace

std::string DataDir::IndexDirName(uint64_t generation) {
  return generation == 0 ? kIndexDir0 : kIndexDirPrefix + std::to_string(generation);
}

std::string DataDir::KeyFileName(uint64_t generation) {
  return generation == 0 ? kKeyFile0 : kKeyFilePrefix + std::to_string(generation);
}

std::string DataDir::SigningKeyFileName(uint64_t n) {
  return kSigningKeyPrefix + std::to_string(n);
}

std::string DataDir::SigningPublicKeyFileName(uint64_t n) {
  return SigningKeyFileName(n) + kPublicSuffix;
}

DataDir::DataDir(std::string path, FileSystem* fs)
    : path_(std::move(path)), fs_(fs != nullptr ? fs : FileSystem::Default()) {}

absl::Status DataDir::Create() {
  if (fs_->Exists(path_)) return fs_->CreateDir(path_);  // fails unless a directory
  COPS_RETURN_IF_ERROR(fs_->CreateDir(path_));
  // It will hold the stored texts and the keys: other local users get no way in.
  COPS_RETURN_IF_ERROR(fs_->MakeOwnerOnly(path_));
  // Durably: a data directory whose name a power loss drops takes its key along.
  return fs_->SyncDir(ParentDir(std::filesystem::path(path_).lexically_normal().string()));
}

absl::Status DataDir::Sync() { return fs_->SyncDir(path_); }

std::string DataDir::PathOf(std::string_view name) const {
  return (std::filesystem::path(path_) / name).string();
}

std::string DataDir::SnapshotPath(std::string_view name) const {
  return (std::filesystem::path(SnapshotsPath()) / name).string();
}

std::string DataDir::SnapshotTempPath(std::string_view name) const {
  return SnapshotPath(std::string(name) + std::string(kSnapshotTmpSuffix));
}

absl::StatusOr<std::optional<uint64_t>> DataDir::ReadPointer(std::string_view name) const {
  const std::string path = PathOf(name);
  if (!fs_->Exists(path)) return std::nullopt;
  COPS_ASSIGN_OR_RETURN(const std::string text, fs_->ReadFile(path));
  std::istringstream in(text);
  std::string index_name, key_name;
  in >> index_name >> key_name;
  const uint64_t n = GenerationOf(index_name);
  if (n == 0 || index_name != IndexDirName(n) || key_name != KeyFileName(n)) {
    return absl::DataLossError(path + ": malformed generation pointer '" + Trimmed(text) + "'");
  }
  return std::optional<uint64_t>(n);
}

std::string DataDir::PointerText(uint64_t generation) {
  return IndexDirName(generation) + " " + KeyFileName(generation) + "\n";
}

absl::StatusOr<uint64_t> DataDir::ReadCurrent() const {
  COPS_ASSIGN_OR_RETURN(const std::optional<uint64_t> n, ReadPointer(kCurrentFile));
  return n.value_or(0);
}

absl::Status DataDir::SetCurrent(uint64_t generation) {
  const std::string path = PathOf(kCurrentFile);
  const std::string tmp = path + kTmpSuffix;
  COPS_RETURN_IF_ERROR(
      fs_->WriteFile(tmp, PointerText(generation), kPublicFileMode, /*exclusive=*/false));
  return fs_->Rename(tmp, path);
}

absl::StatusOr<std::optional<uint64_t>> DataDir::ReadRotation() const {
  return ReadPointer(kRotationFile);
}

absl::Status DataDir::SetRotation(uint64_t generation) {
  return WriteFileDurably(*fs_, PathOf(kRotationFile), PointerText(generation), kKeyFileMode);
}

absl::Status DataDir::ClearRotation() {
  const std::string path = PathOf(kRotationFile);
  if (!fs_->Exists(path)) return absl::OkStatus();
  COPS_RETURN_IF_ERROR(fs_->RemoveAll(path));
  return Sync();
}

bool DataDir::HasGeneration(uint64_t generation) const {
  return fs_->Exists(IndexPath(generation)) && fs_->Exists(KeyPath(generation));
}

absl::StatusOr<HashKey> DataDir::ReadKey(uint64_t generation) const {
  return ReadKeyFile(*fs_, KeyPath(generation));
}

absl::Status DataDir::CreateKey(uint64_t generation, const HashKey& key) {
  return CreateFileDurably(*fs_, KeyPath(generation), key.ToHex() + "\n", kKeyFileMode);
}

absl::StatusOr<std::optional<ChunkingParams>> DataDir::ReadParams() const {
  const std::string path = PathOf(kParamsFile);
  if (!fs_->Exists(path)) return std::nullopt;
  COPS_ASSIGN_OR_RETURN(const std::string text, fs_->ReadFile(path));
  const std::optional<std::string> bytes = FromHex(Trimmed(text));
  if (!bytes.has_value()) return absl::DataLossError(path + ": not a hex string");
  absl::StatusOr<ChunkingParams> params = ChunkingParams::Decode(*bytes);
  if (!params.ok()) {
    return absl::DataLossError(path + ": " + std::string(params.status().message()));
  }
  return std::optional<ChunkingParams>(*std::move(params));
}

absl::Status DataDir::WriteParams(const ChunkingParams& params) {
  return WriteFileDurably(*fs_, PathOf(kParamsFile), ToHex(params.Encode()) + "\n",
                          kPublicFileMode);
}

absl::StatusOr<std::vector<uint64_t>> DataDir::OtherGenerations(uint64_t live) const {
  COPS_ASSIGN_OR_RETURN(const std::vector<std::string> names, fs_->List(path_));
  std::vector<uint64_t> other;
  for (const std::string& name : names) {
    const uint64_t n = GenerationOf(name);
    if (n != 0 && n != live) other.push_back(n);
  }
  if (live != 0 && (fs_->Exists(IndexPath(0)) || fs_->Exists(KeyPath(0)))) other.push_back(0);
  std::sort(other.begin(), other.end());
  other.erase(std::unique(other.begin(), other.end()), other.end());
  return other;
}

absl::Status DataDir::RemoveSecretFile(const std::string& path) {
  if (!fs_->Exists(path)) return absl::OkStatus();
  // Zeros first: unlinking alone would leave the key in the freed blocks.
  absl::Status zeroed = fs_->ZeroFill(path);
  absl::Status removed = fs_->RemoveAll(path);
  return !zeroed.ok() ? zeroed : removed;
}

absl::Status DataDir::RemoveGeneration(uint64_t generation) {
  absl::Status status = fs_->RemoveAll(IndexPath(generation));
  absl::Status key = RemoveSecretFile(KeyPath(generation));
  if (status.ok()) status = key;
  absl::Status synced = Sync();
  return status.ok() ? synced : status;
}

absl::Status DataDir::RemoveTemporaryFiles() {
  absl::Status status = fs_->RemoveAll(PathOf(kCurrentFile) + kTmpSuffix);
  auto keep_first_error = [&status](absl::Status s) {
    if (status.ok()) status = std::move(s);
  };
  keep_first_error(fs_->RemoveAll(PathOf(kParamsFile) + kTmpSuffix));
  keep_first_error(fs_->RemoveAll(PathOf(kRotationFile) + kTmpSuffix));
  if (fs_->Exists(SnapshotsPath())) {
    absl::StatusOr<std::vector<std::string>> names = fs_->List(SnapshotsPath());
    if (!names.ok()) {
      keep_first_error(names.status());
    } else {
      for (const std::string& name : *names) {
        if (name.ends_with(kSnapshotTmpSuffix)) {
          keep_first_error(fs_->RemoveAll(SnapshotPath(name)));
        }
      }
    }
  }
  return status;
}

absl::StatusOr<DataDir::SigningKeyFiles> DataDir::ListSigningKeys() const {
  COPS_ASSIGN_OR_RETURN(const std::vector<std::string> names, fs_->List(path_));
  SigningKeyFiles files;
  const std::string_view public_suffix = kPublicSuffix;
  for (std::string_view name : names) {
    const bool is_public = name.size() > public_suffix.size() &&
                           name.substr(name.size() - public_suffix.size()) == public_suffix;
    if (is_public) name.remove_suffix(public_suffix.size());
    const uint64_t n = SigningKeyNumberOf(name);
    if (n != 0) (is_public ? files.public_keys : files.private_keys).push_back(n);
  }
  std::sort(files.private_keys.begin(), files.private_keys.end());
  std::sort(files.public_keys.begin(), files.public_keys.end());
  return files;
}

absl::StatusOr<std::string> DataDir::ReadSigningKey(uint64_t n) const {
  return fs_->ReadFile(PathOf(SigningKeyFileName(n)));
}

absl::StatusOr<std::string> DataDir::ReadSigningPublicKey(uint64_t n) const {
  return fs_->ReadFile(PathOf(SigningPublicKeyFileName(n)));
}

absl::Status DataDir::CreateSigningKey(uint64_t n, std::string_view pem) {
  return CreateFileDurably(*fs_, PathOf(SigningKeyFileName(n)), pem, kKeyFileMode);
}

absl::Status DataDir::WriteSigningPublicKey(uint64_t n, std::string_view pem) {
  return WriteFileDurably(*fs_, PathOf(SigningPublicKeyFileName(n)), pem, kPublicFileMode);
}

absl::Status DataDir::RemoveSigningKey(uint64_t n) {
  absl::Status removed = RemoveSecretFile(PathOf(SigningKeyFileName(n)));
  absl::Status synced = Sync();
  return removed.ok() ? synced : removed;
}

absl::StatusOr<HashKey> ParseHashKey(std::string_view text) {
  return HashKey::FromHex(Trimmed(text));
}

absl::StatusOr<HashKey> ReadKeyFile(FileSystem& fs, const std::string& path) {
  COPS_ASSIGN_OR_RETURN(const std::string text, fs.ReadFile(path));
  absl::StatusOr<HashKey> key = ParseHashKey(text);
  if (!key.ok()) return absl::DataLossError(path + ": " + std::string(key.status().message()));
  return key;
}

}  // namespace cops
