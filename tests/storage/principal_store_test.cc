#include "storage/principal_store.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

class PrincipalStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<PrincipalStore> OpenStore() {
    auto store = PrincipalStore::Open(dir_.Join("access"));
    EXPECT_OK(store);
    return store.ok() ? *std::move(store) : nullptr;
  }

  testing::TempDir dir_{"principal_store"};
};

TEST_F(PrincipalStoreTest, RecordsSurviveReopen) {
  {
    auto store = OpenStore();
    PrincipalRecord p;
    p.name = "acm-press";
    p.role = 1;
    p.collections = {"acm", "acm-archive"};
    p.max_documents = 10;
    ASSERT_OK(store->PutPrincipal(p));
    ApiKeyRecord k;
    k.key_id = "0123456789abcdef";
    k.principal = "acm-press";
    k.salt = std::string("\x00\x01\xff salt", 8);
    k.hash = std::string(32, '\x7f');
    ASSERT_OK(store->PutKey(k));
    CollectionRecord c;
    c.name = "acm";
    c.show_titles_to_checkers = true;
    c.keep_audit = false;
    ASSERT_OK(store->PutCollection(c));
    CollectionRecord cfp;
    cfp.name = "cfp";
    cfp.template_source = true;
    ASSERT_OK(store->PutCollection(cfp));
  }
  auto store = OpenStore();
  auto p = store->GetPrincipal("acm-press");
  ASSERT_OK(p);
  EXPECT_EQ(p->role, 1);
  EXPECT_EQ(p->collections, (std::vector<std::string>{"acm", "acm-archive"}));
  EXPECT_EQ(p->max_documents, 10u);
  auto k = store->GetKey("0123456789abcdef");
  ASSERT_OK(k);
  EXPECT_EQ(k->salt, std::string("\x00\x01\xff salt", 8));
  EXPECT_EQ(k->hash, std::string(32, '\x7f'));
  EXPECT_EQ(k->principal, "acm-press");
  auto c = store->GetCollection("acm");
  ASSERT_OK(c);
  EXPECT_TRUE(c->show_titles_to_checkers);
  EXPECT_FALSE(c->keep_audit);
  EXPECT_FALSE(c->template_source);
  auto cfp = store->GetCollection("cfp");
  ASSERT_OK(cfp);
  EXPECT_TRUE(cfp->template_source);
  EXPECT_EQ(store->ListPrincipals()->size(), 1u);
  EXPECT_EQ(store->ListKeys()->size(), 1u);
  EXPECT_EQ(store->ListCollections()->size(), 2u);
}

TEST_F(PrincipalStoreTest, MissingRecordsAreNotFound) {
  auto store = OpenStore();
  EXPECT_TRUE(absl::IsNotFound(store->GetPrincipal("nobody").status()));
  EXPECT_TRUE(absl::IsNotFound(store->GetKey("ffffffffffffffff").status()));
  EXPECT_TRUE(absl::IsNotFound(store->GetCollection("none").status()));
}

// Webhook deliveries are kept per job id across a reopen, replaced by a later Put and gone
// after a Delete; a job id out of bounds is refused.
TEST_F(PrincipalStoreTest, WebhookDeliveriesArePerJobAndSurviveReopen) {
  {
    auto store = OpenStore();
    ASSERT_OK(store->PutWebhookDeliveries("job_b", "first"));
    ASSERT_OK(store->PutWebhookDeliveries("job_b", "second"));
    ASSERT_OK(store->PutWebhookDeliveries("job_a", std::string("a\0b", 3)));
    ASSERT_OK(store->PutWebhookDeliveries("job_c", "gone"));
    ASSERT_OK(store->DeleteWebhookDeliveries("job_c"));
    ASSERT_OK(store->DeleteWebhookDeliveries("job_never"));
    EXPECT_EQ(store->PutWebhookDeliveries("", "x").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->PutWebhookDeliveries(std::string(257, 'j'), "x").code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto store = OpenStore();
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> values, store->ListWebhookDeliveries());
  EXPECT_EQ(values, (std::vector<std::string>{std::string("a\0b", 3), "second"}));
  EXPECT_TRUE(store->ListWebhooks()->empty());  // another prefix
}

TEST_F(PrincipalStoreTest, RejectsBadNames) {
  auto store = OpenStore();
  PrincipalRecord p;
  p.name = "bad/name";
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutPrincipal(p)));
  p.name = "";
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutPrincipal(p)));
  CollectionRecord c;
  c.name = "x y";
  EXPECT_TRUE(absl::IsInvalidArgument(store->PutCollection(c)));
}

