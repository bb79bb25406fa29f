// SPDX-License-Identifier: MIT
// The tc configuration model: devices, each with its configured qdiscs and classes, edited by tc
// commands (qdisc|class|link add/change/replace/del) and built into live qdisc trees.
//
// Invariants of a Device, after every command:
//   - at most one qdisc has parent kRoot (the configured root); without one the device's root is
//     the default pfifo_fast with handle 0, which cannot be deleted and takes no children;
//   - every other qdisc's parent is a leaf class of a qdisc of this device, and no two qdiscs
//     share a parent or a handle;
//   - every class's major is its qdisc's handle major and its parent (major:0 or a class) exists;
//   - the device builds (Config::build): every qdisc's options and every class's options are
//     accepted by the qdisc implementations — a command that breaks this is refused and leaves
//     the configuration as it was.
// Order: qdiscs and classes are kept in the order they were created, so parents come first.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qdisc/spec.hpp"
#include "txpath/error.hpp"
#include "tc/internal.hpp"
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
  if (i + 1 >= args.size())
    throw TcArgError("Command line is not complete. Try option \"help\"");
  return args[++i];
}

// ---- option merging for `change` (and replace of the same kind) ----
// The kernel's change() of these qdiscs only touches the attributes tc sent, and tc sends only
// the options given; so the effective options are the old ones with the new ones overriding.
// For every other kind tc sends a complete set, and the new options replace the old.
struct OptionShape {
  std::string_view group;  // options of one group override each other (ecn / noecn)
  int values;              // value tokens after the keyword
};

const std::map<std::string_view, OptionShape>* merge_table(std::string_view kind) {
  static const std::map<std::string_view, OptionShape> fifo = {{"limit", {"limit", 1}}};
  static const std::map<std::string_view, OptionShape> fq_codel = {
      {"limit", {"limit", 1}},           {"flows", {"flows", 1}},
      {"quantum", {"quantum", 1}},       {"target", {"target", 1}},
      {"interval", {"interval", 1}},     {"memory_limit", {"memory_limit", 1}},
      {"ce_threshold", {"ce_threshold", 1}}, {"drop_batch", {"drop_batch", 1}},
      {"ecn", {"ecn", 0}},               {"noecn", {"ecn", 0}},
  };
  static const std::map<std::string_view, OptionShape> fq = {
      {"limit", {"limit", 1}},
      {"flow_limit", {"flow_limit", 1}},
      {"quantum", {"quantum", 1}},
      {"initial_quantum", {"initial_quantum", 1}},
      {"maxrate", {"maxrate", 1}},
      {"buckets", {"buckets", 1}},
      {"refill_delay", {"refill_delay", 1}},
      {"low_rate_threshold", {"low_rate_threshold", 1}},
      {"orphan_mask", {"orphan_mask", 1}},
      {"timer_slack", {"timer_slack", 1}},
      {"ce_threshold", {"ce_threshold", 1}},
      {"horizon", {"horizon", 1}},
      {"pacing", {"pacing", 0}},
      {"nopacing", {"pacing", 0}},
      {"horizon_drop", {"horizon_mode", 0}},
      {"horizon_cap", {"horizon_mode", 0}},
  };
  if (kind == "pfifo" || kind == "bfifo" || kind == "pfifo_head_drop") return &fifo;
  if (kind == "fq_codel") return &fq_codel;
  if (kind == "fq") return &fq;
  return nullptr;
}

// Splits options into (group, tokens) runs by the table; nullopt if a token is not in it.
std::optional<std::vector<std::pair<std::string, std::vector<std::string>>>> split_options(
    const std::map<std::string_view, OptionShape>& table, const std::vector<std::string>& opts) {
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

std::vector<std::string> merge_options(std::string_view kind, const std::vector<std::string>& old,
                                       const std::vector<std::string>& given) {
  const auto* table = merge_table(kind);
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

// Tokens go into the configuration file one per word: refuse what would not read back.
void check_token(const std::string& t) {
  for (char c : t) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '#' || c == '"' || c == '\\')
      throw TcArgError("argument \"" + escape_user_text(t) +
                       "\" is wrong: whitespace, quotes, '#' and control characters are not allowed");
  }
}

