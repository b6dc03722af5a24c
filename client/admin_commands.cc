#include "client/admin_commands.h"

#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/cli_options.h"
#include "client/client.h"
#include "core/time_format.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "proto/cops_admin.grpc.pb.h"
#include "storage/data_dir.h"
#include "storage/index.h"

namespace cops {
namespace {

using json = nlohmann::ordered_json;

const char* RoleText(v1::PrincipalRole role) {
  switch (role) {
    case v1::PRINCIPAL_ROLE_OWNER: return "owner";
    case v1::PRINCIPAL_ROLE_CHECKER: return "checker";
    case v1::PRINCIPAL_ROLE_ADMIN: return "admin";
    default: return "unspecified";
  }
}

// Option values, alive for the whole parse (the callbacks read them).
struct AdminArgs {
  std::string name;
  std::string role;
  std::vector<std::string> collections;
  double rps = 0;
  uint32_t burst = 0;
  uint64_t max_documents = 0;
  uint64_t max_bytes = 0;
  bool show_titles = false;
  bool template_source = false;
  bool no_audit = false;
  std::string retention;
  uint64_t doc_id = 0;
  int64_t since = 0;
  uint32_t limit = 0;
  bool drop_without_text = false;
  bool status_only = false;
  bool wait = false;
  std::string bulk_action;
  std::string signing_key_id;
  std::string data_dir;
  uint64_t expected_documents = 0;
};

class Runner {
 public:
  explicit Runner(AdminCommandEnv env) : env_(std::move(env)) {}

  bool json() const { return env_.json != nullptr && *env_.json; }

  // Runs one unary call; prints the error and sets exit code 2 on failure. `deadline`
  // replaces the usual one for calls that take long by design.
  template <typename Request, typename Response, typename Method>
  bool Call(Method method, const Request& request, Response* response,
            std::optional<std::chrono::system_clock::duration> deadline = std::nullopt) {
    auto stub = v1::Admin::NewStub(env_.connect());
    grpc::ClientContext context;
    if (env_.prepare) env_.prepare(&context);
    if (deadline.has_value()) context.set_deadline(std::chrono::system_clock::now() + *deadline);
    grpc::Status status = ((*stub).*method)(&context, request, response);
    if (!status.ok()) {
      std::cerr << "cops admin: " << FromGrpc(status).ToString() << "\n";
      SetExit(2);
      return false;
    }
    SetExit(0);
    return true;
  }

  void SetExit(int code) {
    if (env_.exit_code != nullptr) *env_.exit_code = code;
  }

