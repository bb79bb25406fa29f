// SPDX-License-Identifier: MIT
// tc::Config: `txpath tc link add|del|set|show` (a device's TX queues, txqueuelen, mtu, XPS).
// See config.cpp for the model.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cpu_mask.hpp"
#include "core/text.hpp"
#include "qdisc/mq.hpp"
#include "tc/config_model.hpp"
#include "tc/config_parts.hpp"
#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_error.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

using namespace config_detail;

namespace {

// A decimal number of a link option (txqueuelen, mtu, txqueue): up to 32 bits, else a parse error.
uint32_t link_number(const std::string& v, const char* what) {
  uint64_t n = 0;
  const bool digits = !v.empty() && v.size() <= 10 &&
                      std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  for (char c : digits ? v : std::string()) n = n * 10 + static_cast<uint64_t>(c - '0');
  if (!digits || n > 0xFFFFFFFFull) throw ConfigError(std::string("invalid ") + what + " " + txpath::quoted(v));
  return static_cast<uint32_t>(n);
}

// `link show`'s lines for one device.
void show_link(const DeviceConfig& d, std::ostream& out) {
  out << d.name << ": txqueuelen " << d.txqueuelen << " mtu " << d.mtu;
  if (d.tx_queues != 1) out << " numtxqueues " << d.tx_queues;
  out << "\n";
  for (std::size_t q = 0; q < d.xps_cpus.size(); ++q)
    if (!d.xps_cpus[q].empty()) out << "    tx-" << q << " xps_cpus " << format_cpu_mask(d.xps_cpus[q]) << "\n";
}

// `xps_cpus MASK`: sysfs's hex CPU mask (base/cpu_mask.hpp); a malformed one is a bad argument.
std::vector<unsigned> parse_xps_mask(const std::string& v) {
  auto cpus = parse_cpu_mask(v);
  if (!cpus) throw TcArgError("argument " + txpath::quoted(v) + " is wrong: Invalid \"xps_cpus\" mask (hex words, as in sysfs)");
  return std::move(*cpus);
}

// `link set dev D txqueue Q xps_cpus MASK`: both or neither, Q one of the device's TX queues.
void set_xps(DeviceConfig& d, std::optional<uint32_t> txqueue, const std::optional<std::vector<unsigned>>& cpus) {
  if (!txqueue || !cpus) throw TcArgError("xps_cpus needs txqueue Q, and txqueue needs xps_cpus MASK");
  if (*txqueue >= d.tx_queues)
    rejected("device " + txpath::quoted(d.name) + " has no TX queue " + std::to_string(*txqueue) + " (numtxqueues " +
             std::to_string(d.tx_queues) + ")");
  if (d.xps_cpus.size() < d.tx_queues) d.xps_cpus.resize(d.tx_queues);
  d.xps_cpus[*txqueue] = *cpus;
}

// ip's `numtxqueues N`: a number (else ip's argument error, 255) in 1..kMaxTxQueues (else the
// kernel's refusal, 2).
uint32_t parse_tx_queues(const std::string& v) {
  const auto n = parse_u32(v);
  if (!n) throw TcArgError("argument " + txpath::quoted(v) + " is wrong: Invalid \"numtxqueues\" value");
  if (*n < 1 || *n > kMaxTxQueues)
    rejected("Invalid number of transmit queues (1.." + std::to_string(kMaxTxQueues) + ").");
  return *n;
}

}  // namespace

bool Config::link_command(std::string_view cmd, std::span<const std::string> args, std::ostream& out) {
  DeviceConfig dc;
  bool have_dev = false;
  std::optional<uint32_t> txqueuelen, mtu, tx_queues, txqueue;
  std::optional<std::vector<unsigned>> xps;
  const auto number = link_number;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "dev" || a == "name") {
      dc.name = next_arg(args, i);
      have_dev = true;
    } else if (a == "txqueuelen" || a == "qlen" || a == "txqlen") {
      txqueuelen = number(next_arg(args, i), "txqueuelen");
    } else if (a == "mtu") {
      mtu = number(next_arg(args, i), "mtu");
      if (*mtu < 68 || *mtu > 65535) rejected("mtu " + std::to_string(*mtu) + " is out of range (68..65535)");
    } else if (a == "numtxqueues") {
      tx_queues = parse_tx_queues(next_arg(args, i));
    } else if (a == "txqueue") {
      txqueue = number(next_arg(args, i), "txqueue");
    } else if (a == "xps_cpus") {
      xps = parse_xps_mask(next_arg(args, i));
    } else if (a == "type") {
      (void)next_arg(args, i);  // dummy, veth ...: every configured device is the same to tc
    } else if (!have_dev && !a.empty() && a[0] != '-') {
      dc.name = a;  // ip's "ip link add NAME type dummy"
      have_dev = true;
    } else {
      throw ConfigError("link: unknown argument " + txpath::quoted(a));
    }
  }
  if (have_dev) check_device_name(dc.name);
  if (matches(cmd, "show") || matches(cmd, "list")) {
    for (const auto& d : state_->devs) {
      if (have_dev && d.config.name != dc.name) continue;
      show_link(d.config, out);
    }
    if (have_dev && !find(dc.name)) need(dc.name);
    return false;
  }
  if (!have_dev) throw TcArgError("Not enough information: \"dev\" argument is required.");
  if (cmd == "add") {
    if (find(dc.name)) rejected("device " + txpath::quoted(dc.name) + " already exists");
    dc.txqueuelen = txqueuelen.value_or(1000);
    dc.mtu = mtu.value_or(1500);
    dc.tx_queues = tx_queues.value_or(1);
    state_->devs.emplace_back().config = dc;
    state_->by_name.emplace(dc.name, std::prev(state_->devs.end()));
    return true;
  }
  if (matches(cmd, "delete")) {
    const auto it = state_->by_name.find(dc.name);
    if (it == state_->by_name.end()) throw ConfigError("Cannot find device " + txpath::quoted(dc.name));
    state_->devs.erase(it->second);
    state_->by_name.erase(it);
    return true;
  }
  if (cmd == "set" || matches(cmd, "change")) {
    DeviceTree& d = need(dc.name);
    if (tx_queues && *tx_queues != d.config.tx_queues)
      rejected("the TX queues of a device are fixed when it is added (numtxqueues " +
               std::to_string(d.config.tx_queues) + "): delete and add it again");
    const DeviceConfig before = d.config;
    if (xps || txqueue) set_xps(d.config, txqueue, xps);
    if (txqueuelen) d.config.txqueuelen = *txqueuelen;
    if (mtu) d.config.mtu = *mtu;
    try {
      validate(d);
    } catch (...) {
      d.config = before;
      throw;
    }
    return true;
  }
  throw ConfigError("link: unknown command " + txpath::quoted(cmd) + " (add, del, set, show)");
}

}  // namespace txpath::tc
