// SPDX-License-Identifier: MIT
// See offer.hpp. The schedule (Schedule), the two paths (KernelPath, TxpathPath) and run_offer().
#include "bench/offer.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "bench/bench_internal.hpp"
#include "bench/measure.hpp"
#include "bench/real_path.hpp"
#include "core/text.hpp"
#include "device/netif.hpp"
#include "tc/tc_units.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/queue_select.hpp"
#include "txpath/real_device.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

uint32_t tos_to_priority(uint8_t tos) noexcept {
  // The kernel's table is indexed by the TOS field's four bits (tos & 0x1e) >> 1 and repeats in
  // fours; only the two high TOS bits (0x10 low delay, 0x08 throughput) choose: best effort 0,
  // bulk 2, interactive 6, interactive bulk 4 (TC_PRIO_*, include/uapi/linux/pkt_sched.h).
  static constexpr uint32_t kByHighBits[4] = {0, 2, 6, 4};
  return kByHighBits[(tos >> 3) & 3];
}

namespace {

constexpr std::size_t kOfferMinFrame = kHeadersLen + kMinPayload;  // 58: the frame's own fields
constexpr std::size_t kOfferMaxFrame = 1514;
constexpr std::size_t kOfferPoolPackets = 32768;       // txpath: more than any scenario's qdisc holds
constexpr uint64_t kOfferSleepAboveNs = 200'000;       // a wait this long sleeps (less: yields)
constexpr int kOfferPoolWaits = 100;                   // txpath: 1 ms waits for a buffer, then a drop

[[noreturn]] void offer_bad_flow(std::string_view flow, std::string_view key, std::string_view why) {
  throw ConfigError("--flow " + txpath::quoted(flow) + ": " + std::string(key) + " " + std::string(why));
}

double parse_flow_seconds(std::string_view flow, std::string_view key, std::string_view v) {
  double s = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (v.empty() || ec != std::errc{} || ptr != v.data() + v.size() || !std::isfinite(s) || s < 0 ||
      s > 1e6)
    offer_bad_flow(flow, key, "is not a number of seconds in 0..1e6: " + txpath::quoted(v));
  return s;
}

uint64_t parse_flow_number(std::string_view flow, std::string_view key, std::string_view v, uint64_t max) {
  int base = 10;
  std::string_view digits = v;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  uint64_t n = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n, base);
  if (digits.empty() || ec != std::errc{} || ptr != digits.data() + digits.size() || n > max)
    offer_bad_flow(flow, key, "is not a number in 0.." + std::to_string(max) + ": " + txpath::quoted(v));
  return n;
}

}  // namespace

OfferFlow parse_offer_flow(std::string_view text) {
  OfferFlow f;
  bool have_rate = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) offer_bad_flow(text, txpath::quoted(item), "is not key=value");
    const std::string_view key = item.substr(0, eq), v = item.substr(eq + 1);
    if (key == "rate") {
      const auto r = tc::parse_rate(v);
      if (!r || *r == 0) offer_bad_flow(text, key, "is not a rate (tc's units, e.g. 10mbit): " + txpath::quoted(v));
      f.rate_bytes_per_s = *r;
      have_rate = true;
    } else if (key == "size") {
      f.frame_bytes = parse_flow_number(text, key, v, kOfferMaxFrame);
      if (f.frame_bytes < kOfferMinFrame) offer_bad_flow(text, key, "is below " + std::to_string(kOfferMinFrame) + " bytes");
    } else if (key == "prio") {
      if (v.find(':') != std::string_view::npos) {
        const auto id = tc::parse_classid(v);
        if (!id) offer_bad_flow(text, key, "is not a class id MAJ:MIN: " + txpath::quoted(v));
        f.priority = *id;
      } else {
        f.priority = static_cast<uint32_t>(parse_flow_number(text, key, v, UINT32_MAX));
      }
    } else if (key == "tos") {
      f.tos = static_cast<uint8_t>(parse_flow_number(text, key, v, 255));
    } else if (key == "start") {
      f.start_s = parse_flow_seconds(text, key, v);
    } else if (key == "stop") {
      f.stop_s = parse_flow_seconds(text, key, v);
    } else if (key == "queue") {
      f.queue = static_cast<uint32_t>(parse_flow_number(text, key, v, 4095));
    } else {
      offer_bad_flow(text, txpath::quoted(key), "is not a key (rate, size, prio, tos, start, stop, queue)");
    }
  }
  if (!have_rate) offer_bad_flow(text, "rate", "is missing");
  if (f.stop_s >= 0 && f.stop_s <= f.start_s) offer_bad_flow(text, "stop", "is not after start");
  return f;
}

