#ifndef COPS_ENGINE_RECEIPT_SIGNER_H_
#define COPS_ENGINE_RECEIPT_SIGNER_H_

// The server's receipt signing keys (docs/receipts.md): the live Ed25519 key that signs every
// registration's receipt, and the public key of every signing key the data directory ever
// had, so that receipts signed before a rotation still verify. The keys are files of the
// data directory (storage/data_dir.h: signing_key.<n>, signing_key.<n>.pub); signing and
// the receipt format are core/receipt.h's.
//
// The live key is the highest-numbered private key. Its .pub is written before it signs
// anything, so a private key without a .pub never signed. A rotation from key n to n+1:
//   1. CreateSigningKey(n+1);
//   2. WriteSigningPublicKey(n+1), then the switch: new receipts are signed by n+1;
//   3. RemoveSigningKey(n): n's private key is zero-filled and unlinked, its .pub stays.
// Open() repairs what a crash at any point left: a highest private key that does not parse
// and has no .pub (a crash in step 1) is deleted; the live key's missing .pub is written
// from it; private keys older than the live one are removed. So the public key of every key
// that signed is kept, and the directory always has one usable live key.
//
// Thread-safety: safe for concurrent use; Sign() never waits for a rotation's file writes.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/receipt.h"
#include "engine/wall_clock.h"
#include "storage/data_dir.h"

namespace cops {

// One public signing key, as `cops admin public-key` lists it.
struct SigningKeyInfo {
  uint64_t number = 0;     // n of signing_key.<n>.pub
  std::string key_id;      // VerifyingKey::id()
  std::string public_pem;  // VerifyingKey::ToPem()
  bool live = false;       // the key that signs new receipts
};

class ReceiptSigner {
 public:
  // Opens the signing keys of `data_dir` (an existing directory; its FileSystem must outlive
  // the signer), creating key 1 on first start and repairing what an interrupted rotation
  // left (above). `clock` gives the receipts' issue time in Unix microseconds.
  // DATA_LOSS naming the file when the live private key or a public key file does not
  // parse; errors of the file system as they come.
  static absl::StatusOr<std::unique_ptr<ReceiptSigner>> Open(
      DataDir data_dir, std::function<int64_t()> clock = WallClockMicros);

  // `fields` signed by the live key, issued now (issued_unix_micros and signing_key_id are
  // set here). INTERNAL if OpenSSL fails.
  absl::StatusOr<SignedReceipt> Sign(ReceiptFields fields) const;

  // Makes a new key live (steps above) and returns it; receipts signed afterwards carry its
  // id. The old private key is destroyed; its public key stays in Keys(). On an error in
  // step 1 or 2 the old key stays live (until the next start, which may make a complete new
  // key live); an error of step 3 is only logged (the next start removes the old key).
  absl::StatusOr<SigningKeyInfo> Rotate();

  // Every public key, in key order (the live one last).
  std::vector<SigningKeyInfo> Keys() const;

 private:
  ReceiptSigner(DataDir data_dir, std::function<int64_t()> clock)
      : data_dir_(std::move(data_dir)), clock_(std::move(clock)) {}

  // The state Open() finds, repairing it; see Open().
  absl::Status Load();

  DataDir data_dir_;
  const std::function<int64_t()> clock_;
  absl::Mutex rotate_mu_;  // serializes rotations; taken before mu_
  mutable absl::Mutex mu_;
  std::shared_ptr<const SigningKey> live_ ABSL_GUARDED_BY(mu_);
  std::vector<SigningKeyInfo> keys_ ABSL_GUARDED_BY(mu_);  // in key order, live last
  // Above every signing_key number the directory holds: the number of the next key.
  uint64_t next_number_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace cops

#endif  // COPS_ENGINE_RECEIPT_SIGNER_H_
