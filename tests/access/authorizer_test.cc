// The access policy of access/authorizer.h as every RPC applies it, end to end through gRPC
// with authentication on: one row per RPC of cops.v1.CopyDetection and cops.v1.Admin, each
// called by an owner, a checker, an admin scoped to collection "a" and the unrestricted admin,
// on a target inside collection "a" and on one outside it (collection "b", another owner's).
// The RPCs are enumerated from the proto descriptors: a new RPC without a row fails here.
// Scoped admins' escalation paths (minting keys for a wider principal, granting themselves
// collections) have their own test below.

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "access/access_control.h"
#include "engine/index_generations.h"
#include "engine/receipt_signer.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "proto/cops_admin.grpc.pb.h"
#include "server/admin_service.h"
#include "server/service.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using testing_corpus::Prose;

// What a caller got at the target of a call.
enum class Outcome {
  kServed,  // OK, and the target was acted on or is in the listing
  kDenied,  // PERMISSION_DENIED
  kHidden,  // NOT_FOUND, or OK with the target left out of the listing
  kOther,   // anything else: always a failure of the matrix
};

std::string OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kServed: return "served";
    case Outcome::kDenied: return "denied";
    case Outcome::kHidden: return "hidden";
    case Outcome::kOther: return "other";
  }
  return "?";
}

enum class Caller { kOwner, kChecker, kScopedAdmin, kFullAdmin };
constexpr Caller kCallers[] = {Caller::kOwner, Caller::kChecker, Caller::kScopedAdmin,
                               Caller::kFullAdmin};

std::string CallerName(Caller c) {
  switch (c) {
    case Caller::kOwner: return "owner of a";
    case Caller::kChecker: return "checker of a";
    case Caller::kScopedAdmin: return "admin of a";
    case Caller::kFullAdmin: return "unrestricted admin";
  }
  return "?";
}

// The target of a call: inside the callers' collection "a" or outside it.
struct Target {
  bool in;
  std::string collection;  // "a" or "b"
  std::string owner;       // "owner-a" or "owner-b", the owner principal of that collection
  uint64_t doc_id;         // a document of that owner in that collection
};

Outcome FromStatus(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK: return Outcome::kServed;
    case grpc::StatusCode::PERMISSION_DENIED: return Outcome::kDenied;
    case grpc::StatusCode::NOT_FOUND: return Outcome::kHidden;
    default: return Outcome::kOther;
  }
}

// Listings: served only when the target is in it.
Outcome Listed(const grpc::Status& s, bool found) {
  if (!s.ok()) return FromStatus(s);
  return found ? Outcome::kServed : Outcome::kHidden;
}

