// SPDX-License-Identifier: MIT
#include "device/afxdp_device.hpp"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "base/clock.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

#if TXPATH_HAVE_LIBXDP
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>
#endif

namespace txpath {

namespace {

constexpr uint32_t kRing = 1024;           // TX and completion descriptors
constexpr uint32_t kChunks = 2 * kRing;    // UMEM chunks: a ring's worth in flight, a ring free
constexpr uint32_t kChunkSize = 2048;      // holds a 1514-byte frame; jumbo MTUs are refused
constexpr int kKicksPerDoorbell = 64;      // copy mode sends a small batch per kick

// The configuration as a --device spec (describe()).
std::string spec_of(const AfXdpConfig& c) {
  return "afxdp:" + c.ifname + (c.queue ? ":" + std::to_string(c.queue) : "") +
         (c.umem != AfXdpConfig{}.umem ? ",umem=" + std::to_string(c.umem) : "");
}

}  // namespace

#if TXPATH_HAVE_LIBXDP

// The UMEM's memory and the pool over its first frames. Held by the device (Xsk) and by every
// holder of zero_copy_pool(): the mapping goes once the last of them lets go.
struct UmemMemory {
  void* area = MAP_FAILED;
  std::size_t len = 0;
  std::optional<Pool> pool;

  ~UmemMemory() {
    pool.reset();
    if (area != MAP_FAILED) ::munmap(area, len);
  }
};

struct AfXdpDevice::Xsk {
  std::shared_ptr<UmemMemory> memory;
  void* area = nullptr;
  std::size_t area_len = 0;
  xsk_umem* umem = nullptr;
  xsk_socket* socket = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_prod tx{};

