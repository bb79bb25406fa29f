// SPDX-License-Identifier: MIT
// Test hooks of strategy `drainer` (defined in strategy/drainer.cpp), for tests/test_drainer.cpp.
// Not part of the library's API.
#pragma once

#include "txpath/txqueue.hpp"

namespace txpath::drainer_test {

// Turns the lone sender's path (send() bypassing the drainer while one sender thread is
// registered, drainer.cpp "A lone sender") on or off; on by default. Off, every packet goes
// through a ring and the drainer thread: the tests of the delegation need that. Before any send.
// False if q is not a `drainer` queue.
bool set_lone_sender_path(TxQueue& q, bool on);

}  // namespace txpath::drainer_test