// Public members: the rows' calls below use them.
class RpcAccessMatrixTest : public ::testing::TestWithParam<std::string> {
 public:
  void SetUp() override {
    IndexGenerationsOptions options;
    options.data_dir = dir_.path().string();
    ASSERT_OK_AND_ASSIGN(generations_, IndexGenerations::Open(options));
    ASSERT_OK_AND_ASSIGN(access_,
                         OpenAccessControl(dir_.path().string(), /*bootstrap_admin=*/true));
    std::ifstream(dir_.path() / "admin.key") >> keys_[Caller::kFullAdmin];
    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()),
                                         MatchesFrom(access_->store()));
    ASSERT_OK_AND_ASSIGN(receipts_, ReceiptSigner::Open(DataDir(dir_.path().string())));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), access_.get(),
                                                      usage_.get(), audit_.get(), receipts_.get());
    admin_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                            generations_.get(), receipts_.get());
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({service_.get(), admin_.get()}));
    stub_ = server_->NewStub<v1::CopyDetection>();
    admin_stub_ = server_->NewStub<v1::Admin>();

    keys_[Caller::kOwner] = NewPrincipal("owner-a", Role::kOwner, {"a"});
    owner_b_key_ = NewPrincipal("owner-b", Role::kOwner, {"b"});
    keys_[Caller::kChecker] = NewPrincipal("checker-a", Role::kChecker, {"a"});
    keys_[Caller::kScopedAdmin] = NewPrincipal("admin-a", Role::kAdmin, {"a"});
    in_ = Target{true, "a", "owner-a", RegisterAs(keys_[Caller::kOwner], "a")};
    out_ = Target{false, "b", "owner-b", RegisterAs(owner_b_key_, "b")};
    // Each document was reported by one check of the checker.
    ASSERT_OK(access_->store()->AppendAudit(
        {{in_.doc_id, "a", 1, "checker-a", 0.9, 0.9, 20, true, "owner-a", ""},
         {out_.doc_id, "b", 2, "checker-b", 0.9, 0.9, 20, true, "owner-b", ""}}));
  }

  std::string NewPrincipal(const std::string& name, Role role, std::vector<std::string> cols) {
    PrincipalRecord r;
    r.name = name;
    r.role = static_cast<uint8_t>(role);
    r.collections = std::move(cols);
    auto issued = access_->CreatePrincipal(r);
    EXPECT_OK(issued);
    return issued.ok() ? issued->api_key : "";
  }

  // A new document of the key's principal (an owner) in `collection`.
  uint64_t RegisterAs(const std::string& key, const std::string& collection) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, key);
    v1::RegisterDocumentRequest req;
    FillDocument(collection, req.mutable_document());
    v1::RegisterDocumentReply reply;
    EXPECT_OK(stub_->RegisterDocument(&ctx, req, &reply));
    return reply.doc_id();
  }

  void FillDocument(const std::string& collection, v1::Document* doc) {
    doc->set_content(Prose(++seed_, 120));
    doc->set_format(v1::DOCUMENT_FORMAT_TEXT);
    doc->mutable_metadata()->set_collection(collection);
  }

  // The key of the owner of `t`'s collection.
  std::string OwnerKey(const Target& t) const {
    return t.in ? keys_.at(Caller::kOwner) : owner_b_key_;
  }

  testing::TempDir dir_{"rpc_matrix"};
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::unique_ptr<ReceiptSigner> receipts_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<testing::TestServer> server_;  // stops before the services go
  std::unique_ptr<v1::CopyDetection::Stub> stub_;
  std::unique_ptr<v1::Admin::Stub> admin_stub_;
  std::map<Caller, std::string> keys_;
  std::string owner_b_key_;
  Target in_, out_;
  uint32_t seed_ = 0;
  uint32_t serial_ = 0;  // unique names of principals and snapshots made by the calls
};

// One row: how to call the RPC as `key` on target `t`, and what each caller gets inside and
// outside its collection: {owner, checker, scoped admin, unrestricted admin} x {in, out}.
// A call on the whole server (`targeted` false) has no inside or outside: it is made once
// per caller and its outcome must be both.
struct Row {
  std::function<Outcome(RpcAccessMatrixTest&, const std::string& key, const Target& t)> call;
  std::map<Caller, std::pair<Outcome, Outcome>> expected;
  bool targeted = true;
};

constexpr Outcome S = Outcome::kServed;
constexpr Outcome D = Outcome::kDenied;
constexpr Outcome H = Outcome::kHidden;

// Server-wide operations: the unrestricted admin only.
const std::map<Caller, std::pair<Outcome, Outcome>> kUnrestrictedOnly = {
    {Caller::kOwner, {D, D}},
    {Caller::kChecker, {D, D}},
    {Caller::kScopedAdmin, {D, D}},
    {Caller::kFullAdmin, {S, S}}};

// Administration within collections: admins of the target's collection.
const std::map<Caller, std::pair<Outcome, Outcome>> kAdminsOfTheCollection = {
    {Caller::kOwner, {D, D}},
    {Caller::kChecker, {D, D}},
    {Caller::kScopedAdmin, {S, D}},
    {Caller::kFullAdmin, {S, S}}};

