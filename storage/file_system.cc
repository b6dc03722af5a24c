#include "storage/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/status_macros.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError("cannot " + what + " " + path + ": " + std::strerror(errno));
}

absl::Status CodeError(const std::string& what, const std::string& path,
                       const std::error_code& ec) {
  return absl::InternalError("cannot " + what + " " + path + ": " + ec.message());
}

// Writes all of `data` at `offset` (pwrite) or at the file position (offset < 0).
bool WriteAll(int fd, std::string_view data, off_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = offset < 0 ? ::write(fd, data.data() + done, data.size() - done)
                                 : ::pwrite(fd, data.data() + done, data.size() - done,
                                            offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::NotFoundError("cannot read " + path + ": " + std::strerror(errno));
    std::string out;
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        absl::Status error = ErrnoError("read", path);
        ::close(fd);
        return error;
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  absl::Status WriteFile(const std::string& path, std::string_view data, uint32_t mode,
                         bool exclusive) override {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
    const int fd = ::open(path.c_str(), flags, static_cast<mode_t>(mode));
    if (fd < 0) {
      if (errno == EEXIST) return absl::AlreadyExistsError(path + " already exists");
      return ErrnoError("create", path);
    }
    return WriteSyncClose(fd, path, data, -1);
  }

  absl::Status ZeroFill(const std::string& path) override {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec) return CodeError("stat", path, ec);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open", path);
    return WriteSyncClose(fd, path, std::string(size, '\0'), 0);
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename", from + " to " + to);
    return absl::OkStatus();
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) return CodeError("remove", path, ec);
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& path) override {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) return CodeError("create directory", path, ec);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override {
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return CodeError("list", dir, ec);
    return names;
  }

  bool Exists(const std::string& path) override {
    std::error_code ec;
    return fs::exists(path, ec);
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open", dir);
    const int rc = ::fsync(fd);
    absl::Status status = rc == 0 ? absl::OkStatus() : ErrnoError("fsync", dir);
    ::close(fd);
    return status;
  }

  absl::Status MakeOwnerOnly(const std::string& path) override {
    std::error_code ec;
    COPS_RETURN_IF_ERROR(SetOwnerOnly(path, fs::symlink_status(path, ec)));
    if (ec) return CodeError("stat", path, ec);
    if (!fs::is_directory(fs::symlink_status(path, ec))) return absl::OkStatus();
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      COPS_RETURN_IF_ERROR(SetOwnerOnly(it->path().string(), it->symlink_status(ec)));
    }
    if (ec) return CodeError("list", path, ec);
    return absl::OkStatus();
  }

 private:
  // chmod 0700 for a directory, 0600 for any other file but a symbolic link.
  static absl::Status SetOwnerOnly(const std::string& path, const fs::file_status& status) {
    if (fs::is_symlink(status)) return absl::OkStatus();
    const mode_t mode = fs::is_directory(status) ? 0700 : 0600;
    if (::chmod(path.c_str(), mode) != 0) return ErrnoError("chmod", path);
    return absl::OkStatus();
  }

  static absl::Status WriteSyncClose(int fd, const std::string& path, std::string_view data,
                                     off_t offset) {
    absl::Status status;
    if (!WriteAll(fd, data, offset)) {
      status = ErrnoError("write", path);
    } else if (::fsync(fd) != 0) {
      status = ErrnoError("fsync", path);
    }
    if (::close(fd) != 0 && status.ok()) status = ErrnoError("close", path);
    return status;
  }
};

}  // namespace

FileSystem* FileSystem::Default() {
  static FileSystem* const posix = new PosixFileSystem();
  return posix;
}

std::string ParentDir(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

absl::Status WriteFileDurably(FileSystem& fs, const std::string& path, std::string_view data,
                              uint32_t mode) {
  const std::string tmp = path + ".tmp";
  COPS_RETURN_IF_ERROR(fs.WriteFile(tmp, data, mode, /*exclusive=*/false));
  COPS_RETURN_IF_ERROR(fs.Rename(tmp, path));
  return fs.SyncDir(ParentDir(path));
}

absl::Status CreateFileDurably(FileSystem& fs, const std::string& path, std::string_view data,
                               uint32_t mode) {
  COPS_RETURN_IF_ERROR(fs.WriteFile(path, data, mode, /*exclusive=*/true));
  return fs.SyncDir(ParentDir(path));
}

}  // namespace cops
