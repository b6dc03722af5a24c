#include "access/access_control.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// A clock the test moves by hand.
struct FakeTime {
  int64_t now = 1'700'000'000'000'000;
};

class AccessControlTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen(AccessControlOptions options = {}) {
    ac_.reset();
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> store,
                         PrincipalStore::Open(dir_.Join("access")));
    options.now_micros = [t = time_] { return t->now; };
    ASSERT_OK_AND_ASSIGN(ac_, AccessControl::Open(std::move(store), std::move(options)));
  }

  IssuedKey Create(const std::string& name, Role role, std::vector<std::string> collections,
                   uint64_t max_documents = 0, uint64_t max_bytes = 0) {
    PrincipalRecord r;
    r.name = name;
    r.role = static_cast<uint8_t>(role);
    r.collections = std::move(collections);
    r.max_documents = max_documents;
    r.max_bytes = max_bytes;
    auto issued = ac_->CreatePrincipal(r);
    EXPECT_OK(issued);
    return issued.ok() ? *issued : IssuedKey{};
  }

  absl::StatusOr<Principal> Login(const std::string& api_key, std::string peer = "ipv4:10.0.0.1:5000") {
    CallCredentials c;
    c.api_key = api_key;
    c.peer = std::move(peer);
    return ac_->AuthenticateCredentials(c);
  }

  Principal LoginOk(const IssuedKey& key) {
    auto p = Login(key.api_key);
    EXPECT_OK(p);
    return p.ok() ? *p : Principal{};
  }

  testing::TempDir dir_{"access"};
  std::shared_ptr<FakeTime> time_ = std::make_shared<FakeTime>();
  std::unique_ptr<AccessControl> ac_;
};

TEST_F(AccessControlTest, IssuedKeyAuthenticatesItsPrincipal) {
  IssuedKey key = Create("acm-press", Role::kOwner, {"acm"});
  EXPECT_EQ(key.api_key.rfind("cops_" + key.key_id + "_", 0), 0u);
  Principal p = LoginOk(key);
  EXPECT_EQ(p.name, "acm-press");
  EXPECT_EQ(p.role, Role::kOwner);
  EXPECT_EQ(p.collections, std::vector<std::string>{"acm"});
}

TEST_F(AccessControlTest, BadCredentialsAreUnauthenticated) {
  IssuedKey key = Create("acm-press", Role::kOwner, {"acm"});
  EXPECT_TRUE(absl::IsUnauthenticated(Login("").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(Login("not-a-key").status()));
  // Right key id, wrong secret.
  std::string forged = key.api_key;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_TRUE(absl::IsUnauthenticated(Login(forged).status()));
  // Unknown key id.
  std::string unknown = key.api_key;
  unknown[5] = unknown[5] == 'a' ? 'b' : 'a';
  EXPECT_TRUE(absl::IsUnauthenticated(Login(unknown).status()));
}

TEST_F(AccessControlTest, EachRoleAllowedAndRefusedPerAction) {
  Principal owner = LoginOk(Create("owner", Role::kOwner, {"acm"}));
  Principal checker = LoginOk(Create("checker", Role::kChecker, {"acm"}));
  Principal admin = LoginOk(Create("root", Role::kAdmin, {}));
  struct Case {
    Action action;
    bool owner, checker, admin;
  };
  const Case cases[] = {
      {Action::kRegister, true, false, true},      {Action::kUnregister, true, false, true},
      {Action::kReadDocument, true, false, true},  {Action::kReadText, true, false, true},
      {Action::kCheck, true, true, true},          {Action::kStats, false, false, true},
      {Action::kAdmin, false, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.action));
    const std::string_view collection = c.action == Action::kStats || c.action == Action::kAdmin ? "" : "acm";
    absl::Status s = ac_->Authorize(owner, c.action, collection);
    EXPECT_EQ(s.ok(), c.owner) << s;
    if (!c.owner) {
      EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
    }
    s = ac_->Authorize(checker, c.action, collection);
    EXPECT_EQ(s.ok(), c.checker) << s;
    if (!c.checker) {
      EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
    }
    s = ac_->Authorize(admin, c.action, collection);
    EXPECT_EQ(s.ok(), c.admin) << s;
  }
}

TEST_F(AccessControlTest, CheckersNeverReadRegisteredText) {
  Principal checker = LoginOk(Create("gateway", Role::kChecker, {"acm", "ieee"}));
  for (std::string_view c : {"acm", "ieee", ""}) {
    EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(checker, Action::kReadText, c)));
  }
}

