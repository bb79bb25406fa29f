// SPDX-License-Identifier: MIT
// The tc configuration model: devices, each with its configured qdiscs and classes, edited by tc
// commands (qdisc|class|link add/change/replace/del) and built into live qdisc trees.
//
// Invariants of a DeviceTree, after every command:
//   - at most one qdisc has parent kRoot (the configured root); without one the device's root is
//     the default pfifo_fast with handle 0, which cannot be deleted and takes no children;
//   - every other qdisc's parent is a leaf class of a qdisc of this device, and no two qdiscs
//     share a parent or a handle;
//   - every class's major is its qdisc's handle major and its parent (major:0 or a class) exists;
//   - the device builds (Config::build): every qdisc's options and every class's options are
//     accepted by the qdisc implementations — a command that breaks this is refused and leaves
//     the configuration as it was.
// Order: qdiscs and classes are kept in the order they were created, so parents come first.
// Indexes: a device's qdiscs by handle and by parent, its classes by class id (a qdisc's classes
// are one key range) with a count of child classes, devices by name; every command is O(log n)
// but for building the tree it changes (O(n)), and reading a file of n lines is O(n log n).
// Nothing recurses on the input: trees are walked with explicit stacks.
#include <algorithm>
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
#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_error.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

// tc's matches(): `arg` is a non-empty prefix of `word`.
bool matches(std::string_view arg, std::string_view word) {
  return !arg.empty() && arg.size() <= word.size() && word.substr(0, arg.size()) == arg;
}

std::string join(std::string_view kind, const std::vector<std::string>& options) {
  std::string s(kind);
  for (const auto& o : options) {
    s += ' ';
    s += o;
  }
  return s;
}

[[noreturn]] void rejected(const std::string& what) { throw ConfigRejected(what); }

// The value after args[i] (advancing i), or tc's "Command line is not complete" (exit 255).
const std::string& next_arg(std::span<const std::string> args, std::size_t& i) {
  if (i + 1 >= args.size()) throw TcArgLine(std::string(QdiscOptions::kIncomplete));
  return args[++i];
}

// ---- option merging for `change` (and replace of the same kind) ----
// The kernel's change() of these qdiscs only touches the attributes tc sent, and tc sends only
// the options given; so the effective options are the old ones with the new ones overriding.
// For every other kind tc sends a complete set, and the new options replace the old.
// Splits options into (group, tokens) runs by the table; nullopt if a token is not in it.
std::optional<std::vector<std::pair<std::string, std::vector<std::string>>>> split_options(
    const MergeTable& table, const std::vector<std::string>& opts) {
  std::vector<std::pair<std::string, std::vector<std::string>>> runs;
  for (std::size_t i = 0; i < opts.size(); ++i) {
    const auto it = table.find(opts[i]);
    if (it == table.end()) return std::nullopt;
    std::vector<std::string> toks{opts[i]};
    for (int v = 0; v < it->second.values; ++v) {
      if (++i >= opts.size()) return std::nullopt;
      toks.push_back(opts[i]);
    }
    runs.emplace_back(std::string(it->second.group), std::move(toks));
  }
  return runs;
}

}  // namespace

std::vector<std::string> merge_options(std::string_view kind, const std::vector<std::string>& old,
                                       const std::vector<std::string>& given) {
  const MergeTable* table = qdisc_kind(kind).merge;
  if (!table) return given;
  auto old_runs = split_options(*table, old);
  const auto new_runs = split_options(*table, given);
  if (!old_runs || !new_runs) return given;  // the qdisc's parser reports the bad token
  for (const auto& run : *new_runs) {
    auto it = std::find_if(old_runs->begin(), old_runs->end(),
                           [&](const auto& r) { return r.first == run.first; });
    if (it != old_runs->end()) it->second = run.second;
    else old_runs->push_back(run);
  }
  std::vector<std::string> out;
  for (const auto& r : *old_runs) out.insert(out.end(), r.second.begin(), r.second.end());
  return out;
}

namespace {

// Tokens go into the configuration file one per word: refuse what would not read back.
void check_token(const std::string& t) {
  // An empty word ("" in a batch line) could not be written back: the file would lose it.
  if (t.empty()) throw TcArgError("argument \"\" is wrong: an empty word is not an option");
  for (char c : t) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '#' || c == '"' || c == '\\')
      throw TcArgError("argument \"" + escape_user_text(t) +
                       "\" is wrong: whitespace, quotes, '#' and control characters are not allowed");
  }
}

// tc's duparg(): `Error: duplicate "KEY": "VALUE" is the second value.` (exit status 255).
[[noreturn]] void duplicate(std::string_view key, std::string_view value) {
  throw TcArgError("duplicate " + quoted(key) + ": " + quoted(value) + " is the second value.");
}

