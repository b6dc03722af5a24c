// The registration log end to end against a real nats-server with JetStream: events published
// by RegistrationLog are applied by LogApplier to a real Index exactly once.

#include "replication/log_applier.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/detect.h"
#include "core/fingerprint.h"
#include "core/hash_key.h"
#include "gtest/gtest.h"
#include "replication/jetstream.h"
#include "replication/partitioning.h"
#include "replication/registration_log.h"
#include "storage/index.h"
#include "tests/replication/jetstream_test.h"
#include "tests/testing/eventually.h"
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
  absl::Status SetAside(uint64_t sequence, const absl::Status& /*why*/) override {
    ++set_aside_;
    return index_->SkipLogSequence(sequence);
  }
  absl::StatusOr<std::string> LogStreamIdentity() const override {
    return index_->LogStreamIdentity();
  }
  absl::Status RecordLogStreamIdentity(const std::string& identity) override {
    return index_->RecordLogStreamIdentity(identity);
  }
  int set_aside() const { return set_aside_.load(); }
  int applies() const { return applies_.load(); }

 private:
  Index* const index_;
  const Fingerprinter* const fingerprinter_;
  std::atomic<int> applies_{0};
  std::atomic<int> set_aside_{0};
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

  // The names of the stream's consumers, sorted.
  std::vector<std::string> ConsumerNames() {
    std::vector<std::string> names;
    jsConsumerNamesList* list = nullptr;
    if (js_ConsumerNames(&list, js_->context(), js_->options().stream.c_str(), nullptr, nullptr) !=
        NATS_OK) {
      return names;
    }
    for (int i = 0; i < list->Count; ++i) names.emplace_back(list->List[i]);
    jsConsumerNamesList_Destroy(list);
    std::sort(names.begin(), names.end());
    return names;
  }

  // Creates consumer `name` delivering every event from the stream's first, as another
  // consumer (or one left by an earlier incarnation) would; `filter` "": the whole stream.
  void AddConsumerFromFirst(const std::string& name, const std::string& filter = "") {
    jsConsumerConfig config;
    jsConsumerConfig_Init(&config);
    config.Durable = name.c_str();
    config.AckPolicy = js_AckExplicit;
    config.DeliverPolicy = js_DeliverAll;
    if (!filter.empty()) config.FilterSubject = filter.c_str();
    jsConsumerInfo* info = nullptr;
    ASSERT_EQ(js_AddConsumer(&info, js_->context(), js_->options().stream.c_str(), &config, nullptr,
                             nullptr),
              NATS_OK);
    jsConsumerInfo_Destroy(info);
  }

  void DeleteConsumer(const std::string& name) {
    ASSERT_EQ(js_DeleteConsumer(js_->context(), js_->options().stream.c_str(), name.c_str(),
                                nullptr, nullptr),
              NATS_OK)
        << name;
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
  // Published while no applier runs; the next applier's consumer starts after event 5.
  for (int i = 5; i < 8; ++i) ASSERT_OK(log.Publish(Registration(i)));
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_TRUE(WaitApplied(*index, 8));
  applier->Stop();
  EXPECT_EQ(index->Stats().documents, 8u);
  EXPECT_EQ(sink.applies(), 8);
  EXPECT_OK(applier->LastError());
}

// Every event delivered again (a consumer that lost its position, as when acks are lost
// with a connection): each is acknowledged and skipped, none applied twice. Here the running
// applier's consumer is replaced under its name by one that has acknowledged nothing.
TEST_F(LogApplierTest, RedeliveredEventsAtOrBelowTheAppliedSequenceAreSkipped) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 4; ++i) ASSERT_OK(log.Publish(Registration(i)));
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_TRUE(WaitApplied(*index, 4));
  const std::string consumer = applier->ConsumerName();
  ASSERT_NO_FATAL_FAILURE(DeleteConsumer(consumer));
  ASSERT_NO_FATAL_FAILURE(AddConsumerFromFirst(consumer));
  ASSERT_OK(log.Publish(Registration(4)));
  ASSERT_TRUE(WaitApplied(*index, 5)) << applier->LastError();
  applier->Stop();
  EXPECT_EQ(sink.applies(), 5);
  EXPECT_EQ(index->Stats().documents, 5u);
}

