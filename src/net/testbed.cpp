// SPDX-License-Identifier: MIT
// The testbeds (see testbed.hpp): make and remove links, addresses and neighbours over rtnetlink
// (net/rtnl.hpp, libnl-route-3), named namespaces as ip-netns(8) does (net/netns.hpp), the host
// end's qdiscs (net/testbed_qdisc.hpp), read the MACs, and record what they made under
// /run/txpath/testbed/ (net/testbed_state.hpp).
//
// Origin: txpath issue 5, from ip-link(8), ip-netns(8), ip-neighbour(8), tc(8) and veth(4);
// ownership (only what it made is touched) from issue 12; multi-queue ends under mq (tc-mq(8))
// and the ifb null NIC (drivers/net/ifb.c) from issue 14; rtnetlink instead of running `ip`
// (rtnetlink(7)) from issue 30.
// Invariants: names and addresses are validated before anything is asked of the kernel; every
// refused request becomes one DeviceError line saying what was asked and the kernel's errno
// text (both escaped), never text parsed from a tool; nothing is deleted unless a record says
// the testbed made it AND the object still carries the proof: an interface its alias
// "txpath-testbed ID", a namespace its cookie (or inode). A namespace that holds interfaces the
// testbed did not make is never deleted. Every name already in use that is not ours is refused
// before any change. A failed testbed_up() removes what it created. up and down serialise on
// the state directory's flock. Not a hot path; no atomics (the namespace work runs on joined
// threads, see netns.hpp). An ifb testbed has no namespace: no namespace check or removal runs
// for one (an empty name would test /run/netns/ itself).
#include "net/testbed.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/text.hpp"
#include "net/interface_counters.hpp"
#include "net/mac.hpp"
#include "net/netns.hpp"
#include "net/rtnl.hpp"
#include "net/testbed_qdisc.hpp"
#include "net/testbed_state.hpp"
#include "txpath/error.hpp"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71  // Linux 5.14+; older headers lack the name
#endif

