// SPDX-License-Identifier: MIT
// tc for txpath: a configuration file of devices and their qdisc trees, edited with tc's own
// command grammar (`txpath tc qdisc add dev eth0 root handle 1: htb default 10`), loaded by the
// library (TxQueueConfig::root_qdisc) and by `txpath bench --tc-config FILE`, and read back with
// tc's text and JSON output, including the live counters of a running process.
//
//   auto cfg  = txpath::tc::Config::load("txpath.tc");
//   auto tree = std::make_shared<txpath::tc::Tree>();
//   txq_cfg.root_qdisc = cfg.root_factory("eth0", tree);   // tree->nodes filled when built
//   auto txq  = txpath::TxQueue::create(dev, txq_cfg);
//   txpath::tc::LiveStats live("txpath.tc", "eth0", *txq, tree);  // tc -s reads it now
//
// A device with several TX queues (`link add dev eth0 numtxqueues 4`) has mq as its default root
// and takes mq or mqprio (software mode) as a configured one: one child qdisc per TX queue.
// Config::multiqueue() gives a MultiQueueTx (txpath/multiqueue.hpp) each queue's root, and
// LiveStats over the MultiQueueTx serves the device's counters (mq's = the sum of its children).
//
// The file is a tc batch file: one command per line, '#' comments. txpath tc rewrites it in a
// canonical form after every change (devices, then each device's qdiscs and classes, parents
// first): a new file is written beside it and renamed over it (core/file.hpp), under an
// exclusive lock (flock) that writers take on the file they are about to replace (run.cpp).
//
// Limits of a file (one-line errors; exit status 2, tc's "rejected"): kMaxConfigBytes and
// kMaxNestedQdiscs below, and htb's own 8 class levels. A file that is not a regular file, or a
// symlink that fs.protected_symlinks would not follow, is refused (exit status 1). Loading is
// O(n log n) in the number of qdiscs and classes and never recurses on the depth of the input.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/error.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/traffic_classes.hpp"

namespace txpath {
class TxQueue;
class MultiQueueTx;
}

