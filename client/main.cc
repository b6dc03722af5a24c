// cops: the COPS command line.
//
//   cops [--server HOST:PORT] [--json] [--timeout SECONDS] [security flags] COMMAND
//   register PATH...   files or directories (recursive); --title --author --owner
//                      --collection --external-id --format --expires TIME|DURATION
//                      --not-before TIME|DURATION
//   check PATH...|-    one file: its report; several files or directories (recursive): one
//                      result per document (JSON Lines with --json), --streams N in flight;
//                      --threshold --function --min-count --max-results --collection...
//                      --format --sample-size --sample-seed --max-doc-frequency
//                      --min-passage-units --no-spans --html FILE (client/html_report.h)
//                      --exclude-quotes --exclude-references --min-match-words N
//                      (docs/reports.md)
//   compare PATH...    each document against every other (under the server's chunking
//                      parameters) and against the registered corpus, without registering
//                      (client/compare.h); --no-corpus --register-into
//                      --min-passage-units --threads --collection... --format --html FILE
//   unregister ID | get ID [--content] | list [--collection] | stats
//   register --receipt-dir DIR, verify-receipt FILE --public-key KEYS [--document PATH]:
//                      signed registration receipts (client/receipt_commands.h)
//   matches            checks that reported your documents: time, checking principal,
//                      ratio, SHA-256 of the checked document; --since TIME|DURATION (e.g.
//                      7d: the last week) --doc ID --limit N --owner NAME (admins)
//   bench              load generator (client/load_generator.h)
//   admin ...          client/admin_commands.h
//
// Exit codes, like grep: 0 done and no violation, 1 a check found a violation, 2 error
// (message on stderr) or a partial answer of a router without a violation (docs/scale-out.md).
// The --json field names are a contract (issues 4, 19): see client/check_report.h and
// client/compare.h.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/admin_commands.h"
#include "client/batch_check.h"
#include "client/batch_register.h"
#include "client/check_report.h"
#include "client/compare.h"
#include "client/html_report.h"
#include "client/cli_options.h"
#include "client/client.h"
#include "client/client_security.h"
#include "client/load_generator.h"
#include "client/document_json.h"
#include "client/receipt_commands.h"
#include "convert/converter.h"
#include "core/match.h"
#include "core/time_format.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "proto/grpc_process.h"

namespace cops {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitViolation = 1;
constexpr int kExitError = 2;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

struct Globals {
  ClientOptions client;
  double timeout_seconds = 60;
  bool json = false;
};

absl::StatusOr<std::unique_ptr<Client>> Connect(const Globals& g) {
  ClientOptions options = g.client;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(g.timeout_seconds * 1000));
  return Client::Connect(options);
}

// ---- register ----

struct RegisterArgs {
  std::vector<std::string> paths;
  std::string title, author, owner, collection, external_id, format = "auto";
  std::string receipt_dir;  // save each document's receipt here (client/receipt_commands.h)
  std::string expires, not_before;  // RFC 3339 time, date or duration from now; "" = none
};

// A --expires / --not-before value in microseconds since the epoch (0 when not given).
absl::StatusOr<int64_t> LifetimeFlag(const char* flag, const std::string& text) {
  if (text.empty()) return 0;
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  absl::StatusOr<int64_t> t = ParseTimeOrDuration(text, now);
  if (!t.ok()) return absl::InvalidArgumentError(std::string(flag) + ": " +
                                                 std::string(t.status().message()));
  return t;
}

