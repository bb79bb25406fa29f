// SPDX-License-Identifier: MIT
// The counting hook behind tests/atomics/per_packet.cpp: how many atomic read-modify-writes,
// seq_cst stores and seq_cst fences the library executes, and how many mutex, condition-variable
// and futex calls it makes, while counting is on.
//
// How: the test links a copy of the library compiled with -fsanitize=thread but WITHOUT the
// ThreadSanitizer runtime (CMakeLists.txt, target txpath_atomic_counted). The compiler turns
// every atomic operation (std::atomic, __atomic and __sync builtins) into a call to
// __tsan_atomic*; counting_runtime.cpp defines those functions — each performs the operation
// and counts it — and the no-op hooks for the plain memory accesses GCC also instruments.
// pthread_mutex_*, pthread_cond_signal/broadcast and syscall(SYS_futex) are interposed in the
// test binary and forwarded to glibc. Only the library is instrumented, not this harness.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace txpath::atomic_counts {

struct Counts {
  uint64_t rmw = 0;             // exchange, fetch_add/sub/and/or/xor/nand, compare_exchange
  uint64_t seq_cst_stores = 0;  // an xchg on x86: a locked instruction like an RMW
  uint64_t seq_cst_fences = 0;  // mfence (or a locked no-op) on x86
  uint64_t mutex_ops = 0;       // pthread_mutex_lock/trylock/unlock (std::mutex): one RMW each
                                // in glibc when uncontended
  uint64_t cond_signals = 0;    // pthread_cond_signal/broadcast (no RMW when nobody waits)
  uint64_t futex_calls = 0;     // syscall(SYS_futex, ...) made by library code (std::atomic
                                // wait/notify) — a system call each

  // Every instruction that locks a cache line on x86: what this test bounds.
  uint64_t locked() const noexcept { return rmw + seq_cst_stores + seq_cst_fences + mutex_ops; }
};

struct Result {
  Counts self;    // the thread that called start()
  Counts others;  // every other thread (service thread, drainer, ...), together
};

// Zeroes the counts and starts counting: the calling thread's operations in `self`, every other
// thread's in `others`. One counting window at a time. With record_sites, the calling thread's
// operations are also tallied per call site (sites(), after stop()).
void start(bool record_sites = false) noexcept;
// Stops counting the calling thread's operations while the other threads' go on being counted
// (e.g. while it waits for them to finish the work it handed over).
void pause_self() noexcept;
Result stop() noexcept;

// One call site of the counting thread: the return address of the counted call (inside the
// instrumented library; `addr2line -Cfi` names the function), what it did, how often.
struct Site {
  uintptr_t pc = 0;
  std::string_view kind;
  uint64_t count = 0;
};
std::span<const Site> sites() noexcept;  // of the last window opened with record_sites

// True once instrumented library code has run (its module constructor calls __tsan_init): false
// means the test was linked against an uninstrumented library and would count nothing.
bool instrumented() noexcept;

}  // namespace txpath::atomic_counts
