// A randomized fault test of the partitioned cluster, as distributed databases are tested
// (Jepsen's history checks; RocksDB's crash tests): three nats-servers in one JetStream
// cluster, two partitions of two `copsd --follow` replicas each and a `copsd --route`, all
// real processes on loopback. Client threads register, unregister and check documents through
// the router while a nemesis, on a schedule drawn from a seed, injects one fault at a time:
// kill -9 and restart, or SIGSTOP and SIGCONT, of a NATS server, a replica or the router, and
// (as root, where a tmpfs can be mounted) a replica's disk filled for a while. Every call's
// outcome goes into a history, checked once the faults are healed:
//
//   - every acknowledged registration is found by a complete check;
//   - every acknowledged unregistration is gone from every replica and from checks;
//   - no check answered a complete reply (every partition answering) without the document it
//     was asked to see (a "no violation" that is wrong);
//   - the replicas of each partition converge: the same documents (ids, text digests).
//
// A call that failed (UNAVAILABLE, DEADLINE_EXCEEDED: the cluster was failing over) is not
// acknowledged: its effect may or may not have happened, and the history does not rely on it.
//
// CTest runs it for COPS_NEMESIS_SECONDS (default 30 s of faults; about a minute in all). A
// soak: scripts/nemesis.sh --minutes N --seed S. The seed fixes the nemesis's schedule, not
// the processes' timing.

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/eventually.h"
#include "tests/testing/files.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kPartitions = 2;
constexpr uint32_t kReplicas = 2;
// A client's pause after a failed call (the router or a NATS server is down).
constexpr std::chrono::milliseconds kBackoff(100);

// Document `i`: 120 pseudo-random words sharing no passage with any other document.
std::string Text(size_t i) { return testing_corpus::Prose(static_cast<uint32_t>(9000 + i), 120); }

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectTo(const std::string& address) {
  ClientOptions options;
  options.target = address;
  options.timeout = std::chrono::seconds(10);
  return Client::Connect(options);
}

// What the clients did and saw. A document's state moves registered -> unregistering ->
// unregistered (acknowledged) or unknown (the unregistration failed: it may have happened).
class History {
 public:
  enum class State { kRegistered, kUnregistering, kUnregistered, kUnknown };
  struct Doc {
    uint64_t id = 0;  // also the registration's log sequence
    State state = State::kRegistered;
    uint64_t unregistered_at = 0;  // kUnregistered: the unregistration's log sequence
  };
  struct Counts {
    uint64_t registered = 0, register_failed = 0;
    uint64_t unregistered = 0, unregister_failed = 0;
    uint64_t checks_complete = 0, checks_partial = 0, checks_failed = 0;
    uint64_t wrong = 0;  // complete answers without the document asked for
  };

  void Registered(size_t doc, uint64_t id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    docs_[doc] = {id, State::kRegistered};
    ++counts_.registered;
  }
  void RegisterFailed() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++counts_.register_failed;
  }
  // A registered document picked at random (`for_unregister`: marked unregistering), or
  // false when none is.
  bool Pick(std::mt19937_64* random, bool for_unregister, size_t* doc, uint64_t* id)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<size_t> registered;
    for (const auto& [d, entry] : docs_) {
      if (entry.state == State::kRegistered) registered.push_back(d);
    }
    // Unregistrations leave most documents in place, so that checks have work.
    if (registered.empty() || (for_unregister && registered.size() < 4)) return false;
    *doc = registered[(*random)() % registered.size()];
    *id = docs_[*doc].id;
    if (for_unregister) docs_[*doc].state = State::kUnregistering;
    return true;
  }
  void UnregisterDone(size_t doc, const absl::StatusOr<v1::UnregisterDocumentReply>& reply)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const bool acknowledged = reply.ok();
    docs_[doc].state = acknowledged ? State::kUnregistered : State::kUnknown;
    if (acknowledged) docs_[doc].unregistered_at = reply->log_sequence();
    ++(acknowledged ? counts_.unregistered : counts_.unregister_failed);
  }
  // Counts a check of `doc`; a wrong answer only while the document stayed registered.
  void Checked(size_t doc, const absl::StatusOr<v1::CheckDocumentReply>& reply)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!reply.ok()) {
      ++counts_.checks_failed;
      return;
    }
    if (reply->partial()) {
      ++counts_.checks_partial;
      return;
    }
    ++counts_.checks_complete;
    const Doc& entry = docs_[doc];
    if (entry.state != State::kRegistered) return;
    bool found = false;
    for (const v1::Match& m : reply->matches()) found = found || m.doc_id() == entry.id;
    if (found && reply->violation()) return;
    ++counts_.wrong;
    if (wrong_.size() < 5) {
      wrong_.push_back("document " + std::to_string(entry.id) + ": " + reply->ShortDebugString());
    }
  }

  std::map<size_t, Doc> Docs() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return docs_;
  }
  Counts counts() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return counts_;
  }
  std::vector<std::string> wrong() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return wrong_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<size_t, Doc> docs_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> wrong_ ABSL_GUARDED_BY(mu_);
};

class ClusterNemesisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    seed_ = EnvOr("COPS_NEMESIS_SEED", 1);
    seconds_ = EnvOr("COPS_NEMESIS_SECONDS", 30);
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsCluster::Start(dir_.Join("nats"), 3));
    MountSmallDisk();
    for (uint32_t p = 0; p < kPartitions; ++p) {
      for (uint32_t r = 0; r < kReplicas; ++r) ASSERT_NO_FATAL_FAILURE(StartReplica(p, r));
    }
    ASSERT_NO_FATAL_FAILURE(StartRouter());
  }

  void TearDown() override {
    stop_clients_.store(true);
    for (std::thread& t : clients_) t.join();
    for (pid_t pid : paused_) kill(pid, SIGCONT);
    if (router_ != nullptr) router_->Stop();
    for (auto& partition : replicas_) {
      for (auto& replica : partition) {
        if (replica != nullptr) replica->Stop();
      }
    }
    if (!small_disk_.empty()) umount2(small_disk_.c_str(), MNT_DETACH);
  }

  // Replica p1r1's data directory on a tmpfs of its own, for the disk-full fault (root
  // only); otherwise that fault is left out, saying why.
  void MountSmallDisk() {
    const fs::path data = dir_.path() / "index-p1r1" / "data";
    fs::create_directories(data);
    if (geteuid() != 0) {
      disk_fill_skipped_ = "not root: no tmpfs to fill";
      return;
    }
    if (mount("tmpfs", data.c_str(), "tmpfs", 0, "size=256m,mode=0700") != 0) {
      disk_fill_skipped_ = std::string("mounting a tmpfs failed: ") + std::strerror(errno);
      return;
    }
    small_disk_ = data.string();
  }

  // Starts replica r of partition p (again: on its old data and address). copsd exits when
  // JetStream does not answer at its start; it is started again, as a supervisor would.
  void StartReplica(uint32_t p, uint32_t r) {
    const std::string name = "index-p" + std::to_string(p) + "r" + std::to_string(r);
    // At info level: a divergence's report shows each replica's log events (Divergence).
    std::vector<std::string> flags = {
        "--follow",       nats_->url(), "--partitions", "2",   "--partition", std::to_string(p),
        "--log-replicas", "3",          "--log-level",  "info"};
    if (replica_address_[p][r].empty()) {
      replica_address_[p][r] = "127.0.0.1:" + std::to_string(testing::PortToRestartOn());
    }
    flags.insert(flags.end(), {"--listen", replica_address_[p][r]});
    // On the small disk, a small write buffer: RocksDB preallocates each write-ahead log
    // (about 1.1 write buffers), which a full tmpfs would otherwise leave writable for a
    // long while; with 1 MiB in one memtable, logs roll and memtables flush often enough to
    // meet the full disk. The free-space reserve is cut to 16 MiB of the 256 MiB tmpfs (the
    // default 256 would refuse every write); the ballast then takes the reserve too.
    if (p == 1 && r == 1 && !small_disk_.empty()) {
      flags.insert(flags.end(), {"--write-buffer-mb", "1", "--postings-memtables", "1",
                                 "--min-free-disk-mb", "16"});
    }
    absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> started;
    ASSERT_TRUE(testing::Eventually(
        [&] {
          started = testing::CopsdProcess::Start(dir_.path() / name, flags);
          return started.ok();
        },
        std::chrono::seconds(90)))
        << started.status();
    replicas_[p][r] = *std::move(started);
    replica_address_[p][r] = replicas_[p][r]->address();
  }

  void StartRouter() {
    std::vector<std::string> flags = {"--route",        nats_->url(), "--partitions",
                                      "2",              "--log-replicas", "3",
                                      "--route-timeout-ms", "3000"};
    for (uint32_t p = 0; p < kPartitions; ++p) {
      for (uint32_t r = 0; r < kReplicas; ++r) {
        flags.insert(flags.end(), {"--replica", std::to_string(p) + "=" + replica_address_[p][r]});
      }
    }
    if (router_address_.empty()) {
      router_address_ = "127.0.0.1:" + std::to_string(testing::PortToRestartOn());
    }
    flags.insert(flags.end(), {"--listen", router_address_});
    absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> started;
    ASSERT_TRUE(testing::Eventually(
        [&] {
          started = testing::CopsdProcess::Start(dir_.path() / "router", flags);
          return started.ok();
        },
        std::chrono::seconds(90)))
        << started.status();
    router_ = *std::move(started);
    router_address_ = router_->address();
  }

  // The clients: one registers new documents, one unregisters some, two check.
  void StartClients() {
    clients_.emplace_back([this] {
      absl::StatusOr<std::unique_ptr<Client>> client = ConnectTo(router_address_);
      if (!client.ok()) return;
      for (size_t i = 0; !stop_clients_.load(); ++i) {
        v1::Document doc;
        doc.set_content(Text(i));
        absl::StatusOr<v1::RegisterDocumentReply> reply = (*client)->Register(doc);
        if (reply.ok()) {
          history_.Registered(i, reply->doc_id());
        } else {
          history_.RegisterFailed();
          std::this_thread::sleep_for(kBackoff);  // the cluster is failing over
        }
      }
    });
    clients_.emplace_back([this] {
      absl::StatusOr<std::unique_ptr<Client>> client = ConnectTo(router_address_);
      if (!client.ok()) return;
      std::mt19937_64 random(seed_ + 1);
      while (!stop_clients_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        size_t doc = 0;
        uint64_t id = 0;
        if (!history_.Pick(&random, /*for_unregister=*/true, &doc, &id)) continue;
        history_.UnregisterDone(doc, (*client)->Unregister(id));
      }
    });
    for (int c = 0; c < 2; ++c) {
      clients_.emplace_back([this, c] {
        absl::StatusOr<std::unique_ptr<Client>> client = ConnectTo(router_address_);
        if (!client.ok()) return;
        std::mt19937_64 random(seed_ + 2 + c);
        while (!stop_clients_.load()) {
          size_t doc = 0;
          uint64_t id = 0;
          if (!history_.Pick(&random, /*for_unregister=*/false, &doc, &id)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
          }
          v1::CheckDocumentRequest request;
          request.set_content(Text(doc));
          request.set_min_log_sequence(id);  // read your writes
          absl::StatusOr<v1::CheckDocumentReply> reply = (*client)->Check(request);
          history_.Checked(doc, reply);
          if (!reply.ok()) std::this_thread::sleep_for(kBackoff);
        }
      });
    }
  }

  // One fault, held for a while, then healed. Returns its name.
  std::string InjectFault(std::mt19937_64* random) {
    std::vector<std::string> kinds = {"kill nats", "pause nats", "kill replica", "pause replica",
                                      "kill router", "pause router"};
    if (!small_disk_.empty()) kinds.push_back("fill disk");
    const std::string kind = kinds[(*random)() % kinds.size()];
    const auto hold = std::chrono::milliseconds(1000 + (*random)() % 2000);
    const int n = static_cast<int>((*random)() % 3);
    const uint32_t p = static_cast<uint32_t>((*random)() % kPartitions);
    const uint32_t r = static_cast<uint32_t>((*random)() % kReplicas);
    if (kind == "kill nats") {
      nats_->server(n).Kill();
      std::this_thread::sleep_for(hold);
      EXPECT_OK(nats_->Restart(n));
    } else if (kind == "pause nats") {
      Pause(nats_->server(n).pid(), hold);
    } else if (kind == "kill replica") {
      kill(replicas_[p][r]->pid(), SIGKILL);
      replicas_[p][r]->Stop();
      replicas_[p][r].reset();
      std::this_thread::sleep_for(hold);
      StartReplica(p, r);
    } else if (kind == "pause replica") {
      Pause(replicas_[p][r]->pid(), hold);
    } else if (kind == "kill router") {
      kill(router_->pid(), SIGKILL);
      router_->Stop();
      router_.reset();
      std::this_thread::sleep_for(hold);
      StartRouter();
    } else if (kind == "pause router") {
      Pause(router_->pid(), hold);
    } else {  // fill disk: p1r1's tmpfs, until no byte more fits
      const std::string ballast = small_disk_ + "/ballast";
      const int fd = open(ballast.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const std::string block(1 << 20, 'x');
      while (fd >= 0 && write(fd, block.data(), block.size()) > 0) {
      }
      if (fd >= 0) close(fd);
      const size_t before = Occurrences(replicas_[1][1]->Log(), "log_apply_failed");
      std::this_thread::sleep_for(hold);
      const size_t after = Occurrences(replicas_[1][1]->Log(), "log_apply_failed");
      disk_full_failures_ += after > before ? after - before : 0;
      fs::remove(ballast);
    }
    return kind;
  }

  // Whether process `pid` has exited (a zombie not yet reaped, or gone).
  static bool Exited(pid_t pid) {
    const std::string stat = testing::ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
  }

  // As a supervisor (systemd's Restart=on-failure) would: restarts every replica that exited
  // by itself, saying why it did.
  void RestartExitedReplicas() {
    for (uint32_t p = 0; p < kPartitions; ++p) {
      for (uint32_t r = 0; r < kReplicas; ++r) {
        if (replicas_[p][r] == nullptr || !Exited(replicas_[p][r]->pid())) continue;
        const std::string log = replicas_[p][r]->Log();
        const size_t error = log.rfind("error=");
        std::cout << "nemesis: replica p" << p << "r" << r << " exited: "
                  << (error == std::string::npos ? log.substr(log.size() - std::min<size_t>(300, log.size()))
                                                 : log.substr(error, 300))
                  << "\n";
        ++replica_exits_;
        replicas_[p][r]->Stop();
        replicas_[p][r].reset();
        StartReplica(p, r);
      }
    }
  }

  static size_t Occurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  void Pause(pid_t pid, std::chrono::milliseconds hold) {
    kill(pid, SIGSTOP);
    paused_.insert(pid);
    std::this_thread::sleep_for(hold);
    kill(pid, SIGCONT);
    paused_.erase(pid);
  }

  // For a post-mortem of partition p's replicas, which listed `a` and `b`: the documents
  // only one holds, what the clients were told of each, and each replica's log lines about
  // its log events (applier errors and restarts, refused and failed applies).
  std::string Divergence(uint32_t p, const std::string& a, const std::string& b,
                         const std::map<size_t, History::Doc>& docs) const {
    std::set<std::string> in_a, in_b;
    for (const auto& [text, lines] : {std::pair{&a, &in_a}, std::pair{&b, &in_b}}) {
      std::istringstream in(*text);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty()) lines->insert(line);
      }
    }
    std::string out = "held by one replica only:\n";
    auto told = [&docs](uint64_t id) -> std::string {
      for (const auto& [doc, entry] : docs) {
        if (entry.id != id) continue;
        switch (entry.state) {
          case History::State::kRegistered:
            return "registration acknowledged";
          case History::State::kUnregistering:
            return "unregistration under way";
          case History::State::kUnregistered:
            return "unregistration acknowledged at " + std::to_string(entry.unregistered_at);
          case History::State::kUnknown:
            return "unregistration failed (either outcome allowed)";
        }
      }
      return "registration not acknowledged";
    };
    for (const auto& [mine, theirs, name] :
         {std::tuple{&in_a, &in_b, "r0"}, std::tuple{&in_b, &in_a, "r1"}}) {
      for (const std::string& line : *mine) {
        if (theirs->count(line) != 0) continue;
        const uint64_t id = std::stoull(line.substr(0, line.find(':')));
        out += "  " + std::string(name) + " only: " + std::to_string(id) + " (" + told(id) + ")\n";
      }
    }
    for (uint32_t r = 0; r < kReplicas; ++r) {
      const fs::path dir = dir_.path() / ("index-p" + std::to_string(p) + "r" + std::to_string(r));
      out += "r" + std::to_string(r) + "'s log events (" + dir.string() + "):\n";
      for (const char* name : {"copsd-earlier.log", "copsd.log"}) {  // its runs in order
        std::ifstream in(dir / name);
        for (std::string line; std::getline(in, line);) {
          if (line.find(" log_") != std::string::npos) out += "  " + line + "\n";
        }
      }
    }
    return out;
  }

  // Document ids and text digests of replica `client`, in id order.
  static absl::StatusOr<std::string> Digest(Client* client) {
    std::string digest;
    std::string token;
    do {
      absl::StatusOr<v1::ListDocumentsReply> page = client->List(1000, token);
      if (!page.ok()) return page.status();
      for (const v1::DocumentInfo& d : page->documents()) {
        digest += std::to_string(d.doc_id()) + ":" + d.sha256() + "\n";
      }
      token = page->next_page_token();
    } while (!token.empty());
    return digest;
  }

  testing::TempDir dir_;
  uint64_t seed_ = 1;
  uint64_t seconds_ = 30;
  std::unique_ptr<testing::NatsCluster> nats_;
  std::unique_ptr<testing::CopsdProcess> replicas_[kPartitions][kReplicas];
  std::string replica_address_[kPartitions][kReplicas];
  std::unique_ptr<testing::CopsdProcess> router_;
  std::string router_address_;
  std::string small_disk_;         // the tmpfs mount point, when mounted
  std::string disk_fill_skipped_;  // why not
  size_t disk_full_failures_ = 0;  // applies p1r1 failed (and retried) while its disk was full
  size_t replica_exits_ = 0;       // replicas that exited by themselves, restarted
  std::set<pid_t> paused_;
  History history_;
  std::atomic<bool> stop_clients_{false};
  std::vector<std::thread> clients_;
};

