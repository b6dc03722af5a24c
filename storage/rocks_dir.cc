#include "storage/rocks_dir.h"

#include <filesystem>
#include <memory>

#include "rocksdb/env.h"
#include "storage/rocks_status.h"

namespace cops {

absl::Status CreateDirDurably(rocksdb::Env& env, const std::string& path) {
  std::string dir = std::filesystem::path(path).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  rocksdb::Status s = env.CreateDirIfMissing(dir);
  if (!s.ok()) return FromRocks(s, "creating directory " + dir);
  std::string parent = std::filesystem::path(dir).parent_path().string();
  if (parent.empty()) parent = ".";
  std::unique_ptr<rocksdb::Directory> handle;
  s = env.NewDirectory(parent, &handle);
  if (s.ok()) s = handle->Fsync();
  return FromRocks(s, "syncing directory " + parent);
}

}  // namespace cops
