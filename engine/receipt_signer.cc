#include "engine/receipt_signer.h"

#include <algorithm>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

SigningKeyInfo InfoOf(uint64_t number, const VerifyingKey& key) {
  return SigningKeyInfo{number, key.id(), key.ToPem(), false};
}

absl::Status Corrupt(const DataDir& dir, const std::string& name, const absl::Status& s) {
  return absl::DataLossError(StrCat(dir.PathOf(name), ": ", s.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReceiptSigner>> ReceiptSigner::Open(
    DataDir data_dir, std::function<int64_t()> clock) {
  std::unique_ptr<ReceiptSigner> signer(new ReceiptSigner(std::move(data_dir), std::move(clock)));
  COPS_RETURN_IF_ERROR(signer->Load());
  return signer;
}

absl::Status ReceiptSigner::Load() {
  absl::MutexLock rotating(&rotate_mu_);
  absl::MutexLock lock(&mu_);
  COPS_ASSIGN_OR_RETURN(const DataDir::SigningKeyFiles files, data_dir_.ListSigningKeys());
  auto has_public = [&](uint64_t n) {
    return std::binary_search(files.public_keys.begin(), files.public_keys.end(), n);
  };
  for (const std::vector<uint64_t>* numbers : {&files.private_keys, &files.public_keys}) {
    if (!numbers->empty()) next_number_ = std::max(next_number_, numbers->back() + 1);
  }

  // The live key: the highest private key that parses.
  uint64_t live = 0;
  std::shared_ptr<const SigningKey> key;
  for (auto n = files.private_keys.rbegin(); n != files.private_keys.rend() && key == nullptr;
       ++n) {
    COPS_ASSIGN_OR_RETURN(const std::string pem, data_dir_.ReadSigningKey(*n));
    absl::StatusOr<SigningKey> parsed = SigningKey::FromPem(pem);
    if (parsed.ok()) {
      live = *n;
      key = std::make_shared<const SigningKey>(*std::move(parsed));
    } else if (!has_public(*n)) {
      // Left by a crash while it was created: without a .pub it never signed.
      spdlog::warn("removing the incomplete receipt signing key {}",
                   data_dir_.PathOf(DataDir::SigningKeyFileName(*n)));
      COPS_RETURN_IF_ERROR(data_dir_.RemoveSigningKey(*n));
    } else {
      return Corrupt(data_dir_, DataDir::SigningKeyFileName(*n), parsed.status());
    }
  }
  if (key == nullptr) {  // first start
    COPS_ASSIGN_OR_RETURN(SigningKey created, SigningKey::Generate());
    live = next_number_++;
    COPS_RETURN_IF_ERROR(data_dir_.CreateSigningKey(live, created.ToPem()));
    key = std::make_shared<const SigningKey>(std::move(created));
  }
  // Its public key, before it signs anything.
  const std::string live_pem = key->verifying_key().ToPem();
  absl::StatusOr<std::string> recorded = data_dir_.ReadSigningPublicKey(live);
  if (!recorded.ok() || *recorded != live_pem) {
    COPS_RETURN_IF_ERROR(data_dir_.WriteSigningPublicKey(live, live_pem));
  }
  for (uint64_t n : files.private_keys) {
    if (n < live) COPS_RETURN_IF_ERROR(data_dir_.RemoveSigningKey(n));  // a rotation's leftover
  }

  for (uint64_t n : files.public_keys) {
    if (n == live) continue;
    COPS_ASSIGN_OR_RETURN(const std::string pem, data_dir_.ReadSigningPublicKey(n));
    absl::StatusOr<VerifyingKey> parsed = VerifyingKey::FromPem(pem);
    if (!parsed.ok()) {
      return Corrupt(data_dir_, DataDir::SigningPublicKeyFileName(n), parsed.status());
    }
    keys_.push_back(InfoOf(n, *parsed));
  }
  keys_.push_back(InfoOf(live, key->verifying_key()));
  keys_.back().live = true;
  std::sort(keys_.begin(), keys_.end(),
            [](const SigningKeyInfo& a, const SigningKeyInfo& b) { return a.number < b.number; });
  live_ = std::move(key);
  return absl::OkStatus();
}

absl::StatusOr<SignedReceipt> ReceiptSigner::Sign(ReceiptFields fields) const {
  std::shared_ptr<const SigningKey> key;
  {
    absl::ReaderMutexLock lock(&mu_);
    key = live_;
  }
  fields.issued_unix_micros = clock_();
  return SignReceipt(*key, std::move(fields));
}

absl::StatusOr<SigningKeyInfo> ReceiptSigner::Rotate() {
  absl::MutexLock rotating(&rotate_mu_);
  uint64_t old_number = 0, number = 0;
  {
    absl::MutexLock lock(&mu_);
    old_number = keys_.back().number;
    number = next_number_++;  // not reused even when this rotation fails
  }
  COPS_ASSIGN_OR_RETURN(SigningKey created, SigningKey::Generate());
  COPS_RETURN_IF_ERROR(data_dir_.CreateSigningKey(number, created.ToPem()));
  COPS_RETURN_IF_ERROR(data_dir_.WriteSigningPublicKey(number, created.verifying_key().ToPem()));
  SigningKeyInfo info = InfoOf(number, created.verifying_key());
  info.live = true;
  {
    absl::MutexLock lock(&mu_);
    keys_.back().live = false;
    keys_.push_back(info);
    live_ = std::make_shared<const SigningKey>(std::move(created));
  }
  absl::Status removed = data_dir_.RemoveSigningKey(old_number);
  if (!removed.ok()) {
    spdlog::warn("removing the retired receipt signing key {}: {}", old_number,
                 removed.ToString());
  }
  spdlog::info("receipt signing key {} ({}) is live; key {} retired", number, info.key_id,
               old_number);
  return info;
}

std::vector<SigningKeyInfo> ReceiptSigner::Keys() const {
  absl::ReaderMutexLock lock(&mu_);
  return keys_;
}

}  // namespace cops