// No consumer of a node is ever made under a name one of its consumers had: nats-server 2.9
// can bring a consumer recreated under its old name back with an earlier incarnation's state
// (its delivery "way ahead", an event never applied; nats-server #6507, #8413). Each start
// and each restart creates "<prefix>~<generation>", then deletes the node's earlier
// consumers, the one a build before generations named `prefix` too, and no other node's.
TEST_F(LogApplierTest, ANodeNeverReusesAConsumersName) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  const std::string subject = PartitionSubject(js_->options().subject, 0);
  ASSERT_OK_AND_ASSIGN(const uint64_t first, log.PublishTo(subject, Registration(0)));
  // Left by an earlier build of this node, and another node's, whose name extends this one's.
  ASSERT_NO_FATAL_FAILURE(AddConsumerFromFirst("node", subject));
  ASSERT_NO_FATAL_FAILURE(AddConsumerFromFirst("nodes~1", subject));
  LogApplierOptions options;
  options.durable = "node";
  options.filter_subject = subject;
  options.fetch_wait_ms = 100;
  std::vector<std::string> seen;  // every name the node's consumers had
  {
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, options));
    ASSERT_TRUE(WaitApplied(*index, first)) << applier->LastError();
    seen.push_back(applier->ConsumerName());
    EXPECT_EQ(seen[0].rfind("node~", 0), 0u) << seen[0];
    EXPECT_EQ(ConsumerNames(), (std::vector<std::string>{"nodes~1", seen[0]}));

    // A restart while running (its consumer stopped delivering): another name again.
    ASSERT_NO_FATAL_FAILURE(DeleteConsumer(seen.back()));
    const int restarts = applier->Restarts();
    ASSERT_OK_AND_ASSIGN(const uint64_t second, log.PublishTo(subject, Registration(1)));
    ASSERT_TRUE(WaitApplied(*index, second)) << applier->LastError();
    EXPECT_GT(applier->Restarts(), restarts);
    seen.push_back(applier->ConsumerName());
    EXPECT_NE(seen[1], seen[0]);
    EXPECT_EQ(seen[1].rfind("node~", 0), 0u) << seen[1];
  }
  // The node started again on its index.
  ASSERT_OK_AND_ASSIGN(const uint64_t third, log.PublishTo(subject, Registration(2)));
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, options));
  ASSERT_TRUE(WaitApplied(*index, third)) << applier->LastError();
  const std::string last = applier->ConsumerName();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), last), 0) << last;
  EXPECT_EQ(ConsumerNames(), (std::vector<std::string>{"nodes~1", last}));
  applier->Stop();
  EXPECT_EQ(index->Stats().documents, 3u);
  EXPECT_EQ(sink.applies(), 3);
}

