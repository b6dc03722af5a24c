#include "eval/eval_set.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace cops::eval {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot read ", path.string()));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

absl::StatusOr<EvalSet> LoadEvalSet(const std::string& sources_dir, const std::string& tests_dir,
                                    const std::string& truth_path) {
  EvalSet set;
  std::error_code ec;
  if (!fs::is_directory(sources_dir, ec)) {
    return absl::NotFoundError(StrCat("sources folder ", sources_dir, " does not exist"));
  }
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(sources_dir, ec)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::map<std::string, int> index_of;
  for (const fs::path& p : paths) {
    COPS_ASSIGN_OR_RETURN(std::string text, ReadFile(p));
    index_of[p.filename().string()] = static_cast<int>(set.sources.size());
    set.sources.push_back({p.filename().string(), std::move(text)});
  }

  COPS_ASSIGN_OR_RETURN(const std::string truth, ReadFile(truth_path));
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(truth, '\n')) {
    ++line_no;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    auto where = [&] { return StrCat(truth_path, ":", line_no, ": "); };
    if (f.size() != 4) {
      return absl::InvalidArgumentError(
          StrCat(where(), "expected 4 tab-separated fields, got ", f.size()));
    }
    TestDoc t;
    t.name = f[0];
    t.category = f[1];
    if (f[3] != "0" && f[3] != "1") {
      return absl::InvalidArgumentError(StrCat(where(), "violation must be 0 or 1"));
    }
    t.expected_violation = f[3] == "1";
    if (f[2] != "-") {
      auto it = index_of.find(f[2]);
      if (it == index_of.end()) {
        return absl::InvalidArgumentError(
            StrCat(where(), "source ", f[2], " is not in ", sources_dir));
      }
      t.source = it->second;
    }
    COPS_ASSIGN_OR_RETURN(t.text, ReadFile(fs::path(tests_dir) / t.name));
    set.tests.push_back(std::move(t));
  }
  return set;
}

absl::StatusOr<EvalSet> LoadEvalSetDir(const std::string& dir) {
  fs::path d(dir);
  return LoadEvalSet((d / "sources").string(), (d / "tests").string(),
                     (d / "truth.tsv").string());
}

}  // namespace cops::eval
