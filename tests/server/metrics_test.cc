// MetricsServer: /metrics over real HTTP on an ephemeral loopback port, with the RPC
// interceptor on a real gRPC server.

#include "server/metrics.h"

#include <atomic>
#include <memory>
#include <string>

#include "client/client.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using testing::HttpGet;

TEST(MetricsServerTest, ServesTheServerStateReadAtEachScrape) {
  std::atomic<uint64_t> documents{42};
  ASSERT_OK_AND_ASSIGN(auto metrics, MetricsServer::Start("127.0.0.1:0", [&documents] {
    ServerState state;
    state.index.documents = documents;
    state.index.postings_disk_bytes = 7;
    state.index.block_cache_bytes = 4096;
    state.index.block_cache_warming = true;
    state.index.hash_filter_bytes = 1 << 20;
    state.index.hash_filter_ready = true;
    state.index.stem_pairs_disk_bytes = 9;
    state.index.stem_pairs_from_cache = 12345;
    state.bulk_loading = true;
    state.rotation.state = KeyRotationState::kRebuilding;
    state.rotation.documents_done = 3;
    state.rotation.documents_total = 5;
    state.admission.calls = 2;
    state.admission.refused = 311;
    state.audit.written = 90;
    state.audit.failed = 4;
    state.audit.dropped = 6;
    state.checks = {
        .clean = 70, .violation = 8, .by_chunks = 5, .by_stem_pairs = 1, .by_heavy_revision = 3};
    return state;
  }));
  ASSERT_GT(metrics->port(), 0);

  std::string text = HttpGet(metrics->port(), "/metrics");
  EXPECT_NE(text.find("# TYPE cops_documents gauge\ncops_documents 42\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_disk_bytes{part=\"postings\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_bulk_loading 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_block_cache_bytes 4096\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_block_cache_warming 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_hash_filter_bytes 1048576\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_hash_filter_ready 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_disk_bytes{part=\"stem_pairs\"} 9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE cops_stem_pairs_from_cache_total counter\n"
                      "cops_stem_pairs_from_cache_total 12345\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_key_rotation_state 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_key_rotation_documents_done 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_key_rotation_documents 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_admission_calls 2\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find("# TYPE cops_admission_refused_total counter\ncops_admission_refused_total 311\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE cops_converter_worker_timeouts_total counter\n"),
            std::string::npos)
      << text;

  // The audit trail's losses: a full queue or a failing store, never silent.
  EXPECT_NE(text.find("# TYPE cops_audit_records_dropped_total counter\n"
                      "cops_audit_records_dropped_total 6\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cops_audit_records_failed_total 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_audit_records_written_total 90\n"), std::string::npos) << text;

  // Checks by verdict, and violations by the evidence that decided them: one family each.
  EXPECT_NE(text.find("# TYPE cops_checks_total counter\n"
                      "cops_checks_total{verdict=\"clean\"} 70\n"
                      "cops_checks_total{verdict=\"violation\"} 8\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE cops_check_violations_total counter\n"
                      "cops_check_violations_total{decided_by=\"chunks\"} 5\n"
                      "cops_check_violations_total{decided_by=\"stem_pairs\"} 1\n"
                      "cops_check_violations_total{decided_by=\"heavy_revision\"} 3\n"),
            std::string::npos)
      << text;

  documents = 43;
  text = HttpGet(metrics->port(), "/metrics");
  EXPECT_NE(text.find("cops_documents 43\n"), std::string::npos) << text;
}

TEST(MetricsServerTest, ServesTheClusterMapsHealthOnlyOnNodesThatTakePart) {
  std::atomic<bool> member{false};
  ASSERT_OK_AND_ASSIGN(auto metrics, MetricsServer::Start("127.0.0.1:0", [&member] {
    ServerState state;
    if (member) {
      state.cluster_member = ClusterMemberHealth{.heartbeats = 12,
                                                 .failed_heartbeats = 2,
                                                 .last_heartbeat = absl::Now() - absl::Seconds(2)};
      state.cluster_map = ClusterMapHealth{.members = 4, .live_members = 3,
                                           .partitions_without_replica = 1};
      state.log_applier =
          LogApplierHealth{.failed_applies = 5, .set_aside = 1, .refused = true};
    }
    return state;
  }));
  std::string text = HttpGet(metrics->port(), "/metrics");
  EXPECT_EQ(text.find("cops_cluster_"), std::string::npos) << text;  // single node

  member = true;
  text = HttpGet(metrics->port(), "/metrics");
  EXPECT_NE(text.find("cops_cluster_heartbeats_total 12\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_cluster_heartbeat_failures_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_cluster_heartbeat_age_seconds 2.0"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_cluster_live_members 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_cluster_partitions_without_replica 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_log_apply_failures_total 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_log_events_set_aside_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cops_log_stream_refused 1\n"), std::string::npos) << text;
}

TEST(MetricsServerTest, CountsEachRpcWithItsServiceMethodAndCode) {
  ASSERT_OK_AND_ASSIGN(auto metrics,
                       MetricsServer::Start("127.0.0.1:0", [] { return ServerState(); }));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  testing::AddTestListener(&builder, "127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> rpcs;
  rpcs.push_back(metrics->InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(rpcs));
  v1::CopyDetection::Service unimplemented;  // every method answers UNIMPLEMENTED
  builder.RegisterService(&unimplemented);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(port);
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(options));
  ASSERT_OK(client->Health());
  ASSERT_OK(client->Health());
  EXPECT_EQ(client->Stats().status().code(), absl::StatusCode::kUnimplemented);

  const std::string text = HttpGet(metrics->port(), "/metrics");
  const std::string health =
      "grpc_method=\"Check\",grpc_service=\"grpc.health.v1.Health\",grpc_type=\"unary\"";
  EXPECT_NE(text.find("grpc_server_started_total{" + health + "} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"OK\"," + health + "} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_count{" + health + "} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_bucket{" + health + ",le=\"+Inf\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"UNIMPLEMENTED\","
                      "grpc_method=\"GetStats\",grpc_service=\"cops.v1.CopyDetection\","
                      "grpc_type=\"unary\"} 1\n"),
            std::string::npos)
      << text;
  server->Shutdown();
}

TEST(MetricsServerTest, AnAddressInUseIsUnavailable) {
  ASSERT_OK_AND_ASSIGN(auto first,
                       MetricsServer::Start("127.0.0.1:0", [] { return ServerState(); }));
  auto second = MetricsServer::Start("127.0.0.1:" + std::to_string(first->port()),
                                     [] { return ServerState(); });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace cops
