// SPDX-License-Identifier: MIT
// --source pcap:FILE: the frames of a capture file, loaded once, for the bench's senders to
// replay through the TX path (see docs/bench.md, "Offered load and traffic").
//
// Read through libpcap (pcap_open_offline(3PCAP): pcap_fopen_offline_with_tstamp_precision() at
// nanosecond precision, then pcap_next_ex()), so a file is read as tcpdump -r reads it: classic
// pcap (pcap-savefile(5)) with micro- or nanosecond time stamps in either byte order, and pcapng.
// The link type must be Ethernet (DLT_EN10MB). Refused, each with one line naming the file: a
// file shorter than a classic header (24 bytes); a file libpcap does not read (another magic,
// version, a damaged pcapng block: libpcap's own words, escaped); another link type; a record
// cut short by the end of the file; a frame the capture cut (captured length below the original:
// replaying it would send a different frame); a frame shorter than an Ethernet header or longer
// than the device takes; a sub-second field out of range; no frame at all; more than
// kMaxReplayFrames frames or kMaxReplayBytes frame bytes (memory stays bounded whatever the file
// says: a file larger than those caps allow is refused before it is read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace txpath::bench_detail {

inline constexpr std::size_t kMaxReplayFrames = std::size_t{1} << 20;   // frames loaded, at most
inline constexpr std::size_t kMaxReplayBytes = std::size_t{64} << 20;   // their bytes, at most

struct CaptureFrame {
  std::size_t offset = 0;  // into Capture::bytes
  uint32_t len = 0;
  uint32_t flow_hash = 0;  // frame_flow_hash() of the frame, 0 if it has none
  uint64_t time_ns = 0;    // after the first frame's time stamp; never below the previous
                           // frame's (a time stamp that went back counts as the previous one)
};

struct Capture {
  std::vector<std::byte> bytes;       // every frame, back to back
  std::vector<CaptureFrame> frames;   // in capture order
  uint64_t span_ns = 0;               // the last frame's time_ns
  std::size_t max_len = 0;            // the longest frame

  std::span<const std::byte> frame(std::size_t i) const noexcept {
    return {bytes.data() + frames[i].offset, frames[i].len};
  }
};

// Parses a whole capture held in memory. `name` names it in errors (quoted); frames longer than
// `max_frame_len` are refused. Throws ConfigError (one line) for anything the header comment
// refuses.
Capture parse_pcap(std::span<const std::byte> file, std::size_t max_frame_len, std::string_view name);

// Reads `path` (a regular file of at most the size the caps allow) and parses it. Throws
// ConfigError naming the file for a file that cannot be read, too large a file, or a bad capture.
Capture load_pcap(const std::string& path, std::size_t max_frame_len);

// A sealed in-memory copy (memfd) of the capture file `path`, read as load_pcap() reads it (the
// same refusals for a file that cannot be read, is not a regular file or is too large): a file
// descriptor of 10 or above, close-on-exec, that the caller owns. A bench reads its capture
// once, here, and every round (each in its own process) replays these bytes: a file replaced
// or rewritten between rounds does not change what the rounds send, nor fail them.
int snapshot_pcap(const std::string& path);

// True if `fd` is open on such a snapshot (a regular file whose contents are sealed).
bool is_pcap_snapshot(int fd) noexcept;

// load_pcap() of a snapshot (read from its start); `name` (the file's) names it in errors.
Capture load_pcap_snapshot(int fd, std::size_t max_frame_len, std::string_view name);

}  // namespace txpath::bench_detail
