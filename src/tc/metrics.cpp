// SPDX-License-Identifier: MIT
// The metrics of the live queues (txpath/metrics.hpp): reading the endpoints, content negotiation,
// rendering in the classic Prometheus text format or OpenMetrics.
#include "txpath/metrics.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "tc/socket_io.hpp"
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
  return "config=\"" + escape_label_value(q.config) + "\",dev=\"" + escape_label_value(q.dev) +
         "\",handle=\"" + escape_label_value(e.handle) + "\",parent=\"" + escape_label_value(e.parent) +
         "\",kind=\"" + escape_label_value(e.kind) + "\"";
}

// A family's # HELP and # TYPE. `name` is the family's (a counter's without "_total"): the
// classic text format names a counter's family as its samples, "..._total"; OpenMetrics not.
void family_head(std::string& out, const std::string& name, std::string_view type, std::string_view help,
                 Format format) {
  const std::string family = format == Format::kPrometheusText && type == "counter" ? name + "_total" : name;
  out.append("# HELP ").append(family).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(family).append(" ").append(type).append("\n");
}

void render_family(std::string& out, std::span<const QueueSnapshot* const> queues, bool classes,
                   const Family& f, Format format) {
  const std::string name = std::string(classes ? "txpath_class_" : "txpath_qdisc_") + f.name;
  family_head(out, name, f.type, std::string(f.help) + (classes ? " (class)" : " (qdisc)"), format);
  const std::string sample = name + (std::string_view(f.type) == "counter" ? "_total" : "");
  for (const QueueSnapshot* q : queues)
    for (const QueueSnapshot::Entry& e : q->entries)
      if (e.is_class == classes)
        out += sample + "{" + labels(*q, e) + "} " + std::to_string(e.stats.*(f.field)) + "\n";
}

void render_xstats(std::string& out, std::span<const QueueSnapshot* const> queues, bool classes,
                   Format format) {
  const std::string name = classes ? "txpath_class_xstat" : "txpath_qdisc_xstat";
  family_head(out, name, "gauge", "The kind's own statistics as tc -s prints them (label name)", format);
  for (const QueueSnapshot* q : queues)
    for (const QueueSnapshot::Entry& e : q->entries) {
      if (e.is_class != classes) continue;
      for (std::size_t i = 0; i < e.xstats.size(); ++i) {
        const auto& [k, v] = e.xstats[i];
        bool repeated = false;  // a name tc prints twice: the first value (one sample per label set)
        for (std::size_t j = 0; j < i; ++j) repeated = repeated || e.xstats[j].first == k;
        if (!repeated)
          out += name + "{" + labels(*q, e) + ",name=\"" + escape_label_value(k) + "\"} " + std::to_string(v) + "\n";
      }
    }
}

