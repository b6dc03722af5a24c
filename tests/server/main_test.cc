// The copsd binary as an operator runs it, outside any service manager: what it leaves on
// disk. (Flags: server_config_test.cc; the whole server under load: overload_test.cc.)

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/load_generator.h"
#include "gtest/gtest.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

TEST(CopsdTest, EveryFileOfTheDataDirectoryIsTheOwnersAlone) {
  testing::TempDir dir("copsd_files");
  ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {}));
  ClientOptions options;
  options.target = copsd->address();
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(options));
  v1::Document doc;
  doc.set_content(SyntheticText(/*seed=*/9, 1, 2000));
  doc.mutable_metadata()->set_title("stored text");
  ASSERT_OK(client->Register(doc).status());
  client.reset();
  EXPECT_EQ(copsd->Stop(), 0) << copsd->Log();

  // The index (texts included), its key, the access store: none readable by other users.
  const std::filesystem::path data = dir.path() / "data";
  ASSERT_TRUE(std::filesystem::exists(data / "index"));
  EXPECT_EQ(testing::NotOwnerOnly(data), std::vector<std::string>{});
}

}  // namespace
}  // namespace cops
