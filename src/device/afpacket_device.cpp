// SPDX-License-Identifier: MIT
#include "device/afpacket_device.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/clock.hpp"
#include "base/cpu_relax.hpp"
#include "sync/park.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

constexpr uint32_t kMinRing = 8, kMaxRing = 65536;
constexpr int32_t kMaxPriority = 15;         // the priorities a class map names (TC_BITMASK)
constexpr int kSndBuf = 8 << 20;             // socket send buffer: skbs of in-flight frames

uint32_t load_status(const tpacket2_hdr* h) noexcept {
  // acquire: pairs with the kernel's write barrier before it stores AVAILABLE (the frame is
  // ours again only after the kernel is done reading it).
  return std::atomic_ref<uint32_t>(const_cast<tpacket2_hdr*>(h)->tp_status)
      .load(std::memory_order_acquire);
}

void store_status(tpacket2_hdr* h, uint32_t status) noexcept {
  // release: pairs with the kernel's read barrier after it sees SEND_REQUEST (it must see the
  // frame data and tp_len written before).
  std::atomic_ref<uint32_t>(h->tp_status).store(status, std::memory_order_release);
}

// The configuration as a --device spec (describe()).
std::string spec_of(const AfPacketConfig& c) {
  std::string s = "afpacket:" + c.ifname;
  if (c.ring != AfPacketConfig{}.ring) s += ",ring=" + std::to_string(c.ring);
  if (c.bypass != AfPacketConfig{}.bypass) s += c.bypass ? ",bypass=1" : ",bypass=0";
  if (c.priority >= 0) s += ",prio=" + std::to_string(c.priority);
  if (c.kick_thread) s += ",kick=thread";
  return s;
}

}  // namespace

AfPacketDevice::Mapping::~Mapping() {
  if (addr && addr != MAP_FAILED) ::munmap(addr, len);
}

