// cops: the COPS command line.
//
//   cops [--server HOST:PORT] [--json] [--timeout SECONDS] [security flags] COMMAND
//   register PATH...   files or directories (recursive); --title --author --owner
//                      --collection --external-id --format
//   check PATH|-       --threshold --function --min-count --max-results --collection...
//                      --format --sample-size --sample-seed --max-doc-frequency
//                      --min-passage-units --no-spans
//   unregister ID | get ID [--content] | list [--collection] | stats
//   bench              load generator (client/load_generator.h)
//   admin ...          client/admin_commands.h
//
// Exit codes, like grep: 0 done and no violation, 1 a check found a violation, 2 error
// (message on stderr). The --json field names are a contract (issue 4): see PrintCheckJson.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/admin_commands.h"
#include "client/client.h"
#include "client/client_security.h"
#include "client/load_generator.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

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

std::string StatusText(const absl::Status& s) {
  return std::string(absl::StatusCodeToString(s.code())) + ": " + std::string(s.message());
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::stringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  buf << in.rdbuf();
  return buf.str();
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
};

int RunRegister(const Globals& g, const RegisterArgs& a) {
  absl::StatusOr<v1::DocumentFormat> format = ParseFormatName(a.format);
  if (!format.ok()) {
    std::cerr << "cops register: " << format.status().message() << "\n";
    return kExitError;
  }
  std::vector<std::string> files;
  for (const std::string& p : a.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_regular_file()) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
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
    if (!reply.ok()) {
      std::cerr << "cops register: " << path << ": " << StatusText(reply.status()) << "\n";
      exit_code = kExitError;
      return;
    }
    if (g.json) {
      json j = {{"doc_id", reply->doc_id()},
                {"path", path},
                {"chunks", reply->chunks()},
                {"stored_chunks", reply->stored_chunks()},
                {"duplicate_of", nullptr},
                {"created", reply->created()},
                {"format", reply->format()},
                {"charset", reply->charset()}};
      if (reply->has_duplicate_of()) j["duplicate_of"] = reply->duplicate_of();
      std::cout << Dump(j) << "\n";
    } else if (reply->has_duplicate_of()) {
      std::cout << "duplicate   #" << reply->doc_id() << "  " << path << "  (same text as #"
                << reply->duplicate_of() << ")\n";
    } else {
      std::cout << (reply->created() ? "registered  #" : "exists      #") << reply->doc_id()
                << "  " << path << "  (" << reply->chunks() << " chunks, "
                << reply->stored_chunks() << " stored)\n";
    }
    std::cout.flush();
  };
  auto make_document = [&](const std::string& path, std::string content) {
    v1::Document doc;
    doc.set_content(std::move(content));
    doc.set_format(*format);
    v1::DocumentMetadata* m = doc.mutable_metadata();
    m->set_title(a.title.empty() ? fs::path(path).filename().string() : a.title);
    m->set_author(a.author);
    m->set_owner(a.owner);
    m->set_collection(a.collection);
    m->set_external_id(a.external_id);
    return doc;
  };
  if (files.size() == 1) {
    absl::StatusOr<std::string> content = ReadInput(files[0]);
    if (!content.ok()) {
      report(files[0], content.status());
    } else {
      report(files[0], (*client)->Register(make_document(files[0], *std::move(content))));
    }
    return exit_code;
  }
  // Several files: RegisterDocuments streams of up to kBatchFiles files or kBatchBytes, which
  // the server writes to its index together (much faster than a call per file).
  constexpr size_t kBatchFiles = 4096;  // copsd's default window (--bulk-window-documents)
  constexpr size_t kBatchBytes = 64u << 20;
  for (size_t next = 0; next < files.size();) {
    const size_t first = next;
    std::vector<absl::StatusOr<v1::RegisterDocumentReply>> replies;
    std::vector<v1::Document> docs;
    std::vector<size_t> reply_of;  // replies index of docs[k]
    size_t bytes = 0;
    for (; next < files.size() && docs.size() < kBatchFiles && bytes < kBatchBytes; ++next) {
      absl::StatusOr<std::string> content = ReadInput(files[next]);
      if (!content.ok()) {
        replies.push_back(content.status());
        continue;
      }
      bytes += content->size();
      replies.push_back(absl::UnknownError("not sent"));
      reply_of.push_back(replies.size() - 1);
      docs.push_back(make_document(files[next], *std::move(content)));
    }
    if (progress) {
      std::cerr << "\r[" << next << "/" << files.size() << "] " << files[next - 1] << "\033[K";
    }
    if (!docs.empty()) {
      absl::StatusOr<v1::RegisterDocumentsReply> bulk = (*client)->RegisterMany(docs);
      for (size_t k = 0; k < docs.size(); ++k) {
        absl::StatusOr<v1::RegisterDocumentReply>& reply = replies[reply_of[k]];
        if (!bulk.ok()) {
          reply = bulk.status();
        } else if (k >= static_cast<size_t>(bulk->results_size())) {
          reply = absl::UnavailableError("the server ended the stream early");
        } else {
          reply = ResultOf(bulk->results(static_cast<int>(k)));
        }
      }
    }
    if (progress) std::cerr << "\r\033[K";
    for (size_t k = 0; k < replies.size(); ++k) report(files[first + k], replies[k]);
  }
  return exit_code;
}

