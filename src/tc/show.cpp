// SPDX-License-Identifier: MIT
// tc qdisc show / tc class show: text and JSON (-j) in tc's formats, with -s statistics taken from
// a running process (LiveStats) when one serves this configuration, else from the configuration's
// own idle tree (all zero) — and then ShowOptions::note says so, with the reason: zeros are never
// shown as if they were live.
//
// Text:  qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 ... drop_batch 64
//         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
//         backlog 0b 0p requeues 0
//          maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0      (the qdisc's xstats)
//        class htb 1:10 parent 1:1 leaf 10: prio 0 rate 3Mbit ceil 10Mbit burst 1599b cburst 1600b
// JSON:  [{"kind":"fq_codel","handle":"1:","root":true,"refcnt":2,"options":{...},"bytes":0,...}]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <span>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/text.hpp"
#include "qdisc/mq.hpp"
#include "tc/config_model.hpp"
#include "tc/internal.hpp"
#include "tc/live_document.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/tc_units.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

using Json = nlohmann::ordered_json;

struct Counters {
  QdiscStats stats;
  Xstats xstats;
  // The running tree's typed options (the live document's), when its entry is of the kind shown.
  std::optional<DumpAttrs> options;
};

Json parse_object(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : Json::object();
}

// The live counters of `key` ("1:" / "1:10") in section "qdiscs" / "classes" of a document.
// With the entry's typed options when the entry is of `kind` (the live tree may differ from the
// configuration's).
std::optional<Counters> live_counters(const LiveEntries* doc, bool classes, const std::string& key,
                                      std::string_view kind) {
  if (!doc) return std::nullopt;
  const auto& sec = classes ? doc->classes : doc->qdiscs;
  const auto it = sec.find(key);
  if (it == sec.end()) return std::nullopt;
  const LiveEntry& n = it->second;
  Counters c{n.stats, n.xstats, std::nullopt};
  if (n.options && n.kind == kind) c.options = n.options;
  return c;
}

void print_stats_text(std::ostream& out, const QdiscStats& s) {
  out << " Sent " << s.bytes << " bytes " << s.packets << " pkt (dropped " << s.drops
      << ", overlimits " << s.overlimits << " requeues " << s.requeues << ") \n";
  out << " backlog " << format_size(s.backlog) << " " << s.qlen << "p requeues " << s.requeues << "\n";
}

// tc's generic counters as JSON keys of `j` (tc -s -j, and the live document).
void add_counters_json(Json& j, const QdiscStats& s) {
  j["bytes"] = s.bytes;
  j["packets"] = s.packets;
  j["drops"] = s.drops;
  j["overlimits"] = s.overlimits;
  j["requeues"] = s.requeues;
  j["backlog"] = s.backlog;
  j["qlen"] = s.qlen;
}

void add_stats_json(Json& j, const QdiscStats& s, const Xstats& x) {
  add_counters_json(j, s);
  for (const auto& [k, v] : x) j[k] = v;  // tc -j puts xstats at the top level
}


// One text entry: "HEAD OPTIONS\n" (a space after the options where tc prints one), then with -s
// the counters and the xstats lines.
void print_entry(std::ostream& out, const std::string& head, std::string_view kind,
                 const std::string& opts, bool stats, const Counters& c,
                 const std::string& xstats_text) {
  out << head << opts;
  if (!opts.empty() && qdisc_kind(kind).options_end_with_space) out << " ";
  out << "\n";
  if (stats) {
    print_stats_text(out, c.stats);
    out << xstats_text;
  }
}

void note(const Config::ShowOptions& show, const std::string& line) {
  if (show.note) show.note(line);
}

// The live document of `dev` when -s asks for statistics and a process serves them. Otherwise,
// when live counters were asked for, a note says why the configuration's are shown instead.
std::optional<LiveEntries> live_document(const Config::ShowOptions& show, const std::string& dev) {
  if (!show.stats || !show.fetch_live) return std::nullopt;
  const Config::ShowOptions::LiveDocument live = show.fetch_live(dev);
  std::string why = live.why_not.empty() ? "no running process serves it" : live.why_not;
  if (live.text) {
    std::optional<LiveEntries> doc = read_live_document(*live.text);
    if (doc && doc->error)
      why = "the running process took no snapshot: " + escape_user_text(*doc->error);
    else if (doc && doc->has_qdiscs && doc->has_classes)
      return doc;
    else
      why = "the running process sent no valid document";
  }
  note(show, "no live counters for dev " + escape_user_text(dev) + " (" + why +
                 "): showing the configuration");
  return std::nullopt;
}

