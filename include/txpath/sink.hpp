// SPDX-License-Identifier: MIT
// The sink: receives frames on an interface (typically the testbed's peer end, inside its
// namespace) and counts txpath frames (see frame.hpp: magic, sender id, sequence number) per
// sender: received, lost (sequence gaps), duplicated, out of order.
//
// Counting rules, per sender id:
//   received      distinct sequence numbers seen
//   duplicated    frames whose sequence number was already seen
//   out_of_order  frames, not duplicates, whose sequence number is below the highest seen so far
//   lost          (highest sequence seen + 1) - received: the gaps. A gap is a frame the sender
//                 numbered but that never arrived: dropped by a qdisc on the way, lost on the
//                 link, or dropped by the receiving kernel. The sink cannot tell which; the bench
//                 compares `received` with what txpath reports sent.
// Frames that are not txpath frames are counted as `other` and otherwise ignored; outgoing
// frames (the interface's own transmissions) are not counted. The interface may be Ethernet or
// an L3 device without link header (TUN): frames are then parsed from the IPv4 header.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace txpath {

struct SinkConfig {
  std::string ifname;
  std::string netns;          // a named network namespace (ip netns); empty: the caller's own
  uint16_t absorb_port = 9000;  // also bind a UDP socket here (0: don't), so the receiving host
                                // answers no ICMP port-unreachable to the senders
};

struct SinkSenderCounts {
  uint32_t sender = 0;
  uint64_t received = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t out_of_order = 0;
  uint64_t max_seq = 0;       // highest sequence number seen
  uint64_t bytes = 0;         // frame bytes received (link header included where there is one)
};

struct SinkReport {
  uint64_t frames = 0;        // txpath frames, duplicates included
  uint64_t received = 0;      // sum over senders
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t out_of_order = 0;
  uint64_t other = 0;         // frames that are not txpath frames
  uint64_t socket_drops = 0;  // frames the kernel dropped because the sink's socket was full
  double seconds = 0;         // since start() or the last reset()
  std::vector<SinkSenderCounts> senders;  // by sender id, only senders seen
};

class Sink {
 public:
  // Opens the receive socket (inside `netns` if given). Throws DeviceError naming the interface
  // and the cause (no such interface, no such namespace, not permitted).
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