// What `qdisc ...` and `class ...` commands say before the kind.
struct Target {
  std::string dev;
  std::optional<uint32_t> handle;   // qdisc: "handle"
  std::optional<uint32_t> parent;   // "root" or "parent ID"
  std::optional<uint32_t> classid;  // class: "classid"
  std::string kind;
  std::vector<std::string> options;
};

Target parse_target(std::span<const std::string> args, bool is_class) {
  Target t;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "dev") {
      if (!t.dev.empty()) throw TcArgError("duplicate \"dev\": \"" + escape_user_text(args[i + 1 < args.size() ? i + 1 : i]) + "\" is the second value.");
      t.dev = next_arg(args, i);
    } else if (a == "handle" && !is_class) {
      const std::string& v = next_arg(args, i);
      if (t.handle) throw TcArgError("duplicate \"handle\": \"" + escape_user_text(v) + "\" is the second value.");
      const auto h = parse_qdisc_handle(v);
      if (!h) throw TcArgError("argument \"" + escape_user_text(v) + "\" is wrong: invalid qdisc ID");
      t.handle = *h;
    } else if (a == "classid" && is_class) {
      const std::string& v = next_arg(args, i);
      if (t.classid) throw TcArgError("duplicate \"classid\": \"" + escape_user_text(v) + "\" is the second value.");
      const auto h = parse_classid(v);
      if (!h || *h == kRoot) throw TcArgError("argument \"" + escape_user_text(v) + "\" is wrong: invalid class ID");
      t.classid = *h;
    } else if (a == "root") {
      if (t.parent) throw TcArgError("duplicate \"parent\": \"root\" is the second value.");
      t.parent = kRoot;
    } else if (a == "parent") {
      const std::string& v = next_arg(args, i);
      if (t.parent) throw TcArgError("duplicate \"parent\": \"" + escape_user_text(v) + "\" is the second value.");
      const auto h = parse_classid(v);
      if (!h) throw TcArgError("argument \"" + escape_user_text(v) + "\" is wrong: invalid parent ID");
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
  for (const auto& o : t.options) check_token(o);
  if (!t.kind.empty()) check_token(t.kind);
  return t;
}

// QdiscOptions over `tokens` whose errors read `class "1:10 htb rate x": what`.
struct ClassOptions {
  std::vector<std::string_view> views;
  std::string shown;
  QdiscOptions options() const {
    return QdiscOptions(views, [this](const std::string& what, bool rejected) {
      const std::string msg = "class \"" + shown + "\": " + what;
      if (rejected) throw ConfigRejected(msg);
      throw ConfigError(msg);
    });
  }
};