int RunRegister(const Globals& g, const RegisterArgs& a) {
  absl::StatusOr<v1::DocumentFormat> format = ParseFormatName(a.format);
  absl::StatusOr<int64_t> expires = LifetimeFlag("--expires", a.expires);
  absl::StatusOr<int64_t> not_before = LifetimeFlag("--not-before", a.not_before);
  for (const absl::Status& s : {format.status(), expires.status(), not_before.status()}) {
    if (!s.ok()) {
      std::cerr << "cops register: " << s.message() << "\n";
      return kExitError;
    }
  }
  const std::vector<std::string> files = ExpandPaths(a.paths);
  if (!a.external_id.empty() && files.size() != 1) {
    std::cerr << "cops register: --external-id names one document, but " << files.size()
              << " files were given\n";
    return kExitError;
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) {
    std::cerr << "cops register: " << StatusText(client.status()) << "\n";
    return kExitError;
  }
  const bool progress = isatty(STDERR_FILENO) && files.size() > 1;
  int exit_code = kExitOk;
  auto report = [&](const std::string& path,
                    const absl::StatusOr<v1::RegisterDocumentReply>& reply) {
    if (progress) std::cerr << "\r\033[K";
    if (!reply.ok()) {
      std::cerr << "cops register: " << path << ": " << StatusText(reply.status()) << "\n";
      exit_code = kExitError;
      return;
    }
    std::cout << (g.json ? RegisterJsonLine(path, *reply) : RegisterLine(path, *reply)) << "\n";
    std::cout.flush();
    if (a.receipt_dir.empty()) return;
    if (absl::StatusOr<std::string> saved = SaveReceipt(a.receipt_dir, *reply); !saved.ok()) {
      std::cerr << "cops register: " << path << ": " << saved.status().message() << "\n";
      exit_code = kExitError;
    }
  };
  auto make_document = [&](const std::string& path, std::string content) {
    v1::Document doc;
    doc.set_content(std::move(content));
    doc.set_format(*format);
    v1::DocumentMetadata* m = doc.mutable_metadata();
    m->set_title(a.title.empty() ? TitleOfPath(path) : a.title);
    m->set_author(a.author);
    m->set_owner(a.owner);
    m->set_collection(a.collection);
    m->set_external_id(a.external_id);
    m->set_expires_unix_micros(*expires);
    m->set_not_before_unix_micros(*not_before);
    return doc;
  };
  // Receipts are signed only when they are kept.
  RegisterFiles(client->get(), files, /*receipts=*/!a.receipt_dir.empty(), make_document, report,
                [&](size_t sent, const std::string& path) {
                  if (progress) {
                    std::cerr << "\r[" << sent << "/" << files.size() << "] " << path
                              << "\033[K";
                  }
                });
  return exit_code;
}

// Adds `register`, whose options fill `*reg`.
CLI::App* AddRegisterCommand(CLI::App* app, RegisterArgs* reg) {
  CLI::App* cmd = app->add_subcommand("register", "Register files or directories");
  cmd->add_option("paths", reg->paths, "Files or directories (recursive)")->required();
  cmd->add_option("--title", reg->title, "Title (default: the file name)")->check(Utf8Text());
  cmd->add_option("--author", reg->author, "Author")->check(Utf8Text());
  cmd->add_option("--owner", reg->owner, "Owner")->check(Utf8Text());
  cmd->add_option("--collection", reg->collection, "Collection")->check(Utf8Text());
  cmd->add_option("--external-id", reg->external_id, "Your id of the (single) document")
      ->check(Utf8Text());
  cmd->add_option("--format", reg->format, DocumentFormatNames("|"))
      ->capture_default_str();
  cmd->add_option("--receipt-dir", reg->receipt_dir,
                  "Save each document's signed receipt here as <doc_id>.receipt.json");
  cmd->add_option("--expires", reg->expires,
                  "Not matched from then on and removed: an RFC 3339 time "
                  "(2026-01-01T00:00:00Z), a date or a duration from now (30d, 12h)");
  cmd->add_option("--not-before", reg->not_before,
                  "Registered now but not matched until then (an embargo): a time, a date or "
                  "a duration from now");
  return cmd;
}

// Writes a report page; false (with the message on stderr) when it cannot.
bool WriteHtml(const char* command, const std::string& path, const std::string& page) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << page;
  out.close();
  if (!out) {
    std::cerr << "cops " << command << ": cannot write " << path << "\n";
    return false;
  }
  return true;
}

// ---- check ----

struct CheckArgs {
  std::vector<std::string> paths;
  int streams = 4;
  std::optional<double> threshold;
  std::string function;
  std::optional<uint32_t> min_count, max_results, min_passage_units;
  uint32_t sample_size = 0;
  uint64_t sample_seed = 0;
  uint32_t max_doc_frequency = 0;
  uint64_t min_log_sequence = 0;
  std::vector<std::string> collections;
  std::string format = "auto";
  bool no_spans = false;
  std::string html;
  bool exclude_quotes = false, exclude_references = false;
  uint32_t min_match_words = 0;
  std::optional<uint32_t> min_violation_words;
  // --heavy-revisions counts up, --no-heavy-revisions down; 0: neither (the server's default).
  int heavy_revisions = 0;
};