namespace txpath {

namespace {

using net::mac_text;
using net::parse_mac;
using net::StateDir;
using net::TestbedRecord;

using net::RtnlSocket;
using net::throw_if_refused;

// The kernel refused `what`: one DeviceError line with its errno text.
void must(const net::RtnlOutcome& outcome, const std::string& what) {
  throw_if_refused(outcome, "testbed", what);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool host_if_exists(const std::string& ifname) { return exists("/sys/class/net/" + ifname); }
bool netns_exists(const std::string& netns) { return exists("/run/netns/" + netns); }

// The alias of a host-namespace interface (IFLA_IFALIAS, world-readable in sysfs); "" if none.
std::string host_alias(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/ifalias");
  std::string s;
  std::getline(in, s);
  return s;
}

// Parses a.b.c.d/len; returns false if it is not one.
bool parse_cidr(const std::string& s, uint32_t& ip, int& prefix) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) return false;
  const std::string addr = s.substr(0, slash);
  const std::string len = s.substr(slash + 1);
  in_addr a{};
  if (::inet_pton(AF_INET, addr.c_str(), &a) != 1) return false;
  if (len.empty() || len.size() > 2) return false;
  prefix = 0;
  for (const char c : len) {
    if (c < '0' || c > '9') return false;
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix < 1 || prefix > 32) return false;
  ip = ntohl(a.s_addr);
  return true;
}

std::string ip_string(uint32_t ip) {
  in_addr a{};
  a.s_addr = htonl(ip);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Validated {
  uint32_t host_ip = 0, peer_ip = 0;
};

// Interface and netns names: the netns.hpp character set (a subset of what the kernel allows:
// no '/', ':', '%', whitespace, control or non-ASCII bytes), and no leading '.' or '-' (a
// hidden state file, or an option to `ip`).
void check_name(const char* what, const std::string& name, bool valid, const char* rule) {
  if (!valid || name[0] == '.' || name[0] == '-')
    throw ConfigError(std::string("testbed: ") + what + " name " + txpath::quoted(name) +
                      " is not " + rule +
                      " characters of A-Z a-z 0-9 _ . - (not starting with . or -)");
}

bool is_veth(const TestbedConfig& c) { return c.kind == TestbedKind::veth; }

// An ifb's target must be routed through the ifb: inside the host address's subnet, and neither
// its network nor its broadcast address (a UDP socket may not send to that without
// SO_BROADCAST). Anything else would leave through another interface.
void check_target(const std::string& host_addr, uint32_t host_ip, int prefix, uint32_t target) {
  const uint32_t mask = prefix == 32 ? ~0u : ~(~0u >> prefix);
  const uint32_t net = host_ip & mask;
  if ((target & mask) != net || (prefix <= 30 && (target == net || target == (net | ~mask))))
    throw ConfigError("testbed: target address " + ip_string(target) +
                      " is not a host address in the subnet of " + txpath::quoted(host_addr) +
                      " (an ifb testbed's target must be sent to through the ifb)");
}

Validated validate(const TestbedConfig& c) {
  check_name("host interface", c.host_if, net::valid_ifname(c.host_if), "1..15");
  if (is_veth(c)) {
    check_name("peer interface", c.peer_if, net::valid_ifname(c.peer_if), "1..15");
    check_name("netns", c.netns, net::valid_netns_name(c.netns), "1..64");
  }
  const char* peer = is_veth(c) ? "peer" : "target";
  Validated v;
  int prefix = 0, peer_prefix = 0;
  if (!parse_cidr(c.host_addr, v.host_ip, prefix))
    throw ConfigError("testbed: host address " + txpath::quoted(c.host_addr) +
                      " is not an IPv4 a.b.c.d/len");
  if (!parse_cidr(c.peer_addr, v.peer_ip, peer_prefix))
    throw ConfigError(std::string("testbed: ") + peer + " address " + txpath::quoted(c.peer_addr) +
                      " is not an IPv4 a.b.c.d/len");
  if (v.host_ip == v.peer_ip)
    throw ConfigError(std::string("testbed: host and ") + peer + " address are the same (" +
                      ip_string(v.host_ip) + ")");
  if (!is_veth(c)) check_target(c.host_addr, v.host_ip, prefix, v.peer_ip);
  if (c.mtu < 68 || c.mtu > 65535)
    throw ConfigError("testbed: mtu " + std::to_string(c.mtu) + " is not in 68..65535");
  if (c.queues < 1 || c.queues > kMaxTestbedQueues)
    throw ConfigError("testbed: queues " + std::to_string(c.queues) + " is not in 1.." +
                      std::to_string(kMaxTestbedQueues));
  if (split_ws(c.qdisc).empty()) throw ConfigError("testbed: empty qdisc");
  const bool printable = std::all_of(c.qdisc.begin(), c.qdisc.end(),
                                     [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
  if (!printable || c.qdisc.size() > 256)
    throw ConfigError("testbed: qdisc " + txpath::quoted(c.qdisc) +
                      " is not 1..256 printable ASCII characters");
  return v;
}

std::array<uint8_t, 6> read_host_mac(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/address");
  std::string s;
  std::array<uint8_t, 6> mac{};
  if (!(in >> s) || !parse_mac(s, mac))
    throw DeviceError("testbed: cannot read the MAC address of " + ifname);
  return mac;
}

void netns_failed(const std::string& netns, int err) {
  throw DeviceError("testbed: netns " + txpath::quoted(netns) + ": " + net::netns_error_text(err));
}

// Turns IPv6 off on an interface of the current thread's namespace; no-op without IPv6 support.
void disable_ipv6_here(const std::string& ifname) {
  if (!exists("/proc/sys/net/ipv6")) return;
  const std::string path = "/proc/sys/net/ipv6/conf/" + ifname + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw DeviceError("testbed: cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, "1\n", 2);
  const int saved = errno;
  ::close(fd);
  if (n != 2) throw DeviceError("testbed: cannot write " + path + ": " + std::strerror(saved));
}

std::array<uint8_t, 6> mac_here(const std::string& ifname) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw DeviceError("testbed: socket: " + std::string(std::strerror(errno)));
  ifreq req{};
  std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ::ioctl(fd, SIOCGIFHWADDR, &req);
  const int saved = errno;
  ::close(fd);
  if (rc != 0)
    throw DeviceError("testbed: cannot read the MAC address of " + ifname + ": " +
                      std::strerror(saved));
  std::array<uint8_t, 6> mac{};
  std::memcpy(mac.data(), req.ifr_hwaddr.sa_data, 6);
  return mac;
}

// ip netns needs root (it mounts under /run/netns); say so instead of quoting a later failure.
void require_root() {
  if (::geteuid() != 0)
    throw DeviceError(
        "testbed: not permitted (needs root: creates network namespaces and veth pairs)");
}

// --- what is ours ------------------------------------------------------------------------------

struct NetnsId {
  uint64_t cookie = 0, dev = 0, ino = 0;
};

// The identity of a named namespace: its cookie (unique for the system's lifetime; 0 if the
// kernel has none) and the inode of its bind mount (reused once the namespace is gone).
NetnsId netns_id(const std::string& netns) {
  NetnsId id;
  struct stat st {};
  if (::stat(("/run/netns/" + netns).c_str(), &st) != 0) return id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  try {
    net::in_netns(
        netns,
        [&] {
          const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
          if (fd < 0) return;
          uint64_t cookie = 0;
          socklen_t len = sizeof cookie;
          if (::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) == 0) id.cookie = cookie;
          ::close(fd);
        },
        [&](int err) { netns_failed(netns, err); });
  } catch (const DeviceError&) {
    id.cookie = 0;
  }
  return id;
}

// Is the namespace the record names still the one the testbed made?
bool is_our_netns(const TestbedRecord& r) {
  const std::string& netns = r.info.config.netns;
  if (!netns_exists(netns)) return false;
  const NetnsId now = netns_id(netns);
  if (r.netns_cookie != 0 && now.cookie != 0) return now.cookie == r.netns_cookie;
  return r.netns_ino != 0 && now.ino == r.netns_ino && now.dev == r.netns_dev;
}

bool is_our_host_if(const TestbedRecord& r) {
  const std::string& host_if = r.info.config.host_if;
  return host_if_exists(host_if) && host_alias(host_if) == net::testbed_marker(r.info.id);
}

// An rtnetlink socket of the host's namespace (the caller's).
struct HostRtnl : RtnlSocket {
  HostRtnl() : RtnlSocket("", "testbed", [](int) {}) {}
};

// An rtnetlink socket inside the named namespace; one that cannot be entered is a DeviceError.
struct NetnsRtnl : RtnlSocket {
  explicit NetnsRtnl(const std::string& netns)
      : RtnlSocket(netns, "testbed", [&netns](int err) { netns_failed(netns, err); }) {}
};

// The interfaces of a namespace (RTM_GETLINK dump). Names are the kernel's bytes; they are only
// compared with ASCII ones, and escaped wherever they are shown.
std::vector<net::RtnlLink> netns_interfaces(const std::string& netns) {
  NetnsRtnl rtnl(netns);
  std::vector<net::RtnlLink> links;
  must(rtnl.list_links(links), "listing the interfaces of netns " + netns);
  return links;
}

// The interfaces of a namespace other than lo and those carrying `marker`.
std::vector<std::string> foreign_interfaces(const std::vector<net::RtnlLink>& links,
                                            const std::string& marker) {
  std::vector<std::string> out;
  for (const auto& i : links)
    if (i.name != "lo" && i.alias != marker) out.push_back(i.name);
  return out;
}

// "\"a\", \"b\" and 3 more": names quoted, at most four.
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i)
    s += (i ? ", " : "") + txpath::quoted(names[i]);
  if (names.size() > 4) s += " and " + std::to_string(names.size() - 4) + " more";
  return s;
}

// The record whose namespace `netns` is (still) the one it made; nullopt if none.
std::optional<TestbedRecord> netns_owner(const StateDir& state, const std::string& netns) {
  if (!netns_exists(netns)) return std::nullopt;
  for (auto& r : state.all())
    if (r.info.config.netns == netns && is_our_netns(r)) return r;
  return std::nullopt;
}

[[noreturn]] void not_ours(const std::string& what, const std::string& name, const char* flag) {
  throw DeviceError("testbed: " + what + " " + txpath::quoted(name) +
                    " exists and was not made by txpath testbed: choose another name with " + flag);
}

// Refuses (before any change) a configuration whose names are in use by anything but the
// testbed `old` recorded on the same host interface.
void check_names_free(const StateDir& state, const TestbedConfig& c,
                      const std::optional<TestbedRecord>& old) {
  if (host_if_exists(c.host_if) && !(old && is_our_host_if(*old)))
    not_ours("interface", c.host_if, "--host-if");
  if (!is_veth(c) || !netns_exists(c.netns)) return;
  const auto owner = netns_owner(state, c.netns);
  if (!owner) not_ours("netns", c.netns, "--netns");
  if (owner->info.config.host_if != c.host_if)
    throw DeviceError("testbed: netns " + txpath::quoted(c.netns) +
                      " belongs to the txpath testbed on " + owner->info.config.host_if +
                      ": choose another name with --netns (or take that one down first)");
  const auto foreign =
      foreign_interfaces(netns_interfaces(c.netns), net::testbed_marker(owner->info.id));
  if (!foreign.empty())
    throw DeviceError("testbed: netns " + txpath::quoted(c.netns) + " holds " + name_list(foreign) +
                      ", not made by txpath testbed: choose another name with --netns");
}

// The host end of a recorded testbed, deleted if it still carries our marker (its veth peer
// goes with it). A veth end also goes with its peer's namespace: after that namespace is
// removed the kernel deletes it asynchronously, so it may vanish between the check and the
// delete. Gone (ENODEV, and no longer in sysfs) is not an error.
void remove_recorded_host_if(const TestbedRecord& r, TestbedRemoval& out) {
  const std::string& host_if = r.info.config.host_if;
  if (!is_our_host_if(r)) {
    if (host_if_exists(host_if))
      out.kept.push_back("interface " + host_if +
                         " is no longer the one txpath testbed made (no marker): left alone");
    return;
  }
  const net::RtnlOutcome del = HostRtnl().delete_link(host_if);
  if (del.ok()) out.removed_pair = true;
  else if (host_if_exists(host_if)) must(del, "deleting " + host_if);  // still there: why
}

// The namespace of a recorded veth testbed: its interfaces carrying our marker deleted, then
// the namespace itself unless it holds one we did not make.
void remove_recorded_netns(const TestbedRecord& r, TestbedRemoval& out) {
  const std::string& netns = r.info.config.netns;
  if (!is_our_netns(r)) {
    if (netns_exists(netns))
      out.kept.push_back("netns " + netns + " is no longer the one txpath testbed made: left alone");
    return;
  }
  const std::string marker = net::testbed_marker(r.info.id);
  std::vector<std::string> foreign;
  {
    NetnsRtnl rtnl(netns);
    std::vector<net::RtnlLink> links;
    must(rtnl.list_links(links), "listing the interfaces of netns " + netns);
    for (const auto& i : links) {
      if (i.name == "lo") continue;
      if (i.alias != marker) {
        foreign.push_back(i.name);
        continue;
      }
      must(rtnl.delete_link(i.name), "deleting " + i.name + " in netns " + netns);  // the peer
      out.removed_pair = true;
    }
  }
  if (!foreign.empty()) {
    out.kept.push_back("netns " + netns + " stays: it holds " + name_list(foreign) +
                       ", which txpath testbed did not make");
    return;
  }
  if (const std::string why = net::delete_named_netns(netns); !why.empty())
    throw DeviceError("testbed: netns " + txpath::quoted(netns) + ": " + escape_user_text(why));
  out.removed_netns = true;
}

// Removes what the record says the testbed made and what still carries its marker; keeps (and
// says why) everything else. The record is removed.
TestbedRemoval remove_recorded(const StateDir& state, const TestbedRecord& r) {
  TestbedRemoval out;
  out.recorded = true;
  out.config = r.info.config;
  remove_recorded_host_if(r, out);
  if (is_veth(r.info.config)) remove_recorded_netns(r, out);
  state.remove(r.info.config.host_if);
  return out;
}

// Best effort after a failed testbed_up(): removes what this call created, nothing else.
void undo_up(const StateDir& state, const TestbedConfig& c, bool created_ns,
             bool created_link) noexcept {
  try {
    if (created_link) (void)HostRtnl().delete_link(c.host_if);
    bool ns_left = false;
    if (created_ns) {
      const auto links = netns_interfaces(c.netns);
      ns_left = !foreign_interfaces(links, "").empty() || !net::delete_named_netns(c.netns).empty();
    }
    if (!ns_left) state.remove(c.host_if);  // else the record lets `down` finish the job
  } catch (...) {
  }
}

// The IPv4 address `cidr` (validated) on `ifname`, created or replaced.
void replace_address(RtnlSocket& rtnl, const std::string& ifname, const std::string& cidr) {
  uint32_t ip = 0;
  int prefix = 0;
  parse_cidr(cidr, ip, prefix);
  must(rtnl.replace_ipv4_address(ifname, ip, prefix), "adding address " + cidr + " to " + ifname);
}

// A permanent neighbour entry ip -> mac on `ifname`, created or replaced.
void replace_neighbour(RtnlSocket& rtnl, const std::string& ifname, uint32_t ip,
                       const std::array<uint8_t, 6>& mac) {
  must(rtnl.replace_neighbour(ifname, ip, mac),
       "neighbour " + ip_string(ip) + " lladdr " + mac_text(mac) + " on " + ifname);
}

void set_up(RtnlSocket& rtnl, const std::string& ifname) {
  must(rtnl.set_up(ifname), "setting " + ifname + " up");
}

void set_alias(RtnlSocket& rtnl, const std::string& ifname, const std::string& alias) {
  must(rtnl.set_alias(ifname, alias), "setting the alias of " + ifname);
}

// Addresses, the root qdisc, static neighbours both ways, and the links up.
void configure(const TestbedConfig& c, const Validated& v, const TestbedInfo& info,
               RtnlSocket& host, RtnlSocket& peer) {
  replace_address(host, c.host_if, c.host_addr);
  replace_address(peer, c.peer_if, c.peer_addr);
  net::set_testbed_qdiscs(c, host);
  replace_neighbour(host, c.host_if, v.peer_ip, info.peer_mac);
  replace_neighbour(peer, c.peer_if, v.host_ip, info.host_mac);
  set_up(peer, "lo");
  set_up(peer, c.peer_if);
  set_up(host, c.host_if);
}

// A new record of the testbed `c` (an ifb's without peer and namespace names), not yet complete.
TestbedRecord new_record(const TestbedConfig& c, const Validated& v) {
  TestbedRecord rec;
  rec.info.config = c;
  if (!is_veth(c)) {
    rec.info.config.peer_if.clear();
    rec.info.config.netns.clear();
  }
  rec.info.host_ip = v.host_ip;
  rec.info.peer_ip = v.peer_ip;
  rec.info.id = net::new_testbed_id();
  return rec;
}

// Makes the named namespace; fails (EEXIST) if the name appeared since the check.
void make_netns(const std::string& netns) {
  if (const std::string why = net::create_named_netns(netns); !why.empty())
    throw DeviceError("testbed: netns " + txpath::quoted(netns) + ": " + escape_user_text(why));
}

// The veth pair host_if / peer_if, the peer made inside c.netns (IFLA_NET_NS_FD), both with the
// MTU and queue count asked for. Fails (EEXIST) if host_if appeared since the check.
void add_veth_pair(RtnlSocket& host, const TestbedConfig& c) {
  const std::string path = "/run/netns/" + c.netns;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) netns_failed(c.netns, errno);
  const net::RtnlOutcome added = host.add_veth({c.host_if, c.mtu, c.queues, 0},
                                               {c.peer_if, c.mtu, c.queues, 0}, fd);
  ::close(fd);
  must(added, "creating the veth pair " + c.host_if + " / " + c.peer_if + " (peer in netns " +
                  c.netns + ")");
}

