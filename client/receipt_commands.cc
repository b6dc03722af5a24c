#include "client/receipt_commands.h"

#include <filesystem>
#include <fstream>
#include <ostream>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/batch_check.h"
#include "core/hash_key.h"
#include "core/receipt.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr int kExitValid = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitError = 2;

int Invalid(const VerifyReceiptArgs& args, const std::string& reason, std::ostream& out) {
  if (args.json) {
    out << Json{{"valid", false}, {"reason", reason}}.dump() << "\n";
  } else {
    out << "INVALID: " << reason << "\n";
  }
  return kExitInvalid;
}

int Error(const std::string& message, std::ostream& err) {
  err << "cops verify-receipt: " << message << "\n";
  return kExitError;
}

}  // namespace

std::string ReceiptFileName(uint64_t doc_id) { return std::to_string(doc_id) + ".receipt.json"; }

absl::StatusOr<std::string> SaveReceipt(const std::string& dir,
                                        const v1::RegisterDocumentReply& reply) {
  if (!reply.has_receipt()) {
    return absl::FailedPreconditionError(
        "the server sent no receipt for #" + std::to_string(reply.doc_id()) +
        " (an existing document the caller may not read, or a server without receipts)");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create " + dir + ": " + ec.message());
  const std::string path = (fs::path(dir) / ReceiptFileName(reply.doc_id())).string();
  const SignedReceipt receipt{reply.receipt().payload(), reply.receipt().signature(),
                              reply.receipt().key_id()};
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << EncodeReceiptFile(receipt);
  file.close();
  if (!file) return absl::InternalError("cannot write " + path);
  return path;
}

int RunVerifyReceipt(const VerifyReceiptArgs& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> keys_pem = ReadDocument(args.public_key);
  if (!keys_pem.ok()) return Error(std::string(keys_pem.status().message()), err);
  absl::StatusOr<std::vector<VerifyingKey>> keys = ParseVerifyingKeys(*keys_pem);
  if (!keys.ok()) return Error(args.public_key + ": " + std::string(keys.status().message()), err);
  absl::StatusOr<std::string> document;
  if (!args.document.empty()) {
    document = ReadDocument(args.document);
    if (!document.ok()) return Error(std::string(document.status().message()), err);
  }
  absl::StatusOr<std::string> text = ReadDocument(args.receipt);
  if (!text.ok()) return Error(std::string(text.status().message()), err);

  // From here on every defect is the receipt's: exit 1 with the reason.
  absl::StatusOr<SignedReceipt> receipt = DecodeReceiptFile(*text);
  if (!receipt.ok()) return Invalid(args, std::string(receipt.status().message()), out);
  absl::StatusOr<ReceiptFields> fields = VerifyReceipt(*receipt, *keys);
  if (!fields.ok()) return Invalid(args, std::string(fields.status().message()), out);
  if (!args.document.empty()) {
    if (fields->content_sha256.empty()) {
      return Invalid(args,
                     "the receipt states no SHA-256 of the document's bytes (the server kept "
                     "none), so " + args.document + " cannot be matched to it",
                     out);
    }
    const std::string digest = Sha256Hex(*document);
    if (digest != fields->content_sha256) {
      return Invalid(args,
                     args.document + " is not the registered document: its SHA-256 is " +
                         digest + ", the receipt's " + fields->content_sha256,
                     out);
    }
  }
  // The signed fields as the payload states them, in its order.
  const Json payload = Json::parse(receipt->payload, nullptr, /*allow_exceptions=*/false);
  if (args.json) {
    Json j = {{"valid", true}, {"receipt", payload}, {"document", nullptr}};
    if (!args.document.empty()) j["document"] = args.document;
    out << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    return kExitValid;
  }
  out << "VALID: signed by key " << receipt->key_id;
  if (!args.document.empty()) out << "; " << args.document << " is the registered document";
  out << "\n";
  for (const auto& item : payload.items()) {
    out << "  " << item.key() << ": "
        << (item.value().is_string() ? item.value().get<std::string>() : item.value().dump())
        << "\n";
  }
  return kExitValid;
}

CLI::App* AddVerifyReceiptCommand(CLI::App* app, VerifyReceiptArgs* args) {
  CLI::App* verify = app->add_subcommand(
      "verify-receipt",
      "Check a registration receipt offline: exit 0 valid, 1 invalid, 2 error");
  verify->add_option("receipt", args->receipt, "Receipt file (- for stdin)")->required();
  verify->add_option("--public-key", args->public_key,
                     "The server's public key(s), PEM (`cops admin public-key` output)")
      ->required();
  verify->add_option("--document", args->document,
                     "Also check that this file is the registered document");
  return verify;
}

}  // namespace cops
