// The registration log end to end against a real nats-server with JetStream: events published
// by RegistrationLog are applied by LogApplier to a real Index exactly once.

#include "replication/log_applier.h"

#include <nats/nats.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "core/fingerprint.h"
#include "core/detect.h"
#include "core/hash_key.h"
#include "gtest/gtest.h"
#include "replication/jetstream.h"
#include "replication/registration_log.h"
#include "storage/index.h"
#include "tests/replication/jetstream_test.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

constexpr char kKeyHex[] = "000102030405060708090a0b0c0d0e0f";

// Applies events to an Index as copsd does, fingerprinting the content as plain text.
class IndexSink : public LogSink {
 public:
  IndexSink(Index* index, const Fingerprinter* fingerprinter)
      : index_(index), fingerprinter_(fingerprinter) {}
  uint64_t AppliedLogSequence() const override { return index_->AppliedLogSequence(); }
  absl::Status Apply(uint64_t sequence, const RegistrationEvent& event) override {
    ++applies_;
    if (event.kind == RegistrationEventKind::kUnregister) {
      absl::Status s = index_->Unregister(event.doc_id, sequence);
      return absl::IsNotFound(s) ? absl::OkStatus() : s;
    }
    DocumentFingerprint fp;
    absl::Status s = fingerprinter_->Fingerprint(
        event.content, &fp, RegisterFingerprintOptions(index_->params()));
    if (!s.ok() || fp.chunks.empty()) return index_->SkipLogSequence(sequence);
    return index_->Register(event.metadata, fp, event.content, sequence).status();
  }
  int applies() const { return applies_.load(); }

 private:
  Index* const index_;
  const Fingerprinter* const fingerprinter_;
  std::atomic<int> applies_{0};
};

std::string Text(int i) {
  std::string text;
  for (int w = 0; w < 60; ++w) text += "word" + std::to_string(i * 1000 + w) + " ";
  return text;
}

RegistrationEvent Registration(int i) {
  RegistrationEvent event;
  event.content = Text(i);
  event.metadata.title = "document " + std::to_string(i);
  event.metadata.external_id = "ext-" + std::to_string(i);
  event.metadata.registered_unix_micros = 1000 + i;
  return event;
}

class LogApplierTest : public JetStreamTest {
 protected:
  void SetUp() override {
    JetStreamTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(HashKey key, HashKey::FromHex(kKeyHex));
    params_.key_id = key.Id();
    ASSERT_OK_AND_ASSIGN(fingerprinter_, Fingerprinter::Create(params_, key));
  }

  std::unique_ptr<Index> OpenIndex(const std::string& name) {
    IndexOptions options;
    options.path = dir_.Join(name);
    options.params = params_;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 4 << 20;
    absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(options);
    EXPECT_OK(index);
    return index.ok() ? *std::move(index) : nullptr;
  }

  // Polls until `index` has applied `sequence` (deadline 10 s).
  static bool WaitApplied(const Index& index, uint64_t sequence) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (index.AppliedLogSequence() < sequence) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  ChunkingParams params_;
  std::unique_ptr<Fingerprinter> fingerprinter_;
};

TEST_F(LogApplierTest, PublishReturnsConsecutiveSequencesOnceAcknowledged) {
  RegistrationLog log(js_.get());
  ASSERT_OK_AND_ASSIGN(uint64_t first, log.Publish(Registration(1)));
  ASSERT_OK_AND_ASSIGN(uint64_t second, log.Publish(Registration(2)));
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(second, 2u);
}

TEST_F(LogApplierTest, AppliesEachEventOnceAcrossAConsumerRestart) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 5; ++i) ASSERT_OK(log.Publish(Registration(i)));
  {
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
    ASSERT_TRUE(WaitApplied(*index, 5));
  }
  // Published while no applier runs; the durable consumer resumes after event 5.
  for (int i = 5; i < 8; ++i) ASSERT_OK(log.Publish(Registration(i)));
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_TRUE(WaitApplied(*index, 8));
  applier->Stop();
  EXPECT_EQ(index->Stats().documents, 8u);
  EXPECT_EQ(sink.applies(), 8);
  EXPECT_OK(applier->LastError());
}

// Every event delivered again (a consumer that lost its position, as after a crash between
// the RocksDB write and the ack): each is acknowledged and skipped, none applied twice.
TEST_F(LogApplierTest, RedeliveredEventsAtOrBelowTheAppliedSequenceAreSkipped) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 4; ++i) ASSERT_OK(log.Publish(Registration(i)));
  LogApplierOptions first;
  first.durable = "first";
  {
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, first));
    ASSERT_TRUE(WaitApplied(*index, 4));
  }
  // A durable consumer that has acknowledged nothing (as after a crash between the RocksDB
  // write and the acks) against the same index: all four come again.
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = "again";
  config.AckPolicy = js_AckExplicit;
  config.DeliverPolicy = js_DeliverAll;
  jsConsumerInfo* info = nullptr;
  ASSERT_EQ(js_AddConsumer(&info, js_->context(), js_->options().stream.c_str(), &config,
                           nullptr, nullptr),
            NATS_OK);
  jsConsumerInfo_Destroy(info);
  ASSERT_OK(log.Publish(Registration(4)));
  LogApplierOptions again;
  again.durable = "again";
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, again));
  ASSERT_TRUE(WaitApplied(*index, 5));
  applier->Stop();
  EXPECT_EQ(sink.applies(), 5);
  EXPECT_EQ(index->Stats().documents, 5u);
}

TEST_F(LogApplierTest, UnregistrationAndUnconvertibleEventsAdvanceTheSequence) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_OK(log.Publish(Registration(1)));
  RegistrationEvent too_short;
  too_short.content = "";  // no text: no chunk, refused alike everywhere
  ASSERT_OK(log.Publish(too_short));
  ASSERT_TRUE(WaitApplied(*index, 2));
  ASSERT_EQ(index->Stats().documents, 1u);
  RegistrationEvent unregister;
  unregister.kind = RegistrationEventKind::kUnregister;
  ASSERT_OK_AND_ASSIGN(DocumentPage page, index->ListDocuments("", 10));
  ASSERT_EQ(page.documents.size(), 1u);
  unregister.doc_id = page.documents[0].id;
  ASSERT_OK_AND_ASSIGN(uint64_t sequence, log.Publish(unregister));
  EXPECT_EQ(sequence, 3u);
  ASSERT_TRUE(WaitApplied(*index, 3));
  EXPECT_EQ(index->Stats().documents, 0u);
}

// A wiped index under a durable consumer that acknowledged everything: the consumer is
// recreated at the index's position and the index is rebuilt from the log.
TEST_F(LogApplierTest, AWipedIndexIsRebuiltFromTheLog) {
  RegistrationLog log(js_.get());
  for (int i = 0; i < 3; ++i) ASSERT_OK(log.Publish(Registration(i)));
  {
    std::unique_ptr<Index> index = OpenIndex("old");
    IndexSink sink(index.get(), fingerprinter_.get());
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
    ASSERT_TRUE(WaitApplied(*index, 3));
  }
  std::unique_ptr<Index> fresh = OpenIndex("fresh");
  IndexSink sink(fresh.get(), fingerprinter_.get());
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_TRUE(WaitApplied(*fresh, 3));
  EXPECT_EQ(fresh->Stats().documents, 3u);
}

}  // namespace
}  // namespace cops
