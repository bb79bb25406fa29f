// SPDX-License-Identifier: MIT
// NetDevice: a device's TX queues, its XPS map, its traffic classes and the flow slots of the
// ooo_okay rule (txpath/netdev.hpp). Written from the semantics of Linux's netdev_pick_tx(),
// get_xps_queue() and skb_tx_hash() (net/core/dev.c) as docs/background.md, "Choosing a TX
// queue", describes them.
#include "txpath/netdev.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "txpath/error.hpp"
#include "txpath/queue_select.hpp"

namespace txpath {

namespace {

constexpr uint32_t kFlowSlots = 1024;  // a power of two: slot = flow_hash & (kFlowSlots - 1)
// A flow slot's word: the packets in flight (low 48 bits) and their queue (high 16 bits).
constexpr uint64_t kCountMask = (uint64_t{1} << 48) - 1;
constexpr unsigned kQueueShift = 48;

unsigned configured_cpus() noexcept {
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  return static_cast<unsigned>(std::clamp<long>(n, 1, 4096));
}

}  // namespace

struct NetDevice::Impl {
  // One slot per cache line, so that senders of different flows do not share a line.
  struct alignas(64) FlowSlot {
    std::atomic<uint64_t> word{0};
  };

  Impl(uint32_t queues, unsigned cpus)
      : words(std::max<uint32_t>(1, (queues + 63) / 64)),
        xps(std::make_unique<std::atomic<uint64_t>[]>(static_cast<std::size_t>(cpus) * words)),
        slots(std::make_unique<FlowSlot[]>(kFlowSlots)) {}

  std::atomic<uint64_t>* cpu_words(unsigned cpu) const noexcept { return &xps[cpu * words]; }