// ---- check ----

struct CheckArgs {
  std::string path;
  std::optional<double> threshold;
  std::string function;
  std::optional<uint32_t> min_count, max_results, min_passage_units;
  uint32_t sample_size = 0;
  uint64_t sample_seed = 0;
  uint32_t max_doc_frequency = 0;
  std::vector<std::string> collections;
  std::string format = "auto";
  bool no_spans = false;
};

json CheckJson(const v1::CheckDocumentReply& r) {
  json matches = json::array();
  for (const v1::Match& m : r.matches()) {
    json spans = json::array();
    for (const v1::Span& s : m.spans()) {
      json span = {{"test_start", s.test_start()}, {"test_end", s.test_end()},
                   {"chunks", s.chunks()}, {"units", s.units()}};
      if (s.has_registered()) {
        span["registered_start"] = s.registered_start();
        span["registered_end"] = s.registered_end();
      }
      if (s.test_first_page() != 0) {
        span["test_first_page"] = s.test_first_page();
        span["test_last_page"] = s.test_last_page();
      }
      if (r.offsets_in_extracted_text()) span["test_text"] = s.test_text();
      spans.push_back(std::move(span));
    }
    matches.push_back({{"doc_id", m.doc_id()},
                       {"title", m.title()},
                       {"owner", m.owner()},
                       {"collection", m.collection()},
                       {"ratio", m.ratio()},
                       {"containment", m.containment()},
                       {"matched_chunks", m.matched_chunks()},
                       {"ordered_matches", m.ordered_matches()},
                       {"stored_chunks", m.stored_chunks()},
                       {"violation", m.violation()},
                       {"spans", std::move(spans)}});
  }
  const v1::CheckParams& p = r.params();
  return {{"violation", r.violation()},
          {"chunks", r.total_chunks()},
          {"selected_chunks", r.selected_chunks()},
          {"considered_chunks", r.considered_chunks()},
          {"common_chunks_ignored", r.common_chunks_ignored()},
          {"sampled", r.sampled()},
          {"sampling_error", r.sampling_error()},
          {"format", r.format()},
          {"charset", r.charset()},
          {"offsets_in_extracted_text", r.offsets_in_extracted_text()},
          {"verified", r.verified()},
          {"matches", std::move(matches)},
          {"params",
           {{"chunking", p.chunking()},
            {"function", p.function()},
            {"threshold", p.threshold()},
            {"min_count", p.min_count()},
            {"max_results", p.max_results()},
            {"max_doc_frequency", p.max_doc_frequency()},
            {"min_passage_units", p.min_passage_units()},
            {"sample_size", p.sample_size()},
            {"sample_seed", p.sample_seed()},
            {"want_spans", p.want_spans()},
            {"verify_k", p.verify_k()}}}};
}

