// SPDX-License-Identifier: MIT
// Live tc changes (apply.cpp): a running queue's tree moved to a changed configuration by its
// driver-loop owner, the control endpoint's requests, and `txpath tc`'s side of them.
// Private to src/tc/.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::tc {

// How long a running queue has to take a change (each TX queue of a multi-queue device).
inline constexpr std::chrono::milliseconds kApplyTimeout{5000};

// Moves the running tree `nodes` (root `root`) to `next`, freshly built from the changed
// configuration; serialised context only (TxQueue::edit_qdisc). A qdisc of `nodes` whose handle,
// parent and kind `next` has too stays: its successor goes on with its counters (a qdisc below
// another with its drops at zero: its parent counts them already). One that does
// not (deleted, replaced, of another kind now) is purged: its packets are dropped, and every
// qdisc above it that stays counts them as drops (Linux's qdisc_purge_queue on graft). The
// packets of the qdiscs that stay are enqueued into `next` in their order, so a lower limit
// drops what no longer fits (counted by the qdisc that drops it). Leaves edit.root = next.root,
// and `nodes` = next's nodes. Allocates only before it changes anything.
void migrate_tree(Qdisc& root, std::vector<TreeNode>& nodes, Tree& next, TxQueue::QdiscEdit& edit);

// Applies `after` (dev's configuration) to a running queue built from dev's tree `tree`, or to
// every TX queue of a multi-queue device (one after the other, each by its own loop owner; the
// root's kind, handle and TX queues must stay). Everything is built before anything changes, so
// a configuration that does not build changes nothing. Throws ConfigError.
void apply_to_queue(TxQueue& txq, Tree& tree, const Config& after, const std::string& dev);
void apply_to_queues(MultiQueueTx& tx, QueueTrees& trees, const Config& after, const std::string& dev);

// The lines of `cfg`'s canonical text that configure device `dev` ("" when it has none).
std::string device_lines(const Config& cfg, std::string_view dev);

// The control endpoint's answer to `request` for a process serving `dev`: parses the request,
// runs apply(configuration) and says how it went (control_socket.hpp's protocol).
std::string control_answer(const std::string& request, const std::string& dev,
                           const std::function<void(const Config&)>& apply);

// `txpath tc`'s side: before the file becomes `after`, every device whose lines differ from
// `before` and that a running process of this effective uid serves (its control endpoint) gets
// the change. Throws ConfigError (with the process's exit status: ConfigRejected, TcArgError) if
// a process refuses it or does not answer; a device nobody serves is left to the file.
void apply_live(const std::string& config_path, const Config& before, const Config& after);

}  // namespace txpath::tc
