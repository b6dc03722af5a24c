#include "client/load_generator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace cops {
namespace {

// A fixed vocabulary of pronounceable pseudo-words drawn with a Zipf-like skew, so that
// chunk statistics look like prose: a few very common words, a long tail of rare ones.
const std::vector<std::string>& Vocabulary() {
  static const std::vector<std::string> words = [] {
    static const char* const kOnsets[] = {"b", "c",  "d",  "f",  "g",  "h",  "l",  "m",
                                          "n", "p",  "r",  "s",  "t",  "v",  "w",  "st",
                                          "tr", "pl", "gr", "ch", "sh", "th", "br", "cl"};
    static const char* const kVowels[] = {"a", "e", "i", "o", "u", "ea", "ou", "io", "ai"};
    static const char* const kCodas[] = {"", "n", "r", "s", "t", "l", "nd", "st", "ck", "m"};
    std::mt19937_64 rng(42);
    std::vector<std::string> out;
    out.reserve(20000);
    for (int i = 0; i < 20000; ++i) {
      const int syllables = 1 + static_cast<int>(rng() % 3);
      std::string w;
      for (int s = 0; s < syllables; ++s) {
        w += kOnsets[rng() % std::size(kOnsets)];
        w += kVowels[rng() % std::size(kVowels)];
        w += kCodas[rng() % std::size(kCodas)];
      }
      out.push_back(std::move(w));
    }
    return out;
  }();
  return words;
}

struct Latencies {
  std::mutex mu;
  std::vector<double> micros;
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> violations{0};
  std::string first_error;
  std::map<std::string, uint64_t> errors_by_code;  // "RESOURCE_EXHAUSTED" -> calls
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::lround(q * static_cast<double>(v.size() - 1))));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

// Runs `count` calls of `call(i, client)` on `threads` threads, thread t calling through
// clients[t % clients.size()]; returns wall-clock seconds.
template <typename Call>
double RunPhase(uint32_t count, uint32_t threads, const std::vector<Client*>& clients,
                Latencies* lat, Call call) {
  std::atomic<uint32_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < std::max<uint32_t>(threads, 1); ++t) {
    pool.emplace_back([&, t] {
      Client& client = *clients[t % clients.size()];
      std::vector<double> mine;
      for (uint32_t i = next++; i < count; i = next++) {
        const auto t0 = std::chrono::steady_clock::now();
        absl::Status s = call(i, client);
        const auto t1 = std::chrono::steady_clock::now();
        mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(lat->mu);
          if (lat->errors++ == 0) lat->first_error = s.ToString();
          ++lat->errors_by_code[absl::StatusCodeToString(s.code())];
        }
      }
      std::lock_guard<std::mutex> lock(lat->mu);
      lat->micros.insert(lat->micros.end(), mine.begin(), mine.end());
    });
  }
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json Summarize(const char* phase, uint32_t count, double seconds, Latencies& lat) {
  const double mb = lat.bytes.load() / 1e6;
  return {{"phase", phase},
          {"calls", count},
          {"errors", lat.errors.load()},
          {"errors_by_code", lat.errors_by_code},
          {"seconds", seconds},
          {"calls_per_second", count / seconds},
          {"megabytes", mb},
          {"megabytes_per_second", mb / seconds},
          {"p50_ms", Percentile(lat.micros, 0.50) / 1000},
          {"p90_ms", Percentile(lat.micros, 0.90) / 1000},
          {"p99_ms", Percentile(lat.micros, 0.99) / 1000},
          {"violations", lat.violations.load()}};
}

void Print(const nlohmann::json& j, bool json, std::ostream& out) {
  if (json) {
    out << j.dump() << "\n";
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "%-8s %7llu calls in %7.2f s: %8.1f calls/s, %7.2f MB/s; latency p50 %.2f ms, "
                "p90 %.2f ms, p99 %.2f ms; errors %llu",
                j["phase"].get<std::string>().c_str(), j["calls"].get<unsigned long long>(),
                j["seconds"].get<double>(), j["calls_per_second"].get<double>(),
                j["megabytes_per_second"].get<double>(), j["p50_ms"].get<double>(),
                j["p90_ms"].get<double>(), j["p99_ms"].get<double>(),
                j["errors"].get<unsigned long long>());
  out << line;
  for (const auto& [code, calls] : j["errors_by_code"].items()) {
    out << " " << code << " " << calls.get<uint64_t>();
  }
  if (j["phase"] == "check") out << "; violations " << j["violations"].get<uint64_t>();
  if (j.contains("documents")) {
    std::snprintf(line, sizeof line, "; %.1f documents/s",
                  j["documents_per_second"].get<double>());
    out << line;
  }
  out << "\n";
}

}  // namespace

