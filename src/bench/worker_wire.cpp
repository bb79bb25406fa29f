// SPDX-License-Identifier: MIT
// The worker wire format (bench/bench_internal.hpp): a round's runs as the JSON text a worker
// process writes (round_text()) and run_bench reads back as untrusted input (read_round()):
// every field of a Run and a QueueRun, the latency histograms, and the limits on what is read.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/bench_internal.hpp"
#include "core/text.hpp"
#include "txpath/histogram.hpp"

namespace txpath::bench_detail {

namespace {

// Every field of a Run and a QueueRun, by type: the worker writes them all, run_bench reads them
// all back (a field added to Run must be added here, or workers lose it).
constexpr std::pair<const char*, double Run::*> kRunReals[] = {
    {"mpps", &Run::mpps}, {"cpu_ns_per_pkt", &Run::cpu_ns_per_pkt}, {"fairness", &Run::fairness}};
constexpr std::pair<const char*, LatencyHistogram Run::*> kRunHistograms[] = {
    {"send_latency", &Run::send_latency}, {"queue_delay", &Run::queue_delay}};
constexpr std::pair<const char*, uint64_t Run::*> kRunCounts[] = {
    {"submitted", &Run::submitted},   {"sent", &Run::sent},
    {"dropped", &Run::dropped},       {"requeues", &Run::requeues},
    {"doorbells", &Run::doorbells},   {"window_sent", &Run::window_sent},
    {"window_doorbells", &Run::window_doorbells}, {"lock_waits", &Run::lock_waits},
    {"lock_wait_ns", &Run::lock_wait_ns}, {"sink_received", &Run::sink_received},
    {"sink_lost", &Run::sink_lost},   {"sink_duplicated", &Run::sink_duplicated},
    {"sink_out_of_order", &Run::sink_out_of_order}, {"sink_socket_drops", &Run::sink_socket_drops}};
constexpr std::pair<const char*, bool Run::*> kRunFlags[] = {
    {"drained", &Run::drained}, {"conserved", &Run::conserved},
    {"sink_checked", &Run::sink_checked}, {"interrupted", &Run::interrupted}};
constexpr std::pair<const char*, std::string Run::*> kRunTexts[] = {
    {"lock", &Run::lock}, {"output_error", &Run::output_error}, {"live_note", &Run::live_note}};
constexpr std::pair<const char*, uint64_t QueueRun::*> kQueueCounts[] = {
    {"submitted", &QueueRun::submitted}, {"sent", &QueueRun::sent},
    {"dropped", &QueueRun::dropped},     {"doorbells", &QueueRun::doorbells},
    {"window_sent", &QueueRun::window_sent}, {"window_doorbells", &QueueRun::window_doorbells}};
// What run_bench accepts from a worker: a round's text is a few kB per row.
constexpr std::size_t kMaxRoundText = 16u << 20;
constexpr std::size_t kMaxWorkerString = 4096;
constexpr int kMaxRoundDepth = 7;

// A histogram as [min, max, [[bucket, count], ...]] (only the buckets that counted).
nlohmann::json histogram_json(const LatencyHistogram& h) {
  nlohmann::json buckets = nlohmann::json::array();
  const auto counts = h.counts();
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] != 0) buckets.push_back({i, counts[i]});
  return {h.min(), h.max(), std::move(buckets)};
}

nlohmann::json run_json(const Run& r) {
  nlohmann::json j;
  for (const auto& [name, field] : kRunReals) j[name] = r.*field;
  for (const auto& [name, field] : kRunCounts) j[name] = r.*field;
  for (const auto& [name, field] : kRunFlags) j[name] = r.*field;
  for (const auto& [name, field] : kRunTexts) j[name] = r.*field;
  for (const auto& [name, field] : kRunHistograms) j[name] = histogram_json(r.*field);
  j["tc_stats"] = r.tc_stats;
  j["steal_pct"] = r.noise.steal_pct;
  j["other_cpu_pct"] = r.noise.other_cpu_pct;
  j["per_queue"] = nlohmann::json::array();
  for (const QueueRun& q : r.per_queue) {
    nlohmann::json one;
    for (const auto& [name, field] : kQueueCounts) one[name] = q.*field;
    one["conserved"] = q.conserved;
    j["per_queue"].push_back(std::move(one));
  }
  return j;
}

}  // namespace