// The request every document of a check is sent with (all but its content).
absl::StatusOr<v1::CheckDocumentRequest> CheckRequest(const CheckArgs& a) {
  v1::CheckDocumentRequest request;
  absl::StatusOr<v1::DocumentFormat> format = ParseFormatName(a.format);
  if (!format.ok()) return format.status();
  v1::CheckOptions* o = request.mutable_options();
  if (!a.function.empty()) {
    absl::StatusOr<v1::DecisionFunction> f = ParseFunctionName(a.function);
    if (!f.ok()) return f.status();
    o->set_function(*f);
  }
  request.set_format(*format);
  if (a.threshold) o->set_threshold(*a.threshold);
  if (a.min_count) o->set_min_count(*a.min_count);
  if (a.max_results) o->set_max_results(*a.max_results);
  if (a.min_passage_units) o->set_min_passage_units(*a.min_passage_units);
  if (a.no_spans) o->set_want_spans(false);
  o->set_sample_size(a.sample_size);
  o->set_sample_seed(a.sample_seed);
  o->set_max_doc_frequency(a.max_doc_frequency);
  o->set_exclude_quotes(a.exclude_quotes);
  o->set_exclude_references(a.exclude_references);
  o->set_min_match_units(a.min_match_words);
  if (a.min_violation_words) o->set_min_violation_units(*a.min_violation_words);
  if (a.heavy_revisions != 0) o->set_heavy_revisions(a.heavy_revisions > 0);
  for (const std::string& c : a.collections) request.add_collections(c);
  request.set_min_log_sequence(a.min_log_sequence);
  return request;
}

// Several files or a directory: one result line per document (issue 19).
int Fail(const char* command, const absl::Status& s);

int RunCheckBatch(const Globals& g, const CheckArgs& a, v1::CheckDocumentRequest request) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) {
    std::cerr << "cops check: " << StatusText(client.status()) << "\n";
    return kExitError;
  }
  const std::vector<std::string> files = ExpandPaths(a.paths);
  BatchCheckOptions options;
  options.request = std::move(request);
  options.streams = a.streams;
  ProgressLine progress(isatty(STDERR_FILENO));
  const bool stdout_tty = isatty(STDOUT_FILENO);
  BatchCheckSummary so_far;
  std::optional<CheckHtmlReport> html;
  if (!a.html.empty()) html.emplace(RegisteredTextFrom(client->get()));
  const BatchCheckSummary summary =
      CheckBatch(client->get(), files, options, [&](BatchCheckResult& r) {
        if (html && r.reply.ok()) html->Add(r.path, r.content, *r.reply);
        if (html && !r.reply.ok()) html->AddError(r.path, r.reply.status());
        ++so_far.documents;
        if (!r.reply.ok()) ++so_far.failed;
        if (r.reply.ok() && r.reply->violation()) ++so_far.violations;
        if (stdout_tty) progress.Clear();
        if (g.json) {
          std::cout << (r.reply.ok() ? CheckJsonLine(*r.reply, r.path)
                                     : ErrorJsonLine(r.path, r.reply.status()))
                    << "\n";
        } else {
          std::cout << BatchLine(r.path, r.reply.status(), r.reply.ok() ? &*r.reply : nullptr)
                    << "\n";
        }
        std::cout.flush();
        progress.Update(so_far.documents, files.size(), so_far, r.path);
      });
  progress.Clear();
  if (html && !WriteHtml("check", a.html, html->Finish())) return kExitError;
  if (!g.json) {
    std::cout << summary.documents << " document(s): " << summary.violations
              << " violation(s), " << summary.failed << " failed\n";
  }
  return summary.ExitCode();
}

int RunCheck(const Globals& g, const CheckArgs& a) {
  absl::StatusOr<v1::CheckDocumentRequest> request = CheckRequest(a);
  if (!request.ok()) {
    std::cerr << "cops check: " << request.status().message() << "\n";
    return kExitError;
  }
  std::error_code ec;
  if (a.paths.size() != 1 || (a.paths[0] != "-" && fs::is_directory(a.paths[0], ec))) {
    return RunCheckBatch(g, a, *std::move(request));
  }
  absl::StatusOr<std::string> content = ReadDocument(a.paths[0]);
  if (!content.ok()) {
    std::cerr << "cops check: " << content.status().message() << "\n";
    return kExitError;
  }
  request->set_content(*content);

  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  absl::StatusOr<v1::CheckDocumentReply> reply =
      client.ok() ? (*client)->Check(*request) : client.status();
  if (!reply.ok()) {
    std::cerr << "cops check: " << StatusText(reply.status()) << "\n";
    return kExitError;
  }
  if (!a.html.empty()) {
    CheckHtmlReport html(RegisteredTextFrom(client->get()));
    html.Add(a.paths[0], *content, *reply);
    if (!WriteHtml("check", a.html, html.Finish())) return kExitError;
  }
  if (g.json) {
    std::cout << CheckJsonLine(*reply) << "\n";
  } else {
    PrintCheckHuman(*reply, *content, isatty(STDOUT_FILENO), std::cout);
  }
  // A partial answer (a router missing partitions) is no clean "no violation".
  if (reply->violation()) return kExitViolation;
  return reply->partial() ? kExitError : kExitOk;
}

// ---- compare ----

struct CompareArgs {
  std::vector<std::string> paths;
  std::string format = "auto";
  uint32_t min_passage_units = 8;
  int threads = 2;
  bool no_corpus = false;
  std::string register_into;
  std::vector<std::string> collections;
  int streams = 4;
  std::string html;
  bool no_heavy_revisions = false;
};

