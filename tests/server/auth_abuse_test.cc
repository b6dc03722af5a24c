// End to end: the real copsd with --auth on, at its default thread pool, against callers who
// abuse authentication: a flood of wrong API keys from many clients on one address (the
// legitimate admin calls from the same address, as behind a NAT).

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

// A channel with a connection of its own (gRPC shares one between equal channels otherwise),
// as a separate client machine would have.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

std::string ReadKey(const std::filesystem::path& path) {
  std::string key;
  std::ifstream(path) >> key;
  return key;
}

// A well-formed key nobody was given.
std::string WrongKey(int i) {
  char id[17];
  std::snprintf(id, sizeof(id), "%016x", i + 1);
  return std::string("cops_") + id + "_" + std::string(64, 'a');
}

// 40 clients sending wrong keys in a loop (as in the report of issue 31) must not keep the
// admin's own calls from a thread: each of its GetStats calls, made while the flood goes on
// from the same address, succeeds. The flood's callers are answered, every one, with
// UNAUTHENTICATED, or RESOURCE_EXHAUSTED once the address is past its failure limit. (With
// 16 handler threads, the old default, the flood filled them all on a loaded machine and
// gRPC refused an admin call, "Server Threadpool Exhausted"; 40 callers, one call in flight
// each, cannot fill the default 64.)
TEST(AuthAbuseTest, AWrongKeyFloodFromTheAdminsAddressLeavesTheAdminServed) {
  testing::TempDir dir("auth_flood");
  ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {"--auth", "on"}));
  const std::string admin_key = ReadKey(dir.path() / "data" / "admin.key");
  ASSERT_FALSE(admin_key.empty());

  constexpr int kAttackers = 40;
  constexpr int kMaxAttempts = 400;  // per attacker; the flood stops once the admin is done
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::mutex mu;
  std::map<grpc::StatusCode, int> codes;
  int over_limit = 0;  // RESOURCE_EXHAUSTED naming the address's failure limit
  std::vector<std::string> unexpected;
  std::vector<std::thread> attackers;
  for (int a = 0; a < kAttackers; ++a) {
    attackers.emplace_back([&, a] {
      auto stub = v1::CopyDetection::NewStub(OwnChannel(copsd->address()));
      for (int i = 0; i < kMaxAttempts && !stop.load(); ++i) {
        grpc::ClientContext ctx;
        testing::PrepareCall(&ctx, WrongKey(a * kMaxAttempts + i), std::chrono::seconds(60));
        // A connection that failed (40 opened at once on a loaded machine) is retried rather
        // than failing the call at once: what is under test is how copsd answers, and a
        // channel in backoff once failed all 400 of its calls in a moment, none sent.
        ctx.set_wait_for_ready(true);
        v1::GetStatsReply reply;
        const grpc::Status s = stub->GetStats(&ctx, v1::GetStatsRequest(), &reply);
        answered.fetch_add(1);
        std::lock_guard<std::mutex> lock(mu);
        codes[s.error_code()]++;
        if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
            s.error_message().find("failed authentications") != std::string::npos) {
          ++over_limit;
        }
        if (s.error_code() != grpc::StatusCode::UNAUTHENTICATED &&
            s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
          unexpected.push_back(std::to_string(s.error_code()) + ": " + s.error_message());
        }
      }
    });
  }
  // The flood is under way: every attacker has failed a few times.
  while (answered.load() < 3 * kAttackers && !stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  auto admin = v1::CopyDetection::NewStub(OwnChannel(copsd->address()));
  int served = 0;
  std::vector<std::string> refused;
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, admin_key, std::chrono::seconds(30));
    ctx.set_wait_for_ready(true);  // as the flood's: a refusal must come from copsd
    v1::GetStatsReply reply;
    const grpc::Status s = admin->GetStats(&ctx, v1::GetStatsRequest(), &reply);
    if (s.ok()) {
      ++served;
    } else {
      refused.push_back(std::to_string(s.error_code()) + ": " + s.error_message());
    }
  }
  stop.store(true);
  for (std::thread& t : attackers) t.join();

  EXPECT_EQ(served, 20) << "first refusal: " << (refused.empty() ? "" : refused.front());
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " flood calls answered otherwise, "
                                  << "the first: " << unexpected.front();
  // Past its limit the address is told so (the flood made far more than 20 failures).
  EXPECT_GT(over_limit, 0) << codes[grpc::StatusCode::UNAUTHENTICATED] << " UNAUTHENTICATED, "
                           << codes[grpc::StatusCode::RESOURCE_EXHAUSTED]
                           << " RESOURCE_EXHAUSTED";
  EXPECT_EQ(copsd->Stop(), 0);
}

}  // namespace
}  // namespace cops
