// SPDX-License-Identifier: MIT
// How the library's waiting loops behave once their short spin is spent (process-wide).
#pragma once

namespace txpath {

// true (default): park in the kernel (futex) until woken — an oversubscribed machine gets its
// CPU back for the thread that holds things up. false: sched_yield() and retry (spin-then-yield).
void set_spin_park(bool park) noexcept;
bool spin_park() noexcept;

}  // namespace txpath
