// SPDX-License-Identifier: MIT
#include "device/pcap_device.hpp"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/text.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

// What OutputFile calls the capture in its messages: "pcap capture \"PATH\": write: ...".
constexpr std::string_view kWhat = "pcap capture";

// An OutputFile message in the device registry's form, "device 'pcap:PATH': CAUSE" (the path
// escaped and cut by escape_user_text): one line, naming the file once.
std::string device_message(const std::string& path, std::string_view file_error) {
  const std::string prefix = std::string(kWhat) + " " + quoted(path) + ": ";
  if (file_error.starts_with(prefix)) file_error.remove_prefix(prefix.size());
  return "device 'pcap:" + escape_user_text(path) + "': " + std::string(file_error);
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
  std::byte hdr[kGlobalHeaderLen];
  std::byte* o = hdr;
  o = put<uint32_t>(o, kMagicNs);
  o = put<uint16_t>(o, 2);  // version_major
  o = put<uint16_t>(o, 4);  // version_minor
  o = put<int32_t>(o, 0);   // thiszone: timestamps are UTC
  o = put<uint32_t>(o, 0);  // sigfigs
  o = put<uint32_t>(o, kSnaplen);
  put<uint32_t>(o, kLinktypeEthernet);
  try {
    out_ = std::make_unique<OutputFile>(path_, kWhat);
    out_->write(std::span<const std::byte>(hdr, sizeof hdr));
  } catch (const FileError& e) {
    throw DeviceError(device_message(path_, e.what()));
  }
  write_error_.reserve(1024);  // a failed write's message, without allocating in flush()
}

PcapDevice::~PcapDevice() {
  // Nobody else can hold tx_lock now. Write whatever is still pending and commit, unless a
  // write failed: then the temporary file goes and FILE stays as it was.
  if (!out_) return;
  flush();
  if (!write_error_.empty()) return;
  try {
    out_->commit();
  } catch (const FileError&) {
    // nowhere to report it from a destructor: FILE is untouched (call finish() to hear of it)
  }
}

void PcapDevice::finish() {
  if (!out_) return;
  flush();
  const std::unique_ptr<OutputFile> out = std::move(out_);  // its destructor drops the temp file
  if (!write_error_.empty()) throw FileError(write_error_);
  out->commit();
}

void PcapDevice::abandon() noexcept { out_.reset(); }

void PcapDevice::write_out(std::span<const std::byte> bytes) noexcept {
  if (!write_error_.empty()) return;
  try {
    if (!out_) throw FileError("already finished");
    out_->write(bytes);
  } catch (const std::exception& e) {  // FileError; bad_alloc while building its message
    try {
      const std::string what = device_message(path_, e.what());
      write_error_.assign(what, 0, std::min(what.size(), write_error_.capacity()));
    } catch (const std::exception&) {
      write_error_.assign("device 'pcap:': write failed");  // fits the reserved capacity
    }
  }
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
  write_out(std::span<const std::byte>(buf_.get(), used_));
  // Once a write failed (now or before), this batch did not reach the file intact.
  if (!write_error_.empty()) tx_errors_.add(n);
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