std::string round_text(const RunsByPoint& runs) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [key, list] : runs)
    for (const Run& r : list)
      rows.push_back({{"queues", std::get<0>(key)}, {"park", std::get<1>(key)},
                      {"strategy", std::get<2>(key)}, {"run", run_json(r)}});
  // replace: a device's error text may hold bytes that are not UTF-8; the text must still go.
  return nlohmann::json{{"txpath_round", rows}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Reads one field of a worker's text; throws a one-line runtime_error naming it otherwise.
class FieldReader {
 public:
  explicit FieldReader(const nlohmann::json& j) : j_(j) {}
  const nlohmann::json& at(const char* name) const {
    if (!j_.is_object() || !j_.contains(name)) throw std::runtime_error(std::string("no field ") + name);
    return j_.at(name);
  }
  double real(const char* name) const {
    const auto& v = at(name);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw std::runtime_error(std::string("field ") + name + " is not a finite number >= 0");
    return v.get<double>();
  }
  uint64_t count(const char* name) const {
    const auto& v = at(name);
    if (!v.is_number_unsigned()) throw std::runtime_error(std::string("field ") + name + " is not a count");
    return v.get<uint64_t>();
  }
  bool flag(const char* name) const {
    const auto& v = at(name);
    if (!v.is_boolean()) throw std::runtime_error(std::string("field ") + name + " is not true or false");
    return v.get<bool>();
  }
  std::string text(const char* name, std::size_t limit = kMaxWorkerString) const {
    const auto& v = at(name);
    if (!v.is_string() || v.get_ref<const std::string&>().size() > limit)
      throw std::runtime_error(std::string("field ") + name + " is not a short string");
    return v.get<std::string>();
  }

 private:
  const nlohmann::json& j_;
};

// histogram_json()'s form back: the smallest and largest value land in the first and last
// bucket, each bucket's own bounds stand for the rest; anything else throws.
LatencyHistogram histogram_from_json(const nlohmann::json& j, const char* name) {
  const auto bad = [name] { return std::runtime_error(std::string("field ") + name + " is not a histogram"); };
  if (!j.is_array() || j.size() != 3 || !j[0].is_number_unsigned() || !j[1].is_number_unsigned() ||
      !j[2].is_array() || j[2].size() > LatencyHistogram::kBuckets)
    throw bad();
  const auto min = j[0].get<uint64_t>(), max = j[1].get<uint64_t>();
  LatencyHistogram h;
  const auto& buckets = j[2];
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const auto& b = buckets[k];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned()) throw bad();
    const auto i = b[0].get<uint64_t>();
    if (i >= LatencyHistogram::kBuckets) throw bad();
    const auto idx = static_cast<std::size_t>(i);
    const uint64_t lo = k == 0 ? min : LatencyHistogram::bucket_low(idx);
    const uint64_t hi = k + 1 == buckets.size() ? max : std::max(lo, LatencyHistogram::bucket_high(idx));
    if (!h.add_bucket(idx, b[1].get<uint64_t>(), lo, std::min(hi, max))) throw bad();
  }
  if (h.count() > 0 && (h.min() != min || h.max() != max)) throw bad();
  return h;
}

Run run_from_json(const nlohmann::json& j, std::size_t queue_count) {
  const FieldReader in(j);
  Run r;
  for (const auto& [name, field] : kRunReals) r.*field = in.real(name);
  for (const auto& [name, field] : kRunCounts) r.*field = in.count(name);
  for (const auto& [name, field] : kRunFlags) r.*field = in.flag(name);
  for (const auto& [name, field] : kRunTexts) r.*field = in.text(name);
  for (const auto& [name, field] : kRunHistograms) r.*field = histogram_from_json(in.at(name), name);
  r.tc_stats = in.text("tc_stats", kMaxFinalTcStats);
  r.noise = {in.real("steal_pct"), in.real("other_cpu_pct")};
  const auto& queues = in.at("per_queue");
  if (!queues.is_array() || queues.size() != queue_count)
    throw std::runtime_error("per_queue does not hold " + std::to_string(queue_count) + " TX queue(s)");
  for (const auto& q : queues) {
    const FieldReader qin(q);
    QueueRun one;
    for (const auto& [name, field] : kQueueCounts) one.*field = qin.count(name);
    one.conserved = qin.flag("conserved");
    r.per_queue.push_back(one);
  }
  return r;
}

}  // namespace

std::vector<RowKey> read_round(const BenchConfig& cfg, int threads, int round, const std::string& text,
                               RunsByPoint& runs) {
  const std::string where =
      "bench worker (threads " + std::to_string(threads) + ", round " + std::to_string(round + 1) + "): ";
  try {
    if (text.size() > kMaxRoundText) throw std::runtime_error("output over 16 MiB");
    // A round nests 6 deep (object, rows, row, run, a histogram, its buckets' pairs; per_queue's
    // entries are 5 deep): deeper is refused as it
    // is read, before a hostile text of 16 MiB of '[' becomes millions of nested values.
    const auto shallow = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxRoundDepth) throw std::runtime_error("nested deeper than a round");
      return true;
    };
    const nlohmann::json doc = nlohmann::json::parse(text, shallow, false);
    if (doc.is_discarded()) throw std::runtime_error("output is not JSON");
    const auto& rows = FieldReader(doc).at("txpath_round");
    if (!rows.is_array()) throw std::runtime_error("txpath_round is not a list");
    const std::vector<RowKey> expected = round_order(cfg, threads, round);
    std::vector<RowKey> seen;
    std::vector<Run> taken;  // into `runs` only once the whole round reads: a round is kept or not
    for (const auto& row : rows) {
      const FieldReader in(row);
      const auto queues = in.count("queues");
      const RowKey key{static_cast<uint32_t>(std::min<uint64_t>(queues, UINT32_MAX)), in.flag("park"),
                       in.text("strategy")};
      if (std::find(expected.begin(), expected.end(), key) == expected.end() || queues > UINT32_MAX)
        throw std::runtime_error("a row " + txpath::quoted(std::get<2>(key)) + " the configuration does not have");
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        throw std::runtime_error("row " + txpath::quoted(std::get<2>(key)) + " twice");
      seen.push_back(key);
      const std::size_t queue_count = without_queue_counts(std::get<2>(key)) ? 0 : std::get<0>(key);
      taken.push_back(run_from_json(in.at("run"), queue_count));
    }
    for (std::size_t i = 0; i < seen.size(); ++i) runs[seen[i]].push_back(std::move(taken[i]));
    return seen;
  } catch (const std::exception& e) {
    throw std::runtime_error(where + "malformed output: " + e.what());
  }
}

}  // namespace txpath::bench_detail