// Listings of the Admin service: a scoped admin sees its collections' entries only.
const std::map<Caller, std::pair<Outcome, Outcome>> kAdminListing = {
    {Caller::kOwner, {D, D}},
    {Caller::kChecker, {D, D}},
    {Caller::kScopedAdmin, {S, H}},
    {Caller::kFullAdmin, {S, S}}};

using T = RpcAccessMatrixTest;

const std::map<std::string, Row>& Rows() {
  static const auto* rows = new std::map<std::string, Row>{
      // ------------------------------------------------------------ cops.v1.CopyDetection
      {"cops.v1.CopyDetection.RegisterDocument",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::RegisterDocumentRequest req;
          f.FillDocument(t.collection, req.mutable_document());
          req.mutable_document()->mutable_metadata()->set_owner(t.owner);
          v1::RegisterDocumentReply reply;
          return FromStatus(f.stub_->RegisterDocument(&ctx, req, &reply));
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {D, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.RegisterDocuments",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::RegisterDocumentsReply reply;
          auto writer = f.stub_->RegisterDocuments(&ctx, &reply);
          v1::RegisterDocumentRequest req;
          f.FillDocument(t.collection, req.mutable_document());
          req.mutable_document()->mutable_metadata()->set_owner(t.owner);
          writer->Write(req);
          writer->WritesDone();
          grpc::Status s = writer->Finish();
          if (!s.ok() || reply.results_size() != 1) return FromStatus(s);
          const v1::RegisterResult& r = reply.results(0);
          return FromStatus(grpc::Status(static_cast<grpc::StatusCode>(r.error_code()),
                                         r.error_message()));
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {D, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.UnregisterDocument",
       {[](T& f, const std::string& key, const Target& t) {
          const uint64_t id = f.RegisterAs(f.OwnerKey(t), t.collection);
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::UnregisterDocumentRequest req;
          req.set_doc_id(id);
          v1::UnregisterDocumentReply reply;
          return FromStatus(f.stub_->UnregisterDocument(&ctx, req, &reply));
        },
        // Documents of collections the caller cannot use are not found, not forbidden.
        {{Caller::kOwner, {S, H}},
         {Caller::kChecker, {D, H}},
         {Caller::kScopedAdmin, {S, H}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.GetDocument",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::GetDocumentRequest req;
          req.set_doc_id(t.doc_id);
          req.set_include_content(true);
          v1::GetDocumentReply reply;
          return FromStatus(f.stub_->GetDocument(&ctx, req, &reply));
        },
        {{Caller::kOwner, {S, H}},
         {Caller::kChecker, {D, H}},
         {Caller::kScopedAdmin, {S, H}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.ListDocuments",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::ListDocumentsRequest req;
          req.set_collection(t.collection);
          v1::ListDocumentsReply reply;
          grpc::Status s = f.stub_->ListDocuments(&ctx, req, &reply);
          bool found = false;
          for (const auto& d : reply.documents()) found |= d.doc_id() == t.doc_id;
          return Listed(s, found);
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {D, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.CheckDocument",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::CheckDocumentRequest req;
          req.set_content(Prose(900, 80));
          req.set_format(v1::DOCUMENT_FORMAT_TEXT);
          req.add_collections(t.collection);
          v1::CheckDocumentReply reply;
          return FromStatus(f.stub_->CheckDocument(&ctx, req, &reply));
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {S, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.CheckStream",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          auto stream = f.stub_->CheckStream(&ctx);
          v1::CheckDocumentRequest req;
          req.set_content(Prose(900, 80));
          req.set_format(v1::DOCUMENT_FORMAT_TEXT);
          req.add_collections(t.collection);
          v1::CheckDocumentReply reply;
          const bool answered = stream->Write(req) && stream->Read(&reply);
          stream->WritesDone();
          grpc::Status s = stream->Finish();
          if (!s.ok() || !answered) return FromStatus(s);
          return FromStatus(grpc::Status(static_cast<grpc::StatusCode>(reply.error_code()),
                                         reply.error_message()));
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {S, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.CopyDetection.GetStats",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::GetStatsReply reply;
          return FromStatus(f.stub_->GetStats(&ctx, v1::GetStatsRequest(), &reply));
        },
        kUnrestrictedOnly, false}},
      {"cops.v1.CopyDetection.ListMatches",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::ListMatchesRequest req;
          req.set_owner(t.owner);
          v1::ListMatchesReply reply;
          grpc::Status s = f.stub_->ListMatches(&ctx, req, &reply);
          bool found = false;
          for (const auto& e : reply.entries()) found |= e.doc_id() == t.doc_id;
          return Listed(s, found);
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {D, D}},
         {Caller::kScopedAdmin, {S, H}},
         {Caller::kFullAdmin, {S, S}}}}},
      // ------------------------------------------------------------ cops.v1.Admin
      {"cops.v1.Admin.CreatePrincipal",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::CreatePrincipalRequest req;
          req.set_name("new-" + std::to_string(++f.serial_));
          req.set_role(v1::PRINCIPAL_ROLE_CHECKER);
          req.add_collections(t.collection);
          v1::CreatePrincipalResponse reply;
          return FromStatus(f.admin_stub_->CreatePrincipal(&ctx, req, &reply));
        },
        kAdminsOfTheCollection}},
      {"cops.v1.Admin.ListPrincipals",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::ListPrincipalsResponse reply;
          grpc::Status s = f.admin_stub_->ListPrincipals(&ctx, v1::ListPrincipalsRequest(), &reply);
          bool found = false;
          for (const auto& p : reply.principals()) found |= p.name() == t.owner;
          return Listed(s, found);
        },
        kAdminListing}},
      {"cops.v1.Admin.SetPrincipalCollections",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::SetPrincipalCollectionsRequest req;
          req.set_principal(t.owner);
          req.add_collections(t.collection);  // as it was
          v1::SetPrincipalCollectionsResponse reply;
          return FromStatus(f.admin_stub_->SetPrincipalCollections(&ctx, req, &reply));
        },
        kAdminsOfTheCollection}},
      {"cops.v1.Admin.CreateApiKey",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::CreateApiKeyRequest req;
          req.set_principal(t.owner);
          v1::CreateApiKeyResponse reply;
          return FromStatus(f.admin_stub_->CreateApiKey(&ctx, req, &reply));
        },
        kAdminsOfTheCollection}},
      {"cops.v1.Admin.RevokeApiKey",
       {[](T& f, const std::string& key, const Target& t) {
          absl::StatusOr<IssuedKey> victim = f.access_->CreateKey(t.owner);
          if (!victim.ok()) return Outcome::kOther;
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::RevokeApiKeyRequest req;
          req.set_key_id(victim->key_id);
          v1::RevokeApiKeyResponse reply;
          return FromStatus(f.admin_stub_->RevokeApiKey(&ctx, req, &reply));
        },
        kAdminsOfTheCollection}},
      {"cops.v1.Admin.CreateCollection",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::CreateCollectionRequest req;
          req.mutable_collection()->set_name(t.collection);
          req.mutable_collection()->set_keep_audit(true);
          v1::CreateCollectionResponse reply;
          return FromStatus(f.admin_stub_->CreateCollection(&ctx, req, &reply));
        },
        kAdminsOfTheCollection}},
      {"cops.v1.Admin.ListCollections",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::ListCollectionsResponse reply;
          grpc::Status s =
              f.admin_stub_->ListCollections(&ctx, v1::ListCollectionsRequest(), &reply);
          bool found = false;
          for (const auto& c : reply.collections()) found |= c.name() == t.collection;
          return Listed(s, found);
        },
        kAdminListing}},
      {"cops.v1.Admin.QueryAudit",
       {[](T& f, const std::string& key, const Target& t) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::QueryAuditRequest req;
          req.set_doc_id(t.doc_id);
          v1::QueryAuditResponse reply;
          grpc::Status s = f.admin_stub_->QueryAudit(&ctx, req, &reply);
          return Listed(s, reply.entries_size() > 0);
        },
        {{Caller::kOwner, {S, D}},
         {Caller::kChecker, {D, D}},
         {Caller::kScopedAdmin, {S, D}},
         {Caller::kFullAdmin, {S, S}}}}},
      {"cops.v1.Admin.CreateSnapshot",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::CreateSnapshotRequest req;
          req.set_name("snap-" + std::to_string(++f.serial_));
          v1::CreateSnapshotResponse reply;
          return FromStatus(f.admin_stub_->CreateSnapshot(&ctx, req, &reply));
        },
        kUnrestrictedOnly, false}},
      {"cops.v1.Admin.RotateKey",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::RotateKeyResponse reply;
          return FromStatus(f.admin_stub_->RotateKey(&ctx, v1::RotateKeyRequest(), &reply));
        },
        kUnrestrictedOnly, false}},
      {"cops.v1.Admin.GetKeyRotationStatus",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::GetKeyRotationStatusResponse reply;
          return FromStatus(f.admin_stub_->GetKeyRotationStatus(
              &ctx, v1::GetKeyRotationStatusRequest(), &reply));
        },
        kUnrestrictedOnly, false}},
      {"cops.v1.Admin.SetBulkLoad",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::SetBulkLoadRequest req;
          req.set_enabled(false);  // ending a bulk load that is not on changes nothing
          v1::SetBulkLoadResponse reply;
          return FromStatus(f.admin_stub_->SetBulkLoad(&ctx, req, &reply));
        },
        kUnrestrictedOnly, false}},
      {"cops.v1.Admin.ListSigningKeys",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::ListSigningKeysResponse reply;
          return FromStatus(
              f.admin_stub_->ListSigningKeys(&ctx, v1::ListSigningKeysRequest(), &reply));
        },
        // Public keys are public: any principal.
        {{Caller::kOwner, {S, S}},
         {Caller::kChecker, {S, S}},
         {Caller::kScopedAdmin, {S, S}},
         {Caller::kFullAdmin, {S, S}}}, false}},
      {"cops.v1.Admin.RotateSigningKey",
       {[](T& f, const std::string& key, const Target&) {
          grpc::ClientContext ctx;
          testing::PrepareCall(&ctx, key);
          v1::RotateSigningKeyResponse reply;
          return FromStatus(
              f.admin_stub_->RotateSigningKey(&ctx, v1::RotateSigningKeyRequest(), &reply));
        },
        kUnrestrictedOnly, false}},
  };
  return *rows;
}