  void close() noexcept {
    if (socket) xsk_socket__delete(socket);
    if (umem) xsk_umem__delete(umem);
    socket = nullptr;
    umem = nullptr;
  }
  ~Xsk() { close(); }  // then `memory` (unmapped unless a pool holder keeps it)
};

AfXdpDevice::AfXdpDevice(const AfXdpConfig& config)
    : ConfiguredDevice(config, spec_of(config)), xsk_(std::make_unique<Xsk>()) {
  ifc_ = netif::lookup(spec_, cfg_.ifname);
  if (ifc_.arp_type != 1)
    netif::fail(spec_, "interface '" + cfg_.ifname + "' is not an Ethernet device");
  if (ifc_.mtu + 14 > kChunkSize)
    netif::fail(spec_, "MTU " + std::to_string(ifc_.mtu) + " is larger than the " +
                           std::to_string(kChunkSize - 14) + " bytes a UMEM chunk holds");
  set_mtu(ifc_.mtu);
  if (!ifc_.up) netif::fail(spec_, "interface '" + cfg_.ifname + "' is down");
  map_umem();
  open_socket();
  free_chunks_.reserve(kChunks);
  for (uint32_t i = kChunks; i-- > 0;) free_chunks_.push_back(pool_bytes_ + uint64_t{i} * kChunkSize);
}

// One mapping: the zero-copy pool's frames, then the copy chunks.
void AfXdpDevice::map_umem() {
  auto memory = std::make_shared<UmemMemory>();
  pool_bytes_ = uint64_t{cfg_.umem} * kChunkSize;
  // Whole pages: the kernel registers whole pages of whole chunks (an odd umem=N leaves the
  // last half page as a spare chunk no one uses).
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  memory->len = (pool_bytes_ + std::size_t{kChunks} * kChunkSize + page - 1) / page * page;
  memory->area =
      ::mmap(nullptr, memory->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory->area == MAP_FAILED) netif::fail_errno(spec_, "mmap(UMEM)", errno);
  if (cfg_.umem > 0) {
    memory->pool.emplace(std::span(static_cast<std::byte*>(memory->area), pool_bytes_), kChunkSize);
    pool_ = std::shared_ptr<Pool>(memory, &*memory->pool);  // shares the mapping's ownership
    owned_.assign(cfg_.umem, 0);
  }
  xsk_->area = memory->area;
  xsk_->area_len = memory->len;
  xsk_->memory = std::move(memory);
}

void AfXdpDevice::open_socket() {
  // UMEM and socket together: a failed bind leaves the UMEM unusable for a second try.
  const auto open = [&](uint16_t bind_flags) -> int {
    xsk_->close();
    xsk_umem_config ucfg{};
    ucfg.fill_size = 64;  // TX only: the fill ring stays empty
    ucfg.comp_size = kChunks;
    ucfg.frame_size = kChunkSize;
    ucfg.frame_headroom = 0;
    if (const int rc = xsk_umem__create(&xsk_->umem, xsk_->area, xsk_->area_len, &xsk_->fill,
                                        &xsk_->comp, &ucfg);
        rc != 0) {
      xsk_->umem = nullptr;
      return rc;
    }
    xsk_socket_config scfg{};
    scfg.rx_size = 0;
    scfg.tx_size = kRing;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // TX only: no XDP program needed
    scfg.xdp_flags = 0;
    scfg.bind_flags = bind_flags;
    const int rc = xsk_socket__create(&xsk_->socket, cfg_.ifname.c_str(), cfg_.queue,
                                      xsk_->umem, nullptr, &xsk_->tx, &scfg);
    if (rc != 0) xsk_->socket = nullptr;
    return rc;
  };
  // Zero-copy first; drivers without it (veth) refuse, and the socket binds in copy mode.
  // A socket closed just before on the same queue releases it from a deferred work item:
  // EBUSY for a short while. Retry for up to 2 s.
  const auto open_retrying = [&](uint16_t bind_flags) {
    int rc = open(bind_flags);
    for (int i = 0; i < 200 && rc == -EBUSY; ++i) {
      ::usleep(10'000);
      rc = open(bind_flags);
    }
    return rc;
  };
  zero_copy_ = open_retrying(XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP) == 0;
  if (!zero_copy_) {
    if (const int rc = open_retrying(XDP_COPY); rc != 0)
      netif::fail_errno(spec_, "AF_XDP socket on '" + cfg_.ifname + "' queue " +
                                   std::to_string(cfg_.queue),
                        -rc);
  }
}

AfXdpDevice::~AfXdpDevice() {
  std::lock_guard lock(tx_lock());
  if (!pending_.empty() || reserved_) doorbell();
  // Give the kernel a moment to send what was submitted before the socket goes away.
  for (int i = 0; i < 1000 && outstanding_ > 0; ++i) {
    kick();
    reap();
    if (outstanding_) ::usleep(100);
  }
  // Closed, the socket completes nothing more: the pool's packets still out are the device's
  // last to return (the kernel holds its own references to the pages it still sends from).
  xsk_->close();
  release_owned();
}

// A TX descriptor (idx) for the next packet, and a copy chunk for it unless it is sent from its
// own buffer.
bool AfXdpDevice::reserve_tx(bool from_pool, uint32_t& idx) noexcept {
  return (from_pool || !free_chunks_.empty()) && xsk_ring_prod__reserve(&xsk_->tx, 1, &idx) == 1;
}

// The UMEM address `p` is sent from: its own buffer (the device owns the packet until its
// completion), or a copy chunk holding a copy of it (the packet returns at the doorbell).
uint64_t AfXdpDevice::place(Packet* p, bool from_pool) noexcept {
  if (from_pool) {
    const uint64_t addr = pool_->offset_of(*p);
    owned_[addr / kChunkSize] = 1;
    return addr;
  }
  const uint64_t chunk = free_chunks_.back();
  free_chunks_.pop_back();
  std::memcpy(xsk_umem__get_data(xsk_->area, chunk), p->data, p->len);
  copies_.add(1);
  pending_.push_back(p);
  return chunk;
}

// A packet of the zero-copy pool whose frame stays inside its chunk (the kernel refuses a
// descriptor that crosses one, and never completes it) is sent from its own buffer.
bool AfXdpDevice::sends_in_place(const Packet& p) const noexcept {
  if (!pool_ || p.pool != pool_.get()) return false;
  const uint64_t addr = pool_->offset_of(p);
  return addr < pool_bytes_ && addr % kChunkSize + p.len <= kChunkSize;
}

XmitResult AfXdpDevice::xmit(Packet* p, bool more) noexcept {
  const bool from_pool = sends_in_place(*p);
  uint32_t idx = 0;
  if (!reserve_tx(from_pool, idx)) {
    reap();
    if (!reserve_tx(from_pool, idx)) {
      drv_stopped_ = true;
      stop_queue();
      if (!pending_.empty() || reserved_ || kick_needed_) doorbell();
      busy_.add(1);
      publish_hints();
      return XmitResult::busy;  // the packet stays the caller's: nothing recorded
    }
  }
  xdp_desc* d = xsk_ring_prod__tx_desc(&xsk_->tx, idx);
  d->addr = place(p, from_pool);
  d->len = p->len;
  d->options = 0;
  ++reserved_;
  ++outstanding_;
  tx_packets_.add(1);
  tx_bytes_.add(d->len);
  bool ring = !more;
  if (free_chunks_.empty() || xsk_prod_nb_free(&xsk_->tx, 1) == 0) {
    reap();
    if (free_chunks_.empty() || xsk_prod_nb_free(&xsk_->tx, 1) == 0) {
      drv_stopped_ = true;
      stop_queue();
      ring = true;
    }
  }
  if (ring) doorbell();
  publish_hints();
  return XmitResult::ok;
}

void AfXdpDevice::doorbell() noexcept {
  doorbells_.add(1);
  if (reserved_) {
    // Publishes the descriptors: libxdp stores the producer index with release semantics,
    // pairing with the kernel's acquire load of it.
    xsk_ring_prod__submit(&xsk_->tx, reserved_);
    reserved_ = 0;
  }
  kick();
  const uint64_t n = pending_.size();
  free_packets(std::move(pending_));  // copied into the UMEM
  completed_.add(n);
  reap();
  last_activity_ns_ = now_ns();
}

void AfXdpDevice::kick() noexcept {
  kick_needed_ = false;
  for (int i = 0; i < kKicksPerDoorbell; ++i) {
    // Zero-copy drivers with need_wakeup clear: the driver is already polling the ring.
    if (zero_copy_ && !xsk_ring_prod__needs_wakeup(&xsk_->tx)) return;
    if (::sendto(xsk_socket__fd(xsk_->socket), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) {
      // Copy mode sends a bounded batch per call: go on while descriptors remain unconsumed.
      if (xsk_prod_nb_free(&xsk_->tx, kRing) >= kRing) return;
      continue;
    }
    if (errno == EAGAIN || errno == EINTR) {
      if (xsk_prod_nb_free(&xsk_->tx, kRing) >= kRing) return;
      continue;  // more to send: the kernel stopped at its per-call budget
    }
    break;  // EBUSY, ENOBUFS, ENETDOWN: the device cannot take more now
  }
  kick_needed_ = xsk_prod_nb_free(&xsk_->tx, kRing) < kRing;
}

void AfXdpDevice::reap() noexcept {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&xsk_->comp, kChunks, &idx);
  if (n == 0) return;
  PacketList done;  // the pool's packets sent from their own buffers
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t addr = *xsk_ring_cons__comp_addr(&xsk_->comp, idx + i);
    if (addr >= pool_bytes_) {
      free_chunks_.push_back(addr);
    } else if (uint8_t& owned = owned_[addr / kChunkSize]; owned) {
      owned = 0;
      done.push_back(pool_->packet_at(addr));
    }  // else: not the device's (never sent, or completed already): nothing to free
  }
  // Hands the slots back: release store of the consumer index (pairs with the kernel's
  // acquire before it reuses them).
  xsk_ring_cons__release(&xsk_->comp, n);
  outstanding_ -= n;
  completed_.add(done.size());
  free_packets(std::move(done));
  if (drv_stopped_ && free_chunks_.size() >= kChunks / 4 &&
      xsk_prod_nb_free(&xsk_->tx, kRing / 4) >= kRing / 4) {
    drv_stopped_ = false;
    wake_queue();
  }
}

// Teardown, after the socket's close: the pool's packets the kernel never completed.
void AfXdpDevice::release_owned() noexcept {
  PacketList left;
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    if (!owned_[i]) continue;
    owned_[i] = 0;
    left.push_back(pool_->packet_at(i * kChunkSize));
  }
  free_packets(std::move(left));
}

