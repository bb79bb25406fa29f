// SPDX-License-Identifier: MIT
// The lock kinds a strategy can use for the qdisc root lock and the busylock, and the plumbing
// that turns a --lock name into a template instantiation.
//
// Every kind has the same shape: non-copyable, `void lock() noexcept`, `void unlock() noexcept`,
// `bool try_lock() noexcept`, `static constexpr std::string_view kName`, and its lock word alone
// on its own 64-byte cache line. lock()/unlock() never allocate.
#pragma once

#include <array>
#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "sync/cna_lock.hpp"
#include "sync/mcs_lock.hpp"
#include "sync/mutex_lock.hpp"
#include "sync/ticket_lock.hpp"
#include "sync/ttas_lock.hpp"

namespace txpath {

template <class L>
concept SpinLockKind = requires(L l) {
  { l.lock() } noexcept;
  { l.unlock() } noexcept;
  { l.try_lock() } noexcept -> std::same_as<bool>;
  { L::kName } -> std::convertible_to<std::string_view>;
} && !std::is_copy_constructible_v<L> && !std::is_copy_assignable_v<L> && alignof(L) >= 64;

static_assert(SpinLockKind<TicketLock>);
static_assert(SpinLockKind<TtasLock>);
static_assert(SpinLockKind<McsLock>);
static_assert(SpinLockKind<MutexLock>);
static_assert(SpinLockKind<CnaLock>);

enum class LockKind { ticket, ttas, mcs, mutex, cna };

inline constexpr std::array<LockKind, 5> kAllLockKinds = {
    LockKind::ticket, LockKind::ttas, LockKind::mcs, LockKind::mutex, LockKind::cna};

constexpr std::string_view lock_kind_name(LockKind k) noexcept {
  switch (k) {
    case LockKind::ticket: return TicketLock::kName;
    case LockKind::ttas: return TtasLock::kName;
    case LockKind::mcs: return McsLock::kName;
    case LockKind::mutex: return MutexLock::kName;
    case LockKind::cna: return CnaLock::kName;
  }
  return "?";
}

// Exact, case-sensitive names: "ticket", "ttas", "mcs", "mutex", "cna". nullopt for anything else.
constexpr std::optional<LockKind> parse_lock_kind(std::string_view name) noexcept {
  for (const LockKind k : kAllLockKinds) {
    if (lock_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

// Calls `f.template operator()<L>()` with L the lock class for `k`, e.g.
//   with_lock_kind(kind, [&]<class L>() { return std::make_unique<Strategy<L>>(...); });
// Every instantiation must return the same type.
template <class F>
decltype(auto) with_lock_kind(LockKind k, F&& f) {
  switch (k) {
    case LockKind::ticket: return std::forward<F>(f).template operator()<TicketLock>();
    case LockKind::ttas: return std::forward<F>(f).template operator()<TtasLock>();
    case LockKind::mcs: return std::forward<F>(f).template operator()<McsLock>();
    case LockKind::cna: return std::forward<F>(f).template operator()<CnaLock>();
    case LockKind::mutex: break;
  }
  return std::forward<F>(f).template operator()<MutexLock>();
}

}  // namespace txpath