  const uint32_t words;  // XPS bitmap words per CPU
  // XPS: CPU c's map is words [c * words, (c + 1) * words). Relaxed everywhere: a pick may see
  // an old or a new map (both name valid queues); order within a flow is the flow slots' job.
  std::unique_ptr<std::atomic<uint64_t>[]> xps;
  // relaxed: a hint that lets picks skip sched_getcpu() while no CPU has a map.
  std::atomic<bool> xps_any{false};
  // mqprio: num_tc, priority -> class, class -> (offset << 16 | count). Relaxed: each word is
  // valid on its own (checked when set); a pick that mixes two versions still gets a valid range.
  std::atomic<uint32_t> num_tc{0};
  std::array<std::atomic<uint8_t>, 16> prio_tc{};
  std::array<std::atomic<uint32_t>, 16> tc_range{};
  std::unique_ptr<FlowSlot[]> slots;
};

NetDevice::NetDevice(std::vector<std::unique_ptr<Device>> queues, std::string spec)
    : queues_(std::move(queues)), spec_(std::move(spec)), cpus_(configured_cpus()) {
  if (queues_.empty() || queues_.size() > kMaxTxQueues)
    throw ConfigError("a device needs 1 to " + std::to_string(kMaxTxQueues) + " TX queues");
  for (const auto& q : queues_)
    if (!q) throw ConfigError("a device's TX queue is missing");
  impl_ = std::make_unique<Impl>(num_tx_queues(), cpus_);
}

// Members go in reverse order: the queues first (they may return ring packets holding flow
// slots), then impl_ with the slots (declared first for that, see netdev.hpp).
NetDevice::~NetDevice() = default;

void NetDevice::set_xps_cpus(uint32_t queue, std::span<const unsigned> cpus) {
  if (queue >= num_tx_queues())
    throw ConfigError("xps: queue " + std::to_string(queue) + " is not one of the device's " +
                      std::to_string(num_tx_queues()) + " TX queues");
  for (const unsigned c : cpus) {
    if (c >= cpus_)
      throw ConfigError("xps: CPU " + std::to_string(c) + " is not one of this machine's " +
                        std::to_string(cpus_) + " CPUs");
  }
  const uint64_t bit = uint64_t{1} << (queue % 64);
  bool any = false;
  for (unsigned c = 0; c < cpus_; ++c) {
    std::atomic<uint64_t>& w = impl_->cpu_words(c)[queue / 64];
    const bool on = std::find(cpus.begin(), cpus.end(), c) != cpus.end();
    if (on) w.fetch_or(bit, std::memory_order_relaxed);   // see Impl::xps
    else w.fetch_and(~bit, std::memory_order_relaxed);   // see Impl::xps
  }
  for (std::size_t i = 0; i < std::size_t{cpus_} * impl_->words && !any; ++i)
    any = impl_->xps[i].load(std::memory_order_relaxed) != 0;
  impl_->xps_any.store(any, std::memory_order_relaxed);  // see Impl::xps_any
}

std::vector<unsigned> NetDevice::xps_cpus(uint32_t queue) const {
  std::vector<unsigned> out;
  if (queue >= num_tx_queues()) return out;
  for (unsigned c = 0; c < cpus_; ++c) {
    if ((impl_->cpu_words(c)[queue / 64].load(std::memory_order_relaxed) >> (queue % 64)) & 1)
      out.push_back(c);
  }
  return out;
}

void NetDevice::clear_xps() noexcept {
  for (std::size_t i = 0; i < std::size_t{cpus_} * impl_->words; ++i)
    impl_->xps[i].store(0, std::memory_order_relaxed);
  impl_->xps_any.store(false, std::memory_order_relaxed);
}

void NetDevice::set_traffic_classes(const TrafficClasses& tcs) {
  const uint32_t n = num_tx_queues();
  if (tcs.num_tc > 16) throw ConfigError("traffic classes: num_tc " + std::to_string(tcs.num_tc) + " is above 16");
  for (uint32_t p = 0; p < 16 && tcs.num_tc > 0; ++p) {
    if (tcs.prio_tc[p] >= tcs.num_tc)
      throw ConfigError("traffic classes: priority " + std::to_string(p) + " maps to class " +
                        std::to_string(tcs.prio_tc[p]) + ", not below num_tc " +
                        std::to_string(tcs.num_tc));
  }
  for (uint32_t c = 0; c < tcs.num_tc; ++c) {
    const auto& r = tcs.tc_queues[c];
    if (r.count == 0 || r.offset >= n || r.count > n - r.offset)
      throw ConfigError("traffic classes: class " + std::to_string(c) + "'s queues " +
                        std::to_string(r.count) + "@" + std::to_string(r.offset) +
                        " are not within the device's " + std::to_string(n) + " TX queues");
  }
  // relaxed throughout: see Impl::num_tc.
  impl_->num_tc.store(0, std::memory_order_relaxed);
  for (uint32_t p = 0; p < 16; ++p) impl_->prio_tc[p].store(tcs.prio_tc[p], std::memory_order_relaxed);
  for (uint32_t c = 0; c < 16; ++c) {
    const auto& r = tcs.tc_queues[c];
    impl_->tc_range[c].store(c < tcs.num_tc ? (r.offset << 16) | r.count : 0,
                             std::memory_order_relaxed);
  }
  impl_->num_tc.store(tcs.num_tc, std::memory_order_relaxed);
}

TrafficClasses NetDevice::traffic_classes() const {
  TrafficClasses t;
  t.num_tc = impl_->num_tc.load(std::memory_order_relaxed);
  for (uint32_t p = 0; p < 16; ++p) t.prio_tc[p] = impl_->prio_tc[p].load(std::memory_order_relaxed);
  for (uint32_t c = 0; c < t.num_tc; ++c) {
    const uint32_t w = impl_->tc_range[c].load(std::memory_order_relaxed);
    t.tc_queues[c] = {.offset = w >> 16, .count = w & 0xffff};
  }
  return t;
}

uint32_t NetDevice::pick_tx_queue(Packet& p) noexcept {
  if (num_tx_queues() == 1) return 0;
  const bool xps = impl_->xps_any.load(std::memory_order_relaxed);  // see Impl::xps_any
  const int cpu = xps ? sched_getcpu() : -1;
  return pick_tx_queue(p, cpu < 0 ? cpus_ : static_cast<unsigned>(cpu));
}

uint32_t NetDevice::pick_tx_queue(Packet& p, unsigned cpu) noexcept {
  const uint32_t n = num_tx_queues();
  if (n == 1) return 0;
  if (p.tx_queue < n) return p.tx_queue;  // the application's choice: no flow slot
  if (p.flow_hash == 0) {
    if (const auto h = frame_flow_hash(p.frame())) p.flow_hash = *h;  // as skb_get_hash()
  }
  // The ooo_okay rule: while the flow's slot counts packets in flight, they all went to one
  // queue, and so does this one; otherwise this packet chooses afresh.
  std::atomic<uint64_t>& slot = impl_->slots[p.flow_hash & (kFlowSlots - 1)].word;
  // acquire: pairs with the release decrement in the pool's free path (a count of 0 means the
  // flow's earlier packets have been transmitted or dropped: a new queue cannot overtake them).
  uint64_t w = slot.load(std::memory_order_acquire);
  uint32_t q;
  uint64_t next;
  do {
    if ((w & kCountMask) != 0) {
      q = static_cast<uint32_t>(w >> kQueueShift);
      next = w + 1;
    } else {
      q = choose_queue(p, cpu);
      next = (uint64_t{q} << kQueueShift) | 1;
    }
    // acquire on both paths: as the load above; the increment itself publishes nothing.
  } while (!slot.compare_exchange_weak(w, next, std::memory_order_acquire));
  p.flow_in_flight = &slot;
  return q;
}

uint32_t NetDevice::choose_queue(const Packet& p, unsigned cpu) const noexcept {
  QueuePick pick{.num_queues = num_tx_queues(), .flow_hash = p.flow_hash};
  if (impl_->num_tc.load(std::memory_order_relaxed) > 0) {  // see Impl::num_tc
    const uint8_t tc = impl_->prio_tc[p.priority & 15].load(std::memory_order_relaxed);  // ditto
    const uint32_t w = impl_->tc_range[tc & 15].load(std::memory_order_relaxed);          // ditto
    pick.class_offset = w >> 16;
    pick.class_count = w & 0xffff;
  }
  std::array<uint64_t, kMaxTxQueues / 64> map;  // the CPU's XPS words, read once
  if (cpu < cpus_ && impl_->xps_any.load(std::memory_order_relaxed)) {  // see Impl::xps_any
    const std::atomic<uint64_t>* words = impl_->cpu_words(cpu);
    for (uint32_t i = 0; i < impl_->words; ++i)
      map[i] = words[i].load(std::memory_order_relaxed);  // see Impl::xps: old or new map, both valid
    pick.xps_mask = std::span<const uint64_t>(map.data(), impl_->words);
  }
  return txpath::pick_tx_queue(pick);
}

uint64_t NetDevice::flows_in_flight() const noexcept {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < kFlowSlots; ++i)
    sum += impl_->slots[i].word.load(std::memory_order_relaxed) & kCountMask;  // a test's reading, at rest
  return sum;
}

}  // namespace txpath
