// SPDX-License-Identifier: MIT
#include "device/tun_device.hpp"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "base/clock.hpp"
#include "device/netif.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// A short hint after the errno text for the causes a user can fix.
std::string hint(int err, std::string_view what) {
  std::string s = std::strerror(err);
  if (err == EPERM || err == EACCES) {
    s += what == "TUNSETIFF"
             ? " (needs root or CAP_NET_ADMIN, or the tun belongs to another user)"
             : " (needs root or CAP_NET_ADMIN)";
  } else if (err == ENOENT && what == "open") {
    s += " (no TUN support: load the tun module)";
  } else if (err == EBUSY && what == "TUNSETIFF") {
    s += " (the tun is already attached to another process)";
  } else if (err == EINVAL && what == "TUNSETIFF") {
    s += " (an interface of that name exists and is not a tun, or is a tun of the other queue "
         "mode: single- or multi-queue, or has as many queues as it may)";
  }
  return s;
}

// Linux's rule for interface names (dev_valid_name): 1..IFNAMSIZ-1 bytes, not "." or "..",
// no '/', ':' or whitespace. Empty string if valid, else the problem.
std::string name_problem(const std::string& name) {
  if (name.empty()) return "empty interface name";
  if (name.size() >= IFNAMSIZ) {
    return "interface name longer than " + std::to_string(IFNAMSIZ - 1) + " characters";
  }
  if (name == "." || name == "..") return "invalid interface name";
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) ||
        static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "invalid character in interface name";
    }
  }
  return {};
}

}  // namespace

struct TunDevice::Opened {
  std::string ifname;
  int fd = -1;
  uint32_t mtu = 1500;
};

TunDevice::TunDevice(const TunConfig& config, WriteFn write)
    : TunDevice(open_tun(config), std::move(write)) {}

TunDevice::TunDevice(Opened&& o, WriteFn write)
    : PolledDevice(o.mtu),
      ifname_(std::move(o.ifname)),
      fd_(o.fd),
      write_(write ? std::move(write) : WriteFn([](int fd, const void* buf, std::size_t len) {
        return ::write(fd, buf, len);
      })) {}

