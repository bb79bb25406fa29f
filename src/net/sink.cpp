// SPDX-License-Identifier: MIT
// The sink (see sink.hpp): an AF_PACKET socket with a TPACKET_V3 receive ring on one interface,
// optionally inside a named netns, and a receive thread that counts txpath frames per sender.
//
// Origin: txpath issue 5, from packet(7) and the kernel's Documentation/networking/packet_mmap
// (semantics only: block-based ring, block_status ownership handshake, PACKET_STATISTICS).
// Invariants:
//   - a ring block belongs to the receive thread while its block_status has TP_STATUS_USER and
//     to the kernel otherwise; the thread hands it back by storing TP_STATUS_KERNEL after it has
//     read every packet in it;
//   - all counts (the SinkTally, sink_tally.hpp: bounded per-sender state) are written by the
//     receive thread under `mu` (one lock per ring block, not per frame) and read by
//     report()/wait_for() under `mu`: snapshots are consistent;
//   - socket drops: PACKET_STATISTICS resets on read, so every read is added to `socket_drops`
//     under `mu`.
// Memory ordering: block_status is read with acquire (pairs with the kernel's write barrier before
// it sets TP_STATUS_USER, so the packets are visible) and written with release (our reads of the
// block happen before the kernel reuses it). `stop` is an atomic flag (relaxed is enough: the
// eventfd write/poll wakes the thread and carries the ordering).
#include "net/sink.hpp"

#include <fcntl.h>
#include <net/if_arp.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "core/text.hpp"
#include "net/netns.hpp"
#include "net/sink_tally.hpp"
#include "net/sink_timeline.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"

namespace txpath {

namespace {

constexpr unsigned kBlockSize = 1u << 20;     // ring block (1 MiB)
constexpr unsigned kBlockCount = 32;          // 32 MiB of ring
constexpr unsigned kFrameSize = 2048;         // nominal, required by the ring request
constexpr unsigned kRetireMs = 4;             // a partly filled block is handed over after this

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace

struct Sink::Impl {
  SinkConfig config;
  std::string label;  // "sink 'IF' in netns 'NS'"
  Fd sock, absorb, wake;
  int link_type = ARPHRD_ETHER;
  bool link_header = true;
  uint8_t* ring = nullptr;
  std::size_t ring_len = 0;

  std::thread thread;
  std::atomic<bool> stop_flag{false};

  mutable std::mutex mu;
  mutable std::condition_variable arrived;
  net::SinkTally tally;
  net::SinkTimeline timeline{SinkTimelineConfig{}};
  mutable uint64_t socket_drops = 0;
  std::chrono::steady_clock::time_point since{}, last_frame{}, stopped_at{};
  bool running = false, stopped = false;
  clockid_t cpu_clock{};
  bool cpu_clock_valid = false;
  uint64_t final_cpu_ns = 0;

  [[noreturn]] void fail(const std::string& why) const { throw DeviceError(label + ": " + why); }

