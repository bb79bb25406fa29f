// SPDX-License-Identifier: MIT
// Pieces of the tc layer shared between its files (not public API).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

// A batch or configuration line split as tc's makeargs does: whitespace-separated words, double
// quotes group a word, '#' starts a comment (config.cpp).
std::vector<std::string> batch_words(std::string_view line);
// mq or mqprio: a root with one child per TX queue (config.cpp).
bool is_multiqueue_kind(std::string_view kind) noexcept;
// The key of a qdisc in a live document: its handle, and for a handle-0 qdisc below the root
// (mq's default children) its parent too (show.cpp).
std::string qdisc_key(uint32_t handle, uint32_t parent);
// The counters tc shows for qdisc q: mq's and mqprio's are the sum of their children's.
QdiscStats shown_stats(const Qdisc& q);
// The counters of a multi-queue device's trees (QueueTrees, one TreeCounters per TX queue, each
// from collect_counters over queues[i].nodes) as one tree's: entries of the same qdisc or class
// summed; with an mq or mqprio root, the root's entry (the sum of the queues' top qdiscs), its
// per-queue classes (each queue's top qdisc) and mqprio's traffic classes (their queues' sum).
TreeCounters merge_queue_counters(const QueueTrees& trees, std::span<const TreeCounters> queues);
// True if words[0] is a tc object (qdisc, class or link, or a prefix tc accepts for one).
bool is_tc_command(std::span<const std::string> words);

}  // namespace txpath::tc
