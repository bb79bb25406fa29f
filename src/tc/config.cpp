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

namespace config_detail {

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

const std::string& next_arg(std::span<const std::string> args, std::size_t& i) {
  if (i + 1 >= args.size()) throw TcArgLine(std::string(QdiscOptions::kIncomplete));
  return args[++i];
}

bool is_object_word(std::string_view w) {
  return matches(w, "qdisc") || matches(w, "class") || matches(w, "link");
}

QdiscOptions ClassOptions::options() const { return QdiscOptions(views, throw_tc_line); }

ClassOptions class_options_of(const ClassConfig& c) {
  ClassOptions o;
  for (const auto& t : c.options) o.views.push_back(t);
  o.config = &c;
  return o;
}

}  // namespace config_detail

using namespace config_detail;

namespace {

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

}  // namespace txpath::tc