// After a live listing: entries the running tree does not have show the configuration's counters.
void note_not_live(const Config::ShowOptions& show, const std::string& dev, std::size_t count) {
  if (count == 0) return;
  note(show, "dev " + escape_user_text(dev) + ": " + std::to_string(count) +
                 (count == 1 ? " entry is" : " entries are") +
                 " not in the running process's tree (the configuration changed since it "
                 "started): showing the configuration's counters for " +
                 (count == 1 ? "it" : "them"));
}

// The counters shown for one entry: the running process's (from the live document `doc`), else
// the configuration's; an entry the live tree lacks counts in `not_live`.
Counters shown_counters(const std::optional<LiveEntries>& doc, bool classes, const std::string& id,
                        std::string_view kind, Counters configured, std::size_t& not_live) {
  if (auto live = live_counters(doc ? &*doc : nullptr, classes, id, kind)) return *live;
  if (doc) ++not_live;
  return configured;
}

// Appends an entry's JSON object `j` to `arr`, with its options and (-s) its counters.
void push_json(Json& arr, Json j, const std::string& options_json, const Counters& c, bool stats) {
  j["options"] = parse_object(options_json);
  if (stats) add_stats_json(j, c.stats, c.xstats);
  arr.push_back(std::move(j));
}

void emit_json(std::ostream& out, const Json& arr, bool pretty) {
  out << (pretty ? arr.dump(4) : arr.dump()) << "\n";
}

// Linux's qdisc hash (dev->qdisc_hash, 16 buckets, hash_32 of the handle): `tc qdisc show`
// lists the root, then every other qdisc bucket by bucket, the newest first in each bucket.
unsigned hash_bucket(uint32_t handle) noexcept { return (handle * 0x61C88647u) >> 28; }

// The nodes in the order Linux lists them. Below an mq / mqprio root that is the hash order, with
// `age(node)` giving each qdisc's creation order (larger: newer); other trees keep their tree
// order (their qdiscs were made in it).
template <class Age>
std::vector<const TreeNode*> listing_order(const Tree& tree, Age&& age) {
  std::vector<const TreeNode*> out;
  for (const TreeNode& n : tree.nodes) out.push_back(&n);
  if (out.size() < 2 || !dynamic_cast<const MqQdisc*>(tree.nodes[0].qdisc)) return out;
  std::stable_sort(out.begin() + 1, out.end(), [&](const TreeNode* a, const TreeNode* b) {
    const unsigned ba = hash_bucket(a->handle), bb = hash_bucket(b->handle);
    if (ba != bb) return ba < bb;
    return age(*a) > age(*b);
  });
  return out;
}

// The root's reference count as tc prints it ("refcnt N" when not 1): the device holds a root
// once and every TX queue once more, but mq and mqprio are held by the device alone.
std::optional<uint32_t> root_refcnt(const Qdisc& root, uint32_t tx_queues) {
  if (dynamic_cast<const MqQdisc*>(&root)) return std::nullopt;
  return tx_queues + 1;
}

}  // namespace

std::string qdisc_key(uint32_t handle, uint32_t parent) {
  // mq's default children all have handle 0: their parent tells them apart.
  if (handle != 0 || parent == kRoot) return format_handle(handle);
  return format_handle(handle) + "@" + format_handle(parent);
}

QdiscStats shown_stats(const Qdisc& q) {
  if (const auto* mq = dynamic_cast<const MqQdisc*>(&q)) return mq->children_stats();
  return q.stats();
}