// The server's chunking parameters for `cops compare`, so that its pairs are those the server
// would find; std::nullopt (with a note on stderr) when they cannot be had. Without a
// `client` (an offline run) the server is asked briefly, if one answers at all.
std::optional<ChunkingParams> CompareParams(const Globals& g, Client* client) {
  std::unique_ptr<Client> brief_client;
  if (client == nullptr) {
    Globals brief = g;
    brief.timeout_seconds = std::min(g.timeout_seconds, 3.0);
    absl::StatusOr<std::unique_ptr<Client>> connected = Connect(brief);
    if (connected.ok()) brief_client = *std::move(connected);
    client = brief_client.get();
  }
  absl::StatusOr<ChunkingParams> params =
      client != nullptr ? ServerChunkingParams(client) : absl::UnavailableError("no client");
  if (params.ok()) return *params;
  std::cerr << "cops compare: the server's chunking parameters are unknown ("
            << StatusText(params.status())
            << "): comparing under the defaults, whose pairs may differ from the server's\n";
  return std::nullopt;
}

int RunCompare(const Globals& g, const CompareArgs& a) {
  absl::StatusOr<v1::DocumentFormat> format = ParseFormatName(a.format);
  if (!format.ok()) return Fail("compare", format.status());
  const std::vector<std::string> files = ExpandPaths(a.paths);
  std::unique_ptr<Client> client;
  if (!a.no_corpus || !a.register_into.empty()) {
    absl::StatusOr<std::unique_ptr<Client>> connected = Connect(g);
    if (!connected.ok()) return Fail("compare", connected.status());
    client = *std::move(connected);
  }
  ProgressLine progress(isatty(STDERR_FILENO));
  BatchCheckSummary none;
  CompareOptions options;
  options.format = static_cast<DocumentFormat>(*format);
  options.min_passage_units = a.min_passage_units;
  options.threads = a.threads;
  options.heavy_revisions = !a.no_heavy_revisions;
  options.params = CompareParams(g, client.get());
  absl::StatusOr<Comparison> comparison =
      CompareFiles(files, options, [&](size_t done, const std::string& path) {
        progress.Update(done, files.size(), none, path);
      });
  progress.Clear();
  if (!comparison.ok()) return Fail("compare", comparison.status());
  bool failed = false, found = !comparison->pairs.empty();
  for (const ComparedDocument& d : comparison->documents) failed |= !d.status.ok();

  std::vector<std::string> corpus_lines, corpus_text;
  std::vector<absl::StatusOr<v1::CheckDocumentReply>> corpus_replies;  // for --html
  if (!a.no_corpus) {
    // Each document against the registered corpus: the batch check of `cops check`.
    BatchCheckOptions check;
    check.request.set_format(*format);
    check.request.mutable_options()->set_min_passage_units(a.min_passage_units);
    if (a.no_heavy_revisions) check.request.mutable_options()->set_heavy_revisions(false);
    for (const std::string& c : a.collections) check.request.add_collections(c);
    check.streams = a.streams;
    const BatchCheckSummary summary =
        CheckBatch(client.get(), files, check, [&](BatchCheckResult& r) {
          if (r.reply.ok()) {
            corpus_lines.push_back(CheckJsonLine(*r.reply, r.path));
          } else {
            corpus_lines.push_back(ErrorJsonLine(r.path, r.reply.status()));
          }
          corpus_text.push_back(
              BatchLine(r.path, r.reply.status(), r.reply.ok() ? &*r.reply : nullptr));
          if (!a.html.empty()) corpus_replies.push_back(std::move(r.reply));
          progress.Update(corpus_lines.size(), files.size(), none, r.path);
        });
    progress.Clear();
    failed |= summary.failed > 0;
    found |= summary.violations > 0;
  }
  std::vector<std::string> registered_lines, registered_text;
  if (!a.register_into.empty()) {
    RegisterFiles(
        client.get(), files, /*receipts=*/false,
        [&](const std::string& path, std::string content) {
          v1::Document doc;
          doc.set_content(std::move(content));
          doc.set_format(*format);
          doc.mutable_metadata()->set_title(TitleOfPath(path));
          doc.mutable_metadata()->set_collection(a.register_into);
          return doc;
        },
        [&](const std::string& path, const absl::StatusOr<v1::RegisterDocumentReply>& reply) {
          failed |= !reply.ok();
          registered_lines.push_back(reply.ok() ? RegisterJsonLine(path, *reply)
                                                : ErrorJsonLine(path, reply.status()));
          registered_text.push_back(reply.ok()
                                        ? RegisterLine(path, *reply)
                                        : "ERROR      " + path + ": " +
                                              StatusText(reply.status()));
        });
  }
  if (!a.html.empty() &&
      !WriteHtml("compare", a.html,
                 CompareHtmlReport(*comparison, options.format, corpus_replies))) {
    return kExitError;
  }
  if (g.json) {
    std::cout << CompareJson(*comparison, corpus_lines, a.register_into.empty()
                                                            ? nullptr
                                                            : &registered_lines)
              << "\n";
  } else {
    std::cout << CompareText(*comparison);
    if (!a.no_corpus) {
      std::cout << "against the registered corpus:\n";
      for (const std::string& line : corpus_text) std::cout << line << "\n";
    }
    for (const std::string& line : registered_text) std::cout << line << "\n";
  }
  return failed ? kExitError : found ? kExitViolation : kExitOk;
}