namespace txpath::tc {

constexpr uint32_t kRoot = 0xFFFFFFFFu;  // TC_H_ROOT: the device's root
// The largest configuration file read (Config::load, txpath tc, -batch): 64 MiB.
constexpr std::size_t kMaxConfigBytes = std::size_t{64} << 20;
// The most qdiscs on one path from a device's root down (the root counts as 1).
constexpr int kMaxNestedQdiscs = 64;
// The most a device's built tree may allocate up front (Qdisc::preallocated_bytes() summed, plus
// kNodeBytes per qdisc and class): options such as fq's limit and buckets or fq_codel's flows
// make one qdisc cost up to tens of MiB, and a file may hold thousands of them. Past it the
// command (or the file) is refused: exit 2.
constexpr std::size_t kMaxTreeBytes = std::size_t{1} << 30;
constexpr std::size_t kNodeBytes = 1024;
constexpr uint32_t major_of(uint32_t h) noexcept { return h >> 16; }
constexpr uint32_t minor_of(uint32_t h) noexcept { return h & 0xFFFFu; }

// tc's handle syntax (hex): "1:" / "1" (a qdisc handle, minor 0), "1:10" (a class id), "root".
std::optional<uint32_t> parse_qdisc_handle(std::string_view text);  // major only: "1:", "1:1" = 1:
std::optional<uint32_t> parse_classid(std::string_view text);       // "1:10", "1:", "root", "none"
std::string format_handle(uint32_t h);                              // "1:", "1:10", "root"

// A tc argument error (an invalid handle, a missing "dev"): tc's exit(-1), status 255.
class TcArgError : public ConfigError {
 public:
  explicit TcArgError(const std::string& what) : ConfigError(what) {}
};
// The exit status tc gives an error: TcArgError 255, ConfigRejected 2, other ConfigError 1.
int exit_status(const ConfigError& e) noexcept;

// Refuses `name` as a device name if the kernel would (dev_valid_name: empty, longer than
// IFNAMSIZ-1 = 15 bytes, "." or "..", a '/', ':' or whitespace byte, where the kernel's isspace()
// also counts 0xA0) and, to be safe, if it is not printable UTF-8 or holds a byte that the
// configuration file cannot carry ('"', '\\', '#'). Throws TcArgError (ip's
// 'argument "..." is wrong: "dev" not a valid ifname', exit status 255).
void check_device_name(std::string_view name);

struct DeviceConfig {
  std::string name;
  uint32_t txqueuelen = 1000;
  uint32_t mtu = 1500;
  // TX queues (ip link add ... numtxqueues N): 1..kMaxTxQueues, fixed once the device exists. A
  // device with more than one has mq as its default root (as Linux gives a multi-queue device).
  uint32_t tx_queues = 1;
  // XPS (/sys/class/net/DEV/queues/tx-Q/xps_cpus): element q lists the CPUs that send on TX
  // queue q (`link set dev DEV txqueue Q xps_cpus MASK`, MASK in sysfs's hex form; "0" clears);
  // empty, or shorter than tx_queues: no map for the rest. Applied by the bench to its device.
  std::vector<std::vector<unsigned>> xps_cpus;
};

// A qdisc of a device's tree as configured: what tc was told, tokens as given (after `change`,
// merged with the earlier ones the way the kernel merges them).
struct QdiscConfig {
  uint32_t handle = 0;  // major:0; 0 = the device's default root (not configured)
  uint32_t parent = kRoot;  // kRoot or a classid major:minor
  std::string kind;
  std::vector<std::string> options;
};
struct ClassConfig {
  uint32_t classid = 0;
  uint32_t parent = 0;  // major:0 (the qdisc) or major:minor (a parent class)
  std::string kind;
  std::vector<std::string> options;
};

// A built qdisc tree: the root (owned here until handed to a TxQueue) and every qdisc in it.
// Pointers stay valid as long as the root lives.
struct TreeNode {
  uint32_t handle = 0;
  uint32_t parent = kRoot;
  Qdisc* qdisc = nullptr;
};
class Config;
// A built tree. Filled by Config::root_factory's factory, its root then owned by the TxQueue:
// nodes[0].qdisc is the root the factory built, which the queue may not run (nolock runs the
// lockless twin of a fifo root and frees the one built). So a running queue's tree is read only
// through snapshot_counters() (LiveStats, tc -s), which reads the root the queue runs.
struct Tree {
  std::unique_ptr<Qdisc> root;
  std::vector<TreeNode> nodes;  // nodes[0] is the root, parents before children
  // The configuration the running tree is, once a queue runs it (Config::root_factory's, then
  // each live change's): its kinds and options label the tree's counters. Changed with `nodes`
  // (inside the queue's serialised context); read there, or once no change can come.
  std::shared_ptr<const Config> config;
};

// The trees a multi-queue device's TX queues run (Config::multiqueue): queues[i].nodes is TX
// queue i's subtree — with an mq or mqprio root, mq's child for that queue and what is below it;
// with any other root, a copy of the whole tree (each TX queue runs its own). The roots are owned
// by the TxQueues. LiveStats reads them; each factory call writes only its own queues[i].
struct QueueTrees {
  std::string root_kind;         // the device's root qdisc kind ("mq", "mqprio", "htb", ...)
  uint32_t root_handle = 0;      // its handle (major:0; 0 for the default root)
  TrafficClasses traffic_classes;  // mqprio's (num_tc 0 otherwise)
  std::vector<Tree> queues;      // one per TX queue
  // The configuration every TX queue runs (Config::multiqueue's, then each live change's that
  // every queue took): read once no change can come.
  std::shared_ptr<const Config> config;
};

struct TreeCounters;  // below: the counters of a built tree, copied out

class Config {
 public:
  Config();
  Config(const Config& other);
  Config& operator=(const Config& other);
  Config(Config&&) noexcept;
  Config& operator=(Config&&) noexcept;
  ~Config();

