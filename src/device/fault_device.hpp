// SPDX-License-Identifier: MIT
// `fault`: a device for tests that tries to break the driver loop, and checks what reaches it.
//
// Faults (drawn from a deterministic per-seed RNG, one draw per decision):
//  * with busy_prob, xmit() answers busy; half of those also stop the queue until
//    now + uniform[0, max_stop_ns];
//  * after accepting a packet, with stop_prob it stops the queue the same way.
// While stopped by itself, xmit() answers busy without drawing (the driver loop should not call
// it then; answering busy is the legal reaction). poll() wakes the queue once the wake time has
// passed; next_poll_ns() is that wake time while stopped, else 0. Accepted packets are freed at
// the doorbell (more == false), and before any busy answer or stop, as the doorbell contract
// requires — like `null`. No BQL.
//
// Checks: every accepted frame is parsed with parse_frame(). Per (sender, order key) the sequence
// numbers must strictly increase (a duplicate or an older seq is an order violation); the order
// key defaults to Packet::priority, so the check holds per priority band of prio/pfifo_fast,
// which only promise FIFO order within a band. Tracked senders are < kMaxSenders and keys
// < kMaxKeys: the table is a flat vector indexed sender * kMaxKeys + key, allocated once at
// construction (4096 x 16 x 8 bytes = 512 KiB), so recording allocates nothing. A frame outside
// that range, or one that does not parse, is counted (untracked()/unparsable()) and not checked.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/counter.hpp"
#include "txpath/device.hpp"
#include "txpath/packet.hpp"

namespace txpath {

struct FaultConfig {
  double busy_prob = 0.05;         // [0, 1]
  double stop_prob = 0.02;         // [0, 1]
  uint64_t max_stop_ns = 200'000;  // stops last uniform[0, max_stop_ns]
  uint64_t seed = 1;
  uint32_t mtu = 1500;
  // Which packets must stay in order relative to each other; must return < kMaxKeys to be
  // checked. Default: Packet::priority.
  std::function<uint32_t(const Packet&)> order_key;
};

class FaultDevice final : public Device {
 public:
  static constexpr uint32_t kMaxSenders = 4096;
  static constexpr uint32_t kMaxKeys = 16;

  // Throws ConfigError (one line) for a probability outside [0, 1].
  explicit FaultDevice(FaultConfig config = {});
  ~FaultDevice() override;

  std::string_view kind() const noexcept override { return "fault"; }
  // "fault:busy=0.05,stop=0.02,stop_ns=200000,seed=1" (+ ",mtu=N" when not 1500).
  std::string describe() const override;
  XmitResult xmit(Packet* p, bool more) noexcept override;
  void poll() noexcept override;
  uint64_t next_poll_ns() const noexcept override;
  uint64_t in_flight() const noexcept override;

  // Checks (exact once the device is quiescent; a racy recent value otherwise).
  uint64_t order_violations() const noexcept { return order_violations_.get(); }
  uint64_t unparsable() const noexcept { return unparsable_.get(); }
  uint64_t untracked() const noexcept { return untracked_.get(); }
  // Accepted packets from `sender` (0 for sender >= kMaxSenders).
  uint64_t sent_by(uint32_t sender) const noexcept;

 private:
  double uniform() noexcept;  // [0, 1)
  uint64_t next_u64() noexcept;
  void record(const Packet& p) noexcept;
  void flush() noexcept;
  void fault_stop() noexcept;

  FaultConfig cfg_;
  uint64_t rng_;                    // splitmix64 state; guarded by tx_lock
  PacketList pending_;              // accepted, not yet doorbelled; guarded by tx_lock
  bool drv_stopped_ = false;        // guarded by tx_lock
  // Wake time while stopped by us, else 0. Written under tx_lock; read lock-free by
  // next_poll_ns().
  std::atomic<uint64_t> wake_at_{0};
  // last seq + 1 per (sender, key); 0 = nothing seen yet. Guarded by tx_lock.
  std::vector<uint64_t> last_seq_;
  std::vector<SingleWriterCounter> sent_by_;  // written under tx_lock
  SingleWriterCounter order_violations_, unparsable_, untracked_;
};

}  // namespace txpath