// ---- unregister, get, list, stats ----

json InfoJson(const v1::DocumentInfo& d) { return json::parse(DocumentInfoJson(d)); }

// A time for people: RFC 3339 in UTC, or "-" for 0 (none).
std::string TimeText(int64_t micros) { return micros == 0 ? "-" : FormatTimeMicros(micros); }

void PrintInfoLine(const v1::DocumentInfo& d) {
  std::cout << "#" << d.doc_id() << "\t" << d.metadata().title() << "\t"
            << d.metadata().collection() << "\t" << d.metadata().owner() << "\t"
            << d.size_bytes() << " bytes\t" << d.chunks() << " chunks";
  if (d.metadata().expires_unix_micros() != 0) {
    std::cout << "\texpires " << TimeText(d.metadata().expires_unix_micros());
  }
  if (d.metadata().not_before_unix_micros() != 0) {
    std::cout << "\tnot before " << TimeText(d.metadata().not_before_unix_micros());
  }
  std::cout << "\n";
}

int Fail(const char* command, const absl::Status& s) {
  std::cerr << "cops " << command << ": " << StatusText(s) << "\n";
  return kExitError;
}

int RunUnregister(const Globals& g, uint64_t id) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("unregister", client.status());
  absl::StatusOr<v1::UnregisterDocumentReply> reply = (*client)->Unregister(id);
  if (!reply.ok()) return Fail("unregister", reply.status());
  const uint64_t sequence = reply->log_sequence();  // through a cluster: for --min-log-sequence
  if (g.json) {
    std::cout << Dump({{"doc_id", id}, {"unregistered", true}, {"log_sequence", sequence}}) << "\n";
  } else {
    std::cout << "unregistered #" << id;
    if (sequence != 0) std::cout << " (log event " << sequence << ")";
    std::cout << "\n";
  }
  return kExitOk;
}

int RunGet(const Globals& g, uint64_t id, bool content) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("get", client.status());
  absl::StatusOr<v1::DocumentInfo> d = (*client)->Get(id, content);
  if (!d.ok()) return Fail("get", d.status());
  if (content) {
    std::cout << d->content();
  } else if (g.json) {
    std::cout << Dump(InfoJson(*d)) << "\n";
  } else {
    const json info = InfoJson(*d);  // items() refers into it: not a temporary
    for (auto& [k, v] : info.items()) {
      std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump());
      // Times also as people read them.
      if (k.ends_with("_unix_micros")) std::cout << " (" << TimeText(v.get<int64_t>()) << ")";
      std::cout << "\n";
    }
  }
  return kExitOk;
}

int RunList(const Globals& g, const std::string& collection, uint32_t limit) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("list", client.status());
  std::string token;
  json docs = json::array();
  uint32_t shown = 0;
  do {
    absl::StatusOr<v1::ListDocumentsReply> page = (*client)->List(1000, token, collection);
    if (!page.ok()) return Fail("list", page.status());
    for (const v1::DocumentInfo& d : page->documents()) {
      if (limit != 0 && shown >= limit) break;
      ++shown;
      if (g.json) {
        docs.push_back(InfoJson(d));
      } else {
        PrintInfoLine(d);
      }
    }
    token = page->next_page_token();
  } while (!token.empty() && (limit == 0 || shown < limit));
  if (g.json) std::cout << Dump({{"documents", std::move(docs)}}) << "\n";
  return kExitOk;
}