  // Reads a configuration file; a missing file is an empty configuration. Throws ConfigError
  // "FILE:LINE: message" for a line that fails, ConfigError for a file that is not a regular file
  // or a foreign symlink, ConfigRejected past kMaxConfigBytes or kMaxNestedQdiscs.
  static Config load(const std::string& path);
  // Parses configuration text (origin names it in errors). A line that is not a tc command is
  // named, never quoted ("FILE:3: line 3 is not a tc command (qdisc, class or link)").
  static Config parse(std::string_view text, std::string_view origin = "config");
  std::string serialize() const;

  std::vector<DeviceConfig> devices() const;
  const DeviceConfig* device(std::string_view name) const noexcept;
  // Configured qdiscs and classes of a device (parents before children).
  std::vector<QdiscConfig> qdiscs(std::string_view dev) const;
  std::vector<ClassConfig> classes(std::string_view dev) const;

  // Executes one tc command given as tokens after "tc" without global options, e.g.
  // {"qdisc","add","dev","eth0","root","handle","1:","fq"}. Mutations are validated by building
  // the device's tree; on error the configuration is unchanged and the ConfigError says why.
  // Show commands print to `out`.
  struct ShowOptions {
    bool stats = false;    // -s
    bool details = false;  // -d
    bool json = false;     // -j
    bool pretty = false;   // -p
    // Live counters of a device: the running process's snapshot document (LiveStats), or why
    // there is none (one line, e.g. "no running txpath bench of uid 0 serves \"txpath.tc\"").
    // Asked with -s only.
    struct LiveDocument {
      std::optional<std::string> text;
      std::string why_not;
    };
    std::function<LiveDocument(const std::string& dev)> fetch_live;
    // Told, one line each, when -s shows the configuration's counters instead of live ones, and
    // why ("no live counters for dev eth0 (WHY): showing the configuration"); txpath tc prints
    // them on stderr. Never called without fetch_live.
    std::function<void(const std::string& line)> note;
    // Told the kernel's warnings about a class just added or changed, one line each, as tc
    // prints them on stderr ("Warning: sch_htb: quantum of class 10001 is big. Consider r2q
    // change."); txpath tc prints them on stderr too.
    std::function<void(const std::string& line)> warn;
  };
  // Returns true if the configuration changed.
  bool execute(std::span<const std::string> args, std::ostream& out, const ShowOptions& show);

  // What `txpath tc -s -j qdisc show dev DEV` and `txpath tc -s -j class show dev DEV` print
  // with `counters` as the live counters (e.g. a run's last snapshot, kept after its tree is
  // gone), as one JSON object: {"qdiscs": [...], "classes": [...]}. An entry the counters lack
  // shows the configuration's (zeros). Throws ConfigError for an unknown device.
  std::string show_stats_json(std::string_view dev, const TreeCounters& counters) const;

  // Builds the tree of device `dev` (its configured root, or the default pfifo_fast).
  Tree build(std::string_view dev, QdiscEnv env = {}) const;
  // A TxQueueConfig::root_qdisc factory building `dev`'s tree; the built tree's nodes are left
  // in *tree (root ownership goes to the TxQueue). Throws ConfigError for an unknown device.
  std::function<std::unique_ptr<Qdisc>(const QdiscEnv&)> root_factory(
      std::string_view dev, std::shared_ptr<Tree> tree) const;

