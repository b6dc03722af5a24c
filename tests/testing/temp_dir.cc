#include "tests/testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

namespace cops::testing {

TempDir::TempDir(std::string_view prefix) {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / (std::string(prefix) + "_XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "TempDir: cannot create %s: %s\n", tmpl.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = std::move(tmpl);
}

TempDir::~TempDir() { Remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

std::string TempDir::Join(std::string_view name) const { return (path_ / name).string(); }

void TempDir::Remove() {
  if (path_.empty()) return;
  // COPS_TEST_KEEP_DIRS=1 keeps it for a post-mortem (a soak's logs and data).
  const char* keep = std::getenv("COPS_TEST_KEEP_DIRS");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) {
    std::fprintf(stderr, "TempDir: kept %s\n", path_.c_str());
    path_.clear();
    return;
  }
  std::error_code ec;  // best effort: a leftover directory must not fail the test
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace cops::testing