TEST_F(PrincipalStoreTest, ARetentionBeyondAnyExpiryIsRefused) {
  auto store = OpenStore();
  CollectionRecord c;
  c.name = "papers";
  // In microseconds this would overflow a 64-bit expiry (about 292,000 years).
  c.retention_seconds = int64_t{1} << 53;
  const absl::Status refused = store->PutCollection(c);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(refused.message().find("retention"), std::string::npos) << refused;
  c.retention_seconds = CollectionRecord::kMaxRetentionSeconds;
  EXPECT_OK(store->PutCollection(c));
}

TEST_F(PrincipalStoreTest, UsageStopsAtQuotaWithoutCharging) {
  auto store = OpenStore();
  ASSERT_OK(store->AddUsage("p", 1, 600, /*max_documents=*/3, /*max_bytes=*/1000));
  auto over = store->AddUsage("p", 1, 600, 3, 1000);
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_EQ(store->GetUsage("p")->bytes, 600u);  // the refused request charged nothing
  ASSERT_OK(store->AddUsage("p", 1, 400, 3, 1000));
  ASSERT_OK(store->AddUsage("p", 1, 0, 3, 1000));
  EXPECT_TRUE(absl::IsResourceExhausted(store->AddUsage("p", 1, 0, 3, 1000).status()));
  auto usage = store->GetUsage("p");
  EXPECT_EQ(usage->documents, 3u);
  EXPECT_EQ(usage->bytes, 1000u);
  // Other principals have their own counters.
  EXPECT_OK(store->AddUsage("q", 1, 1000, 3, 1000));
}

TEST_F(PrincipalStoreTest, AuditIsPerDocumentInTimeOrder) {
  auto store = OpenStore();
  std::vector<AuditRecord> records = {
      {7, "acm", 2000, "checker-b", 0.9, 0.5, 12, true, "", ""},
      {7, "acm", 1000, "checker-a", 0.2, 0.1, 3, false, "", ""},
      {8, "acm", 1500, "checker-a", 0.4, 0.3, 5, false, "", ""},
      {7, "acm", 1000, "checker-c", 0.3, 0.2, 4, false, "", ""},  // same microsecond: both kept
  };
  ASSERT_OK(store->AppendAudit(records));
  auto hits = store->QueryAudit(7, 0, 100);
  ASSERT_OK(hits);
  ASSERT_EQ(hits->size(), 3u);
  EXPECT_EQ((*hits)[0].unix_micros, 1000);
  EXPECT_EQ((*hits)[1].unix_micros, 1000);
  EXPECT_EQ((*hits)[2].checker, "checker-b");
  EXPECT_TRUE((*hits)[2].violation);
  EXPECT_DOUBLE_EQ((*hits)[2].ratio, 0.9);
  EXPECT_EQ(store->QueryAudit(7, 1500, 100)->size(), 1u);
  EXPECT_EQ(store->QueryAudit(7, 0, 1)->size(), 1u);
  EXPECT_EQ(store->QueryAudit(8, 0, 100)->size(), 1u);
  EXPECT_TRUE(store->QueryAudit(9, 0, 100)->empty());
}

