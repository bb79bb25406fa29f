// SPDX-License-Identifier: MIT
// make_device(): --device spec text -> a Device.
//
// Grammar: KIND[:KEY=VALUE[,KEY=VALUE]...], keys in any order, each at most once.
//   null                    [mtu=N, queues=N]
//   nic                     [pkt=NS, doorbell=NS, ring=N, rate=GBIT, clean=N, bql=0|1, irq=NS, mtu=N,
//                            queues=N, wire=shared|queue]
//   fault                   [busy=P, stop=P, stop_ns=NS, seed=N, mtu=N, queues=N]
// queues=N (1..kMaxTxQueues): the device's TX queues, one Device each (make_net_device(); a
// device spec with more than one is refused by make_device()). nic's queues share one wire of
// `rate` unless wire=queue; fault's queue i draws from seed + i; the real devices open one
// context (socket, ring, descriptor) per queue.
//   pcap:FILE               frames appended to a nanosecond pcap file (FILE: the rest of
//                           the spec after the first ':', non-empty; a last item ",queues=N"
//                           is read as the option: pcap has one queue, so only queues=1)
//   tun:IFNAME              [queues=N (1..256)]  a TUN interface (1..15 characters, no '/',
//                           ',' or whitespace); queues > 1: IFF_MULTI_QUEUE, one fd per queue
//   afpacket:IFNAME         [ring=N (power of two, 8..65536), bypass=0|1, prio=P (0..15),
//                           queues=N]  AF_PACKET TX ring, one socket per queue (queue i at
//                           priority P + i, P + N - 1 <= 15)
//   udp:HOST:PORT           [batch=N (1..1024), queues=N]  connected UDP socket per queue; HOST
//                           may be [IPv6]
//   afxdp:IFNAME[:QUEUE]    [umem=N (0..262144), queues=N]  AF_XDP socket, TX only, one per
//                           queue id QUEUE .. QUEUE + N - 1 (QUEUE: 0..4095, default 0; the last
//                           <= 4095); each UMEM holds a zero-copy pool of N 2 KiB frames
//                           (default 8192; 0: none)
// Numbers: unsigned decimal integers, except rate/busy/stop (decimal floating point). Ranges:
// ring a power of two in [2, 2^20] (slot = index & mask, as real rings are sized); clean in
// [1, ring]; rate in [1e-5, 1e4] Gbit/s; probabilities in [0, 1]; mtu in [68, 9000] (the IPv4
// minimum to a common jumbo MTU). Every error is a ConfigError whose message is one line naming
// the spec and the problem.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/text.hpp"
#include "device/fault_device.hpp"
#include "device/nic_device.hpp"
#include "device/null_device.hpp"
#include "device/real_devices.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/netdev.hpp"

namespace txpath {

namespace {

// User text inside an error message: escaped and cut (core/text.hpp), so that the message
// stays one short line whatever the user typed.
std::string printable(std::string_view s) { return escape_user_text(s); }

class SpecParser {
 public:
  explicit SpecParser(std::string_view spec) : spec_(spec) {}

  [[noreturn]] void fail(const std::string& problem) const {
    // The problem quotes its own user text through printable(); only line breaks are left to fix.
    std::string line = problem;
    for (char& c : line)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    throw ConfigError("device '" + printable(spec_) + "': " + line);
  }

  struct Option {
    std::string_view key, value;
  };

  // Splits "kind:k=v,k=v"; checks for empty items, missing '=', duplicates and unknown keys.
  std::vector<Option> options(std::string_view text, std::string_view kind,
                              std::initializer_list<std::string_view> known) const {
    std::vector<Option> out;
    if (text.empty()) fail("empty option list after ':'");
    while (true) {
      const std::size_t comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      if (item.empty()) fail("empty option (stray ',')");
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) fail("option '" + printable(item) + "' is not KEY=VALUE");
      Option o{item.substr(0, eq), item.substr(eq + 1)};
      bool ok = false;
      for (auto k : known) ok = ok || k == o.key;
      if (!ok) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        fail("unknown key '" + printable(o.key) + "' for " + printable(kind) +
             " (known: " + list + ")");
      }
      for (const auto& prev : out) {
        if (prev.key == o.key) fail("key '" + printable(o.key) + "' given twice");
      }
      out.push_back(o);
      if (comma == std::string_view::npos) break;
      text = text.substr(comma + 1);
    }
    return out;
  }

