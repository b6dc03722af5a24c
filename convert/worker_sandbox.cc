#include "convert/worker_sandbox.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "convert/converter.h"
#include "core/strings.h"

namespace cops {
namespace {

void Note(std::string* problems, std::string_view what, int err) {
  StrAppend(problems, problems->empty() ? "" : "; ", what, ": ", std::strerror(err));
}

void HardLimit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  setrlimit(resource, &limit);
}

// Files the libraries read on first use, read now while open() still works everywhere.
void PreloadLibraryData() {
  // libmagic's magic.mgc (DetectFormat asks libmagic about anything but clean UTF-8).
  (void)DetectFormat(std::string_view("\xff\xfe\x00\x01 preload", 12));
  // gmime's initialisation, and glibc's iconv modules for the common mail charsets.
  (void)ConvertInProcess(
      "From: a@example.org\r\nSubject: =?iso-8859-1?q?caf=E9?=\r\nMIME-Version: 1.0\r\n"
      "Content-Type: text/plain; charset=windows-1252\r\n\r\ncaf\xe9\r\n",
      DocumentFormat::kEmail);
}

// Read-only access beneath `path` (a directory or a file).
bool AllowRead(int ruleset, const char* path, bool directory) {
  const int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;  // nothing there to allow
  landlock_path_beneath_attr beneath{};
  beneath.parent_fd = fd;
  beneath.allowed_access =
      LANDLOCK_ACCESS_FS_READ_FILE | (directory ? LANDLOCK_ACCESS_FS_READ_DIR : 0);
  const long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
  close(fd);
  return rc == 0;
}

bool EnterLandlock(std::string* problems) {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    Note(problems, "landlock", errno);
    return false;
  }
  landlock_ruleset_attr attr{};
  // Every file-system right of ABI 1 is handled (denied unless a rule grants it); later
  // rights (refer, truncate) follow from these: nothing can be created or written.
  attr.handled_access_fs =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
      LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
      LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
      LANDLOCK_ACCESS_FS_MAKE_SYM;
  const int ruleset =
      static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
  if (ruleset < 0) {
    Note(problems, "landlock ruleset", errno);
    return false;
  }
  bool ok = true;
  // Libraries and their data (ICU, poppler-data, libmagic, fonts, iconv modules), fontconfig's
  // configuration and cache, and the loader's cache for the modules glibc loads late.
  for (const char* dir : {"/usr", "/etc/fonts", "/var/cache/fontconfig"}) {
    ok = ok && AllowRead(ruleset, dir, /*directory=*/true);
  }
  ok = ok && AllowRead(ruleset, "/etc/ld.so.cache", /*directory=*/false);
  ok = ok && syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  if (!ok) Note(problems, "landlock rules", errno);
  close(ruleset);
  return ok;
}

bool EnterNetworkNamespace(std::string* problems) {
  if (unshare(CLONE_NEWNET) == 0) return true;
  // Without CAP_SYS_ADMIN, a user namespace of our own grants it for the new one.
  const int first = errno;
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) return true;
  Note(problems, "no network namespace (unshare)", first == EPERM ? errno : first);
  return false;
}

struct SeccompReleaser {
  void operator()(void* ctx) const { seccomp_release(static_cast<scmp_filter_ctx>(ctx)); }
};

bool InstallSeccomp(bool allow_open, std::string* problems) {
  std::unique_ptr<void, SeccompReleaser> ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (ctx == nullptr) {
    Note(problems, "seccomp_init", ENOMEM);
    return false;
  }
  scmp_filter_ctx f = ctx.get();
  int rc = 0;
  auto allow = [&](int nr) { rc = rc != 0 ? rc : seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0); };
  for (int nr :
       {// I/O on the descriptors it holds (its request socket, files opened read-only).
        SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(pread64),
        SCMP_SYS(lseek), SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
        SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup3), SCMP_SYS(getdents64), SCMP_SYS(readlink),
        SCMP_SYS(readlinkat), SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2),
        SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(getcwd),
        // Memory.
        SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(mprotect),
        SCMP_SYS(madvise), SCMP_SYS(mincore),
        // Threads (glib, poppler), their locks and signals to itself.
        SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(get_robust_list), SCMP_SYS(rseq),
        SCMP_SYS(set_tid_address), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
        SCMP_SYS(membarrier), SCMP_SYS(eventfd2), SCMP_SYS(tgkill), SCMP_SYS(gettid),
        SCMP_SYS(getpid), SCMP_SYS(prctl), SCMP_SYS(arch_prctl), SCMP_SYS(sigaltstack),
        SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
        // Time, limits, identity, randomness.
        SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday),
        SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep), SCMP_SYS(getrusage), SCMP_SYS(getrlimit),
        SCMP_SYS(setrlimit), SCMP_SYS(times), SCMP_SYS(uname), SCMP_SYS(sysinfo), SCMP_SYS(getuid),
        SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(getrandom),
        SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group)}) {
    allow(nr);
  }
  // Limits on itself only (pid 0), never another process's.
  if (rc == 0) {
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
                          scmp_arg_cmp{0, SCMP_CMP_EQ, 0, 0});
  }
  // New threads, not processes: clone with CLONE_THREAD; clone3 (whose flags seccomp cannot
  // read) answers ENOSYS so that glibc falls back to clone.
  if (rc == 0) {
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                          scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD});
  }
  if (rc == 0) rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Opening for reading only (Landlock confines where); nothing is opened for writing.
  if (rc == 0 && allow_open) {
    const scmp_datum_t kWriting = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                          scmp_arg_cmp{2, SCMP_CMP_MASKED_EQ, kWriting, O_RDONLY});
    if (rc == 0) {
      rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
                            scmp_arg_cmp{1, SCMP_CMP_MASKED_EQ, kWriting, O_RDONLY});
    }
  }
  if (rc == 0) rc = seccomp_load(f);
  if (rc != 0) {
    Note(problems, "seccomp", -rc);
    return false;
  }
  return true;
}

}  // namespace

WorkerSandboxReport EnterWorkerSandbox() {
  WorkerSandboxReport report;
  // Under Landlock the libraries still read their data under /usr when they first need it;
  // without it no open will be allowed, so it is read now (at a few milliseconds per start).
  if (syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1) {
    PreloadLibraryData();
  }
  HardLimit(RLIMIT_CORE, 0);
  HardLimit(RLIMIT_FSIZE, 0);
  HardLimit(RLIMIT_NOFILE, 64);
  report.network_namespace = EnterNetworkNamespace(&report.problems);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Note(&report.problems, "no_new_privs", errno);
  report.landlock = EnterLandlock(&report.problems);
  // Without Landlock, a read-only open could still reach the data directory: no open at all.
  report.seccomp = InstallSeccomp(/*allow_open=*/report.landlock, &report.problems);
  return report;
}

}  // namespace cops
