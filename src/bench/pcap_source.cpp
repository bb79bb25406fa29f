// SPDX-License-Identifier: MIT
// The capture reader of --source pcap:FILE (see pcap_source.hpp): libpcap parses the file
// (pcap_open_offline(3PCAP), pcap_next_ex(3PCAP)); this file keeps the replay's own checks and
// caps and turns every refusal into one line naming the file.
#include "bench/pcap_source.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/text.hpp"
#include "txpath/error.hpp"
#include "txpath/queue_select.hpp"

namespace txpath::bench_detail {

namespace {

constexpr std::size_t kFileHeader = 24;  // a classic header; pcapng's first block is longer
constexpr std::size_t kRecordHeader = 16;
constexpr std::size_t kEthernetHeader = 14;
constexpr uint64_t kNsPerSecond = 1'000'000'000;

struct PcapCloser {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }  // closes its stream too
};
struct FileCloser {
  void operator()(FILE* f) const noexcept { std::fclose(f); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

std::string hex32(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

ConfigError bad(std::string_view name, const std::string& why) {
  return ConfigError("--source pcap:" + txpath::quoted(name) + ": " + why);
}

// libpcap's message, in our words where we have them: a truncated file keeps the wording the
// reader always had ("cut short by the end of the file"), libpcap's detail in brackets.
std::string libpcap_says(std::string_view error) {
  const std::string text = escape_user_text(error);
  if (error.find("truncated") != std::string_view::npos) return "cut short by the end of the file (" + text + ")";
  return text;
}

// libpcap reads the file header (classic or pcapng) from `file` held in memory; the handle
// reads the records. Throws for a file it does not read, or one that is not Ethernet.
PcapHandle open_capture(std::span<const std::byte> file, std::string_view name) {
  if (file.size() < kFileHeader) throw bad(name, "not a pcap file (shorter than its 24-byte header)");
  // fmemopen() takes a non-const buffer; "rb" only reads it.
  std::unique_ptr<FILE, FileCloser> stream(
      fmemopen(const_cast<std::byte*>(file.data()), file.size(), "rb"));
  if (!stream) throw bad(name, std::strerror(errno));
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  PcapHandle p(pcap_fopen_offline_with_tstamp_precision(stream.get(), PCAP_TSTAMP_PRECISION_NANO, errbuf));
  if (!p) {
    uint32_t magic = 0;
    std::memcpy(&magic, file.data(), sizeof magic);
    if (std::string_view(errbuf) == "unknown file format")
      throw bad(name, "not a pcap or pcapng file (magic " + hex32(magic) + ")");
    throw bad(name, libpcap_says(errbuf));
  }
  static_cast<void>(stream.release());  // pcap_close() closes it from now on
  if (const int link = pcap_datalink(p.get()); link != DLT_EN10MB)
    throw bad(name, "link type " + std::to_string(link) + ", not Ethernet (1)");
  return p;
}

// Checks one record against the replay's rules and caps and appends it to `cap`.
void add_frame(Capture& cap, const pcap_pkthdr& h, const u_char* data, std::size_t max_frame_len,
               std::string_view name, uint64_t& first_ns) {
  const std::string which = "frame " + std::to_string(cap.frames.size() + 1);
  const uint32_t incl = h.caplen, orig = h.len;
  const uint64_t sub = static_cast<uint64_t>(h.ts.tv_usec);  // nanoseconds: the handle's precision
  if (h.ts.tv_usec < 0 || sub >= kNsPerSecond)
    throw bad(name, which + ": time stamp's sub-second field " + std::to_string(h.ts.tv_usec) + " ns out of range");
  if (h.ts.tv_sec < 0 || static_cast<uint64_t>(h.ts.tv_sec) > std::numeric_limits<uint64_t>::max() / kNsPerSecond - 1)
    throw bad(name, which + ": time stamp " + std::to_string(h.ts.tv_sec) + " s out of range");
  if (incl < orig)
    throw bad(name, which + ": the capture kept " + std::to_string(incl) + " of its " + std::to_string(orig) +
                        " bytes (snap length): it cannot be replayed whole");
  if (incl < kEthernetHeader) throw bad(name, which + ": " + std::to_string(incl) + " bytes, shorter than an Ethernet header");
  if (incl > max_frame_len)
    throw bad(name, which + ": " + std::to_string(incl) + " bytes, over the device's maximum frame of " +
                        std::to_string(max_frame_len));
  if (cap.frames.size() >= kMaxReplayFrames) throw bad(name, "more than " + std::to_string(kMaxReplayFrames) + " frames (the replay's cap)");
  if (cap.bytes.size() + incl > kMaxReplayBytes)
    throw bad(name, "more than " + std::to_string(kMaxReplayBytes >> 20) + " MiB of frames (the replay's cap)");
  const uint64_t t = static_cast<uint64_t>(h.ts.tv_sec) * kNsPerSecond + sub;
  if (cap.frames.empty()) first_ns = t;
  const uint64_t prev = cap.frames.empty() ? 0 : cap.frames.back().time_ns;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), incl);
  cap.frames.push_back({.offset = cap.bytes.size(), .len = incl,
                        .flow_hash = frame_flow_hash(bytes).value_or(0),
                        .time_ns = std::max(prev, t > first_ns ? t - first_ns : 0)});
  cap.bytes.insert(cap.bytes.end(), bytes.begin(), bytes.end());
  cap.max_len = std::max<std::size_t>(cap.max_len, incl);
}

}  // namespace

Capture parse_pcap(std::span<const std::byte> file, std::size_t max_frame_len, std::string_view name) {
  const PcapHandle p = open_capture(file, name);
  Capture cap;
  uint64_t first_ns = 0;
  for (;;) {
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(p.get(), &h, &data);
    if (rc == PCAP_ERROR_BREAK) break;  // the end of the file
    if (rc != 1)
      throw bad(name, "frame " + std::to_string(cap.frames.size() + 1) + ": " + libpcap_says(pcap_geterr(p.get())));
    add_frame(cap, *h, data, max_frame_len, name, first_ns);
  }
  if (cap.frames.empty()) throw bad(name, "the capture holds no frame");
  cap.span_ns = cap.frames.back().time_ns;
  return cap;
}

namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

int open_capture_file(const std::string& path) {
  // O_NONBLOCK: a FIFO (or a device) opens at once and is refused by read_capture(), never
  // waited on in open() (a FIFO with no writer blocked there for ever, signals included).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw bad(path, std::strerror(errno));
  return fd;
}

// The whole of the capture open as `fd`, from its start: a regular file within the caps.
std::vector<std::byte> read_capture(int fd, std::string_view name) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw bad(name, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw bad(name, "not a regular file");
  constexpr std::size_t kMaxFile = kFileHeader + kMaxReplayBytes + kMaxReplayFrames * kRecordHeader;
  if (static_cast<uint64_t>(st.st_size) > kMaxFile)
    throw bad(name, std::to_string(st.st_size) + " bytes, over the replay's cap of " + std::to_string(kMaxFile));
  std::vector<std::byte> file(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < file.size()) {
    const ssize_t n = ::pread(fd, file.data() + got, file.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw bad(name, std::strerror(errno));
    if (n == 0) break;  // shrank while we read: parse what is there
    got += static_cast<std::size_t>(n);
  }
  file.resize(got);
  return file;
}

constexpr unsigned kSnapshotSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;

}  // namespace

Capture load_pcap(const std::string& path, std::size_t max_frame_len) {
  const FdCloser file{open_capture_file(path)};
  return parse_pcap(read_capture(file.fd, path), max_frame_len, path);
}

int snapshot_pcap(const std::string& path) {
  std::vector<std::byte> bytes;
  {
    const FdCloser file{open_capture_file(path)};
    bytes = read_capture(file.fd, path);
  }
  const FdCloser mem{::memfd_create("txpath-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (mem.fd < 0) throw bad(path, std::string("a copy in memory: memfd_create: ") + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(mem.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw bad(path, std::string("a copy in memory: write: ") + std::strerror(n < 0 ? errno : EIO));
    done += static_cast<std::size_t>(n);
  }
  if (::fcntl(mem.fd, F_ADD_SEALS, kSnapshotSeals) != 0)
    throw bad(path, std::string("a copy in memory: seal: ") + std::strerror(errno));
  // 10 or above: a worker's fork moves it to a low number of its own (kCaptureFd) first.
  const int high = ::fcntl(mem.fd, F_DUPFD_CLOEXEC, 10);
  if (high < 0) throw bad(path, std::string("a copy in memory: ") + std::strerror(errno));
  return high;
}

bool is_pcap_snapshot(int fd) noexcept {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (static_cast<unsigned>(seals) & kSnapshotSeals) == kSnapshotSeals;
}

Capture load_pcap_snapshot(int fd, std::size_t max_frame_len, std::string_view name) {
  return parse_pcap(read_capture(fd, name), max_frame_len, name);
}

}  // namespace txpath::bench_detail