// One passage of the test document with a little context, the matched part marked.
std::string Excerpt(const std::string& text, uint32_t start, uint32_t end, bool tty) {
  constexpr uint32_t kContext = 40, kMaxPassage = 600;
  start = std::min<uint32_t>(start, text.size());
  end = std::clamp<uint32_t>(end, start, text.size());
  const uint32_t before = start > kContext ? start - kContext : 0;
  const uint32_t after = std::min<uint32_t>(text.size(), end + kContext);
  std::string passage = text.substr(start, end - start);
  if (passage.size() > kMaxPassage) {
    passage = passage.substr(0, kMaxPassage / 2) + " [...] " +
              passage.substr(passage.size() - kMaxPassage / 2);
  }
  std::string out = (before > 0 ? "..." : "") + text.substr(before, start - before);
  out += tty ? "\033[1;31m" : "[[";
  out += passage;
  out += tty ? "\033[0m" : "]]";
  out += text.substr(end, after - end) + (after < text.size() ? "..." : "");
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return out;
}

void PrintCheckHuman(const v1::CheckDocumentReply& r, const std::string& text) {
  const bool tty = isatty(STDOUT_FILENO);
  std::cout << (r.violation() ? "VIOLATION" : "no violation") << ": " << r.matches_size()
            << " registered document(s) share passages; test document has " << r.total_chunks()
            << " chunks, " << r.selected_chunks() << " looked up";
  if (r.sampled()) std::cout << " (sampled, error " << r.sampling_error() << ")";
  if (r.verified()) {
    std::cout << "; verified on " << r.considered_chunks() << " word " << r.params().verify_k()
              << "-grams";
  }
  std::cout << "\n";
  for (const v1::Match& m : r.matches()) {
    std::printf("\n#%llu %s%s%s  ratio %.3f  containment %.3f  matched %u/%u  %s\n",
                static_cast<unsigned long long>(m.doc_id()),
                m.title().empty() ? "(untitled)" : ("\"" + m.title() + "\"").c_str(),
                m.owner().empty() ? "" : "  owner ", m.owner().c_str(), m.ratio(),
                m.containment(), m.matched_chunks(), r.considered_chunks(),
                m.violation() ? "VIOLATION" : "below the decision");
    std::fflush(stdout);
    for (const v1::Span& s : m.spans()) {
      if (!r.offsets_in_extracted_text()) {
        std::cout << "  bytes " << s.test_start() << "-" << s.test_end() << ": "
                  << Excerpt(text, s.test_start(), s.test_end(), tty) << "\n";
        continue;
      }
      // PDF, DOCX, ODT, email: the offsets index the extracted text, which the server sent.
      std::cout << "  ";
      if (s.test_first_page() != 0) {
        std::cout << "page " << s.test_first_page();
        if (s.test_last_page() != s.test_first_page()) std::cout << "-" << s.test_last_page();
        std::cout << ", ";
      }
      std::cout << "text " << s.test_start() << "-" << s.test_end() << ": "
                << Excerpt(s.test_text(), 0, static_cast<uint32_t>(s.test_text().size()), tty)
                << "\n";
    }
  }
  std::cout << "\nparams: " << r.params().function() << " threshold "
            << r.params().threshold() << "; " << r.params().chunking() << "\n";
}