// Creates the namespace, the pair and everything on them, recording each step; returns the
// complete record.
TestbedRecord create_veth(const StateDir& state, const TestbedConfig& c, const Validated& v) {
  TestbedRecord rec = new_record(c, v);
  const std::string marker = net::testbed_marker(rec.info.id);
  bool created_ns = false, created_link = false;
  try {
    make_netns(c.netns);
    created_ns = true;
    const NetnsId id = netns_id(c.netns);
    rec.netns_cookie = id.cookie;
    rec.netns_dev = id.dev;
    rec.netns_ino = id.ino;
    state.write(rec);
    HostRtnl host;
    NetnsRtnl peer(c.netns);
    add_veth_pair(host, c);
    created_link = true;
    set_alias(host, c.host_if, marker);
    set_alias(peer, c.peer_if, marker);
    // IPv6 off before the links come up: no router solicitations, no DAD, no MLD reports.
    disable_ipv6_here(c.host_if);
    net::in_netns(
        c.netns,
        [&] {
          disable_ipv6_here(c.peer_if);
          disable_ipv6_here("lo");
          rec.info.peer_mac = mac_here(c.peer_if);
        },
        [&](int err) { netns_failed(c.netns, err); });
    rec.info.host_mac = read_host_mac(c.host_if);
    configure(c, v, rec.info, host, peer);
    rec.complete = true;
    state.write(rec);
  } catch (...) {
    undo_up(state, c, created_ns, created_link);
    throw;
  }
  return rec;
}