void Config::show_qdiscs(const DeviceTree* only, std::ostream& out, const ShowOptions& show) const {
  Json arr = Json::array();
  for (const auto& d : state_->devs) {
    if (only && &d != only) continue;
    const Tree tree = build(d, QdiscEnv{});
    const std::optional<LiveEntries> doc = live_document(show, d.config.name);
    std::size_t not_live = 0;
    // A qdisc's age: its configuration's sequence number; a default child of mq (handle 0) was
    // made with mq, the one of the highest queue last.
    const auto age = [&](const TreeNode& n) -> std::pair<uint64_t, uint32_t> {
      const auto it = d.qdiscs.find(n.handle != 0 ? n.handle : (n.parent & 0xFFFF0000u));
      return {it == d.qdiscs.end() ? 0 : it->second.seq + 1, n.handle == 0 ? minor_of(n.parent) : 0};
    };
    const std::optional<uint32_t> refcnt = root_refcnt(*tree.root, d.config.tx_queues);
    for (const TreeNode* node : listing_order(tree, age)) {
      const TreeNode& n = *node;
      const Qdisc& q = *n.qdisc;
      const std::string handle = format_handle(n.handle);
      const Counters c = shown_counters(doc, /*classes=*/false, qdisc_key(n.handle, n.parent), q.kind(),
                                        {shown_stats(q), q.xstats(), std::nullopt}, not_live);
      // The options as the running tree dumps them, else as the configuration's does.
      const DumpAttrs opts = c.options ? *c.options : q.dump_options();
      if (show.json) {
        Json j;
        j["kind"] = std::string(q.kind());
        j["handle"] = handle;
        if (!only) j["dev"] = d.config.name;
        if (n.parent == kRoot) j["root"] = true;
        else j["parent"] = format_handle(n.parent);
        if (n.parent == kRoot && refcnt) j["refcnt"] = *refcnt;
        push_json(arr, std::move(j), options_json(q.kind(), opts, show.details), c, show.stats);
        continue;
      }
      std::string head = "qdisc " + std::string(q.kind()) + " " + handle + " ";
      if (!only) head += "dev " + d.config.name + " ";
      head += n.parent == kRoot ? std::string("root ") : "parent " + format_handle(n.parent) + " ";
      if (n.parent == kRoot && refcnt) head += "refcnt " + std::to_string(*refcnt) + " ";
      print_entry(out, head, q.kind(), options_text(q.kind(), opts, show.details), show.stats, c,
                  show.stats ? xstats_text(q.kind(), c.xstats) : "");
    }
    note_not_live(show, d.config.name, not_live);
  }
  if (show.json) emit_json(out, arr, show.pretty);
}

void Config::show_classes(const DeviceTree& d, std::ostream& out, const ShowOptions& show) const {
  Json arr = Json::array();
  const Tree tree = build(d, QdiscEnv{});
  const std::optional<LiveEntries> doc = live_document(show, d.config.name);
  std::size_t not_live = 0;
  std::unordered_map<uint32_t, uint32_t> leaf_of;  // class id -> the qdisc attached to it
  for (const TreeNode& child : tree.nodes)
    if (child.handle != 0) leaf_of[child.parent] = child.handle;  // tc: "leaf" if not 0
  for (const TreeNode& n : tree.nodes) {
    const Qdisc& q = *n.qdisc;
    const ClassOps* ops = q.class_ops();
    if (!ops) continue;  // classless
    const uint32_t major = n.handle & 0xFFFF0000u;
    // With -s, tc prints a class's counters and its xstats, each block followed by an empty line
    // (the class xstats printer ends with it), or only the empty line for a class the kernel reports
    // no counters for (tbf's).
    const bool stats = show.stats && ops->class_has_stats();
    for (const QdiscClassInfo& info : ops->listed_classes()) {
      const uint32_t classid = major | info.minor;
      const std::string id = format_handle(classid);
      const uint32_t parent = major | info.parent_minor;
      std::optional<uint32_t> leaf;
      if (const auto it = leaf_of.find(classid); it != leaf_of.end()) leaf = it->second;
      const Counters c = shown_counters(doc, /*classes=*/true, id, q.kind(),
                                        {ops->class_stats(info.minor), ops->class_xstats(info.minor), std::nullopt},
                                        not_live);
      if (show.json) {
        Json j;
        j["class"] = std::string(q.kind());
        j["handle"] = id;
        if (info.print_root) j["root"] = true;
        else j["parent"] = info.parent_none ? std::string("none") : format_handle(parent);
        if (leaf) j["leaf"] = format_handle(*leaf);
        push_json(arr, std::move(j), class_options_json(q, info.minor), c, stats);
        continue;
      }
      std::string head = "class " + std::string(q.kind()) + " " + id + " ";
      head += info.print_root ? std::string("root ")
                              : "parent " + (info.parent_none ? std::string("none") : format_handle(parent)) + " ";
      if (leaf) head += "leaf " + format_handle(*leaf) + " ";
      print_entry(out, head, "class " + std::string(q.kind()), class_options_text(q, info.minor, show.details),
                  stats, c, stats ? class_xstats_text(q, c.xstats) : "");
      if (show.stats && !stats) out << "\n";
    }
  }
  note_not_live(show, d.config.name, not_live);
  if (show.json) emit_json(out, arr, show.pretty);
}