AfPacketDevice::AfPacketDevice(const AfPacketConfig& config)
    : ConfiguredDevice(config, spec_of(config)) {
  if (cfg_.ring < kMinRing || cfg_.ring > kMaxRing || !std::has_single_bit(cfg_.ring))
    netif::fail(spec_, "ring=" + std::to_string(cfg_.ring) + " must be a power of two in [" +
                           std::to_string(kMinRing) + ", " + std::to_string(kMaxRing) + "]");
  if (cfg_.priority < -1 || cfg_.priority > kMaxPriority)
    netif::fail(spec_, "prio=" + std::to_string(cfg_.priority) + " is out of range [0, " +
                           std::to_string(kMaxPriority) + "]");
  ifc_ = netif::lookup(spec_, cfg_.ifname);
  if (ifc_.arp_type != 1)  // ARPHRD_ETHER: our frames carry an Ethernet header
    netif::fail(spec_, "interface '" + cfg_.ifname + "' is not an Ethernet device (link type " +
                           std::to_string(ifc_.arp_type) + ")");
  set_mtu(ifc_.mtu);

  fd_ = netif::Fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));  // protocol 0: receive nothing
  if (!fd_) netif::fail_errno(spec_, "socket(AF_PACKET)", errno);
  const int version = TPACKET_V2;
  if (::setsockopt(fd_.get(), SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
    netif::fail_errno(spec_, "setsockopt(PACKET_VERSION, TPACKET_V2)", errno);
  const int one = 1;
  if (cfg_.bypass &&
      ::setsockopt(fd_.get(), SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
    netif::fail_errno(spec_, "setsockopt(PACKET_QDISC_BYPASS)", errno);
  if (::setsockopt(fd_.get(), SOL_PACKET, PACKET_LOSS, &one, sizeof one) < 0)
    netif::fail_errno(spec_, "setsockopt(PACKET_LOSS)", errno);
  // The kernel copies the socket's priority into every skb of the ring (tpacket_fill_skb); with
  // traffic classes on the interface it selects the class, and so the range of TX queues.
  if (cfg_.priority >= 0 && ::setsockopt(fd_.get(), SOL_SOCKET, SO_PRIORITY, &cfg_.priority,
                                         sizeof cfg_.priority) < 0)
    netif::fail_errno(spec_, "setsockopt(SO_PRIORITY)", errno);  // the spec names prio=P
  // Best effort: the default send buffer holds only ~100 in-flight frames' skbs.
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUFFORCE, &kSndBuf, sizeof kSndBuf) < 0)
    (void)::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &kSndBuf, sizeof kSndBuf);

  // Frames: a power of two that holds the header and the largest frame; blocks: one page, or
  // one frame when a frame is larger than a page. Either way frame i sits at i * frame_size.
  data_offset_ = TPACKET2_HDRLEN - sizeof(sockaddr_ll);
  frame_size_ = std::bit_ceil(data_offset_ + max_frame_len());
  const auto page = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  const uint32_t block = std::max(page, frame_size_);
  tpacket_req req{};
  req.tp_block_size = block;
  req.tp_frame_size = frame_size_;
  req.tp_frame_nr = cfg_.ring;
  req.tp_block_nr = static_cast<unsigned>(static_cast<uint64_t>(cfg_.ring) * frame_size_ / block);
  if (req.tp_block_nr == 0) req.tp_block_nr = 1, req.tp_frame_nr = block / frame_size_;
  if (::setsockopt(fd_.get(), SOL_PACKET, PACKET_TX_RING, &req, sizeof req) < 0)
    netif::fail_errno(spec_, "setsockopt(PACKET_TX_RING)", errno);
  ring_.len = static_cast<std::size_t>(req.tp_block_size) * req.tp_block_nr;
  ring_.addr = ::mmap(nullptr, ring_.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (ring_.addr == MAP_FAILED) netif::fail_errno(spec_, "mmap(TX ring)", errno);
  mask_ = req.tp_frame_nr - 1;

  sockaddr_ll bind_addr{};
  bind_addr.sll_family = AF_PACKET;
  bind_addr.sll_protocol = 0;
  bind_addr.sll_ifindex = ifc_.index;
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&bind_addr), sizeof bind_addr) < 0)
    netif::fail_errno(spec_, "bind to '" + cfg_.ifname + "'", errno);
  dest_.sll_family = AF_PACKET;
  dest_.sll_protocol = htons(ETH_P_IP);
  dest_.sll_ifindex = ifc_.index;
  dest_.sll_halen = 6;
  if (cfg_.kick_thread) {
    in_ring_.assign(mask_ + 1, nullptr);
    kicker_ = std::thread([this] { kicker_loop(); });
  }
}

AfPacketDevice::~AfPacketDevice() {
  if (kicker_.joinable()) {
    // relaxed: the seq bump below is the release the kicker acquires before it reads the flag.
    kicker_stop_.store(true, std::memory_order_relaxed);
    {
      std::lock_guard lock(tx_lock());
      wake_kicker();
    }
    kicker_.join();
    // The kicker may have stopped before kicking the last doorbell's frames: one more kick,
    // below, sends whatever still waits in SEND_REQUEST (a kick with nothing to send is a no-op).
    std::lock_guard lock(tx_lock());
    kick_needed_ = kick_needed_ || used() > 0;  // joined: from here on this thread kicks itself
  }
  // Whatever was copied but not yet announced goes out now (the doorbell contract), then its
  // buffers return to their pools; frames still in the kernel's hands complete on their own.
  std::lock_guard lock(tx_lock());
  if (unrung_ || kick_needed_) doorbell();
  reap();
  // Frames the kernel still holds: their buffers go back all the same (the kernel reads the
  // ring's copy, never the buffer).
  PacketList held;
  for (Packet*& p : in_ring_)
    if (p) held.push_back(std::exchange(p, nullptr));
  completed_.add(held.size());
  free_packets(std::move(held));
}

tpacket2_hdr* AfPacketDevice::frame(uint64_t index) const noexcept {
  return reinterpret_cast<tpacket2_hdr*>(static_cast<std::byte*>(ring_.addr) +
                                         (index & mask_) * frame_size_);
}