// The txqueuelen of an ifb testbed: a veth's (the ifb driver's own is 32, which pfifo_fast would
// take as its limit).
constexpr uint32_t kIfbTxQueueLen = 1000;

// Creates the ifb and everything on it, recording each step; returns the complete record.
TestbedRecord create_ifb(const StateDir& state, const TestbedConfig& c, const Validated& v) {
  TestbedRecord rec = new_record(c, v);
  bool created_link = false;
  try {
    state.write(rec);
    HostRtnl host;
    must(host.add_link({c.host_if, c.mtu, c.queues, kIfbTxQueueLen}, "ifb"),
         "creating the ifb " + c.host_if);  // fails (EEXIST) if host_if appeared meanwhile
    created_link = true;
    set_alias(host, c.host_if, net::testbed_marker(rec.info.id));
    disable_ipv6_here(c.host_if);  // before the link is up: nothing but our frames reaches it
    rec.info.host_mac = read_host_mac(c.host_if);
    // The target's neighbour entry: the ifb's own MAC, which the kernel would use anyway (ifb
    // is IFF_NOARP), made permanent so that it holds even with ARP turned on.
    rec.info.peer_mac = rec.info.host_mac;
    replace_address(host, c.host_if, c.host_addr);
    net::set_testbed_qdiscs(c, host);
    replace_neighbour(host, c.host_if, v.peer_ip, rec.info.peer_mac);
    set_up(host, c.host_if);
    rec.complete = true;
    state.write(rec);
  } catch (...) {
    undo_up(state, rec.info.config, false, created_link);
    throw;
  }
  return rec;
}

}  // namespace