std::string SyntheticText(uint64_t seed, uint64_t n, uint32_t bytes) {
  const std::vector<std::string>& vocab = Vocabulary();
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + n);
  // Zipf-like: index = floor(V^u) - 1 with u uniform in [0, 1).
  std::uniform_real_distribution<double> u(0, 1);
  const double log_v = std::log(static_cast<double>(vocab.size()));
  std::string text;
  text.reserve(bytes + 64);
  int sentence_left = 0, sentences_in_paragraph = 0;
  while (text.size() < bytes) {
    if (sentence_left == 0) {
      if (!text.empty()) {
        text += '.';
        if (++sentences_in_paragraph == 5) {
          text += "\n\n";
          sentences_in_paragraph = 0;
        } else {
          text += ' ';
        }
      }
      sentence_left = 8 + static_cast<int>(rng() % 14);
    }
    const size_t i =
        std::min(vocab.size() - 1, static_cast<size_t>(std::exp(u(rng) * log_v)) - 1);
    std::string word = vocab[i];
    if (text.empty() || text.back() == '\n' || (text.size() >= 2 && text[text.size() - 2] == '.')) {
      word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    } else {
      text += ' ';
    }
    text += word;
    --sentence_left;
  }
  text += ".\n";
  return text;
}

void AddLoadFlags(CLI::App* app, LoadOptions* o) {
  app->add_option("--documents", o->documents, "Documents to register (0 = skip)")
      ->capture_default_str();
  app->add_option("--document-bytes", o->document_bytes, "Size of each registered document")
      ->capture_default_str();
  app->add_option("--checks", o->checks, "Checks to run (0 = skip)")->capture_default_str();
  app->add_option("--check-bytes", o->check_bytes, "Size of each checked message")
      ->capture_default_str();
  app->add_option("--concurrency", o->concurrency, "Client threads")->capture_default_str();
  app->add_option("--connections", o->connections,
                  "TCP connections the client threads take turns on")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  app->add_option("--copy-fraction", o->copy_fraction,
                  "Checked messages embedding a copied passage")
      ->capture_default_str();
  app->add_flag("--heavy-revisions,!--no-heavy-revisions", o->heavy_revisions,
                "Checks ask (or not) for heavy revisions, to measure what they cost; neither: "
                "as the server decides");
  app->add_option("--seed", o->seed, "Text generator seed")->capture_default_str();
  app->add_option("--first-check", o->first_check,
                  "Number of the first check (runs from different numbers send different messages)")
      ->capture_default_str();
  app->add_option("--collection", o->collection, "Collection of the documents")
      ->capture_default_str();
  app->add_option("--existing", o->existing,
                  "Documents registered by an earlier run with this seed")
      ->capture_default_str();
  app->add_option("--bulk", o->bulk,
                  "Register through RegisterDocuments streams of this many documents each "
                  "(0 = one RegisterDocument call per document)")
      ->capture_default_str();
  app->add_flag("!--no-receipts", o->receipts,
                "Registrations ask for no receipt (omit_receipt), as `cops register` without "
                "--receipt-dir does");
  app->add_flag("--bench-json", o->json, "One JSON object per phase");
}