int RunCheck(const Globals& g, const CheckArgs& a) {
  v1::CheckDocumentRequest request;
  absl::StatusOr<v1::DocumentFormat> format = ParseFormatName(a.format);
  absl::StatusOr<std::string> content = ReadInput(a.path);
  absl::Status bad = !format.ok() ? format.status() : content.status();
  v1::CheckOptions* o = request.mutable_options();
  if (bad.ok() && !a.function.empty()) {
    absl::StatusOr<v1::DecisionFunction> f = ParseFunctionName(a.function);
    if (f.ok()) o->set_function(*f);
    bad = f.status();
  }
  if (!bad.ok()) {
    std::cerr << "cops check: " << bad.message() << "\n";
    return kExitError;
  }
  request.set_content(*content);
  request.set_format(*format);
  if (a.threshold) o->set_threshold(*a.threshold);
  if (a.min_count) o->set_min_count(*a.min_count);
  if (a.max_results) o->set_max_results(*a.max_results);
  if (a.min_passage_units) o->set_min_passage_units(*a.min_passage_units);
  if (a.no_spans) o->set_want_spans(false);
  o->set_sample_size(a.sample_size);
  o->set_sample_seed(a.sample_seed);
  o->set_max_doc_frequency(a.max_doc_frequency);
  for (const std::string& c : a.collections) request.add_collections(c);

  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  absl::StatusOr<v1::CheckDocumentReply> reply =
      client.ok() ? (*client)->Check(request) : client.status();
  if (!reply.ok()) {
    std::cerr << "cops check: " << StatusText(reply.status()) << "\n";
    return kExitError;
  }
  if (g.json) {
    std::cout << Dump(CheckJson(*reply)) << "\n";
  } else {
    PrintCheckHuman(*reply, *content);
  }
  return reply->violation() ? kExitViolation : kExitOk;
}

// ---- unregister, get, list, stats ----

json InfoJson(const v1::DocumentInfo& d) {
  return {{"doc_id", d.doc_id()},
          {"title", d.metadata().title()},
          {"author", d.metadata().author()},
          {"owner", d.metadata().owner()},
          {"collection", d.metadata().collection()},
          {"external_id", d.metadata().external_id()},
          {"format", d.format()},
          {"registered_unix_micros", d.registered_unix_micros()},
          {"sha256", d.sha256()},
          {"chunks", d.chunks()},
          {"stored_chunks", d.stored_chunks()},
          {"size_bytes", d.size_bytes()}};
}

void PrintInfoLine(const v1::DocumentInfo& d) {
  std::cout << "#" << d.doc_id() << "\t" << d.metadata().title() << "\t"
            << d.metadata().collection() << "\t" << d.metadata().owner() << "\t"
            << d.size_bytes() << " bytes\t" << d.chunks() << " chunks\n";
}

int Fail(const char* command, const absl::Status& s) {
  std::cerr << "cops " << command << ": " << StatusText(s) << "\n";
  return kExitError;
}