  void open_here();
  void loop();
  void count(const std::byte* data, std::size_t len, uint64_t t_ns);
  void clear_partial_udp_csum(uint8_t* data, std::size_t len) const;
  void read_drops_locked() const;
  SinkReport report_locked() const;
  void zero_locked();
};

void Sink::Impl::open_here() {
  const unsigned ifindex = ::if_nametoindex(config.ifname.c_str());
  if (ifindex == 0) fail("no such interface");

  Fd s(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));  // protocol 0: nothing until bind
  if (s.get() < 0) {
    if (errno == EPERM || errno == EACCES) fail("not permitted (needs root or CAP_NET_RAW)");
    fail(std::string("socket(AF_PACKET): ") + std::strerror(errno));
  }
  // Link type: with or without an Ethernet header in front of the IPv4 packet.
  {
    ifreq req{};
    std::strncpy(req.ifr_name, config.ifname.c_str(), IFNAMSIZ - 1);
    if (::ioctl(s.get(), SIOCGIFHWADDR, &req) != 0)
      fail(std::string("SIOCGIFHWADDR: ") + std::strerror(errno));
    link_type = req.ifr_hwaddr.sa_family;
    link_header = link_type == ARPHRD_ETHER || link_type == ARPHRD_LOOPBACK;
  }
  const int version = TPACKET_V3;
  if (::setsockopt(s.get(), SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
    fail(std::string("PACKET_VERSION TPACKET_V3: ") + std::strerror(errno));
  tpacket_req3 req{};
  req.tp_block_size = kBlockSize;
  req.tp_block_nr = kBlockCount;
  req.tp_frame_size = kFrameSize;
  req.tp_frame_nr = kBlockSize / kFrameSize * kBlockCount;
  req.tp_retire_blk_tov = kRetireMs;
  if (::setsockopt(s.get(), SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
    fail(std::string("PACKET_RX_RING: ") + std::strerror(errno));
  ring_len = std::size_t{kBlockSize} * kBlockCount;
  void* map = ::mmap(nullptr, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, s.get(), 0);
  if (map == MAP_FAILED) fail(std::string("mmap of the receive ring: ") + std::strerror(errno));
  ring = static_cast<uint8_t*>(map);

  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = static_cast<int>(ifindex);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail(std::string("bind: ") + std::strerror(errno));
  sock = std::move(s);

  if (config.absorb_port != 0) {
    Fd u(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (u.get() >= 0) {
      const int small = 4096;
      ::setsockopt(u.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
      sockaddr_in in{};
      in.sin_family = AF_INET;
      in.sin_port = htons(config.absorb_port);
      in.sin_addr.s_addr = htonl(INADDR_ANY);
      // A port already in use is fine: someone else answers there.
      if (::bind(u.get(), reinterpret_cast<sockaddr*>(&in), sizeof in) == 0) absorb = std::move(u);
    }
  }
}

// A frame the sending kernel left for checksum offload (a veth passes it on as is: the UDP
// checksum field holds only the pseudo-header sum) fails parse_frame's checksum check. The kernel
// says so with TP_STATUS_CSUMNOTREADY; the frame is ours until the block goes back, so clear the
// field: 0 means "no checksum" in IPv4, and the IPv4 header checksum is still verified.
void Sink::Impl::clear_partial_udp_csum(uint8_t* data, std::size_t len) const {
  std::size_t ip = 0;
  if (link_header) {
    if (len < 14 || data[12] != 0x08 || data[13] != 0x00) return;  // not IPv4
    ip = 14;
  }
  if (len < ip + 20 + 8 || (data[ip] & 0x0f) != 5 || data[ip + 9] != IPPROTO_UDP) return;
  data[ip + 20 + 6] = 0;
  data[ip + 20 + 7] = 0;
}

void Sink::Impl::read_drops_locked() const {
  tpacket_stats_v3 st{};
  socklen_t len = sizeof st;
  if (::getsockopt(sock.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
    socket_drops += st.tp_drops;
}

void Sink::Impl::count(const std::byte* data, std::size_t len, uint64_t t_ns) {
  const std::span<const std::byte> bytes(data, len);
  const auto info = link_header ? parse_frame(bytes) : parse_ipv4_packet(bytes);
  if (!info) {
    tally.count_other();
    return;
  }
  tally.count(info->sender, info->seq, len);
  if (timeline.enabled()) timeline.count(info->sender, t_ns, len);  // ignores ids past its 64
}

void Sink::Impl::loop() {
  {
    std::lock_guard lock(mu);
    if (pthread_getcpuclockid(pthread_self(), &cpu_clock) == 0) cpu_clock_valid = true;
  }
  unsigned block = 0;
  auto last_stats = std::chrono::steady_clock::now();
  while (!stop_flag.load(std::memory_order_relaxed)) {  // relaxed: the eventfd wakes us
    auto* desc = reinterpret_cast<tpacket_block_desc*>(ring + std::size_t{block} * kBlockSize);
    // acquire: pairs with the kernel's barrier before it hands the block over (TP_STATUS_USER).
    const uint32_t status = __atomic_load_n(&desc->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
    if (!(status & TP_STATUS_USER)) {
      pollfd fds[2] = {{sock.get(), POLLIN | POLLERR, 0}, {wake.get(), POLLIN, 0}};
      ::poll(fds, 2, 100);
      if (fds[0].revents & POLLERR) {
        // The interface went down or away (ENETDOWN): clear the pending error, or poll() would
        // return at once forever. Counting resumes if the interface comes back up.
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - last_stats > std::chrono::milliseconds(100)) {
        std::lock_guard lock(mu);
        read_drops_locked();
        last_stats = now;
      }
      continue;
    }
    const uint32_t n = desc->hdr.bh1.num_pkts;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(desc) + desc->hdr.bh1.offset_to_first_pkt;
    bool any_txpath = false;
    {
      std::lock_guard lock(mu);
      const uint64_t before = tally.frames();
      for (uint32_t i = 0; i < n; ++i) {
        const auto* hdr = reinterpret_cast<const tpacket3_hdr*>(p);
        const auto* ll = reinterpret_cast<const sockaddr_ll*>(
            p + TPACKET_ALIGN(sizeof(tpacket3_hdr)));
        if (ll->sll_pkttype != PACKET_OUTGOING) {
          uint8_t* data = const_cast<uint8_t*>(p) + hdr->tp_mac;
          if (hdr->tp_status & TP_STATUS_CSUMNOTREADY) clear_partial_udp_csum(data, hdr->tp_snaplen);
          // The kernel's receive time of the frame (the socket's default clock, CLOCK_REALTIME).
          const uint64_t t_ns = uint64_t{hdr->tp_sec} * 1000000000u + hdr->tp_nsec;
          count(reinterpret_cast<const std::byte*>(data), hdr->tp_snaplen, t_ns);
        }
        p += hdr->tp_next_offset;
      }
      any_txpath = tally.frames() != before;
      if (any_txpath) last_frame = std::chrono::steady_clock::now();
    }
    // release: our reads of the block happen before the kernel refills it.
    __atomic_store_n(&desc->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    block = (block + 1) % kBlockCount;
    if (any_txpath) arrived.notify_all();
  }
  std::lock_guard lock(mu);
  read_drops_locked();
  timespec ts{};
  if (cpu_clock_valid && ::clock_gettime(cpu_clock, &ts) == 0)
    final_cpu_ns = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  cpu_clock_valid = false;
}

SinkReport Sink::Impl::report_locked() const {
  read_drops_locked();
  SinkReport r = tally.report();
  r.socket_drops = socket_drops;
  r.window_ns = config.timeline.window_ns;
  r.timelines = timeline.report();
  const auto end = stopped ? stopped_at : std::chrono::steady_clock::now();
  r.seconds = running || stopped ? std::chrono::duration<double>(end - since).count() : 0.0;
  return r;
}

void Sink::Impl::zero_locked() {
  read_drops_locked();
  tally.clear();
  timeline.clear();
  socket_drops = 0;
  since = last_frame = std::chrono::steady_clock::now();
  if (stopped) stopped_at = since;
}

Sink::Sink(const SinkConfig& config) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.config = config;
  m.timeline = net::SinkTimeline(config.timeline);
  // txpath::quoted, not std::quoted (found by ADL for a std::string where <iomanip> is seen).
  m.label = "sink " + txpath::quoted(config.ifname) +
            (config.netns.empty() ? "" : " in netns " + txpath::quoted(config.netns));
  if (!net::valid_ifname(config.ifname)) m.fail("not a valid interface name");
  if (!config.netns.empty() && !net::valid_netns_name(config.netns)) m.fail("not a valid netns name");
  m.wake = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (m.wake.get() < 0) m.fail(std::string("eventfd: ") + std::strerror(errno));
  net::in_netns(
      config.netns, [&] { m.open_here(); },
      [&](int err) { m.fail(net::netns_error_text(err)); });
}

Sink::~Sink() {
  stop();
  if (impl_->ring) ::munmap(impl_->ring, impl_->ring_len);
}

void Sink::start() {
  Impl& m = *impl_;
  if (m.thread.joinable()) return;
  {
    std::lock_guard lock(m.mu);
    m.zero_locked();
    m.running = true;
    m.stopped = false;
  }
  m.stop_flag.store(false, std::memory_order_relaxed);  // relaxed: thread creation orders it
  m.thread = std::thread([&m] { m.loop(); });
}

SinkReport Sink::report() const {
  std::lock_guard lock(impl_->mu);
  return impl_->report_locked();
}

void Sink::reset() {
  std::lock_guard lock(impl_->mu);
  impl_->zero_locked();
}

bool Sink::wait_for(uint64_t frames, std::chrono::milliseconds quiet,
                    std::chrono::milliseconds timeout) const {
  Impl& m = *impl_;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  std::unique_lock lock(m.mu);
  for (;;) {
    if (m.tally.received() >= frames) return true;
    const auto now = std::chrono::steady_clock::now();
    const auto quiet_end = std::max(start, m.last_frame) + quiet;
    if (now >= deadline || now >= quiet_end) return false;
    // The receive thread notifies after each block with txpath frames; wake at least every 1 ms
    // anyway (a stopped sink never notifies).
    m.arrived.wait_until(lock, std::min({deadline, quiet_end, now + std::chrono::milliseconds(1)}));
  }
}

uint64_t Sink::cpu_ns() const {
  std::lock_guard lock(impl_->mu);
  timespec ts{};
  if (impl_->cpu_clock_valid && ::clock_gettime(impl_->cpu_clock, &ts) == 0)
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
  return impl_->final_cpu_ns;
}

SinkReport Sink::stop() {
  Impl& m = *impl_;
  if (m.thread.joinable()) {
    m.stop_flag.store(true, std::memory_order_relaxed);  // relaxed: the eventfd write wakes it
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(m.wake.get(), &one, sizeof one);
    m.thread.join();
    std::lock_guard lock(m.mu);
    m.running = false;
    m.stopped = true;
    m.stopped_at = std::chrono::steady_clock::now();
  }
  return report();
}

}  // namespace txpath
