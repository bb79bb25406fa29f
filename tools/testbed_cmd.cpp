// SPDX-License-Identifier: MIT
// `txpath testbed up|down|show`: creates, removes or prints a testbed (testbed.hpp): the veth
// pair (--kind veth, the default) or the ifb null NIC (--kind ifb, whose names and addresses
// default to ifb_testbed_config()'s).
// Exit codes: 0 ok (`down` also when there was nothing of txpath's to remove: it says so);
// 1 `show` found no testbed; 2 bad option, not root, a name in use by something txpath testbed
// did not make, an untrusted state directory, or the kernel refused (one line on stderr).
#include <fmt/core.h>

#include <cstdio>

#include "cli_numbers.hpp"
#include "core/text.hpp"
#include "net_cmds.hpp"
#include "txpath/error.hpp"

namespace txpath::cli {

namespace {

std::string mac(const std::array<uint8_t, 6>& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4],
                     m[5]);
}

void print_info(const TestbedInfo& info) {
  const auto& c = info.config;
  if (c.kind == TestbedKind::veth) {
    fmt::print("host: {} {} {} (netns of the caller)\n", c.host_if, c.host_addr, mac(info.host_mac));
    fmt::print("peer: {} {} {} (netns {})\n", c.peer_if, c.peer_addr, mac(info.peer_mac), c.netns);
  } else {
    fmt::print("host: {} {} {} (ifb: a null NIC, netns of the caller)\n", c.host_if, c.host_addr,
               mac(info.host_mac));
    fmt::print("target: {} {} (static neighbour; nothing receives: {} counts each frame in rx_packets)\n",
               c.peer_addr, mac(info.peer_mac), c.host_if);
  }
  if (c.queues > 1 && c.qdisc != "noqueue")
    fmt::print("qdisc: mq (root of {}), {} on each of its {} queues\n", c.host_if, c.qdisc, c.queues);
  else
    fmt::print("qdisc: {} (root of {})\n", c.qdisc, c.host_if);
  fmt::print("mtu: {}\n", c.mtu);
  fmt::print("queues: {}\n", c.queues);
}

// "H / P" for a veth testbed, "H (ifb)" for an ifb one.
std::string pair_text(const TestbedConfig& c) {
  return c.kind == TestbedKind::veth ? c.host_if + " / " + c.peer_if : c.host_if + " (ifb)";
}

std::string netns_text(const TestbedConfig& c) {
  return c.kind == TestbedKind::veth ? " (netns " + c.netns + ")" : "";
}

// What down removed (or up replaced), one line each; `kept` lines say what stays and why.
void print_removal(const TestbedRemoval& r) {
  const auto& c = r.config;
  if (!r.recorded)
    fmt::print("no testbed made by txpath on {} (nothing removed)\n", c.host_if);
  else if (r.removed_pair && r.removed_netns)
    fmt::print("removed {}{}\n", pair_text(c), netns_text(c));
  else if (r.removed_pair)
    fmt::print("removed {}\n", pair_text(c));
  else if (r.removed_netns)
    fmt::print("removed netns {}\n", c.netns);
  else
    fmt::print("the testbed txpath made on {} was already gone (its record is removed)\n",
               c.host_if);
  for (const auto& why : r.kept) fmt::print("kept: {}\n", why);
}

void add_kind(CLI::App* sub, TestbedConfig& c) {
  sub->add_option_function<std::string>(
         "--kind",
         [&c](const std::string& kind) {
           c.kind = kind == testbed_kind_name(TestbedKind::ifb) ? TestbedKind::ifb : TestbedKind::veth;
         },
         "veth: a veth pair with its peer in a netns; ifb: a null NIC")
      ->check(CLI::IsMember({testbed_kind_name(TestbedKind::veth), testbed_kind_name(TestbedKind::ifb)}))
      ->default_str("veth");
}

void add_host_if(CLI::App* sub, TestbedConfig& c) {
  sub->add_option("--host-if", c.host_if, "host end of the veth pair (ifb: the device; default txpifb0)")
      ->capture_default_str();
}