int RunStats(const Globals& g) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("stats", client.status());
  absl::StatusOr<v1::GetStatsReply> s = (*client)->Stats();
  if (!s.ok()) return Fail("stats", s.status());
  json j = {{"documents", s->documents()},   {"postings", s->postings()},
            {"chunk_keys", s->chunk_keys()}, {"disk_bytes", s->disk_bytes()},
            {"text_bytes", s->text_bytes()}, {"chunking", s->chunking()},
            {"key_id", s->key_id()},         {"uptime_seconds", s->uptime_seconds()},
            {"max_document_bytes", s->max_document_bytes()},
            {"postings_files_per_level",
             std::vector<uint32_t>(s->postings_files_per_level().begin(),
                                   s->postings_files_per_level().end())},
            {"pending_compaction_bytes", s->pending_compaction_bytes()},
            {"postings_disk_bytes", s->postings_disk_bytes()},
            {"verify_disk_bytes", s->verify_disk_bytes()},
            {"running_compactions", s->running_compactions()},
            {"block_cache_bytes", s->block_cache_bytes()},
            {"block_cache_warming", s->block_cache_warming()},
            {"hash_filter_bytes", s->hash_filter_bytes()},
            {"hash_filter_filling", s->hash_filter_filling()},
            {"idle_compaction_due", s->idle_compaction_due()},
            {"bulk_loading", s->bulk_loading()}};
  if (g.json) {
    std::cout << Dump(j) << "\n";
  } else {
    for (auto& [k, v] : j.items()) {
      std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
    }
  }
  return kExitOk;
}

struct MatchesArgs {
  std::string since;  // RFC 3339 time, date, or a duration back from now
  uint64_t doc_id = 0;
  uint32_t limit = 0;
  std::string owner;
};

int RunMatches(const Globals& g, const MatchesArgs& a) {
  v1::ListMatchesRequest request;
  if (!a.since.empty()) {
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    absl::StatusOr<int64_t> ago = ParseDurationSeconds(a.since);
    absl::StatusOr<int64_t> since =
        ago.ok() ? absl::StatusOr<int64_t>(now - *ago * 1000000) : ParseTimeMicros(a.since);
    if (!since.ok()) {
      return Fail("matches", absl::InvalidArgumentError("--since: \"" + a.since +
                                                        "\" is neither a time nor a duration"));
    }
    request.set_since_unix_micros(*since);
  }
  request.set_doc_id(a.doc_id);
  request.set_limit(a.limit);
  request.set_owner(a.owner);
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("matches", client.status());
  absl::StatusOr<v1::ListMatchesReply> reply = (*client)->ListMatches(request);
  if (!reply.ok()) return Fail("matches", reply.status());
  if (g.json) {
    std::cout << MatchesJson(*reply) << "\n";
    return kExitOk;
  }
  for (const v1::AuditEntry& e : reply->entries()) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.3f", e.ratio());
    std::cout << FormatTimeMicros(e.unix_micros()) << "\t#" << e.doc_id() << "\t"
              << e.checker() << "\tratio " << ratio << "\t"
              << (e.violation() ? "violation" : "below threshold") << "\tsha256 "
              << (e.test_sha256().empty() ? "-" : e.test_sha256()) << "\n";
  }
  if (reply->entries().empty()) {
    std::cout << "no checks have reported your documents\n";
  }
  return kExitOk;
}

int RunHealth(const Globals& g) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("health", client.status());
  if (absl::Status s = (*client)->Health(); !s.ok()) return Fail("health", s);
  std::cout << (g.json ? R"({"status":"SERVING"})" : "SERVING") << "\n";
  return kExitOk;
}

// The global flags: the server, output, deadline and credentials.
void AddGlobalFlags(CLI::App* app, Globals* g) {
  app->add_option("--server", g->client.target, "copsd address HOST:PORT")
      ->envname("COPS_SERVER")
      ->capture_default_str();
  app->add_flag("--json", g->json, "Machine-readable output (JSON)");
  app->add_option("--timeout", g->timeout_seconds, "Deadline of each call, seconds")
      ->capture_default_str();
  AddClientSecurityFlags(app, &g->client.security);
}