TEST_F(AccessControlTest, OwnersTouchOnlyTheirOwnDocuments) {
  Principal a = LoginOk(Create("acm-a", Role::kOwner, {"acm"}));
  Principal b = LoginOk(Create("acm-b", Role::kOwner, {"acm"}));
  Principal admin = LoginOk(Create("root", Role::kAdmin, {}));
  EXPECT_OK(ac_->AuthorizeDocument(a, Action::kUnregister, "acm", "acm-a"));
  EXPECT_OK(ac_->AuthorizeDocument(a, Action::kReadText, "acm", "acm-a"));
  // Same collection, another owner's document.
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->AuthorizeDocument(b, Action::kUnregister, "acm", "acm-a")));
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->AuthorizeDocument(b, Action::kReadText, "acm", "acm-a")));
  EXPECT_OK(ac_->AuthorizeDocument(b, Action::kReadDocument, "acm", "acm-a"));
  EXPECT_OK(ac_->AuthorizeDocument(admin, Action::kUnregister, "acm", "acm-a"));
}

TEST_F(AccessControlTest, CollectionsIsolateTenants) {
  Principal acm = LoginOk(Create("acm-press", Role::kOwner, {"acm"}));
  Principal ieee = LoginOk(Create("ieee-press", Role::kOwner, {"ieee"}));
  Principal pc = LoginOk(Create("sigmod-pc", Role::kChecker, {"acm"}));
  EXPECT_OK(ac_->Authorize(acm, Action::kRegister, "acm"));
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(acm, Action::kRegister, "ieee")));
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(ieee, Action::kUnregister, "acm")));
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(ieee, Action::kReadText, "acm")));
  EXPECT_OK(ac_->Authorize(pc, Action::kCheck, "acm"));
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(pc, Action::kCheck, "ieee")));
  // Registering needs a named collection; a check without one searches the grants only.
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(acm, Action::kRegister, "")));
  EXPECT_EQ(ac_->UsableCollections(pc), std::vector<std::string>{"acm"});
  EXPECT_EQ(ac_->UsableCollections(ieee), std::vector<std::string>{"ieee"});
  Principal admin = LoginOk(Create("root", Role::kAdmin, {}));
  EXPECT_FALSE(ac_->UsableCollections(admin).has_value());  // unrestricted
}

TEST_F(AccessControlTest, GrantChangesApplyToTheNextCall) {
  IssuedKey key = Create("sigmod-pc", Role::kChecker, {"acm"});
  Principal pc = LoginOk(key);
  ASSERT_OK(ac_->Authorize(pc, Action::kCheck, "acm"));
  ASSERT_OK(ac_->SetCollections("sigmod-pc", {"ieee"}));
  // Same Principal object, taken before the change: the current grants decide.
  EXPECT_TRUE(absl::IsPermissionDenied(ac_->Authorize(pc, Action::kCheck, "acm")));
  EXPECT_OK(ac_->Authorize(pc, Action::kCheck, "ieee"));
}

TEST_F(AccessControlTest, RevokedKeyStopsAtOnceAndStaysRevoked) {
  IssuedKey first = Create("acm-press", Role::kOwner, {"acm"});
  auto second = ac_->CreateKey("acm-press");
  ASSERT_OK(second);
  LoginOk(first);
  ASSERT_OK(ac_->RevokeKey(first.key_id));
  EXPECT_TRUE(absl::IsUnauthenticated(Login(first.api_key).status()));
  LoginOk(*second);  // the principal's other key still works
  EXPECT_OK(ac_->RevokeKey(first.key_id));  // idempotent
  EXPECT_TRUE(absl::IsNotFound(ac_->RevokeKey("0000000000000000")));

  Reopen();
  EXPECT_TRUE(absl::IsUnauthenticated(Login(first.api_key).status()));
  LoginOk(*second);
}

TEST_F(AccessControlTest, StoreKeepsOnlySaltedHashes) {
  IssuedKey a = Create("acm-press", Role::kOwner, {"acm"});
  IssuedKey b = Create("ieee-press", Role::kOwner, {"ieee"});
  const std::string secret_a = a.api_key.substr(a.api_key.rfind('_') + 1);
  const std::string secret_b = b.api_key.substr(b.api_key.rfind('_') + 1);
  ASSERT_EQ(secret_a.size(), 64u);
  std::vector<ApiKeyRecord> keys = ac_->ListKeys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_NE(keys[0].salt, keys[1].salt);
  for (const ApiKeyRecord& k : keys) {
    EXPECT_EQ(k.hash.size(), 32u);
    EXPECT_EQ(k.hash.find(secret_a), std::string::npos);
  }
  ac_.reset();  // flush and close, then look at every byte on disk
  std::string all;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_NE(all.find(a.key_id), std::string::npos);  // the records are there...
  EXPECT_EQ(all.find(secret_a), std::string::npos);  // ...but never the secrets
  EXPECT_EQ(all.find(secret_b), std::string::npos);
  EXPECT_EQ(all.find(secret_a.substr(0, 16)), std::string::npos);
}

