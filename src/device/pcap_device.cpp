// SPDX-License-Identifier: MIT
#include "device/pcap_device.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

// The spec as it appears in an error message: control characters replaced, so that the message
// stays one line whatever the path holds.
std::string printable_spec(const std::string& path) {
  std::string out = "pcap:" + path;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// write(2) all of [data, data + len): loops over partial writes and EINTR. 0 or an errno.
int write_all(int fd, const std::byte* data, std::size_t len) noexcept {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // a regular file never does this; do not spin on it
    data += n;
    len -= static_cast<std::size_t>(n);
  }
  return 0;
}

template <class T>
std::byte* put(std::byte* out, T v) noexcept {
  std::memcpy(out, &v, sizeof v);  // host byte order, as libpcap writes it
  return out + sizeof v;
}

}  // namespace

PcapDevice::PcapDevice(const PcapConfig& config, uint32_t mtu)
    : Device(mtu), path_(config.path), buf_(std::make_unique<std::byte[]>(kBufferBytes)) {
  static_assert(kBufferBytes >= kRecordHeaderLen + kSnaplen, "one full record must fit");
  if (path_.empty()) {
    throw DeviceError("device 'pcap:': empty file name");
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw DeviceError("device '" + printable_spec(path_) + "': cannot create: " +
                      std::strerror(errno));
  }
  std::byte hdr[kGlobalHeaderLen];
  std::byte* o = hdr;
  o = put<uint32_t>(o, kMagicNs);
  o = put<uint16_t>(o, 2);  // version_major
  o = put<uint16_t>(o, 4);  // version_minor
  o = put<int32_t>(o, 0);   // thiszone: timestamps are UTC
  o = put<uint32_t>(o, 0);  // sigfigs
  o = put<uint32_t>(o, kSnaplen);
  put<uint32_t>(o, kLinktypeEthernet);
  if (const int err = write_all(fd_, hdr, sizeof hdr); err != 0) {
    ::close(fd_);
    throw DeviceError("device '" + printable_spec(path_) + "': cannot write: " +
                      std::strerror(err));
  }
}

PcapDevice::~PcapDevice() {
  // Nobody else can hold tx_lock now. Announce and write whatever is still pending.
  flush();
  ::close(fd_);
}

XmitResult PcapDevice::xmit(Packet* p, bool more) noexcept {
  const uint32_t incl = std::min(p->len, kSnaplen);
  // Make room first: a full buffer is a doorbell for what it holds.
  if (kBufferBytes - used_ < kRecordHeaderLen + incl) flush();

  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t t = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
               static_cast<uint64_t>(ts.tv_nsec);
  // A stepped wall clock must not make the capture go back in time.
  t = std::max(t, last_ts_ns_);
  last_ts_ns_ = t;

  std::byte* o = buf_.get() + used_;
  o = put<uint32_t>(o, static_cast<uint32_t>(t / 1'000'000'000ull));
  o = put<uint32_t>(o, static_cast<uint32_t>(t % 1'000'000'000ull));
  o = put<uint32_t>(o, incl);
  o = put<uint32_t>(o, p->len);
  std::memcpy(o, p->data, incl);
  used_ += kRecordHeaderLen + incl;

  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  pending_.push_back(p);
  if (!more) flush();
  return XmitResult::ok;
}

void PcapDevice::flush() noexcept {
  if (pending_.empty()) return;
  doorbells_.add(1);
  const uint64_t n = pending_.size();
  if (write_errno_ == 0) write_errno_ = write_all(fd_, buf_.get(), used_);
  // Once a write failed (now or before), this batch did not reach the file intact.
  if (write_errno_ != 0) tx_errors_.add(n);
  used_ = 0;
  free_packets(std::move(pending_));
  completed_.add(n);
}

uint64_t PcapDevice::in_flight() const noexcept {
  // Two relaxed counter reads (written under tx_lock): a hint that may mix generations, so
  // clamp rather than underflow. Exact at quiescent points.
  const uint64_t done = completed_.get();
  const uint64_t sent = tx_packets_.get();
  return sent > done ? sent - done : 0;
}

std::unique_ptr<Device> make_pcap_device(const PcapConfig& config) {
  return std::make_unique<PcapDevice>(config);
}

}  // namespace txpath
