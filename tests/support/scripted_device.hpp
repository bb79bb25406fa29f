// SPDX-License-Identifier: MIT
// A device for driver-loop tests: records every accepted frame (sender, seq, more) and can be
// told to refuse a given xmit call or to stop/wake its queue. Accepted packets complete at the
// doorbell, like `null`.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"

namespace txpath::test {

class ScriptedDevice : public Device {
 public:
  struct Record {
    uint32_t sender;
    uint64_t seq;
    bool more;
  };

  std::string_view kind() const noexcept override { return "scripted"; }
  std::string describe() const override { return "scripted"; }

  XmitResult xmit(Packet* p, bool more) noexcept override {
    const uint64_t call = calls_++;
    if (busy_at_ && *busy_at_ == call) {
      busy_.add(1);
      flush();
      if (stop_on_busy_) stop_queue();  // a full ring: the driver stops its queue
      return XmitResult::busy;
    }
    const auto info = parse_frame(p->frame());
    log_.push_back({info ? info->sender : ~0u, info ? info->seq : ~0ull, more});
    tx_packets_.add(1);
    tx_bytes_.add(p->len);
    pending_.push_back(p);
    if (!more) flush();
    return XmitResult::ok;
  }

  // Test controls (take the tx lock, as a driver's completion path would).
  // `stop`: the refusal also stops the queue (until wake()), so the refused packet stays on
  // the driver loop's requeue list.
  void refuse_call(uint64_t call_index, bool stop = false) {
    std::lock_guard lock(tx_lock());
    busy_at_ = call_index;
    stop_on_busy_ = stop;
  }
  void stop() {
    std::lock_guard lock(tx_lock());
    stop_queue();
  }
  void wake() {
    std::lock_guard lock(tx_lock());
    wake_queue();
  }
  std::vector<Record> log() {
    std::lock_guard lock(tx_lock());
    return log_;
  }
  uint64_t calls() {
    std::lock_guard lock(tx_lock());
    return calls_;
  }

 private:
  void flush() { ring_and_complete(pending_); }

  uint64_t calls_ = 0;
  std::optional<uint64_t> busy_at_;
  bool stop_on_busy_ = false;
  std::vector<Record> log_;
  PacketList pending_;
};

// Builds frames stamped with (sender, seq) from a pool.
class FrameFactory {
 public:
  explicit FrameFactory(Pool& pool, std::size_t payload = 32) : pool_(pool) {
    FrameSpec spec;
    spec.payload = payload;
    tmpl_ = FrameTemplate(spec);
  }
  Packet* make(uint32_t sender, uint64_t seq, uint32_t priority = 0) {
    Packet* p = pool_.get();
    if (!p) return nullptr;
    p->len = static_cast<uint32_t>(tmpl_.write(p->buffer(), sender, seq));
    p->priority = priority;
    return p;
  }

 private:
  Pool& pool_;
  FrameTemplate tmpl_;
};

}  // namespace txpath::test
