// SPDX-License-Identifier: MIT
// The sink's accounting (sink.hpp, "Counting rules"), apart from its socket: the receive thread
// hands every parsed txpath frame to SinkTally::count(). Private to src/net; the tests drive it
// directly with any sequence of frames, hostile ones included.
//
// Origin: txpath issue 12 (item 8: per-sender state grew with the highest sequence number seen).
// Invariants, per sender:
//   - `seen` holds kSinkWindow bits, a ring indexed by seq % kSinkWindow, for the sequence
//     numbers [max(next - kSinkWindow, floor), next); bits for numbers >= next are zero, so
//     moving `next` forward clears the bits it passes before setting any, and a resync clears
//     them all;
//   - every sequence number is accepted at most once (the window only moves forward), so
//     received <= next - skipped and lost = next - skipped - received never wraps;
//   - frames = received + duplicated + out_of_window.
// Memory: the sender table is allocated up front (kSinkMaxSenders entries of at most 128 bytes);
// a sender's bitmap on its first frame. Nothing else is allocated while counting.
// Not thread-safe: the sink calls it under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "net/sink.hpp"

namespace txpath::net {

class SinkTally {
 public:
  SinkTally();

  // One txpath frame of `bytes` bytes from `sender` numbered `seq`.
  void count(uint32_t sender, uint64_t seq, std::size_t bytes);
  void count_other() { ++other_; }

  // frames, received, lost, duplicated, out_of_order, out_of_window, resyncs, foreign, other,
  // state_bytes and the senders seen; seconds and socket_drops are left 0 (the sink's business).
  SinkReport report() const;
  uint64_t received() const { return received_; }  // sum over senders
  uint64_t frames() const { return frames_; }
  std::size_t state_bytes() const;
  void clear();  // zeroes every count and frees the bitmaps

 private:
  struct Sender {
    std::unique_ptr<uint64_t[]> seen;  // kSinkWindow bits; null until the sender's first frame
    uint64_t next = 0;     // one past the highest accepted sequence number; 0: none yet
    uint64_t skipped = 0;  // sequence numbers jumped over by resyncs (not lost)
    uint64_t floor = 0;    // the lowest acceptable sequence number: where the last resync began
    uint64_t probe = 0;    // the last frame too far ahead, while `probing`
    bool probing = false;
    uint64_t frames = 0, received = 0, duplicated = 0, out_of_order = 0, out_of_window = 0;
    uint64_t resyncs = 0, bytes = 0;
  };

  void accept(Sender& s, uint64_t seq);
  void ahead_of_window(Sender& s, uint64_t seq);

  std::vector<Sender> senders_;  // by id, kSinkMaxSenders entries
  std::size_t bitmaps_ = 0;      // bitmaps allocated
  uint64_t frames_ = 0, received_ = 0, foreign_ = 0, other_ = 0;
};

}  // namespace txpath::net