namespace {

// When each flow's next packet is due, and which flow's comes first.
class Schedule {
 public:
  Schedule(const std::vector<OfferFlow>& flows, double duration_s, uint64_t t0) {
    for (const OfferFlow& f : flows) {
      const double stop = f.stop_s < 0 ? duration_s : std::min(f.stop_s, duration_s);
      const double gap_ns = 1e9 * static_cast<double>(f.frame_bytes) / static_cast<double>(f.rate_bytes_per_s);
      const double span_ns = std::max(0.0, (stop - f.start_s) * 1e9);
      flows_.push_back({t0 + static_cast<uint64_t>(f.start_s * 1e9), gap_ns,
                        static_cast<uint64_t>(std::ceil(span_ns / gap_ns)), 0});
    }
  }
  // The flow whose packet is due first, and when; false when every flow is done.
  bool next(std::size_t& flow, uint64_t& due) const {
    bool any = false;
    for (std::size_t i = 0; i < flows_.size(); ++i) {
      const Flow& f = flows_[i];
      if (f.sent == f.count) continue;
      const uint64_t at = f.first + static_cast<uint64_t>(static_cast<double>(f.sent) * f.gap_ns);
      if (!any || at < due) {
        any = true;
        flow = i;
        due = at;
      }
    }
    return any;
  }
  uint64_t take(std::size_t flow) { return flows_[flow].sent++; }

 private:
  struct Flow {
    uint64_t first;   // steady ns of packet 0
    double gap_ns;    // between packets
    uint64_t count;   // packets due before the stop
    uint64_t sent;
  };
  std::vector<Flow> flows_;
};

// Waits until steady time `due`; `idle` runs while it waits (txpath: the queue's service work).
template <class Idle>
void offer_wait_until(uint64_t due, Idle&& idle) {
  for (uint64_t now = now_ns(); now < due; now = now_ns()) {
    idle();
    if (due - now > kOfferSleepAboveNs) std::this_thread::sleep_for(std::chrono::nanoseconds(due - now - kOfferSleepAboveNs / 2));
    else std::this_thread::yield();
  }
}

// The kernel's path: one connected UDP socket per flow (KernelSender), its priority set as a
// socket's owner sets it, and a send buffer big enough that the qdisc, not the socket, is what
// refuses packets (SO_SNDBUFFORCE: root).
class KernelPath {
 public:
  KernelPath(const OfferConfig& cfg, const FrameSpec& base) {
    const auto probe = make_probe_device(cfg.device);
    const auto route = kernel_route(*probe, base);
    if (!route) throw ConfigError("txpath offer --via kernel needs afpacket:IF on a testbed");
    for (const OfferFlow& f : cfg.flows) {
      senders_.push_back(std::make_unique<KernelSender>(*route));
      const int fd = senders_.back()->fd();
      const int tos = f.tos, buf = 64 << 20;
      const int prio = static_cast<int>(f.priority.value_or(tos_to_priority(f.tos)));
      if (::setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) < 0)
        netif::fail_errno("offer", "setsockopt(IP_TOS)", errno);
      if (::setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio) < 0)
        netif::fail_errno("offer", "setsockopt(SO_PRIORITY)", errno);
      if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0)
        netif::fail_errno("offer", "setsockopt(SO_SNDBUFFORCE) (needs root)", errno);
    }
  }
  bool send(std::size_t flow, std::span<const std::byte> frame) {
    return senders_[flow]->send(frame.subspan(kHeadersLen)) == KernelSender::Result::sent;
  }
  void idle() {}

 private:
  std::vector<std::unique_ptr<KernelSender>> senders_;
};

