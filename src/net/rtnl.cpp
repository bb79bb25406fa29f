// SPDX-License-Identifier: MIT
// The testbed's rtnetlink requests through libnl-route-3 (see rtnl.hpp).
//
// Origin: txpath issue 30 (item 6), from rtnetlink(7), netlink(7) (NETLINK_EXT_ACK,
// NETLINK_CAP_ACK) and the libnl-route-3 API documentation. Each libnl object is held by a
// unique_ptr with libnl's put/free as its deleter; the kernel's errno reaches the caller through
// an error callback on the socket (libnl's own return codes fold several errnos into one), read
// once per request. Not a hot path; no atomics.
#include "net/rtnl.hpp"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <net/if.h>
#include <sys/socket.h>

#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>

#include <cerrno>
#include <cstring>

#include "core/text.hpp"
#include "net/netns.hpp"
#include "txpath/error.hpp"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace txpath::net {

namespace {

template <auto Free>
struct LibnlDeleter {
  template <class T>
  void operator()(T* object) const noexcept {
    Free(object);
  }
};

using SocketPtr = std::unique_ptr<nl_sock, LibnlDeleter<nl_socket_free>>;
using LinkPtr = std::unique_ptr<rtnl_link, LibnlDeleter<rtnl_link_put>>;
using CachePtr = std::unique_ptr<nl_cache, LibnlDeleter<nl_cache_free>>;
using AddrPtr = std::unique_ptr<nl_addr, LibnlDeleter<nl_addr_put>>;
using IfAddrPtr = std::unique_ptr<rtnl_addr, LibnlDeleter<rtnl_addr_put>>;
using NeighPtr = std::unique_ptr<rtnl_neigh, LibnlDeleter<rtnl_neigh_put>>;
using QdiscPtr = std::unique_ptr<rtnl_qdisc, LibnlDeleter<rtnl_qdisc_put>>;

// The kernel's extended-ack text (NLMSGERR_ATTR_MSG) of an error message, "" if it sent none.
// With NETLINK_CAP_ACK the request is not echoed: the attributes follow struct nlmsgerr.
std::string extack_text(const nlmsgerr* err) {
  const auto* hdr =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(err) - NLMSG_HDRLEN);
  if ((hdr->nlmsg_flags & NLM_F_ACK_TLVS) == 0) return {};
  std::size_t used = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nlmsgerr));
  if ((hdr->nlmsg_flags & NLM_F_CAPPED) == 0) used += NLMSG_ALIGN(err->msg.nlmsg_len - NLMSG_HDRLEN);
  if (hdr->nlmsg_len <= used) return {};
  const auto* attrs = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(hdr) + used);
  const nlattr* msg = nla_find(attrs, static_cast<int>(hdr->nlmsg_len - used), NLMSGERR_ATTR_MSG);
  if (msg == nullptr || nla_len(msg) <= 0) return {};
  const char* text = static_cast<const char*>(nla_data(msg));
  return std::string(text, ::strnlen(text, static_cast<std::size_t>(nla_len(msg))));
}

}  // namespace

struct RtnlSocket::Impl {
  SocketPtr socket;
  int kernel_errno = 0;      // of the last request the kernel refused
  std::string kernel_detail; // its extended-ack text

  static int on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
    auto* self = static_cast<Impl*>(arg);
    self->kernel_errno = -err->error;
    self->kernel_detail = extack_text(err);
    return NL_STOP;  // libnl returns its own code for it; ours is kept above
  }

  // Before a request: forget the last refusal.
  nl_sock* fresh() {
    kernel_errno = 0;
    kernel_detail.clear();
    return socket.get();
  }

  // The outcome of a libnl call that returned `rc` (negative: a libnl error code).
  RtnlOutcome outcome(int rc) const {
    if (rc >= 0) return {};
    if (kernel_errno > 0) {
      std::string text = std::strerror(kernel_errno);
      if (!kernel_detail.empty()) text += " (" + kernel_detail + ")";
      return {kernel_errno, text};
    }
    return {0, std::string("libnl: ") + nl_geterror(rc)};
  }

  // The kernel's view of the interface `name`, found in an RTM_GETLINK dump (not by
  // rtnl_link_get_kernel(): its reply handler replaces our error callback, so only libnl's
  // folded code would come back). Not listed: ENODEV, what the kernel answers for a missing name.
  RtnlOutcome get(const std::string& name, LinkPtr& out) {
    out.reset();
    if (RtnlOutcome o = check_name(name); !o.ok()) return o;
    nl_cache* raw = nullptr;
    const int rc = rtnl_link_alloc_cache(fresh(), AF_UNSPEC, &raw);
    const CachePtr cache(raw);
    if (rc < 0) return outcome(rc);
    out.reset(rtnl_link_get_by_name(cache.get(), name.c_str()));  // a reference of its own
    if (!out) return {ENODEV, std::strerror(ENODEV)};
    return {};
  }

  // libnl copies a name into IFNAMSIZ bytes, cutting a longer one: that would name another
  // interface, so such a name is refused here, as the kernel would refuse it (EINVAL).
  static RtnlOutcome check_name(const std::string& name) {
    if (name.size() < IFNAMSIZ) return {};
    return {EINVAL, std::string(std::strerror(EINVAL)) + " (interface name longer than " +
                        std::to_string(IFNAMSIZ - 1) + " bytes)"};
  }

  // Sends `changes` for the interface `name` (RTM_NEWLINK/RTM_SETLINK on its index).
  RtnlOutcome change(const std::string& name, rtnl_link* changes) {
    LinkPtr orig;
    if (RtnlOutcome o = get(name, orig); !o.ok()) return o;
    return outcome(rtnl_link_change(fresh(), orig.get(), changes, 0));
  }
};