// One element of an Accept header: its media range (lower case) and parameters.
struct MediaRange {
  std::string type;
  double q = 1;
  std::string version;  // the version parameter, "" if none
  bool valid = true;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A q-value as RFC 9110 writes it ("0", "0.5", "1.000"); -1 if it is not one.
double qvalue(std::string_view v) {
  if (v.empty() || (v[0] != '0' && v[0] != '1') || v.size() > 5 || (v.size() > 1 && v[1] != '.')) return -1;
  double q = v[0] - '0', scale = 0.1;
  for (std::size_t i = 2; i < v.size(); ++i, scale /= 10) {
    if (v[i] < '0' || v[i] > '9') return -1;
    q += (v[i] - '0') * scale;
  }
  return q > 1 ? -1 : q;
}

MediaRange media_range(std::string_view element) {
  MediaRange m;
  std::size_t semi = element.find(';');
  m.type = lower(trim(element.substr(0, semi)));
  while (semi != std::string_view::npos) {
    element.remove_prefix(semi + 1);
    semi = element.find(';');
    const std::string_view param = trim(element.substr(0, semi));
    const std::size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key = lower(trim(param.substr(0, eq)));
    std::string_view value = trim(param.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (key == "q") {
      m.q = qvalue(value);
      m.valid = m.valid && m.q >= 0;
    } else if (key == "version") {
      m.version = std::string(value);
    }
  }
  return m;
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

// Every endpoint `names` in `dir` fetched, up to kParallelFetches at a time, each by `deadline`:
// one that stalls costs the others nothing, and all of them together no more than the deadline.
std::vector<tc::Fetched> fetch_all(const std::string& dir, const std::vector<std::string>& names,
                                   tc::wire::Clock::time_point deadline) {
  std::vector<tc::Fetched> got(names.size());
  // The next name to fetch. Relaxed: it only hands each index to one thread; the results reach
  // this thread through the joins below.
  std::atomic<std::size_t> next{0};
  const auto fetch_some = [&]() noexcept {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < names.size();) {
      const int left = tc::wire::ms_until(deadline);
      try {
        if (left > 0) got[i] = tc::fetch_stats(dir + "/" + names[i], std::chrono::milliseconds(left));
      } catch (...) {  // out of memory for the path: that endpoint failed
      }
    }
  };
  std::vector<std::jthread> helpers;  // joined on return
  try {
    while (helpers.size() + 1 < std::min(names.size(), kParallelFetches)) helpers.emplace_back(fetch_some);
  } catch (const std::system_error&) {
    // No more threads: the ones there (this one at least) fetch the rest.
  }
  fetch_some();
  helpers.clear();  // joined: every result is in
  return got;
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

std::string_view content_type(Format format) noexcept {
  return format == Format::kOpenMetrics ? kOpenMetricsType : kPrometheusTextType;
}

Format negotiate_format(std::string_view accept) {
  double openmetrics = 0, text = 0;  // the best q-value of each
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    const MediaRange m = media_range(accept.substr(0, comma));
    accept.remove_prefix(comma == std::string_view::npos ? accept.size() : comma + 1);
    if (!m.valid) continue;
    if (m.type == "application/openmetrics-text" && (m.version.empty() || m.version == "1.0.0"))
      openmetrics = std::max(openmetrics, m.q);
    else if (m.type == "text/plain" || m.type == "text/*" || m.type == "*/*")
      text = std::max(text, m.q);
  }
  return openmetrics > 0 && openmetrics >= text ? Format::kOpenMetrics : Format::kPrometheusText;
}

std::string render(std::span<const QueueSnapshot> queues, std::size_t failed, Format format) {
  std::vector<const QueueSnapshot*> unique;  // the first queue of each (config, dev)
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const QueueSnapshot& q : queues) {
    if (seen.emplace(q.config, q.dev).second) unique.push_back(&q);
    else ++failed;
  }
  std::string out;
  for (const bool classes : {false, true}) {
    for (const Family& f : kFamilies) render_family(out, unique, classes, f, format);
    render_xstats(out, unique, classes, format);
  }
  family_head(out, "txpath_exporter_endpoints", "gauge", "Live-statistics endpoints of this user, read or failed",
              format);
  out += "txpath_exporter_endpoints{state=\"read\"} " + std::to_string(unique.size()) + "\n";
  out += "txpath_exporter_endpoints{state=\"failed\"} " + std::to_string(failed) + "\n";
  if (format == Format::kOpenMetrics) out += "# EOF\n";
  return out;
}

std::optional<QueueSnapshot> parse_stats_document(std::string_view json, const std::string& fallback_dev,
                                                  const std::string& fallback_config) {
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.contains("error")) return std::nullopt;
  QueueSnapshot q;
  q.config = doc.contains("config") && doc["config"].is_string() ? doc["config"].get<std::string>() : fallback_config;
  q.dev = doc.contains("dev") && doc["dev"].is_string() ? doc["dev"].get<std::string>() : fallback_dev;
  if (!read_section(doc, "qdiscs", false, q)) return std::nullopt;
  read_section(doc, "classes", true, q);
  return q;
}

std::vector<QueueSnapshot> scrape_live_endpoints(std::chrono::milliseconds timeout, std::size_t* failed) {
  if (failed) *failed = 0;
  const tc::wire::Clock::time_point deadline = tc::wire::Clock::now() + timeout;  // for all of them
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
  const std::vector<tc::Fetched> got = fetch_all(dir, names, deadline);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (got[i].no_server) continue;  // a file left by a process that died
    std::optional<QueueSnapshot> q;
    // An endpoint of an older txpath names no configuration: its file name tells it apart.
    if (got[i].document) q = parse_stats_document(*got[i].document, dev_of_endpoint(names[i]), names[i]);
    if (q) out.push_back(std::move(*q));
    else if (failed) ++*failed;
  }
  return out;
}

std::string live_metrics_text(Format format) {
  std::size_t failed = 0;
  const std::vector<QueueSnapshot> queues = scrape_live_endpoints(kScrapeTimeout, &failed);
  return render(queues, failed, format);
}

}  // namespace txpath::metrics
