#include "proto/grpc_process.h"

#include "absl/base/internal/sysinfo.h"

namespace cops {

void PrepareGrpcProcess() {
  // absl's mutex reads its spin count from NumCPUs() once, behind a once-flag; after this
  // call the flag is set and the count cached, so no later lock touches the file system.
  (void)absl::base_internal::NumCPUs();
}

}  // namespace cops