// txpath's path: the configuration's tree over afpacket:IF — one TxQueue, or with several TX
// queues (`link add dev D numtxqueues N`) a MultiQueueTx, each packet on its flow's queue — its
// live counters and changes served to `txpath tc` (LiveStats) while the schedule runs. send() is
// called by one thread per TX queue.
class TxpathPath {
 public:
  TxpathPath(const OfferConfig& cfg, const std::string& dev)
      : pool_(PoolConfig{.packets = kOfferPoolPackets, .buffer_size = 2048, .cache_size = 64}), dev_(dev) {
    const tc::ConfigReadLock lock(cfg.tc_config);  // until LiveStats serves (tc.hpp)
    const tc::Config config = tc::Config::load(cfg.tc_config);
    const tc::DeviceConfig* d = config.device(dev);
    const uint32_t queues = d ? d->tx_queues : 1;
    if (queues > 1) {
      trees_ = std::make_shared<tc::QueueTrees>();
      const tc::Config::MultiQueueSetup setup = config.multiqueue(dev, trees_);
      netdev_ = make_net_device(cfg.device + ",queues=" + std::to_string(queues));
      MultiQueueConfig mc;
      mc.queue.strategy = cfg.strategy;
      mc.queue_qdisc = setup.queue_qdisc;
      multi_ = MultiQueueTx::create(*netdev_, mc);
      live_ = std::make_unique<tc::LiveStats>(cfg.tc_config, dev, *multi_, trees_);
      return;
    }
    device_ = make_device(cfg.device);
    tree_ = std::make_shared<tc::Tree>();
    TxQueueConfig q;
    q.strategy = cfg.strategy;
    q.root_qdisc = config.root_factory(dev, tree_);
    txq_ = TxQueue::create(*device_, q);
    live_ = std::make_unique<tc::LiveStats>(cfg.tc_config, dev, *txq_, tree_);
  }
  uint32_t queues() const noexcept { return multi_ ? multi_->num_queues() : 1; }
  // Flow f's frame with its priority and queue; false when no buffer came back in time or the
  // queue dropped it.
  bool send(const OfferFlow& f, std::span<const std::byte> frame) {
    Packet* p = pool_.get();
    for (int i = 0; !p && i < kOfferPoolWaits; ++i) {
      idle();
      pool_.wait_for_free(1, 1'000'000);
      p = pool_.get();
    }
    if (!p) return false;
    std::copy(frame.begin(), frame.end(), p->data);
    p->len = static_cast<uint32_t>(frame.size());
    p->priority = f.priority.value_or(tos_to_priority(f.tos));
    p->flow_hash = frame_flow_hash(frame).value_or(0);
    p->tx_queue = f.queue;
    const SendStatus s = multi_ ? multi_->send(p) : txq_->send(p);
    return s == SendStatus::queued || s == SendStatus::congested;
  }
  void idle() {
    if (multi_) multi_->service();
    else txq_->service();
  }
  std::string stats_json() {
    constexpr std::chrono::milliseconds kWait(2000);
    const auto fail = [] { return DeviceError("txpath offer: the queue did not answer for its counters"); };
    if (!multi_) {
      const auto counters = tc::snapshot_counters(*txq_, tree_->nodes, kWait);
      if (!counters || !tree_->config) throw fail();
      return tree_->config->show_stats_json(dev_, *counters);
    }
    std::vector<tc::TreeCounters> per_queue;
    for (uint32_t i = 0; i < multi_->num_queues(); ++i) {
      auto c = tc::snapshot_counters(multi_->queue(i), trees_->queues[i].nodes, kWait);
      if (!c) throw fail();
      per_queue.push_back(std::move(*c));
    }
    if (!trees_->config) throw fail();
    return trees_->config->show_stats_json(dev_, tc::merge_queue_counters(*trees_, per_queue));
  }

 private:
  Pool pool_;  // first: it outlives the queues that hold its packets
  std::string dev_;
  std::unique_ptr<Device> device_;
  std::shared_ptr<tc::Tree> tree_;
  std::unique_ptr<TxQueue> txq_;
  std::unique_ptr<NetDevice> netdev_;
  std::shared_ptr<tc::QueueTrees> trees_;
  std::unique_ptr<MultiQueueTx> multi_;
  std::unique_ptr<tc::LiveStats> live_;  // last: it goes first, before the queues it reads
};

// The device of `cfg.tc_config` to run: tc_dev, or the configuration's only one.
std::string config_device(const OfferConfig& cfg) {
  if (!cfg.tc_dev.empty()) return cfg.tc_dev;
  const auto devices = tc::Config::load(cfg.tc_config).devices();
  if (devices.size() != 1)
    throw ConfigError("txpath offer: --tc-config " + txpath::quoted(cfg.tc_config) +
                      " has " + std::to_string(devices.size()) + " devices: name one with --tc-dev");
  return devices.front().name;
}

// One sender's share of the schedule: the flows in `mine` (indices into cfg.flows), from t0.
template <class Path, class SendOne>
void run_flows(const OfferConfig& cfg, const std::vector<FrameTemplate>& frames, Path& path,
               SendOne& send_one, const std::vector<std::size_t>& mine, uint64_t t0, OfferReport& r,
               uint64_t& last) {
  std::vector<OfferFlow> flows;
  for (const std::size_t f : mine) flows.push_back(cfg.flows[f]);
  std::vector<std::byte> buf(kOfferMaxFrame);
  Schedule schedule(flows, cfg.duration_s, t0);
  std::size_t k = 0;
  uint64_t due = 0;
  last = t0;
  while (schedule.next(k, due)) {
    offer_wait_until(due, [&] { path.idle(); });
    const std::size_t f = mine[k];
    const uint64_t seq = schedule.take(k);
    const std::size_t len = frames[f].write(buf, static_cast<uint32_t>(f), seq);
    const std::span<const std::byte> frame(buf.data(), len);
    OfferFlowCounts& c = r.flows[f];  // this sender's flows only
    ++c.offered;
    c.bytes += len;
    if (send_one(f, frame)) ++c.accepted;
    else ++c.dropped;
    last = now_ns();
    r.max_late_ns = std::max(r.max_late_ns, last - due);
  }
}