// A prefix that is no consumer name, or that could be another node's name with a
// generation, is refused before NATS is asked.
TEST_F(LogApplierTest, AConsumerPrefixThatIsNoNameIsInvalidArgument) {
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (const char* prefix : {"", "a.b", "a b", "a*", "a>", "a/b", "node~3"}) {
    LogApplierOptions options;
    options.durable = prefix;
    absl::StatusOr<std::unique_ptr<LogApplier>> applier =
        LogApplier::Start(js_.get(), &sink, options);
    EXPECT_TRUE(absl::IsInvalidArgument(applier.status())) << prefix << ": " << applier.status();
  }
  EXPECT_TRUE(ConsumerNames().empty());
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

// A wiped index where the node's consumer acknowledged everything: the next consumer starts
// at the index's position and the index is rebuilt from the log.
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

TEST(ClassifyDeliveryTest, TheWholeStreamAppliesTheNextEventAndDeclinesOneThatOvertookIt) {
  EXPECT_EQ(ClassifyDelivery(false, 4, 9, 5, 10), DeliveryAction::kApply);
  EXPECT_EQ(ClassifyDelivery(false, 4, 9, 3, 10), DeliveryAction::kSkip);
  EXPECT_EQ(ClassifyDelivery(false, 4, 9, 7, 10), DeliveryAction::kDecline);
  // Delivery numbers do not matter where stream sequences have no gaps.
  EXPECT_EQ(ClassifyDelivery(false, 4, 2, 5, 17), DeliveryAction::kApply);
}

TEST(ClassifyDeliveryTest, AFilteredConsumerRestartsWhenADeliveryIsSkippedOrRepeated) {
  // A partition's events have gaps in the stream: 12 may follow 4.
  EXPECT_EQ(ClassifyDelivery(true, 4, 0, 12, 1), DeliveryAction::kApply);
  EXPECT_EQ(ClassifyDelivery(true, 4, 6, 12, 7), DeliveryAction::kApply);
  EXPECT_EQ(ClassifyDelivery(true, 12, 6, 4, 7), DeliveryAction::kSkip);
  // Delivery 7 never arrived (it may hold the event after 4).
  EXPECT_EQ(ClassifyDelivery(true, 4, 6, 12, 8), DeliveryAction::kRestart);
  // A redelivery of an unapplied event, numbered again.
  EXPECT_EQ(ClassifyDelivery(true, 4, 6, 5, 6), DeliveryAction::kRestart);
  EXPECT_EQ(ClassifyDelivery(true, 4, 6, 5, 3), DeliveryAction::kRestart);
}

// Takes one delivery of durable consumer `durable` (of `subject`) away from the applier that
// uses it: another subscriber to the same consumer receives it and neither acknowledges nor
// declines it, as when a fetched batch is lost with its NATS server. The applier's pull
// requests last 100 ms, so after 300 ms the thief's request is the oldest one waiting and
// the next event published (by `publish`, which returns its sequence) goes to it; should
// the applier win the race, the thief tries again. Returns the stolen event's sequence (0:
// the applier won every race).
uint64_t StealOneDelivery(JetStream* js, const std::string& subject, const std::string& durable,
                          const std::function<uint64_t()>& publish) {
  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = js->options().stream.c_str();
  sub_options.Consumer = durable.c_str();
  sub_options.ManualAck = true;
  natsSubscription* thief = nullptr;
  if (js_PullSubscribe(&thief, js->context(), subject.c_str(), durable.c_str(), nullptr,
                       &sub_options, nullptr) != NATS_OK) {
    return 0;
  }
  uint64_t stolen = 0;
  for (int attempt = 0; attempt < 10 && stolen == 0; ++attempt) {
    natsMsgList list{nullptr, 0};
    std::thread fetch([&] { natsSubscription_Fetch(&list, thief, 1, 2000, nullptr); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    publish();
    fetch.join();
    jsMsgMetaData* meta = nullptr;
    if (list.Count == 1 && natsMsg_GetMetaData(&meta, list.Msgs[0]) == NATS_OK) {
      stolen = meta->Sequence.Stream;
      jsMsgMetaData_Destroy(meta);
    }
    natsMsgList_Destroy(&list);
  }
  natsSubscription_Destroy(thief);
  return stolen;
}

// An applier on a fresh index (of one partition's subject, or of the whole stream) that has
// applied everything published before, and one new event whose delivery a thief took from
// its consumer (`stolen`: its sequence, 0 when the applier won every race).
struct RobbedConsumer {
  std::unique_ptr<Index> index;
  std::unique_ptr<IndexSink> sink;
  std::unique_ptr<LogApplier> applier;
  std::string subject;
  uint64_t stolen = 0;
};

class LostDeliveryTest : public LogApplierTest {
 protected:
  // `partition` < 0: the whole stream. Events published are Registration(*next), (*next)++.
  void StartAndRob(RegistrationLog& log, int partition, int* next, RobbedConsumer* c) {
    c->index = OpenIndex(partition < 0 ? "whole" : "partition-" + std::to_string(partition));
    ASSERT_NE(c->index, nullptr);
    c->sink = std::make_unique<IndexSink>(c->index.get(), fingerprinter_.get());
    c->subject = partition < 0 ? js_->options().subject
                               : PartitionSubject(js_->options().subject, partition);
    LogApplierOptions options;
    options.durable = partition < 0 ? "whole" : "partition-" + std::to_string(partition);
    if (partition >= 0) options.filter_subject = c->subject;
    options.fetch_wait_ms = 100;
    ASSERT_OK_AND_ASSIGN(c->applier, LogApplier::Start(js_.get(), c->sink.get(), options));
    // Everything before is applied first: the whole stream holds the partitions' events,
    // and a thief could take one of those, with later ones after it, instead of a new one.
    ASSERT_OK_AND_ASSIGN(const uint64_t first, log.PublishTo(c->subject, Registration((*next)++)));
    ASSERT_TRUE(WaitApplied(*c->index, first)) << c->applier->LastError();
    c->stolen = StealOneDelivery(js_.get(), c->subject, c->applier->ConsumerName(), [&] {
      return log.PublishTo(c->subject, Registration((*next)++)).value_or(0);
    });
    ASSERT_NE(c->stolen, 0u) << "the applier won every race for the delivery";
    EXPECT_LT(c->index->AppliedLogSequence(), c->stolen);
  }
};

// A lost delivery: the later events must not be applied over the gap, or the lost one would
// be skipped as applied when JetStream redelivers it. On a partition's consumer the next
// event's delivery number shows the gap, on the whole stream its sequence; the consumer is
// recreated at the applied sequence and delivers the lost event, then the new one, long
// before JetStream's 30 s ack wait. (The whole stream's consumer declined the next event
// and, JetStream redelivering it at once, waited out the ack wait.)
TEST_F(LostDeliveryTest, ADeliveryLostOnAConsumerIsAppliedBeforeLaterEvents) {
  RegistrationLog log(js_.get());
  int next = 0;
  for (const int partition : {0, -1}) {
    SCOPED_TRACE(partition < 0 ? "whole stream's consumer" : "partition's consumer");
    RobbedConsumer c;
    ASSERT_NO_FATAL_FAILURE(StartAndRob(log, partition, &next, &c));
    ASSERT_OK_AND_ASSIGN(const uint64_t last, log.PublishTo(c.subject, Registration(next++)));
    // WaitApplied gives up after 10 s, well before JetStream would redeliver (30 s).
    ASSERT_TRUE(WaitApplied(*c.index, last)) << c.applier->LastError();
    c.applier->Stop();
    EXPECT_GE(c.applier->Restarts(), 1);
    // Every event of the stream so far is the partition's or the whole stream's own.
    EXPECT_EQ(c.index->Stats().documents, last);
    ASSERT_OK_AND_ASSIGN(DocumentPage page, c.index->ListDocuments("", 1000));
    EXPECT_EQ(page.documents.size(), last);
  }
}

// The lost delivery is the last event (nothing follows to show a gap): after a second of
// empty fetches while JetStream awaits its ack, the consumer is recreated and the event
// applied, well within JetStream's 30 s ack wait; on a partition's subject and on the whole
// stream alike.
TEST_F(LostDeliveryTest, ALostLastDeliveryIsAppliedWithoutWaitingOutTheAckWait) {
  RegistrationLog log(js_.get());
  int next = 0;
  for (const int partition : {1, -1}) {
    SCOPED_TRACE(partition < 0 ? "whole stream's consumer" : "partition's consumer");
    RobbedConsumer c;
    ASSERT_NO_FATAL_FAILURE(StartAndRob(log, partition, &next, &c));
    // WaitApplied gives up after 10 s, well before JetStream would redeliver (30 s).
    ASSERT_TRUE(WaitApplied(*c.index, c.stolen)) << c.applier->LastError();
    c.applier->Stop();
    EXPECT_GE(c.applier->Restarts(), 1);
  }
}

// A consumer that stops delivering while events wait for it (its state lost or diverged when
// JetStream moved it to another server: ClusterFailureTest's replica that applied nothing
// after a NATS server was killed) is recreated at the applied sequence. Here the durable is
// replaced under the running applier by one filtered to a subject no one publishes to, so
// that it delivers nothing and awaits no ack; the applier, seeing the stream hold an event
// beyond its applied one at two idle looks in a row, recreates it, on a partition's subject
// and on the whole stream alike. (Before, it fetched from that consumer forever.)
TEST_F(LogApplierTest, AConsumerThatStopsDeliveringIsRecreated) {
  RegistrationLog log(js_.get());
  int next = 0;
  for (const int partition : {0, -1}) {
    SCOPED_TRACE(partition < 0 ? "whole stream's consumer" : "partition's consumer");
    const std::string name = partition < 0 ? "whole" : "partition-" + std::to_string(partition);
    std::unique_ptr<Index> index = OpenIndex(name);
    ASSERT_NE(index, nullptr);
    IndexSink sink(index.get(), fingerprinter_.get());
    const std::string subject = partition < 0 ? js_->options().subject
                                              : PartitionSubject(js_->options().subject, partition);
    LogApplierOptions options;
    options.durable = name;
    if (partition >= 0) options.filter_subject = subject;
    options.fetch_wait_ms = 100;
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, options));
    ASSERT_OK_AND_ASSIGN(const uint64_t first, log.PublishTo(subject, Registration(next++)));
    ASSERT_TRUE(WaitApplied(*index, first)) << applier->LastError();

    const std::string& stream = js_->options().stream;
    const std::string consumer = applier->ConsumerName();
    ASSERT_NO_FATAL_FAILURE(DeleteConsumer(consumer));
    jsConsumerConfig config;
    jsConsumerConfig_Init(&config);
    config.Durable = consumer.c_str();
    config.AckPolicy = js_AckExplicit;
    config.DeliverPolicy = js_DeliverNew;
    const std::string nobodys = PartitionSubject(js_->options().subject, 99);
    config.FilterSubject = nobodys.c_str();
    jsConsumerInfo* info = nullptr;
    ASSERT_EQ(js_AddConsumer(&info, js_->context(), stream.c_str(), &config, nullptr, nullptr),
              NATS_OK);
    jsConsumerInfo_Destroy(info);
    const int restarts = applier->Restarts();

    ASSERT_OK_AND_ASSIGN(const uint64_t waiting, log.PublishTo(subject, Registration(next++)));
    // WaitApplied gives up after 10 s; the applier looks every second.
    ASSERT_TRUE(WaitApplied(*index, waiting)) << applier->LastError();
    applier->Stop();
    EXPECT_GT(applier->Restarts(), restarts);
    EXPECT_EQ(index->Stats().documents, partition < 0 ? waiting : 2u);
  }
}

// A partition's consumer whose first delivery comes after an event of its subject that the
// index lacks is recreated at the applied sequence, and the event it skipped is applied.
// (nats-server 2.9 can recreate a consumer under its old name with an earlier incarnation's
// state, delivering "way ahead": the likeliest cause of a nemesis run's lost event.) Here the
// durable is replaced by one starting a sequence later; an event of the other partition
// lies between, as in every partitioned stream.
TEST_F(LogApplierTest, AConsumerThatStartsPastAnEventOfItsSubjectIsRecreated) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("ahead");
  ASSERT_NE(index, nullptr);
  IndexSink sink(index.get(), fingerprinter_.get());
  const std::string subject = PartitionSubject(js_->options().subject, 0);
  const std::string other = PartitionSubject(js_->options().subject, 1);
  LogApplierOptions options;
  options.durable = "ahead";
  options.filter_subject = subject;
  options.fetch_wait_ms = 100;
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, options));

  // The consumer goes away (the running applier's fetches fail meanwhile) while events are
  // published, and comes back starting past the partition's first one.
  const std::string& stream = js_->options().stream;
  const std::string consumer = applier->ConsumerName();
  ASSERT_NO_FATAL_FAILURE(DeleteConsumer(consumer));
  ASSERT_OK_AND_ASSIGN(const uint64_t skipped, log.PublishTo(subject, Registration(1)));
  ASSERT_OK_AND_ASSIGN(const uint64_t between, log.PublishTo(other, Registration(2)));
  ASSERT_OK_AND_ASSIGN(const uint64_t last, log.PublishTo(subject, Registration(3)));
  ASSERT_EQ(last, between + 1);
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = consumer.c_str();
  config.AckPolicy = js_AckExplicit;
  config.DeliverPolicy = js_DeliverByStartSequence;
  config.OptStartSeq = skipped + 1;
  config.FilterSubject = subject.c_str();
  jsConsumerInfo* info = nullptr;
  ASSERT_EQ(js_AddConsumer(&info, js_->context(), stream.c_str(), &config, nullptr, nullptr),
            NATS_OK);
  jsConsumerInfo_Destroy(info);

  ASSERT_TRUE(WaitApplied(*index, last)) << applier->LastError();
  applier->Stop();
  EXPECT_GE(applier->Restarts(), 1);
  // Both of the partition's events, in order.
  ASSERT_OK_AND_ASSIGN(DocumentPage page, index->ListDocuments("", 10));
  ASSERT_EQ(page.documents.size(), 2u);
  EXPECT_EQ(page.documents[0].title, "document 1");
  EXPECT_EQ(page.documents[1].title, "document 3");
}

