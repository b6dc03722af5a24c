#include "tests/testing/files.h"

#include <fstream>
#include <sstream>

namespace cops::testing {

std::string ReadFileOrEmpty(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace cops::testing
