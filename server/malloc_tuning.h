#ifndef COPS_SERVER_MALLOC_TUNING_H_
#define COPS_SERVER_MALLOC_TUNING_H_

// glibc's malloc settings for copsd. glibc reads its tunables (GLIBC_TUNABLES) only from the
// environment at start-up, and the one that matters most has no mallopt(): a registration
// writes some 10 KB a document into fresh memory (write batch, memtable arenas, the window's
// postings), and with 4 KiB pages each page costs a fault, several microseconds on a virtual
// machine (a fifth of copsd's CPU at registration). Backing the heap with transparent huge
// pages (glibc.malloc.hugetlb=1, where the kernel's THP mode is "madvise" or "always") and
// keeping buffers of up to 32 MiB in the heap instead of fresh mmap()s take copsd's faults
// for 10^5 documents from ~370,000 to ~150,000 (docs/performance.md, "Registration"). The
// trim threshold stays glibc's: a larger one saved more faults (~100,000 at 16 MiB) but kept
// more of a burst's memory in the threads' heaps, whose tops malloc_trim() does not shrink
// (the heap trimmer: heap_trimmer.h).
//
// Thread-safety: call first thing in main(), before any thread starts.

namespace cops {

// What copsd sets when GLIBC_TUNABLES is absent.
inline constexpr char kCopsdMallocTunables[] =
    "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432";

// When the environment has no GLIBC_TUNABLES, sets it to kCopsdMallocTunables and executes
// this program again with the same arguments (same process id); returns only when it does not
// (GLIBC_TUNABLES given, even empty: the operator's choice is kept; or the exec failed: copsd
// goes on with glibc's defaults).
void ExecWithMallocTunables(char** argv);

}  // namespace cops

#endif  // COPS_SERVER_MALLOC_TUNING_H_
