#include "storage/snapshot.h"

#include <optional>

#include "core/status_macros.h"
#include "storage/file_system.h"

namespace cops {
namespace {

constexpr uint32_t kOwnerOnlyFileMode = 0600;

// Writes the snapshot's content into the new directory `dir`.
absl::Status WriteInto(const SnapshotSource& source, const std::string& dir) {
  const DataDir& live = *source.data_dir;
  FileSystem& fs = live.fs();
  const uint64_t generation = source.generation;
  std::optional<HashKey> key;
  if (source.key_in_data_dir) {
    COPS_ASSIGN_OR_RETURN(key, live.ReadKey(generation));
  }
  COPS_ASSIGN_OR_RETURN(const std::optional<ChunkingParams> params, live.ReadParams());

  COPS_RETURN_IF_ERROR(fs.CreateDir(dir));
  DataDir copy(dir, &fs);
  // The index first: the access store copied after it knows every principal, collection
  // and audited document the copied index holds (see the header on consistency).
  COPS_RETURN_IF_ERROR(source.index->CreateSnapshot(copy.IndexPath(generation)));
  COPS_RETURN_IF_ERROR(source.access->CreateCheckpoint(copy.AccessStorePath()));
  if (key.has_value()) COPS_RETURN_IF_ERROR(copy.CreateKey(generation, *key));
  if (params.has_value()) COPS_RETURN_IF_ERROR(copy.WriteParams(*params));
  if (generation != 0) COPS_RETURN_IF_ERROR(copy.SetCurrent(generation));
  if (fs.Exists(live.AdminKeyPath())) {
    COPS_ASSIGN_OR_RETURN(const std::string admin_key, fs.ReadFile(live.AdminKeyPath()));
    COPS_RETURN_IF_ERROR(
        CreateFileDurably(fs, copy.AdminKeyPath(), admin_key, kOwnerOnlyFileMode));
  }
  // The receipt signing keys: the copy signs with the same key, and its public keys verify
  // every receipt issued so far.
  COPS_ASSIGN_OR_RETURN(const DataDir::SigningKeyFiles signing, live.ListSigningKeys());
  for (uint64_t n : signing.private_keys) {
    absl::StatusOr<std::string> pem = live.ReadSigningKey(n);
    if (absl::IsNotFound(pem.status())) continue;  // retired by a rotation since the listing
    COPS_RETURN_IF_ERROR(pem.status());
    COPS_RETURN_IF_ERROR(copy.CreateSigningKey(n, *pem));
  }
  for (uint64_t n : signing.public_keys) {
    COPS_ASSIGN_OR_RETURN(const std::string pem, live.ReadSigningPublicKey(n));
    COPS_RETURN_IF_ERROR(copy.WriteSigningPublicKey(n, pem));
  }
  COPS_RETURN_IF_ERROR(fs.MakeOwnerOnly(dir));
  return copy.Sync();
}

}  // namespace

absl::Status ValidateSnapshotName(std::string_view name) {
  COPS_RETURN_IF_ERROR(ValidateAccessName("snapshot", name));
  if (name == "." || name == "..") {
    return absl::InvalidArgumentError("snapshot name may not be . or ..");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteSnapshot(const SnapshotSource& source, std::string_view name) {
  COPS_RETURN_IF_ERROR(ValidateSnapshotName(name));
  const DataDir& live = *source.data_dir;
  FileSystem& fs = live.fs();
  const std::string path = live.SnapshotPath(name);
  const std::string tmp = live.SnapshotTempPath(name);
  DataDir snapshots(live.SnapshotsPath(), &fs);
  COPS_RETURN_IF_ERROR(snapshots.Create());
  if (fs.Exists(path)) return absl::AlreadyExistsError("snapshot " + path + " already exists");
  COPS_RETURN_IF_ERROR(fs.RemoveAll(tmp));  // left by an attempt that failed

  absl::Status status = WriteInto(source, tmp);
  bool renamed = false;
  if (status.ok()) {
    status = fs.Rename(tmp, path);
    renamed = status.ok();
  }
  if (status.ok()) status = snapshots.Sync();
  if (status.ok()) return path;
  // Best effort: what is left is not a snapshot (a leftover ~tmp goes at the next start).
  (void)fs.RemoveAll(renamed ? path : tmp);
  return status;
}

}  // namespace cops
