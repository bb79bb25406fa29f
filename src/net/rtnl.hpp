// SPDX-License-Identifier: MIT
// Private to src/net: the rtnetlink requests the testbed makes (links, addresses, neighbours, an
// mq root qdisc), through libnl-route-3, on a socket of one network namespace.
//
// Origin: txpath issue 30 (item 6), written from rtnetlink(7), netlink(7) and the libnl-route-3
// API documentation (https://www.infradead.org/~tgr/libnl/doc/route.html). No libnl type
// appears here: the libnl objects live in rtnl.cpp, each owned by a unique_ptr whose deleter is
// libnl's own put/free function.
// Errors: a refused request is never thrown here; it comes back as an RtnlOutcome carrying the
// kernel's errno and its strerror(3) text (plus the kernel's extended-ack message, if it sent
// one), so that the caller writes its own one-line message. Nothing here parses text.
// Threads: an RtnlSocket is used by one thread at a time. Opening one for a named namespace runs
// on a short-lived thread that setns()'s into it (net::in_netns); the socket stays in that
// namespace, the caller's thread never moves. Not a hot path; no atomics.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace txpath::net {

// What became of one request. ok(): the kernel accepted it. Otherwise `error` is the kernel's
// errno (0 when libnl itself failed, e.g. out of memory) and `text` says why in one line.
struct RtnlOutcome {
  int error = 0;
  std::string text;
  bool ok() const { return text.empty(); }
};

// Throws DeviceError "CONTEXT: WHAT: WHY" (one line; WHAT and WHY escaped, they may carry user
// text) when the request was refused; returns otherwise.
void throw_if_refused(const RtnlOutcome& outcome, const std::string& context,
                      const std::string& what);

// One interface as the kernel lists it.
struct RtnlLink {
  int index = 0;
  std::string name;
  std::string alias;  // IFLA_IFALIAS; "" when it has none
};

// A new interface: its name, MTU and TX/RX queue count (1: the kernel's default, not sent).
struct NewLink {
  std::string name;
  uint32_t mtu = 1500;
  uint32_t queues = 1;
  uint32_t txqueuelen = 0;  // 0: the driver's default
};

class RtnlSocket {
 public:
  // A NETLINK_ROUTE socket of the calling thread's namespace (netns "") or of the named one
  // (/run/netns/NAME). A namespace that cannot be entered: calls on_netns_error(errno), which
  // throws. A socket that cannot be made: throws DeviceError "<context>: rtnetlink socket: why".
  RtnlSocket(const std::string& netns, const std::string& context,
             const std::function<void(int errno_value)>& on_netns_error);
  ~RtnlSocket();
  RtnlSocket(const RtnlSocket&) = delete;
  RtnlSocket& operator=(const RtnlSocket&) = delete;

  RtnlOutcome list_links(std::vector<RtnlLink>& out);
  RtnlOutcome link_index(const std::string& name, int& index);  // ENODEV: no such interface
  // A veth pair: `host` here, `peer` moved at creation into the namespace open as peer_netns_fd.
  RtnlOutcome add_veth(const NewLink& host, const NewLink& peer, int peer_netns_fd);
  RtnlOutcome add_link(const NewLink& link, const std::string& kind);  // e.g. kind "ifb"
  RtnlOutcome set_alias(const std::string& name, const std::string& alias);
  RtnlOutcome set_up(const std::string& name);
  RtnlOutcome delete_link(const std::string& name);
  // The IPv4 address ip/prefix (host byte order) on `name`, created or replaced (NLM_F_REPLACE).
  RtnlOutcome replace_ipv4_address(const std::string& name, uint32_t ip, int prefix);
  // A permanent neighbour entry ip -> mac on `name`, created or replaced.
  RtnlOutcome replace_neighbour(const std::string& name, uint32_t ip,
                                const std::array<uint8_t, 6>& mac);
  // mq as the root qdisc of `name`, handle major:0, created or replaced.
  RtnlOutcome replace_root_mq(const std::string& name, uint32_t major);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace txpath::net
