// SPDX-License-Identifier: MIT
// The device seam: what the driver loop transmits into.
//
// Threading: xmit() is called only by the current owner of the driver loop, with tx_lock() held
// (Linux HARD_TX_LOCK). poll() — the completion side (Linux: TX-completion NAPI) — may run on
// any thread; it takes tx_lock() itself. A device knows nothing of qdiscs; its only signal
// upstream is the wake handler, called when a stopped queue can take packets again (it must only
// schedule a driver-loop run, never enqueue or dequeue).
//
// Doorbell (xmit_more) contract: packets accepted with `more == true` may sit in the ring
// unannounced; the device rings the doorbell when it accepts a packet with `more == false`, and
// also before it returns Busy or stops its queue, so that nothing accepted is ever left
// unannounced when the driver loop stops calling it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "txpath/counter.hpp"
#include "txpath/dql.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/tx_lock.hpp"

namespace txpath {

class LatencyHistogram;

enum class XmitResult : uint8_t {
  ok,    // the device owns the packet now (NETDEV_TX_OK)
  busy,  // ring full: the packet stays with the caller, who requeues it (NETDEV_TX_BUSY)
};

struct DeviceStats {
  uint64_t tx_packets = 0;     // accepted by xmit()
  uint64_t tx_bytes = 0;
  uint64_t doorbells = 0;      // doorbell writes (one per xmit_more batch)
  uint64_t busy = 0;           // xmit() calls answered Busy
  uint64_t completed = 0;      // packets whose buffers went back to their pool
  uint64_t stops = 0;          // queue stops (driver or BQL)
  uint64_t wakes = 0;          // queue wakes
  uint64_t tx_errors = 0;      // accepted packets the device (the kernel) then failed to send;
                               // they count as sent upstream, as a NIC's tx errors do
};

class Device {
 public:
  explicit Device(uint32_t mtu = 1500) : mtu_(mtu) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual std::string_view kind() const noexcept = 0;
  // The device as a --device spec, e.g. "nic:pkt=20,doorbell=200,ring=512".
  virtual std::string describe() const = 0;

  // Called with tx_lock() held by the driver-loop owner. See the doorbell contract above.
  virtual XmitResult xmit(Packet* p, bool more) noexcept = 0;

  // Whether holding the doorbell for more packets (xmit_more) saves the device work: true for a
  // device whose doorbell costs something of its own (an MMIO write, a system call, a buffered
  // write); false where ringing it costs nothing beyond the packets it announces (null, a `nic`
  // model with doorbell=0; Linux's veth and dummy ignore xmit_more alike). A strategy that
  // delegates to batch doorbells (drainer) lets a lone sender transmit itself when it is false.
  virtual bool xmit_more_pays() const noexcept { return true; }

  // Completion side: reap what has completed by now, return buffers, credit BQL, wake the queue.
  virtual void poll() noexcept {}
  // Steady-clock ns at which poll() next has work to do; 0 when nothing is outstanding. A fixed
  // time (e.g. the last doorbell's), not "now" at each call: the service thread polls once its
  // own clock reaches the answer, which a moving "now" never lets happen.
  virtual uint64_t next_poll_ns() const noexcept { return 0; }
  // Packets accepted but not yet completed.
  virtual uint64_t in_flight() const noexcept { return 0; }

  // Queue state (netif_xmit_stopped): driver stop or BQL stop.
  bool stopped() const noexcept {
    // acquire: pairs with the release in stop_queue()/wake_queue()/bql_*, so a reader that sees
    // the queue awake also sees the ring space the completion freed.
    return state_.load(std::memory_order_acquire) != 0;
  }
  // BQL, or nullptr for a device without byte queue limits.
  Dql* dql() noexcept { return bql_enabled_ ? &dql_ : nullptr; }
  // Byte budget for one bulk dequeue (dql_avail), or a huge number without BQL.
  int64_t tx_budget_bytes() const noexcept { return bql_enabled_ ? dql_.avail() : INT64_MAX / 4; }