// The words before the kind, as tc_qdisc_modify / tc_class_modify read them (with tc's checks
// and messages: a duplicate counts only once the first value was non-zero, as in tc).
Target parse_target(std::span<const std::string> args, bool is_class) {
  Target t;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "dev") {
      const std::string& v = next_arg(args, i);
      if (!t.dev.empty()) duplicate("dev", v);
      t.dev = v;
    } else if (a == "handle" && is_class) {
      throw TcArgLine("Error: try \"classid\" instead of \"handle\"");
    } else if (a == "handle") {
      if (t.handle.value_or(0)) duplicate("handle", a);
      const std::string& v = next_arg(args, i);
      const auto h = parse_qdisc_handle(v);
      if (!h) throw TcArgError("argument " + quoted(v) + " is wrong: invalid qdisc ID");
      t.handle = *h;
    } else if (a == "classid" && is_class) {
      const std::string& v = next_arg(args, i);
      if (t.classid.value_or(0)) duplicate("classid", v);
      const auto h = parse_classid(v);
      if (!h) throw TcArgError("argument " + quoted(v) + " is wrong: invalid class ID");
      t.classid = *h;
    } else if (a == "root") {
      if (t.parent.value_or(0))
        throw TcArgLine(is_class ? "Error: \"root\" is duplicate parent ID." : "Error: \"root\" is duplicate parent ID");
      t.parent = kRoot;
    } else if (a == "parent") {
      const std::string& v = next_arg(args, i);
      if (t.parent.value_or(0)) duplicate("parent", v);
      const auto h = parse_classid(v);
      if (!h) throw TcArgError("argument " + quoted(v) + " is wrong: invalid parent ID");
      t.parent = *h;
    } else if (a == "ingress" || a == "clsact" || a == "estimator" || a == "stab" ||
               a == "ingress_block" || a == "egress_block") {
      throw ConfigError("\"" + a + "\" is not supported by txpath tc");
    } else {
      t.kind = a;
      for (std::size_t j = i + 1; j < args.size(); ++j) t.options.push_back(args[j]);
      break;
    }
  }
  if (t.parent == 0u) t.parent.reset();  // "parent none": no parent, as tc sends it
  return t;
}

// The kind and options go into the configuration file: checked once tc's own parse of them passed
// (its errors come first, as tc's would).
void check_tokens(const Target& t) {
  for (const auto& o : t.options) check_token(o);
  if (!t.kind.empty()) check_token(t.kind);
}

// tc's invarg(): `Error: argument "VALUE" is wrong: WHAT` (exit status 255).
[[noreturn]] void invalid(std::string_view value, std::string_view what) {
  throw TcArgError("argument " + quoted(value) + " is wrong: " + std::string(what));
}

// `qdisc show`'s selectors as tc_qdisc_list reads them (one of root, parent or handle; a later
// dev replaces an earlier one), anything else tc's "What is" (exit status 255). The selectors are
// checked, not applied: every qdisc of the device is shown. Returns the device named, if any.
std::string parse_qdisc_show(std::span<const std::string> args) {
  std::string dev;
  uint32_t parent = 0, handle = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool selector = a == "root" || a == "ingress" || a == "clsact" || matches(a, "parent") || matches(a, "handle");
    if (selector && parent) invalid(a, "parent is already specified");
    if (selector && handle) invalid(a, "handle is already specified");
    if (a == "dev") {
      dev = next_arg(args, i);
    } else if (a == "root" || a == "ingress" || a == "clsact") {
      parent = a == "root" ? kRoot : 0xFFFFFFF1u;
    } else if (matches(a, "parent")) {
      const std::string& v = next_arg(args, i);
      const auto h = parse_classid(v);
      if (!h) invalid(v, "invalid parent ID");
      parent = *h;
    } else if (matches(a, "handle")) {
      const std::string& v = next_arg(args, i);
      const auto h = parse_qdisc_handle(v);
      if (!h) invalid(v, "invalid handle ID");
      handle = *h;
    } else if (!matches(a, "help") && a != "invisible") {
      throw TcArgLine("What is " + quoted(a) + "? Try \"tc qdisc help\".");
    }
  }
  return dev;
}

// `class show`'s selectors as tc_class_list reads them; checked, not applied.
std::string parse_class_show(std::span<const std::string> args) {
  std::string dev;
  uint32_t qdisc = 0, classid = 0, parent = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "dev") {
      const std::string& v = next_arg(args, i);
      if (!dev.empty()) duplicate(a, v);
      dev = v;
    } else if (a == "qdisc" || a == "classid") {
      const std::string& v = next_arg(args, i);
      uint32_t& slot = a == "qdisc" ? qdisc : classid;
      if (slot) duplicate(a, v);
      const auto h = a == "qdisc" ? parse_qdisc_handle(v) : parse_classid(v);
      if (!h) invalid(v, a == "qdisc" ? "invalid qdisc ID" : "invalid class ID");
      slot = *h;
    } else if (a == "root") {
      if (parent) throw TcArgLine("Error: \"root\" is duplicate parent ID");
      parent = kRoot;
    } else if (a == "parent") {
      if (parent) duplicate("parent", a);
      const std::string& v = next_arg(args, i);
      const auto h = parse_classid(v);
      if (!h) invalid(v, "invalid parent ID");
      parent = *h;
    } else if (!matches(a, "help")) {
      throw TcArgLine("What is " + quoted(a) + "? Try \"tc class help\".");
    }
  }
  return dev;
}