void add_names(CLI::App* sub, TestbedConfig& c) {
  add_kind(sub, c);
  add_host_if(sub, c);
  sub->add_option("--peer-if", c.peer_if, "peer end, inside --netns (veth only)")->capture_default_str();
  sub->add_option("--netns", c.netns, "network namespace of the peer end (veth only)")->capture_default_str();
}

bool given(const CLI::App* sub, const char* name) {
  const CLI::Option* opt = sub->get_option_no_throw(name);
  return opt != nullptr && opt->count() > 0;
}

// The request with --kind ifb's defaults for what was not given; ConfigError for an option only
// a veth testbed has.
TestbedConfig effective_config(const TestbedOptions& o, const CLI::App* sub) {
  TestbedConfig c = o.config;
  if (c.kind != TestbedKind::ifb) return c;
  for (const char* veth_only : {"--peer-if", "--netns"})
    if (given(sub, veth_only))
      throw ConfigError(std::string(veth_only) +
                        " is for --kind veth: an ifb testbed has no peer interface or netns");
  const TestbedConfig d = ifb_testbed_config();
  if (!given(sub, "--host-if")) c.host_if = d.host_if;
  if (!given(sub, "--host-addr")) c.host_addr = d.host_addr;
  if (!given(sub, "--peer-addr")) c.peer_addr = d.peer_addr;
  c.peer_if = d.peer_if;
  c.netns = d.netns;
  return c;
}

}  // namespace

void add_testbed_command(CLI::App& app, TestbedOptions& o) {
  CLI::App* tb = app.add_subcommand(
      "testbed", "a testbed: a veth pair whose peer end lives in its own netns, or an ifb null NIC");
  tb->require_subcommand(1);
  o.up = tb->add_subcommand("up", "create (or replace) the testbed");
  add_names(o.up, o.config);
  o.up->add_option("--host-addr", o.config.host_addr, "IPv4 address/prefix of the host end (ifb default 10.88.0.1/24)")->capture_default_str();
  o.up->add_option("--peer-addr", o.config.peer_addr, "IPv4 address/prefix of the peer end (ifb: the target in the host's subnet the kernel row sends to; default 10.88.0.2/24)")->capture_default_str();
  o.up->add_option("--qdisc", o.config.qdisc, "root qdisc of the host end, or with --queues above 1 the qdisc under mq on each queue (tc syntax; noqueue: none)")->capture_default_str();
  o.up->add_option("--mtu", o.config.mtu, "MTU of both ends")
      ->transform(decimal_integer<decltype(o.config.mtu)>())
      ->capture_default_str();
  o.up->add_option("--queues", o.config.queues, "TX and RX queues of each end; above 1 the host end gets mq at its root")
      ->transform(decimal_integer<decltype(o.config.queues)>())
      ->check(CLI::Range(1u, kMaxTestbedQueues))
      ->capture_default_str();
  o.down = tb->add_subcommand("down", "remove the testbed on --host-if (only what `up` made)");
  add_names(o.down, o.config);
  o.show = tb->add_subcommand("show", "print the testbed whose host end is --host-if");
  add_kind(o.show, o.config);
  add_host_if(o.show, o.config);
  // `testbed --help` shows every subcommand's options too (each is a few lines).
  tb->set_help_flag();
  tb->set_help_all_flag("-h,--help", "Print this help message, with the options of up, down and show, and exit");
}

int run_testbed_command(const TestbedOptions& o) {
  try {
    if (o.up->parsed()) {
      TestbedRemoval replaced;
      const TestbedInfo info = testbed_up(effective_config(o, o.up), &replaced);
      if (replaced)
        fmt::print("replaced the testbed txpath made on {}{}\n", pair_text(replaced.config),
                   netns_text(replaced.config));
      for (const auto& why : replaced.kept) fmt::print("kept: {}\n", why);
      print_info(info);
      return 0;
    }
    if (o.down->parsed()) {
      print_removal(testbed_down(effective_config(o, o.down)));
      return 0;
    }
    if (o.show->parsed()) {
      const TestbedConfig c = effective_config(o, o.show);
      const auto info = find_testbed(c.host_if);
      if (!info) {
        fmt::print("no testbed on {}\n", escape_user_text(c.host_if));
        return 1;
      }
      print_info(*info);
      return 0;
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }
  return 2;
}

}  // namespace txpath::cli