TEST_F(PrincipalStoreTest, AccessChangesSurviveAPowerCutUsageAndAuditMayLoseTheirTail) {
  std::filesystem::create_directories(dir_.path() / "trash");
  FaultFileSystem disk(dir_.Join("trash"));
  auto store = PrincipalStore::Open(dir_.Join("access"), disk.rocksdb_env());
  ASSERT_OK(store);
  PrincipalRecord p;
  p.name = "acm-press";
  p.role = 1;
  ASSERT_OK((*store)->PutPrincipal(p));
  ApiKeyRecord k;
  k.key_id = "0123456789abcdef";
  k.principal = "acm-press";
  k.salt = std::string(16, 's');
  k.hash = std::string(32, '\x7f');
  ASSERT_OK((*store)->PutKey(k));
  ASSERT_OK((*store)->AddUsage("acm-press", 1, 100, 0, 0));  // synced by the next change
  CollectionRecord c;
  c.name = "acm";
  ASSERT_OK((*store)->PutCollection(c));
  k.revoked_unix_micros = 42;  // the revocation above all must not come undone
  ASSERT_OK((*store)->PutKey(k));
  // Not synced (docs/security.md, "The access store"): may be lost.
  ASSERT_OK((*store)->AddUsage("acm-press", 1, 100, 0, 0));
  ASSERT_OK((*store)->AppendAudit({{7, "acm", 1000, "checker", 0.5, 0.5, 3, true, "", ""}}));
  disk.Crash();
  store->reset();
  ASSERT_OK(disk.DropUnsyncedChanges());

  auto reopened = PrincipalStore::Open(dir_.Join("access"));
  ASSERT_OK(reopened);
  EXPECT_OK((*reopened)->GetPrincipal("acm-press"));
  EXPECT_OK((*reopened)->GetCollection("acm"));
  auto key = (*reopened)->GetKey("0123456789abcdef");
  ASSERT_OK(key);
  EXPECT_EQ(key->revoked_unix_micros, 42);
  // The unsynced tail is gone (with this simulated disk, always), whole: usage as of the
  // last access change, no audit record.
  auto usage = (*reopened)->GetUsage("acm-press");
  ASSERT_OK(usage);
  EXPECT_EQ(usage->documents, 1u);
  EXPECT_EQ(usage->bytes, 100u);
  EXPECT_TRUE((*reopened)->QueryAudit(7, 0, 100)->empty());
  // And the store goes on counting from there.
  EXPECT_EQ((*reopened)->AddUsage("acm-press", 1, 100, 0, 0)->documents, 2u);
}

AuditRecord Hit(uint64_t doc_id, int64_t micros, const std::string& owner,
               const std::string& checker = "checker") {
  AuditRecord r;
  r.doc_id = doc_id;
  r.collection = "acm";
  r.unix_micros = micros;
  r.checker = checker;
  r.ratio = 0.5;
  r.owner = owner;
  r.test_sha256 = std::string(64, 'a');
  return r;
}

// A full disk under the access store: a principal, key or usage write fails with a clear
// RESOURCE_EXHAUSTED and reads go on; once space returns the same open store writes again
// (no restart), and everything acknowledged is there after a reopen.
TEST_F(PrincipalStoreTest, ADiskFullIsAClearErrorAndWritesResumeInPlaceOnceSpaceReturns) {
  std::filesystem::create_directories(dir_.path() / "trash");
  FaultFileSystem disk(dir_.Join("trash"));
  {
    auto store = PrincipalStore::Open(dir_.Join("access"), disk.rocksdb_env());
    ASSERT_OK(store);
    PrincipalRecord p;
    p.name = "acm-press";
    p.role = 1;
    ASSERT_OK((*store)->PutPrincipal(p));

    disk.SetDiskFull(true);
    PrincipalRecord q;
    q.name = "ieee";
    q.role = 1;
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::Status full = (*store)->PutPrincipal(q);
      EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
      EXPECT_NE(full.message().find("space"), std::string::npos) << full;
    }
    EXPECT_EQ((*store)->AddUsage("acm-press", 1, 100, 0, 0).status().code(),
              absl::StatusCode::kResourceExhausted);
    EXPECT_OK((*store)->GetPrincipal("acm-press").status());

    disk.SetDiskFull(false);
    ASSERT_OK((*store)->PutPrincipal(q)) << "space is back";
    ASSERT_OK((*store)->AddUsage("acm-press", 1, 100, 0, 0).status());
    AuditRecord r;
    r.doc_id = 7;
    r.collection = "acm";
    r.unix_micros = 1000;
    ASSERT_OK((*store)->AppendAudit({r}));
  }
  auto store = PrincipalStore::Open(dir_.Join("access"));
  ASSERT_OK(store);
  EXPECT_OK((*store)->GetPrincipal("acm-press").status());
  EXPECT_OK((*store)->GetPrincipal("ieee").status());
  ASSERT_OK_AND_ASSIGN(UsageRecord usage, (*store)->GetUsage("acm-press"));
  EXPECT_EQ(usage.documents, 1u);
  ASSERT_OK_AND_ASSIGN(auto audit, (*store)->QueryAudit(7, 0, 10));
  EXPECT_EQ(audit.size(), 1u);
}