// QdiscOptions over a class's tokens whose errors are tc's lines (throw_tc_line): a file's
// reader puts "FILE:LINE: " before them. The class must outlive the options.
struct ClassOptions {
  std::vector<std::string_view> views;
  const ClassConfig* config = nullptr;
  QdiscOptions options() const { return QdiscOptions(views, throw_tc_line); }
};

ClassOptions class_options_of(const ClassConfig& c) {
  ClassOptions o;
  for (const auto& t : c.options) o.views.push_back(t);
  o.config = &c;
  return o;
}

// A tc object word ("qdisc", "class", "link" or a prefix tc accepts for it).
bool is_object_word(std::string_view w) {
  return matches(w, "qdisc") || matches(w, "class") || matches(w, "link");
}

// The [first, last] keys of a qdisc's classes (and of the parents of the qdiscs on them) in the
// maps keyed by class id: major:0 .. major:ffff, less kRoot (ffff:ffff), which is no class.
constexpr uint32_t range_first(uint32_t handle) { return handle & 0xFFFF0000u; }
constexpr uint32_t range_last(uint32_t handle) {
  return (handle | 0xFFFFu) == kRoot ? kRoot - 1 : (handle | 0xFFFFu);
}

template <class T>
std::vector<const T*> by_seq(std::vector<std::pair<uint64_t, const T*>>& v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const T*> out;
  out.reserve(v.size());
  for (const auto& [seq, p] : v) out.push_back(p);
  return out;
}

// tc's preparsing of options before the request: see qdisc_command.
void preparse_qdisc(const std::string& kind, const std::vector<std::string>& options) {
  std::vector<std::string> words{kind};
  words.insert(words.end(), options.begin(), options.end());
  try {
    (void)make_tc_qdisc(words, QdiscEnv{});
  } catch (const ConfigRejected&) {
  }
}

// tc's own check of a class command's kind and options: a kind tc has no class parser for is
// "classless" (exit 1), htb's options are parsed (txpath has no other classful kind tc parses).
void preparse_class(const std::string& kind, const ClassConfig& c) {
  static constexpr std::string_view kTcClassful[] = {"htb", "hfsc", "drr", "qfq", "cbq", "atm", "dsmark", "ets"};
  if (std::find(std::begin(kTcClassful), std::end(kTcClassful), kind) == std::end(kTcClassful))
    throw TcParseLine("Error: Qdisc " + quoted(kind) + " is classless.");
  if (qdisc_kind(kind).classes != ClassModel::explicit_) return;  // the request then fails at its qdisc
  QdiscEnv env;
  env.handle_major = static_cast<uint16_t>(major_of(c.classid));
  const std::unique_ptr<Qdisc> scratch = make_tc_qdisc(kind, env);
  try {
    const ClassOptions co = class_options_of(c);
    const uint32_t minor = minor_of(c.classid) != 0 ? minor_of(c.classid) : 1;  // the options only
    add_class(*scratch, static_cast<uint16_t>(minor), 0, co.options(), QdiscEnv{});
  } catch (const ConfigRejected&) {
  }
}

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

bool is_multiqueue_kind(std::string_view kind) noexcept { return qdisc_kind(kind).multiqueue_root; }

void check_device_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 15 && name != "." && name != "..";
  for (const char c : name) {
    // The kernel's isspace() is also true for 0xA0 (Latin-1's no-break space), even in UTF-8.
    if (c == '/' || c == ':' || c == ' ' || c == '#' || static_cast<unsigned char>(c) == 0xA0) ok = false;
  }
  // escape_user_text() leaves a name as it is exactly when the name is well-formed UTF-8 without
  // control characters (C0 — the other whitespace —, DEL, C1), '"' or '\'.
  if (ok && escape_user_text(name) == name) return;
  throw TcArgError("argument " + quoted(name) +
                   " is wrong: \"dev\" not a valid ifname (1 to 15 bytes of printable UTF-8, not "
                   "\".\" or \"..\", without whitespace, '/', ':', '#', '\"' or '\\')");
}

// ---- a device's indexes ----

QdiscConfig* Config::DeviceTree::qdisc(uint32_t handle) noexcept {
  const auto it = qdiscs.find(handle);
  return it == qdiscs.end() ? nullptr : &it->second.config;
}
const QdiscConfig* Config::DeviceTree::qdisc(uint32_t handle) const noexcept {
  const auto it = qdiscs.find(handle);
  return it == qdiscs.end() ? nullptr : &it->second.config;
}
QdiscConfig* Config::DeviceTree::qdisc_at(uint32_t parent) noexcept {
  const auto it = qdisc_parents.find(parent);
  return it == qdisc_parents.end() ? nullptr : qdisc(it->second);
}
const QdiscConfig* Config::DeviceTree::root() const noexcept {
  const auto it = qdisc_parents.find(kRoot);
  return it == qdisc_parents.end() ? nullptr : qdisc(it->second);
}
ClassConfig* Config::DeviceTree::find_class(uint32_t classid) noexcept {
  const auto it = classes.find(classid);
  return it == classes.end() ? nullptr : &it->second.config;
}