CLI::App* AddCheckCommand(CLI::App* app, CheckArgs* chk) {
  CLI::App* cmd =
      app->add_subcommand("check", "Check documents: a file (- for stdin), or files and directories");
  cmd->add_option("paths", chk->paths, "Files or directories (recursive), or - for stdin")
      ->required();
  cmd->add_option("--streams", chk->streams, "Batch: CheckStream calls in flight")
      ->capture_default_str();
  cmd->add_option("--threshold", chk->threshold, "Decision threshold in (0, 1] (default 0.08, measured in docs/accuracy.md)");
  cmd->add_option("--function", chk->function, DecisionFunctionNames("|"));
  cmd->add_option("--min-count", chk->min_count, "For count functions (default 10)");
  cmd->add_option("--max-results", chk->max_results, "Matches shown, 0 = all (default 20)");
  cmd->add_option("--min-passage-units", chk->min_passage_units,
                  "Shortest shared passage reported, in units (default 8)");
  cmd->add_option("--collection", chk->collections, "Search only these collections")
      ->check(Utf8Text());
  cmd->add_option("--format", chk->format, "Format of the document: " + DocumentFormatNames("|"))
      ->capture_default_str();
  cmd->add_option("--sample-size", chk->sample_size, "Test-time sampling: chunks looked up");
  cmd->add_option("--sample-seed", chk->sample_seed, "Seed of the sample");
  cmd->add_option("--min-log-sequence", chk->min_log_sequence,
                  "Cluster: answer as of this registration-log event or later (the id `cops "
                  "register` printed, the event `cops unregister` printed)");
  cmd->add_option("--max-doc-frequency", chk->max_doc_frequency,
                  "Ignore chunks found in more documents (0 = no limit)");
  cmd->add_flag("--no-spans", chk->no_spans, "Do not return matched spans");
  cmd->add_option("--html", chk->html, "Also write a self-contained HTML report here");
  cmd->add_flag("--exclude-quotes", chk->exclude_quotes,
                "Quoted passages (straight, curly and angle quotes, > lines) do not count");
  cmd->add_flag("--exclude-references", chk->exclude_references,
                "The references section (from its heading to the end) does not count");
  cmd->add_option("--min-match-words", chk->min_match_words,
                  "Matched passages shorter than this many words do not count (0 = all)");
  cmd->add_option("--min-violation-words", chk->min_violation_words,
                  "A violation needs matched passages of this many words in all, whatever "
                  "the ratio (default 12; 0 = any)");
  cmd->add_flag("--heavy-revisions,!--no-heavy-revisions", chk->heavy_revisions,
                "Also report (or not) heavy rewrites of a registered text: its 3-word runs kept "
                "in order (docs/accuracy.md; may flag texts built from one template). Neither: "
                "as the server decides (copsd looks for them unless --heavy-revisions=false)");
  return cmd;
}

CLI::App* AddCompareCommand(CLI::App* app, CompareArgs* cmp) {
  CLI::App* cmd = app->add_subcommand(
      "compare", "Compare documents with each other and with the registered corpus");
  cmd->add_option("paths", cmp->paths, "Files or directories (recursive)")->required();
  cmd->add_option("--format", cmp->format, "Format of the documents: " + DocumentFormatNames("|"))
      ->capture_default_str();
  cmd->add_option("--min-passage-units", cmp->min_passage_units,
                  "Shortest shared passage that lists a pair, in words")
      ->capture_default_str();
  cmd->add_option("--threads", cmp->threads, "Documents converted at once")
      ->capture_default_str();
  cmd->add_flag("--no-corpus", cmp->no_corpus,
                "Do not check against the registered corpus (no server needed)");
  cmd->add_option("--register-into", cmp->register_into,
                  "Afterwards register the batch into this collection")
      ->check(Utf8Text());
  cmd->add_option("--collection", cmp->collections, "Check against these collections only")
      ->check(Utf8Text());
  cmd->add_option("--streams", cmp->streams, "CheckStream calls in flight")
      ->capture_default_str();
  cmd->add_option("--html", cmp->html, "Also write a self-contained HTML report here");
  cmd->add_flag("--no-heavy-revisions", cmp->no_heavy_revisions,
                "List only pairs that share a passage, not heavy rewrites of each other (their "
                "3-word runs kept in order: docs/accuracy.md); the corpus check asks the same");
  return cmd;
}

// The commands on registered documents and the server's state, with their arguments.
struct RecordCommands {
  uint64_t id = 0;
  bool content = false;
  std::string collection;
  uint32_t limit = 0;
  MatchesArgs matches;
  CLI::App* unregister = nullptr;
  CLI::App* get = nullptr;
  CLI::App* list = nullptr;
  CLI::App* stats = nullptr;
  CLI::App* matches_cmd = nullptr;
  CLI::App* health = nullptr;
};

// REQUIRES: `r` outlives the parse (CLI11 writes into it).
void AddRecordCommands(CLI::App* app, RecordCommands* r) {
  r->unregister = app->add_subcommand("unregister", "Remove a registered document");
  r->unregister->add_option("id", r->id, "Document id")->required();
  r->get = app->add_subcommand("get", "Show a registered document's record");
  r->get->add_option("id", r->id, "Document id")->required();
  r->get->add_flag("--content", r->content, "Write the registered bytes to stdout");
  r->list = app->add_subcommand("list", "List registered documents");
  r->list->add_option("--collection", r->collection, "Only this collection")->check(Utf8Text());
  r->list->add_option("--limit", r->limit, "At most this many (0 = all)");
  r->stats = app->add_subcommand("stats", "Index statistics");
  r->matches_cmd =
      app->add_subcommand("matches", "Checks that reported your documents (the audit trail)");
  r->matches_cmd->add_option("--since", r->matches.since,
                             "Only checks since this time, date, or duration ago (7d)");
  r->matches_cmd->add_option("--doc", r->matches.doc_id,
                             "Only checks that reported this document");
  r->matches_cmd->add_option("--limit", r->matches.limit, "At most this many (default 1000)");
  r->matches_cmd->add_option("--owner", r->matches.owner, "Admins: another owner's documents")
      ->check(Utf8Text());
  r->health = app->add_subcommand(
      "health", "gRPC health check: exit 0 when the server is SERVING (container probes)");
}

