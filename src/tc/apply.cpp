// SPDX-License-Identifier: MIT
// Live tc changes: see apply.hpp and docs/tc-compatibility.md ("Live changes").
#include "tc/apply.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/text.hpp"
#include "tc/control_request.hpp"
#include "tc/control_socket.hpp"
#include "tc/internal.hpp"
#include "txpath/multiqueue.hpp"

namespace txpath::tc {

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// Each node's parent qdisc (the node whose handle is its parent class's major), or kNone for a
// node at the top of the tree (the root, or mq's child at the top of a TX queue's tree).
std::vector<std::size_t> parents_of(const std::vector<TreeNode>& nodes) {
  std::map<uint32_t, std::size_t> by_handle;
  std::vector<std::size_t> parent(nodes.size(), kNone);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].parent != kRoot) {
      const auto it = by_handle.find(nodes[i].parent & 0xFFFF0000u);
      if (it != by_handle.end()) parent[i] = it->second;
    }
    if (nodes[i].handle != 0) by_handle.emplace(nodes[i].handle, i);
  }
  return parent;
}

[[noreturn]] void throw_with_status(const std::string& what, int status) {
  if (status == 2) throw ConfigRejected(what);
  if (status == 255) throw TcArgError(what);
  throw ConfigError(what);
}

}  // namespace

void migrate_tree(Qdisc& root, std::vector<TreeNode>& nodes, Tree& next, TxQueue::QdiscEdit& edit) {
  // Everything that allocates first: which old qdisc stays as which new one.
  std::map<std::pair<uint32_t, uint32_t>, Qdisc*> fresh;
  for (const TreeNode& n : next.nodes) fresh.emplace(std::pair(n.handle, n.parent), n.qdisc);
  std::vector<Qdisc*> successor(nodes.size(), nullptr);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto it = fresh.find(std::pair(nodes[i].handle, nodes[i].parent));
    if (it != fresh.end() && it->second->kind() == nodes[i].qdisc->kind()) successor[i] = it->second;
  }
  // Which of them the change gave other options: the kernel would call their change operation.
  std::vector<bool> changed(nodes.size(), false);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (successor[i]) changed[i] = nodes[i].qdisc->dump_options() != successor[i]->dump_options();
  const std::vector<std::size_t> parent = parents_of(nodes);
  std::vector<uint64_t> purged_below(nodes.size(), 0);
  std::vector<bool> gone(nodes.size(), false);  // purged, or below a purged qdisc

  // Purge every qdisc that goes (the topmost of each gone subtree): Linux's qdisc_purge_queue()
  // on graft, its packets counted as drops by every qdisc above it that stays.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const bool above_gone = parent[i] != kNone && gone[parent[i]];
    gone[i] = above_gone || !successor[i];
    if (!gone[i] || above_gone) continue;
    nodes[i].qdisc->take_dequeue_drops(edit.freed);  // counted when they were dropped
    PacketList purged;
    nodes[i].qdisc->reset(purged);
    for (std::size_t a = parent[i]; a != kNone; a = parent[a]) purged_below[a] += purged.size();  // the top's
    edit.dropped += purged.size();
    edit.freed.splice_back(purged);
  }
  // The qdiscs that stay go on with their counters, drops included, plus the packets purged below
  // them (qdisc_tree_reduce_backlog counts those at every ancestor). A classful parent counts its
  // children's drops by the change since it last looked (prio's sync_band, htb's sync_leaf, tbf's
  // sync_child): continue_classes() below tells it what its children hold now, so the carried
  // drops are not counted twice.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!successor[i]) continue;
    QdiscStats s = nodes[i].qdisc->stats();
    s.drops += purged_below[i];
    successor[i]->continue_counters(s);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!successor[i]) continue;
    if (changed[i]) successor[i]->changed_in_place();  // red's change does more than set options
    // Its classes too (htb's counters and tokens), before any packet enters the new tree.
    if (ClassOps* ops = successor[i]->class_ops(); ops && nodes[i].qdisc->class_ops())
      ops->continue_classes(*nodes[i].qdisc->class_ops());
  }
  // Their packets, in order, into the new tree: what no longer fits is dropped there.
  root.take_dequeue_drops(edit.freed);
  PacketList kept;
  root.reset(kept);
  PacketList trimmed;
  while (Packet* p = kept.pop_front()) (void)next.root->adopt(p, trimmed);
  next.root->settle(trimmed);
  edit.dropped += trimmed.size();
  edit.freed.splice_back(trimmed);
  edit.root = std::move(next.root);
  edit.root_goes = !successor.empty() && !successor[0];  // nodes[0] is the root
  nodes = std::move(next.nodes);
}

