#ifndef COPS_STORAGE_DATA_DIR_H_
#define COPS_STORAGE_DATA_DIR_H_

// copsd's data directory: every name in it, and the file steps that change it (as LevelDB's
// filename.h). This header is the one place the layout is defined; docs/storage-format.md
// describes it in prose. All names are on-disk format: do not change them.
//
//   CURRENT            names the live generation n >= 1: "index.<n> hash_key.<n>\n". Absent
//                      until the first key rotation: generation 0 is then live.
//   CURRENT.tmp        CURRENT being replaced (write, fsync, rename); a leftover is deleted.
//   ROTATING           present while a key rotation to generation n+1 is under way, from
//                      before its key file is created until the generation it replaced (or
//                      the unfinished one) is deleted: "index.<n+1> hash_key.<n+1>\n", as
//                      CURRENT. It is what lets a start prove a generation stale.
//   ROTATING.tmp       ROTATING being written; a leftover is deleted.
//   index/             generation 0's RocksDB index (storage/index.h), the layout from
//                      before key rotation existed.
//   hash.key           generation 0's secret chunk-hashing key: 32 hex digits and "\n",
//                      mode 0600 (unless the key is given from outside the directory).
//   index.<n>/         generation n's index (n >= 1, decimal, no leading zeros).
//   hash_key.<n>       generation n's key, as hash.key.
//   params             ChunkingParams::Encode() of the live generation as lowercase hex and
//                      "\n", naming the live key's id; written when the index is created and
//                      rewritten (params.tmp, fsync, rename) by a key rotation.
//   access/            the access store (storage/principal_store.h): principals, API keys,
//                      collections, usage, audit; shared by every generation.
//   admin.key          the bootstrap admin's API key, mode 0600, created once, never
//                      overwritten.
//   snapshots/<name>/  a snapshot made by the Admin service (storage/snapshot.h): a complete
//                      data directory of its own (without snapshots/), holding secrets, so
//                      owner-only (directories 0700, files 0600).
//   snapshots/<name>~tmp/  snapshot <name> being written ("~" is in no valid name); renamed to
//                      snapshots/<name>/ when complete; a leftover is deleted.
//   signing_key.<n>    receipt signing key n >= 1 (engine/receipt_signer.h): an Ed25519
//                      private key, PKCS#8 PEM, mode 0600. Only the live one, the highest n,
//                      is kept: a signing-key rotation creates n+1, then zero-fills and
//                      removes n.
//   signing_key.<n>.pub  its public key (PEM SubjectPublicKeyInfo), mode 0644, kept after
//                      the rotation so that receipts it signed still verify.
//
// Only the generation CURRENT names is live (generation 0 without CURRENT). Another
// generation is provably stale only with ROTATING naming n+1: with CURRENT naming n (or, for
// n = 0, absent beside a present generation 0), n+1 is the unfinished one; with CURRENT
// naming n+1, n is the replaced one. A start deletes exactly those; any other generation
// present (a lost CURRENT, a partial restore) makes it refuse, deleting nothing
// (docs/operations.md, "A data directory copsd refuses to open"). A rotation from
// generation n to n+1 changes the directory in this order, so that a crash at any point
// leaves generation n or n+1 complete and live:
//   1. SetRotation(n+1);
//   2. CreateKey(n+1), then RocksDB builds index.<n+1>/ (not through this module);
//   3. SetCurrent(n+1), Sync(): the switch;
//   4. WriteParams(rotated params): a crash before it leaves params naming the old key,
//      which the next start rewrites (the live key's id wins);
//   5. RemoveGeneration(n), then ClearRotation().
// A failed rotation removes generation n+1, then clears ROTATING.
//
// Thread-safety: a DataDir holds no mutable state; concurrent calls on different files are
// safe, concurrent changes of the same file are not (copsd makes them from one thread at a
// time: start-up, then the rotation).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/hash_key.h"
#include "core/params.h"
#include "storage/file_system.h"

namespace cops {

class DataDir {
 public:
  // on-disk: names in the data directory; do not change.
  static constexpr char kCurrentFile[] = "CURRENT";
  static constexpr char kRotationFile[] = "ROTATING";
  static constexpr char kParamsFile[] = "params";
  static constexpr char kAccessStoreDir[] = "access";
  static constexpr char kAdminKeyFile[] = "admin.key";
  static constexpr char kSnapshotsDir[] = "snapshots";
  // "index" for generation 0, else "index.<n>".
  static std::string IndexDirName(uint64_t generation);
  // "hash.key" for generation 0, else "hash_key.<n>".
  static std::string KeyFileName(uint64_t generation);
  // "signing_key.<n>" and "signing_key.<n>.pub".
  static std::string SigningKeyFileName(uint64_t n);
  static std::string SigningPublicKeyFileName(uint64_t n);

  // The data directory at `path`, accessed through `fs` (not owned, must outlive this;
  // nullptr = FileSystem::Default()). Touches nothing: see Create().
  explicit DataDir(std::string path, FileSystem* fs = nullptr);

  const std::string& path() const { return path_; }
  FileSystem& fs() const { return *fs_; }

  // Creates the directory (and its parents) when missing, durably (syncing its parent); a
  // new data directory is owner-only (0700). An existing one keeps its mode.
  absl::Status Create();
  // fsyncs the directory: makes every name created, renamed or removed in it durable.
  absl::Status Sync();

