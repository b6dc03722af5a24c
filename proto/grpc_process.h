// What a process that speaks gRPC does once, before its first channel or server.
#ifndef COPS_PROTO_GRPC_PROCESS_H_
#define COPS_PROTO_GRPC_PROCESS_H_

namespace cops {

// Runs, once and early, the lazy initialisations that would otherwise run inside gRPC's
// connect path and overwrite `errno` there.
//
// gRPC 1.51 (Debian 12) calls connect(), then creates its fd object (which takes absl
// mutexes), and only then reads errno to tell "in progress" from "failed"
// (src/core/lib/iomgr/tcp_client_posix.cc, grpc_tcp_client_create_from_prepared_fd). The
// first contended absl::Mutex of a process counts the CPUs, and on a machine without /sys
// (a chroot, some containers) glibc's get_nprocs() leaves ENOENT in errno after falling back
// to /proc. A connect that was merely in progress then fails with UNAVAILABLE "ipv4:...: No
// such file or directory". Counting the CPUs here, before any channel exists, makes that
// later lock read a cached value and leave errno alone. Safe to call more than once.
void PrepareGrpcProcess();

}  // namespace cops

#endif  // COPS_PROTO_GRPC_PROCESS_H_
