// SPDX-License-Identifier: MIT
#include "device/udp_device.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/clock.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

constexpr uint64_t kRetryNs = 10'000;  // poll() retries a refused send this soon
constexpr int kSndBuf = 4 << 20;

bool transient(int err) noexcept {
  return err == EAGAIN || err == ENOBUFS || err == ECONNREFUSED || err == EINTR;
}

// The configuration as a --device spec (describe()).
std::string spec_of(const UdpConfig& c) {
  const bool v6 = c.host.find(':') != std::string::npos;
  std::string s = "udp:" + (v6 ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port);
  if (c.batch != UdpConfig{}.batch) s += ",batch=" + std::to_string(c.batch);
  return s;
}

}  // namespace

UdpDevice::UdpDevice(const UdpConfig& config)
    : ConfiguredDevice(config, spec_of(config)) {
  if (cfg_.batch < 1 || cfg_.batch > 1024)
    netif::fail(spec_, "batch=" + std::to_string(cfg_.batch) + " is out of range [1, 1024]");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(cfg_.port);
  if (const int rc = ::getaddrinfo(cfg_.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    netif::fail(spec_, "cannot resolve '" + cfg_.host + "': " + ::gai_strerror(rc));
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
  fd_ = netif::Fd(::socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) netif::fail_errno(spec_, "socket(UDP)", errno);
  const int one = 1;
  // IP_RECVERR: a qdisc drop is reported as ENOBUFS instead of being hidden, so that the
  // packet can be retried (busy) rather than silently lost.
  const int level = res->ai_family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
  const int opt = res->ai_family == AF_INET6 ? IPV6_RECVERR : IP_RECVERR;
  if (::setsockopt(fd_.get(), level, opt, &one, sizeof one) < 0)
    netif::fail_errno(spec_, "setsockopt(IP_RECVERR)", errno);
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUFFORCE, &kSndBuf, sizeof kSndBuf) < 0)
    (void)::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &kSndBuf, sizeof kSndBuf);
  if (::connect(fd_.get(), res->ai_addr, res->ai_addrlen) < 0)
    netif::fail_errno(spec_, "connect", errno);
  std::memcpy(&remote_, res->ai_addr, res->ai_addrlen);
  remote_len_ = res->ai_addrlen;
  if (res->ai_family == AF_INET) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local), &len) == 0)
      local_ip_ = ntohl(local.sin_addr.s_addr);
    remote_ip_ = ntohl(reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr.s_addr);
  }
  staged_.assign(cfg_.batch, nullptr);
  msgs_.assign(cfg_.batch, mmsghdr{});
  iov_.assign(cfg_.batch, iovec{});
  for (uint32_t i = 0; i < cfg_.batch; ++i) {
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
}

UdpDevice::~UdpDevice() {
  std::lock_guard lock(tx_lock());
  if (count_ > first_) flush();
  // Whatever the kernel still refuses is freed (counted as tx errors: accepted, never sent).
  PacketList rest;
  for (uint32_t i = first_; i < count_; ++i) rest.push_back(staged_[i]);
  tx_errors_.add(rest.size());
  completed_.add(rest.size());
  free_packets(std::move(rest));
}

void UdpDevice::address_frames(FrameSpec& spec) const {
  spec.dst_port = cfg_.port;
  if (remote_ip_) spec.dst_ip = remote_ip_;
  if (local_ip_) spec.src_ip = local_ip_;
}

bool UdpDevice::flush() noexcept {
  last_try_ns_ = now_ns();
  while (first_ < count_) {
    const int n = ::sendmmsg(fd_.get(), &msgs_[first_], count_ - first_, MSG_DONTWAIT);
    PacketList done;
    if (n > 0) {
      for (int i = 0; i < n; ++i) done.push_back(staged_[first_ + static_cast<uint32_t>(i)]);
      first_ += static_cast<uint32_t>(n);
    } else {
      const int err = n < 0 ? errno : EAGAIN;
      if (transient(err)) {
        retry_ = true;
        return false;
      }
      // Refused for good (EMSGSIZE, EHOSTUNREACH, ENETUNREACH, EPERM, ...): this one message.
      done.push_back(staged_[first_++]);
      tx_errors_.add(1);
    }
    completed_.add(done.size());
    free_packets(std::move(done));
  }
  first_ = count_ = 0;
  retry_ = false;
  return true;
}

XmitResult UdpDevice::xmit(Packet* p, bool more) noexcept {
  if (drop_overlong(p)) [[unlikely]] {  // no datagram: its bytes past the buffer are the heap's
    if (!more && count_ > first_) {
      doorbells_.add(1);
      flush();
    }
    publish_hints();
    return XmitResult::ok;
  }
  if (count_ == cfg_.batch) {
    // The stage is full (an earlier flush was refused, or the batch limit): send it first.
    if (!flush() && first_ > 0) {
      // Compact what is left to the front so the stage has room again.
      const uint32_t left = count_ - first_;
      for (uint32_t i = 0; i < left; ++i) {
        staged_[i] = staged_[first_ + i];
        iov_[i] = iov_[first_ + i];
      }
      first_ = 0;
      count_ = left;
    }
    if (count_ == cfg_.batch) {
      drv_stopped_ = true;
      stop_queue();
      busy_.add(1);
      publish_hints();
      return XmitResult::busy;
    }
  }
  if (p->len < kHeadersLen) {  // not an Ethernet/IPv4/UDP frame: nothing to send
    tx_packets_.add(1);
    tx_bytes_.add(p->len);
    tx_errors_.add(1);
    completed_.add(1);
    PacketList one;
    one.push_back(p);
    free_packets(std::move(one));
    if (!more && count_ > first_) {
      doorbells_.add(1);
      flush();
    }
    publish_hints();
    return XmitResult::ok;
  }
  staged_[count_] = p;
  iov_[count_].iov_base = p->data + kHeadersLen;
  iov_[count_].iov_len = p->len - kHeadersLen;
  ++count_;
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  if (!more || count_ == cfg_.batch) {
    doorbells_.add(1);
    flush();
  }
  publish_hints();
  return XmitResult::ok;
}

void UdpDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  if (count_ > first_) flush();
  if (drv_stopped_ && count_ < cfg_.batch) {
    drv_stopped_ = false;
    wake_queue();
  }
  publish_hints();
}

void UdpDevice::publish_hints() noexcept {
  store_hints(count_ - first_, retry_ || drv_stopped_ ? last_try_ns_ + kRetryNs : 0);
}

std::unique_ptr<Device> make_udp_device(const UdpConfig& config) {
  return std::make_unique<UdpDevice>(config);
}

}  // namespace txpath
