#ifndef COPS_CLIENT_ADMIN_COMMANDS_H_
#define COPS_CLIENT_ADMIN_COMMANDS_H_

// `cops admin ...`: the command line over the Admin service (proto/cops_admin.proto).
//
//   cops admin principal create NAME --role owner|checker|admin [--collection C]...
//                                    [--rps R] [--burst N] [--max-documents N] [--max-bytes N]
//   cops admin principal list
//   cops admin principal grant NAME --collection C...      (replaces the grants)
//   cops admin key create PRINCIPAL                          (another key, e.g. to rotate)
//   cops admin key revoke KEY_ID
//   cops admin collection create NAME [--show-titles] [--no-audit] [--retention DURATION]
//   cops admin collection list
//   cops admin audit DOC_ID [--since UNIX_MICROS] [--limit N]
//   cops admin snapshot NAME              (a data directory copsd starts on: storage/snapshot.h)
//   cops admin rotate-key [--drop-documents-without-text] [--wait]   (chunk-hashing key)
//   cops admin rotate-key --status [--wait]
//   cops admin public-key [--key-id ID]     receipt signing keys, PEM (any principal)
//   cops admin rotate-signing-key           a new live receipt signing key
//   cops admin upgrade-index DATA_DIR [--expected-documents N]   offline, copsd stopped:
//                                           the index's postings into buckets (schema 4)
//
// A new API key is printed once, on stdout; the server keeps only a salted hash of it.
// With --json each command prints one JSON object. Exit codes: 0 done, 2 error (message on
// stderr, e.g. "cops admin: PERMISSION_DENIED: ...").
//
// Thread-safety: the commands run on the caller's thread during CLI parsing.

#include <functional>
#include <memory>

namespace CLI {
class App;
}
namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace cops {

struct AdminCommandEnv {
  // Opens the channel to the server named by the global options (--server, TLS files).
  std::function<std::shared_ptr<grpc::Channel>()> connect;
  // Prepares each call: API key metadata (--api-key / COPS_API_KEY) and a deadline.
  std::function<void(grpc::ClientContext*)> prepare;
  const bool* json = nullptr;  // the global --json flag; may be null (= false)
  int* exit_code = nullptr;    // set by the command that ran
};

// Adds the `admin` subcommand tree to `app`. `env` is copied; its pointers must outlive
// app->parse().
void AddAdminCommands(CLI::App* app, AdminCommandEnv env);

}  // namespace cops

#endif  // COPS_CLIENT_ADMIN_COMMANDS_H_