ClassOptions class_options_of(const ClassConfig& c) {
  ClassOptions o;
  for (const auto& t : c.options) o.views.push_back(t);
  o.shown = escape_user_text(format_handle(c.classid) + " " + join(c.kind, c.options));
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<DeviceConfig> Config::devices() const {
  std::vector<DeviceConfig> out;
  for (const auto& d : devs_) out.push_back(d.config);
  return out;
}

const DeviceConfig* Config::device(std::string_view name) const noexcept {
  const Device* d = find(name);
  return d ? &d->config : nullptr;
}

std::vector<QdiscConfig> Config::qdiscs(std::string_view dev) const { return need(dev).qdiscs; }
std::vector<ClassConfig> Config::classes(std::string_view dev) const { return need(dev).classes; }

Config::Device* Config::find(std::string_view dev) noexcept {
  for (auto& d : devs_)
    if (d.config.name == dev) return &d;
  return nullptr;
}
const Config::Device* Config::find(std::string_view dev) const noexcept {
  for (const auto& d : devs_)
    if (d.config.name == dev) return &d;
  return nullptr;
}
Config::Device& Config::need(std::string_view dev) {
  if (Device* d = find(dev)) return *d;
  throw ConfigError("Cannot find device \"" + escape_user_text(dev) + "\"");
}
const Config::Device& Config::need(std::string_view dev) const {
  if (const Device* d = find(dev)) return *d;
  throw ConfigError("Cannot find device \"" + escape_user_text(dev) + "\"");
}

// ---- building trees ----

Tree Config::build(std::string_view dev, QdiscEnv env) const { return build(need(dev), env); }

Tree Config::build(const Device& d, QdiscEnv env) const {
  env.txqueuelen = d.config.txqueuelen;
  env.mtu = d.config.mtu;
  Tree tree;
  const QdiscConfig* root = nullptr;
  for (const auto& q : d.qdiscs)
    if (q.parent == kRoot) root = &q;
  if (!root) {
    env.handle_major = 0;
    tree.root = make_qdisc("pfifo_fast", env);
    tree.nodes.push_back({0, kRoot, tree.root.get()});
    return tree;
  }
  // Builds q, its classes and, recursively, the qdiscs attached to its classes.
  std::function<std::unique_ptr<Qdisc>(const QdiscConfig&)> build_node =
      [&](const QdiscConfig& qc) -> std::unique_ptr<Qdisc> {
    QdiscEnv e = env;
    e.handle_major = static_cast<uint16_t>(major_of(qc.handle));
    std::unique_ptr<Qdisc> q = make_qdisc(join(qc.kind, qc.options), e);
    tree.nodes.push_back({qc.handle, qc.parent, q.get()});
    for (const auto& c : d.classes) {
      if (major_of(c.classid) != major_of(qc.handle)) continue;
      if (c.kind != qc.kind)
        rejected("class " + format_handle(c.classid) + " is of kind \"" + escape_user_text(c.kind) +
                 "\" but its qdisc " + format_handle(qc.handle) + " is " + qc.kind);
      const ClassOptions co = class_options_of(c);
      const uint32_t parent_minor = c.parent == kRoot ? 0 : minor_of(c.parent);
      q->add_class(static_cast<uint16_t>(minor_of(c.classid)),
                   static_cast<uint16_t>(parent_minor), co.options(), e);
    }
    for (const auto& child : d.qdiscs) {
      if (child.parent == kRoot || major_of(child.parent) != major_of(qc.handle)) continue;
      std::unique_ptr<Qdisc> built = build_node(child);
      PacketList none;
      q->graft(static_cast<uint16_t>(minor_of(child.parent)), std::move(built), none);
    }
    return q;
  };
  tree.root = build_node(*root);
  return tree;
}

std::function<std::unique_ptr<Qdisc>(const QdiscEnv&)> Config::root_factory(
    std::string_view dev, std::shared_ptr<Tree> tree) const {
  const Device& d = need(dev);  // an unknown device fails now, not inside TxQueue::create
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

void Config::validate(const Device& d) const {
  if (!defer_validation_) (void)build(d, QdiscEnv{});
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
  throw ConfigError("Object \"" + escape_user_text(object) +
                    "\" is unknown, try \"txpath tc help\" (known: qdisc, class, link)");
}

bool Config::link_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out) {
  DeviceConfig dc;
  bool have_dev = false;
  std::optional<uint32_t> txqueuelen, mtu;
  auto number = [](const std::string& v, const char* what) {
    uint64_t n = 0;
    if (v.empty() || v.size() > 10) throw ConfigError(std::string("invalid ") + what + " \"" + escape_user_text(v) + "\"");
    for (char c : v) {
      if (c < '0' || c > '9') throw ConfigError(std::string("invalid ") + what + " \"" + escape_user_text(v) + "\"");
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n > 0xFFFFFFFFull) throw ConfigError(std::string("invalid ") + what + " \"" + v + "\"");
    return static_cast<uint32_t>(n);
  };
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
    } else if (a == "type") {
      (void)next_arg(args, i);  // dummy, veth ...: every configured device is the same to tc
    } else if (!have_dev && !a.empty() && a[0] != '-') {
      dc.name = a;  // ip's "ip link add NAME type dummy"
      have_dev = true;
    } else {
      throw ConfigError("link: unknown argument \"" + escape_user_text(a) + "\"");
    }
  }
  if (have_dev) {
    check_token(dc.name);
    if (dc.name.empty() || dc.name.size() > 15)
      throw ConfigError("invalid device name \"" + escape_user_text(dc.name) + "\" (1..15 characters)");
  }
  if (matches(cmd, "show") || matches(cmd, "list")) {
    for (const auto& d : devs_) {
      if (have_dev && d.config.name != dc.name) continue;
      out << d.config.name << ": txqueuelen " << d.config.txqueuelen << " mtu " << d.config.mtu << "\n";
    }
    if (have_dev && !find(dc.name)) need(dc.name);
    return false;
  }
  if (!have_dev) throw TcArgError("Not enough information: \"dev\" argument is required.");
  if (cmd == "add") {
    if (find(dc.name)) rejected("device \"" + dc.name + "\" already exists");
    dc.txqueuelen = txqueuelen.value_or(1000);
    dc.mtu = mtu.value_or(1500);
    devs_.push_back(Device{dc, {}, {}});
    return true;
  }
  if (matches(cmd, "delete")) {
    Device& d = need(dc.name);
    devs_.erase(devs_.begin() + (&d - devs_.data()));
    return true;
  }
  if (cmd == "set" || matches(cmd, "change")) {
    Device& d = need(dc.name);
    const Device before = d;
    if (txqueuelen) d.config.txqueuelen = *txqueuelen;
    if (mtu) d.config.mtu = *mtu;
    try {
      validate(d);
    } catch (...) {
      d = before;
      throw;
    }
    return true;
  }
  throw ConfigError("link: unknown command \"" + escape_user_text(cmd) + "\" (add, del, set, show)");
}

