#ifndef COPS_EVAL_EVAL_SET_H_
#define COPS_EVAL_EVAL_SET_H_

// An evaluation set on disk: a folder of source documents (registered), a folder of test
// documents (checked) and a ground-truth file naming, per test, its category, the source it
// was derived from ("-" for none) and whether a violation is expected. Format of the ground
// truth: docs/accuracy.md ("Ground-truth format").
//
// Thread-safety: plain value types.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cops::eval {

struct SourceDoc {
  std::string name;  // file name inside the sources folder
  std::string text;
};

struct TestDoc {
  std::string name;      // file name inside the tests folder
  std::string category;  // e.g. "exact", "key_block", "unrelated"
  int source = -1;       // index into EvalSet::sources; -1 when derived from none
  bool expected_violation = false;
  std::string text;
};

struct EvalSet {
  std::vector<SourceDoc> sources;  // sorted by name; DocId of sources[i] is i + 1
  std::vector<TestDoc> tests;      // in ground-truth order
};

// Reads every regular file of `sources_dir` (sorted by name), and the tests listed in
// `truth_path`. INVALID_ARGUMENT names the file and line of a malformed ground-truth line or
// a source name that is not in `sources_dir`; NOT_FOUND names a missing file or folder.
absl::StatusOr<EvalSet> LoadEvalSet(const std::string& sources_dir, const std::string& tests_dir,
                                    const std::string& truth_path);

// LoadEvalSet(dir/sources, dir/tests, dir/truth.tsv): the layout eval/make_set.py writes.
absl::StatusOr<EvalSet> LoadEvalSetDir(const std::string& dir);

}  // namespace cops::eval

#endif  // COPS_EVAL_EVAL_SET_H_