  // Paths of the entries above.
  std::string PathOf(std::string_view name) const;
  std::string IndexPath(uint64_t generation) const { return PathOf(IndexDirName(generation)); }
  std::string KeyPath(uint64_t generation) const { return PathOf(KeyFileName(generation)); }
  std::string AccessStorePath() const { return PathOf(kAccessStoreDir); }
  std::string AdminKeyPath() const { return PathOf(kAdminKeyFile); }
  std::string SnapshotsPath() const { return PathOf(kSnapshotsDir); }
  // snapshots/<name> and snapshots/<name>~tmp.
  std::string SnapshotPath(std::string_view name) const;
  std::string SnapshotTempPath(std::string_view name) const;

  // The live generation: the one CURRENT names, 0 without CURRENT. DATA_LOSS when CURRENT is
  // not a well-formed pointer.
  absl::StatusOr<uint64_t> ReadCurrent() const;
  // Makes CURRENT name generation `generation` (>= 1): writes and fsyncs CURRENT.tmp, then
  // renames it over CURRENT, so that every reader sees the old or the new pointer. OK means
  // the rename happened: the switch is visible, and durable once Sync() returns. An error
  // means CURRENT is unchanged.
  absl::Status SetCurrent(uint64_t generation);

  // The generation a rotation under way builds (the one ROTATING names); std::nullopt
  // without ROTATING. DATA_LOSS when ROTATING is not a well-formed pointer.
  absl::StatusOr<std::optional<uint64_t>> ReadRotation() const;
  // Records durably (ROTATING.tmp, fsync, rename, directory fsync) that a rotation builds
  // generation `generation` (>= 1).
  absl::Status SetRotation(uint64_t generation);
  // Removes ROTATING and syncs the directory; OK when absent.
  absl::Status ClearRotation();
  // Whether generation `generation` has both its index directory and its key file.
  bool HasGeneration(uint64_t generation) const;

  // The key of generation `generation`: NOT_FOUND when its file is missing, DATA_LOSS when
  // it does not hold 32 hex digits (surrounding whitespace ignored).
  absl::StatusOr<HashKey> ReadKey(uint64_t generation) const;
  // Writes `key` as generation `generation`'s key file (mode 0600) and syncs the directory.
  // ALREADY_EXISTS when the file exists: a key file is never overwritten.
  absl::Status CreateKey(uint64_t generation, const HashKey& key);

  // The parameters recorded in `params`; std::nullopt when there is no such file. DATA_LOSS
  // when it does not decode.
  absl::StatusOr<std::optional<ChunkingParams>> ReadParams() const;
  // Replaces `params` durably (params.tmp, fsync, rename, directory fsync): a crash leaves
  // the old or the new parameters.
  absl::Status WriteParams(const ChunkingParams& params);

  // The generations present besides `live`: every index.<m>/ or hash_key.<m> with m != live,
  // and 0 when live != 0 and index/ or hash.key exists. Ascending, without repeats.
  absl::StatusOr<std::vector<uint64_t>> OtherGenerations(uint64_t live) const;
  // Deletes generation `generation`: its index directory, and its key file after
  // overwriting it with zeros (so the key does not linger in the file's blocks; best effort:
  // journaling and SSDs may keep copies); then syncs the directory. Absent parts are fine.
  // Tries every step and returns the first error.
  absl::Status RemoveGeneration(uint64_t generation);
  // Deletes what an interrupted replacement of CURRENT, ROTATING or params left
  // (CURRENT.tmp, ROTATING.tmp, params.tmp) and what an interrupted snapshot left (snapshots/<name>~tmp/). Tries every
  // step and returns the first error.
  absl::Status RemoveTemporaryFiles();

  // The receipt signing keys present: the n of every signing_key.<n> (private) and of every
  // signing_key.<n>.pub (public), each ascending.
  struct SigningKeyFiles {
    std::vector<uint64_t> private_keys;
    std::vector<uint64_t> public_keys;
  };
  absl::StatusOr<SigningKeyFiles> ListSigningKeys() const;
  // The PEM text of signing_key.<n> / signing_key.<n>.pub: NOT_FOUND when missing.
  absl::StatusOr<std::string> ReadSigningKey(uint64_t n) const;
  absl::StatusOr<std::string> ReadSigningPublicKey(uint64_t n) const;
  // Creates signing_key.<n> holding `pem` (mode 0600) and syncs the directory. ALREADY_EXISTS
  // when it exists: a private key file is never overwritten. A crash before this returns may
  // leave the file empty or partial.
  absl::Status CreateSigningKey(uint64_t n, std::string_view pem);
  // Replaces signing_key.<n>.pub durably (mode 0644): a crash leaves the old file or the
  // new one.
  absl::Status WriteSigningPublicKey(uint64_t n, std::string_view pem);
  // Zero-fills and removes signing_key.<n> (as RemoveGeneration does a key file), then syncs
  // the directory; its .pub stays. OK when it is absent.
  absl::Status RemoveSigningKey(uint64_t n);

 private:
  // Overwrites the secret file `path` with zeros, then unlinks it (no sync); OK when absent.
  absl::Status RemoveSecretFile(const std::string& path);
  // The generation the pointer file `name` (CURRENT, ROTATING) names; std::nullopt when absent.
  absl::StatusOr<std::optional<uint64_t>> ReadPointer(std::string_view name) const;
  static std::string PointerText(uint64_t generation);

  const std::string path_;
  FileSystem* const fs_;
};

// The key written in `text` as a key file holds it: 32 hex digits, surrounding whitespace
// ignored. INVALID_ARGUMENT otherwise.
absl::StatusOr<HashKey> ParseHashKey(std::string_view text);

// The key in file `path` (as ParseHashKey): NOT_FOUND when it cannot be read, DATA_LOSS
// naming the file when it is malformed.
absl::StatusOr<HashKey> ReadKeyFile(FileSystem& fs, const std::string& path);

}  // namespace cops

#endif  // COPS_STORAGE_DATA_DIR_H_