// The index's free-space reserve (copsd --min-free-disk-mb) holds for the access store too:
// below it every write that adds data is refused with RESOURCE_EXHAUSTED naming the reserve
// and nothing is written; reads and the audit sweep go on; writes resume once space returns.
TEST_F(PrincipalStoreTest, WritesAreRefusedBelowTheFreeSpaceReserveAndResumeWhenSpaceReturns) {
  auto free_bytes = std::make_shared<std::atomic<uint64_t>>(uint64_t{1} << 30);
  PrincipalStoreOptions options;
  options.min_free_disk_mb = 100;
  options.free_disk_bytes = [free_bytes](const std::string&) -> absl::StatusOr<uint64_t> {
    return free_bytes->load();
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                       PrincipalStore::Open(dir_.Join("access"), options));
  PrincipalRecord p;
  p.name = "acm-press";
  p.role = 1;
  ASSERT_OK(store->PutPrincipal(p));
  ASSERT_OK(store->AppendAudit({Hit(7, 1000, "acm-press")}));

  free_bytes->store(uint64_t{99} << 20);
  PrincipalRecord q;
  q.name = "ieee";
  q.role = 1;
  ApiKeyRecord k;
  k.key_id = "0123456789abcdef";
  k.principal = "ieee";
  k.salt = "salt";
  k.hash = std::string(32, 'h');
  CollectionRecord c;
  c.name = "ieee";
  const std::vector<std::pair<std::string, absl::Status>> writes = {
      {"PutPrincipal", store->PutPrincipal(q)},
      {"PutKey", store->PutKey(k)},
      {"PutCollection", store->PutCollection(c)},
      {"PutWebhook", store->PutWebhook(WebhookRecord{"ieee", "", "whsec_x"})},
      {"PutWebhookDeliveries", store->PutWebhookDeliveries("job_1", "{}")},
      {"AddUsage", store->AddUsage("acm-press", 1, 100, 0, 0).status()},
      {"AppendAudit", store->AppendAudit({Hit(8, 2000, "acm-press")})},
  };
  for (const auto& [what, status] : writes) {
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << what << ": " << status;
    EXPECT_NE(status.message().find("less than 100 MiB free (copsd --min-free-disk-mb)"),
              std::string::npos)
        << what << ": " << status;
  }
  EXPECT_TRUE(absl::IsNotFound(store->GetPrincipal("ieee").status()));
  EXPECT_TRUE(absl::IsNotFound(store->GetKey("0123456789abcdef").status()));
  ASSERT_OK_AND_ASSIGN(UsageRecord usage, store->GetUsage("acm-press"));
  EXPECT_EQ(usage.documents, 0u);
  EXPECT_TRUE(store->QueryAudit(8, 0, 10)->empty());
  EXPECT_OK(store->GetPrincipal("acm-press").status());  // reads go on
  ASSERT_OK_AND_ASSIGN(size_t swept, store->RemoveAuditBefore(5000, 10));  // and the sweep
  EXPECT_EQ(swept, 1u);

  free_bytes->store(uint64_t{101} << 20);
  EXPECT_OK(store->PutPrincipal(q));
  EXPECT_OK(store->AddUsage("acm-press", 1, 100, 0, 0).status());
  EXPECT_OK(store->GetPrincipal("ieee").status());

  // A reserve of 0 leaves writes alone on any free space.
  store.reset();
  options.min_free_disk_mb = 0;
  free_bytes->store(0);
  ASSERT_OK_AND_ASSIGN(store, PrincipalStore::Open(dir_.Join("access"), options));
  EXPECT_OK(store->PutCollection(c));
}