void AfPacketDevice::address_frames(FrameSpec& spec) const {
  netif::address_frames(spec, ifc_, cfg_.ifname);
}

void AfPacketDevice::reap() noexcept {
  uint64_t n = 0;
  PacketList done;  // kick=thread: the buffers whose frames completed, back to their pools now
  while (head_ != tail_) {
    tpacket2_hdr* h = frame(head_);
    const uint32_t status = load_status(h);
    if (status == TP_STATUS_AVAILABLE) {
      // done
    } else if (status & TP_STATUS_WRONG_FORMAT) {
      tx_errors_.add(1);                         // cannot happen with PACKET_LOSS; be safe
      store_status(h, TP_STATUS_AVAILABLE);
    } else {
      break;                                     // SEND_REQUEST or SENDING: still the kernel's
    }
    if (!in_ring_.empty()) done.push_back(std::exchange(in_ring_[head_ & mask_], nullptr));
    ++head_;
    ++n;
  }
  if (!done.empty()) {
    completed_.add(done.size());
    free_packets(std::move(done));
  }
  if (n && drv_stopped_ && mask_ + 1 - used() >= (mask_ + 1) / 4) {
    drv_stopped_ = false;
    wake_queue();
  }
}

AfPacketDevice::KickOutcome AfPacketDevice::kick_once() noexcept {
  const ssize_t r = ::sendto(fd_.get(), nullptr, 0, MSG_DONTWAIT,
                             reinterpret_cast<const sockaddr*>(&dest_), sizeof dest_);
  if (r >= 0) return KickOutcome::sent;
  const int err = errno;
  if (err != EAGAIN && err != ENOBUFS && err != EINTR)
    kick_errors_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  if (err == ENETDOWN || err == ENXIO || err == ENODEV) return KickOutcome::link_gone;
  // The frames the kernel did not take stay SEND_REQUEST: the next kick sends them.
  return KickOutcome::retry;
}

void AfPacketDevice::kick() noexcept {
  const KickOutcome k = kick_once();
  // The link is down or gone: as a NIC driver flushes its ring when the link drops, the frames
  // still waiting are dropped (tx_errors) so that nothing waits for a link that may never come
  // back. The kernel reads SEND_REQUEST frames only inside a kick, and inline kicks happen only
  // here under tx_lock, so no frame is taken back from under the kernel.
  if (k == KickOutcome::link_gone) flush_waiting();
  kick_needed_ = k == KickOutcome::retry;
}

void AfPacketDevice::flush_waiting() noexcept {
  for (uint64_t i = head_; i != tail_; ++i) {
    tpacket2_hdr* h = frame(i);
    if (load_status(h) == TP_STATUS_SEND_REQUEST) {
      store_status(h, TP_STATUS_AVAILABLE);
      tx_errors_.add(1);
    }
  }
}