const char* testbed_kind_name(TestbedKind kind) noexcept {
  return kind == TestbedKind::ifb ? "ifb" : "veth";
}

TestbedConfig ifb_testbed_config() {
  TestbedConfig c;
  c.kind = TestbedKind::ifb;
  c.host_if = "txpifb0";
  c.peer_if.clear();
  c.netns.clear();
  c.host_addr = "10.88.0.1/24";
  c.peer_addr = "10.88.0.2/24";
  return c;
}

TestbedInfo testbed_up(const TestbedConfig& config, TestbedRemoval* replaced) {
  const Validated v = validate(config);
  require_root();
  StateDir state;
  const auto old = state.read(config.host_if);
  check_names_free(state, config, old);
  TestbedRemoval removal;
  if (old) removal = remove_recorded(state, *old);
  if (replaced) *replaced = removal;
  return (is_veth(config) ? create_veth(state, config, v) : create_ifb(state, config, v)).info;
}

TestbedRemoval testbed_down(const TestbedConfig& config) {
  validate(config);
  require_root();
  StateDir state;
  if (const auto rec = state.read(config.host_if)) return remove_recorded(state, *rec);
  TestbedRemoval out;
  out.config = config;
  if (host_if_exists(config.host_if))
    out.kept.push_back("interface " + config.host_if +
                       " exists but was not made by txpath testbed: left alone");
  if (is_veth(config) && netns_exists(config.netns) && !netns_owner(state, config.netns))
    out.kept.push_back("netns " + config.netns +
                       " exists but was not made by txpath testbed: left alone");
  return out;
}