namespace {

// Removes qdisc `handle` and everything below it (its classes, the qdiscs on them).
void remove_subtree(std::vector<QdiscConfig>& qdiscs, std::vector<ClassConfig>& classes, uint32_t handle) {
  const uint32_t major = major_of(handle);
  std::vector<uint32_t> children;
  for (const auto& q : qdiscs)
    if (q.parent != kRoot && major_of(q.parent) == major && q.handle != handle) children.push_back(q.handle);
  for (uint32_t c : children) remove_subtree(qdiscs, classes, c);
  std::erase_if(classes, [&](const ClassConfig& c) { return major_of(c.classid) == major; });
  std::erase_if(qdiscs, [&](const QdiscConfig& q) { return q.handle == handle; });
}

// tc parses a command's options before the kernel sees the request: a parse error (exit 1) wins
// over anything the kernel would refuse (exit 2). So the options are first parsed on their own;
// refusals (ConfigRejected) are left for the real request, which meets them again.
void preparse_qdisc(const std::string& kind, const std::vector<std::string>& options) {
  try {
    (void)make_qdisc(join(kind, options), QdiscEnv{});
  } catch (const ConfigRejected&) {
  }
}

void preparse_class(const std::string& kind, const ClassConfig& c) {
  std::unique_ptr<Qdisc> scratch;
  try {
    QdiscEnv env;
    env.handle_major = static_cast<uint16_t>(major_of(c.classid));
    scratch = make_qdisc(kind, env);
  } catch (const ConfigError&) {
    return;  // not a qdisc kind: the request fails on the kind mismatch
  }
  try {
    const ClassOptions co = class_options_of(c);
    scratch->add_class(static_cast<uint16_t>(minor_of(c.classid)), 0, co.options(), QdiscEnv{});
  } catch (const ConfigRejected&) {
  }
}

}  // namespace