 private:
  AdminCommandEnv env_;
};

json PrincipalJson(const v1::PrincipalInfo& p) {
  json keys = json::array();
  for (const auto& k : p.keys()) {
    keys.push_back({{"key_id", k.key_id()},
                    {"created_unix_micros", k.created_unix_micros()},
                    {"revoked", k.revoked_unix_micros() != 0}});
  }
  return {{"name", p.name()},
          {"role", RoleText(p.role())},
          {"collections", std::vector<std::string>(p.collections().begin(), p.collections().end())},
          {"requests_per_second", p.limits().requests_per_second()},
          {"burst", p.limits().burst()},
          {"max_documents", p.limits().max_documents()},
          {"max_bytes", p.limits().max_bytes()},
          {"used_documents", p.used_documents()},
          {"used_bytes", p.used_bytes()},
          {"keys", keys}};
}

std::string Joined(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

void PrintPrincipal(const v1::PrincipalInfo& p) {
  int active = 0;
  for (const auto& k : p.keys()) active += k.revoked_unix_micros() == 0 ? 1 : 0;
  std::cout << p.name() << "\t" << RoleText(p.role()) << "\tcollections=" << Joined(p.collections())
            << "\tdocuments=" << p.used_documents() << "\tbytes=" << p.used_bytes()
            << "\tactive_keys=" << active << "\n";
}

void PrintNewKey(bool as_json, const std::string& principal, const std::string& key_id,
                 const std::string& api_key) {
  if (as_json) {
    std::cout << json{{"principal", principal}, {"key_id", key_id}, {"api_key", api_key}}.dump()
              << "\n";
    return;
  }
  std::cerr << "API key for '" << principal << "' (id " << key_id
            << "); it is shown only now, store it safely:\n";
  std::cout << api_key << "\n";
}

std::string_view RotationStateText(v1::KeyRotationState state) {
  switch (state) {
    case v1::KEY_ROTATION_STATE_IDLE:
      return "idle";
    case v1::KEY_ROTATION_STATE_REBUILDING:
      return "rebuilding";
    case v1::KEY_ROTATION_STATE_SWITCHING:
      return "switching";
    case v1::KEY_ROTATION_STATE_DONE:
      return "done";
    case v1::KEY_ROTATION_STATE_FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

void PrintRotation(bool as_json, const v1::KeyRotationStatus& s) {
  if (as_json) {
    std::cout << json{{"state", RotationStateText(s.state())},
                      {"generation", s.generation()},
                      {"key_id", s.key_id()},
                      {"new_key_id", s.new_key_id()},
                      {"documents_done", s.documents_done()},
                      {"documents_total", s.documents_total()},
                      {"documents_dropped", s.documents_dropped()},
                      {"error", s.error()}}
                     .dump()
              << "\n";
    return;
  }
  std::cout << "state=" << RotationStateText(s.state()) << "\tgeneration=" << s.generation()
            << "\tkey_id=" << s.key_id() << "\tnew_key_id=" << (s.new_key_id().empty() ? "-" : s.new_key_id())
            << "\tdocuments=" << s.documents_done() << "/" << s.documents_total()
            << "\tdropped=" << s.documents_dropped()
            << (s.error().empty() ? "" : "\terror=" + s.error()) << "\n";
}

// `admin principal create|list|grant`.
void AddPrincipalCommands(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                          const std::shared_ptr<Runner>& run) {
  CLI::App* principal = admin->add_subcommand("principal", "Principals (who may do what)");
  principal->require_subcommand(1);
  CLI::App* create = principal->add_subcommand("create", "Create a principal and its first API key");
  create->add_option("name", args->name, "Principal name (for mTLS: the certificate CN or a SAN)")
      ->required()
      ->check(Utf8Text());
  create->add_option("--role", args->role, "owner, checker or admin")
      ->required()
      ->check(CLI::IsMember({"owner", "checker", "admin"}));
  create
      ->add_option("--collection", args->collections,
                   "Collection it may use (repeatable); an admin without one administers the "
                   "whole server, an admin with some only those")
      ->check(Utf8Text());
  create->add_option("--rps", args->rps, "Requests per second (0 = server default)");
  create->add_option("--burst", args->burst, "Burst of requests (0 = server default)");
  create->add_option("--max-documents", args->max_documents, "Registration quota (0 = none)");
  create->add_option("--max-bytes", args->max_bytes, "Registered bytes quota (0 = none)");
  create->callback([args, run] {
    v1::CreatePrincipalRequest req;
    req.set_name(args->name);
    req.set_role(args->role == "owner"     ? v1::PRINCIPAL_ROLE_OWNER
                 : args->role == "checker" ? v1::PRINCIPAL_ROLE_CHECKER
                                           : v1::PRINCIPAL_ROLE_ADMIN);
    for (const auto& c : args->collections) req.add_collections(c);
    req.mutable_limits()->set_requests_per_second(args->rps);
    req.mutable_limits()->set_burst(args->burst);
    req.mutable_limits()->set_max_documents(args->max_documents);
    req.mutable_limits()->set_max_bytes(args->max_bytes);
    v1::CreatePrincipalResponse resp;
    if (!run->Call(&v1::Admin::Stub::CreatePrincipal, req, &resp)) return;
    PrintNewKey(run->json(), resp.principal().name(), resp.key_id(), resp.api_key());
  });

  CLI::App* plist = principal->add_subcommand("list", "List principals, usage and key ids");
  plist->callback([run] {
    v1::ListPrincipalsResponse resp;
    if (!run->Call(&v1::Admin::Stub::ListPrincipals, v1::ListPrincipalsRequest(), &resp)) return;
    if (run->json()) {
      json all = json::array();
      for (const auto& p : resp.principals()) all.push_back(PrincipalJson(p));
      std::cout << json{{"principals", all}}.dump() << "\n";
      return;
    }
    for (const auto& p : resp.principals()) {
      PrintPrincipal(p);
      for (const auto& k : p.keys()) {
        std::cout << "  key " << k.key_id() << (k.revoked_unix_micros() != 0 ? " (revoked)" : "")
                  << "\n";
      }
    }
  });

  CLI::App* grant = principal->add_subcommand("grant", "Replace the collections of a principal");
  grant->add_option("name", args->name, "Principal name")->required()->check(Utf8Text());
  grant->add_option("--collection", args->collections, "Collection (repeatable)")
      ->required()
      ->check(Utf8Text());
  grant->callback([args, run] {
    v1::SetPrincipalCollectionsRequest req;
    req.set_principal(args->name);
    for (const auto& c : args->collections) req.add_collections(c);
    v1::SetPrincipalCollectionsResponse resp;
    if (!run->Call(&v1::Admin::Stub::SetPrincipalCollections, req, &resp)) return;
    if (run->json()) {
      std::cout << PrincipalJson(resp.principal()).dump() << "\n";
    } else {
      PrintPrincipal(resp.principal());
    }
  });
}

// `admin key create|revoke`.
void AddKeyCommands(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                    const std::shared_ptr<Runner>& run) {
  CLI::App* key = admin->add_subcommand("key", "API keys");
  key->require_subcommand(1);
  CLI::App* kcreate = key->add_subcommand("create", "Another API key for a principal");
  kcreate->add_option("principal", args->name, "Principal name")->required()->check(Utf8Text());
  kcreate->callback([args, run] {
    v1::CreateApiKeyRequest req;
    req.set_principal(args->name);
    v1::CreateApiKeyResponse resp;
    if (!run->Call(&v1::Admin::Stub::CreateApiKey, req, &resp)) return;
    PrintNewKey(run->json(), args->name, resp.key_id(), resp.api_key());
  });
  CLI::App* revoke = key->add_subcommand("revoke", "Revoke an API key at once");
  revoke->add_option("key_id", args->name, "Key id (16 hex digits, from `principal list`)")
      ->required();
  revoke->callback([args, run] {
    v1::RevokeApiKeyRequest req;
    req.set_key_id(args->name);
    v1::RevokeApiKeyResponse resp;
    if (!run->Call(&v1::Admin::Stub::RevokeApiKey, req, &resp)) return;
    if (run->json()) {
      std::cout << json{{"key_id", args->name}, {"revoked", true}}.dump() << "\n";
    } else {
      std::cout << "revoked " << args->name << "\n";
    }
  });
}

// `admin collection create|list`.
void AddCollectionCommands(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                           const std::shared_ptr<Runner>& run) {
  CLI::App* collection = admin->add_subcommand("collection", "Collections and their privacy");
  collection->require_subcommand(1);
  CLI::App* ccreate =
      collection->add_subcommand("create", "Create a collection or change its settings");
  ccreate->add_option("name", args->name, "Collection name")->required()->check(Utf8Text());
  ccreate->add_flag("--show-titles", args->show_titles, "Checkers see document titles");
  ccreate->add_flag("--no-audit", args->no_audit, "Keep no audit trail of checks");
  ccreate->add_flag("--template", args->template_source,
                    "Template documents: text shared with them never counts in checks");
  ccreate->add_option("--retention", args->retention,
                      "Documents registered without an expiry expire this long after their "
                      "registration, e.g. 365d (default: kept until unregistered)")
      ->check([](const std::string& text) {
        absl::StatusOr<int64_t> seconds = ParseDurationSeconds(text);
        return seconds.ok() ? std::string() : std::string(seconds.status().message());
      });
  auto print_collection = [](bool as_json, const v1::CollectionInfo& c) {
    if (as_json) {
      std::cout << json{{"name", c.name()},
                        {"show_titles_to_checkers", c.show_titles_to_checkers()},
                        {"keep_audit", c.keep_audit()},
                        {"template", c.template_()},
                        {"retention_seconds", c.retention_seconds()}}
                       .dump()
                << "\n";
    } else {
      std::cout << c.name() << "\tshow_titles_to_checkers=" << c.show_titles_to_checkers()
                << "\tkeep_audit=" << c.keep_audit() << "\ttemplate=" << c.template_()
                << "\tretention_seconds=" << c.retention_seconds() << "\n";
    }
  };
  ccreate->callback([args, run, print_collection] {
    v1::CreateCollectionRequest req;
    req.mutable_collection()->set_name(args->name);
    req.mutable_collection()->set_show_titles_to_checkers(args->show_titles);
    req.mutable_collection()->set_keep_audit(!args->no_audit);
    req.mutable_collection()->set_template_(args->template_source);
    if (!args->retention.empty()) {  // checked by the option's validator
      req.mutable_collection()->set_retention_seconds(*ParseDurationSeconds(args->retention));
    }
    v1::CreateCollectionResponse resp;
    if (!run->Call(&v1::Admin::Stub::CreateCollection, req, &resp)) return;
    print_collection(run->json(), resp.collection());
  });
  CLI::App* clist = collection->add_subcommand("list", "List collections");
  clist->callback([run, print_collection] {
    v1::ListCollectionsResponse resp;
    if (!run->Call(&v1::Admin::Stub::ListCollections, v1::ListCollectionsRequest(), &resp)) {
      return;
    }
    for (const auto& c : resp.collections()) print_collection(run->json(), c);
  });
}

// `admin audit DOC_ID`.
void AddAuditCommand(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                     const std::shared_ptr<Runner>& run) {
  CLI::App* audit = admin->add_subcommand("audit", "Which checks reported a registered document");
  audit->add_option("doc_id", args->doc_id, "Registered document id")->required();
  audit->add_option("--since", args->since, "Only checks at or after this time (unix micros)");
  audit->add_option("--limit", args->limit, "At most this many records (default 1000)");
  audit->callback([args, run] {
    v1::QueryAuditRequest req;
    req.set_doc_id(args->doc_id);
    req.set_since_unix_micros(args->since);
    req.set_limit(args->limit);
    v1::QueryAuditResponse resp;
    if (!run->Call(&v1::Admin::Stub::QueryAudit, req, &resp)) return;
    json entries = json::array();
    for (const auto& e : resp.entries()) {
      if (run->json()) {
        entries.push_back({{"doc_id", e.doc_id()},
                           {"collection", e.collection()},
                           {"unix_micros", e.unix_micros()},
                           {"checker", e.checker()},
                           {"ratio", e.ratio()},
                           {"containment", e.containment()},
                           {"matched_chunks", e.matched_chunks()},
                           {"violation", e.violation()}});
      } else {
        std::cout << e.unix_micros() << "\t" << e.checker() << "\tratio=" << e.ratio()
                  << "\tmatched_chunks=" << e.matched_chunks()
                  << (e.violation() ? "\tviolation" : "") << "\n";
      }
    }
    if (run->json()) std::cout << json{{"entries", entries}}.dump() << "\n";
  });
}

// `admin snapshot`, `admin rotate-key`, `admin bulk-load`: the index and its key.
void AddIndexCommands(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                      const std::shared_ptr<Runner>& run) {
  CLI::App* snapshot = admin->add_subcommand(
      "snapshot", "Write a copy of the data directory that copsd can start on (holds secrets)");
  snapshot->add_option("name", args->name, "Snapshot name (under <data-dir>/snapshots)")
      ->required();
  snapshot->callback([args, run] {
    v1::CreateSnapshotRequest req;
    req.set_name(args->name);
    v1::CreateSnapshotResponse resp;
    if (!run->Call(&v1::Admin::Stub::CreateSnapshot, req, &resp)) return;
    if (run->json()) {
      std::cout << json{{"path", resp.path()}}.dump() << "\n";
    } else {
      std::cout << resp.path() << "\n";
    }
  });

  CLI::App* rotate =
      admin->add_subcommand("rotate-key", "Rotate the chunk-hashing key (or show the rotation)");
  rotate->add_flag("--drop-documents-without-text", args->drop_without_text,
                   "Leave documents registered without stored text out of the new generation");
  rotate->add_flag("--status", args->status_only, "Only show the state of the last rotation");
  rotate->add_flag("--wait", args->wait, "Wait until the rotation is done or failed");
  rotate->callback([args, run] {
    v1::KeyRotationStatus status;
    if (args->status_only) {
      v1::GetKeyRotationStatusResponse resp;
      if (!run->Call(&v1::Admin::Stub::GetKeyRotationStatus, v1::GetKeyRotationStatusRequest(),
                     &resp)) {
        return;
      }
      status = resp.status();
    } else {
      v1::RotateKeyRequest req;
      req.set_drop_documents_without_text(args->drop_without_text);
      v1::RotateKeyResponse resp;
      if (!run->Call(&v1::Admin::Stub::RotateKey, req, &resp)) return;
      status = resp.status();
    }
    while (args->wait && (status.state() == v1::KEY_ROTATION_STATE_REBUILDING ||
                          status.state() == v1::KEY_ROTATION_STATE_SWITCHING)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      v1::GetKeyRotationStatusResponse resp;
      if (!run->Call(&v1::Admin::Stub::GetKeyRotationStatus, v1::GetKeyRotationStatusRequest(),
                     &resp)) {
        return;
      }
      status = resp.status();
    }
    PrintRotation(run->json(), status);
    if (status.state() == v1::KEY_ROTATION_STATE_FAILED) run->SetExit(2);
  });

  CLI::App* bulk = admin->add_subcommand(
      "bulk-load", "Start or end a bulk load (defer compaction during a large import)");
  bulk->add_option("action", args->bulk_action,
                   "begin: stop compacting until the end; end: compact everything loaded "
                   "(waits, up to 24 hours)")
      ->required()
      ->check(CLI::IsMember({"begin", "end"}));
  bulk->callback([args, run] {
    v1::SetBulkLoadRequest req;
    req.set_enabled(args->bulk_action == "begin");
    v1::SetBulkLoadResponse resp;
    const auto deadline = req.enabled() ? std::optional<std::chrono::system_clock::duration>()
                                        : std::chrono::hours(24);
    if (!run->Call(&v1::Admin::Stub::SetBulkLoad, req, &resp, deadline)) return;
    if (run->json()) {
      std::cout << json{{"bulk_loading", resp.bulk_loading()}}.dump() << "\n";
    } else {
      std::cout << (resp.bulk_loading() ? "bulk load on" : "bulk load off") << "\n";
    }
  });
}

void PrintSigningKey(bool as_json, const v1::SigningKeyInfo& k) {
  if (as_json) {
    std::cout << json{{"key_id", k.key_id()}, {"live", k.live()},
                      {"public_key_pem", k.public_key_pem()}}.dump()
              << "\n";
  } else {
    // A comment line before each PEM block: PEM readers (openssl, cops verify-receipt) skip it.
    std::cout << "# key_id " << k.key_id() << (k.live() ? " live" : " retired") << "\n"
              << k.public_key_pem();
  }
}

// `admin public-key`, `admin rotate-signing-key`: the receipt signing keys (docs/receipts.md).
void AddSigningKeyCommands(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                           const std::shared_ptr<Runner>& run) {
  CLI::App* show = admin->add_subcommand(
      "public-key", "Print the public keys that verify registration receipts (PEM)");
  show->add_option("--key-id", args->signing_key_id, "Only this key (e.g. a receipt's key_id)");
  show->callback([args, run] {
    v1::ListSigningKeysResponse resp;
    if (!run->Call(&v1::Admin::Stub::ListSigningKeys, v1::ListSigningKeysRequest(), &resp)) {
      return;
    }
    bool found = false;
    for (const v1::SigningKeyInfo& k : resp.keys()) {
      if (!args->signing_key_id.empty() && k.key_id() != args->signing_key_id) continue;
      found = true;
      PrintSigningKey(run->json(), k);
    }
    if (!found) {
      std::cerr << "cops admin: NOT_FOUND: the server has no signing key "
                << args->signing_key_id << "\n";
      run->SetExit(2);
    }
  });

  CLI::App* rotate = admin->add_subcommand(
      "rotate-signing-key",
      "Make a new receipt signing key live (old receipts stay verifiable)");
  rotate->callback([run] {
    v1::RotateSigningKeyResponse resp;
    if (!run->Call(&v1::Admin::Stub::RotateSigningKey, v1::RotateSigningKeyRequest(), &resp)) {
      return;
    }
    PrintSigningKey(run->json(), resp.key());
  });
}

// Offline: rewrites the live generation's index of a data directory no copsd has open into
// the bucketed postings of schema 4 (Index::UpgradePostings).
void AddUpgradeIndexCommand(CLI::App* admin, const std::shared_ptr<AdminArgs>& args,
                            const std::shared_ptr<Runner>& run) {
  CLI::App* upgrade = admin->add_subcommand(
      "upgrade-index",
      "Offline, with copsd stopped: rewrite DATA_DIR's index into bucketed postings (schema 4)");
  upgrade->add_option("data_dir", args->data_dir, "copsd's data directory (--data)")->required();
  upgrade->add_option("--expected-documents", args->expected_documents,
                      "Documents the index should grow to; sizes the buckets (default 10^6)");
  upgrade->callback([args, run] {
    absl::StatusOr<uint64_t> generation = DataDir(args->data_dir).ReadCurrent();
    IndexOptions options;
    if (generation.ok()) options.path = DataDir(args->data_dir).IndexPath(*generation);
    if (args->expected_documents != 0) options.expected_documents = args->expected_documents;
    absl::StatusOr<uint64_t> hashes =
        generation.ok() ? Index::UpgradePostings(options) : generation.status();
    if (!hashes.ok()) {
      std::cerr << "cops admin: " << hashes.status().ToString() << "\n";
      run->SetExit(2);
      return;
    }
    run->SetExit(0);
    if (run->json()) {
      std::cout << json{{"index", options.path}, {"chunk_hashes", *hashes}}.dump() << "\n";
    } else if (*hashes == 0) {
      std::cout << options.path << ": postings already bucketed\n";
    } else {
      std::cout << options.path << ": " << *hashes << " chunk hashes rewritten into buckets\n";
    }
  });
}

}  // namespace

void AddAdminCommands(CLI::App* app, AdminCommandEnv env) {
  auto args = std::make_shared<AdminArgs>();
  auto run = std::make_shared<Runner>(std::move(env));
  CLI::App* admin = app->add_subcommand("admin", "Manage principals, keys, collections, audit, snapshots");
  admin->require_subcommand(1);

  AddPrincipalCommands(admin, args, run);
  AddKeyCommands(admin, args, run);
  AddCollectionCommands(admin, args, run);
  AddAuditCommand(admin, args, run);
  AddIndexCommands(admin, args, run);
  AddSigningKeyCommands(admin, args, run);
  AddUpgradeIndexCommand(admin, args, run);
}

}  // namespace cops