TEST_F(AccessControlTest, ChecksChangeNothing) {
  // No rate limit and no quota here: a thousand decisions leave every record as it was.
  Principal small = LoginOk(Create("small", Role::kOwner, {"acm"}, /*max_documents=*/1));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_OK(ac_->Authorize(small, Action::kRegister, "acm")) << i;
  }
  EXPECT_EQ(ac_->Usage("small")->documents, 0u);
  // Authorizing a registration into a collection that does not exist does not create it.
  Principal admin = LoginOk(Create("root", Role::kAdmin, {}));
  ASSERT_OK(ac_->Authorize(admin, Action::kRegister, "fresh"));
  auto names = [&] {
    std::vector<std::string> out;
    for (const CollectionRecord& c : ac_->ListCollections()) out.push_back(c.name);
    return out;
  };
  EXPECT_EQ(names(), std::vector<std::string>{"acm"});
  // The registration path creates it explicitly, once.
  ASSERT_OK(ac_->EnsureCollection("fresh"));
  const int64_t created = time_->now;
  time_->now += 1'000'000;
  ASSERT_OK(ac_->EnsureCollection("fresh"));
  EXPECT_EQ(names(), (std::vector<std::string>{"acm", "fresh"}));
  EXPECT_EQ(ac_->ListCollections()[1].created_unix_micros, created);
}

TEST_F(AccessControlTest, PrincipalCarriesItsUsageLimits) {
  PrincipalRecord r;
  r.name = "gateway";
  r.role = static_cast<uint8_t>(Role::kOwner);
  r.collections = {"acm"};
  r.requests_per_second = 2;
  r.burst = 3;
  r.max_documents = 10;
  r.max_bytes = 1000;
  auto key = ac_->CreatePrincipal(r);
  ASSERT_OK(key);
  const UsageLimits limits = LoginOk(*key).limits;
  EXPECT_DOUBLE_EQ(limits.requests_per_second, 2);
  EXPECT_EQ(limits.burst, 3u);
  EXPECT_EQ(limits.max_documents, 10u);
  EXPECT_EQ(limits.max_bytes, 1000u);
  EXPECT_FALSE(limits.unlimited);
}

// Failures are counted per host (not per port) and answered at once; past the limit the
// host is told so (RESOURCE_EXHAUSTED), until a window passes without failures.
TEST_F(AccessControlTest, FailuresPerHostAreLimitedWithoutEverWaiting) {
  AccessControlOptions options;
  options.failure_limit = 3;
  Reopen(options);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(absl::IsUnauthenticated(
        Login("junk", "ipv4:10.0.0.9:" + std::to_string(1000 + i)).status()));
  }
  const absl::Status over = Login("junk", "ipv4:10.0.0.9:2000").status();
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_NE(over.message().find("too many failed authentications from ipv4:10.0.0.9"),
            std::string::npos)
      << over;
  // Another host starts fresh.
  EXPECT_TRUE(absl::IsUnauthenticated(Login("junk", "ipv4:10.0.0.10:1").status()));
  // A minute without failures, and the host starts fresh too.
  time_->now += 61'000'000;
  EXPECT_TRUE(absl::IsUnauthenticated(Login("junk", "ipv4:10.0.0.9:3000").status()));
}

// Many clients share one NAT address: one of them guessing keys must not lock the others out.
TEST_F(AccessControlTest, ValidKeysPassFromAnAddressOverItsFailureLimit) {
  IssuedKey key = Create("acm-press", Role::kOwner, {"acm"});
  for (int i = 0; i < 1000; ++i) (void)Login("cops_" + std::string(16, '0') + "_" +
                                             std::string(64, 'f'), "ipv4:192.0.2.7:" + std::to_string(i));
  EXPECT_TRUE(absl::IsResourceExhausted(Login("junk", "ipv4:192.0.2.7:1").status()));
  ASSERT_OK_AND_ASSIGN(Principal p, Login(key.api_key, "ipv4:192.0.2.7:4242"));
  EXPECT_EQ(p.name, "acm-press");
  // A success does not clear the count for the guessers beside it.
  EXPECT_TRUE(absl::IsResourceExhausted(Login("junk", "ipv4:192.0.2.7:2").status()));
}