bool Config::qdisc_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                           const ShowOptions& show) {
  if (matches(cmd, "show") || matches(cmd, "list") || cmd == "ls" || cmd == "lst") {
    Target t = parse_target(args, false);
    if (!t.kind.empty()) throw ConfigError("qdisc show: unknown argument \"" + escape_user_text(t.kind) + "\"");
    if (t.dev.empty()) {
      show_qdiscs(nullptr, out, show);
    } else {
      show_qdiscs(&need(t.dev), out, show);
    }
    return false;
  }
  const bool add = cmd == "add";
  const bool change = cmd == "change" || cmd == "chg";
  const bool replace = matches(cmd, "replace");
  const bool del = matches(cmd, "delete");
  if (!add && !change && !replace && !del)
    throw ConfigError("Command \"" + escape_user_text(cmd) + "\" is unknown, try \"txpath tc qdisc help\".");
  Target t = parse_target(args, false);
  if (t.dev.empty()) throw ConfigError("Cannot find device \"\"");
  Device& d = need(t.dev);
  if (!del && t.kind.empty()) throw ConfigError("qdisc " + std::string(cmd) + ": the qdisc kind is missing");
  if (!del) preparse_qdisc(t.kind, t.options);
  const Device before = d;

  auto at_parent = [&](uint32_t parent) -> QdiscConfig* {
    for (auto& q : d.qdiscs)
      if (q.parent == parent) return &q;
    return nullptr;
  };
  auto by_handle = [&](uint32_t handle) -> QdiscConfig* {
    for (auto& q : d.qdiscs)
      if (q.handle == handle) return &q;
    return nullptr;
  };
  auto check_parent_class = [&](uint32_t parent) {
    if (parent == kRoot) return;
    const uint32_t major = major_of(parent);
    bool found = false;
    for (const auto& q : d.qdiscs) found = found || major_of(q.handle) == major;
    if (!found || major == 0) rejected("Failed to find qdisc with specified classid.");
  };
  auto auto_handle = [&]() -> uint32_t {
    for (uint32_t major = 0x8001; major <= 0xFFFF; ++major)
      if (!by_handle(major << 16)) return major << 16;
    rejected("no free qdisc handle");
  };

  try {
    if (del) {
      QdiscConfig* q = nullptr;
      if (t.parent) {
        q = at_parent(*t.parent);
        if (!q) {
          if (*t.parent == kRoot) rejected("Cannot delete qdisc with handle of zero.");
          rejected("Failed to find qdisc with specified classid.");
        }
        if (t.handle && q->handle != *t.handle) rejected("Invalid handle.");
      } else if (t.handle) {
        q = by_handle(*t.handle);
        if (!q) rejected("Failed to find qdisc with specified handle.");
      } else {
        throw ConfigError("qdisc del: say which qdisc: \"root\", \"parent ID\" or \"handle ID\"");
      }
      if (!t.kind.empty() && t.kind != q->kind) rejected("Invalid qdisc name: the qdisc is " + q->kind + ", not " + escape_user_text(t.kind));
      remove_subtree(d.qdiscs, d.classes, q->handle);
      validate(d);
      return true;
    }

    if (!t.parent) rejected("a parent is needed: \"root\" or \"parent ID\"");
    check_parent_class(*t.parent);
    if (change) {
      QdiscConfig* existing = t.handle ? by_handle(*t.handle) : at_parent(*t.parent);
      if (!existing) rejected("Specified qdisc not found.");
      if (existing->parent != *t.parent) rejected("Specified qdisc not found at that parent.");
      if (existing->kind != t.kind) rejected("Specified qdisc kind is different (" + existing->kind + ").");
      if (t.handle && existing->handle != *t.handle) rejected("Invalid handle.");
      if (existing->kind == "fq_codel" &&
          std::find(t.options.begin(), t.options.end(), "flows") != t.options.end())
        rejected("fq_codel: the number of flows cannot be changed");
      existing->options = merge_options(existing->kind, existing->options, t.options);
      validate(d);
      return true;
    }
    if (add) {
      if (t.handle && by_handle(*t.handle)) rejected("Exclusivity flag on, cannot modify.");
      if (at_parent(*t.parent)) rejected("Exclusivity flag on, cannot modify.");
      QdiscConfig q{t.handle.value_or(0), *t.parent, t.kind, t.options};
      if (q.handle == 0) q.handle = auto_handle();
      if (*t.parent == kRoot) d.qdiscs.insert(d.qdiscs.begin(), std::move(q));
      else d.qdiscs.push_back(std::move(q));
      validate(d);
      return true;
    }
    // replace: change the qdisc at that parent if it is of the same kind and handle, else put a
    // new one in its place (its subtree goes).
    QdiscConfig* cur = at_parent(*t.parent);
    if (cur && cur->kind == t.kind && (!t.handle || *t.handle == cur->handle)) {
      cur->options = merge_options(cur->kind, cur->options, t.options);
      validate(d);
      return true;
    }
    if (t.handle) {
      QdiscConfig* other = by_handle(*t.handle);
      if (other && other != cur) rejected("Exclusivity flag on, cannot modify: handle " + format_handle(*t.handle) + " is in use.");
    }
    if (cur) remove_subtree(d.qdiscs, d.classes, cur->handle);
    QdiscConfig q{t.handle.value_or(0), *t.parent, t.kind, t.options};
    if (q.handle == 0) q.handle = auto_handle();
    if (*t.parent == kRoot) d.qdiscs.insert(d.qdiscs.begin(), std::move(q));
    else d.qdiscs.push_back(std::move(q));
    validate(d);
    return true;
  } catch (...) {
    d = before;
    throw;
  }
}

