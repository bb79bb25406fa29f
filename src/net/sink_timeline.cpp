// SPDX-License-Identifier: MIT
// See sink_timeline.hpp.
#include "net/sink_timeline.hpp"

#include <algorithm>

namespace txpath::net {

SinkTimeline::SinkTimeline(SinkTimelineConfig config) : config_(config) {
  config_.curve_points = std::min(config_.curve_points, kSinkMaxCurvePoints);
  if (enabled()) senders_.resize(kSinkTimelineSenders);
}

void SinkTimeline::count(uint32_t sender, uint64_t t_ns, std::size_t bytes) {
  if (!enabled() || sender >= kSinkTimelineSenders) return;
  if (!have_origin_) {
    have_origin_ = true;
    origin_ns_ = t_ns;
  }
  const uint64_t since = t_ns > origin_ns_ ? t_ns - origin_ns_ : 0;
  Sender& s = senders_[sender];
  if (!s.seen) {
    s.seen = true;
    if (config_.window_ns != 0) s.windows.reserve(kSinkMaxWindows);
    s.curve.reserve(config_.curve_points);
  }
  if (config_.window_ns != 0) {
    const uint64_t index = since / config_.window_ns;
    if (index < kSinkMaxWindows) {
      if (s.windows.size() <= index) s.windows.resize(index + 1);  // within the reserve
      s.windows[index].bytes += bytes;
      ++s.windows[index].frames;
    } else {
      ++s.late;
    }
  }
  if (s.curve.size() < config_.curve_points)
    s.curve.push_back({since, static_cast<uint32_t>(std::min<std::size_t>(bytes, UINT32_MAX))});
}

std::vector<SinkSenderTimeline> SinkTimeline::report() const {
  std::vector<SinkSenderTimeline> out;
  for (uint32_t id = 0; id < senders_.size(); ++id) {
    const Sender& s = senders_[id];
    if (!s.seen) continue;
    out.push_back({.sender = id, .origin_ns = origin_ns_, .windows = s.windows, .curve = s.curve,
                   .late = s.late});
  }
  return out;
}

void SinkTimeline::clear() {
  for (Sender& s : senders_) s = Sender{};
  have_origin_ = false;
  origin_ns_ = 0;
}

}  // namespace txpath::net
