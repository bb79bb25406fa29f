// SPDX-License-Identifier: MIT
// The OpenMetrics text of the live queues (txpath/metrics.hpp): reading the endpoints, rendering.
#include "txpath/metrics.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>

#include "tc/stats_socket.hpp"

namespace txpath::metrics {

namespace {

using Json = nlohmann::json;

struct Family {
  const char* name;  // without "txpath_qdisc_"/"txpath_class_"
  const char* type;  // "counter" or "gauge"
  const char* help;
  uint64_t QdiscStats::*field;
};

constexpr Family kFamilies[] = {
    {"packets", "counter", "Packets sent", &QdiscStats::packets},
    {"bytes", "counter", "Bytes sent", &QdiscStats::bytes},
    {"drops", "counter", "Packets dropped", &QdiscStats::drops},
    {"overlimits", "counter", "Times the queue was over its limit (tc's overlimits)", &QdiscStats::overlimits},
    {"requeues", "counter", "Packets requeued", &QdiscStats::requeues},
    {"backlog_bytes", "gauge", "Bytes queued", &QdiscStats::backlog},
    {"backlog_packets", "gauge", "Packets queued", &QdiscStats::qlen},
};

std::string labels(const QueueSnapshot& q, const QueueSnapshot::Entry& e) {
  return "dev=\"" + escape_label_value(q.dev) + "\",handle=\"" + escape_label_value(e.handle) +
         "\",parent=\"" + escape_label_value(e.parent) + "\",kind=\"" + escape_label_value(e.kind) + "\"";
}

void render_family(std::string& out, std::span<const QueueSnapshot> queues, bool classes, const Family& f) {
  const std::string name = std::string(classes ? "txpath_class_" : "txpath_qdisc_") + f.name;
  out += "# TYPE " + name + " " + f.type + "\n";
  out += "# HELP " + name + " " + f.help + (classes ? " (class)\n" : " (qdisc)\n");
  const std::string sample = name + (std::string_view(f.type) == "counter" ? "_total" : "");
  for (const QueueSnapshot& q : queues)
    for (const QueueSnapshot::Entry& e : q.entries)
      if (e.is_class == classes)
        out += sample + "{" + labels(q, e) + "} " + std::to_string(e.stats.*(f.field)) + "\n";
}

void render_xstats(std::string& out, std::span<const QueueSnapshot> queues, bool classes) {
  const std::string name = classes ? "txpath_class_xstat" : "txpath_qdisc_xstat";
  out += "# TYPE " + name + " gauge\n";
  out += "# HELP " + name + " The kind's own statistics as tc -s prints them (label name)\n";
  for (const QueueSnapshot& q : queues)
    for (const QueueSnapshot::Entry& e : q.entries) {
      if (e.is_class != classes) continue;
      for (std::size_t i = 0; i < e.xstats.size(); ++i) {
        const auto& [k, v] = e.xstats[i];
        bool repeated = false;  // a name tc prints twice: the first value (one sample per label set)
        for (std::size_t j = 0; j < i; ++j) repeated = repeated || e.xstats[j].first == k;
        if (!repeated)
          out += name + "{" + labels(q, e) + ",name=\"" + escape_label_value(k) + "\"} " + std::to_string(v) + "\n";
      }
    }
}

uint64_t number(const Json& n, const char* key) {
  return n.contains(key) && n[key].is_number_unsigned() ? n[key].get<uint64_t>() : 0;
}

std::string text(const Json& n, const char* key) {
  return n.contains(key) && n[key].is_string() ? n[key].get<std::string>() : std::string();
}

bool read_section(const Json& doc, const char* section, bool is_class, QueueSnapshot& out) {
  if (!doc.contains(section) || !doc[section].is_object()) return false;
  for (const auto& [key, n] : doc[section].items()) {
    if (!n.is_object()) continue;
    QueueSnapshot::Entry e;
    e.is_class = is_class;
    e.handle = key.substr(0, key.find('@'));  // mq's default children: "0:@1:1"
    e.parent = text(n, "parent");
    e.kind = text(n, "kind");
    e.stats = {number(n, "bytes"), number(n, "packets"), number(n, "drops"), number(n, "overlimits"),
               number(n, "requeues"), number(n, "backlog"), number(n, "qlen")};
    if (n.contains("xstats") && n["xstats"].is_array())
      for (const Json& kv : n["xstats"])
        if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_number_integer())
          e.xstats.emplace_back(kv[0].get<std::string>(), kv[1].get<int64_t>());
    out.entries.push_back(std::move(e));
  }
  return true;
}

// The device named in an endpoint file name's readable tail ("...-FILE@DEV"), or "".
std::string dev_of_endpoint(const std::string& name) {
  const std::size_t at = name.rfind('@');
  return at == std::string::npos ? std::string() : name.substr(at + 1);
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render(std::span<const QueueSnapshot> queues, std::size_t failed) {
  std::string out;
  for (const bool classes : {false, true}) {
    for (const Family& f : kFamilies) render_family(out, queues, classes, f);
    render_xstats(out, queues, classes);
  }
  out += "# TYPE txpath_exporter_endpoints gauge\n";
  out += "# HELP txpath_exporter_endpoints Live-statistics endpoints of this user, read or failed\n";
  out += "txpath_exporter_endpoints{state=\"read\"} " + std::to_string(queues.size()) + "\n";
  out += "txpath_exporter_endpoints{state=\"failed\"} " + std::to_string(failed) + "\n";
  out += "# EOF\n";
  return out;
}

std::optional<QueueSnapshot> parse_stats_document(std::string_view json, const std::string& fallback_dev) {
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.contains("error")) return std::nullopt;
  QueueSnapshot q;
  q.dev = doc.contains("dev") && doc["dev"].is_string() ? doc["dev"].get<std::string>() : fallback_dev;
  if (!read_section(doc, "qdiscs", false, q)) return std::nullopt;
  read_section(doc, "classes", true, q);
  return q;
}

std::vector<QueueSnapshot> scrape_live_endpoints(std::chrono::milliseconds timeout, std::size_t* failed) {
  if (failed) *failed = 0;
  const std::string dir = tc::stats_directory(/*create=*/false);
  std::vector<QueueSnapshot> out;
  const std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return out;  // missing: nobody serves anything
  std::vector<std::string> names;
  while (const dirent* ent = ::readdir(d.get())) {
    const std::string name = ent->d_name;
    struct stat st{};
    // Stats endpoints only: the control endpoints (".ctl") answer requests, not documents.
    if (name.ends_with(".ctl") || ::lstat((dir + "/" + name).c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());  // a stable order between scrapes
  for (const std::string& name : names) {
    tc::Fetched got = tc::fetch_stats(dir + "/" + name, timeout);
    if (got.no_server) continue;  // a file left by a process that died
    std::optional<QueueSnapshot> q;
    if (got.document) q = parse_stats_document(*got.document, dev_of_endpoint(name));
    if (q) out.push_back(std::move(*q));
    else if (failed) ++*failed;
  }
  return out;
}

std::string live_metrics_text() {
  std::size_t failed = 0;
  const std::vector<QueueSnapshot> queues = scrape_live_endpoints(std::chrono::milliseconds(2000), &failed);
  return render(queues, failed);
}

}  // namespace txpath::metrics
