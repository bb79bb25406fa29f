// SPDX-License-Identifier: MIT
#include "bench/real_path.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>

#include "core/file.hpp"
#include "core/text.hpp"
#include "net/testbed.hpp"
#include "txpath/error.hpp"
#include "txpath/real_device.hpp"

namespace txpath::bench_detail {

std::string ipv4_text(uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char buf[INET_ADDRSTRLEN];
  return ::inet_ntop(AF_INET, &a, buf, sizeof buf) ? buf : "?";
}

namespace {

// Sets the kernel row's options on `fd` and connects it to the route's destination. Errors are
// worded as the devices word their own (netif::fail_errno: "device 'WHAT': CALL: strerror").
void connect_socket(int fd, const KernelRoute& route, const std::string& what) {
  const int one = 1;
  const bool v6 = route.addr.ss_family == AF_INET6;
  if (::setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_RECVERR : IP_RECVERR, &one,
                   sizeof one) < 0)
    netif::fail_errno(what, "setsockopt(IP_RECVERR)", errno);
  if (!route.bind_device.empty() &&
      ::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, route.bind_device.c_str(),
                   static_cast<socklen_t>(route.bind_device.size())) < 0)
    netif::fail_errno(what, "setsockopt(SO_BINDTODEVICE)", errno);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&route.addr), route.len) < 0)
    netif::fail_errno(what, "connect", errno);
}

// The kernel row's socket, connected (closed by Fd if anything fails). netif::fail escapes
// `what`, which holds the user's device text.
netif::Fd open_socket(const KernelRoute& route) {
  const std::string what = "kernel row (" + route.text + ")";
  netif::Fd fd(::socket(route.addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) netif::fail_errno(what, "socket(UDP)", errno);
  connect_socket(fd.get(), route, what);
  return fd;
}

}  // namespace

std::optional<KernelRoute> kernel_route(const Device& device, const FrameSpec& spec) {
  KernelRoute r;
  if (const auto peer = socket_peer(device)) {
    r.addr = peer->addr;
    r.len = peer->len;
    r.text = device.describe().substr(4);
    return r;
  }
  if (const std::string ifname = link_interface(device); !ifname.empty()) {
    if (!find_testbed(ifname))
      throw ConfigError("strategy kernel on " + escape_user_text(device.describe()) +
                        ": no testbed on " + escape_user_text(ifname) +
                        " to send to (run `txpath testbed up`, or leave out the kernel row)");
    auto* in = reinterpret_cast<sockaddr_in*>(&r.addr);
    in->sin_family = AF_INET;
    in->sin_port = htons(spec.dst_port);
    in->sin_addr.s_addr = htonl(spec.dst_ip);
    r.len = sizeof(sockaddr_in);
    r.bind_device = ifname;
    r.text = ipv4_text(spec.dst_ip) + ":" + std::to_string(spec.dst_port) + " via " + ifname;
    return r;
  }
  return std::nullopt;
}

KernelSender::KernelSender(const KernelRoute& route) : fd_(open_socket(route)) {}

KernelSender::Result KernelSender::send(std::span<const std::byte> payload) noexcept {
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (::send(fd_.get(), payload.data(), payload.size(), 0) >= 0) return Result::sent;
    // ECONNREFUSED: an ICMP error from an earlier datagram, reported now; this one was not
    // sent, so try again. EINTR likewise. Anything else (ENOBUFS: the qdisc dropped it) is a
    // drop, as the kernel's own counters would say.
    if (errno != ECONNREFUSED && errno != EINTR) break;
  }
  return Result::dropped;
}

void use_zero_copy_pool(const Device& device, SenderPools& pools) {
  // The device holds its pool as long as it lives, which outlasts the run's senders.
  if (const std::shared_ptr<Pool> zero_copy = zero_copy_pool(device)) pools.share(*zero_copy);
}

std::string null_nic_of(const Device& device) {
  const std::string ifname = link_interface(device);
  return !ifname.empty() && find_null_nic(ifname) ? ifname : std::string();
}

std::optional<SinkConfig> resolve_sink(const std::string& text, const Device& device,
                                       const FrameSpec& frames) {
  if (text == "none") return std::nullopt;
  SinkConfig c;
  c.absorb_port = frames.dst_port;
  if (text != "auto") {
    const std::size_t at = text.find('@');
    c.ifname = text.substr(0, at);
    if (at != std::string::npos) c.netns = text.substr(at + 1);
    if (c.ifname.empty() || (at != std::string::npos && c.netns.empty()))
      throw ConfigError("--sink: expected auto, none, IFNAME or IFNAME@NETNS, not " + txpath::quoted(text));
    return c;
  }
  std::optional<TestbedInfo> tb;
  if (const std::string ifname = link_interface(device); !ifname.empty()) {
    tb = find_testbed(ifname);
  } else if (socket_peer(device)) {
    tb = find_testbed(TestbedConfig{}.host_if);
    if (tb && tb->peer_ip != frames.dst_ip) tb.reset();
  }
  // An ifb testbed (a null NIC) has no peer to listen on: its own counter checks delivery.
  if (!tb || tb->config.kind == TestbedKind::ifb) return std::nullopt;
  c.ifname = tb->config.peer_if;
  c.netns = tb->config.netns;
  return c;
}

void AbandonOutput::operator()(Device* device) const noexcept {
  abandon_output(*device);
  delete device;  // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

ProbeDevice make_probe_device(const std::string& spec) { return ProbeDevice(make_device(spec).release()); }

std::string finish_output(Device& device) {
  try {
    txpath::finish_output(device);
  } catch (const FileError& e) {
    return e.what();
  }
  return {};
}

}  // namespace txpath::bench_detail
