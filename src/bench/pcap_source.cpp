// SPDX-License-Identifier: MIT
// The classic pcap reader of --source pcap:FILE (see pcap_source.hpp). Written from the file
// format's description (tcpdump.org, "pcap-savefile(5)"; docs/background.md, "Capture files").
#include "bench/pcap_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/text.hpp"
#include "txpath/error.hpp"
#include "txpath/queue_select.hpp"

namespace txpath::bench_detail {

namespace {

constexpr std::size_t kFileHeader = 24;
constexpr std::size_t kRecordHeader = 16;
constexpr std::size_t kEthernetHeader = 14;
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;
constexpr uint32_t kLinkTypeEthernet = 1;

uint32_t swap32(uint32_t v) noexcept {
  return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

// Reads the file's 32- and 16-bit fields in its own byte order.
struct Fields {
  std::span<const std::byte> file;
  bool swapped = false;

  uint32_t u32(std::size_t at) const noexcept {
    uint32_t v = 0;
    std::memcpy(&v, file.data() + at, 4);  // the writer's native order, which may not be ours
    return swapped ? swap32(v) : v;
  }
  uint16_t u16(std::size_t at) const noexcept {
    uint16_t v = 0;
    std::memcpy(&v, file.data() + at, 2);
    return swapped ? static_cast<uint16_t>((v >> 8) | (v << 8)) : v;
  }
};

std::string hex32(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

ConfigError bad(std::string_view name, const std::string& why) {
  return ConfigError("--source pcap:" + txpath::quoted(name) + ": " + why);
}

// The file header: the byte order, the time stamps' unit (ns per sub-second tick), the link type.
Fields read_header(std::span<const std::byte> file, std::string_view name, uint64_t& tick_ns,
                   uint64_t& ticks_per_second) {
  if (file.size() < kFileHeader) throw bad(name, "not a pcap file (shorter than its 24-byte header)");
  Fields f{file, false};
  const uint32_t magic = f.u32(0);
  if (magic == swap32(kMagicMicro) || magic == swap32(kMagicNano)) f.swapped = true;
  const uint32_t m = f.u32(0);
  if (m != kMagicMicro && m != kMagicNano)
    throw bad(name, "not a classic pcap file (magic " + hex32(magic) + "; pcapng is not read)");
  tick_ns = m == kMagicNano ? 1 : 1000;
  ticks_per_second = m == kMagicNano ? 1'000'000'000 : 1'000'000;
  if (f.u16(4) != 2) throw bad(name, "pcap version " + std::to_string(f.u16(4)) + "." + std::to_string(f.u16(6)) + ", not 2.x");
  if (const uint32_t link = f.u32(20); link != kLinkTypeEthernet)
    throw bad(name, "link type " + std::to_string(link) + ", not Ethernet (1)");
  return f;
}

}  // namespace

Capture parse_pcap(std::span<const std::byte> file, std::size_t max_frame_len, std::string_view name) {
  uint64_t tick_ns = 0, ticks_per_second = 0;
  const Fields f = read_header(file, name, tick_ns, ticks_per_second);
  Capture cap;
  uint64_t first_ns = 0;
  for (std::size_t at = kFileHeader; at < file.size();) {
    const std::string which = "frame " + std::to_string(cap.frames.size() + 1);
    if (file.size() - at < kRecordHeader) throw bad(name, which + ": record header cut short by the end of the file");
    const uint32_t sec = f.u32(at), sub = f.u32(at + 4), incl = f.u32(at + 8), orig = f.u32(at + 12);
    at += kRecordHeader;
    if (incl > file.size() - at)
      throw bad(name, which + ": " + std::to_string(incl) + " bytes, cut short by the end of the file");
    if (sub >= ticks_per_second) throw bad(name, which + ": time stamp's sub-second field " + std::to_string(sub) + " out of range");
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
    const uint64_t t = uint64_t{sec} * 1'000'000'000 + uint64_t{sub} * tick_ns;
    if (cap.frames.empty()) first_ns = t;
    const uint64_t prev = cap.frames.empty() ? 0 : cap.frames.back().time_ns;
    const std::span<const std::byte> bytes = file.subspan(at, incl);
    cap.frames.push_back({.offset = cap.bytes.size(), .len = incl,
                          .flow_hash = frame_flow_hash(bytes).value_or(0),
                          .time_ns = std::max(prev, t > first_ns ? t - first_ns : 0)});
    cap.bytes.insert(cap.bytes.end(), bytes.begin(), bytes.end());
    cap.max_len = std::max<std::size_t>(cap.max_len, incl);
    at += incl;
  }
  if (cap.frames.empty()) throw bad(name, "the capture holds no frame");
  cap.span_ns = cap.frames.back().time_ns;
  return cap;
}

Capture load_pcap(const std::string& path, std::size_t max_frame_len) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw bad(path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw bad(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw bad(path, "not a regular file");
  constexpr std::size_t kMaxFile = kFileHeader + kMaxReplayBytes + kMaxReplayFrames * kRecordHeader;
  if (static_cast<uint64_t>(st.st_size) > kMaxFile)
    throw bad(path, std::to_string(st.st_size) + " bytes, over the replay's cap of " + std::to_string(kMaxFile));
  std::vector<std::byte> file(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < file.size()) {
    const ssize_t n = ::read(fd, file.data() + got, file.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw bad(path, std::strerror(errno));
    if (n == 0) break;  // shrank while we read: parse what is there
    got += static_cast<std::size_t>(n);
  }
  file.resize(got);
  return parse_pcap(file, max_frame_len, path);
}

}  // namespace txpath::bench_detail
