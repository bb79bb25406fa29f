// SPDX-License-Identifier: MIT
// A custom Device: it checks every frame it is given and completes a batch at its doorbell.
//
// The contract it follows (include/txpath/device.hpp):
//  * xmit() runs with tx_lock() held, called by the driver loop's owner only, so the members it
//    touches need no atomics (other threads read them under tx_lock());
//  * packets accepted with more == true may wait; the doorbell (more == false) announces them;
//  * a completed packet's buffer goes back to its pool with free_packets() (never `delete`);
//  * the counters DeviceStats reports are the protected tx_packets_, tx_bytes_, doorbells_ and
//    completed_.
// A device with a real ring completes later instead, in poll(), stops its queue when the ring is
// full (stop_queue()) and wakes it from poll() (wake_queue()): src/device/nic_device.cpp models
// one. This device checks that each sender's sequence numbers arrive in order (one pfifo band
// keeps a sender's order). Exit status 0 when all of them arrived, in order.
#include <txpath/device.hpp>
#include <txpath/frame.hpp>
#include <txpath/pool.hpp>
#include <txpath/txqueue.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

class CheckingDevice final : public txpath::Device {
 public:
  static constexpr uint32_t kSenders = 2;

  ~CheckingDevice() override { txpath::free_packets(std::move(pending_)); }  // pool outlives us

  std::string_view kind() const noexcept override { return "checking-example"; }
  std::string describe() const override { return "checking-example"; }

  txpath::XmitResult xmit(txpath::Packet* p, bool more) noexcept override {
    check(*p);
    pending_.push_back(p);
    tx_packets_.add(1);
    tx_bytes_.add(p->len);
    if (!more) {  // the doorbell: a real driver writes its ring's tail register here
      doorbells_.add(1);
      completed_.add(pending_.size());
      txpath::free_packets(std::move(pending_));  // the buffers go back to their pool
    }
    return txpath::XmitResult::ok;
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

  txpath::PacketList pending_;                 // accepted, not yet doorbelled; under tx_lock
  std::array<uint64_t, kSenders> next_seq_{};  // under tx_lock
  uint64_t checked_ = 0;                       // under tx_lock
  bool in_order_ = true;                       // under tx_lock
};

}  // namespace

int main() {
  constexpr uint64_t kPerSender = 50000;
  txpath::Pool pool;
  CheckingDevice device;
  txpath::TxQueueConfig config;
  config.strategy = "rootlock";
  config.qdisc = "pfifo limit 10000";
  auto queue = txpath::TxQueue::create(device, config);

  const txpath::FrameTemplate frame;
  std::vector<std::thread> senders;
  for (uint32_t id = 0; id < CheckingDevice::kSenders; ++id) {
    senders.emplace_back([&, id] {
      txpath::Pool::Cache cache(pool);
      for (uint64_t seq = 0; seq < kPerSender;) {
        txpath::Packet* p = cache.get();
        if (p == nullptr) {  // every buffer is queued: let completions return some
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
  std::printf("sent %llu, %llu checked in order, %llu doorbells\n",
              static_cast<unsigned long long>(s.sent),
              static_cast<unsigned long long>(device.checked()),
              static_cast<unsigned long long>(s.device.doorbells));
  return device.in_order() && device.checked() == CheckingDevice::kSenders * kPerSender ? 0 : 1;
}
