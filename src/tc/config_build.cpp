// SPDX-License-Identifier: MIT
// tc::Config: building a device's configured tree into qdiscs (build, root_factory, multiqueue,
// validation). See config.cpp for the model and its invariants.
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cpu_mask.hpp"
#include "core/text.hpp"
#include "qdisc/mq.hpp"
#include "tc/config_model.hpp"
#include "tc/config_parts.hpp"
#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_error.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

using namespace config_detail;

namespace {

// TX queue i's default child of an mq or mqprio qdisc `q` (handle `handle`), one node per queue
// whose class has no configured qdisc (`grafted`): Linux lists them (handle 0, parent MAJ:i).
template <class Grafted>
void add_default_children(Tree& tree, Qdisc& q, uint32_t handle, Grafted&& grafted) {
  auto* mq = dynamic_cast<MqQdisc*>(&q);
  if (!mq) return;
  for (uint32_t i = 1; i <= mq->queues(); ++i) {
    const uint32_t classid = handle | i;
    if (!grafted(classid)) tree.nodes.push_back({0, classid, mq->child(static_cast<uint16_t>(i))});
  }
}

}  // namespace

// ---- building trees ----

Tree Config::build(std::string_view dev, QdiscEnv env) const { return build(need(dev), env); }

namespace {
// Relaxed: a count for tests, read after the commands it counts returned; orders nothing.
std::atomic<uint64_t> g_tree_builds{0};
}  // namespace

uint64_t tree_builds() noexcept { return g_tree_builds.load(std::memory_order_relaxed); }

Tree Config::build(const DeviceTree& d, QdiscEnv env) const {
  g_tree_builds.fetch_add(1, std::memory_order_relaxed);
  env.txqueuelen = d.config.txqueuelen;
  env.mtu = d.config.mtu;
  env.tx_queues = d.config.tx_queues;
  Tree tree;
  const QdiscConfig* root = d.root();
  if (!root) {
    // Linux's default root: pfifo_fast, or mq 0: with a pfifo_fast per TX queue.
    env.handle_major = 0;
    tree.root = make_qdisc(env.tx_queues > 1 ? "mq" : "pfifo_fast", env);
    tree.nodes.push_back({0, kRoot, tree.root.get()});
    add_default_children(tree, *tree.root, 0, [](uint32_t) { return false; });
    return tree;
  }
  // Depth first with an explicit stack (never recursion on the input's depth): a qdisc is made
  // with its classes when first reached (tree.nodes in pre-order), and grafted onto its parent's
  // class once everything below it is built.
  struct Frame {
    const QdiscConfig* config;
    std::unique_ptr<Qdisc> qdisc;
    std::vector<const QdiscConfig*> children;
    std::size_t next = 0;
  };
  std::vector<Frame> stack;
  std::size_t tree_bytes = 0;  // what the qdiscs built so far allocated up front, see kMaxTreeBytes
  auto enter = [&](const QdiscConfig& qc) {
    if (stack.size() >= static_cast<std::size_t>(kMaxNestedQdiscs))
      rejected("qdisc " + format_handle(qc.handle) + " is nested too deep (at most " +
               std::to_string(kMaxNestedQdiscs) + " nested qdiscs)");
    if (is_multiqueue_kind(qc.kind) && qc.parent != kRoot)
      rejected("Operation not supported: " + qc.kind + " can only be the root qdisc");
    QdiscEnv e = env;
    e.handle_major = static_cast<uint16_t>(major_of(qc.handle));
    std::unique_ptr<Qdisc> q = make_tc_qdisc(join(qc.kind, qc.options), e);
    tree.nodes.push_back({qc.handle, qc.parent, q.get()});
    add_default_children(tree, *q, qc.handle, [&](uint32_t classid) { return d.qdisc_parents.count(classid) != 0; });
    std::size_t classes = 0;
    for (const ClassConfig* c : d.classes_of(qc.handle)) {
      if (c->kind != qc.kind)
        rejected("class " + format_handle(c->classid) + " is of kind " + txpath::quoted(c->kind) +
                 " but its qdisc " + format_handle(qc.handle) + " is " + escape_user_text(qc.kind));
      const ClassOptions co = class_options_of(*c);
      const uint32_t parent_minor = c->parent == kRoot ? 0 : minor_of(c->parent);
      add_class(*q, static_cast<uint16_t>(minor_of(c->classid)),
                static_cast<uint16_t>(parent_minor), co.options(), e);
      ++classes;
    }
    tree_bytes += q->preallocated_bytes() + kNodeBytes * (1 + classes);
    if (tree_bytes > kMaxTreeBytes)
      rejected("the qdisc tree of dev " + txpath::quoted(d.config.name) + " would allocate more than " +
               std::to_string(kMaxTreeBytes >> 20) + " MiB up front (reached at qdisc " +
               format_handle(qc.handle) + "): use fewer qdiscs or smaller limits, flows, buckets");
    stack.push_back(Frame{&qc, std::move(q), d.qdiscs_below(qc.handle)});
  };
  enter(*root);
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.children.size()) {
      enter(*top.children[top.next++]);  // may reallocate the stack: `top` is not used after
      continue;
    }
    std::unique_ptr<Qdisc> done = std::move(top.qdisc);
    const uint32_t parent = top.config->parent;
    stack.pop_back();
    if (stack.empty()) {
      tree.root = std::move(done);
    } else {
      PacketList none;
      graft(*stack.back().qdisc, static_cast<uint16_t>(minor_of(parent)), std::move(done), none);
    }
  }
  return tree;
}

