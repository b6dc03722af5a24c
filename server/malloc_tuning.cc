#include "server/malloc_tuning.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace cops {

void ExecWithMallocTunables(char** argv) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (setenv("GLIBC_TUNABLES", kCopsdMallocTunables, /*overwrite=*/1) != 0) return;
  // This binary's path even when started through a relative path or $PATH: executed by that
  // path the process keeps its name (/proc/PID/comm, what ps, top, pgrep and systemd show),
  // which "/proc/self/exe" would turn into "exe". Only a binary replaced on disk since
  // (" (deleted)") runs again through /proc/self/exe.
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  constexpr std::string_view kDeleted = " (deleted)";
  if (length > 0 && !std::string_view(path, static_cast<size_t>(length)).ends_with(kDeleted)) {
    path[length] = '\0';
    execv(path, argv);
  }
  execv("/proc/self/exe", argv);
  // Still here: no /proc, or no exec allowed. The variable stays, harmless: the converter
  // workers copsd starts get an empty environment.
}

}  // namespace cops