namespace {

// Why a queue did not take a change: it refused at once (strategy nolock, a peer, a queue being
// stopped), or did not answer within kApplyTimeout.
[[noreturn]] void not_taken(TxQueue& txq, const std::string& what, std::chrono::steady_clock::time_point since) {
  if (std::chrono::steady_clock::now() - since < kApplyTimeout)
    throw ConfigRejected(what + " (strategy " + escape_user_text(txq.strategy()) +
                         ") does not change its qdisc while it runs (strategies nolock and peer:*, " +
                         "or a queue being stopped)");
  throw ConfigError(what + " did not take the change within " + std::to_string(kApplyTimeout.count()) + " ms");
}

// A change of a single-queue process that would make its device multi-queue (an mq root, more TX
// queues): refused, as a multi-queue process refuses a change of its queue count.
void check_one_queue(const Config& after, const std::string& dev) {
  const DeviceConfig* d = after.device(dev);
  if (d && d->tx_queues != 1)
    throw ConfigRejected("dev " + txpath::quoted(dev) + " runs 1 TX queue, the change has " +
                         std::to_string(d->tx_queues) + ": a running process cannot change its TX queues");
}

}  // namespace

PreparedChange prepare_queue_change(TxQueue& txq, Tree& tree, const Config& after, const std::string& dev) {
  check_one_queue(after, dev);
  auto next = std::make_shared<Tree>(after.build(dev, QdiscEnv{}));  // refused here: nothing changed
  auto running = std::make_shared<const Config>(after);
  PreparedChange change;
  change.within = kApplyTimeout;
  change.commit = [&txq, &tree, dev, next, running] {
    bool edited = false;
    const auto since = std::chrono::steady_clock::now();
    const bool served = txq.edit_qdisc(
        [&](Qdisc& root, TxQueue::QdiscEdit& edit) {
          if (tree.nodes.empty()) return;  // not built from the configuration: nothing to move
          migrate_tree(root, tree.nodes, *next, edit);
          tree.config = running;  // read with the nodes: in this context, or after the queue's end
          edited = true;
        },
        kApplyTimeout);
    if (!served) not_taken(txq, "the running queue of dev " + txpath::quoted(dev), since);
    if (!edited) throw ConfigError("the running queue of dev " + txpath::quoted(dev) + " was not built from its configuration");
  };
  return change;
}

namespace {

// Where the TX queues' loop owners meet before any of them swaps its tree: all of them go, or
// none does (a queue that does not arrive by the deadline, or that cannot take the change, calls
// it off for every queue). Once the last one has arrived the decision is made and stays made.
class QueueRendezvous {
 public:
  explicit QueueRendezvous(uint32_t queues) : queues_(queues) {}
  // In one queue's serialised context: true when every queue is in its own and may swap now.
  bool arrive_and_wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    if (++arrived_ == queues_ && state_ == State::waiting) state_ = State::go;
    cv_.notify_all();
    cv_.wait_until(lock, deadline, [&] { return state_ != State::waiting; });
    if (state_ == State::waiting) state_ = State::off;  // the deadline passed first
    return state_ == State::go;
  }
  void call_off() {
    std::lock_guard lock(mu_);
    if (state_ == State::waiting) state_ = State::off;
    cv_.notify_all();
  }