  // What a MultiQueueTx (txpath/multiqueue.hpp) of device `dev` needs:
  //   auto trees = std::make_shared<txpath::tc::QueueTrees>();
  //   auto mq    = cfg.multiqueue("eth0", trees);   // mq.tx_queues: make the NetDevice with them
  //   dev->set_traffic_classes(mq.traffic_classes);
  //   auto tx    = txpath::MultiQueueTx::create(*dev, {.queue = q, .queue_qdisc = mq.queue_qdisc});
  //   txpath::tc::LiveStats live("txpath.tc", "eth0", *tx, trees);
  // queue_qdisc(i, env) builds TX queue i's root: with an mq or mqprio root, mq's child for queue
  // i (the default pfifo_fast, or what was grafted there, with its subtree); with any other root
  // (or the default one of a single-queue device) the whole tree, one copy per queue — Linux
  // shares one root between the queues, txpath gives each queue its own. The device's tree is
  // built once, on the first call, with that call's env, and each call takes its queue's child
  // from it. The built nodes are left in trees->queues[i]. Throws ConfigError for an unknown
  // device (now) or an index >= tx_queues (from the factory).
  struct MultiQueueSetup {
    uint32_t tx_queues = 1;
    TrafficClasses traffic_classes;  // mqprio's mapping; num_tc 0 for mq or one queue
    std::function<std::unique_ptr<Qdisc>(uint32_t index, const QdiscEnv&)> queue_qdisc;
    std::vector<std::vector<unsigned>> xps_cpus;  // DeviceConfig::xps_cpus of the device
  };
  MultiQueueSetup multiqueue(std::string_view dev, std::shared_ptr<QueueTrees> trees) const;

 private:
  // A device's configured qdiscs and classes with their indexes, and the configuration's devices
  // (src/tc/config_model.hpp: not part of the API).
  struct DeviceTree;
  struct State;
  DeviceTree* find(std::string_view dev) noexcept;
  const DeviceTree* find(std::string_view dev) const noexcept;
  DeviceTree& need(std::string_view dev);
  const DeviceTree& need(std::string_view dev) const;
  Tree build(const DeviceTree& d, QdiscEnv env) const;
  bool qdisc_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                     const ShowOptions& show);
  struct TreeCommand;  // qdisc_command's and class_command's verbs on the file's tree (commands.hpp)
  friend class BatchRun;  // -batch: the lines' builds deferred to the end (src/tc/batch.cpp)
  bool class_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                     const ShowOptions& show);
  bool link_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out);
  void show_qdiscs(const DeviceTree* only, std::ostream& out, const ShowOptions& show) const;
  void show_classes(const DeviceTree& d, std::ostream& out, const ShowOptions& show) const;
  // Builds d's tree after a change, turning any error into the command's error; the caller
  // restores the previous state on throw. Does nothing while a file is read (defer_validation_).
  void validate(const DeviceTree& d) const;
  // Tells show.warn the kernel's warning about class `classid` of d just added or changed, if any.
  void warn_about_class(const DeviceTree& d, uint32_t classid, const ShowOptions& show) const;
  bool builds() const;  // every device builds
  void reindex();
  // One line of a configuration file, with its errors as "ORIGIN:LINE: message".
  void run_file_line(std::string_view line, std::size_t line_no, std::string_view origin);
  // The configuration of lines[0, count), without building trees; `failed` is the index of the
  // first line that failed (the configuration is then unusable), else count.
  static Config run_prefix(std::span<const std::string_view> lines, std::size_t count,
                           std::string_view origin, std::size_t& failed);

  std::unique_ptr<State> state_;  // never null, except in a moved-from Config
};

// The `txpath tc` command line: args after "tc" (global options included: -s -d -j -p,
// -batch FILE, -force, --config FILE). The configuration file is --config FILE, else $TXPATH_TC,
// else ./txpath.tc. Prints to out/err; returns tc's exit status (0, 1 parse error, 2 rejected,
// 255 argument error).
int run(std::span<const std::string> args, std::ostream& out, std::ostream& err);
// The configuration path run() uses when no --config is given.
std::string default_config_path();

// A shared flock() of configuration file `path`, for a process that reads it and then serves it
// (LiveStats): hold it from before the read until the control endpoint serves. `txpath tc` holds
// the exclusive lock while it tells the running processes a change and writes the file, so a
// change lands either before the read (the tree read has it) or once the endpoint serves (the
// change reaches the tree): never in between. A missing file holds nothing. A writer that keeps
// the lock longer than kReadLockWait is not waited for (the read goes on, as without the lock).
// Throws ConfigError as Config::load for a file that cannot be opened.
class ConfigReadLock {
 public:
  static constexpr std::chrono::seconds kReadLockWait{30};
  explicit ConfigReadLock(const std::string& path);
  ~ConfigReadLock();
  ConfigReadLock(const ConfigReadLock&) = delete;
  ConfigReadLock& operator=(const ConfigReadLock&) = delete;