void Config::DeviceTree::add_qdisc(QdiscConfig q) {
  qdisc_parents[q.parent] = q.handle;
  const uint32_t handle = q.handle;
  qdiscs[handle] = QdiscEntry{std::move(q), next_seq++};
}

void Config::DeviceTree::add_class(ClassConfig c) {
  if (minor_of(c.parent) != 0) ++child_classes[c.parent];
  const uint32_t id = c.classid;
  classes[id] = ClassEntry{std::move(c), next_seq++};
}

void Config::DeviceTree::remove_class(uint32_t classid) {
  const auto it = classes.find(classid);
  if (it == classes.end()) return;
  const uint32_t parent = it->second.config.parent;
  if (minor_of(parent) != 0) {
    const auto n = child_classes.find(parent);
    if (n != child_classes.end() && --n->second == 0) child_classes.erase(n);
  }
  child_classes.erase(classid);
  classes.erase(it);
}

void Config::DeviceTree::remove_subtree(uint32_t handle) {
  std::vector<uint32_t> work{handle};  // a work list, not recursion: depth is the input's
  while (!work.empty()) {
    const uint32_t h = work.back();
    work.pop_back();
    const auto first = qdisc_parents.lower_bound(range_first(h));
    const auto last = qdisc_parents.upper_bound(range_last(h));
    for (auto it = first; it != last; ++it)
      if (it->second != h) work.push_back(it->second);
    classes.erase(classes.lower_bound(range_first(h)), classes.upper_bound(range_last(h)));
    child_classes.erase(child_classes.lower_bound(range_first(h)),
                        child_classes.upper_bound(range_last(h)));
    const auto q = qdiscs.find(h);
    if (q == qdiscs.end()) continue;
    const auto at = qdisc_parents.find(q->second.config.parent);
    if (at != qdisc_parents.end() && at->second == h) qdisc_parents.erase(at);
    qdiscs.erase(q);
  }
}

int Config::DeviceTree::qdiscs_above(uint32_t parent) const noexcept {
  int n = 0;
  while (parent != kRoot && n <= kMaxNestedQdiscs) {
    const QdiscConfig* owner = qdisc(range_first(parent));
    if (!owner) break;
    ++n;
    parent = owner->parent;
  }
  return n;
}

std::vector<const QdiscConfig*> Config::DeviceTree::all_qdiscs() const {
  std::vector<std::pair<uint64_t, const QdiscConfig*>> v;
  v.reserve(qdiscs.size());
  for (const auto& [h, e] : qdiscs) v.emplace_back(e.config.parent == kRoot ? 0 : e.seq + 1, &e.config);
  return by_seq(v);
}

std::vector<const ClassConfig*> Config::DeviceTree::classes_of(uint32_t handle) const {
  std::vector<std::pair<uint64_t, const ClassConfig*>> v;
  const auto last = classes.upper_bound(range_last(handle));
  for (auto it = classes.lower_bound(range_first(handle)); it != last; ++it)
    v.emplace_back(it->second.seq, &it->second.config);
  return by_seq(v);
}

std::vector<const QdiscConfig*> Config::DeviceTree::qdiscs_below(uint32_t handle) const {
  std::vector<std::pair<uint64_t, const QdiscConfig*>> v;
  const auto last = qdisc_parents.upper_bound(range_last(handle));
  for (auto it = qdisc_parents.lower_bound(range_first(handle)); it != last; ++it) {
    const auto q = qdiscs.find(it->second);
    if (q != qdiscs.end() && it->second != handle) v.emplace_back(q->second.seq, &q->second.config);
  }
  return by_seq(v);
}

// ---------------------------------------------------------------------------------------------

Config::Config() : state_(std::make_unique<State>()) {}

Config::Config(const Config& other) : state_(std::make_unique<State>()) {
  state_->devs = other.state_->devs;
  state_->defer_validation = other.state_->defer_validation;
  reindex();  // the copy's index points into its own list
}

Config& Config::operator=(const Config& other) {
  if (this != &other) *this = Config(other);
  return *this;
}

// A list's nodes do not move with it, so the index stays valid in the moved-to Config.
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

void Config::reindex() {
  state_->by_name.clear();
  for (auto it = state_->devs.begin(); it != state_->devs.end(); ++it) state_->by_name.emplace(it->config.name, it);
}

std::vector<DeviceConfig> Config::devices() const {
  std::vector<DeviceConfig> out;
  for (const auto& d : state_->devs) out.push_back(d.config);
  return out;
}

const DeviceConfig* Config::device(std::string_view name) const noexcept {
  const DeviceTree* d = find(name);
  return d ? &d->config : nullptr;
}

std::vector<QdiscConfig> Config::qdiscs(std::string_view dev) const {
  std::vector<QdiscConfig> out;
  for (const QdiscConfig* q : need(dev).all_qdiscs()) out.push_back(*q);
  return out;
}