  // Real devices put what they know of their link into the frames senders build for them (a
  // link-layer device: the interface's MAC as source; a UDP socket: its peer's address and port,
  // its local address); models leave `spec` as it is. The far end's MAC and IPv4 addresses on a
  // link are the caller's to set (the bench takes them from the testbed).
  virtual void address_frames(FrameSpec& spec) const { (void)spec; }

  uint32_t mtu() const noexcept { return mtu_; }
  uint32_t max_frame_len() const noexcept { return mtu_ + 14; }

  TxLock& tx_lock() noexcept { return tx_lock_; }
  // NETIF_F_LLTX (dev->lltx): xmit() needs no tx lock from the driver loop, whose owner (RUNNING)
  // is already its only caller; see set_lltx().
  bool lltx() const noexcept { return lltx_; }
  // Set once, before the device is used; for tests and custom drivers. TX queues use
  // attach_queue()/detach_queue().
  void set_wake_handler(std::function<void()> handler) { wake_handler_ = std::move(handler); }

  // One TX queue per device: a second queue would steal the wake signal from the first.
  // Throws ConfigError if a queue is already attached. `irq_handler`: the completion interrupt
  // line (see raise_completion_irq()); may be empty.
  void attach_queue(std::function<void()> wake_handler, std::function<void()> irq_handler = {});
  // Unhooks both handlers under tx_lock (where they are called), so they are never called again.
  void detach_queue() noexcept;

  DeviceStats stats() const noexcept;

  // Sampled queueing delay (the bench's): where note_departure() records, or nullptr (then it
  // records nothing). Set while no packet moves (before a run's senders start, after they are
  // done); the log is written under tx_lock() and read once the run is over.
  void set_departure_log(LatencyHistogram* log) noexcept { departure_log_ = log; }
  // xmit(), and for a sampled packet it accepted (Packet::sent_stamp != 0) note_departure(): the
  // call every transmitter makes (driver loop, peer queues, the bench's floor), with tx_lock()
  // held. An unsampled packet costs one load and a branch over xmit().
  XmitResult xmit_sampled(Packet* p, bool more) noexcept {
    const uint32_t stamp = p->sent_stamp;  // read first: the device owns p once it accepts it
    const XmitResult r = xmit(p, more);
    if (stamp != 0 && r == XmitResult::ok) [[unlikely]] note_departure(stamp);
    return r;
  }
  // Records now - stamp (the low 32 bits of the steady clock at send) into the departure log.
  void note_departure(uint32_t stamp) noexcept;

