// SPDX-License-Identifier: MIT
// The sink: receives frames on an interface (typically the testbed's peer end, inside its
// namespace) and counts txpath frames (see frame.hpp: magic, sender id, sequence number) per
// sender: received, lost (sequence gaps), duplicated, out of order, out of window.
//
// The frames come from the wire: whatever they claim, the sink's memory stays bounded (the
// receive ring, 32 MiB, plus the per-sender state below) and one frame moves each count by at
// most one, except `lost`, by less than kSinkMaxGap.
//   - Sender ids 0..kSinkMaxSenders-1 are counted (txpath's own senders are its threads, at most
//     4096); a txpath frame with a larger id is counted as `foreign` and otherwise ignored.
//   - Per sender, the sink remembers which of the last kSinkWindow sequence numbers (up to the
//     highest accepted one) it has seen: a bitmap of kSinkWindow bits, allocated on the sender's
//     first frame. Per-sender state is therefore O(1); all of it together is at most
//     kSinkMaxStateBytes (8.5 MiB), whatever arrives, and `state_bytes` reports it.
//
// Counting rules, per sender id (a frame's sequence number `seq`; `next` is one past the highest
// accepted sequence number, 0 before the first):
//   received      distinct sequence numbers accepted
//   duplicated    frames whose sequence number was already seen (inside the window)
//   out_of_order  accepted frames whose sequence number is below the highest accepted so far
//   out_of_window frames not accepted: seq < next - kSinkWindow (too late to tell a duplicate
//                 from a reordering: its number was counted lost when the window passed it),
//                 seq below where the last resync began, seq >= next + kSinkMaxGap (too far
//                 ahead to be believed from one frame), or seq >= kSinkMaxSeq. Honest traffic
//                 has none unless one sender's frames are reordered by kSinkWindow or more.
//   lost          sequence numbers from 0 to the highest accepted that were never accepted and
//                 not jumped over by a resync; a late frame inside the window fills its gap
//                 again. A gap is a frame the sender numbered but that never arrived: dropped by
//                 a qdisc on the way, lost on the link, or dropped by the receiving kernel. The
//                 sink cannot tell which; the bench compares `received` with what txpath
//                 reports sent (an out_of_window frame is not received: lost to the bench).
//   resyncs       times the window restarted ahead. A frame too far ahead is remembered; if the
//                 sender's next frame too far ahead lies above it by less than kSinkWindow, with
//                 no frame accepted between, the window restarts at the remembered one and both
//                 are accepted; the numbers jumped over are counted neither lost nor received.
//                 Honest traffic resyncs only when kSinkMaxGap consecutive frames of one sender
//                 vanished, or when the sink starts long after the sender.
// Per sender, frames = received + duplicated + out_of_window; for honest traffic (no resync)
// received + lost = highest + 1, as the sender numbered them from 0.
// Frames that are not txpath frames are counted as `other` and otherwise ignored; outgoing
// frames (the interface's own transmissions) are not counted. The interface may be Ethernet or
// an L3 device without link header (TUN): frames are then parsed from the IPv4 header.
// The sink trusts the sender id in a frame: a host that forges frames with a sender's id can
// disturb that sender's counts (never the sink's memory or the other senders).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace txpath {

inline constexpr uint32_t kSinkMaxSenders = 4096;          // sender ids 0..4095
inline constexpr uint64_t kSinkWindow = 16384;             // sequence numbers per sender's bitmap
inline constexpr uint64_t kSinkMaxGap = uint64_t{1} << 20;  // a frame further ahead: out_of_window
inline constexpr uint64_t kSinkMaxSeq = uint64_t{1} << 62;  // from here on: out_of_window
// Per-sender state of all senders together, bitmaps included (the bound `state_bytes` stays in).
inline constexpr std::size_t kSinkMaxStateBytes =
    kSinkMaxSenders * (std::size_t{128} + kSinkWindow / 8);

// The timeline the sink keeps besides its counts (net/sink_timeline.hpp): arrivals per sender in
// windows of window_ns (0: none) and each sender's first curve_points arrivals (0: none), for
// senders 0..kSinkTimelineSenders-1.
inline constexpr uint32_t kSinkTimelineSenders = 64;
inline constexpr uint32_t kSinkMaxWindows = 4096;
inline constexpr uint32_t kSinkMaxCurvePoints = 16384;
struct SinkTimelineConfig {
  uint64_t window_ns = 0;
  uint32_t curve_points = 0;  // at most kSinkMaxCurvePoints (more is cut to it)
};
struct SinkWindow {
  uint64_t bytes = 0;
  uint64_t frames = 0;
};
struct SinkArrival {
  uint64_t t_ns = 0;   // since the timeline's origin
  uint32_t bytes = 0;
};
struct SinkSenderTimeline {
  uint32_t sender = 0;
  uint64_t origin_ns = 0;            // the run's origin: the first frame's receive time
  std::vector<SinkWindow> windows;   // window i: [origin + i * window_ns, origin + (i+1) * window_ns)
  std::vector<SinkArrival> curve;    // the sender's first frames, in arrival order
  uint64_t late = 0;                 // frames past the last window (kSinkMaxWindows)
};

struct SinkConfig {
  std::string ifname;
  std::string netns;          // a named network namespace (ip netns); empty: the caller's own
  uint16_t absorb_port = 9000;  // also bind a UDP socket here (0: don't), so the receiving host
                                // answers no ICMP port-unreachable to the senders
  SinkTimelineConfig timeline{};  // none by default
};

struct SinkSenderCounts {
  uint32_t sender = 0;
  uint64_t received = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t out_of_order = 0;
  uint64_t out_of_window = 0;
  uint64_t resyncs = 0;
  uint64_t max_seq = 0;       // highest sequence number accepted (0 if none)
  uint64_t bytes = 0;         // frame bytes received (link header included where there is one)
};

struct SinkReport {
  uint64_t frames = 0;        // txpath frames of counted senders: received+duplicated+out_of_window
  uint64_t received = 0;      // sum over senders
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t out_of_order = 0;
  uint64_t out_of_window = 0;
  uint64_t resyncs = 0;
  uint64_t foreign = 0;       // txpath frames with a sender id >= kSinkMaxSenders
  uint64_t other = 0;         // frames that are not txpath frames
  uint64_t socket_drops = 0;  // frames the kernel dropped because the sink's socket was full
  uint64_t state_bytes = 0;   // memory held for per-sender state (<= kSinkMaxStateBytes)
  double seconds = 0;         // since start() or the last reset()
  std::vector<SinkSenderCounts> senders;  // by sender id, only senders seen
  uint64_t window_ns = 0;                       // SinkConfig::timeline's
  std::vector<SinkSenderTimeline> timelines;    // by sender id, senders seen (timeline enabled)
};

class Sink {
 public:
  // Opens the receive socket (inside `netns` if given). Throws DeviceError naming the interface
  // (quoted, see text.hpp) and the cause (no such interface, no such namespace, not permitted).
  explicit Sink(const SinkConfig& config);
  ~Sink();  // stops the receive thread
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void start();                // starts the receive thread
  SinkReport report() const;   // a consistent snapshot, any time
  void reset();                // zeroes every count (between bench rows)
  // Waits until `received` (sum over senders, distinct) reaches `frames`, or no txpath frame has
  // arrived for `quiet`, or `timeout` passes. Returns true if `frames` were reached.
  bool wait_for(uint64_t frames, std::chrono::milliseconds quiet,
                std::chrono::milliseconds timeout) const;
  uint64_t cpu_ns() const;     // CPU time of the receive thread so far
  SinkReport stop();           // stops the receive thread; the final report

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace txpath