std::vector<ClassConfig> Config::classes(std::string_view dev) const {
  const DeviceTree& d = need(dev);
  std::vector<std::pair<uint64_t, const ClassConfig*>> v;
  for (const auto& [id, e] : d.classes) v.emplace_back(e.seq, &e.config);
  std::vector<ClassConfig> out;
  for (const ClassConfig* c : by_seq(v)) out.push_back(*c);
  return out;
}

Config::DeviceTree* Config::find(std::string_view dev) noexcept {
  const auto it = state_->by_name.find(dev);
  return it == state_->by_name.end() ? nullptr : &*it->second;
}
const Config::DeviceTree* Config::find(std::string_view dev) const noexcept {
  const auto it = state_->by_name.find(dev);
  return it == state_->by_name.end() ? nullptr : &*it->second;
}
Config::DeviceTree& Config::need(std::string_view dev) {
  if (DeviceTree* d = find(dev)) return *d;
  throw TcParseLine("Cannot find device " + quoted(dev));  // tc's line, exit status 1
}
const Config::DeviceTree& Config::need(std::string_view dev) const {
  if (const DeviceTree* d = find(dev)) return *d;
  throw TcParseLine("Cannot find device " + quoted(dev));
}

// ---- building trees ----

Tree Config::build(std::string_view dev, QdiscEnv env) const { return build(need(dev), env); }

Tree Config::build(const DeviceTree& d, QdiscEnv env) const {
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
        rejected("class " + format_handle(c->classid) + " is of kind " + quoted(c->kind) +
                 " but its qdisc " + format_handle(qc.handle) + " is " + escape_user_text(qc.kind));
      const ClassOptions co = class_options_of(*c);
      const uint32_t parent_minor = c->parent == kRoot ? 0 : minor_of(c->parent);
      add_class(*q, static_cast<uint16_t>(minor_of(c->classid)),
                static_cast<uint16_t>(parent_minor), co.options(), e);
      ++classes;
    }
    tree_bytes += q->preallocated_bytes() + kNodeBytes * (1 + classes);
    if (tree_bytes > kMaxTreeBytes)
      rejected("the qdisc tree of dev " + quoted(d.config.name) + " would allocate more than " +
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
    throw ConfigError("dev " + quoted(st.dev) + " has " + std::to_string(st.tx_queues) +
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
  }
  setup.queue_qdisc = [st](uint32_t index, const QdiscEnv& env) { return build_queue_root(*st, index, env); };
  return setup;
}

void Config::validate(const DeviceTree& d) const {
  if (!state_->defer_validation) (void)build(d, QdiscEnv{});
}