int AfXdpDevice::socket_fd() const noexcept { return xsk_socket__fd(xsk_->socket); }

#else  // !TXPATH_HAVE_LIBXDP

struct AfXdpDevice::Xsk {};

AfXdpDevice::AfXdpDevice(const AfXdpConfig& config)
    : ConfiguredDevice(config, spec_of(config)) {
  netif::fail(spec_, "txpath was built without libxdp (install libxdp-dev and libbpf-dev, rebuild)");
}
AfXdpDevice::~AfXdpDevice() = default;
XmitResult AfXdpDevice::xmit(Packet*, bool) noexcept { return XmitResult::busy; }
void AfXdpDevice::doorbell() noexcept {}
void AfXdpDevice::kick() noexcept {}
void AfXdpDevice::reap() noexcept {}
int AfXdpDevice::socket_fd() const noexcept { return -1; }

#endif

void AfXdpDevice::address_frames(FrameSpec& spec) const {
  netif::address_frames(spec, ifc_, cfg_.ifname);
}

void AfXdpDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  if (kick_needed_) kick();
  reap();
  last_activity_ns_ = now_ns();
  publish_hints();
}

void AfXdpDevice::publish_hints() noexcept {
  store_hints(outstanding_,
              kernel_ring_poll_at(outstanding_, kick_needed_, drv_stopped_, last_activity_ns_));
}

std::unique_ptr<Device> make_afxdp_device(const AfXdpConfig& config) {
  return std::make_unique<AfXdpDevice>(config);
}

}  // namespace txpath