// ---- the live document ----

void append_counters(const Qdisc& q, uint32_t handle, uint32_t parent, const QdiscStats& stats,
                     TreeCounters& out) {
  const std::string kind(q.kind());
  out.entries.push_back({handle, parent, false, stats, q.xstats(), kind, kRoot, q.dump_options()});
  const uint32_t major = handle & 0xFFFF0000u;
  if (const ClassOps* ops = q.class_ops())
    for (const QdiscClassInfo& info : ops->classes())
      out.entries.push_back({major | info.minor, kRoot, true, ops->class_stats(info.minor),
                             ops->class_xstats(info.minor), kind, major | info.parent_minor});
}

TreeCounters collect_counters(const std::vector<TreeNode>& nodes,
                              const std::optional<QdiscStats>& root, const Qdisc* running_root) {
  TreeCounters out;
  for (const TreeNode& n : nodes) {
    const bool is_root = &n == &nodes.front();
    const Qdisc& q = is_root && running_root ? *running_root : *n.qdisc;
    append_counters(q, n.handle, n.parent, is_root && root ? *root : shown_stats(q), out);
  }
  return out;
}

TreeCounters merge_queue_counters(const QueueTrees& trees, std::span<const TreeCounters> queues) {
  TreeCounters out;
  std::map<std::pair<bool, std::string>, std::size_t> index;  // (is_class, key) -> entry
  const auto add = [&](const TreeCounters::Entry& e) {
    const std::string key = e.is_class ? format_handle(e.handle) : qdisc_key(e.handle, e.parent);
    const auto [it, fresh] = index.emplace(std::make_pair(e.is_class, key), out.entries.size());
    if (fresh) {
      out.entries.push_back(e);
      return;
    }
    TreeCounters::Entry& into = out.entries[it->second];
    add_counts(into.stats, e.stats);
    if (into.xstats.size() == e.xstats.size())
      for (std::size_t k = 0; k < e.xstats.size(); ++k) into.xstats[k].second += e.xstats[k].second;
  };
  if (is_multiqueue_kind(trees.root_kind)) {
    // Queue i's first entry is its top qdisc, mq's child at class root:i+1 (Linux's mq_dump and
    // mq_dump_class_stats read the same numbers).
    std::vector<QdiscStats> top(queues.size());
    TreeCounters::Entry root{trees.root_handle, kRoot, false, {}, {}, trees.root_kind};
    for (std::size_t i = 0; i < queues.size(); ++i) {
      if (!queues[i].entries.empty()) top[i] = queues[i].entries.front().stats;
      add_counts(root.stats, top[i]);
    }
    add(root);
    const TrafficClasses& tcs = trees.traffic_classes;
    for (uint32_t t = 0; t < tcs.num_tc && t < tcs.tc_queues.size(); ++t) {
      TreeCounters::Entry c{trees.root_handle | (MqQdisc::kTcClassBase + t), kRoot, true, {}, {},
                            trees.root_kind, trees.root_handle};
      const TrafficClasses::Range& r = tcs.tc_queues[t];
      for (uint32_t q = r.offset; q < r.offset + r.count && q < top.size(); ++q) add_counts(c.stats, top[q]);
      add(c);
    }
    for (std::size_t i = 0; i < top.size(); ++i)
      add({trees.root_handle | static_cast<uint32_t>(i + 1), kRoot, true, top[i], {}, trees.root_kind,
           trees.root_handle});
  }
  for (const TreeCounters& q : queues)
    for (const TreeCounters::Entry& e : q.entries) add(e);
  return out;
}