int RunUnregister(const Globals& g, uint64_t id) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
  if (!client.ok()) return Fail("unregister", client.status());
  absl::Status s = (*client)->Unregister(id);
  if (!s.ok()) return Fail("unregister", s);
  if (g.json) {
    std::cout << Dump({{"doc_id", id}, {"unregistered", true}}) << "\n";
  } else {
    std::cout << "unregistered #" << id << "\n";
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
    for (auto& [k, v] : InfoJson(*d).items()) {
      std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
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

int Main(int argc, char** argv) {
  CLI::App app("cops: register documents with a COPS server and check new ones against them",
               "cops");
  app.require_subcommand(1);
  Globals g;
  app.add_option("--server", g.client.target, "copsd address HOST:PORT")
      ->envname("COPS_SERVER")
      ->capture_default_str();
  app.add_flag("--json", g.json, "Machine-readable output (JSON)");
  app.add_option("--timeout", g.timeout_seconds, "Deadline of each call, seconds")
      ->capture_default_str();
  AddClientSecurityFlags(&app, &g.client.security);

  RegisterArgs reg;
  CLI::App* register_cmd = app.add_subcommand("register", "Register files or directories");
  register_cmd->add_option("paths", reg.paths, "Files or directories (recursive)")->required();
  register_cmd->add_option("--title", reg.title, "Title (default: the file name)");
  register_cmd->add_option("--author", reg.author, "Author");
  register_cmd->add_option("--owner", reg.owner, "Owner");
  register_cmd->add_option("--collection", reg.collection, "Collection");
  register_cmd->add_option("--external-id", reg.external_id, "Your id of the (single) document");
  register_cmd->add_option("--format", reg.format, "auto|text|html|email|pdf|docx|odt|latex|markdown")
      ->capture_default_str();

  CheckArgs chk;
  CLI::App* check_cmd = app.add_subcommand("check", "Check a document (- for stdin)");
  check_cmd->add_option("path", chk.path, "File to check, or - for stdin")->required();
  check_cmd->add_option("--threshold", chk.threshold, "Decision threshold in (0, 1] (default 0.08, measured in docs/accuracy.md)");
  check_cmd->add_option("--function", chk.function,
                        "match_ratio|containment|match_count|ordered_matches");
  check_cmd->add_option("--min-count", chk.min_count, "For count functions (default 10)");
  check_cmd->add_option("--max-results", chk.max_results, "Matches shown, 0 = all (default 20)");
  check_cmd->add_option("--min-passage-units", chk.min_passage_units,
                        "Shortest shared passage reported, in units (default 8)");
  check_cmd->add_option("--collection", chk.collections, "Search only these collections");
  check_cmd->add_option("--format", chk.format, "Format of the document")->capture_default_str();
  check_cmd->add_option("--sample-size", chk.sample_size, "Test-time sampling: chunks looked up");
  check_cmd->add_option("--sample-seed", chk.sample_seed, "Seed of the sample");
  check_cmd->add_option("--max-doc-frequency", chk.max_doc_frequency,
                        "Ignore chunks found in more documents (0 = no limit)");
  check_cmd->add_flag("--no-spans", chk.no_spans, "Do not return matched spans");

  uint64_t id = 0;
  CLI::App* unregister_cmd = app.add_subcommand("unregister", "Remove a registered document");
  unregister_cmd->add_option("id", id, "Document id")->required();
  bool content = false;
  CLI::App* get_cmd = app.add_subcommand("get", "Show a registered document's record");
  get_cmd->add_option("id", id, "Document id")->required();
  get_cmd->add_flag("--content", content, "Write the registered bytes to stdout");
  std::string collection;
  uint32_t limit = 0;
  CLI::App* list_cmd = app.add_subcommand("list", "List registered documents");
  list_cmd->add_option("--collection", collection, "Only this collection");
  list_cmd->add_option("--limit", limit, "At most this many (0 = all)");
  CLI::App* stats_cmd = app.add_subcommand("stats", "Index statistics");

  LoadOptions load;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Load generator: concurrent register and check");
  AddLoadFlags(bench_cmd, &load);

  int admin_exit = kExitOk;
  AdminCommandEnv admin_env;
  admin_env.connect = [&g]() -> std::shared_ptr<grpc::Channel> {
    grpc::ChannelArguments args;
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        OpenSecureChannel(g.client.target, g.client.security, args);
    if (!channel.ok()) {
      std::cerr << "cops admin: " << StatusText(channel.status()) << "\n";
      return nullptr;
    }
    return *channel;
  };
  admin_env.prepare = [&g](grpc::ClientContext* context) {
    AttachApiKey(g.client.security, context);
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(g.timeout_seconds * 1000)));
  };
  admin_env.json = &g.json;
  admin_env.exit_code = &admin_exit;
  AddAdminCommands(&app, admin_env);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitError;
  }
  if (register_cmd->parsed()) return RunRegister(g, reg);
  if (check_cmd->parsed()) return RunCheck(g, chk);
  if (unregister_cmd->parsed()) return RunUnregister(g, id);
  if (get_cmd->parsed()) return RunGet(g, id, content);
  if (list_cmd->parsed()) return RunList(g, collection, limit);
  if (stats_cmd->parsed()) return RunStats(g);
  if (bench_cmd->parsed()) {
    absl::StatusOr<std::unique_ptr<Client>> client = Connect(g);
    if (!client.ok()) return Fail("bench", client.status());
    return RunLoad(**client, load, std::cout) ? kExitOk : kExitError;
  }
  return admin_exit;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) {
  try {
    return cops::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cops: " << e.what() << "\n";
    return 2;
  }
}