 private:
  enum class State : uint8_t { waiting, go, off };
  std::mutex mu_;
  std::condition_variable cv_;
  const uint32_t queues_;
  uint32_t arrived_ = 0;
  State state_ = State::waiting;
};

// Commits a multi-queue change as one step. Each TX queue's edit is asked for on a thread of its
// own (edit_qdisc waits for that queue's loop owner); inside, each owner waits at the rendezvous
// until every queue's owner is inside its own context, so no dequeue on any queue runs between
// the first swap and the last (as one root lock would give). Linux's mq has a lock per child
// too, but a tc change there takes them under RTNL one at a time; what an application sees
// across the queues here is the change all at once, or (nothing changed) an error.
void commit_queues_at_once(MultiQueueTx& tx, QueueTrees& trees, const std::string& dev,
                           std::vector<Tree>& roots, const std::shared_ptr<const Config>& running) {
  const uint32_t n = tx.num_queues();
  QueueRendezvous meet(n);
  const auto since = std::chrono::steady_clock::now();
  const auto deadline = since + kApplyTimeout;
  enum class Outcome : uint8_t { not_served, changed, not_built, called_off };
  std::vector<Outcome> outcome(n, Outcome::not_served);  // queue i's, written in its context
  std::vector<std::exception_ptr> errors(n);  // an edit that threw (migrate_tree: before it changed anything)
  // Queue i's edit: asked for here, performed by its loop owner (the lambda inside).
  const auto edit_in_context = [&](uint32_t i, Qdisc& root, TxQueue::QdiscEdit& edit) {
    // trees.queues[i].nodes is read by LiveStats inside queue i's context only: changed here.
    if (trees.queues[i].nodes.empty()) {
      meet.call_off();
      outcome[i] = Outcome::not_built;
      return;
    }
    if (!meet.arrive_and_wait(deadline)) {
      outcome[i] = Outcome::called_off;
      return;
    }
    migrate_tree(root, trees.queues[i].nodes, roots[i], edit);
    outcome[i] = Outcome::changed;
  };
  const auto edit_queue = [&](uint32_t i) noexcept {
    try {
      const bool served = tx.queue(i).edit_qdisc(
          [&](Qdisc& root, TxQueue::QdiscEdit& edit) { edit_in_context(i, root, edit); }, kApplyTimeout);
      if (!served) meet.call_off();
    } catch (...) {
      errors[i] = std::current_exception();
      meet.call_off();
    }
  };
  std::vector<std::thread> helpers;
  try {
    for (uint32_t i = 1; i < n; ++i) helpers.emplace_back(edit_queue, i);
  } catch (...) {
    meet.call_off();  // no thread for a queue: nothing may change
    for (auto& t : helpers) t.join();
    throw ConfigError("dev " + txpath::quoted(dev) + ": no thread to change its TX queues with: nothing changed");
  }
  edit_queue(0);
  for (auto& t : helpers) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string what = "TX queue " + std::to_string(i) + " of dev " + txpath::quoted(dev);
    if (outcome[i] == Outcome::not_served) not_taken(tx.queue(i), what + " (no TX queue changed)", since);
    if (outcome[i] == Outcome::not_built) throw ConfigError(what + " was not built from its configuration (no TX queue changed)");
  }
  for (uint32_t i = 0; i < n; ++i)
    if (outcome[i] != Outcome::changed)
      throw ConfigError("dev " + txpath::quoted(dev) + ": its TX queues did not all take the change within " +
                        std::to_string(kApplyTimeout.count()) + " ms (no TX queue changed)");
  trees.config = running;  // every queue runs it now (read after the queues' end)
}

}  // namespace