bool Config::class_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out,
                           const ShowOptions& show) {
  Target t = parse_target(args, true);
  if (matches(cmd, "show") || matches(cmd, "list") || cmd == "ls" || cmd == "lst") {
    if (!t.kind.empty()) throw ConfigError("class show: unknown argument \"" + escape_user_text(t.kind) + "\"");
    if (t.dev.empty()) throw ConfigError("class show: \"dev\" is required");
    show_classes(need(t.dev), out, show);
    return false;
  }
  const bool add = cmd == "add";
  const bool change = cmd == "change" || cmd == "chg";
  const bool replace = matches(cmd, "replace");
  const bool del = matches(cmd, "delete");
  if (!add && !change && !replace && !del)
    throw ConfigError("Command \"" + escape_user_text(cmd) + "\" is unknown, try \"txpath tc class help\".");
  if (t.dev.empty()) throw ConfigError("Cannot find device \"\"");
  Device& d = need(t.dev);
  const Device before = d;
  if (!t.classid) {
    if (t.parent && *t.parent != kRoot && minor_of(*t.parent) != 0 && del) t.classid = t.parent;
    else rejected("a class id is needed: \"classid MAJ:MIN\"");
  }
  const uint32_t id = *t.classid;
  if (minor_of(id) == 0) rejected("invalid class id " + format_handle(id) + ": the minor must not be 0");
  auto find_class = [&](uint32_t classid) -> ClassConfig* {
    for (auto& c : d.classes)
      if (c.classid == classid) return &c;
    return nullptr;
  };
  const QdiscConfig* owner = nullptr;
  for (const auto& q : d.qdiscs)
    if (major_of(q.handle) == major_of(id)) owner = &q;
  if (!owner) rejected("Failed to find qdisc with specified classid.");
  try {
    ClassConfig* cur = find_class(id);
    if (del) {
      if (!cur) rejected("Specified class not found.");
      for (const auto& c : d.classes)
        if (c.parent == id) rejected("Class " + format_handle(id) + " has child classes: delete them first.");
      for (const auto& q : d.qdiscs)
        if (q.parent == id) {
          remove_subtree(d.qdiscs, d.classes, q.handle);
          break;
        }
      std::erase_if(d.classes, [&](const ClassConfig& c) { return c.classid == id; });
      validate(d);
      return true;
    }
    if (t.kind.empty()) throw ConfigError("class " + std::string(cmd) + ": the class kind is missing");
    preparse_class(t.kind, ClassConfig{id, 0, t.kind, t.options});
    if (t.kind != owner->kind)
      rejected("Specified class kind \"" + escape_user_text(t.kind) + "\" is different from its qdisc's (" + owner->kind + ").");
    if (cur && add) rejected("Class " + format_handle(id) + " already exists.");
    if (!cur && change) rejected("Specified class not found.");
    if (cur) {  // change, or replace of an existing class
      if (t.parent && *t.parent != kRoot && *t.parent != cur->parent &&
          !(minor_of(*t.parent) == 0 && cur->parent == (id & 0xFFFF0000u)))
        rejected("Cannot move class " + format_handle(id) + " to another parent.");
      cur->options = t.options;
      validate(d);
      return true;
    }
    uint32_t parent = t.parent.value_or(kRoot);
    if (parent == kRoot || parent == (id & 0xFFFF0000u)) {
      parent = id & 0xFFFF0000u;
    } else {
      if (major_of(parent) != major_of(id)) rejected("The parent " + format_handle(parent) + " is not a class of qdisc " + format_handle(id & 0xFFFF0000u) + ".");
      if (!find_class(parent)) rejected("Failed to find the parent class " + format_handle(parent) + ".");
      // A leaf that gets a child becomes an inner class: its qdisc goes (as in the kernel).
      for (const auto& q : d.qdiscs)
        if (q.parent == parent) {
          remove_subtree(d.qdiscs, d.classes, q.handle);
          break;
        }
    }
    d.classes.push_back(ClassConfig{id, parent, t.kind, t.options});
    validate(d);
    return true;
  } catch (...) {
    d = before;
    throw;
  }
}

