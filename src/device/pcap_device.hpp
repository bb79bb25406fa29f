// SPDX-License-Identifier: MIT
// `pcap:FILE`: every frame the driver loop transmits is appended to a classic pcap file, the
// nanosecond variant, which tcpdump/Wireshark read (tcpdump -r FILE).
//
// Origin: written through libpcap's savefile writer (pcap_dump(3PCAP)): a "dead" pcap_t
// (pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO)) and a
// pcap_dumper_t over a stdio stream, so the file is what tcpdump -w writes: the classic format of
// pcap-savefile(5), magic 0xa1b23c4d (nanosecond timestamps) in the host's byte order, version
// 2.4, thiszone 0, sigfigs 0, snaplen 65535, link type 1 (LINKTYPE_ETHERNET), then per frame a
// 16-byte record header (ts_sec, ts_nsec, incl_len, orig_len) and the frame bytes. The stdio
// stream is a glibc cookie stream (fopencookie(3)) whose write function hands every byte to the
// device's OutputFile, so libpcap formats the capture and OutputFile alone touches the file
// system (the atomic replacement and the symlink rule below are unchanged).
//
// Model (like `null`, with a file behind it):
//  * The capture is written through an OutputFile (core/file.hpp): a temporary file beside
//    FILE (".FILE.XXXXXX") holds the global header from construction on, and finish() (or the
//    destructor) renames it over FILE once everything is written and synced. FILE is therefore
//    either a complete capture or untouched (absent, or the previous complete capture); a
//    symlink FILE owned by another user in a sticky world-writable directory is refused. A
//    device, FIFO or pipe (pcap:/dev/stdout) is written in place instead, every write checked.
//    Construction failures throw DeviceError, one line naming the file (escaped):
//    "device 'pcap:PATH': create a temporary file beside it: No such file or directory" (PATH
//    escaped and cut as core/text.hpp does); write errors read "device 'pcap:PATH': write: ...".
//  * xmit() stamps the frame with CLOCK_REALTIME (clamped so that timestamps never go back when
//    the wall clock is stepped), hands it to pcap_dump(), which copies record header + frame
//    into the stream's buffer (preallocated at construction, kBufferBytes), and keeps the packet
//    on a pending list.
//  * The doorbell — a packet accepted with more == false, or a buffer too full for the next
//    largest record — flushes the stream (pcap_dump_flush()) to the file and completes every
//    pending packet at
//    once: free_packets() + `completed`. The file is the wire, so the doorbell is also the
//    completion; never busy, never stops, no BQL.
//  * A write error does not throw from xmit(): the packets of that batch (accepted, hence
//    counted as sent upstream) are counted in `tx_errors`, the error is kept (write_error()),
//    the temporary file is removed, and every later batch is counted in `tx_errors` too without
//    being written. finish() then throws it (FileError), and the destructor does not replace
//    FILE: a capture with a hole is never presented as complete.
//  * finish() (at a quiescent point) writes what is pending and commits, throwing FileError on
//    any failure; the destructor does the same for a device not finished or abandoned, but
//    swallows the error (FILE stays untouched). abandon() drops the capture: for callers that
//    only check the spec.
//
// Invariants: tx_packets == completed + pending (exact under tx_lock; in_flight() clamps the
// relaxed difference); every accepted packet is written exactly once, or counted in tx_errors;
// records appear in the file in xmit order; nothing is allocated after construction (but for
// the message of a failed write).
//
// Memory ordering: all state is guarded by tx_lock (xmit by the driver-loop owner; there is no
// completion side). The counters are SingleWriterCounter (relaxed reads for stats()).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/file.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"
#include "txpath/packet.hpp"

// libpcap's handles (pcap/pcap.h), declared here so that users of this header need not see it.
struct pcap;
struct pcap_dumper;

namespace txpath {

class PcapDevice final : public Device {
 public:
  static constexpr uint32_t kMagicNs = 0xa1b23c4d;   // nanosecond-resolution pcap (libpcap writes it)
  static constexpr uint32_t kSnaplen = 65535;
  static constexpr uint32_t kLinktypeEthernet = 1;
  static constexpr std::size_t kGlobalHeaderLen = 24;
  static constexpr std::size_t kRecordHeaderLen = 16;
  static constexpr std::size_t kBufferBytes = 256 * 1024;

  // Throws DeviceError (one line) if the file cannot be created or the header not written.
  explicit PcapDevice(const PcapConfig& config, uint32_t mtu = 1500);
  ~PcapDevice() override;

  std::string_view kind() const noexcept override { return "pcap"; }
  std::string describe() const override { return "pcap:" + path_; }
  XmitResult xmit(Packet* p, bool more) noexcept override;
  uint64_t in_flight() const noexcept override;

  // The first failed write, one line naming the file (empty if none). Read under tx_lock or at
  // a quiescent point.
  const std::string& write_error() const noexcept { return write_error_; }

  // Writes what is pending and makes the capture FILE (rename; close for a device or FIFO).
  // Throws FileError, one line naming the file, if a write failed earlier or the fsync, rename
  // or close fails now; FILE is then untouched. Call at a quiescent point (no xmit() running,
  // none after). A second call does nothing.
  void finish();
  // Drops the capture: FILE is left untouched (a regular file) and nothing more is written.
  void abandon() noexcept;
  const std::string& path() const noexcept { return path_; }

 private:
  struct PcapCloser {
    void operator()(pcap* p) const noexcept;
  };
  struct DumperCloser {
    void operator()(pcap_dumper* d) const noexcept;
  };

  // The doorbell: flushes the stream, completes the pending packets. Caller holds tx_lock.
  void flush() noexcept;
  // Appends to the file unless a write failed before; keeps the first error.
  void write_out(std::span<const std::byte> bytes) noexcept;
  // Keeps `error` (a FileError's text, or a cause) as the first write error, in device form.
  void keep_error(std::string_view error) noexcept;
  // The cookie stream's write function: every byte libpcap writes goes to write_out().
  static ssize_t stream_write(void* self, const char* data, std::size_t size) noexcept;
  // Closes the dumper (and its stream, flushing it) and the pcap_t.
  void close_dumper() noexcept;

  const std::string path_;
  std::unique_ptr<OutputFile> out_;   // null once finished or abandoned
  std::unique_ptr<std::byte[]> buf_;  // the stream's buffer, kBufferBytes, allocated once
  std::unique_ptr<pcap, PcapCloser> pcap_;                // the dead handle pcap_dump() needs
  std::unique_ptr<pcap_dumper, DumperCloser> dumper_;     // owns the stream; null once closed
  std::size_t used_ = 0;              // bytes handed to pcap_dump() since the last flush
  PacketList pending_;                // copied into buf_, not yet completed; guarded by tx_lock
  std::string write_error_;           // first write error; once set, nothing more is written
  uint64_t last_ts_ns_ = 0;           // last timestamp written (CLOCK_REALTIME ns), for the clamp
};

}  // namespace txpath