void AfPacketDevice::wake_kicker() noexcept {
  // release: pairs with the kicker's acquire load of doorbell_seq_; the frames' SEND_REQUEST
  // stores (and kicker_stop_) happen-before the kick that follows. One writer: tx_lock.
  doorbell_seq_.store(doorbell_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  // A seq_cst fence, then the parked count (wake_parked): the Dekker pair with the kicker's
  // seq_cst count before it re-reads the seq and sleeps, so no doorbell is slept through.
  wake_parked(doorbell_seq_, kicker_parked_);
}

void AfPacketDevice::kicker_loop() noexcept {
  uint32_t seen = 0;
  bool refused = false;  // the last kick was refused for now: try again soon, doorbell or not
  for (;;) {
    // acquire: pairs with the release store in wake_kicker().
    uint32_t now = doorbell_seq_.load(std::memory_order_acquire);
    for (unsigned spin = 0; now == seen && !refused && spin < kSpinBeforePark; ++spin) {
      cpu_relax();
      now = doorbell_seq_.load(std::memory_order_acquire);  // acquire: as above
    }
    if (now == seen) {
      // Sleeps until a doorbell (or 50 us when a refused kick waits to be retried; 100 ms
      // otherwise, a bound, not a poll: every doorbell wakes the kicker).
      // seq_cst: the kicker's half of the Dekker pair with wake_parked() in wake_kicker().
      kicker_parked_.fetch_add(1, std::memory_order_seq_cst);
      futex_wait_for(doorbell_seq_, seen, refused ? 50'000 : 100'000'000);
      kicker_parked_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: only a hint to wakers
      now = doorbell_seq_.load(std::memory_order_acquire);     // acquire: as above
    }
    // relaxed: the stop request is published by the seq bump acquired above.
    if (kicker_stop_.load(std::memory_order_relaxed)) return;
    if (now == seen && !refused) continue;
    seen = now;
    refused = !kick_from_kicker();
  }
}

bool AfPacketDevice::kick_from_kicker() noexcept {
  const KickOutcome k = kick_once();
  if (k == KickOutcome::link_gone) {
    // As kick(): the link is gone, what waits is dropped. Only this thread kicks, and it is not
    // kicking now, so no frame is taken back from under the kernel.
    std::lock_guard lock(tx_lock());
    flush_waiting();
    reap();
    return true;
  }
  // The completions the kick made (veth completes frames inside it) are reaped here: their
  // buffers, and the senders' budgets, go back now, and a queue the driver stopped for a full
  // ring wakes now, not at the service thread's next poll. A stopped queue waits for tx_lock;
  // otherwise a busy lock means its holder is in xmit() and reaps itself.
  if (stopped()) {
    std::lock_guard lock(tx_lock());
    reap();
    publish_hints();
  } else if (tx_lock().try_lock()) {
    std::lock_guard lock(tx_lock(), std::adopt_lock);
    reap();
    publish_hints();
  }
  return k == KickOutcome::sent;
}

void AfPacketDevice::doorbell() noexcept {
  doorbells_.add(1);
  if (kicker_.joinable()) wake_kicker();  // kick=thread, until the destructor joined it
  else kick();
  unrung_ = false;
  const uint64_t n = pending_.size();
  free_packets(std::move(pending_));  // the data was copied into the ring
  completed_.add(n);
  last_activity_ns_ = now_ns();
}

XmitResult AfPacketDevice::xmit(Packet* p, bool more) noexcept {
  if (drop_overlong(p)) [[unlikely]] {  // never copied into the ring: not a frame we can send
    if (!more && (unrung_ || kick_needed_)) doorbell();
    publish_hints();
    return XmitResult::ok;
  }
  if (used() > mask_) {
    reap();
    if (used() > mask_) {
      drv_stopped_ = true;
      stop_queue();
      if (unrung_ || kick_needed_) doorbell();
      busy_.add(1);
      publish_hints();
      return XmitResult::busy;
    }
  }
  tpacket2_hdr* h = frame(tail_);
  std::memcpy(reinterpret_cast<std::byte*>(h) + data_offset_, p->data, p->len);
  h->tp_len = p->len;
  store_status(h, TP_STATUS_SEND_REQUEST);
  ++tail_;
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  unrung_ = true;
  if (in_ring_.empty()) pending_.push_back(p);
  else in_ring_[(tail_ - 1) & mask_] = p;
  bool ring = !more;
  if (used() > mask_) {
    reap();  // clean before stopping, as drivers do
    if (used() > mask_) {
      drv_stopped_ = true;
      stop_queue();
      ring = true;
    }
  }
  if (ring) {
    doorbell();
    reap();
  }
  publish_hints();
  return XmitResult::ok;
}

void AfPacketDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  if (kick_needed_) kick();
  reap();
  last_activity_ns_ = now_ns();
  publish_hints();
}

void AfPacketDevice::publish_hints() noexcept {
  const uint64_t outstanding = used();
  store_hints(outstanding,
              kernel_ring_poll_at(outstanding, kick_needed_, drv_stopped_, last_activity_ns_));
}

std::unique_ptr<Device> make_afpacket_device(const AfPacketConfig& config) {
  return std::make_unique<AfPacketDevice>(config);
}

}  // namespace txpath