std::function<std::unique_ptr<Qdisc>(const QdiscEnv&)> Config::root_factory(
    std::string_view dev, std::shared_ptr<Tree> tree) const {
  const DeviceTree& d = need(dev);  // an unknown device fails now, not inside TxQueue::create
  auto self = std::make_shared<Config>(*this);
  std::string name = d.config.name;
  return [self, name, tree](const QdiscEnv& env) {
    Tree built = self->build(name, env);
    std::unique_ptr<Qdisc> root = std::move(built.root);
    if (tree) {
      tree->nodes = std::move(built.nodes);
      tree->root.reset();
      tree->config = self;
    }
    return root;
  };
}

namespace {

// The nodes of the subtree at mq class `classid`: the qdisc attached there and everything below
// it (nodes are in pre-order, parents first).
std::vector<TreeNode> subtree_at(const std::vector<TreeNode>& nodes, uint32_t classid) {
  std::vector<TreeNode> out;
  std::set<uint32_t> inside;  // handles of the qdiscs taken so far
  for (const TreeNode& n : nodes) {
    const bool top = n.parent == classid;
    if (!top && (n.parent == kRoot || !inside.count(range_first(n.parent)))) continue;
    out.push_back(n);
    if (n.handle != 0) inside.insert(n.handle);
  }
  return out;
}

// What Config::multiqueue's factory shares between its calls.
struct QueueFactoryState {
  std::shared_ptr<const Config> config;
  std::string dev;
  uint32_t tx_queues = 1;
  bool per_queue_child = false;  // an mq or mqprio root: queue i runs child i
  uint32_t root_handle = 0;
  std::shared_ptr<QueueTrees> trees;
  std::mutex lock;
  std::optional<Tree> built;  // the whole tree, built on the first call (per_queue_child)
};

std::unique_ptr<Qdisc> build_queue_root(QueueFactoryState& st, uint32_t index, const QdiscEnv& env) {
  const std::lock_guard guard(st.lock);
  if (index >= st.tx_queues)
    throw ConfigError("dev " + txpath::quoted(st.dev) + " has " + std::to_string(st.tx_queues) +
                      " TX queues: there is no TX queue " + std::to_string(index));
  std::unique_ptr<Qdisc> root;
  std::vector<TreeNode> nodes;
  if (st.per_queue_child) {
    if (!st.built) st.built = st.config->build(st.dev, env);
    auto& mq = dynamic_cast<MqQdisc&>(*st.built->root);
    nodes = subtree_at(st.built->nodes, st.root_handle | (index + 1));
    root = mq.take_child(static_cast<uint16_t>(index + 1));
  } else {
    Tree t = st.config->build(st.dev, env);
    root = std::move(t.root);
    nodes = std::move(t.nodes);
  }
  if (st.trees) st.trees->queues[index].nodes = std::move(nodes);
  return root;
}

}  // namespace

Config::MultiQueueSetup Config::multiqueue(std::string_view dev, std::shared_ptr<QueueTrees> trees) const {
  const DeviceTree& d = need(dev);
  Tree probe = build(d, QdiscEnv{});  // refuses a configuration that does not build, now
  auto st = std::make_shared<QueueFactoryState>();
  st->config = std::make_shared<Config>(*this);
  st->dev = d.config.name;
  st->tx_queues = d.config.tx_queues;
  const auto* mq = dynamic_cast<const MqQdisc*>(probe.root.get());
  st->per_queue_child = mq != nullptr;
  st->root_handle = probe.nodes[0].handle;
  st->trees = trees;
  MultiQueueSetup setup;
  setup.tx_queues = d.config.tx_queues;
  setup.xps_cpus = d.config.xps_cpus;
  if (mq) setup.traffic_classes = mq->mapping();
  if (trees) {
    trees->root_kind = std::string(probe.root->kind());
    trees->root_handle = st->root_handle;
    trees->traffic_classes = setup.traffic_classes;
    trees->queues.clear();
    trees->queues.resize(d.config.tx_queues);
    trees->config = st->config;
  }
  setup.queue_qdisc = [st](uint32_t index, const QdiscEnv& env) { return build_queue_root(*st, index, env); };
  return setup;
}

void Config::validate(const DeviceTree& d) const {
  if (!state_->defer_validation && !state_->defer_build) (void)build(d, QdiscEnv{});
}

// Its class alone on a scratch qdisc of its qdisc's kind and options: htb's warning depends on
// the class's rate and quantum and on its qdisc's r2q, and an inner class (one with children)
// has none; building the whole tree after every class command made a batch quadratic.
void Config::warn_about_class(const DeviceTree& d, uint32_t classid, const ShowOptions& show) const {
  const QdiscConfig* owner = d.qdisc(classid & 0xFFFF0000u);
  const auto it = d.classes.find(classid);
  if (!owner || it == d.classes.end() || d.child_classes.count(classid) || !show.warn) return;
  QdiscEnv env;
  env.txqueuelen = d.config.txqueuelen;
  env.mtu = d.config.mtu;
  env.tx_queues = d.config.tx_queues;
  env.handle_major = static_cast<uint16_t>(major_of(owner->handle));
  std::string line;
  try {
    const std::unique_ptr<Qdisc> scratch = make_tc_qdisc(join(owner->kind, owner->options), env);
    const ClassOps* ops = scratch->class_ops();
    if (!ops) return;
    const auto minor = static_cast<uint16_t>(minor_of(classid));
    add_class(*scratch, minor, 0, class_options_of(it->second.config).options(), env);
    line = ops->class_warning(minor);
  } catch (const ConfigError&) {
    return;  // the tree's build says what is wrong, not a warning
  }
  if (!line.empty()) show.warn(line);
}

bool Config::builds() const {
  try {
    for (const auto& d : state_->devs) (void)build(d, QdiscEnv{});
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

}  // namespace txpath::tc
