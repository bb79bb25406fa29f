// SPDX-License-Identifier: MIT
// The veth testbed (see testbed.hpp): drives iproute2 (`ip`, `tc`) as child processes, reads the
// MACs, writes a key=value state file under /run/txpath/testbed/.
//
// Origin: txpath issue 5, from ip-link(8), ip-netns(8), ip-neighbour(8), tc(8) and veth(4).
// Invariants: names and addresses are validated before anything is run; every failing command
// becomes one DeviceError line quoting the command and its first stderr line; a failed
// testbed_up() removes what it created; testbed_down() only deletes a host interface that is a
// veth. Not a hot path; no atomics (the namespace work runs on a joined thread, see netns.hpp).
#include "txpath/testbed.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "net/netns.hpp"
#include "txpath/error.hpp"

extern char** environ;

namespace txpath {

namespace {

constexpr const char* kStateDir = "/run/txpath/testbed";

struct CmdResult {
  int status = 0;  // exit status (127+ for signals)
  std::string out;
  std::string err;
};

std::string join(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string first_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

// Runs args[0] (looked up in PATH, plus /sbin and /usr/sbin) and collects stdout and stderr.
CmdResult run_cmd(const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw DeviceError("testbed: pipe: " + std::string(std::strerror(errno)));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw DeviceError("testbed: pipe: " + std::string(std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  if (rc == ENOENT) {
    // Root's tools live in sbin, which a user's PATH may lack.
    for (const char* dir : {"/usr/sbin/", "/sbin/"}) {
      const std::string path = dir + args[0];
      if (::access(path.c_str(), X_OK) != 0) continue;
      rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
      break;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (rc == ENOENT) {
      if (args[0] == "ip" || args[0] == "tc")
        throw DeviceError("testbed: the '" + args[0] +
                          "' command (Debian package iproute2) is not installed");
      throw DeviceError("testbed: the '" + args[0] + "' command is not installed");
    }
    throw DeviceError("testbed: cannot run " + join(args) + ": " + std::strerror(rc));
  }
  CmdResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// Runs the command; a failure becomes one DeviceError line.
std::string must(const std::vector<std::string>& args) {
  CmdResult r = run_cmd(args);
  if (r.status != 0) {
    std::string why = first_line(r.err);
    if (why.empty()) why = "exit status " + std::to_string(r.status);
    throw DeviceError("testbed: " + join(args) + ": " + why);
  }
  return r.out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool host_if_exists(const std::string& ifname) { return exists("/sys/class/net/" + ifname); }
bool netns_exists(const std::string& netns) { return exists("/run/netns/" + netns); }

// Is the host-namespace interface a veth? (`ip -d link show` names the link kind.)
bool is_veth(const std::string& ifname) {
  const CmdResult r = run_cmd({"ip", "-d", "-o", "link", "show", "dev", ifname});
  return r.status == 0 && r.out.find(" veth ") != std::string::npos;
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

std::string mac_string(const std::array<uint8_t, 6>& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

bool parse_mac(const std::string& s, std::array<uint8_t, 6>& mac) {
  unsigned v[6];
  char extra = 0;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                  &extra) != 6)
    return false;
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(v[i]);
  return true;
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

Validated validate(const TestbedConfig& c) {
  for (const auto& [what, name] : {std::pair{"host interface", c.host_if},
                                   std::pair{"peer interface", c.peer_if}}) {
    if (!net::valid_ifname(name))
      throw ConfigError(std::string("testbed: ") + what + " name \"" + name +
                        "\" is not 1..15 characters of A-Z a-z 0-9 _ . -");
  }
  if (!net::valid_netns_name(c.netns))
    throw ConfigError("testbed: netns name \"" + c.netns +
                      "\" is not 1..64 characters of A-Z a-z 0-9 _ . -");
  Validated v;
  int prefix = 0;
  if (!parse_cidr(c.host_addr, v.host_ip, prefix))
    throw ConfigError("testbed: host address \"" + c.host_addr + "\" is not an IPv4 a.b.c.d/len");
  if (!parse_cidr(c.peer_addr, v.peer_ip, prefix))
    throw ConfigError("testbed: peer address \"" + c.peer_addr + "\" is not an IPv4 a.b.c.d/len");
  if (v.host_ip == v.peer_ip)
    throw ConfigError("testbed: host and peer address are the same (" + ip_string(v.host_ip) + ")");
  if (c.mtu < 68 || c.mtu > 65535)
    throw ConfigError("testbed: mtu " + std::to_string(c.mtu) + " is not in 68..65535");
  if (split_ws(c.qdisc).empty()) throw ConfigError("testbed: empty qdisc");
  for (const char ch : c.qdisc) {
    if (ch == '\n' || ch == '\r') throw ConfigError("testbed: qdisc contains a line break");
  }
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
  throw DeviceError("testbed: netns '" + netns + "': " + net::netns_error_text(err));
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

std::string state_path(const std::string& host_if) { return std::string(kStateDir) + "/" + host_if; }

void write_state(const TestbedInfo& info) {
  for (const std::string dir : {"/run/txpath", kStateDir}) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      throw DeviceError("testbed: cannot create " + dir + ": " + std::strerror(errno));
  }
  const auto& c = info.config;
  const std::string path = state_path(c.host_if);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# txpath testbed (txpath testbed up); key=value\n"
        << "host_if=" << c.host_if << "\n"
        << "peer_if=" << c.peer_if << "\n"
        << "netns=" << c.netns << "\n"
        << "host_addr=" << c.host_addr << "\n"
        << "peer_addr=" << c.peer_addr << "\n"
        << "qdisc=" << c.qdisc << "\n"
        << "mtu=" << c.mtu << "\n"
        << "host_mac=" << mac_string(info.host_mac) << "\n"
        << "peer_mac=" << mac_string(info.peer_mac) << "\n";
    out.flush();
    if (!out) {
      ::unlink(tmp.c_str());
      throw DeviceError("testbed: cannot write " + tmp);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    throw DeviceError("testbed: cannot write " + path + ": " + std::strerror(saved));
  }
}

// ip netns needs root (it mounts under /run/netns); say so instead of quoting a later failure.
void require_root() {
  if (::geteuid() != 0)
    throw DeviceError("testbed: not permitted (needs root: creates network namespaces and veth pairs)");
}

// Removes the pair (if the host end is a veth) and the namespace; true if either was there.
bool remove_existing(const TestbedConfig& c) {
  bool found = false;
  if (host_if_exists(c.host_if) || netns_exists(c.netns)) require_root();
  if (host_if_exists(c.host_if)) {
    if (!is_veth(c.host_if))
      throw DeviceError("testbed: interface " + c.host_if +
                        " exists and is not a veth; not touching it");
    must({"ip", "link", "del", "dev", c.host_if});
    found = true;
  }
  if (netns_exists(c.netns)) {
    must({"ip", "netns", "del", c.netns});
    found = true;
  }
  return found;
}

}  // namespace

TestbedInfo testbed_up(const TestbedConfig& config) {
  const Validated v = validate(config);
  const TestbedConfig& c = config;
  require_root();
  remove_existing(c);

  TestbedInfo info;
  info.config = c;
  info.host_ip = v.host_ip;
  info.peer_ip = v.peer_ip;
  bool created_ns = false, created_link = false;
  try {
    must({"ip", "netns", "add", c.netns});
    created_ns = true;
    const std::string mtu = std::to_string(c.mtu);
    must({"ip", "link", "add", c.host_if, "mtu", mtu, "type", "veth", "peer", "name", c.peer_if,
          "mtu", mtu, "netns", c.netns});
    created_link = true;
    // IPv6 off before the links come up: no router solicitations, no DAD, no MLD reports.
    disable_ipv6_here(c.host_if);
    net::in_netns(
        c.netns,
        [&] {
          disable_ipv6_here(c.peer_if);
          disable_ipv6_here("lo");
          info.peer_mac = mac_here(c.peer_if);
        },
        [&](int err) { netns_failed(c.netns, err); });
    info.host_mac = read_host_mac(c.host_if);

    must({"ip", "addr", "replace", c.host_addr, "dev", c.host_if});
    must({"ip", "-n", c.netns, "addr", "replace", c.peer_addr, "dev", c.peer_if});
    if (c.qdisc != "noqueue") {
      std::vector<std::string> tc = {"tc", "qdisc", "replace", "dev", c.host_if, "root"};
      for (auto& w : split_ws(c.qdisc)) tc.push_back(std::move(w));
      must(tc);
    }
    must({"ip", "neigh", "replace", ip_string(v.peer_ip), "lladdr", mac_string(info.peer_mac),
          "nud", "permanent", "dev", c.host_if});
    must({"ip", "-n", c.netns, "neigh", "replace", ip_string(v.host_ip), "lladdr",
          mac_string(info.host_mac), "nud", "permanent", "dev", c.peer_if});
    must({"ip", "-n", c.netns, "link", "set", "dev", "lo", "up"});
    must({"ip", "-n", c.netns, "link", "set", "dev", c.peer_if, "up"});
    must({"ip", "link", "set", "dev", c.host_if, "up"});
    write_state(info);
  } catch (...) {
    // Best effort: leave nothing half made.
    if (created_link) run_cmd({"ip", "link", "del", "dev", c.host_if});
    if (created_ns) run_cmd({"ip", "netns", "del", c.netns});
    throw;
  }
  return info;
}

bool testbed_down(const TestbedConfig& config) {
  validate(config);
  const bool found = remove_existing(config);
  ::unlink(state_path(config.host_if).c_str());
  return found;
}

std::optional<TestbedInfo> find_testbed(std::string_view host_if) {
  const std::string name(host_if);
  if (!net::valid_ifname(name)) return std::nullopt;
  std::ifstream in(state_path(name));
  if (!in) return std::nullopt;
  TestbedInfo info;
  TestbedConfig& c = info.config;
  bool have_host_mac = false, have_peer_mac = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (key == "host_if") c.host_if = value;
    else if (key == "peer_if") c.peer_if = value;
    else if (key == "netns") c.netns = value;
    else if (key == "host_addr") c.host_addr = value;
    else if (key == "peer_addr") c.peer_addr = value;
    else if (key == "qdisc") c.qdisc = value;
    else if (key == "mtu") c.mtu = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    else if (key == "host_mac") have_host_mac = parse_mac(value, info.host_mac);
    else if (key == "peer_mac") have_peer_mac = parse_mac(value, info.peer_mac);
  }
  if (c.host_if != name || !have_host_mac || !have_peer_mac) return std::nullopt;
  int prefix = 0;
  if (!parse_cidr(c.host_addr, info.host_ip, prefix) || !parse_cidr(c.peer_addr, info.peer_ip, prefix))
    return std::nullopt;
  // Still up? The host end must exist, with the recorded MAC, and the namespace too.
  if (!host_if_exists(name) || !netns_exists(c.netns)) return std::nullopt;
  try {
    if (read_host_mac(name) != info.host_mac) return std::nullopt;
  } catch (const DeviceError&) {
    return std::nullopt;
  }
  return info;
}

}  // namespace txpath