TEST_F(AccessControlTest, VerifiedCertificateNamesAPrincipal) {
  Create("gateway.example.org", Role::kChecker, {"acm"});
  CallCredentials c;
  c.peer = "ipv4:127.0.0.1:1";
  c.certificate_names = {"spiffe://example.org/x", "gateway.example.org"};
  auto p = ac_->AuthenticateCredentials(c);
  ASSERT_OK(p);
  EXPECT_EQ(p->name, "gateway.example.org");
  EXPECT_EQ(p->role, Role::kChecker);
  c.certificate_names = {"stranger.example.org"};
  EXPECT_TRUE(absl::IsUnauthenticated(ac_->AuthenticateCredentials(c).status()));
}

TEST_F(AccessControlTest, CollectionSettingsArePrivateAndAuditedByDefault) {
  Create("sigmod-pc", Role::kChecker, {"acm", "quiet"});
  CollectionRecord quiet;
  quiet.name = "quiet";
  quiet.keep_audit = false;
  quiet.show_titles_to_checkers = true;
  ASSERT_OK(ac_->PutCollection(quiet));
  EXPECT_TRUE(ac_->PolicyFor("quiet").show_titles_to_checkers);
  EXPECT_FALSE(ac_->PolicyFor("quiet").keep_audit);
  EXPECT_FALSE(ac_->PolicyFor("acm").show_titles_to_checkers);
  EXPECT_TRUE(ac_->PolicyFor("acm").keep_audit);
  EXPECT_TRUE(ac_->PolicyFor("never-created").keep_audit);
}

TEST_F(AccessControlTest, CreatePrincipalValidates) {
  Create("acm-press", Role::kOwner, {"acm"});
  PrincipalRecord r;
  r.name = "acm-press";
  r.role = static_cast<uint8_t>(Role::kOwner);
  r.collections = {"acm"};
  EXPECT_TRUE(absl::IsAlreadyExists(ac_->CreatePrincipal(r).status()));
  r.name = "no collections";
  EXPECT_TRUE(absl::IsInvalidArgument(ac_->CreatePrincipal(r).status()));
  r.name = "lonely";
  r.collections = {};
  EXPECT_TRUE(absl::IsInvalidArgument(ac_->CreatePrincipal(r).status()));
  r.role = 9;
  r.collections = {"acm"};
  EXPECT_TRUE(absl::IsInvalidArgument(ac_->CreatePrincipal(r).status()));
  EXPECT_TRUE(absl::IsNotFound(ac_->CreateKey("nobody").status()));
}

TEST_F(AccessControlTest, BootstrapCreatesOneAdminOnce) {
  auto first = ac_->BootstrapAdmin();
  ASSERT_OK(first);
  ASSERT_TRUE(first->has_value());
  Principal admin = LoginOk(**first);
  EXPECT_EQ(admin.role, Role::kAdmin);
  Reopen();
  auto second = ac_->BootstrapAdmin();
  ASSERT_OK(second);
  EXPECT_FALSE(second->has_value());
  LoginOk(**first);
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

TEST(OpenAccessControlTest, BootstrapKeyFileIsPrivateAndWrittenOnce) {
  const testing::TempDir temp("access_boot");
  const std::filesystem::path& dir = temp.path();
  std::string key;
  {
    auto ac = OpenAccessControl(dir.string(), /*bootstrap_admin=*/true);
    ASSERT_OK(ac);
    std::ifstream in(dir / "admin.key");
    std::getline(in, key);
    EXPECT_EQ(std::filesystem::status(dir / "admin.key").permissions() &
                  std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    CallCredentials c;
    c.api_key = key;
    auto p = (*ac)->AuthenticateCredentials(c);
    ASSERT_OK(p);
    EXPECT_EQ(p->role, Role::kAdmin);
  }
  std::filesystem::remove(dir / "admin.key");
  {
    // An admin exists: no new key, no new file.
    auto ac = OpenAccessControl(dir.string(), true);
    ASSERT_OK(ac);
    EXPECT_FALSE(std::filesystem::exists(dir / "admin.key"));
    EXPECT_EQ((*ac)->ListKeys().size(), 1u);
  }
}

TEST(OpenAccessControlTest, NoBootstrapWhenAuthIsOff) {
  const testing::TempDir temp("access_boot");
  const std::filesystem::path& dir = temp.path();
  auto ac = OpenAccessControl(dir.string(), /*bootstrap_admin=*/false);
  ASSERT_OK(ac);
  EXPECT_TRUE((*ac)->ListPrincipals().empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "admin.key"));
}

}  // namespace
}  // namespace cops
