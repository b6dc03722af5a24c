#ifndef COPS_TESTS_REPLICATION_JETSTREAM_TEST_H_
#define COPS_TESTS_REPLICATION_JETSTREAM_TEST_H_

// A fixture for tests of replication/ against a real nats-server: a fresh directory, a
// nats-server with JetStream in it and a JetStream connection with the registration stream.
// Skipped with a message when nats-server is not installed. A subclass that adds to SetUp
// calls JetStreamTest::SetUp() first and returns when IsSkipped() or HasFatalFailure().

#include <memory>

#include "gtest/gtest.h"
#include "replication/jetstream.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {

class JetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::Start(dir_.Join("nats")));
    RegistrationStreamOptions stream;
    stream.url = nats_->url();
    ASSERT_OK_AND_ASSIGN(js_, JetStream::Connect(stream));
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NatsServer> nats_;
  std::unique_ptr<JetStream> js_;
};

}  // namespace cops

#endif  // COPS_TESTS_REPLICATION_JETSTREAM_TEST_H_
