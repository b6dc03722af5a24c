// Linked into every test binary (tests/CMakeLists.txt): prepares the process for gRPC before
// main, as copsd, cops and cops-milter do first thing (proto/grpc_process.h says why).
#include "proto/grpc_process.h"

namespace {

[[maybe_unused]] const bool kPrepared = (cops::PrepareGrpcProcess(), true);

}  // namespace
