#include "storage/rocks_dir.h"

#include <filesystem>
#include <memory>

#include "core/strings.h"
#include "rocksdb/env.h"
#include "storage/rocks_status.h"

namespace cops {

absl::Status CreateDirDurably(rocksdb::Env& env, const std::string& path) {
  // "a/b/" names "a/b", whose parent is "a".
  const std::filesystem::path dir = std::filesystem::path(path).lexically_normal();
  const std::filesystem::path name = dir.has_filename() ? dir : dir.parent_path();
  rocksdb::Status s = env.CreateDirIfMissing(name.string());
  if (!s.ok()) return FromRocks(s, StrCat("creating directory ", name.string()));
  const std::string parent = name.has_parent_path() ? name.parent_path().string() : ".";
  std::unique_ptr<rocksdb::Directory> handle;
  s = env.NewDirectory(parent, &handle);
  if (s.ok()) s = handle->Fsync();
  return FromRocks(s, StrCat("syncing directory ", parent));
}

}  // namespace cops
