// SPDX-License-Identifier: MIT
// pthread_mutex_t with default attributes (glibc: a futex, spin briefly in user space then
// park in the kernel). The baseline, and the lock that degrades least when threads outnumber
// cores.
//
// Memory ordering: pthread_mutex_lock/trylock acquire, pthread_mutex_unlock releases (POSIX
// "synchronize memory"); a successful lock pairs with the unlock of the previous holder.
// ThreadSanitizer intercepts the pthread calls and models exactly that.
#pragma once

#include <pthread.h>

#include <cassert>
#include <string_view>

namespace txpath {

class alignas(64) MutexLock {
 public:
  static constexpr std::string_view kName = "mutex";

  MutexLock() noexcept {
    [[maybe_unused]] const int rc = pthread_mutex_init(&m_, nullptr);
    assert(rc == 0);
  }
  ~MutexLock() {
    [[maybe_unused]] const int rc = pthread_mutex_destroy(&m_);
    assert(rc == 0);
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() noexcept {
    // acquire: pairs with pthread_mutex_unlock() in unlock() of the previous holder.
    [[maybe_unused]] const int rc = pthread_mutex_lock(&m_);
    assert(rc == 0);
  }

  bool try_lock() noexcept {
    // acquire on success: pairs with pthread_mutex_unlock() of the previous holder.
    return pthread_mutex_trylock(&m_) == 0;
  }

  void unlock() noexcept {
    // release: pairs with pthread_mutex_lock()/trylock() of the next holder.
    [[maybe_unused]] const int rc = pthread_mutex_unlock(&m_);
    assert(rc == 0);
  }

 private:
  pthread_mutex_t m_;
};

static_assert(alignof(MutexLock) == 64 && sizeof(MutexLock) % 64 == 0);

}  // namespace txpath
