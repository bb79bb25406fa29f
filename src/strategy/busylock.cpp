// SPDX-License-Identifier: MIT
// Strategy `busylock`: Linux __dev_xmit_skb() from commit 79640a4ca695 (Eric Dumazet, 2010,
// after a patch by Alexander Duyck) until v6.18.
//
// A sender that sees the qdisc RUNNING (a racy, lock-free read) first takes busylock, then the
// root lock. The sender that wins RUNNING drops busylock before running the driver loop. Effect:
// while an owner loops (re-taking the root lock after every device call), the other senders queue
// on busylock, so the owner competes for the root lock with at most one sender.
//
// Shared cache lines per packet (contended case): RUNNING (read), busylock, root lock, qdisc.
// Lock order: busylock -> root lock -> device tx lock. Dropped packets are freed after both locks
// are released (the kernel frees them before releasing busylock; the issue asks for "after
// every lock").
#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"

namespace txpath {

namespace {

template <class Lock>
class BusylockQueue : public LockedQueue<Lock> {
 public:
  BusylockQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : LockedQueue<Lock>(device, std::move(qdisc), config, "busylock") {}

  SendStatus send(Packet* p) noexcept override {
    // qdisc_is_running(), racy by design: not running, busylock is not taken and the path is
    // the plain root-lock one (LockedQueue::send, the same code the compiler lays out for
    // rootlock; laid out here with the busylock branch it cost a lone sender ~20 ns more).
    // The contended path is out of line, so that the lone sender's stays the rootlock code.
    if (!this->is_running()) [[likely]] return LockedQueue<Lock>::send(p);
    return send_contended(p);
  }

  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    PacketList batch, to_free;
    const std::size_t accepted = this->admit_burst(packets, status, batch);
    if (accepted == 0) return 0;
    serialize_busy(this->is_running(), batch, to_free, BurstVerdicts(status, accepted));
    free_packets(std::move(to_free));
    return accepted;
  }

 private:
  [[gnu::noinline]] SendStatus send_contended(Packet* p) noexcept {
    if (const SendStatus refused = this->admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    PacketList batch, to_free;
    batch.push_back(p);
    const Verdict v = serialize_busy(true, batch, to_free, NoVerdicts{});
    return this->leave(to_free, v);
  }

  // Steps 2-4, with busylock in front of the root lock when the caller saw the qdisc running
  // (`contended`: qdisc_is_running(), racy by design).
  template <class Verdicts>
  [[gnu::always_inline]] Verdict serialize_busy(bool contended, PacketList& batch,
                                                PacketList& to_free, Verdicts&& verdicts) noexcept {
    if (contended) busylock_.lock();
    this->root_.lock();
    const Verdict v = this->serialize(
        this->root_, batch, to_free,
        [&]() noexcept {
          if (contended) {  // we won RUNNING: compete for root_ with one sender at most
            busylock_.unlock();
            contended = false;
          }
        },
        std::forward<Verdicts>(verdicts));
    this->root_.unlock();
    if (contended) busylock_.unlock();
    return v;
  }

  void lock_stats(uint64_t& waits, uint64_t& wait_ns) const noexcept override {
    LockedQueue<Lock>::lock_stats(waits, wait_ns);
    waits += busylock_.waits();
    wait_ns += busylock_.wait_ns();
  }

  CountingLock<Lock> busylock_;  // q->busylock, on its own cache line
};

}  // namespace

std::unique_ptr<QueueBase> make_busylock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config) {
  return make_with_lock_kind<BusylockQueue>(device, std::move(qdisc), config);
}

}  // namespace txpath
