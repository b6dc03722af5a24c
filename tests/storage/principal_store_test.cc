#include "storage/principal_store.h"

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
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
      {7, "acm", 2000, "checker-b", 0.9, 0.5, 12, true},
      {7, "acm", 1000, "checker-a", 0.2, 0.1, 3, false},
      {8, "acm", 1500, "checker-a", 0.4, 0.3, 5, false},
      {7, "acm", 1000, "checker-c", 0.3, 0.2, 4, false},  // same microsecond: both kept
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
  ASSERT_OK((*store)->AppendAudit({{7, "acm", 1000, "checker", 0.5, 0.5, 3, true}}));
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

}  // namespace
}  // namespace cops