// The admin commands' connection (none under COPS_CLI_DRY_RUN: they run while parsing) and
// call settings, from the global flags `g`; their exit code goes to `exit_code`.
AdminCommandEnv AdminEnvOf(Globals* g, bool dry_run, int* exit_code) {
  AdminCommandEnv env;
  env.connect = [g, dry_run]() -> std::shared_ptr<grpc::Channel> {
    if (dry_run) {  // the admin commands run while parsing: let their calls reach nothing
      return grpc::CreateChannel("unix:/nonexistent/cops-dry-run",
                                 grpc::InsecureChannelCredentials());
    }
    grpc::ChannelArguments args;
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        OpenSecureChannel(g->client.target, g->client.security, args);
    if (!channel.ok()) {
      std::cerr << "cops admin: " << StatusText(channel.status()) << "\n";
      return nullptr;
    }
    return *channel;
  };
  env.prepare = [g](grpc::ClientContext* context) {
    AttachApiKey(g->client.security, context);
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(g->timeout_seconds * 1000)));
  };
  env.json = &g->json;
  env.exit_code = exit_code;
  return env;
}

// cops bench: the load generator over load.connections connections.
int RunBench(const Globals& g, const LoadOptions& load) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<Client*> calling;
  for (uint32_t c = 0; c < load.connections; ++c) {
    Globals own = g;
    own.client.own_connection = load.connections > 1;
    absl::StatusOr<std::unique_ptr<Client>> client = Connect(own);
    if (!client.ok()) return Fail("bench", client.status());
    clients.push_back(*std::move(client));
    calling.push_back(clients.back().get());
  }
  return RunLoad(calling, load, std::cout) ? kExitOk : kExitError;
}

// Runs the command a record command names; nullopt when none was parsed.
std::optional<int> RunRecordCommand(const Globals& g, RecordCommands& r) {
  if (r.unregister->parsed()) return RunUnregister(g, r.id);
  if (r.get->parsed()) return RunGet(g, r.id, r.content);
  if (r.list->parsed()) return RunList(g, r.collection, r.limit);
  if (r.stats->parsed()) return RunStats(g);
  if (r.matches_cmd->parsed()) return RunMatches(g, r.matches);
  if (r.health->parsed()) return RunHealth(g);
  return std::nullopt;
}

int Main(int argc, char** argv) {
  CLI::App app("cops: register documents with a COPS server and check new ones against them",
               "cops");
  app.require_subcommand(1);
  Globals g;
  AddGlobalFlags(&app, &g);
  RegisterArgs reg;
  CLI::App* register_cmd = AddRegisterCommand(&app, &reg);
  CheckArgs chk;
  CLI::App* check_cmd = AddCheckCommand(&app, &chk);
  CompareArgs cmp;
  CLI::App* compare_cmd = AddCompareCommand(&app, &cmp);
  RecordCommands records;
  AddRecordCommands(&app, &records);
  VerifyReceiptArgs verify;
  CLI::App* verify_cmd = AddVerifyReceiptCommand(&app, &verify);
  LoadOptions load;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Load generator: concurrent register and check");
  AddLoadFlags(bench_cmd, &load);

  // For tests: print what the words became and run nothing (client/cli_options.h).
  const char* dry_run_env = std::getenv("COPS_CLI_DRY_RUN");
  const bool dry_run = dry_run_env != nullptr && *dry_run_env != 0;
  int admin_exit = kExitOk;
  AddAdminCommands(&app, AdminEnvOf(&g, dry_run, &admin_exit));
  OneValuePerOccurrence(&app);
  if (dry_run) PrepareDryRun(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitError;
  }
  if (dry_run) {
    std::cout << ParsedCommandJson(app);
    return kExitOk;
  }
  if (register_cmd->parsed()) return RunRegister(g, reg);
  if (check_cmd->parsed()) return RunCheck(g, chk);
  if (compare_cmd->parsed()) return RunCompare(g, cmp);
  if (std::optional<int> code = RunRecordCommand(g, records)) return *code;
  if (verify_cmd->parsed()) {
    verify.json = g.json;
    return RunVerifyReceipt(verify, std::cout, std::cerr);
  }
  if (bench_cmd->parsed()) return RunBench(g, load);
  return admin_exit;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  cops::PrepareGrpcProcess();
  try {
    return cops::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cops: " << e.what() << "\n";
    return 2;
  }
}