// The schedule: one sender per TX queue that has flows, each pinned to CPU queue % CPUs (with
// several queues: the XPS map the kernel's side is given, scripts/qdisc_conform.py), all from
// the same t0. One queue: the caller's thread alone, not pinned.
template <class Path, class SendOne>
OfferReport run_schedule(const OfferConfig& cfg, const std::vector<FrameTemplate>& frames, Path& path,
                         SendOne&& send_one) {
  std::map<uint32_t, std::vector<std::size_t>> by_queue;
  for (std::size_t f = 0; f < cfg.flows.size(); ++f) by_queue[cfg.flows[f].queue].push_back(f);
  const bool pin = by_queue.size() > 1 || by_queue.begin()->first != 0;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::vector<OfferReport> parts(by_queue.size());
  std::vector<uint64_t> lasts(by_queue.size(), 0);
  for (auto& part : parts) part.flows.resize(cfg.flows.size());
  const uint64_t t0 = now_ns() + 5'000'000;  // the threads start within 5 ms
  if (cfg.on_start) cfg.on_start();
  std::vector<std::thread> senders;
  std::size_t n = 0;
  for (const auto& [queue, mine] : by_queue) {
    const std::size_t at = n++;
    const int cpu = pin ? static_cast<int>(queue % cpus) : -1;
    auto body = [&, at, cpu, &flows_of = mine] {
      pin_to(cpu);
      run_flows(cfg, frames, path, send_one, flows_of, t0, parts[at], lasts[at]);
    };
    if (at + 1 == by_queue.size()) body();  // the last on this thread
    else senders.emplace_back(body);
  }
  for (auto& t : senders) t.join();
  OfferReport r;
  r.flows.resize(cfg.flows.size());
  uint64_t last = t0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    for (std::size_t f = 0; f < cfg.flows.size(); ++f) {
      r.flows[f].offered += parts[i].flows[f].offered;
      r.flows[f].accepted += parts[i].flows[f].accepted;
      r.flows[f].dropped += parts[i].flows[f].dropped;
      r.flows[f].bytes += parts[i].flows[f].bytes;
    }
    r.max_late_ns = std::max(r.max_late_ns, parts[i].max_late_ns);
    last = std::max(last, lasts[i]);
  }
  r.seconds = static_cast<double>(last - t0) / 1e9;
  return r;
}

}  // namespace

OfferReport run_offer(const OfferConfig& cfg) {
  if (cfg.flows.empty()) throw ConfigError("txpath offer: no --flow given");
  if (cfg.flows.size() > kSinkTimelineSenders)
    throw ConfigError("txpath offer: at most " + std::to_string(kSinkTimelineSenders) + " flows");
  if (!(cfg.duration_s > 0) || cfg.duration_s > 3600)
    throw ConfigError("txpath offer: --duration is not in (0, 3600] seconds");
  auto device = make_device(cfg.device);
  if (link_interface(*device).empty())
    throw ConfigError("txpath offer: --device must be afpacket:IF (a testbed's host end), not " +
                      txpath::quoted(cfg.device));
  std::vector<FrameTemplate> frames;
  FrameSpec base = frames_for(*device, kMinPayload);
  for (std::size_t i = 0; i < cfg.flows.size(); ++i) {
    FrameSpec s = base;
    s.payload = cfg.flows[i].frame_bytes - kHeadersLen;
    s.tos = cfg.flows[i].tos;
    s.src_port = static_cast<uint16_t>(base.src_port + i);
    frames.emplace_back(s);
  }
  if (cfg.via == OfferVia::kernel) {
    device.reset();  // the kernel's sockets send; nothing of txpath's is on the interface
    KernelPath path(cfg, base);
    return run_schedule(cfg, frames, path,
                        [&](std::size_t f, std::span<const std::byte> fr) { return path.send(f, fr); });
  }
  if (cfg.tc_config.empty()) throw ConfigError("txpath offer --via txpath needs --tc-config FILE");
  device.reset();  // TxpathPath opens its own (with its TX queues)
  TxpathPath path(cfg, config_device(cfg));
  OfferReport r = run_schedule(
      cfg, frames, path, [&](std::size_t f, std::span<const std::byte> fr) { return path.send(cfg.flows[f], fr); });
  r.tc_stats_json = path.stats_json();
  return r;
}

}  // namespace txpath::bench_detail
