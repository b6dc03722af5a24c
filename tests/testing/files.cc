#include "tests/testing/files.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace cops::testing {

std::string BuildDir() {
  const char* dir = std::getenv("COPS_BUILD_DIR");
  return dir != nullptr && *dir != '\0' ? dir : COPS_TESTING_BUILD_DIR;
}

std::string ReadFileOrEmpty(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> NotOwnerOnly(const std::filesystem::path& root) {
  std::vector<std::string> wrong;
  auto check = [&wrong](const std::filesystem::path& path) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) {
      wrong.push_back(path.string() + " missing");
      return;
    }
    const unsigned mode = st.st_mode & 07777;
    if (mode != (S_ISDIR(st.st_mode) ? 0700u : 0600u)) {
      std::ostringstream line;
      line << path.string() << " " << std::oct << mode;
      wrong.push_back(line.str());
    }
  };
  check(root);
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    check(it->path());
  }
  return wrong;
}

}  // namespace cops::testing