namespace {

// `s` as a JSON string: copied between quotes when it is printable ASCII without '"' or '\\'
// (every handle, kind and xstat name txpath makes), else escaped by nlohmann::json, bytes that
// are not UTF-8 as U+FFFD.
void append_json_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

template <class Int>
void append_number(std::string& out, Int v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

// One entry's object, its keys in the order readers have always seen them.
void append_entry(std::string& out, const TreeCounters::Entry& e) {
  const QdiscStats& s = e.stats;
  const std::pair<const char*, uint64_t> counts[] = {
      {"{\"bytes\":", s.bytes},         {",\"packets\":", s.packets},   {",\"drops\":", s.drops},
      {",\"overlimits\":", s.overlimits}, {",\"requeues\":", s.requeues}, {",\"backlog\":", s.backlog},
      {",\"qlen\":", s.qlen}};
  for (const auto& [key, v] : counts) {
    out += key;
    append_number(out, v);
  }
  out += ",\"xstats\":[";  // [name, value] pairs: keeps tc's order and repeated names
  for (std::size_t i = 0; i < e.xstats.size(); ++i) {
    out += i == 0 ? "[" : ",[";
    append_json_string(out, e.xstats[i].first);
    out += ',';
    append_number(out, e.xstats[i].second);
    out += ']';
  }
  out += "],\"kind\":";
  append_json_string(out, e.kind);
  out += ",\"parent\":";
  append_json_string(out, format_handle(e.is_class ? e.class_parent : e.parent));
  // A qdisc's typed options (none copied: mq's root of a multi-queue tree, merged from its
  // queues; a reader then prints the configuration's).
  if (!e.is_class && !e.options.empty()) {
    out += ",\"options\":";
    out += dump_attrs_json(e.options).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  out += '}';
}

}  // namespace

// Written as text, one pass over the entries (a JSON object built key by key costs a search of
// its keys per insert: 65k classes took seconds). A key given twice keeps its first place and its
// last entry, as an object assigned key by key would.
std::string stats_document(const TreeCounters& counters, std::string_view dev, std::string_view config) {
  struct Section {
    std::vector<std::pair<std::string, const TreeCounters::Entry*>> entries;
    std::unordered_map<std::string, std::size_t> index;  // key -> place in entries
  };
  Section sections[2];  // qdiscs, classes
  for (const TreeCounters::Entry& e : counters.entries) {
    Section& sec = sections[e.is_class ? 1 : 0];
    std::string key = e.is_class ? format_handle(e.handle) : qdisc_key(e.handle, e.parent);
    const auto [it, fresh] = sec.index.emplace(key, sec.entries.size());
    if (fresh) sec.entries.emplace_back(std::move(key), &e);
    else sec.entries[it->second].second = &e;
  }
  std::string out;
  out.reserve(64 + 256 * counters.entries.size());
  out += '{';
  if (!dev.empty()) {
    out += "\"dev\":";
    append_json_string(out, dev);
    out += ',';
  }
  if (!config.empty()) {
    out += "\"config\":";
    append_json_string(out, config);
    out += ',';
  }
  for (int i = 0; i < 2; ++i) {
    out += i == 0 ? "\"qdiscs\":{" : ",\"classes\":{";
    bool first = true;
    for (const auto& [key, e] : sections[i].entries) {
      if (!first) out += ',';
      first = false;
      append_json_string(out, key);
      out += ':';
      append_entry(out, *e);
    }
    out += '}';
  }
  out += '}';
  return out;
}

std::string Config::show_stats_json(std::string_view dev, const TreeCounters& counters) const {
  const DeviceTree& d = need(dev);
  const std::string doc = stats_document(counters);
  ShowOptions show;
  show.stats = true;
  show.json = true;
  show.fetch_live = [&doc](const std::string&) { return ShowOptions::LiveDocument{doc, {}}; };
  std::ostringstream qdiscs, classes;
  show_qdiscs(&d, qdiscs, show);
  show_classes(d, classes, show);
  Json out;
  out["qdiscs"] = Json::parse(qdiscs.str());
  out["classes"] = Json::parse(classes.str());
  return out.dump();
}

std::string stats_document(const std::vector<TreeNode>& nodes, const std::optional<QdiscStats>& root) {
  return stats_document(collect_counters(nodes, root));
}

}  // namespace txpath::tc
