#include "server/malloc_tuning.h"

#include <unistd.h>

#include <cstdlib>

namespace cops {

void ExecWithMallocTunables(char** argv) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (setenv("GLIBC_TUNABLES", kCopsdMallocTunables, /*overwrite=*/1) != 0) return;
  // /proc/self/exe: this binary even when started through a relative path or $PATH, or
  // replaced on disk since.
  execv("/proc/self/exe", argv);
  // Still here: no /proc, or no exec allowed. The variable stays, harmless: the converter
  // workers copsd starts get an empty environment.
}

}  // namespace cops