bool Config::builds() const {
  try {
    for (const auto& d : state_->devs) (void)build(d, QdiscEnv{});
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// ---- commands ----

bool Config::execute(std::span<const std::string> args, std::ostream& out, const ShowOptions& show) {
  if (args.empty()) throw ConfigError("missing object (qdisc, class or link)");
  const std::string& object = args[0];
  const std::string_view cmd = args.size() > 1 ? std::string_view(args[1]) : std::string_view("show");
  const auto rest = args.size() > 2 ? args.subspan(2) : std::span<const std::string>{};
  if (matches(object, "qdisc")) return qdisc_command(cmd, rest, out, show);
  if (matches(object, "class")) return class_command(cmd, rest, out, show);
  if (matches(object, "link")) return link_command(cmd, rest, out);
  throw TcArgLine("Object " + quoted(object) + " is unknown, try \"tc help\".");
}

namespace {

// A decimal number of a link option (txqueuelen, mtu, txqueue): up to 32 bits, else a parse error.
uint32_t link_number(const std::string& v, const char* what) {
  uint64_t n = 0;
  const bool digits = !v.empty() && v.size() <= 10 &&
                      std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  for (char c : digits ? v : std::string()) n = n * 10 + static_cast<uint64_t>(c - '0');
  if (!digits || n > 0xFFFFFFFFull) throw ConfigError(std::string("invalid ") + what + " " + quoted(v));
  return static_cast<uint32_t>(n);
}

// `link show`'s lines for one device.
void show_link(const DeviceConfig& d, std::ostream& out) {
  out << d.name << ": txqueuelen " << d.txqueuelen << " mtu " << d.mtu;
  if (d.tx_queues != 1) out << " numtxqueues " << d.tx_queues;
  out << "\n";
  for (std::size_t q = 0; q < d.xps_cpus.size(); ++q)
    if (!d.xps_cpus[q].empty()) out << "    tx-" << q << " xps_cpus " << format_cpu_mask(d.xps_cpus[q]) << "\n";
}

// `xps_cpus MASK`: sysfs's hex CPU mask (base/cpu_mask.hpp); a malformed one is a bad argument.
std::vector<unsigned> parse_xps_mask(const std::string& v) {
  auto cpus = parse_cpu_mask(v);
  if (!cpus) throw TcArgError("argument " + quoted(v) + " is wrong: Invalid \"xps_cpus\" mask (hex words, as in sysfs)");
  return std::move(*cpus);
}

// `link set dev D txqueue Q xps_cpus MASK`: both or neither, Q one of the device's TX queues.
void set_xps(DeviceConfig& d, std::optional<uint32_t> txqueue, const std::optional<std::vector<unsigned>>& cpus) {
  if (!txqueue || !cpus) throw TcArgError("xps_cpus needs txqueue Q, and txqueue needs xps_cpus MASK");
  if (*txqueue >= d.tx_queues)
    rejected("device " + quoted(d.name) + " has no TX queue " + std::to_string(*txqueue) + " (numtxqueues " +
             std::to_string(d.tx_queues) + ")");
  if (d.xps_cpus.size() < d.tx_queues) d.xps_cpus.resize(d.tx_queues);
  d.xps_cpus[*txqueue] = *cpus;
}

// ip's `numtxqueues N`: a number (else ip's argument error, 255) in 1..kMaxTxQueues (else the
// kernel's refusal, 2).
uint32_t parse_tx_queues(const std::string& v) {
  const auto n = parse_u32(v);
  if (!n) throw TcArgError("argument " + quoted(v) + " is wrong: Invalid \"numtxqueues\" value");
  if (*n < 1 || *n > kMaxTxQueues)
    rejected("Invalid number of transmit queues (1.." + std::to_string(kMaxTxQueues) + ").");
  return *n;
}

}  // namespace

bool Config::link_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out) {
  DeviceConfig dc;
  bool have_dev = false;
  std::optional<uint32_t> txqueuelen, mtu, tx_queues, txqueue;
  std::optional<std::vector<unsigned>> xps;
  const auto number = link_number;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "dev" || a == "name") {
      dc.name = next_arg(args, i);
      have_dev = true;
    } else if (a == "txqueuelen" || a == "qlen" || a == "txqlen") {
      txqueuelen = number(next_arg(args, i), "txqueuelen");
    } else if (a == "mtu") {
      mtu = number(next_arg(args, i), "mtu");
      if (*mtu < 68 || *mtu > 65535) rejected("mtu " + std::to_string(*mtu) + " is out of range (68..65535)");
    } else if (a == "numtxqueues") {
      tx_queues = parse_tx_queues(next_arg(args, i));
    } else if (a == "txqueue") {
      txqueue = number(next_arg(args, i), "txqueue");
    } else if (a == "xps_cpus") {
      xps = parse_xps_mask(next_arg(args, i));
    } else if (a == "type") {
      (void)next_arg(args, i);  // dummy, veth ...: every configured device is the same to tc
    } else if (!have_dev && !a.empty() && a[0] != '-') {
      dc.name = a;  // ip's "ip link add NAME type dummy"
      have_dev = true;
    } else {
      throw ConfigError("link: unknown argument " + quoted(a));
    }
  }
  if (have_dev) check_device_name(dc.name);
  if (matches(cmd, "show") || matches(cmd, "list")) {
    for (const auto& d : state_->devs) {
      if (have_dev && d.config.name != dc.name) continue;
      show_link(d.config, out);
    }
    if (have_dev && !find(dc.name)) need(dc.name);
    return false;
  }
  if (!have_dev) throw TcArgError("Not enough information: \"dev\" argument is required.");
  if (cmd == "add") {
    if (find(dc.name)) rejected("device " + quoted(dc.name) + " already exists");
    dc.txqueuelen = txqueuelen.value_or(1000);
    dc.mtu = mtu.value_or(1500);
    dc.tx_queues = tx_queues.value_or(1);
    state_->devs.emplace_back().config = dc;
    state_->by_name.emplace(dc.name, std::prev(state_->devs.end()));
    return true;
  }
  if (matches(cmd, "delete")) {
    const auto it = state_->by_name.find(dc.name);
    if (it == state_->by_name.end()) throw ConfigError("Cannot find device " + quoted(dc.name));
    state_->devs.erase(it->second);
    state_->by_name.erase(it);
    return true;
  }
  if (cmd == "set" || matches(cmd, "change")) {
    DeviceTree& d = need(dc.name);
    if (tx_queues && *tx_queues != d.config.tx_queues)
      rejected("the TX queues of a device are fixed when it is added (numtxqueues " +
               std::to_string(d.config.tx_queues) + "): delete and add it again");
    const DeviceConfig before = d.config;
    if (xps || txqueue) set_xps(d.config, txqueue, xps);
    if (txqueuelen) d.config.txqueuelen = *txqueuelen;
    if (mtu) d.config.mtu = *mtu;
    try {
      validate(d);
    } catch (...) {
      d.config = before;
      throw;
    }
    return true;
  }
  throw ConfigError("link: unknown command " + quoted(cmd) + " (add, del, set, show)");
}