// Every method of both services, by full name ("cops.v1.Admin.CreatePrincipal").
std::vector<std::string> AllMethods() {
  std::vector<std::string> out;
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  for (const char* service : {"cops.v1.CopyDetection", "cops.v1.Admin"}) {
    const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(service);
    if (s == nullptr) {
      out.push_back(std::string(service) + ".<service not linked>");
      continue;
    }
    for (int i = 0; i < s->method_count(); ++i) out.push_back(s->method(i)->full_name());
  }
  return out;
}

TEST_P(RpcAccessMatrixTest, EachCallerReachesOnlyWhatItsRoleAndCollectionsAllow) {
  const auto row = Rows().find(GetParam());
  ASSERT_NE(row, Rows().end()) << GetParam()
                               << " has no row in the access matrix: add one saying who may "
                                  "call it inside and outside the caller's collections";
  for (Caller caller : kCallers) {
    const auto& [want_in, want_out] = row->second.expected.at(caller);
    const Outcome got_in = row->second.call(*this, keys_.at(caller), in_);
    EXPECT_EQ(OutcomeName(got_in), OutcomeName(want_in))
        << GetParam() << " by the " << CallerName(caller) << ", inside its collection";
    const Outcome got_out =
        row->second.targeted ? row->second.call(*this, keys_.at(caller), out_) : got_in;
    EXPECT_EQ(OutcomeName(got_out), OutcomeName(want_out))
        << GetParam() << " by the " << CallerName(caller) << ", outside its collection";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryRpc, RpcAccessMatrixTest, ::testing::ValuesIn(AllMethods()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '.' || c == '<' || c == '>' || c == ' ') c = '_';
                           }
                           return name;
                         });

