#ifndef COPS_CONVERT_WORKER_SANDBOX_H_
#define COPS_CONVERT_WORKER_SANDBOX_H_

// Internal to cops-convert-worker: the confinement it puts itself in before it reads any
// document, so that a parser bug a hostile document triggers can do little beyond failing
// that document. In order:
//   - without Landlock (below), the libraries' lazily read files (libmagic's magic.mgc,
//     gmime's, glibc's iconv modules) are loaded first;
//   - hard resource limits: no core files, no file written (RLIMIT_FSIZE 0), at most 64
//     descriptors (CPU time and address space are limited per document, worker_main.cc);
//   - a new network namespace (unshare(CLONE_NEWNET), with a user namespace when the process
//     lacks CAP_SYS_ADMIN): no interface but a down loopback, so copsd on 127.0.0.1 is out of
//     reach even were sockets allowed. Where the kernel refuses, the seccomp filter alone
//     keeps sockets closed, and the report says so;
//   - PR_SET_NO_NEW_PRIVS;
//   - Landlock (Linux 5.13+): files may be read under /usr and /etc/fonts only (libraries,
//     fonts, ICU, poppler's and libmagic's data), nothing anywhere may be written or created:
//     a data directory's key file or RocksDB files cannot be opened;
//   - a seccomp filter (libseccomp) allowing the system calls parsing needs (memory, reading
//     and writing its descriptors, read-only open, time, threads) and refusing the rest with
//     EPERM: no socket, no connect, no exec, no fork, no ptrace, no open for writing. Without
//     Landlock, open is refused outright (what was loaded before still works).
//
// Thread-safety: call once, from main(), before any other thread exists.

#include <string>

namespace cops {

struct WorkerSandboxReport {
  bool network_namespace = false;  // in a new, empty network namespace
  bool landlock = false;           // file access confined to read-only /usr and /etc/fonts
  bool seccomp = false;            // the system call filter is installed
  std::string problems;            // what could not be set up and why ("" when everything was)
};

// Confines the calling process as above. Never fails outright: what the kernel refuses is
// reported, and the rest applies.
WorkerSandboxReport EnterWorkerSandbox();

}  // namespace cops

#endif  // COPS_CONVERT_WORKER_SANDBOX_H_