  uint64_t u64(const Option& o, uint64_t lo, uint64_t hi) const {
    uint64_t v = 0;
    const char* first = o.value.data();
    const char* last = first + o.value.size();
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (o.value.empty() || ec == std::errc::invalid_argument || ptr != last) {
      fail("bad number '" + printable(o.value) + "' for " + printable(o.key) +
           " (expected an unsigned integer)");
    }
    if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
      fail(printable(o.key) + "=" + printable(o.value) + " is out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }

  double real(const Option& o, double lo, double hi) const {
    double v = 0;
    const char* first = o.value.data();
    const char* last = first + o.value.size();
    // general: "0.05", "10", "1e-5"; "inf"/"nan" parse but are rejected below.
    auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
    if (o.value.empty() || ec != std::errc() || ptr != last || !std::isfinite(v)) {
      fail("bad number '" + printable(o.value) + "' for " + printable(o.key) +
           " (expected a decimal number)");
    }
    if (v < lo || v > hi) {
      fail(printable(o.key) + "=" + printable(o.value) + " is out of range [" +
           std::string(fmt(lo)) + ", " + std::string(fmt(hi)) + "]");
    }
    return v;
  }

  // queues=N: a device's TX queue count, 1..kMaxTxQueues.
  uint32_t queues(const Option& o) const {
    return static_cast<uint32_t>(u64(o, 1, kMaxTxQueues));
  }

  // The index of o.value among `words`; fails naming them.
  std::size_t choice(const Option& o, std::initializer_list<std::string_view> words) const {
    std::size_t i = 0;
    std::string list;
    for (auto w : words) {
      if (w == o.value) return i;
      list += (i++ ? ", " : "") + std::string(w);
    }
    fail("bad value '" + printable(o.value) + "' for " + printable(o.key) + " (expected " + list +
         ")");
  }

  static std::string fmt(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return std::string(buf, r.ptr);
  }

 private:
  std::string_view spec_;
};

constexpr uint64_t kMinMtu = 68, kMaxMtu = 9000;

// A device's TX queues, as one kind's factory builds them (one Device each).
using Queues = std::vector<std::unique_ptr<Device>>;

Queues one_queue(std::unique_ptr<Device> device) {
  Queues q;
  q.push_back(std::move(device));
  return q;
}

// `count` queues, each built by make().
template <class Make>
Queues queues_of(uint32_t count, Make make) {
  Queues q;
  q.reserve(count);
  for (uint32_t i = 0; i < count; ++i) q.push_back(make(i));
  return q;
}

// One kind's part of the spec: `opts` is the text after the first ':' (empty when there is
// none; `has_opts` tells "null:" from "null").
struct KindSpec {
  const SpecParser& parser;
  std::string_view kind;
  std::string_view opts;
  bool has_opts;
};

Queues make_pcap(const KindSpec& s) {
  // Everything after the first ':' is the path (it may hold ',', '=' or ':'), except a last
  // ",queues=N": the option every kind takes, which a pcap file (one stream) can only have as 1.
  std::string_view path = s.opts;
  if (const std::size_t comma = path.rfind(',');
      comma != std::string_view::npos && path.substr(comma + 1).starts_with("queues=")) {
    const uint32_t queues = s.parser.queues({"queues", path.substr(comma + 8)});
    if (queues != 1)
      s.parser.fail("pcap writes one file, so it has one TX queue (queues=" +
                    std::to_string(queues) + " is not possible)");
    path = path.substr(0, comma);
  }
  if (path.empty()) s.parser.fail("missing file name (pcap:FILE)");
  return one_queue(make_pcap_device(PcapConfig{.path = std::string(path)}));  // DeviceError as is
}

// "HEAD[,KEY=VALUE...]", the form of the real devices' specs: the head (up to the first ',')
// and the options after it.
struct HeadAndOptions {
  std::string_view head;
  std::vector<SpecParser::Option> options;
};
HeadAndOptions head_and_options(const KindSpec& s, std::initializer_list<std::string_view> known) {
  const std::size_t comma = s.opts.find(',');
  HeadAndOptions out{s.opts.substr(0, comma), {}};
  if (comma != std::string_view::npos)
    out.options = s.parser.options(s.opts.substr(comma + 1), s.kind, known);
  return out;
}

constexpr uint64_t kMaxTunQueues = 256;  // the kernel's limit for one tun (MAX_TAP_QUEUES)

Queues make_tun(const KindSpec& s) {
  // tun:IFNAME[,queues=N]
  const auto [name, options] = head_and_options(s, {"queues"});
  if (name.empty()) s.parser.fail("missing interface name (tun:IFNAME)");
  if (name.size() > 15) s.parser.fail("interface name longer than 15 characters");
  for (const char c : name) {
    if (c == '/' || c == ' ' || (c >= '\t' && c <= '\r')) {
      s.parser.fail("invalid character in interface name");
    }
  }
  uint32_t queues = 1;
  for (const auto& o : options) queues = static_cast<uint32_t>(s.parser.u64(o, 1, kMaxTunQueues));
  // queues=1: today's single-queue open; more: one IFF_MULTI_QUEUE descriptor per queue.
  const TunConfig c{.ifname = std::string(name), .multi_queue = queues > 1};
  return queues_of(queues, [&](uint32_t) { return make_tun_device(c); });  // DeviceError as is
}

constexpr int64_t kMaxSocketPriority = 15;  // the priorities a traffic-class map names

Queues make_afpacket(const KindSpec& s) {
  // afpacket:IFNAME[,KEY=VALUE...]
  const auto [name, options] = head_and_options(s, {"ring", "bypass", "prio", "kick", "queues"});
  AfPacketConfig c;
  c.ifname = std::string(name);
  if (c.ifname.empty()) s.parser.fail("missing interface name (afpacket:IFNAME)");
  uint32_t queues = 1;
  for (const auto& o : options) {
    if (o.key == "ring") c.ring = static_cast<uint32_t>(s.parser.u64(o, 8, 65536));
    else if (o.key == "bypass") c.bypass = s.parser.u64(o, 0, 1) != 0;
    else if (o.key == "prio")
      c.priority = static_cast<int32_t>(s.parser.u64(o, 0, kMaxSocketPriority));
    else if (o.key == "kick") c.kick_thread = s.parser.choice(o, {"inline", "thread"}) == 1;
    else if (o.key == "queues") queues = s.parser.queues(o);
  }
  if (c.priority >= 0 && c.priority + int64_t{queues} - 1 > kMaxSocketPriority)
    s.parser.fail("prio=" + std::to_string(c.priority) + " with queues=" + std::to_string(queues) +
                  " needs priorities up to " + std::to_string(c.priority + queues - 1) +
                  " (at most " + std::to_string(kMaxSocketPriority) + ")");
  // Queue i: its own socket and ring, at priority prio + i when prio is given.
  return queues_of(queues, [&](uint32_t i) {
    AfPacketConfig qc = c;
    if (qc.priority >= 0) qc.priority += static_cast<int32_t>(i);
    return make_afpacket_device(qc);
  });  // DeviceError as is
}

constexpr uint64_t kMaxXdpQueueId = 4095;
constexpr uint64_t kMaxUmemFrames = 262144;  // 512 MiB of 2 KiB frames per queue

Queues make_afxdp(const KindSpec& s) {
  // afxdp:IFNAME[:QUEUE][,umem=N,queues=N]
  const auto [head, options] = head_and_options(s, {"umem", "queues"});
  const std::size_t sep = head.find(':');
  AfXdpConfig c;
  c.ifname = std::string(head.substr(0, sep));
  if (c.ifname.empty()) s.parser.fail("missing interface name (afxdp:IFNAME[:QUEUE])");
  if (sep != std::string_view::npos)
    c.queue =
        static_cast<uint32_t>(s.parser.u64({"queue", head.substr(sep + 1)}, 0, kMaxXdpQueueId));
  uint32_t queues = 1;
  for (const auto& o : options) {
    if (o.key == "umem") c.umem = static_cast<uint32_t>(s.parser.u64(o, 0, kMaxUmemFrames));
    else queues = s.parser.queues(o);
  }
  if (c.queue + uint64_t{queues} - 1 > kMaxXdpQueueId)
    s.parser.fail("queues=" + std::to_string(queues) + " from queue " + std::to_string(c.queue) +
                  " would need queue ids up to " + std::to_string(c.queue + queues - 1) +
                  " (at most " + std::to_string(kMaxXdpQueueId) + ")");
  // TX queue i: its own XSK (and UMEM) on the interface's queue id QUEUE + i.
  return queues_of(queues, [&](uint32_t i) {
    AfXdpConfig qc = c;
    qc.queue += i;
    return make_afxdp_device(qc);
  });  // DeviceError as is
}

Queues make_udp(const KindSpec& s) {
  // udp:HOST:PORT[,KEY=VALUE...], HOST an IPv4 address, a name, or [IPv6]
  const auto [addr, options] = head_and_options(s, {"batch", "queues"});
  UdpConfig c;
  std::string_view host, port;
  if (addr.starts_with('[')) {
    const std::size_t close = addr.find(']');
    if (close == std::string_view::npos || close + 1 >= addr.size() || addr[close + 1] != ':')
      s.parser.fail("expected udp:[IPV6]:PORT");
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    const std::size_t sep = addr.rfind(':');
    if (sep == std::string_view::npos) s.parser.fail("expected udp:HOST:PORT");
    host = addr.substr(0, sep);
    port = addr.substr(sep + 1);
  }
  if (host.empty()) s.parser.fail("missing host (udp:HOST:PORT)");
  c.host = std::string(host);
  c.port = static_cast<uint16_t>(s.parser.u64({"port", port}, 1, 65535));
  uint32_t queues = 1;
  for (const auto& o : options) {
    if (o.key == "batch") c.batch = static_cast<uint32_t>(s.parser.u64(o, 1, 1024));
    else if (o.key == "queues") queues = s.parser.queues(o);
  }
  // One connected socket per queue (each its own local port).
  return queues_of(queues, [&](uint32_t) { return make_udp_device(c); });  // DeviceError as is
}

Queues make_null(const KindSpec& s) {
  uint32_t mtu = 1500, queues = 1;
  if (s.has_opts) {
    for (const auto& o : s.parser.options(s.opts, s.kind, {"mtu", "queues"})) {
      if (o.key == "mtu") mtu = static_cast<uint32_t>(s.parser.u64(o, kMinMtu, kMaxMtu));
      else queues = s.parser.queues(o);
    }
  }
  return queues_of(queues, [&](uint32_t) { return std::make_unique<NullDevice>(mtu); });
}

Queues make_nic(const KindSpec& s) {
  NicConfig c;
  uint32_t queues = 1;
  bool shared_wire = true;
  if (s.has_opts) {
    const SpecParser& p = s.parser;
    for (const auto& o : p.options(s.opts, s.kind, {"pkt", "doorbell", "ring", "rate", "clean",
                                                    "bql", "irq", "mtu", "queues", "wire"})) {
      if (o.key == "pkt") c.pkt_ns = p.u64(o, 0, 1'000'000'000);
      else if (o.key == "doorbell") c.doorbell_ns = p.u64(o, 0, 1'000'000'000);
      else if (o.key == "ring") c.ring = static_cast<uint32_t>(p.u64(o, 2, 1u << 20));
      else if (o.key == "rate") c.rate_gbit = p.real(o, 1e-5, 1e4);
      else if (o.key == "irq") c.irq_ns = p.u64(o, 0, 1'000'000'000);
      else if (o.key == "clean") c.clean_batch = static_cast<uint32_t>(p.u64(o, 1, 1u << 20));
      else if (o.key == "bql") c.bql = p.u64(o, 0, 1) != 0;
      else if (o.key == "mtu") c.mtu = static_cast<uint32_t>(p.u64(o, kMinMtu, kMaxMtu));
      else if (o.key == "queues") queues = p.queues(o);
      else if (o.key == "wire") shared_wire = p.choice(o, {"shared", "queue"}) == 0;
    }
  }
  // N rings on one wire of `rate` (a NIC's port), unless wire=queue gives each ring its own.
  std::shared_ptr<NicWire> wire = shared_wire ? std::make_shared<NicWire>() : nullptr;
  return queues_of(queues, [&](uint32_t) {
    return std::make_unique<NicDevice>(c, wire ? wire : std::make_shared<NicWire>());
  });  // the constructor checks ring power of two, clean <= ring
}

Queues make_fault(const KindSpec& s) {
  FaultConfig c;
  uint32_t queues = 1;
  if (s.has_opts) {
    const SpecParser& p = s.parser;
    for (const auto& o :
         p.options(s.opts, s.kind, {"busy", "stop", "stop_ns", "seed", "mtu", "queues"})) {
      if (o.key == "busy") c.busy_prob = p.real(o, 0.0, 1.0);
      else if (o.key == "stop") c.stop_prob = p.real(o, 0.0, 1.0);
      else if (o.key == "stop_ns") c.max_stop_ns = p.u64(o, 0, 60'000'000'000ull);
      else if (o.key == "seed") c.seed = p.u64(o, 0, UINT64_MAX);
      else if (o.key == "mtu") c.mtu = static_cast<uint32_t>(p.u64(o, kMinMtu, kMaxMtu));
      else if (o.key == "queues") queues = p.queues(o);
    }
  }
  // Each queue draws from its own random stream (seed + queue index).
  return queues_of(queues, [&](uint32_t i) {
    FaultConfig qc = c;
    qc.seed = c.seed + i;
    return std::make_unique<FaultDevice>(std::move(qc));
  });
}

// Every device kind make_device() knows, in the order help texts and error messages list them:
// the one list (device_kinds() and the "known: ..." text come from it). Each kind's capabilities
// (DeviceKind::takes_queues, ...) say what its factory accepts; tests/test_device_kinds.cpp
// builds every kind to check them.
struct KindEntry {
  DeviceKind about;
  Queues (*make)(const KindSpec&);
};
constexpr KindEntry kDeviceKinds[] = {
    {{.name = "null", .spec = "null[:mtu=N,queues=N]",
      .what = "accepts every packet at no cost, completes it at the doorbell",
      .takes_queues = true},
     make_null},
    {{.name = "nic",
      .spec = "nic[:pkt=NS,doorbell=NS,ring=N,rate=GBIT,clean=N,bql=0|1,irq=NS,mtu=N,queues=N,"
              "wire=shared|queue]",
      .what = "a modelled NIC: descriptor and doorbell costs, TX rings on one wire, completions, BQL",
      .takes_queues = true},
     make_nic},
    {{.name = "fault", .spec = "fault[:busy=P,stop=P,stop_ns=NS,seed=N,mtu=N,queues=N]",
      .what = "answers busy and stops its queue at random (for testing the driver loop)",
      .takes_queues = true},
     make_fault},
    {{.name = "pcap", .spec = "pcap:FILE", .what = "frames appended to a nanosecond pcap file (one TX queue)"},
     make_pcap},
    {{.name = "tun", .spec = "tun:IFNAME[,queues=N]",
      .what = "a TUN interface (IP packets, no Ethernet header); queues=N: IFF_MULTI_QUEUE, one fd each",
      .takes_queues = true},
     make_tun},
    {{.name = "afpacket", .spec = "afpacket:IFNAME[,ring=N,bypass=0|1,prio=P,kick=inline|thread,queues=N]",
      .what = "AF_PACKET TX ring (PACKET_TX_RING) per queue, past the kernel's qdisc unless bypass=0",
      .takes_queues = true, .reaches_peer = true},
     make_afpacket},
    {{.name = "udp", .spec = "udp:HOST:PORT[,batch=N,queues=N]",
      .what = "a connected UDP socket per queue, one sendmmsg per doorbell",
      .takes_queues = true, .reaches_peer = true},
     make_udp},
    {{.name = "afxdp", .spec = "afxdp:IFNAME[:QUEUE][,umem=N,queues=N]",
      .what = "an AF_XDP socket per queue id QUEUE.., TX only; sends its UMEM pool's N frames without a copy",
      .takes_queues = true, .reaches_peer = true},
     make_afxdp},
};
constexpr auto kAbout = [] {
  std::array<DeviceKind, std::size(kDeviceKinds)> about{};
  for (std::size_t i = 0; i < about.size(); ++i) about[i] = kDeviceKinds[i].about;
  return about;
}();

// "null, nic, fault, ...": the kinds for an error message.
std::string known_kinds() {
  std::string list;
  for (const DeviceKind& k : kAbout) list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

}  // namespace

std::span<const DeviceKind> device_kinds() noexcept { return kAbout; }

const DeviceKind* find_device_kind(std::string_view spec) noexcept {
  const std::string_view kind = spec.substr(0, spec.find(':'));
  for (const DeviceKind& k : kAbout)
    if (k.name == kind) return &k;
  return nullptr;
}

namespace {

// The TX queues a --device spec describes.
Queues make_queues(std::string_view spec) {
  const SpecParser parser(spec);
  const std::size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const bool has_opts = colon != std::string_view::npos;
  const std::string_view opts = has_opts ? spec.substr(colon + 1) : std::string_view{};

  if (kind.empty()) parser.fail("missing device kind (known: " + known_kinds() + ")");

  for (const KindEntry& k : kDeviceKinds) {
    if (k.about.name != kind) continue;
    try {
      return k.make(KindSpec{parser, kind, opts, has_opts});
    } catch (const ConfigError& e) {
      const std::string_view what = e.what();
      if (what.starts_with("device '")) throw;  // already ours
      // A constructor's own check ("nic: ring=3 must be ..."): name the spec as well.
      parser.fail(std::string(what));
    }
  }
  parser.fail("unknown device kind '" + printable(kind) + "' (known: " + known_kinds() + ")");
}

// The spec of a device of `count` queues like `first`: its own spec plus queues=N.
std::string with_queue_count(const Device& first, std::size_t count) {
  std::string spec = first.describe();
  if (count == 1) return spec;
  return spec + (spec.find(':') == std::string::npos ? ":" : ",") + "queues=" +
         std::to_string(count);
}

}  // namespace

std::unique_ptr<Device> make_device(std::string_view spec) {
  Queues queues = make_queues(spec);
  if (queues.size() != 1) {
    throw ConfigError("device '" + printable(spec) + "' has " + std::to_string(queues.size()) +
                      " TX queues: make_net_device() builds a multi-queue device");
  }
  return std::move(queues.front());
}

std::unique_ptr<NetDevice> make_net_device(std::string_view spec) {
  Queues queues = make_queues(spec);
  std::string describe = with_queue_count(*queues.front(), queues.size());
  return std::make_unique<NetDevice>(std::move(queues), std::move(describe));
}

}  // namespace txpath
