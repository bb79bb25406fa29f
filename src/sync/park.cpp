// SPDX-License-Identifier: MIT
#include "sync/park.hpp"

namespace txpath {

namespace {
// relaxed: a policy switch read on the slow path of waits; no data is published through it.
std::atomic<bool> g_spin_park{true};
}  // namespace

void set_spin_park(bool park) noexcept { g_spin_park.store(park, std::memory_order_relaxed); }
bool spin_park() noexcept { return g_spin_park.load(std::memory_order_relaxed); }

}  // namespace txpath