 protected:
  // netif_tx_stop_queue(); called with tx_lock held.
  void stop_queue() noexcept;
  // netif_tx_wake_queue(); called with tx_lock held. Calls the wake handler if the queue was
  // stopped by the driver and BQL does not hold it.
  void wake_queue() noexcept;
  // The completion interrupt being armed: a polled device calls it (tx_lock held) when
  // next_poll_ns() goes from 0 (nothing outstanding) to a time, so that whoever polls it (the
  // queue's service thread, which may be asleep until kicked) wakes up to poll at that time, as
  // a NIC raises its TX interrupt whether or not the CPU is idle. The handler only wakes a
  // thread; like the wake handler it never enqueues or dequeues.
  void raise_completion_irq() noexcept {
    if (irq_handler_) irq_handler_();
  }
  // netdev_tx_sent_queue(): BQL accounting; stops the queue when over the limit.
  void bql_sent(uint64_t bytes) noexcept;
  // netdev_tx_completed_queue(): BQL credit; wakes the queue when back under the limit.
  void bql_completed(uint64_t packets, uint64_t bytes, uint64_t now_ns) noexcept;
  void enable_bql(const Dql::Config& config = {});
  // The doorbell of a device whose doorbell completes everything it announces at once (null,
  // test devices): counts one doorbell, returns `batch` to its pools, counts it completed.
  // Called with tx_lock held; does nothing for an empty batch.
  void ring_and_complete(PacketList& batch) noexcept;
  // The same for a doorbell that announces `p` alone (a lone sender's bypass): no list to walk.
  void ring_and_complete_one(Packet* p) noexcept;
  // A frame longer than its buffer (Packet::len > capacity), which TxQueue::send() refuses
  // (SendStatus::invalid) and only a direct xmit() caller can hand over: true for such a packet,
  // which is then counted as accepted, as a tx error and as completed, and returned to its pool
  // unread (no byte past its buffer is written out or sent). Called first in xmit(), with
  // tx_lock held; the device then returns XmitResult::ok.
  bool drop_overlong(Packet* p) noexcept {
    if (p->len <= p->capacity) [[likely]]
      return false;
    drop_overlong_slow(p);
    return true;
  }
  // Lockless TX (Linux's NETIF_F_LLTX, which dummy and veth set): the driver loop calls xmit()
  // without tx_lock. Only for a device whose xmit() and completions share no state with
  // another thread: nothing but the driver-loop owner calls xmit() on this TX queue, and it
  // completes inline (no poll()). Others that transmit into it (the bench's floor, peer queues)
  // still take tx_lock among themselves. Only in the constructor.
  void set_lltx() noexcept { lltx_ = true; }
  // For a real device that learns its MTU from the interface; only in the constructor.
  void set_mtu(uint32_t mtu) noexcept { mtu_ = mtu; }

  // Counters for subclasses (written under tx_lock).
  SingleWriterCounter tx_packets_, tx_bytes_, doorbells_, busy_, completed_, tx_errors_;

 private:
  void notify_wake() noexcept;
  [[gnu::cold]] void drop_overlong_slow(Packet* p) noexcept;

  static constexpr uint32_t kDrvXoff = 1;    // __QUEUE_STATE_DRV_XOFF
  static constexpr uint32_t kStackXoff = 2;  // __QUEUE_STATE_STACK_XOFF (BQL)

  uint32_t mtu_;
  TxLock tx_lock_;
  std::atomic<uint32_t> state_{0};
  bool bql_enabled_ = false;
  bool lltx_ = false;
  Dql dql_;
  std::function<void()> wake_handler_;
  std::function<void()> irq_handler_;  // raise_completion_irq()
  SingleWriterCounter stops_, wakes_;
  LatencyHistogram* departure_log_ = nullptr;
};

// Builds a device from a --device spec: "null", "nic", "nic:pkt=NS,doorbell=NS,ring=N[,rate=GBIT]",
// "fault:busy=P,stop=P,seed=N". Throws ConfigError (one line) for an unknown or malformed spec.
std::unique_ptr<Device> make_device(std::string_view spec);

// A kind of device make_device() builds: its name, the form of its --device spec, one line on it,
// and what it can do. `spec` and `what` are for people; a program asks the capabilities, never
// the text.
struct DeviceKind {
  std::string_view name;  // "udp"
  std::string_view spec;  // "udp:HOST:PORT[,batch=N]"
  std::string_view what;  // "a connected UDP socket, one sendmmsg per doorbell"
  // The spec takes queues=N for N > 1: make_net_device() builds N TX queues. False: one TX queue
  // (pcap takes queues=1 and no more).
  bool takes_queues = false;
  // Its frames leave through the kernel for a peer: on an Ethernet link (afpacket, afxdp:
  // link_interface()) or to a UDP socket's destination (udp: socket_peer()), where a sink can
  // count them and the kernel's own UDP path can send the same way (the bench's kernel row).
  // False for the model kinds, a pcap file and a TUN interface (what it writes enters this host).
  bool reaches_peer = false;
};
// Every kind make_device() knows, in the order its errors list them.
std::span<const DeviceKind> device_kinds() noexcept;
// The kind a --device spec names (its text before the first ':'); nullptr when make_device()
// knows no such kind.
const DeviceKind* find_device_kind(std::string_view spec) noexcept;

}  // namespace txpath
