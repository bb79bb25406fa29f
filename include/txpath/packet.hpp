// SPDX-License-Identifier: MIT
// Packet descriptors and intrusive packet lists.
//
// Ownership rule: a Packet belongs to exactly one party at a time — its pool, a sender, a strategy's
// hand-off list, the qdisc, the driver loop's requeue list, a device ring, or a `to_free` list — and
// its `next` link belongs to that owner. A packet is never on two lists.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace txpath {

class Pool;

// Packet::tx_queue when the application chose no queue.
inline constexpr uint32_t kAnyTxQueue = UINT32_MAX;

// Layout: what every send and every free touch comes first, within the first 64 bytes; the
// fields only fq reads (tstamp_ns, pacing_rate) come last.
struct Packet {
  Packet* next = nullptr;       // link for whichever list currently owns the packet
  std::byte* data = nullptr;    // start of the frame (Ethernet header first); memory owned by `pool`
  uint32_t len = 0;             // frame length in bytes (no FCS)
  uint32_t capacity = 0;        // usable bytes at `data`
  uint32_t priority = 0;        // skb->priority: the low 4 bits index a priomap
  uint32_t flow_hash = 0;       // for flow-aware qdiscs
  uint64_t enqueue_ns = 0;      // the qdisc's own time stamp: a qdisc that needs one (fq_codel's
                                // sojourn time, fq's time_to_send) sets it in enqueue(); send()
                                // leaves it alone (a clock read per packet that pfifo_fast never uses)
  Pool* pool = nullptr;         // where the buffer returns when the packet is freed
  // Set by NetDevice::pick_tx_queue(): the in-flight count of this packet's flow slot, which
  // free_packets() decrements (the ooo_okay rule). Nobody else writes it.
  std::atomic<uint64_t>* flow_in_flight = nullptr;
  // The TX queue the application chose for this packet on a device with several (explicit
  // choice: it wins over XPS and the flow hash, see txpath/netdev.hpp); kAnyTxQueue: none.
  uint32_t tx_queue = UINT32_MAX;
  // A sampled packet's send time: the low 32 bits of the steady clock (ns) when the sender
  // handed it over, never 0; 0 = not sampled. Whoever calls Device::xmit() reads it first and,
  // when nonzero and the packet is accepted, tells Device::note_departure() (the queueing delay
  // the bench measures). No qdisc touches it; a sender that samples writes it on every packet.
  uint32_t sent_stamp = 0;
  // The library's, never the application's: set when a queue accepts the packet (TxQueue::send,
  // send_burst), cleared when its pool hands it out again (Pool::get, Pool::Cache::get). A queue
  // refuses a packet that has it set (SendStatus::in_flight): the same packet submitted twice.
  // The library accesses it only through std::atomic_ref<bool> (src/engine/admission.hpp): a
  // submission after the first is refused; two at the same instant from two threads (a data
  // race of the application's on a packet it does not own) are not guaranteed to be caught.
  bool in_flight = false;
  uint64_t tstamp_ns = 0;       // skb->tstamp: earliest departure time (EDT), steady-clock ns
                                // (the env clock of time-based qdiscs); 0 = none (fq)
  uint64_t pacing_rate = 0;     // sk->sk_pacing_rate of the sending flow, bytes/s; 0 = unpaced (fq)

  std::span<std::byte> frame() noexcept { return {data, len}; }
  std::span<const std::byte> frame() const noexcept { return {data, len}; }
  std::span<std::byte> buffer() noexcept { return {data, capacity}; }
};
static_assert(offsetof(Packet, sent_stamp) + sizeof(uint32_t) <= 64,
              "the fields of every send and free stay in the packet's first cache line");

// A FIFO of packets linked through Packet::next, with O(1) push, pop, splice and a running byte
// count. Not thread-safe: whoever owns the list owns its packets.
class PacketList {
 public:
  PacketList() = default;
  PacketList(const PacketList&) = delete;
  PacketList& operator=(const PacketList&) = delete;
  PacketList(PacketList&& other) noexcept { take(other); }
  PacketList& operator=(PacketList&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  // The packets of a chain linked through Packet::next, newest first (what a lock-free LIFO push
  // list hands over when it is detached), as a list in arrival order: oldest at the front.
  static PacketList from_lifo(Packet* newest) noexcept {
    PacketList list;
    for (Packet* p = newest; p;) {
      Packet* older = p->next;
      list.push_front(p);
      p = older;
    }
    return list;
  }

  bool empty() const noexcept { return head_ == nullptr; }
  std::size_t size() const noexcept { return count_; }
  uint64_t bytes() const noexcept { return bytes_; }
  Packet* front() const noexcept { return head_; }
  Packet* back() const noexcept { return tail_; }

  void push_back(Packet* p) noexcept {
    p->next = nullptr;
    if (tail_) tail_->next = p; else head_ = p;
    tail_ = p;
    ++count_;
    bytes_ += p->len;
  }

  void push_front(Packet* p) noexcept {
    p->next = head_;
    head_ = p;
    if (!tail_) tail_ = p;
    ++count_;
    bytes_ += p->len;
  }

  Packet* pop_front() noexcept {
    Packet* p = head_;
    if (!p) return nullptr;
    head_ = p->next;
    if (!head_) tail_ = nullptr;
    p->next = nullptr;
    --count_;
    bytes_ -= p->len;
    return p;
  }

  // Hands over the whole chain (front first, linked through Packet::next, the last one's next
  // null) and leaves the list empty.
  Packet* release() noexcept {
    Packet* chain = head_;
    head_ = tail_ = nullptr;
    count_ = 0;
    bytes_ = 0;
    return chain;
  }

  // Moves all of `other` to the back of this list; `other` becomes empty.
  void splice_back(PacketList& other) noexcept {
    if (other.empty()) return;
    if (tail_) tail_->next = other.head_; else head_ = other.head_;
    tail_ = other.tail_;
    count_ += other.count_;
    bytes_ += other.bytes_;
    other.head_ = other.tail_ = nullptr;
    other.count_ = 0;
    other.bytes_ = 0;
  }

  template <class F>
  void for_each(F&& f) const {
    for (Packet* p = head_; p; p = p->next) f(p);
  }

 private:
  void take(PacketList& o) noexcept {
    head_ = o.head_;
    tail_ = o.tail_;
    count_ = o.count_;
    bytes_ = o.bytes_;
    o.head_ = o.tail_ = nullptr;
    o.count_ = 0;
    o.bytes_ = 0;
  }

  // count_ and bytes_ apart: adjacent, GCC's SLP vectoriser turned pop_front()'s two updates
  // into one 16-byte load, subtract and store, and that load, right after push_back()'s two
  // 8-byte stores (a lone packet's bypass: push_back, then the driver loop's pop_front), cannot
  // be forwarded from the store buffer.
  Packet* head_ = nullptr;
  std::size_t count_ = 0;
  Packet* tail_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace txpath