 private:
  int fd_ = -1;
};

// ---- tc's printers: the text and JSON of a qdisc's typed dump (Qdisc::dump()) ----
// What iproute2's q_KIND.c does with what the kernel dumps. Each kind's printer is in its file,
// src/tc/qdisc_KIND.cpp; a kind txpath does not know (a library user's own qdisc) is printed by
// the generic printer: every attribute as "name value" (a flag as its name when set, an array as
// its numbers), in JSON an object of them. Called like Qdisc::dump(), in the qdisc's serialised
// context or on a tree no thread is using.
// The options tc qdisc show prints after "qdisc KIND H: ... ", e.g. "limit 1000p"; details: -d.
std::string options_text(const Qdisc& q, bool details = false);
// The same as tc -j's "options" object, e.g. {"limit":1000}.
std::string options_json(const Qdisc& q, bool details = false);
// tc -s's xstats lines of a qdisc of q's kind for xstats x (each with tc's leading spaces and a
// '\n'; "" for none), e.g. fq_codel's "  maxpacket 1514 drop_overlimit 0 ...\n".
std::string xstats_text(const Qdisc& q, const Xstats& x);
// What tc class show prints after "class KIND H:m parent P: [leaf L:] " for class `minor` of q
// (htb's "prio 0 rate 20Kbit ceil 20Kbit burst 1000b cburst 1600b"; "" for prio's and tbf's),
// its tc -j object, and its xstats lines (htb's " lended: 0 borrowed: 0 giants: 0\n ...").
std::string class_options_text(const Qdisc& q, uint16_t minor, bool details = false);
std::string class_options_json(const Qdisc& q, uint16_t minor);
std::string class_xstats_text(const Qdisc& q, const Xstats& x);
// The same from a dump read elsewhere (a live document's), by kind.
std::string options_text(std::string_view kind, const DumpAttrs& options, bool details = false);
std::string options_json(std::string_view kind, const DumpAttrs& options, bool details = false);
std::string xstats_text(std::string_view kind, const Xstats& x);

// A JSON document of every counter of a built tree (qdisc stats and xstats, class stats and
// xstats), taken in the qdisc's serialised context (call it inside TxQueue::inspect_qdisc, or on a
// tree no thread is using). `root`, if given, replaces the root qdisc's generic counters: a
// TxQueue's view (TxQueueStats::qdisc) adds the driver loop's requeue list and a lockless
// (nolock) qdisc's per-thread counts, which the qdisc's own stats() leave out.
std::string stats_document(const std::vector<TreeNode>& nodes,
                           const std::optional<QdiscStats>& root = std::nullopt);

// The same counters copied out, so that the document is built outside the qdisc's serialised
// context: collect_counters() inside TxQueue::inspect_qdisc (a copy: the senders wait for no
// JSON), stats_document(counters) after it.
struct TreeCounters {
  struct Entry {
    uint32_t handle = 0;  // a qdisc's major:0 or a class id
    uint32_t parent = kRoot;  // a qdisc's parent: names mq's default children (all handle 0)
    bool is_class = false;
    QdiscStats stats;
    Xstats xstats;
    std::string kind;  // the qdisc's kind (a class: its qdisc's), "" if not known
    uint32_t class_parent = kRoot;  // a class's parent: its qdisc (major:0) or its parent class
    DumpAttrs options;  // a qdisc's typed options (Qdisc::dump_options()); none for a class
  };
  std::vector<Entry> entries;  // qdiscs in tree order, each followed by its classes
};
// `running_root`: the qdisc the queue runs in nodes[0]'s place, read instead of nodes[0].qdisc (a
// strategy may run another root than the factory built: nolock runs a fifo's lockless twin and
// frees the one built, see Tree).
TreeCounters collect_counters(const std::vector<TreeNode>& nodes,
                              const std::optional<QdiscStats>& root = std::nullopt,
                              const Qdisc* running_root = nullptr);