namespace {

void connect_rtnl(RtnlSocket::Impl& impl, const std::string& context) {
  impl.socket.reset(nl_socket_alloc());
  if (!impl.socket) throw DeviceError(context + ": rtnetlink socket: out of memory");
  if (const int rc = nl_connect(impl.socket.get(), NETLINK_ROUTE); rc < 0)
    throw DeviceError(context + ": rtnetlink socket: " + nl_geterror(rc));
  const int fd = nl_socket_get_fd(impl.socket.get());
  const int one = 1;
  // Best effort: without them the errno still comes, only the kernel's explanation does not.
  (void)::setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  (void)::setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  nl_socket_modify_err_cb(impl.socket.get(), NL_CB_CUSTOM, &RtnlSocket::Impl::on_error, &impl);
}

// Name, MTU and queue counts of a new interface (or of a veth's peer) into its link object.
void fill_new_link(rtnl_link* link, const NewLink& spec) {
  rtnl_link_set_name(link, spec.name.c_str());
  rtnl_link_set_mtu(link, spec.mtu);
  if (spec.queues > 1) {
    rtnl_link_set_num_tx_queues(link, spec.queues);
    rtnl_link_set_num_rx_queues(link, spec.queues);
  }
  if (spec.txqueuelen != 0) rtnl_link_set_txqlen(link, spec.txqueuelen);
}

const RtnlOutcome kOutOfMemory{ENOMEM, std::strerror(ENOMEM)};

}  // namespace

void throw_if_refused(const RtnlOutcome& outcome, const std::string& context,
                      const std::string& what) {
  if (!outcome.ok())
    throw DeviceError(context + ": " + escape_user_text(what) + ": " + escape_user_text(outcome.text));
}

RtnlSocket::RtnlSocket(const std::string& netns, const std::string& context,
                       const std::function<void(int errno_value)>& on_netns_error)
    : impl_(std::make_unique<Impl>()) {
  in_netns(netns, [&] { connect_rtnl(*impl_, context); }, on_netns_error);
}

RtnlSocket::~RtnlSocket() = default;

RtnlOutcome RtnlSocket::list_links(std::vector<RtnlLink>& out) {
  out.clear();
  nl_cache* raw = nullptr;
  const int rc = rtnl_link_alloc_cache(impl_->fresh(), AF_UNSPEC, &raw);
  const CachePtr cache(raw);
  if (rc < 0) return impl_->outcome(rc);
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* link = reinterpret_cast<rtnl_link*>(o);
    RtnlLink entry;
    entry.index = rtnl_link_get_ifindex(link);
    if (const char* name = rtnl_link_get_name(link)) entry.name = name;
    if (const char* alias = rtnl_link_get_ifalias(link)) entry.alias = alias;
    out.push_back(std::move(entry));
  }
  return {};
}

RtnlOutcome RtnlSocket::link_index(const std::string& name, int& index) {
  LinkPtr link;
  RtnlOutcome o = impl_->get(name, link);
  index = o.ok() && link ? rtnl_link_get_ifindex(link.get()) : 0;
  return o;
}

RtnlOutcome RtnlSocket::add_veth(const NewLink& host, const NewLink& peer, int peer_netns_fd) {
  for (const std::string* name : {&host.name, &peer.name})
    if (RtnlOutcome o = Impl::check_name(*name); !o.ok()) return o;
  const LinkPtr link(rtnl_link_veth_alloc());
  if (!link) return kOutOfMemory;
  const LinkPtr peer_link(rtnl_link_veth_get_peer(link.get()));  // our own reference
  if (!peer_link) return kOutOfMemory;
  fill_new_link(link.get(), host);
  fill_new_link(peer_link.get(), peer);
  rtnl_link_set_ns_fd(peer_link.get(), peer_netns_fd);
  return impl_->outcome(rtnl_link_add(impl_->fresh(), link.get(), NLM_F_CREATE | NLM_F_EXCL));
}