// The escalations of a collection-scoped admin, each refused.
class ScopedAdminTest : public RpcAccessMatrixTest {};

TEST_F(ScopedAdminTest, ScopedAdminCannotReachBeyondItsCollections) {
  const std::string& scoped = keys_[Caller::kScopedAdmin];
  // A key for the unrestricted admin would make it one.
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::CreateApiKeyRequest req;
    req.set_principal("admin");
    v1::CreateApiKeyResponse reply;
    EXPECT_EQ(admin_stub_->CreateApiKey(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE(reply.api_key().empty());
  }
  // Granting itself another collection, or everything.
  for (const std::vector<std::string>& grant :
       {std::vector<std::string>{"a", "b"}, std::vector<std::string>{}}) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::SetPrincipalCollectionsRequest req;
    req.set_principal("admin-a");
    for (const std::string& c : grant) req.add_collections(c);
    v1::SetPrincipalCollectionsResponse reply;
    EXPECT_EQ(admin_stub_->SetPrincipalCollections(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << grant.size() << " collections";
  }
  // A new admin without collections (unrestricted), or with a collection beyond its own.
  for (const std::vector<std::string>& cols :
       {std::vector<std::string>{}, std::vector<std::string>{"a", "b"}}) {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::CreatePrincipalRequest req;
    req.set_name("accomplice");
    req.set_role(v1::PRINCIPAL_ROLE_ADMIN);
    for (const std::string& c : cols) req.add_collections(c);
    v1::CreatePrincipalResponse reply;
    EXPECT_EQ(admin_stub_->CreatePrincipal(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << cols.size() << " collections";
  }
  // A principal of wider scope than its own ("a" and "b"): no keys for it, no revocation
  // of its keys, no change of its grants.
  const std::string wide_key = NewPrincipal("wide", Role::kChecker, {"a", "b"});
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::CreateApiKeyRequest req;
    req.set_principal("wide");
    v1::CreateApiKeyResponse reply;
    EXPECT_EQ(admin_stub_->CreateApiKey(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::RevokeApiKeyRequest req;
    req.set_key_id(wide_key.substr(5, 16));
    v1::RevokeApiKeyResponse reply;
    EXPECT_EQ(admin_stub_->RevokeApiKey(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::SetPrincipalCollectionsRequest req;
    req.set_principal("wide");
    req.add_collections("a");
    v1::SetPrincipalCollectionsResponse reply;
    EXPECT_EQ(admin_stub_->SetPrincipalCollections(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  // Unknown names look like names beyond its reach (no probing which exist).
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::CreateApiKeyRequest req;
    req.set_principal("nobody");
    v1::CreateApiKeyResponse reply;
    EXPECT_EQ(admin_stub_->CreateApiKey(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  // Within its collection it administers as before: a new owner of "a" and its key.
  {
    grpc::ClientContext ctx;
    testing::PrepareCall(&ctx, scoped);
    v1::CreatePrincipalRequest req;
    req.set_name("owner-a2");
    req.set_role(v1::PRINCIPAL_ROLE_OWNER);
    req.add_collections("a");
    v1::CreatePrincipalResponse reply;
    EXPECT_OK(admin_stub_->CreatePrincipal(&ctx, req, &reply));
  }
  // The unrestricted admin is untouched by all this.
  ASSERT_OK_AND_ASSIGN(Principal admin, access_->AuthenticateCredentials(
                                            CallCredentials{keys_[Caller::kFullAdmin], {}, ""}));
  EXPECT_TRUE(access_->UsableCollections(admin) == std::nullopt);
  for (const PrincipalRecord& r : access_->ListPrincipals()) {
    if (r.name == "admin-a") {
      EXPECT_EQ(r.collections, std::vector<std::string>{"a"});
    }
  }
}

}  // namespace
}  // namespace cops