namespace {

// The verb of a qdisc or class command, matched as tc matches it (a prefix; "l" is qdisc's
// "link"). Throws tc's "Command ... is unknown" (exit status 255) for another word.
Verb parse_verb(std::string_view cmd, std::string_view object) {
  if (matches(cmd, "add")) return Verb::add;
  if (matches(cmd, "change")) return Verb::change;
  if (matches(cmd, "replace")) return Verb::replace;
  if (object == "qdisc" && matches(cmd, "link"))
    throw ConfigError("\"qdisc link\" is not supported by txpath tc");
  if (matches(cmd, "delete")) return Verb::del;
  if (matches(cmd, "list") || matches(cmd, "show") || matches(cmd, "lst")) return Verb::show;
  if (matches(cmd, "help")) return Verb::help;
  throw TcArgLine("Command " + quoted(cmd) + " is unknown, try \"tc " + std::string(object) + " help\".");
}

constexpr const char* kQdiscUsage =
    "Usage: tc qdisc [ add | del | replace | change | show ] dev STRING\n"
    "       [ handle QHANDLE ] [ root | parent CLASSID ] [ QDISC_KIND [ help | OPTIONS ] ]\n"
    "       tc qdisc { show | list } [ dev STRING ] [ QDISC_ID ]\n";
constexpr const char* kClassUsage =
    "Usage: tc class [ add | del | change | replace | show ] dev STRING\n"
    "       [ classid CLASSID ] [ root | parent CLASSID ] [ QDISC_KIND [ help | OPTIONS ] ]\n"
    "       tc class show [ dev STRING ] [ root | parent CLASSID ]\n";

}  // namespace

bool is_read_only_command(std::span<const std::string> words) {
  if (words.size() < 2) return true;  // "qdisc": show
  if (!matches(words[0], "qdisc") && !matches(words[0], "class")) return matches(words[1], "show") || matches(words[1], "list");
  try {
    const Verb v = parse_verb(words[1], matches(words[0], "qdisc") ? "qdisc" : "class");
    return v == Verb::show || v == Verb::help;
  } catch (const ConfigError&) {
    return true;  // refused without reading or writing anything
  }
}

// tc parses a command's options before the kernel sees the request: a parse error (exit 1) wins
// over anything the kernel would refuse (exit 2), and over a missing device. So the options are
// first parsed on their own (preparse_*); refusals (ConfigRejected) are left for the real
// request, which meets them again. While a file is read this is skipped: a failing file is read
// again line by line (parse()).
bool Config::qdisc_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                           const ShowOptions& show) {
  const Verb verb = parse_verb(cmd, "qdisc");
  if (verb == Verb::help) {
    out << kQdiscUsage;
    return false;
  }
  if (verb == Verb::show) {
    const std::string dev = parse_qdisc_show(args);
    show_qdiscs(dev.empty() ? nullptr : &need(dev), out, show);
    return false;
  }
  const Target t = parse_target(args, false);
  if (!t.kind.empty() && !state_->defer_validation) preparse_qdisc(t.kind, t.options);
  check_tokens(t);
  if (t.dev.empty()) refuse_errno("No such device");  // tc sends the request without a device
  DeviceTree& d = need(t.dev);
  std::optional<DeviceTree> before;
  if (!state_->defer_validation) before = d;
  TreeCommand edit{*this, d, t};
  try {
    return verb == Verb::del ? edit.del() : edit.modify(verb);
  } catch (...) {
    if (before) d = std::move(*before);
    throw;
  }
}

bool Config::class_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                           const ShowOptions& show) {
  const Verb verb = parse_verb(cmd, "class");
  if (verb == Verb::help) {
    out << kClassUsage;
    return false;
  }
  if (verb == Verb::show) {
    const std::string dev = parse_class_show(args);
    if (!dev.empty()) show_classes(need(dev), out, show);  // tc lists nothing without a device
    return false;
  }
  const Target t = parse_target(args, true);
  if (!t.kind.empty() && !state_->defer_validation)
    preparse_class(t.kind, ClassConfig{t.classid.value_or(0), 0, t.kind, t.options});
  check_tokens(t);
  if (t.dev.empty()) refuse_errno("No such device");
  DeviceTree& d = need(t.dev);
  std::optional<DeviceTree> before;
  if (!state_->defer_validation) before = d;
  TreeCommand edit{*this, d, t};
  try {
    const bool changed = edit.edit_class(verb);
    // The kernel's warning about the class just added or changed (htb's quantum), on stderr.
    if (changed && verb != Verb::del && show.warn && !state_->defer_validation && t.classid &&
        minor_of(*t.classid) != 0)
      warn_about_class(build(d, QdiscEnv{}), *t.classid, show);
    return changed;
  } catch (...) {
    if (before) d = std::move(*before);
    throw;
  }
}

// ---- the file form ----

