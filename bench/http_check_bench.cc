// A synchronous check of a ~3 KB text over the HTTP API (POST /v1/checks) against the same
// check over gRPC (CheckDocument), at the same concurrency against one running copsd
// (started with --http-listen; scripts/bench-http.sh starts one). A plain program, not Google
// Benchmark: registers --documents synthetic documents over gRPC (skipped with 0), then runs
// the same messages (half embedding a copied passage) through each path for --seconds,
// gRPC and HTTP interleaved --rounds times, and prints one JSON line per run.
//
//   http_check_bench --grpc 127.0.0.1:7411 --http 127.0.0.1:7412 [--documents 2000]
//                    [--concurrency 8] [--seconds 5] [--rounds 2] [--check-bytes 3000]
//                    [--registered]  (the documents are there already: no import)

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "client/load_generator.h"
#include "httplib.h"

namespace cops {
namespace {

struct Args {
  std::string grpc = "127.0.0.1:7411";
  std::string http = "127.0.0.1:7412";
  uint32_t documents = 2000;
  uint32_t document_bytes = 4000;
  uint32_t check_bytes = 3000;
  uint32_t concurrency = 8;
  uint32_t seconds = 5;
  uint32_t rounds = 2;
  uint32_t messages = 400;  // distinct messages, cycled
  bool registered = false;  // the --documents are registered already (an earlier run's)
};

// Message m: a new text, half of them with a passage of document m copied in its middle.
std::vector<std::string> Messages(const Args& a) {
  std::vector<std::string> out;
  for (uint32_t m = 0; m < a.messages; ++m) {
    std::string text = SyntheticText(7, 1'000'000 + m, a.check_bytes);
    if (m % 2 == 0 && a.documents > 0) {
      const std::string source = SyntheticText(1, m % a.documents, a.document_bytes);
      text.insert(text.size() / 2, " " + source.substr(0, a.check_bytes / 2) + " ");
      text.resize(a.check_bytes);
    }
    out.push_back(std::move(text));
  }
  return out;
}

// Checks/s of `concurrency` threads calling `check(thread, message)` for `seconds`.
template <typename Check>
double Run(const Args& a, const std::vector<std::string>& messages, Check check,
           uint64_t* failures) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done{0}, failed{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < a.concurrency; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; !stop; i += a.concurrency) {
        if (check(t, messages[i % messages.size()])) {
          ++done;
        } else {
          ++failed;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(a.seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  *failures = failed;
  return static_cast<double>(done) / a.seconds;
}

int Main(int argc, char** argv) {
  Args a;
  CLI::App app("HTTP against gRPC checks");
  app.add_option("--grpc", a.grpc);
  app.add_option("--http", a.http);
  app.add_option("--documents", a.documents);
  app.add_flag("--registered", a.registered, "The documents are registered already");
  app.add_option("--check-bytes", a.check_bytes);
  app.add_option("--concurrency", a.concurrency);
  app.add_option("--seconds", a.seconds);
  app.add_option("--rounds", a.rounds);
  CLI11_PARSE(app, argc, argv);

  ClientOptions options;
  options.target = a.grpc;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 2;
  }
  if (a.documents > 0 && !a.registered) {
    std::vector<v1::Document> batch;
    for (uint32_t d = 0; d < a.documents; ++d) {
      v1::Document doc;
      doc.set_content(SyntheticText(1, d, a.document_bytes));
      doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
      batch.push_back(std::move(doc));
      if (batch.size() == 500 || d + 1 == a.documents) {
        absl::StatusOr<v1::RegisterDocumentsReply> r = (*client)->RegisterMany(batch);
        if (!r.ok() || r->failed() > 0) {
          std::cerr << "registration failed\n";
          return 2;
        }
        batch.clear();
      }
    }
  }
  const std::vector<std::string> messages = Messages(a);
  const size_t colon = a.http.rfind(':');
  const std::string host = a.http.substr(0, colon);
  const int port = std::stoi(a.http.substr(colon + 1));
  std::vector<std::unique_ptr<httplib::Client>> http;
  for (uint32_t t = 0; t < a.concurrency; ++t) {
    http.push_back(std::make_unique<httplib::Client>(host, port));
    http.back()->set_keep_alive(true);
    http.back()->set_tcp_nodelay(true);
  }
  auto grpc_check = [&](uint32_t, const std::string& text) {
    v1::CheckDocumentRequest request;
    request.set_content(text);
    request.set_format(v1::DOCUMENT_FORMAT_TEXT);
    return (*client)->Check(request).ok();
  };
  auto http_check = [&](uint32_t t, const std::string& text) {
    httplib::Result r = http[t]->Post("/v1/checks", text, "text/plain");
    return r && r->status == 200;
  };
  uint64_t warm_failed = 0;
  Run(a, messages, grpc_check, &warm_failed);  // warm-up, unmeasured
  for (uint32_t round = 1; round <= a.rounds; ++round) {
    uint64_t grpc_failed = 0, http_failed = 0;
    const double grpc = Run(a, messages, grpc_check, &grpc_failed);
    const double http_rate = Run(a, messages, http_check, &http_failed);
    std::printf(
        "{\"round\":%u,\"concurrency\":%u,\"check_bytes\":%u,\"grpc_checks_per_s\":%.0f,"
        "\"http_checks_per_s\":%.0f,\"http_over_grpc\":%.2f,\"failed\":%llu}\n",
        round, a.concurrency, a.check_bytes, grpc, http_rate, http_rate / grpc,
        static_cast<unsigned long long>(grpc_failed + http_failed));
  }
  return 0;
}

}  // namespace
}  // namespace cops

int main(int argc, char** argv) { return cops::Main(argc, argv); }