// With `dev`, the document names its device ("dev"); with `config`, its configuration file
// ("config": the path as stats_endpoint() resolves it); each entry names its kind and parent.
std::string stats_document(const TreeCounters& counters, std::string_view dev = {},
                           std::string_view config = {});

// A TxQueue's counters as LiveStats serves them: copied inside TxQueue::inspect_qdisc (the root's
// generic counters as the TxQueue sees them, TxQueueStats::qdisc). With `nodes` (the tree the
// queue's root_qdisc factory built), every node's; with none (a root built from
// TxQueueConfig::qdisc, no tree), the root qdisc and its classes, as qdisc `root_handle` below
// `root_parent`. nullopt when the queue did not answer within `timeout`.
std::optional<TreeCounters> snapshot_counters(TxQueue& txq, const std::vector<TreeNode>& nodes,
                                              std::chrono::milliseconds timeout,
                                              uint32_t root_handle = 0, uint32_t root_parent = kRoot);
// The counters of a multi-queue device's trees (one TreeCounters per TX queue, each of
// queues[i].nodes) as one tree's, as LiveStats serves them: entries of the same qdisc or class
// summed; with an mq or mqprio root, the root's entry (the sum of the queues' top qdiscs), its
// per-queue classes (each queue's top qdisc) and mqprio's traffic classes (their queues' sum).
TreeCounters merge_queue_counters(const QueueTrees& trees, std::span<const TreeCounters> queues);

// The live counters of `dev` of configuration `config_path` as `txpath tc -s` gets them: the
// document of the process serving them (LiveStats), if it runs as this effective uid or root and
// answers within `timeout`; else why not ("no running txpath bench of uid 0 serves \"FILE\"",
// ...).
Config::ShowOptions::LiveDocument fetch_live(
    const std::string& config_path, const std::string& dev,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

// Serves the live counters of a TxQueue built from `dev` of configuration `config_path` to
// `txpath tc -s ... show`: a unix socket named after the file and the device, in a directory only
// this effective uid can enter (/run/txpath/stats/ for root, $XDG_RUNTIME_DIR/txpath/ or
// /tmp/txpath-UID/ for others), answering only this uid and root. RAII: the socket goes with it.
// Throws ConfigError if another process serves the same file and device, or if the directory is
// not private.
class LiveStats {
 public:
  LiveStats(const std::string& config_path, const std::string& dev, TxQueue& txq,
            std::shared_ptr<Tree> tree);
  // A multi-queue device (Config::multiqueue): each TX queue's snapshot is taken in its own
  // TxQueue::inspect_qdisc, one queue after the other; an mq or mqprio root gets the sum of its
  // children (Linux's mq_dump), its per-queue classes their child's counters and mqprio's traffic
  // classes the sum of their queues'. With any other root each queue runs a copy of the tree and
  // every qdisc and class shows the sum over the copies (xstats summed too).
  LiveStats(const std::string& config_path, const std::string& dev, MultiQueueTx& tx,
            std::shared_ptr<QueueTrees> trees);
  ~LiveStats();

  // Live tc changes: makes the running tree `after`'s tree of dev (after: the whole changed
  // configuration, e.g. a copy of the loaded one after Config::execute of a tc command), applied
  // by the driver-loop owner as Linux applies a change under the root lock (TxQueue::edit_qdisc):
  // qdiscs that stay keep their counters and packets; a deleted or replaced qdisc's packets are
  // dropped, counted by the qdiscs above it; a lower limit drops what no longer fits; a class
  // change rules the next dequeue. Throws ConfigError (nothing changed) if `after` does not build,
  // or a multi-queue device's root would change; or if the queue does not answer in time. The
  // same happens when `txpath tc` changes the file: it sends the device's new configuration to
  // this object's control endpoint (beside the stats endpoint, same rules) and writes the file
  // only once it was applied. Thread-safe; one change at a time. Class counters and xstats start
  // again from zero in the rebuilt tree (the qdiscs' generic counters go on).
  void apply(const Config& after);
  LiveStats(const LiveStats&) = delete;
  LiveStats& operator=(const LiveStats&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace txpath::tc
