#ifndef COPS_CLIENT_RECEIPT_COMMANDS_H_
#define COPS_CLIENT_RECEIPT_COMMANDS_H_

// Registration receipts on the client (docs/receipts.md):
//
//   cops register --receipt-dir DIR PATH...   saves DIR/<doc_id>.receipt.json per document
//   cops verify-receipt FILE --public-key KEYS [--document PATH]
//
// verify-receipt checks a receipt offline, without the server: its Ed25519 signature under
// one of the public keys in KEYS (a PEM file, e.g. the output of `cops admin public-key`,
// which may hold several), and, with --document, that SHA-256 of that file's bytes is the
// receipt's content_sha256. Exit codes: 0 valid ("VALID" and the receipt's fields on
// stdout), 1 invalid ("INVALID: <reason>" on stdout: a forged signature, a truncated,
// re-ordered or modified receipt, an unknown key id, another document), 2 error (a file that
// cannot be read, a key file without a public key, bad arguments; message on stderr). With
// --json: one object, {"valid": true, "receipt": {fields}, "document": PATH|null} or
// {"valid": false, "reason": "..."}.
//
// Thread-safety: plain functions over their arguments (and the file system).

#include <cstdint>
#include <iosfwd>
#include <string>

#include "absl/status/statusor.h"
#include "proto/cops.pb.h"

namespace CLI {
class App;
}

namespace cops {

// "<doc_id>.receipt.json".
std::string ReceiptFileName(uint64_t doc_id);

// Writes the receipt of `reply` to dir/ReceiptFileName(doc_id) (creating dir; replacing an
// older receipt of the same document) and returns the path. FAILED_PRECONDITION when the
// reply carries no receipt, INTERNAL when the file cannot be written.
absl::StatusOr<std::string> SaveReceipt(const std::string& dir,
                                        const v1::RegisterDocumentReply& reply);

struct VerifyReceiptArgs {
  std::string receipt;     // the receipt file ("-" = standard input)
  std::string public_key;  // PEM public key(s)
  std::string document;    // optional: the document the receipt should be for
  bool json = false;
};

// `cops verify-receipt`: writes the verdict to `out`, errors to `err`; returns the exit code.
int RunVerifyReceipt(const VerifyReceiptArgs& args, std::ostream& out, std::ostream& err);

// Adds the `verify-receipt` subcommand, whose options fill `*args` (not its json field),
// and returns it; the caller runs RunVerifyReceipt when it was parsed.
CLI::App* AddVerifyReceiptCommand(CLI::App* app, VerifyReceiptArgs* args);

}  // namespace cops

#endif  // COPS_CLIENT_RECEIPT_COMMANDS_H_
