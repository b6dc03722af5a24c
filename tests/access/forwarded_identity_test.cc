// The parsing of --trusted-nodes and the forwarded identity's metadata. The refusal of a
// forwarded identity from a non-node is tested end to end, with real certificates, in
// tests/server/router_test.cc (AuthenticatedClusterTest).

#include "access/forwarded_identity.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

TEST(ParseTrustedNodesTest, NamesAndFingerprintsWithOrWithoutColons) {
  const std::string hex(64, 'A');
  std::string colons;
  for (size_t i = 0; i < 64; i += 2) colons += (i == 0 ? "" : ":") + hex.substr(i, 2);
  ASSERT_OK_AND_ASSIGN(TrustedNodes nodes,
                       ParseTrustedNodes({"router-1", "sha256:" + hex, "sha256:" + colons}));
  EXPECT_EQ(nodes.names, std::vector<std::string>{"router-1"});
  EXPECT_EQ(nodes.fingerprints, (std::vector<std::string>{std::string(64, 'a'),
                                                           std::string(64, 'a')}));
}

TEST(ParseTrustedNodesTest, AMalformedFingerprintOrAnEmptyEntryIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(ParseTrustedNodes({"sha256:abc"}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(ParseTrustedNodes({"sha256:" + std::string(64, 'g')}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseTrustedNodes({""}).status()));
  ASSERT_OK_AND_ASSIGN(TrustedNodes none, ParseTrustedNodes({}));
  EXPECT_TRUE(none.empty());
}

TEST(ForwardedIdentityMetadataTest, NamesThePrincipalItsRoleAndEachCollection) {
  Principal carol{"carol", Role::kChecker, {"a", "b"}, {}};
  const std::vector<std::pair<std::string, std::string>> expected = {
      {kForwardedPrincipalHeader, "carol"},
      {kForwardedRoleHeader, "checker"},
      {kForwardedCollectionHeader, "a"},
      {kForwardedCollectionHeader, "b"}};
  EXPECT_EQ(ForwardedIdentityMetadata(carol), expected);
}

}  // namespace
}  // namespace cops
