// SPDX-License-Identifier: MIT
// The sink's timeline (sink.hpp, SinkConfig::timeline): when each sender's frames arrived, for a
// comparison of two runs' departure curves (scripts/qdisc_conform.py, docs/conformance.md).
//   - windows: frame bytes and frames per sender in consecutive windows of `window_ns`, counted
//     from the run's origin (the arrival time of the first txpath frame of a counted sender after
//     start() or reset(), whoever sent it), so that every sender's windows line up;
//   - curve: the arrival time (from the origin) and length of each sender's first `curve_points`
//     frames (a shaper's burst, measured to the frame).
// Times are the kernel's receive timestamps of the frames (tpacket3_hdr), not the receive
// thread's clock: a thread that runs late does not move a frame into a later window.
// Bounded whatever arrives: senders 0..kSinkTimelineSenders-1 only; at most kSinkMaxWindows
// windows (a frame past the last is counted in `late`, a frame timed before the origin, as a
// reordered timestamp could be, in window 0) and kSinkMaxCurvePoints points per sender, each
// allocated on the sender's first frame: at most 64 * (4096 + 16384) * 16 bytes, 20 MiB.
// Not thread-safe: the sink calls it under its mutex, beside SinkTally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/sink.hpp"

namespace txpath::net {

class SinkTimeline {
 public:
  explicit SinkTimeline(SinkTimelineConfig config);

  bool enabled() const noexcept { return config_.window_ns != 0 || config_.curve_points != 0; }
  // A txpath frame of `bytes` bytes from `sender`, received at `t_ns` (any clock, the same for
  // every frame of a run).
  void count(uint32_t sender, uint64_t t_ns, std::size_t bytes);
  // The senders seen, by id; origin_ns is the first frame's time (0 before any).
  std::vector<SinkSenderTimeline> report() const;
  void clear();

 private:
  struct Sender {
    bool seen = false;
    std::vector<SinkWindow> windows;
    std::vector<SinkArrival> curve;
    uint64_t late = 0;
  };
  SinkTimelineConfig config_;
  std::vector<Sender> senders_;  // kSinkTimelineSenders entries
  bool have_origin_ = false;
  uint64_t origin_ns_ = 0;
};

}  // namespace txpath::net
