#include "eval/eval_set.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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
    auto text = ReadFile(p);
    if (!text.ok()) return text.status();
    index_of[p.filename().string()] = static_cast<int>(set.sources.size());
    set.sources.push_back({p.filename().string(), *std::move(text)});
  }

  auto truth = ReadFile(truth_path);
  if (!truth.ok()) return truth.status();
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*truth, '\n')) {
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
    auto text = ReadFile(fs::path(tests_dir) / t.name);
    if (!text.ok()) return text.status();
    t.text = *std::move(text);
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