// The stream lost its tail or was recreated (a NATS store lost, the stream deleted and made
// anew by the next copsd that connects): its new events get sequences this index already
// applied, which the applier would acknowledge and skip as redeliveries. Start refuses,
// naming the stream and both sequences.
TEST_F(LogApplierTest, AStreamThatEndsBeforeTheAppliedSequenceIsRefused) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 3; ++i) ASSERT_OK(log.Publish(Registration(i)));
  {
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
    ASSERT_TRUE(WaitApplied(*index, 3));
  }
  ASSERT_EQ(js_DeleteStream(js_->context(), js_->options().stream.c_str(), nullptr, nullptr),
            NATS_OK);
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  ASSERT_OK_AND_ASSIGN(auto recreated, JetStream::Connect(stream));  // an empty stream
  RegistrationLog new_log(recreated.get());
  ASSERT_OK(new_log.Publish(Registration(10)));
  absl::StatusOr<std::unique_ptr<LogApplier>> refused =
      LogApplier::Start(recreated.get(), &sink, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("stream COPS_REGISTRATIONS ends at event 1 but "
                                            "this index has applied the log up to event 3"),
            std::string::npos)
      << refused.status();
}

// An index from before stream identities were recorded (applied events, no identity) does
// not adopt a stream that cannot be the one it applied: one that ends below its applied
// sequence (recreated, or lost its tail) is refused, and no identity is recorded for it.
TEST_F(LogApplierTest, AnIndexWithoutARecordedIdentityAdoptsNoStreamEndingBelowItsEvents) {
  // The sink of such an index: it reports no identity until one is recorded.
  class NoIdentitySink : public IndexSink {
   public:
    using IndexSink::IndexSink;
    absl::StatusOr<std::string> LogStreamIdentity() const override { return recorded_; }
    absl::Status RecordLogStreamIdentity(const std::string& identity) override {
      recorded_ = identity;
      return absl::OkStatus();
    }
    void Forget() { recorded_.clear(); }

   private:
    std::string recorded_;
  };
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  NoIdentitySink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 3; ++i) ASSERT_OK(log.Publish(Registration(i)));
  {
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, {}));
    ASSERT_TRUE(WaitApplied(*index, 3));
  }
  sink.Forget();  // as written by a build that recorded none
  ASSERT_EQ(js_DeleteStream(js_->context(), js_->options().stream.c_str(), nullptr, nullptr),
            NATS_OK);
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  ASSERT_OK_AND_ASSIGN(auto recreated, JetStream::Connect(stream));  // an empty stream
  RegistrationLog new_log(recreated.get());
  for (int i = 10; i < 12; ++i) ASSERT_OK(new_log.Publish(Registration(i)));
  absl::StatusOr<std::unique_ptr<LogApplier>> refused =
      LogApplier::Start(recreated.get(), &sink, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("ends at event 2 but this index has applied the "
                                            "log up to event 3"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(*sink.LogStreamIdentity(), "") << "the refused stream was adopted";
  refused = absl::CancelledError("stopped");
  EXPECT_EQ(index->AppliedLogSequence(), 3u);
  EXPECT_EQ(index->Stats().documents, 3u);
}

// The stream deleted and created anew under a running node (an operator's `nats stream rm`, a
// NATS store lost and the next copsd creating it again), then written to beyond the node's
// applied sequence: its events 1..3 are others than those the node applied, and the node
// would skip them as redeliveries and apply 4 and 5 on top. The running applier refuses the
// stream (FAILED_PRECONDITION naming it and both creation times) and applies nothing from
// it, and so does a node started on it later.
TEST_F(LogApplierTest, AStreamRecreatedUnderARunningNodeIsRefused) {
  RegistrationLog log(js_.get());
  std::unique_ptr<Index> index = OpenIndex("index");
  IndexSink sink(index.get(), fingerprinter_.get());
  for (int i = 0; i < 3; ++i) ASSERT_OK(log.Publish(Registration(i)));
  ASSERT_OK_AND_ASSIGN(auto running, LogApplier::Start(js_.get(), &sink, {}));
  ASSERT_TRUE(WaitApplied(*index, 3));
  // Health, as copsd wires it: the listener turns its gRPC health to NOT_SERVING.
  absl::Mutex mu;
  absl::Status told;
  running->OnRefusal([&](const absl::Status& why) {
    absl::MutexLock lock(&mu);
    told = why;
  });
  EXPECT_FALSE(running->Health().refused);
  ASSERT_EQ(js_DeleteStream(js_->context(), js_->options().stream.c_str(), nullptr, nullptr),
            NATS_OK);
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  ASSERT_OK_AND_ASSIGN(auto recreated, JetStream::Connect(stream));  // an empty stream
  RegistrationLog new_log(recreated.get());
  for (int i = 10; i < 15; ++i) ASSERT_OK(new_log.Publish(Registration(i)));
  EXPECT_TRUE(testing::Eventually([&] { return !running->Refusal().ok(); }))
      << running->LastError();
  const absl::Status refusal = running->Refusal();
  EXPECT_TRUE(absl::IsFailedPrecondition(refusal)) << refusal;
  EXPECT_TRUE(running->Health().refused);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(told, refusal);
  }
  // A listener set after the refusal hears of it at once; one removed is not called again.
  absl::Status late;
  running->OnRefusal([&](const absl::Status& why) { late = why; });
  EXPECT_EQ(late, refusal);
  running->OnRefusal(nullptr);
  // Seen missing or seen recreated, depending on when the applier looked.
  EXPECT_NE(refusal.message().find("stream COPS_REGISTRATIONS "), std::string::npos) << refusal;
  running.reset();
  EXPECT_EQ(index->AppliedLogSequence(), 3u);
  EXPECT_EQ(index->Stats().documents, 3u);

  absl::StatusOr<std::unique_ptr<LogApplier>> restarted =
      LogApplier::Start(recreated.get(), &sink, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(restarted.status())) << restarted.status();
  EXPECT_NE(restarted.status().message().find("stream COPS_REGISTRATIONS created at "),
            std::string::npos)
      << restarted.status();
  EXPECT_NE(restarted.status().message().find("deleted and created anew"), std::string::npos)
      << restarted.status();
  if (restarted.ok()) std::this_thread::sleep_for(std::chrono::seconds(1));  // let it diverge
  restarted = absl::CancelledError("stopped");
  EXPECT_EQ(index->AppliedLogSequence(), 3u);
  EXPECT_EQ(index->Stats().documents, 3u);
}

