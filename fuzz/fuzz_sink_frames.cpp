// SPDX-License-Identifier: MIT
// libFuzzer target: what the sink does with bytes from the wire. The input is a sequence of
// records: a byte (bits 0-6: the record's length; bit 7: the record is an IPv4 packet without
// link header, as on a TUN device), then that many bytes. Each record goes through parse_frame()/parse_ipv4_packet()
// (frame.hpp) and, if it parses, into a SinkTally; so does the record's first 12 bytes read as a
// (sender, seq) pair, to reach every counting rule without valid checksums. After every record
// the report must keep the sink's identities and its memory bound (sink.hpp). Each Ethernet
// record also goes through frame_flow_hash() (queue_select.hpp): never 0, never a read past it.
// Run: scripts/test-all.sh fuzz  (60 s), or ./build-fuzz/fuzz_sink_frames fuzz/corpus/sink_frames
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "net/sink.hpp"
#include "net/sink_tally.hpp"
#include "txpath/frame.hpp"
#include "txpath/queue_select.hpp"

namespace {

void check(const txpath::SinkReport& r) {
  if (r.frames != r.received + r.duplicated + r.out_of_window) std::abort();
  if (r.state_bytes > txpath::kSinkMaxStateBytes) std::abort();
  for (const auto& s : r.senders) {
    if (s.sender >= txpath::kSinkMaxSenders || s.out_of_order > s.received) std::abort();
    if (s.received > 0 && s.lost > s.max_seq) std::abort();  // lost never wraps
  }
}

uint64_t load_be(const uint8_t* p, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  txpath::net::SinkTally tally;
  std::size_t at = 0;
  while (at < size) {
    const bool ipv4_only = (data[at] & 0x80) != 0;
    const std::size_t len = data[at] & 0x7f;  // 0..127 bytes: frames with 16..85 payload bytes
    ++at;
    const std::size_t n = std::min(len, size - at);
    const std::span<const std::byte> record(reinterpret_cast<const std::byte*>(data + at), n);
    const auto info = ipv4_only ? txpath::parse_ipv4_packet(record) : txpath::parse_frame(record);
    if (!ipv4_only) {
      if (const auto hash = txpath::frame_flow_hash(record); hash && *hash == 0) std::abort();
    }
    if (info) tally.count(info->sender, info->seq, n);
    else tally.count_other();
    if (n >= 12) {
      const auto sender =
          static_cast<uint32_t>(load_be(data + at, 4) % (txpath::kSinkMaxSenders + 8));
      tally.count(sender, load_be(data + at + 4, 8), n);
    }
    at += n;
    check(tally.report());
  }
  return 0;
}
