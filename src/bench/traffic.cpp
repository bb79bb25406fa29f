// SPDX-License-Identifier: MIT
// A bench sender's frames: see traffic.hpp.
#include "bench/traffic.hpp"

#include <algorithm>

#include "txpath/queue_select.hpp"

namespace txpath::bench_detail {

SenderTraffic SenderTraffic::generated(FrameSpec spec, uint32_t sender, uint32_t flows, bool own_flow) {
  SenderTraffic t;
  const uint16_t base = spec.src_port;
  const uint32_t n = std::max<uint32_t>(1, flows);
  t.first_stream_ = sender * n;
  for (uint32_t f = 0; f < n; ++f) {
    const bool distinct = n > 1 || own_flow;
    if (distinct) spec.src_port = static_cast<uint16_t>(base + sender * n + f);
    t.templates_.emplace_back(spec);
    std::vector<std::byte> frame(t.templates_.back().size());
    t.templates_.back().write(frame, t.first_stream_ + f, 0);
    t.hashes_.push_back(distinct ? frame_flow_hash(frame).value_or(0) : 0);
  }
  return t;
}

SenderTraffic SenderTraffic::replayed(const Capture& capture, uint32_t sender, uint32_t senders) {
  SenderTraffic t;
  t.replay_ = &capture;
  for (std::size_t i = sender; i < capture.frames.size(); i += std::max<uint32_t>(1, senders))
    t.mine_.push_back(static_cast<uint32_t>(i));
  return t;
}

std::size_t SenderTraffic::max_len() const noexcept {
  if (replay_ != nullptr) return replay_->max_len;
  std::size_t len = 0;
  for (const FrameTemplate& tmpl : templates_) len = std::max(len, tmpl.size());
  return len;
}

std::size_t SenderTraffic::write(std::span<std::byte> out, uint64_t i) const noexcept {
  Packet p;
  p.data = out.data();
  p.capacity = static_cast<uint32_t>(out.size());
  write(p, i);
  return p.len;
}

Pacer SenderTraffic::replay_pacer(double speed, uint64_t max_burst) const {
  const Capture& cap = *replay_;
  const std::size_t k = cap.frames.size();
  // The gap before the capture starts again: its mean gap (1 us when it has no length).
  const double gap = k > 1 && cap.span_ns > 0 ? static_cast<double>(cap.span_ns) / static_cast<double>(k - 1) : 1000.0;
  const double period = (static_cast<double>(cap.span_ns) + gap) / speed;
  std::vector<double> offsets;
  for (const uint32_t j : mine_) offsets.push_back(static_cast<double>(cap.frames[j].time_ns) / speed);
  return Pacer(period, std::move(offsets), max_burst);
}

}  // namespace txpath::bench_detail