// Bytes on the stream that are no registration event (a client that publishes to the
// subject, a corrupt write): nothing can ever apply them. They are set aside (recorded as
// applied without effect, acknowledged, counted) and the events after them are applied, on
// the whole stream's consumer and on a partition's alike; before, they were declined and
// fetched again for ever, and every node stopped applying the log there.
TEST_F(LogApplierTest, AMalformedEventIsSetAsideWithoutStallingTheLog) {
  RegistrationLog log(js_.get());
  for (const bool partitioned : {false, true}) {
    SCOPED_TRACE(partitioned ? "partition's consumer" : "whole stream's consumer");
    std::unique_ptr<Index> index = OpenIndex(partitioned ? "partitioned" : "whole");
    IndexSink sink(index.get(), fingerprinter_.get());
    const std::string subject =
        partitioned ? PartitionSubject(js_->options().subject, 0) : js_->options().subject;
    const uint64_t before = index->AppliedLogSequence();
    ASSERT_OK(log.PublishTo(subject, Registration(partitioned ? 10 : 0)));
    const std::string garbage = "\x01\x01\xff\xff\xff";  // a register event cut short
    jsPubAck* ack = nullptr;
    ASSERT_EQ(js_Publish(&ack, js_->context(), subject.c_str(), garbage.data(),
                         static_cast<int>(garbage.size()), nullptr, nullptr),
              NATS_OK);
    const uint64_t malformed = ack->Sequence;
    jsPubAck_Destroy(ack);
    ASSERT_OK_AND_ASSIGN(const uint64_t last,
                         log.PublishTo(subject, Registration(partitioned ? 11 : 1)));
    LogApplierOptions options;
    options.durable = partitioned ? "partition-0" : "whole";
    if (partitioned) options.filter_subject = subject;
    options.fetch_wait_ms = 100;
    ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(js_.get(), &sink, options));
    ASSERT_TRUE(WaitApplied(*index, last)) << applier->LastError();
    applier->Stop();
    EXPECT_EQ(index->Stats().documents, 2u);
    EXPECT_EQ(sink.set_aside(), 1);
    EXPECT_EQ(applier->Health().set_aside, 1u);
    EXPECT_GT(malformed, before);
  }
}