PreparedChange prepare_queues_change(MultiQueueTx& tx, QueueTrees& trees, const Config& after,
                                     const std::string& dev) {
  auto next = std::make_shared<QueueTrees>();
  const Config::MultiQueueSetup setup = after.multiqueue(dev, next);
  if (setup.tx_queues != tx.num_queues() || next->root_kind != trees.root_kind ||
      next->root_handle != trees.root_handle)
    throw ConfigRejected("dev " + txpath::quoted(dev) + " runs " + std::to_string(tx.num_queues()) +
                         " TX queues under root " + escape_user_text(trees.root_kind) + " " +
                         format_handle(trees.root_handle) +
                         ": a running process cannot change its root qdisc or TX queues");
  auto roots = std::make_shared<std::vector<Tree>>(tx.num_queues());
  for (uint32_t i = 0; i < tx.num_queues(); ++i) {
    (*roots)[i].root = setup.queue_qdisc(i, QdiscEnv{});
    (*roots)[i].nodes = next->queues[i].nodes;
  }
  auto running = std::make_shared<const Config>(after);
  PreparedChange change;
  change.within = kApplyTimeout;
  change.commit = [&tx, &trees, dev, roots, running] { commit_queues_at_once(tx, trees, dev, *roots, running); };
  return change;
}

void apply_to_queue(TxQueue& txq, Tree& tree, const Config& after, const std::string& dev) {
  prepare_queue_change(txq, tree, after, dev).commit();
}

void apply_to_queues(MultiQueueTx& tx, QueueTrees& trees, const Config& after, const std::string& dev) {
  prepare_queues_change(tx, trees, after, dev).commit();
}

std::string device_lines(const Config& cfg, std::string_view dev) {
  std::istringstream text(cfg.serialize());
  std::string line, out;
  while (std::getline(text, line)) {
    const std::vector<std::string> words = batch_words(line);
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "dev" && words[i + 1] == dev) {
        out += line;
        out += '\n';
        break;
      }
    }
  }
  return out;
}

namespace {

std::string answer_text(const nlohmann::json& answer) {
  return answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json error_json(const std::exception& e) {
  nlohmann::json answer;
  answer["error"] = e.what();
  const auto* config = dynamic_cast<const ConfigError*>(&e);
  answer["status"] = config ? exit_status(*config) : 1;
  return answer;
}

}  // namespace

ControlPlan control_plan(const std::string& request, const std::string& dev,
                         const std::function<PreparedChange(const Config&)>& prepare) {
  ControlPlan plan;
  try {
    // Bounded before it is parsed: a request nested or long past the protocol's is refused.
    if (const std::string why = control_request_refusal(request); !why.empty()) throw ConfigError(why);
    const nlohmann::json req = nlohmann::json::parse(request);
    if (!req.is_object() || !req.contains("dev") || !req["dev"].is_string() || !req.contains("config") ||
        !req["config"].is_string())
      throw ConfigError("the request is not a txpath control request");
    if (req["dev"].get<std::string>() != dev)
      throw ConfigError("this process serves dev " + txpath::quoted(dev) + ", not " + txpath::quoted(req["dev"].get<std::string>()));
    PreparedChange change = prepare(Config::parse(req["config"].get<std::string>(), "the change"));
    plan.within = change.within;
    plan.commit = [commit = std::move(change.commit)] {
      try {
        commit();
        return answer_text(nlohmann::json{{"ok", true}});
      } catch (const std::exception& e) {
        return answer_text(error_json(e));
      }
    };
  } catch (const std::exception& e) {
    plan.commit = nullptr;
    plan.answer = answer_text(error_json(e));
  }
  return plan;
}

namespace {

// The process's refusal as one line: our own text, its user parts quoted by the process; escaped
// whole only if it is not one printable line (a process of ours that misbehaves).
std::string refusal_text(const nlohmann::json& a) {
  const std::string why = a.is_object() && a.contains("error") && a["error"].is_string()
                              ? a["error"].get<std::string>()
                              : std::string("an answer that is not a txpath control answer");
  const bool printable = std::all_of(why.begin(), why.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  });
  return printable && why.size() <= 1000 ? why : escape_user_text(why);
}

// Where a process running `dev` of the file may listen: this uid's endpoint, and when root
// changes another user's file, that user's (control_socket.hpp: user_control_endpoints).
std::vector<ControlTarget> targets_of(const std::string& config_path, const std::string& dev, uid_t owner) {
  std::vector<ControlTarget> out;
  try {
    ControlTarget own;
    own.path = control_endpoint(config_path, dev);
    out.push_back(std::move(own));
  } catch (const ConfigError&) {
    // a directory that is not private: no process of ours can serve there (LiveStats refuses to
    // start in it), and another user cannot hold our edits up with one
  }
  if (::geteuid() == 0 && owner != 0) {
    std::vector<ControlTarget> theirs = user_control_endpoints(config_path, dev, owner);
    for (ControlTarget& t : theirs) out.push_back(std::move(t));
  }
  return out;
}

// Sends dev's new lines to the process at `target`. A server that went away before it took the
// change, or ended while it applied it (a round that ended: its tree is gone with it), is asked
// again: its successor, or nobody (the file alone).
ControlReply send_change(const ControlTarget& target, const std::string& request) {
  const auto deadline = std::chrono::steady_clock::now() + kApplyTimeout * 2;
  for (int attempt = 0;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    ControlReply reply = control_request(target.path, request, std::max(left, std::chrono::milliseconds(100)),
                                         target.server_uid);
    if (!reply.ended || attempt == 8 || left.count() <= 0) return reply;
    ::usleep(20000);  // a round's worker ends, the next one starts: let it
  }
}

// `before` with the devices in `applied` as `after` has them: what the file must say when only
// those processes took the change.
Config partly_changed(const Config& before, const Config& after, const std::set<std::string>& applied,
                      const std::set<std::string>& devs) {
  std::string text;
  for (const std::string& dev : devs) text += device_lines(applied.count(dev) ? after : before, dev);
  return Config::parse(text, "the changes that were applied");
}

}  // namespace

