// SPDX-License-Identifier: MIT
// What one bench sender writes into its packets (see docs/bench.md, "Offered load and
// traffic"):
//   - generated frames (FrameTemplate): one flow, or with --flows N, N flows of its own told
//     apart by their UDP source port, sent round-robin. Sender t's flow f has source port
//     base + t * N + f (distinct over every sender) and is numbered as the sink's stream
//     t * N + f, its own sequence from 0 (packet i of the sender is flow i % N's number i / N),
//     so that the sink checks order and loss per flow: a flow-aware qdisc may reorder flows
//     against each other, never a flow's own packets. Each flow's packets carry the flow's
//     hash (frame_flow_hash(): the 5-tuple), as a socket caches its sk_txhash.
//   - a capture's frames (--source pcap:FILE): sender t of T replays frames t, t + T, t + 2T, ...
//     in that order, over and over, each with its flow hash; a sender beyond the capture's
//     frame count has none and sends nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "bench/pcap_source.hpp"
#include "bench/pacer.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"

namespace txpath::bench_detail {

class SenderTraffic {
 public:
  // Sender `sender`'s generated frames. flows == 1 keeps the seed experiment's frames: every
  // sender the same template (flow hash 0) unless `own_flow`, then source port base + sender and
  // its flow hash (a multi-queue run: the senders are told apart by the queue choice).
  static SenderTraffic generated(FrameSpec spec, uint32_t sender, uint32_t flows, bool own_flow);
  // Sender `sender` of `senders`' share of `capture` (which must outlive it).
  static SenderTraffic replayed(const Capture& capture, uint32_t sender, uint32_t senders);

  bool idle() const noexcept { return replay_ != nullptr && mine_.empty(); }
  std::size_t max_len() const noexcept;
  uint32_t flows() const noexcept { return static_cast<uint32_t>(templates_.size()); }

  // Writes the sender's packet number `i` into p (len; flow_hash). A buffer too small gets
  // len 0 (the bench sizes its buffers for max_len()).
  void write(Packet& p, uint64_t i) const noexcept {
    p.sent_stamp = 0;  // not sampled (Sender::timed stamps the sampled one)
    if (replay_ != nullptr) [[unlikely]] {
      const CaptureFrame& f = replay_->frames[mine_[i % mine_.size()]];
      const bool fits = f.len <= p.capacity;
      if (fits) std::memcpy(p.data, replay_->bytes.data() + f.offset, f.len);
      p.len = fits ? f.len : 0;
      p.flow_hash = f.flow_hash;
      return;
    }
    const uint64_t n = templates_.size();
    const uint64_t f = n == 1 ? 0 : i % n;
    p.len = static_cast<uint32_t>(
        templates_[f].write(p.buffer(), first_stream_ + static_cast<uint32_t>(f), n == 1 ? i : i / n));
    p.flow_hash = hashes_[f];
  }
  // The same frame into `out` (the kernel row's and tests' form); returns its length.
  std::size_t write(std::span<std::byte> out, uint64_t i) const noexcept;

  // A pacer replaying the sender's share at the capture's timing, `speed` times as fast
  // (speed > 0): frame j at its capture time / speed, the whole capture again every
  // (capture length + its mean gap) / speed. At most `max_burst` frames are due at once.
  Pacer replay_pacer(double speed, uint64_t max_burst) const;

 private:
  std::vector<FrameTemplate> templates_;  // generated: one per flow
  std::vector<uint32_t> hashes_;          // generated: each flow's hash (0: none)
  uint32_t first_stream_ = 0;             // generated: the sink's stream id of flow 0
  const Capture* replay_ = nullptr;       // replayed: the capture
  std::vector<uint32_t> mine_;            // replayed: this sender's frames, in order
};

}  // namespace txpath::bench_detail
