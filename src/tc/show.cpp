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
#include <map>
#include <optional>
#include <span>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "qdisc/mq.hpp"
#include "tc/config_model.hpp"
#include "tc/internal.hpp"
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
std::optional<Counters> live_counters(const Json* doc, const char* section, const std::string& key,
                                      std::string_view kind) {
  if (!doc || !doc->contains(section)) return std::nullopt;
  const Json& sec = (*doc)[section];
  if (!sec.is_object() || !sec.contains(key)) return std::nullopt;
  const Json& n = sec[key];
  Counters c;
  auto u = [&](const char* k) -> uint64_t {
    return n.contains(k) && n[k].is_number_unsigned() ? n[k].get<uint64_t>() : 0;
  };
  c.stats.bytes = u("bytes");
  c.stats.packets = u("packets");
  c.stats.drops = u("drops");
  c.stats.overlimits = u("overlimits");
  c.stats.requeues = u("requeues");
  c.stats.backlog = u("backlog");
  c.stats.qlen = u("qlen");
  if (n.contains("xstats") && n["xstats"].is_array()) {
    for (const auto& kv : n["xstats"]) {
      if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_number_integer())
        c.xstats.emplace_back(kv[0].get<std::string>(), kv[1].get<int64_t>());
    }
  }
  if (n.contains("options") && n["options"].is_object() && n.contains("kind") && n["kind"] == kind)
    c.options = dump_attrs_from_json(n["options"]);
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
std::optional<Json> live_document(const Config::ShowOptions& show, const std::string& dev) {
  if (!show.stats || !show.fetch_live) return std::nullopt;
  const Config::ShowOptions::LiveDocument live = show.fetch_live(dev);
  std::string why = live.why_not.empty() ? "no running process serves it" : live.why_not;
  if (live.text) {
    Json doc = Json::parse(*live.text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object() && doc.contains("error") && doc["error"].is_string())
      why = "the running process took no snapshot: " + escape_user_text(doc["error"].get<std::string>());
    else if (doc.is_object() && doc.contains("qdiscs") && doc["qdiscs"].is_object() &&
             doc.contains("classes") && doc["classes"].is_object())
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
Counters shown_counters(const std::optional<Json>& doc, const char* section, const std::string& id,
                        std::string_view kind, Counters configured, std::size_t& not_live) {
  if (auto live = live_counters(doc ? &*doc : nullptr, section, id, kind)) return *live;
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
    const std::optional<Json> doc = live_document(show, d.config.name);
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
      const Counters c = shown_counters(doc, "qdiscs", qdisc_key(n.handle, n.parent), q.kind(),
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
  const std::optional<Json> doc = live_document(show, d.config.name);
  std::size_t not_live = 0;
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
      for (const TreeNode& child : tree.nodes)
        if (child.parent == classid && child.handle != 0) leaf = child.handle;  // tc: "leaf" if not 0
      const Counters c = shown_counters(doc, "classes", id, q.kind(),
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

void warn_about_class(const Tree& tree, uint32_t classid, const Config::ShowOptions& show) {
  for (const TreeNode& n : tree.nodes) {
    const ClassOps* ops = n.qdisc->class_ops();
    if (!ops || (n.handle & 0xFFFF0000u) != (classid & 0xFFFF0000u)) continue;
    const std::string line = ops->class_warning(static_cast<uint16_t>(minor_of(classid)));
    if (!line.empty() && show.warn) show.warn(line);
    return;
  }
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
                              const std::optional<QdiscStats>& root) {
  TreeCounters out;
  for (const TreeNode& n : nodes) {
    const Qdisc& q = *n.qdisc;
    append_counters(q, n.handle, n.parent, &n == &nodes.front() && root ? *root : shown_stats(q), out);
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

std::string stats_document(const TreeCounters& counters, std::string_view dev, std::string_view config) {
  Json doc;
  if (!dev.empty()) doc["dev"] = std::string(dev);
  if (!config.empty()) doc["config"] = std::string(config);
  doc["qdiscs"] = Json::object();
  doc["classes"] = Json::object();
  for (const TreeCounters::Entry& e : counters.entries) {
    Json j;
    add_counters_json(j, e.stats);
    Json xs = Json::array();  // [name, value] pairs: keeps tc's order and repeated names
    for (const auto& [k, v] : e.xstats) xs.push_back(Json::array({k, v}));
    j["xstats"] = std::move(xs);
    j["kind"] = e.kind;
    j["parent"] = format_handle(e.is_class ? e.class_parent : e.parent);
    // A qdisc's typed options (none copied: mq's root of a multi-queue tree, merged from its
    // queues; a reader then prints the configuration's).
    if (!e.is_class && !e.options.empty()) j["options"] = dump_attrs_json(e.options);
    doc[e.is_class ? "classes" : "qdiscs"][e.is_class ? format_handle(e.handle) : qdisc_key(e.handle, e.parent)] =
        std::move(j);
  }
  return doc.dump();
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