TunDevice::Opened TunDevice::open_tun(const TunConfig& config) {
  const std::string spec = "device 'tun:" + printable(config.ifname) + "': ";
  if (std::string problem = name_problem(config.ifname); !problem.empty()) {
    throw DeviceError(spec + problem);
  }
  netif::Fd fd(::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw DeviceError(spec + "cannot open /dev/net/tun: " + hint(errno, "open"));

  ifreq ifr{};
  std::memcpy(ifr.ifr_name, config.ifname.data(), config.ifname.size());  // checked < IFNAMSIZ
  // IFF_MULTI_QUEUE: each descriptor opened with it is one queue of the interface (the first
  // creates it, the others attach); without it, the single-queue tun of a plain tun:IFNAME.
  ifr.ifr_flags =
      static_cast<short>(IFF_TUN | IFF_NO_PI | (config.multi_queue ? IFF_MULTI_QUEUE : 0));
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0) {
    throw DeviceError(spec + "TUNSETIFF: " + hint(errno, "TUNSETIFF"));
  }
  TunDevice::Opened o;
  o.ifname.assign(ifr.ifr_name, strnlen(ifr.ifr_name, IFNAMSIZ));  // the kernel's name for it

  // Up, and its MTU: netdevice(7) ioctls on any AF_INET socket.
  netif::Fd ctl(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (ctl.get() < 0) throw DeviceError(spec + "socket(AF_INET): " + std::strerror(errno));
  ifreq q{};
  std::memcpy(q.ifr_name, ifr.ifr_name, IFNAMSIZ);
  if (::ioctl(ctl.get(), SIOCGIFFLAGS, &q) < 0) {
    throw DeviceError(spec + "SIOCGIFFLAGS: " + hint(errno, "SIOCGIFFLAGS"));
  }
  if ((q.ifr_flags & IFF_UP) == 0) {
    q.ifr_flags = static_cast<short>(q.ifr_flags | IFF_UP);
    if (::ioctl(ctl.get(), SIOCSIFFLAGS, &q) < 0) {
      throw DeviceError(spec + "cannot bring the interface up: " + hint(errno, "SIOCSIFFLAGS"));
    }
  }
  ifreq m{};
  std::memcpy(m.ifr_name, ifr.ifr_name, IFNAMSIZ);
  if (::ioctl(ctl.get(), SIOCGIFMTU, &m) < 0) {
    throw DeviceError(spec + "SIOCGIFMTU: " + hint(errno, "SIOCGIFMTU"));
  }
  if (m.ifr_mtu < 68) {
    throw DeviceError(spec + "MTU " + std::to_string(m.ifr_mtu) + " is below the IPv4 minimum 68");
  }
  o.mtu = static_cast<uint32_t>(m.ifr_mtu);
  o.fd = fd.release();
  return o;
}

TunDevice::~TunDevice() {
  // Nobody else can hold tx_lock now. One last non-blocking attempt; whatever the kernel still
  // refuses was accepted and never sent: a tx error. blocked_ is cleared first so that flush()
  // does not call the wake handler of a queue that is gone.
  blocked_ = false;
  if (!pending_.empty()) flush(now_ns());
  if (!pending_.empty()) {
    const uint64_t n = pending_.size();
    tx_errors_.add(n);
    free_packets(std::move(pending_));
    completed_.add(n);
  }
  ::close(fd_);  // a non-persistent tun disappears with its last descriptor
}

XmitResult TunDevice::xmit(Packet* p, bool more) noexcept {
  if (blocked_) {
    // Stopped on EAGAIN: what is pending was announced already (poll() retries it).
    busy_.add(1);
    return XmitResult::busy;
  }
  if (drop_overlong(p)) [[unlikely]] {  // never written: not a frame we can send
    if (!more && !pending_.empty()) {
      doorbells_.add(1);
      flush(0);
    } else {
      publish_hints();
    }
    return XmitResult::ok;
  }
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  pending_.push_back(p);
  if (!more || pending_.size() >= kMaxPending) {
    doorbells_.add(1);
    flush(0);
  } else {
    publish_hints();
  }
  return XmitResult::ok;
}

void TunDevice::flush(uint64_t now) noexcept {
  PacketList done;
  bool again = false;
  while (Packet* p = pending_.front()) {
    if (p->len <= kEthHeaderLen) {  // no IP packet behind the Ethernet header
      pending_.pop_front();
      tx_errors_.add(1);
      last_errno_ = EINVAL;
      done.push_back(p);
      continue;
    }
    const std::size_t ip_len = p->len - kEthHeaderLen;
    const ssize_t n = write_(fd_, p->data + kEthHeaderLen, ip_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      again = true;
      break;
    }
    pending_.pop_front();
    if (n < 0 || static_cast<std::size_t>(n) != ip_len) {
      tx_errors_.add(1);
      last_errno_ = n < 0 ? errno : EIO;
    }
    done.push_back(p);
  }

  if (again) {
    if (!blocked_) {
      blocked_ = true;
      stop_queue();  // the driver loop requeues the rest of its batch
    }
    retry_at_ = (now != 0 ? now : now_ns()) + kRetryNs;
  } else if (blocked_) {
    blocked_ = false;
    wake_queue();  // everything pending is written: the queue may run again
  }
  if (!done.empty()) {
    const uint64_t n = done.size();
    free_packets(std::move(done));  // the kernel copied the data: complete at once
    completed_.add(n);
  }
  publish_hints();
}

void TunDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  if (!blocked_) return;
  const uint64_t now = now_ns();
  if (now < retry_at_) return;
  flush(now);
}

void TunDevice::publish_hints() noexcept { store_hints(pending_.size(), blocked_ ? retry_at_ : 0); }

std::unique_ptr<Device> make_tun_device(const TunConfig& config) {
  return std::make_unique<TunDevice>(config);
}

}  // namespace txpath
