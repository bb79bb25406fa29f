// SPDX-License-Identifier: MIT
// Live tc changes (apply.cpp): a running queue's tree moved to a changed configuration by its
// driver-loop owner, the control endpoint's requests, and `txpath tc`'s side of them.
// Private to src/tc/.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tc/control_socket.hpp"
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

// A change built and checked, not yet applied: commit() applies it (throws ConfigError, as
// apply_to_queue) within `within`.
struct PreparedChange {
  std::function<void()> commit;
  std::chrono::milliseconds within{0};
};

// Builds `after` (dev's configuration) for a running queue built from dev's tree `tree`, or for
// every TX queue of a multi-queue device (the root's kind, handle and TX queues must stay; a
// single queue's device must keep one TX queue). Everything is built here, so a configuration
// that does not build changes nothing. commit() hands the switch to each queue's loop owner (on a
// multi-queue device to every queue's at once: they all swap, each in its own context, once all
// of them are in it, or none does) and records `after` as the trees' running configuration
// (Tree::config, QueueTrees::config). Throws ConfigError (nothing changed).
PreparedChange prepare_queue_change(TxQueue& txq, Tree& tree, const Config& after, const std::string& dev);
PreparedChange prepare_queues_change(MultiQueueTx& tx, QueueTrees& trees, const Config& after,
                                     const std::string& dev);
// Both steps at once.
void apply_to_queue(TxQueue& txq, Tree& tree, const Config& after, const std::string& dev);
void apply_to_queues(MultiQueueTx& tx, QueueTrees& trees, const Config& after, const std::string& dev);

// The lines of `cfg`'s canonical text that configure device `dev` ("" when it has none).
std::string device_lines(const Config& cfg, std::string_view dev);

// The control endpoint's plan for `request` in a process serving `dev`: parses the request and
// prepare()s its configuration; what does not parse or build is answered at once (nothing
// changed), the rest is committed when the client says go (control_socket.hpp's protocol).
ControlPlan control_plan(const std::string& request, const std::string& dev,
                         const std::function<PreparedChange(const Config&)>& prepare);

// `txpath tc`'s side, holding the file's lock: before the file becomes `after`, every device
// whose lines differ from `before` and that a running process serves gets the change — a process
// of this effective uid, and when root changes a file of user `owner`, that user's process
// (user_control_endpoints()). A device nobody serves is left to the file. Throws ConfigError (with
// the process's exit status: ConfigRejected, TcArgError) if a process refuses the change, did not
// take it, or may still apply it; when other devices' processes took theirs before, the file is
// first written (write_applied) with exactly the changes that were applied.
void apply_live(const std::string& config_path, const Config& before, const Config& after, uid_t owner,
                const std::function<void(const Config&)>& write_applied);

}  // namespace txpath::tc