bool RunLoad(const std::vector<Client*>& clients, const LoadOptions& o, std::ostream& out) {
  bool ok = true;
  // A phase's texts are written before its clock starts when they fit in kPreparedBytes, so
  // that it measures the server, not the client's text generator (which shares the machine's
  // cores with it in these benchmarks, and took ~0.15 of them while registering).
  constexpr uint64_t kPreparedBytes = uint64_t{512} << 20;
  if (o.documents > 0) {
    std::vector<std::string> prepared;
    if (uint64_t{o.documents} * o.document_bytes <= kPreparedBytes) {
      prepared.reserve(o.documents);
      for (uint32_t i = 0; i < o.documents; ++i) {
        prepared.push_back(SyntheticText(o.seed, uint64_t{o.existing} + i, o.document_bytes));
      }
    }
    auto make_document = [&](uint64_t n) {
      v1::Document doc;
      doc.set_content(prepared.empty() ? SyntheticText(o.seed, n, o.document_bytes)
                                       : std::move(prepared[n - o.existing]));  // sent once
      doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
      doc.mutable_metadata()->set_title("bench document " + std::to_string(n));
      doc.mutable_metadata()->set_collection(o.collection);
      return doc;
    };
    Latencies lat;
    const uint32_t per_call = std::max<uint32_t>(1, o.bulk);
    const uint32_t calls = (o.documents + per_call - 1) / per_call;
    auto register_call = [&](uint32_t i, Client& client) -> absl::Status {
      if (o.bulk == 0) {
        v1::Document doc = make_document(o.existing + i);
        lat.bytes += doc.content().size();
        return client.Register(doc, o.receipts).status();
      }
      // One RegisterDocuments stream of up to `bulk` documents.
      std::vector<v1::Document> docs;
      for (uint32_t d = i * per_call; d < std::min(o.documents, (i + 1) * per_call); ++d) {
        docs.push_back(make_document(o.existing + d));
        lat.bytes += docs.back().content().size();
      }
      COPS_ASSIGN_OR_RETURN(v1::RegisterDocumentsReply reply,
                            client.RegisterMany(docs, o.receipts));
      for (const v1::RegisterResult& r : reply.results()) {
        if (absl::Status s = ResultOf(r).status(); !s.ok()) {
          return absl::Status(s.code(), "document " + std::to_string(r.index()) + ": " +
                                            std::string(s.message()));
        }
      }
      return absl::OkStatus();
    };
    const double seconds = RunPhase(calls, o.concurrency, clients, &lat, register_call);
    nlohmann::json j = Summarize(o.bulk == 0 ? "register" : "register-bulk", calls, seconds, lat);
    j["documents"] = o.documents;
    j["documents_per_second"] = o.documents / seconds;
    Print(j, o.json, out);
    if (lat.errors > 0) {
      out << "first register error: " << lat.first_error << "\n";
      ok = false;
    }
  }
  const uint64_t registered = uint64_t{o.existing} + o.documents;
  if (o.checks > 0) {
    Latencies lat;
    auto message = [&](uint32_t n) {
      const uint64_t i = uint64_t{o.first_check} + n;
      std::mt19937_64 rng(o.seed * 31 + i);
      std::string text = SyntheticText(o.seed + 1000003, i, o.check_bytes);
      if (registered > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < o.copy_fraction) {
        // Replace the middle of the message with most of a registered document.
        const std::string copied =
            SyntheticText(o.seed, rng() % registered, std::min(o.document_bytes, o.check_bytes / 2));
        const size_t at = text.size() / 4;
        text.replace(at, copied.size(), copied);
      }
      return text;
    };
    // The messages, as the documents above.
    std::vector<std::string> prepared;
    if (uint64_t{o.checks} * o.check_bytes <= kPreparedBytes) {
      prepared.reserve(o.checks);
      for (uint32_t n = 0; n < o.checks; ++n) prepared.push_back(message(n));
    }
    auto check_call = [&](uint32_t n, Client& client) {
      v1::CheckDocumentRequest request;
      request.set_content(prepared.empty() ? message(n) : std::move(prepared[n]));  // sent once
      request.set_format(v1::DOCUMENT_FORMAT_TEXT);
      if (o.heavy_revisions != 0) {
        request.mutable_options()->set_heavy_revisions(o.heavy_revisions > 0);
      }
      lat.bytes += request.content().size();
      absl::StatusOr<v1::CheckDocumentReply> reply = client.Check(request);
      if (reply.ok() && reply->violation()) ++lat.violations;
      return reply.status();
    };
    const double seconds = RunPhase(o.checks, o.concurrency, clients, &lat, check_call);
    nlohmann::json j = Summarize("check", o.checks, seconds, lat);
    Print(j, o.json, out);
    if (lat.errors > 0) {
      out << "first check error: " << lat.first_error << "\n";
      ok = false;
    }
  }
  return ok;
}

}  // namespace cops