// ---- the file form ----

std::string Config::serialize() const {
  std::ostringstream s;
  s << "# txpath tc configuration: tc batch syntax (txpath tc -batch), rewritten by `txpath tc`\n";
  for (const auto& d : devs_)
    s << "link add dev " << d.config.name << " txqueuelen " << d.config.txqueuelen << " mtu "
      << d.config.mtu << "\n";
  for (const auto& d : devs_) {
    // Tree order: a qdisc, its classes, then the qdiscs on its classes.
    std::function<void(const QdiscConfig&)> emit = [&](const QdiscConfig& q) {
      s << "qdisc add dev " << d.config.name << " "
        << (q.parent == kRoot ? std::string("root") : "parent " + format_handle(q.parent))
        << " handle " << format_handle(q.handle) << " " << join(q.kind, q.options) << "\n";
      for (const auto& c : d.classes)
        if (major_of(c.classid) == major_of(q.handle))
          s << "class add dev " << d.config.name << " parent " << format_handle(c.parent)
            << " classid " << format_handle(c.classid) << " " << join(c.kind, c.options) << "\n";
      for (const auto& child : d.qdiscs)
        if (child.parent != kRoot && major_of(child.parent) == major_of(q.handle)) emit(child);
    };
    for (const auto& q : d.qdiscs)
      if (q.parent == kRoot) emit(q);
  }
  return s.str();
}

namespace {

// A batch line split the way tc's makeargs does: whitespace-separated words, double quotes group,
// '#' starts a comment.
std::vector<std::string> split_line(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string word;
    if (line[i] == '"') {
      ++i;
      while (i < line.size() && line[i] != '"') word += line[i++];
      if (i < line.size()) ++i;
    } else {
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) word += line[i++];
    }
    out.push_back(std::move(word));
  }
  return out;
}

}  // namespace

std::vector<std::string> batch_words(std::string_view line) { return split_line(line); }


Config Config::parse(std::string_view text, std::string_view origin) {
  // Fast path: run every line without building trees, then build each device once. If that
  // fails, the slow path below builds after every line to name the line at fault.
  {
    Config fast = parse_lines(text, origin, /*defer=*/true);
    fast.defer_validation_ = false;
    try {
      for (const auto& d : fast.devs_) fast.validate(d);
      return fast;
    } catch (const ConfigError&) {
    }
  }
  return parse_lines(text, origin, /*defer=*/false);
}

Config Config::parse_lines(std::string_view text, std::string_view origin, bool defer) {
  Config cfg;
  cfg.defer_validation_ = defer;
  std::size_t line_no = 0;
  std::ostringstream sink;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    const auto words = split_line(line);
    if (words.empty()) continue;
    try {
      if (!matches(words[0], "qdisc") && !matches(words[0], "class") && !matches(words[0], "link"))
        throw ConfigError("Object \"" + escape_user_text(words[0]) + "\" is unknown (qdisc, class, link)");
      if (words.size() > 1 && (matches(words[1], "show") || matches(words[1], "list")))
        throw ConfigError("a configuration holds no show commands");
      cfg.execute(words, sink, {});
    } catch (const ConfigError& e) {
      const std::string msg = std::string(origin) + ":" + std::to_string(line_no) + ": " + e.what();
      if (dynamic_cast<const TcArgError*>(&e)) throw TcArgError(msg);
      if (dynamic_cast<const ConfigRejected*>(&e)) throw ConfigRejected(msg);
      throw ConfigError(msg);
    }
  }
  return cfg;
}

}  // namespace txpath::tc
