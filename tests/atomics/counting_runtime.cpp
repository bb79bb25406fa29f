// SPDX-License-Identifier: MIT
// A stand-in for the ThreadSanitizer runtime that only counts (see atomic_counts.hpp). This file
// is compiled WITHOUT -fsanitize=thread: its own atomics are the real operations, not counted.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "atomic_counts.hpp"

namespace txpath::atomic_counts {
namespace {

// relaxed (all accesses below): counters and switches of a test harness, read after the window
// is closed by the thread that opened it; the counted threads publish nothing through them.
std::atomic<bool> g_on{false};
std::atomic<bool> g_instrumented{false};
struct SharedCounts {
  std::atomic<uint64_t> rmw{0}, seq_cst_stores{0}, seq_cst_fences{0}, mutex_ops{0},
      cond_signals{0}, futex_calls{0};
};
SharedCounts g_others;
constinit thread_local Counts t_self{};
constinit thread_local bool t_is_self = false;

enum class Kind { rmw, seq_cst_store, seq_cst_fence, mutex_op, cond_signal, futex_call };
constexpr std::array<std::string_view, 6> kind_names = {
    "RMW", "seq_cst store", "seq_cst fence", "mutex op", "cond signal", "futex call"};

uint64_t& self_field(Kind k) noexcept {
  switch (k) {
    case Kind::rmw: return t_self.rmw;
    case Kind::seq_cst_store: return t_self.seq_cst_stores;
    case Kind::seq_cst_fence: return t_self.seq_cst_fences;
    case Kind::mutex_op: return t_self.mutex_ops;
    case Kind::cond_signal: return t_self.cond_signals;
    case Kind::futex_call: break;
  }
  return t_self.futex_calls;
}

std::atomic<uint64_t>& others_field(Kind k) noexcept {
  switch (k) {
    case Kind::rmw: return g_others.rmw;
    case Kind::seq_cst_store: return g_others.seq_cst_stores;
    case Kind::seq_cst_fence: return g_others.seq_cst_fences;
    case Kind::mutex_op: return g_others.mutex_ops;
    case Kind::cond_signal: return g_others.cond_signals;
    case Kind::futex_call: break;
  }
  return g_others.futex_calls;
}

// Call sites on the counting thread, while start(true) is on: a small table, filled in order.
constexpr std::size_t kMaxSites = 256;
std::array<Site, kMaxSites> g_sites{};
std::size_t g_site_count = 0;  // written only by the counting thread, read after stop()
bool g_record_sites = false;   // set and cleared by the counting thread
bool g_self_paused = false;    // likewise (pause_self())

void record_site(Kind k, const void* pc) noexcept {
  const auto where = reinterpret_cast<uintptr_t>(pc);
  const std::string_view kind = kind_names[static_cast<std::size_t>(k)];
  for (std::size_t i = 0; i < g_site_count; ++i) {
    if (g_sites[i].pc == where && g_sites[i].kind == kind) {
      ++g_sites[i].count;
      return;
    }
  }
  if (g_site_count < kMaxSites) g_sites[g_site_count++] = Site{.pc = where, .kind = kind, .count = 1};
}

void count(Kind k, const void* pc) noexcept {
  if (!g_on.load(std::memory_order_relaxed)) return;
  if (t_is_self) {
    if (g_self_paused) return;
    ++self_field(k);
    if (g_record_sites) record_site(k, pc);
  } else {
    others_field(k).fetch_add(1, std::memory_order_relaxed);
  }
}

// The instrumented code passes C++ memory orders as 0..5 (relaxed .. seq_cst); GCC may set
// flag bits above them for __sync builtins.
constexpr int kSeqCst = 5;
bool is_seq_cst(int mo) noexcept { return (mo & 0xff) == kSeqCst; }

// The C library's definition of an interposed function, looked up on first use and kept in the
// caller's constant-initialised slot: a static with a dynamic initialiser would have a guard, and
// a guard may wait through syscall(SYS_futex), which is interposed too.
template <class Fn>
Fn real(std::atomic<void*>& slot, const char* name) noexcept {
  void* f = slot.load(std::memory_order_relaxed);  // relaxed: every thread stores the same value
  if (f == nullptr) {
    f = dlsym(RTLD_NEXT, name);
    if (f == nullptr) {
      std::fprintf(stderr, "counting runtime: cannot find %s in the C library\n", name);
      std::abort();
    }
    slot.store(f, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(f);
}

}  // namespace

void start(bool record_sites) noexcept {
  t_self = Counts{};
  t_is_self = true;
  g_site_count = 0;
  g_record_sites = record_sites;
  g_self_paused = false;
  for (auto* c : {&g_others.rmw, &g_others.seq_cst_stores, &g_others.seq_cst_fences,
                  &g_others.mutex_ops, &g_others.cond_signals, &g_others.futex_calls}) {
    c->store(0, std::memory_order_relaxed);
  }
  g_on.store(true, std::memory_order_relaxed);
}

void pause_self() noexcept { g_self_paused = true; }

Result stop() noexcept {
  g_on.store(false, std::memory_order_relaxed);
  t_is_self = false;
  g_record_sites = false;
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return Result{.self = t_self,
                .others = Counts{.rmw = get(g_others.rmw),
                                 .seq_cst_stores = get(g_others.seq_cst_stores),
                                 .seq_cst_fences = get(g_others.seq_cst_fences),
                                 .mutex_ops = get(g_others.mutex_ops),
                                 .cond_signals = get(g_others.cond_signals),
                                 .futex_calls = get(g_others.futex_calls)}};
}

std::span<const Site> sites() noexcept { return {g_sites.data(), g_site_count}; }

bool instrumented() noexcept { return g_instrumented.load(std::memory_order_relaxed); }

}  // namespace txpath::atomic_counts

using txpath::atomic_counts::count;
using txpath::atomic_counts::is_seq_cst;
using txpath::atomic_counts::Kind;
using txpath::atomic_counts::real;

template <class T>
int compare_exchange(volatile T* a, T* expected, T desired) noexcept {
  return __atomic_compare_exchange_n(a, expected, desired, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

// --- the ThreadSanitizer entry points the instrumented library calls ----------------------------
extern "C" {

void __tsan_init() {
  txpath::atomic_counts::g_instrumented.store(true, std::memory_order_relaxed);
}

// Plain memory accesses and function entry/exit: GCC instruments them whatever the flags; clang
// does not with the flags CMakeLists.txt passes. Nothing to count.
#define TXPATH_NOOP_ACCESS(name) \
  void name(void*) {}
#define TXPATH_NOOP_ACCESS_SIZES(prefix)                                          \
  TXPATH_NOOP_ACCESS(prefix##1) TXPATH_NOOP_ACCESS(prefix##2) TXPATH_NOOP_ACCESS(prefix##4) \
  TXPATH_NOOP_ACCESS(prefix##8) TXPATH_NOOP_ACCESS(prefix##16)
TXPATH_NOOP_ACCESS_SIZES(__tsan_read)
TXPATH_NOOP_ACCESS_SIZES(__tsan_write)
TXPATH_NOOP_ACCESS_SIZES(__tsan_unaligned_read)
TXPATH_NOOP_ACCESS_SIZES(__tsan_unaligned_write)
TXPATH_NOOP_ACCESS_SIZES(__tsan_volatile_read)
TXPATH_NOOP_ACCESS_SIZES(__tsan_volatile_write)
TXPATH_NOOP_ACCESS(__tsan_func_entry)
void __tsan_func_exit() {}
void __tsan_read_range(void*, unsigned long) {}
void __tsan_write_range(void*, unsigned long) {}
void __tsan_vptr_update(void*, void*) {}
void __tsan_vptr_read(void*) {}

// Each atomic does the real operation (seq_cst: never weaker than what the code asked for) and
// counts it.
#define TXPATH_ATOMIC_RMW(bits, T, op, builtin)                      \
  T __tsan_atomic##bits##_##op(volatile T* a, T v, int) {           \
    count(Kind::rmw, __builtin_return_address(0));                  \
    return builtin(a, v, __ATOMIC_SEQ_CST);                         \
  }
#define TXPATH_ATOMICS(bits, T)                                                              \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                   \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                             \
  }                                                                                          \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int mo) {                             \
    if (is_seq_cst(mo)) count(Kind::seq_cst_store, __builtin_return_address(0));             \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                \
  }                                                                                          \
  TXPATH_ATOMIC_RMW(bits, T, exchange, __atomic_exchange_n)                                  \
  TXPATH_ATOMIC_RMW(bits, T, fetch_add, __atomic_fetch_add)                                  \
  TXPATH_ATOMIC_RMW(bits, T, fetch_sub, __atomic_fetch_sub)                                  \
  TXPATH_ATOMIC_RMW(bits, T, fetch_and, __atomic_fetch_and)                                  \
  TXPATH_ATOMIC_RMW(bits, T, fetch_or, __atomic_fetch_or)                                    \
  TXPATH_ATOMIC_RMW(bits, T, fetch_xor, __atomic_fetch_xor)                                  \
  TXPATH_ATOMIC_RMW(bits, T, fetch_nand, __atomic_fetch_nand)                                \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v, int,    \
                                                    int) {                                   \
    count(Kind::rmw, __builtin_return_address(0));                                           \
    return compare_exchange(a, expected, v);                                                 \
  }                                                                                          \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v, int,      \
                                                  int) {                                     \
    count(Kind::rmw, __builtin_return_address(0));                                           \
    return compare_exchange(a, expected, v);                                                 \
  }                                                                                          \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int, int) {   \
    count(Kind::rmw, __builtin_return_address(0));                                           \
    compare_exchange(a, &expected, v);                                                       \
    return expected;                                                                         \
  }
TXPATH_ATOMICS(8, int8_t)
TXPATH_ATOMICS(16, int16_t)
TXPATH_ATOMICS(32, int32_t)
TXPATH_ATOMICS(64, int64_t)

void __tsan_atomic_thread_fence(int mo) {
  if (is_seq_cst(mo)) count(Kind::seq_cst_fence, __builtin_return_address(0));
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// --- glibc's locks and the futex system call, interposed and forwarded ---------------------------
// Each counts a call, then forwards it to the C library's definition.
#define TXPATH_INTERPOSE(name, Arg, kind)                                 \
  int name(Arg* arg) noexcept {                                           \
    static std::atomic<void*> slot{nullptr};                              \
    count(kind, __builtin_return_address(0));                             \
    return real<int (*)(Arg*)>(slot, #name)(arg);                         \
  }
TXPATH_INTERPOSE(pthread_mutex_lock, pthread_mutex_t, Kind::mutex_op)
TXPATH_INTERPOSE(pthread_mutex_trylock, pthread_mutex_t, Kind::mutex_op)
TXPATH_INTERPOSE(pthread_mutex_unlock, pthread_mutex_t, Kind::mutex_op)
TXPATH_INTERPOSE(pthread_cond_signal, pthread_cond_t, Kind::cond_signal)
TXPATH_INTERPOSE(pthread_cond_broadcast, pthread_cond_t, Kind::cond_signal)

// libstdc++'s std::atomic wait/notify calls syscall(SYS_futex, ...) from inline code. Every
// system call glibc's syscall() takes has at most six arguments, all register-sized.
long syscall(long number, ...) noexcept {
  static std::atomic<void*> slot{nullptr};
  const auto next = real<long (*)(long, ...)>(slot, "syscall");
  va_list ap;
  va_start(ap, number);
  long args[6];
  for (long& a : args) a = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_futex) count(Kind::futex_call, __builtin_return_address(0));
  return next(number, args[0], args[1], args[2], args[3], args[4], args[5]);
}

}  // extern "C"