void apply_live(const std::string& config_path, const Config& before, const Config& after, uid_t owner,
                const std::function<void(const Config&)>& write_applied) {
  std::set<std::string> devs;
  for (const Config* c : {&before, &after})
    for (const DeviceConfig& d : c->devices()) devs.insert(d.name);
  std::set<std::string> done;     // devices changed: by their process, or in the file alone
  std::set<std::string> applied;  // those a running process took the change of
  const auto fail = [&](const std::string& what, int status) {
    std::string line = what;
    if (!applied.empty()) {  // a process runs them now: the file must say so
      write_applied(partly_changed(before, after, done, devs));
      line += " (the file was written with the changes that were applied, to dev";
      for (const std::string& d : done) line += " " + txpath::quoted(d);
      line += ")";
    } else {
      line += ": file not changed";
    }
    throw_with_status(line, status);
  };
  for (const std::string& dev : devs) {
    std::string lines = device_lines(after, dev);
    if (lines == device_lines(before, dev)) continue;
    const std::string request = nlohmann::json{{"dev", dev}, {"config", std::move(lines)}}.dump();
    const std::string who = "the running process of dev " + txpath::quoted(dev);
    for (const ControlTarget& target : targets_of(config_path, dev, owner)) {
      if (!target.why_not.empty()) fail(who + ": " + target.why_not + ": not applied", 1);
      const ControlReply reply = send_change(target, request);
      if (reply.no_server) continue;  // nobody runs it there: the file alone
      if (reply.unknown) fail(who + ": " + reply.why_not, 1);
      if (!reply.answer) fail(who + " did not take the change (" + reply.why_not + "): not applied", 1);
      const nlohmann::json a = nlohmann::json::parse(*reply.answer, nullptr, false);
      if (a.is_object() && a.value("ok", false)) {
        applied.insert(dev);
        continue;
      }
      const int status = a.is_object() && a.contains("status") && a["status"].is_number_integer() ? a["status"].get<int>() : 1;
      fail(who + " refused the change: " + refusal_text(a), status);
    }
    done.insert(dev);
  }
}

}  // namespace txpath::tc
