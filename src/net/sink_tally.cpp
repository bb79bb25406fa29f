// SPDX-License-Identifier: MIT
// See sink_tally.hpp.
#include "net/sink_tally.hpp"

#include <algorithm>

namespace txpath::net {

namespace {

constexpr uint64_t kWords = kSinkWindow / 64;
static_assert(kSinkWindow % 64 == 0, "the ring wraps at a word boundary");
static_assert(kSinkWindow <= kSinkMaxGap, "a resync's second frame is always accepted");

// Clears the bits of sequence numbers [from, to) in a ring of kSinkWindow bits, a word at a time
// (numbers that share a word are consecutive, as the ring wraps at a word boundary).
void clear_range(uint64_t* bits, uint64_t from, uint64_t to) {
  if (to - from >= kSinkWindow) {
    std::fill_n(bits, kWords, uint64_t{0});
    return;
  }
  while (from < to) {
    const uint64_t index = from % kSinkWindow;
    const uint64_t bit = index % 64;
    const uint64_t n = std::min<uint64_t>(64 - bit, to - from);
    const uint64_t mask = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1) << bit;
    bits[index / 64] &= ~mask;
    from += n;
  }
}

bool test_and_set(uint64_t* bits, uint64_t seq) {
  const uint64_t index = seq % kSinkWindow;
  uint64_t& word = bits[index / 64];
  const uint64_t mask = uint64_t{1} << (index % 64);
  const bool was = (word & mask) != 0;
  word |= mask;
  return was;
}

}  // namespace

SinkTally::SinkTally() : senders_(kSinkMaxSenders) {
  static_assert(sizeof(Sender) <= 128, "kSinkMaxStateBytes counts 128 bytes per sender");
}

void SinkTally::count(uint32_t sender, uint64_t seq, std::size_t bytes) {
  if (sender >= kSinkMaxSenders) {
    ++foreign_;
    return;
  }
  Sender& s = senders_[sender];
  if (!s.seen) {
    s.seen = std::make_unique<uint64_t[]>(kWords);  // zeroed
    ++bitmaps_;
  }
  ++frames_;
  ++s.frames;
  s.bytes += bytes;
  if (seq >= kSinkMaxSeq) {
    ++s.out_of_window;
  } else if (seq >= s.next) {
    if (seq - s.next < kSinkMaxGap) accept(s, seq);
    else ahead_of_window(s, seq);
  } else if (s.next - seq > kSinkWindow || seq < s.floor) {
    ++s.out_of_window;  // behind the window: counted lost (or skipped) when the window passed it
  } else if (test_and_set(s.seen.get(), seq)) {
    ++s.duplicated;
  } else {
    ++s.received;
    ++received_;
    ++s.out_of_order;
  }
}

// seq >= s.next and less than kSinkMaxGap beyond it: the new highest.
void SinkTally::accept(Sender& s, uint64_t seq) {
  clear_range(s.seen.get(), s.next, seq + 1);
  test_and_set(s.seen.get(), seq);
  s.next = seq + 1;
  s.probing = false;
  ++s.received;
  ++received_;
}

// seq >= s.next + kSinkMaxGap: one such frame is out of window; a second one just above it
// (nothing accepted between) moves the window there without counting the jump as lost.
void SinkTally::ahead_of_window(Sender& s, uint64_t seq) {
  if (s.probing && seq > s.probe && seq - s.probe < kSinkWindow) {
    std::fill_n(s.seen.get(), kWords, uint64_t{0});
    s.skipped += s.probe - s.next;
    s.next = s.floor = s.probe;
    --s.out_of_window;  // the probe frame is accepted after all
    ++s.resyncs;
    accept(s, s.probe);
    accept(s, seq);
    return;
  }
  s.probe = seq;
  s.probing = true;
  ++s.out_of_window;
}

SinkReport SinkTally::report() const {
  SinkReport r;
  r.frames = frames_;
  r.foreign = foreign_;
  r.other = other_;
  r.state_bytes = state_bytes();
  for (std::size_t id = 0; id < senders_.size(); ++id) {
    const Sender& s = senders_[id];
    if (s.frames == 0) continue;
    SinkSenderCounts c;
    c.sender = static_cast<uint32_t>(id);
    c.received = s.received;
    c.lost = s.next - s.skipped - s.received;
    c.duplicated = s.duplicated;
    c.out_of_order = s.out_of_order;
    c.out_of_window = s.out_of_window;
    c.resyncs = s.resyncs;
    c.max_seq = s.next == 0 ? 0 : s.next - 1;
    c.bytes = s.bytes;
    r.received += c.received;
    r.lost += c.lost;
    r.duplicated += c.duplicated;
    r.out_of_order += c.out_of_order;
    r.out_of_window += c.out_of_window;
    r.resyncs += c.resyncs;
    r.senders.push_back(c);
  }
  return r;
}

std::size_t SinkTally::state_bytes() const {
  return senders_.capacity() * sizeof(Sender) + bitmaps_ * (kSinkWindow / 8);
}

void SinkTally::clear() {
  for (Sender& s : senders_) s = Sender{};
  bitmaps_ = 0;
  frames_ = received_ = foreign_ = other_ = 0;
}

}  // namespace txpath::net