TEST_F(ClusterNemesisTest, TheHistoryHoldsUnderRandomFaults) {
  if (!disk_fill_skipped_.empty()) {
    std::cout << "disk-full fault left out: " << disk_fill_skipped_ << "\n";
  }
  StartClients();
  std::mt19937_64 random(seed_);
  std::map<std::string, int> faults;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds_);
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + random() % 1500));
    const std::string kind = InjectFault(&random);
    ++faults[kind];
    RestartExitedReplicas();
    std::cout << "nemesis: "
              << std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::steady_clock::now() - start)
                     .count()
              << " s: " << kind << " (healed)" << std::endl;
    if (HasFatalFailure()) return;
  }
  // Healed (each fault is); a last quiet while for the clients, then the history is read.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  RestartExitedReplicas();
  stop_clients_.store(true);
  for (std::thread& t : clients_) t.join();
  clients_.clear();
  const History::Counts counts = history_.counts();
  const std::map<size_t, History::Doc> docs = history_.Docs();
  ASSERT_GT(counts.registered, 0u) << "no registration was acknowledged";

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> router, ConnectTo(router_address_));
  std::unique_ptr<Client> replica[kPartitions][kReplicas];
  for (uint32_t p = 0; p < kPartitions; ++p) {
    for (uint32_t r = 0; r < kReplicas; ++r) {
      ASSERT_OK_AND_ASSIGN(replica[p][r], ConnectTo(replica_address_[p][r]));
    }
  }
  // The latest acknowledged event: every replica answers with all of them applied.
  uint64_t last = 0;
  for (const auto& [doc, entry] : docs) last = std::max({last, entry.id, entry.unregistered_at});

  // Every acknowledged registration found; every acknowledged unregistration gone.
  size_t lost = 0, resurrected = 0;
  for (const auto& [doc, entry] : docs) {
    if (entry.state == History::State::kUnknown) continue;
    v1::CheckDocumentRequest request;
    request.set_content(Text(doc));
    request.set_min_log_sequence(last);
    absl::StatusOr<v1::CheckDocumentReply> reply;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          reply = router->Check(request);
          return reply.ok() && !reply->partial();
        },
        std::chrono::seconds(60)))
        << "document " << entry.id << ": no complete answer: "
        << (reply.ok() ? reply->ShortDebugString() : reply.status().ToString());
    if (!reply.ok() || reply->partial()) continue;
    const bool found = std::any_of(reply->matches().begin(), reply->matches().end(),
                                   [&](const v1::Match& m) { return m.doc_id() == entry.id; });
    if (entry.state == History::State::kRegistered && !found) {
      ++lost;
      ADD_FAILURE() << "acknowledged document " << entry.id << " not found: "
                    << reply->ShortDebugString();
    }
    if (entry.state == History::State::kUnregistered && found) {
      ++resurrected;
      ADD_FAILURE() << "unregistered document " << entry.id << " found: "
                    << reply->ShortDebugString();
    }
  }

  // The replicas of each partition hold the same documents.
  size_t diverged = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    absl::StatusOr<std::string> a, b;
    const bool same = testing::Eventually(
        [&] {
          a = Digest(replica[p][0].get());
          b = Digest(replica[p][1].get());
          return a.ok() && b.ok() && *a == *b;
        },
        std::chrono::seconds(60));
    if (!same) ++diverged;
    EXPECT_TRUE(same) << "partition " << p << " diverged:\nr0:\n"
                      << (a.ok() ? *a : a.status().ToString()) << "r1:\n"
                      << (b.ok() ? *b : b.status().ToString())
                      << (a.ok() && b.ok() ? Divergence(p, *a, *b, docs) : "");
  }

  EXPECT_EQ(counts.wrong, 0u) << "complete checks without the document asked for, e.g.:\n"
                              << (history_.wrong().empty() ? "" : history_.wrong()[0]);
  const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
  std::cout << "nemesis: seed " << seed_ << ", " << seconds_ << " s of faults (" << elapsed
            << " s in all)\n  operations: registrations " << counts.registered
            << " acknowledged, " << counts.register_failed << " failed; unregistrations "
            << counts.unregistered << " acknowledged, " << counts.unregister_failed
            << " failed; checks " << counts.checks_complete << " complete, "
            << counts.checks_partial << " partial, " << counts.checks_failed << " failed\n"
            << "  faults:";
  int total = 0;
  for (const auto& [kind, n] : faults) {
    std::cout << " " << kind << " " << n << ",";
    total += n;
  }
  std::cout << " in all " << total;
  if (!small_disk_.empty()) {  // whether the disk-full fault bit: applies failed, retried
    std::cout << "\n  applies failed on the full disk (p1r1, retried): " << disk_full_failures_;
  }
  std::cout << "\n  replicas that exited by themselves (restarted, as by a supervisor): "
            << replica_exits_;
  std::cout << "\n  anomalies: " << (lost + resurrected + diverged + counts.wrong)
            << " (lost " << lost << ", resurrected " << resurrected << ", wrong checks "
            << counts.wrong << ", diverged partitions " << diverged << ")\n";
}

}  // namespace
}  // namespace cops