TEST_F(PrincipalStoreTest, AuditOfAnOwnerSpansItsDocumentsInTimeOrderAndNoOtherOwners) {
  auto store = OpenStore();
  ASSERT_OK(store->AppendAudit({Hit(7, 3000, "alice"), Hit(8, 1000, "alice"),
                                Hit(9, 2000, "bob"), Hit(7, 2000, "alice", "other")}));
  auto alice = store->QueryAuditOfOwner("alice", 0, 0, 100);
  ASSERT_OK(alice);
  ASSERT_EQ(alice->size(), 3u);
  EXPECT_EQ((*alice)[0].doc_id, 8u);
  EXPECT_EQ((*alice)[1].checker, "other");
  EXPECT_EQ((*alice)[2].unix_micros, 3000);
  EXPECT_EQ((*alice)[2].test_sha256, std::string(64, 'a'));
  EXPECT_EQ((*alice)[2].owner, "alice");
  EXPECT_EQ(store->QueryAuditOfOwner("alice", 0, 2000, 100)->size(), 2u);
  EXPECT_EQ(store->QueryAuditOfOwner("alice", 7, 0, 100)->size(), 2u);
  EXPECT_EQ(store->QueryAuditOfOwner("alice", 0, 0, 1)->size(), 1u);
  // Another owner's document is not found through alice, whatever id she names.
  EXPECT_TRUE(store->QueryAuditOfOwner("alice", 9, 0, 100)->empty());
  EXPECT_EQ(store->QueryAuditOfOwner("bob", 0, 0, 100)->size(), 1u);
  // A prefix of a name is not the name.
  EXPECT_TRUE(store->QueryAuditOfOwner("ali", 0, 0, 100)->empty());
  EXPECT_TRUE(store->QueryAuditOfOwner("", 0, 0, 100)->empty());
}

TEST_F(PrincipalStoreTest, RemoveAuditBeforeDropsOldRecordsFromEveryIndex) {
  auto store = OpenStore();
  std::vector<AuditRecord> hits;
  for (int64_t t = 1; t <= 10; ++t) hits.push_back(Hit(7, t * 100, "alice"));
  hits.push_back(Hit(8, 250, ""));  // no owner recorded
  ASSERT_OK(store->AppendAudit(hits));
  EXPECT_EQ(*store->RemoveAuditBefore(100, 10), 0u);
  EXPECT_EQ(*store->RemoveAuditBefore(501, 2), 2u);  // the oldest first
  EXPECT_EQ(store->QueryAudit(7, 0, 100)->front().unix_micros, 300);
  EXPECT_EQ(*store->RemoveAuditBefore(501, 10), 4u);
  EXPECT_EQ(*store->RemoveAuditBefore(501, 10), 0u);
  EXPECT_EQ(store->QueryAudit(7, 0, 100)->size(), 5u);
  EXPECT_TRUE(store->QueryAudit(8, 0, 100)->empty());
  auto left = store->QueryAuditOfOwner("alice", 0, 0, 100);
  ASSERT_EQ(left->size(), 5u);
  EXPECT_EQ(left->front().unix_micros, 600);
}

// Writes `entries` into a fresh RocksDB directory as a store of schema `version` would hold them.
void WriteRawStore(const std::string& path, const std::string& version,
                   const std::vector<std::pair<std::string, std::string>>& entries) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, path, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "meta/version", version).ok());
  for (const auto& [k, v] : entries) ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
}

std::string BigEndian(uint64_t v, int bytes) {
  std::string out;
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

TEST_F(PrincipalStoreTest, ASchemaOneAuditTrailIsIndexedByTimeAtOpenAndThenSwept) {
  // Schema 1 kept audit records under a/<doc><time><seq> only, without an owner.
  const std::string legacy =
      R"({"doc_id":7,"collection":"acm","us":100,"checker":"c","ratio":0.5,)"
      R"("containment":0.1,"matched_chunks":3,"violation":false})";
  WriteRawStore(dir_.Join("access"), "1",
                {{"a/" + BigEndian(7, 8) + BigEndian(100, 8) + BigEndian(0, 4), legacy},
                 {"a/" + BigEndian(7, 8) + BigEndian(900, 8) + BigEndian(1, 4), legacy}});
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto hits = store->QueryAudit(7, 0, 100);
    ASSERT_EQ(hits->size(), 2u);
    EXPECT_EQ((*hits)[0].owner, "");
    EXPECT_EQ(*store->RemoveAuditBefore(500, 10), 1u);
    EXPECT_EQ(store->QueryAudit(7, 0, 100)->size(), 1u);
  }
  // Upgraded once: reopening finds schema 2 and the remaining record still sweepable.
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->RemoveAuditBefore(1000, 10), 1u);
  EXPECT_TRUE(store->QueryAudit(7, 0, 100)->empty());
}

TEST_F(PrincipalStoreTest, AnUnknownSchemaIsRefusedNamingIt) {
  WriteRawStore(dir_.Join("access"), "3", {});
  auto store = PrincipalStore::Open(dir_.Join("access"));
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_NE(store.status().message().find("schema version 3"), std::string::npos)
      << store.status();
}

}  // namespace
}  // namespace cops
