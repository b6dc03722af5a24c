#!/usr/bin/env bash
# The measurement behind the HTTP library choice (docs/api.md, "Why cpp-httplib"): the two
# Debian 12 HTTP server libraries COPS can use without new transitive dependencies,
# cpp-httplib (libcpp-httplib-dev) and civetweb (libcivetweb-dev, already pulled in by
# prometheus-cpp), each serving a 3 KB JSON reply on 8 threads to 8 keep-alive clients for
# SECONDS (default 3) seconds, interleaved twice, TCP_NODELAY on both sides. Prints
# requests/s per library and round.
set -euo pipefail
seconds="${1:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/probe.cc" <<'EOF'
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "civetweb.h"
#include "httplib.h"

static const std::string kReply = "{\"pad\":\"" + std::string(3000, 'x') + "\"}";

static int CivetHandler(mg_connection* conn, void*) {
  mg_send_http_ok(conn, "application/json", static_cast<long long>(kReply.size()));
  mg_write(conn, kReply.data(), kReply.size());
  return 200;
}

// Requests per second of 8 keep-alive clients against 127.0.0.1:port.
static double Load(int port, int seconds) {
  std::atomic<long> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      while (!stop) {
        auto r = c.Get("/ping");
        if (r && r->status == 200 && r->body.size() == kReply.size()) ++done;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : clients) t.join();
  return static_cast<double>(done) / seconds;
}

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 3;
  httplib::Server h;
  h.new_task_queue = [] { return new httplib::ThreadPool(8); };
  h.set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle delay
  h.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kReply, "application/json");
  });
  const int hport = h.bind_to_any_port("127.0.0.1");
  std::thread ht([&] { h.listen_after_bind(); });

  mg_init_library(0);
  const char* options[] = {"listening_ports", "127.0.0.1:0", "num_threads", "8",
                           "enable_keep_alive", "yes", "tcp_nodelay", "1", nullptr};
  mg_callbacks callbacks{};
  mg_context* ctx = mg_start(&callbacks, nullptr, options);
  mg_set_request_handler(ctx, "/ping", CivetHandler, nullptr);
  mg_server_port ports[1];
  mg_get_server_ports(ctx, 1, ports);
  const int cport = ports[0].port;
  while (!h.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  for (int round = 1; round <= 2; ++round) {
    std::printf("round %d  cpp-httplib %.0f req/s\n", round, Load(hport, seconds));
    std::printf("round %d  civetweb    %.0f req/s\n", round, Load(cport, seconds));
  }
  mg_stop(ctx);
  h.stop();
  ht.join();
}
EOF
g++ -std=c++20 -O2 -o "$work/probe" "$work/probe.cc" $(pkg-config --cflags --libs cpp-httplib) \
  -lcivetweb -pthread
"$work/probe" "$seconds"