std::string Config::serialize() const {
  std::ostringstream s;
  s << "# txpath tc configuration: tc batch syntax (txpath tc -batch), rewritten by `txpath tc`\n";
  for (const auto& d : state_->devs) {
    s << "link add dev " << d.config.name << " txqueuelen " << d.config.txqueuelen << " mtu "
      << d.config.mtu;
    if (d.config.tx_queues != 1) s << " numtxqueues " << d.config.tx_queues;  // old files stay
    s << "\n";
    for (std::size_t q = 0; q < d.config.xps_cpus.size(); ++q) {
      if (d.config.xps_cpus[q].empty()) continue;
      s << "link set dev " << d.config.name << " txqueue " << q << " xps_cpus "
        << format_cpu_mask(d.config.xps_cpus[q]) << "\n";
    }
  }
  for (const auto& d : state_->devs) {
    // Tree order: a qdisc, its classes, then the qdiscs on its classes — depth first with an
    // explicit stack, never recursion on the input's depth.
    std::vector<const QdiscConfig*> stack;
    if (const QdiscConfig* root = d.root()) stack.push_back(root);
    while (!stack.empty()) {
      const QdiscConfig& q = *stack.back();
      stack.pop_back();
      s << "qdisc add dev " << d.config.name << " "
        << (q.parent == kRoot ? std::string("root") : "parent " + format_handle(q.parent))
        << " handle " << format_handle(q.handle) << " " << join(q.kind, q.options) << "\n";
      for (const ClassConfig* c : d.classes_of(q.handle))
        s << "class add dev " << d.config.name << " parent " << format_handle(c->parent)
          << " classid " << format_handle(c->classid) << " " << join(c->kind, c->options) << "\n";
      const auto below = d.qdiscs_below(q.handle);
      stack.insert(stack.end(), below.rbegin(), below.rend());
    }
  }
  return s.str();
}

namespace {

// A batch line split the way tc's makeargs does: whitespace-separated words, double quotes group,
// '#' starts a comment.
std::vector<std::string> split_line(std::string_view line) {
  // isspace() of the "C" locale, without a call per byte.
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::size_t end = i;
    if (line[i] == '"') {
      end = line.find('"', ++i);
      if (end == std::string_view::npos) end = line.size();
      out.emplace_back(line.substr(i, end - i));
      i = end < line.size() ? end + 1 : end;
    } else {
      while (end < line.size() && !space(line[end])) ++end;
      out.emplace_back(line.substr(i, end - i));
      i = end;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return lines;
}

}  // namespace

std::vector<std::string> batch_words(std::string_view line) { return split_line(line); }

bool is_tc_command(std::span<const std::string> words) {
  return !words.empty() && is_object_word(words[0]);
}

void Config::run_file_line(std::string_view line, std::size_t line_no, std::string_view origin) {
  const auto words = split_line(line);
  if (words.empty()) return;
  const std::string where = escape_user_text(origin) + ":" + std::to_string(line_no) + ": ";
  try {
    // A file that is not a tc configuration (a secret, a binary) is named, never quoted.
    if (!is_object_word(words[0]))
      throw ConfigError("line " + std::to_string(line_no) + " is not a tc command (qdisc, class or link)");
    if (words.size() > 1 && (matches(words[1], "show") || matches(words[1], "list")))
      throw ConfigError("a configuration holds no show commands");
    std::ostringstream none;  // never written: show commands are refused above
    execute(words, none, {});
  } catch (const TcArgError& e) {
    throw TcArgError(where + e.what());
  } catch (const ConfigRejected& e) {
    throw ConfigRejected(where + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.what());
  }
}

Config Config::run_prefix(std::span<const std::string_view> lines, std::size_t count,
                          std::string_view origin, std::size_t& failed) {
  Config cfg;
  cfg.state_->defer_validation = true;
  failed = count;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      cfg.run_file_line(lines[i], i + 1, origin);
    } catch (const ConfigError&) {
      failed = i;
      break;
    }
  }
  cfg.state_->defer_validation = false;
  return cfg;
}

// Reads every line without building trees, then builds each device once: O(n log n). Only a file
// that fails is looked at again, to name the first line at fault as reading it line by line
// (building after every line) would: a binary search for the line after which the configuration
// stops building, then that line run with every check — O(n log^2 n), still no quadratic path.
Config Config::parse(std::string_view text, std::string_view origin) {
  const std::vector<std::string_view> lines = split_lines(text);
  std::size_t failed = 0;
  Config cfg = run_prefix(lines, lines.size(), origin, failed);
  std::size_t good = 0;            // the configuration of the first `good` lines builds
  std::size_t bad = lines.size();  // that of the first `bad` lines does not, or line `bad` fails
  if (failed == lines.size()) {
    if (cfg.builds()) return cfg;
  } else if (std::size_t unused = 0; run_prefix(lines, failed, origin, unused).builds()) {
    good = failed;
    bad = failed + 1;
  } else {
    bad = failed;
  }
  while (bad - good > 1) {
    const std::size_t mid = good + (bad - good) / 2;
    std::size_t unused = 0;
    (run_prefix(lines, mid, origin, unused).builds() ? good : bad) = mid;
  }
  // Line `bad` (1-based) is the first at fault: run it with every check to get its error.
  cfg = run_prefix(lines, good, origin, failed);
  cfg.run_file_line(lines[bad - 1], bad, origin);
  // Not expected: the line passed its own checks. Its tree's error is the file's, and a partial
  // configuration is never returned.
  const std::string where = escape_user_text(origin) + ":" + std::to_string(bad) + ": ";
  for (const auto& d : cfg.state_->devs) {
    try {
      (void)cfg.build(d, QdiscEnv{});
    } catch (const ConfigRejected& e) {
      throw ConfigRejected(where + e.what());
    } catch (const ConfigError& e) {
      throw ConfigError(where + e.what());
    }
  }
  throw ConfigError(where + "the configuration does not build from this line on");
}

}  // namespace txpath::tc