std::optional<TestbedInfo> find_testbed(std::string_view host_if) {
  const std::string name(host_if);
  const auto rec = net::read_record_unlocked(name);
  if (!rec || !rec->complete) return std::nullopt;
  TestbedInfo info = rec->info;
  int prefix = 0;
  if (!parse_cidr(info.config.host_addr, info.host_ip, prefix) ||
      !parse_cidr(info.config.peer_addr, info.peer_ip, prefix))
    return std::nullopt;
  // Still up, and still ours? The host end must carry our marker and the recorded MAC, and the
  // namespace must be there.
  if (!is_our_host_if(*rec) || (is_veth(info.config) && !netns_exists(info.config.netns)))
    return std::nullopt;
  try {
    if (read_host_mac(name) != info.host_mac) return std::nullopt;
  } catch (const DeviceError&) {
    return std::nullopt;
  }
  return info;
}

bool address_to_testbed(FrameSpec& spec, std::string_view host_if) {
  const auto tb = find_testbed(host_if);
  if (!tb) return false;
  spec.dst_mac = tb->peer_mac;
  spec.src_ip = tb->host_ip;
  spec.dst_ip = tb->peer_ip;
  return true;
}

std::optional<TestbedInfo> find_null_nic(std::string_view ifname) {
  auto info = find_testbed(ifname);
  if (info && info->config.kind != TestbedKind::ifb) info.reset();
  return info;
}

uint64_t null_nic_frames(std::string_view ifname) {
  // ifb_xmit() counts every frame in its TX queue's receive counters (rx_packets: per queue,
  // under that queue's lock, exact) and, when tc did not redirect it, frees it and raises
  // rx_dropped — a plain increment of one device-wide field, which loses counts when two CPUs
  // transmit at once (measured: 134 of 1.3 million frames from two queues). tx_packets counts
  // only redirected frames it passed on.
  return read_interface_counter(ifname, "rx_packets");
}

}  // namespace txpath