// With a cluster key, the applier believes only events signed with it: a well-formed
// registration published straight to NATS without the signature, or signed with another
// key, is set aside (counted, never applied) and the signed events around it are applied.
TEST_F(LogApplierTest, AForgedEventIsSetAsideWithoutStallingTheLog) {
  RegistrationStreamOptions cluster_options = js_->options();
  cluster_options.signing_key = std::string(32, 'k');
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> cluster, JetStream::Connect(cluster_options));
  RegistrationStreamOptions forger_options = js_->options();
  forger_options.signing_key = std::string(32, 'x');
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> forger, JetStream::Connect(forger_options));
  RegistrationLog log(cluster.get());
  const std::string subject = PartitionSubject(js_->options().subject, 0);
  ASSERT_OK(log.PublishTo(subject, Registration(20)));
  // Well-formed, unsigned: as anyone who reaches NATS can publish it.
  const std::string forged = EncodeRegistrationEvent(Registration(21));
  jsPubAck* ack = nullptr;
  ASSERT_EQ(js_Publish(&ack, js_->context(), subject.c_str(), forged.data(),
                       static_cast<int>(forged.size()), nullptr, nullptr),
            NATS_OK);
  jsPubAck_Destroy(ack);
  RegistrationLog forger_log(forger.get());  // signed, with another cluster's key
  ASSERT_OK(forger_log.PublishTo(subject, Registration(22)));
  ASSERT_OK_AND_ASSIGN(const uint64_t last, log.PublishTo(subject, Registration(23)));

  std::unique_ptr<Index> index = OpenIndex("signed");
  IndexSink sink(index.get(), fingerprinter_.get());
  LogApplierOptions options;
  options.durable = "signed";
  options.filter_subject = subject;
  options.fetch_wait_ms = 100;
  ASSERT_OK_AND_ASSIGN(auto applier, LogApplier::Start(cluster.get(), &sink, options));
  ASSERT_TRUE(WaitApplied(*index, last)) << applier->LastError();
  applier->Stop();
  EXPECT_EQ(index->Stats().documents, 2u);
  EXPECT_EQ(sink.set_aside(), 2);
  EXPECT_EQ(sink.applies(), 2);
  EXPECT_EQ(applier->Health().set_aside, 2u);
}

}  // namespace
}  // namespace cops