RtnlOutcome RtnlSocket::add_link(const NewLink& spec, const std::string& kind) {
  if (RtnlOutcome o = Impl::check_name(spec.name); !o.ok()) return o;
  const LinkPtr link(rtnl_link_alloc());
  if (!link) return kOutOfMemory;
  if (const int rc = rtnl_link_set_type(link.get(), kind.c_str()); rc < 0)
    return impl_->outcome(rc);
  fill_new_link(link.get(), spec);
  return impl_->outcome(rtnl_link_add(impl_->fresh(), link.get(), NLM_F_CREATE | NLM_F_EXCL));
}

RtnlOutcome RtnlSocket::set_alias(const std::string& name, const std::string& alias) {
  const LinkPtr changes(rtnl_link_alloc());
  if (!changes) return kOutOfMemory;
  rtnl_link_set_ifalias(changes.get(), alias.c_str());
  return impl_->change(name, changes.get());
}

RtnlOutcome RtnlSocket::set_up(const std::string& name) {
  const LinkPtr changes(rtnl_link_alloc());
  if (!changes) return kOutOfMemory;
  rtnl_link_set_flags(changes.get(), IFF_UP);
  return impl_->change(name, changes.get());
}

RtnlOutcome RtnlSocket::delete_link(const std::string& name) {
  if (RtnlOutcome o = Impl::check_name(name); !o.ok()) return o;
  const LinkPtr link(rtnl_link_alloc());
  if (!link) return kOutOfMemory;
  rtnl_link_set_name(link.get(), name.c_str());  // RTM_DELLINK by IFLA_IFNAME
  return impl_->outcome(rtnl_link_delete(impl_->fresh(), link.get()));
}

RtnlOutcome RtnlSocket::replace_ipv4_address(const std::string& name, uint32_t ip, int prefix) {
  int index = 0;
  if (RtnlOutcome o = link_index(name, index); !o.ok()) return o;
  const uint32_t wire = htonl(ip);
  const AddrPtr local(nl_addr_build(AF_INET, &wire, sizeof wire));
  const IfAddrPtr addr(rtnl_addr_alloc());
  if (!local || !addr) return kOutOfMemory;
  nl_addr_set_prefixlen(local.get(), prefix);
  rtnl_addr_set_ifindex(addr.get(), index);
  rtnl_addr_set_family(addr.get(), AF_INET);
  if (const int rc = rtnl_addr_set_local(addr.get(), local.get()); rc < 0)
    return impl_->outcome(rc);
  rtnl_addr_set_prefixlen(addr.get(), prefix);
  return impl_->outcome(rtnl_addr_add(impl_->fresh(), addr.get(), NLM_F_CREATE | NLM_F_REPLACE));
}

RtnlOutcome RtnlSocket::replace_neighbour(const std::string& name, uint32_t ip,
                                          const std::array<uint8_t, 6>& mac) {
  int index = 0;
  if (RtnlOutcome o = link_index(name, index); !o.ok()) return o;
  const uint32_t wire = htonl(ip);
  const AddrPtr dst(nl_addr_build(AF_INET, &wire, sizeof wire));
  const AddrPtr lladdr(nl_addr_build(AF_LLC, mac.data(), mac.size()));
  const NeighPtr neigh(rtnl_neigh_alloc());
  if (!dst || !lladdr || !neigh) return kOutOfMemory;
  rtnl_neigh_set_ifindex(neigh.get(), index);
  rtnl_neigh_set_family(neigh.get(), AF_INET);
  if (const int rc = rtnl_neigh_set_dst(neigh.get(), dst.get()); rc < 0)
    return impl_->outcome(rc);
  rtnl_neigh_set_lladdr(neigh.get(), lladdr.get());
  rtnl_neigh_set_state(neigh.get(), NUD_PERMANENT);
  return impl_->outcome(rtnl_neigh_add(impl_->fresh(), neigh.get(), NLM_F_CREATE | NLM_F_REPLACE));
}

RtnlOutcome RtnlSocket::replace_root_mq(const std::string& name, uint32_t major) {
  int index = 0;
  if (RtnlOutcome o = link_index(name, index); !o.ok()) return o;
  const QdiscPtr qdisc(rtnl_qdisc_alloc());
  if (!qdisc) return kOutOfMemory;
  rtnl_tc* tc = TC_CAST(qdisc.get());
  rtnl_tc_set_ifindex(tc, index);
  rtnl_tc_set_parent(tc, TC_H_ROOT);
  rtnl_tc_set_handle(tc, TC_H_MAKE(major << 16, 0));
  if (const int rc = rtnl_tc_set_kind(tc, "mq"); rc < 0) return impl_->outcome(rc);
  return impl_->outcome(
      rtnl_qdisc_add(impl_->fresh(), qdisc.get(), NLM_F_CREATE | NLM_F_REPLACE));
}

}  // namespace txpath::net
