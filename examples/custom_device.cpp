// SPDX-License-Identifier: MIT
// A custom Device: a ring of 32 descriptors that completes on poll(), and checks what it sends.
//
// The contract it follows (include/txpath/device.hpp):
//  * xmit() runs with tx_lock() held, called by the driver loop's owner only;
//  * it stops its queue when the ring is full (stop_queue()), before the next xmit() would fail,
//    and rings the doorbell for every accepted packet before it stops or returns busy;
//  * poll() (the service thread calls it once next_poll_ns() is due) takes tx_lock() itself,
//    returns the buffers with free_packets() and wakes the queue (wake_queue()).
// It parses every frame and checks that each sender's sequence numbers arrive in order (a
// pfifo keeps a sender's order). Exit status 0 when all of them arrived, in order.
#include <txpath/device.hpp>
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/txqueue.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

uint64_t steady_ns() {  // next_poll_ns() is in steady-clock nanoseconds
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

class RingDevice final : public txpath::Device {
 public:
  static constexpr std::size_t kRing = 32;
  static constexpr uint32_t kSenders = 2;

  ~RingDevice() override { txpath::free_packets(std::move(ring_)); }  // the pool outlives us

  std::string_view kind() const noexcept override { return "ring-example"; }
  std::string describe() const override { return "ring-example"; }

  txpath::XmitResult xmit(txpath::Packet* p, bool more) noexcept override {
    if (ring_.size() == kRing) {  // not reached while we stop in time; kept for the contract
      busy_.add(1);
      return txpath::XmitResult::busy;
    }
    check(*p);
    ring_.push_back(p);
    tx_packets_.add(1);
    tx_bytes_.add(p->len);
    const bool full = ring_.size() == kRing;
    if (!more || full) {
      doorbells_.add(1);  // a real driver writes the ring's tail register here
      // A fixed deadline: "now" recomputed at every call would always lie ahead of the
      // caller's clock reading, and poll() would never come due.
      due_ns_.store(steady_ns(), std::memory_order_relaxed);
      // release: pairs with the acquire in next_poll_ns()/in_flight() (hints for other threads).
      outstanding_.store(ring_.size(), std::memory_order_release);
    }
    if (full) stop_queue();  // netif_stop_queue(): no room for the next packet
    return txpath::XmitResult::ok;
  }

  void poll() noexcept override {
    std::lock_guard lock(tx_lock());
    const uint64_t n = ring_.size();
    if (n == 0) return;
    txpath::free_packets(std::move(ring_));  // the buffers go back to their pool
    completed_.add(n);
    outstanding_.store(0, std::memory_order_release);
    wake_queue();  // calls the queue's wake handler if we had stopped it
  }

  uint64_t next_poll_ns() const noexcept override {
    // acquire: pairs with the release stores above.
    return outstanding_.load(std::memory_order_acquire) != 0 ? due_ns_.load(std::memory_order_relaxed)
                                                              : 0;
  }
  uint64_t in_flight() const noexcept override {
    return outstanding_.load(std::memory_order_acquire);
  }

  bool in_order() {
    std::lock_guard lock(tx_lock());
    return in_order_;
  }
  uint64_t checked() {
    std::lock_guard lock(tx_lock());
    return checked_;
  }

 private:
  void check(const txpath::Packet& p) noexcept {  // under tx_lock, like every member it uses
    const auto info = txpath::parse_frame(p.frame());
    if (!info || info->sender >= kSenders || info->seq != next_seq_[info->sender]) {
      in_order_ = false;
      return;
    }
    ++next_seq_[info->sender];
    ++checked_;
  }

  txpath::PacketList ring_;                 // accepted, not yet completed; guarded by tx_lock
  std::atomic<uint64_t> outstanding_{0};    // ring_.size() at the last doorbell
  std::atomic<uint64_t> due_ns_{0};         // when poll() is due: the last doorbell
  std::array<uint64_t, kSenders> next_seq_{};  // guarded by tx_lock
  uint64_t checked_ = 0;                    // guarded by tx_lock
  bool in_order_ = true;                    // guarded by tx_lock
};

}  // namespace

int main() {
  constexpr uint64_t kPerSender = 50000;
  txpath::Pool pool;
  RingDevice device;
  txpath::TxQueueConfig config;
  config.strategy = "rootlock";
  config.qdisc = "pfifo limit 10000";
  auto queue = txpath::TxQueue::create(device, config);

  const txpath::FrameTemplate frame;
  std::vector<std::thread> senders;
  for (uint32_t id = 0; id < RingDevice::kSenders; ++id) {
    senders.emplace_back([&, id] {
      txpath::Pool::Cache cache(pool);
      for (uint64_t seq = 0; seq < kPerSender;) {
        txpath::Packet* p = cache.get();
        if (p == nullptr) {  // every buffer is queued or in the ring: let completions return some
          std::this_thread::yield();
          continue;
        }
        p->len = static_cast<uint32_t>(frame.write(p->buffer(), id, seq));
        // A drop (queue full) would leave a gap in the sequence: resend the same number.
        if (queue->send(p) == txpath::SendStatus::dropped) continue;
        ++seq;
      }
    });
  }
  for (auto& t : senders) t.join();
  if (!queue->drain(std::chrono::seconds(10))) {
    std::fprintf(stderr, "custom_device: the queue did not drain in 10 s\n");
    return 1;
  }
  const txpath::TxQueueStats s = queue->stats();
  queue.reset();  // the queue goes before the device (and the device before the pool)
  std::printf("sent %llu, %llu checked in order, %llu stops, %llu wakes\n",
              static_cast<unsigned long long>(s.sent),
              static_cast<unsigned long long>(device.checked()),
              static_cast<unsigned long long>(s.device.stops),
              static_cast<unsigned long long>(s.device.wakes));
  return device.in_order() && device.checked() == RingDevice::kSenders * kPerSender ? 0 : 1;
}
