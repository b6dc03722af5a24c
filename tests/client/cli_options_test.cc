// The rules of client/cli_options.h on the real `cops` binary (COPS_BUILD_DIR), which prints
// what it parsed instead of running when COPS_CLI_DRY_RUN is set. Every repeatable option is
// found from the command line's definition (its own list of them), not from a list here.

#include "client/cli_options.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/files.h"

namespace cops {
namespace {

using nlohmann::json;

struct CopsRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string Quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CopsRun DryRun(const std::vector<std::string>& args) {
  std::string command = "COPS_CLI_DRY_RUN=1 " + testing::BuildDir() + "/client/cops";
  for (const std::string& a : args) command += " " + Quote(a);
  CopsRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) run.output += buf;
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// The dry run's JSON line (an admin command also reports, on stderr, that it reached no
// server).
json ParsedOf(const CopsRun& run) {
  const size_t at = run.output.find("{\"command\"");
  if (at == std::string::npos) return json();
  return json::parse(run.output.substr(at, run.output.find('\n', at) - at), nullptr, false);
}

TEST(CliOptionsTest, CheckTakesOneCollectionPerOccurrence) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"check", "--collection", "su", "a.txt", "b.txt"},
        std::vector<std::string>{"check", "--collection=su", "a.txt", "b.txt"}}) {
    const CopsRun run = DryRun(args);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const json parsed = ParsedOf(run);
    EXPECT_EQ(parsed["command"], json({"check"}));
    EXPECT_EQ(parsed["options"]["--collection"], json({"su"})) << run.output;
    EXPECT_EQ(parsed["options"]["paths"], json({"a.txt", "b.txt"})) << run.output;
  }
  const CopsRun repeated = DryRun({"check", "--collection", "su", "a.txt", "--collection", "acm"});
  ASSERT_EQ(repeated.exit_code, 0) << repeated.output;
  EXPECT_EQ(ParsedOf(repeated)["options"]["--collection"], json({"su", "acm"}));
}

// Each repeatable option, given twice and followed by one more word: it holds the two values,
// and the word goes to the command's positional argument or is refused (exit 2 naming it).
// (A dry run requires nothing, so that each command parses with only these words.)
TEST(CliOptionsTest, EveryRepeatableOptionTakesOneValuePerOccurrence) {
  const CopsRun listing = DryRun({"health"});
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  const json repeatable = ParsedOf(listing)["repeatable"];
  // At least check, compare, admin principal create and grant take --collection.
  ASSERT_GE(repeatable.size(), 4u) << listing.output;
  for (const json& words : repeatable) {
    std::vector<std::string> args = words.get<std::vector<std::string>>();
    const std::string option = args.back();
    args.pop_back();
    SCOPED_TRACE(json(words).dump());
    for (const std::string& w : {option, std::string("v1"), option, std::string("v2"),
                                 std::string("EXTRA")}) {
      args.push_back(w);
    }
    const CopsRun run = DryRun(args);
    if (run.exit_code == 0) {
      const json parsed = ParsedOf(run);
      EXPECT_EQ(parsed["options"][option], json({"v1", "v2"})) << run.output;
      bool extra_positional = false;
      for (const auto& [name, values] : parsed["options"].items()) {
        if (!name.starts_with("-") && values == json({"EXTRA"})) extra_positional = true;
      }
      EXPECT_TRUE(extra_positional) << run.output;
    } else {
      // Refused as a word no option or argument of the command takes.
      EXPECT_EQ(run.exit_code, 2) << run.output;
      EXPECT_NE(run.output.find("EXTRA"), std::string::npos) << run.output;
    }
  }
}

}  // namespace
}  // namespace cops
