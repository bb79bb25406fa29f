// SPDX-License-Identifier: MIT
#include "device/pcap_device.hpp"

#include <pcap/pcap.h>
#include <stdio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace

void PcapDevice::PcapCloser::operator()(pcap* p) const noexcept { pcap_close(p); }
void PcapDevice::DumperCloser::operator()(pcap_dumper* d) const noexcept { pcap_dump_close(d); }

PcapDevice::PcapDevice(const PcapConfig& config, uint32_t mtu)
    : Device(mtu), path_(config.path), buf_(std::make_unique<std::byte[]>(kBufferBytes)) {
  static_assert(kBufferBytes >= kRecordHeaderLen + kSnaplen, "one full record must fit");
  if (path_.empty()) {
    throw DeviceError("device 'pcap:': empty file name");
  }
  write_error_.reserve(1024);  // a failed write's message, without allocating in flush()
  try {
    out_ = std::make_unique<OutputFile>(path_, kWhat);
  } catch (const FileError& e) {
    throw DeviceError(device_message(path_, e.what()));
  }
  pcap_.reset(pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(kSnaplen),
                                                   PCAP_TSTAMP_PRECISION_NANO));
  if (!pcap_) throw DeviceError(device_message(path_, "pcap_open_dead: out of memory"));
  const cookie_io_functions_t io{.read = nullptr, .write = &PcapDevice::stream_write,
                                 .seek = nullptr, .close = nullptr};
  FILE* stream = fopencookie(this, "w", io);
  if (!stream) throw DeviceError(device_message(path_, std::strerror(errno)));
  // The whole buffer is ours: pcap_dump() never makes stdio allocate or write on its own.
  setvbuf(stream, reinterpret_cast<char*>(buf_.get()), _IOFBF, kBufferBytes);
  dumper_.reset(pcap_dump_fopen(pcap_.get(), stream));  // writes the file header
  if (!dumper_) {
    const std::string why = pcap_geterr(pcap_.get());
    fclose(stream);
    throw DeviceError(device_message(path_, why));
  }
  if (pcap_dump_flush(dumper_.get()) != 0 && write_error_.empty()) keep_error("write failed");
  if (!write_error_.empty()) throw DeviceError(write_error_);
}

PcapDevice::~PcapDevice() {
  // Nobody else can hold tx_lock now. Write whatever is still pending and commit, unless a
  // write failed: then the temporary file goes and FILE stays as it was.
  if (!out_) return;
  flush();
  close_dumper();
  if (!write_error_.empty()) return;
  try {
    out_->commit();
  } catch (const FileError&) {
    // nowhere to report it from a destructor: FILE is untouched (call finish() to hear of it)
  }
}

void PcapDevice::close_dumper() noexcept {
  dumper_.reset();  // pcap_dump_close(): fclose() flushes the stream through write_out()
  pcap_.reset();
}

void PcapDevice::finish() {
  if (!out_) return;
  flush();
  close_dumper();
  const std::unique_ptr<OutputFile> out = std::move(out_);  // its destructor drops the temp file
  if (!write_error_.empty()) throw FileError(write_error_);
  out->commit();
}

void PcapDevice::abandon() noexcept {
  out_.reset();    // first: what the stream still buffers is dropped (write_out() sees no file)
  close_dumper();
}

void PcapDevice::keep_error(std::string_view error) noexcept {
  if (!write_error_.empty()) return;
  try {
    const std::string what = device_message(path_, error);
    write_error_.assign(what, 0, std::min(what.size(), write_error_.capacity()));
  } catch (const std::exception&) {
    write_error_.assign("device 'pcap:': write failed");  // fits the reserved capacity
  }
}

void PcapDevice::write_out(std::span<const std::byte> bytes) noexcept {
  if (!write_error_.empty() || !out_) return;
  try {
    out_->write(bytes);
  } catch (const std::exception& e) {  // FileError; bad_alloc while building its message
    keep_error(e.what());
  }
}

ssize_t PcapDevice::stream_write(void* self, const char* data, std::size_t size) noexcept {
  // Always "written": after a failure the capture is void anyway (write_error_ says so), and a
  // short count would only make stdio keep the bytes and retry.
  static_cast<PcapDevice*>(self)->write_out(std::as_bytes(std::span(data, size)));
  return static_cast<ssize_t>(size);
}

XmitResult PcapDevice::xmit(Packet* p, bool more) noexcept {
  if (drop_overlong(p)) [[unlikely]] {  // no record: its bytes past the buffer are the heap's
    if (!more) flush();
    return XmitResult::ok;
  }
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

  if (dumper_) {
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(t / 1'000'000'000ull);
    // A nanosecond dumper writes tv_usec as the record's sub-second field: nanoseconds here.
    h.ts.tv_usec = static_cast<suseconds_t>(t % 1'000'000'000ull);
    h.caplen = incl;
    h.len = p->len;
    pcap_dump(reinterpret_cast<u_char*>(dumper_.get()), &h, reinterpret_cast<const u_char*>(p->data));
  }
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
  if (!dumper_) keep_error("already finished");
  else if (pcap_dump_flush(dumper_.get()) != 0) keep_error("write failed");
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
