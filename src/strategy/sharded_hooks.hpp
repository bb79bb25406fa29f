// SPDX-License-Identifier: MIT
// Test hooks of strategy `sharded` (defined in strategy/sharded.cpp): introspection of a queue
// the registry built, for tests/test_sharded.cpp. Not part of the library's API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "txpath/txqueue.hpp"

namespace txpath::sharded_test {

// The queue's shard count; 0 if q is not a `sharded` queue.
std::size_t shard_count(TxQueue& q);
// The shard the calling thread pushes onto (fixed for the thread's life). q must be sharded.
std::size_t shard_of_calling_thread(TxQueue& q);
// Packets pushed onto `shard` and not yet detached (a statistic). q must be sharded.
uint64_t shard_depth(TxQueue& q, std::size_t shard);
// Runs `hook` in the drainer just before it clears its flag (set before any send). q must be
// sharded.
void on_drainer_release(TxQueue& q, std::function<void()> hook);
// Turns send()'s uncontended path (the root lock's try_lock when the thread's shard is empty) on
// or off; on by default. Off, every send() takes the drainer flag or pushes: the tests of the
// drainer machinery need that. Before any send. q must be sharded.
void set_uncontended_path(TxQueue& q, bool on);

}  // namespace txpath::sharded_test
