// SPDX-License-Identifier: MIT
// `txpath testbed up|down|show`: creates, removes or prints the veth testbed (testbed.hpp).
// Exit codes: 0 ok (`down` also when there was nothing of txpath's to remove: it says so);
// 1 `show` found no testbed; 2 bad option, not root, a name in use by something txpath testbed
// did not make, an untrusted state directory, or the kernel refused (one line on stderr).
#include <fmt/core.h>

#include <cstdio>

#include "net_cmds.hpp"
#include "txpath/error.hpp"
#include "txpath/text.hpp"

namespace txpath::cli {

namespace {

std::string mac(const std::array<uint8_t, 6>& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4],
                     m[5]);
}

void print_info(const TestbedInfo& info) {
  const auto& c = info.config;
  fmt::print("host: {} {} {} (netns of the caller)\n", c.host_if, c.host_addr, mac(info.host_mac));
  fmt::print("peer: {} {} {} (netns {})\n", c.peer_if, c.peer_addr, mac(info.peer_mac), c.netns);
  fmt::print("qdisc: {} (root of {})\n", c.qdisc, c.host_if);
  fmt::print("mtu: {}\n", c.mtu);
}

std::string pair_text(const TestbedConfig& c) { return c.host_if + " / " + c.peer_if; }

// What down removed (or up replaced), one line each; `kept` lines say what stays and why.
void print_removal(const TestbedRemoval& r) {
  const auto& c = r.config;
  if (!r.recorded)
    fmt::print("no testbed made by txpath on {} (nothing removed)\n", c.host_if);
  else if (r.removed_pair && r.removed_netns)
    fmt::print("removed {} (netns {})\n", pair_text(c), c.netns);
  else if (r.removed_pair)
    fmt::print("removed {}\n", pair_text(c));
  else if (r.removed_netns)
    fmt::print("removed netns {}\n", c.netns);
  else
    fmt::print("the testbed txpath made on {} was already gone (its record is removed)\n",
               c.host_if);
  for (const auto& why : r.kept) fmt::print("kept: {}\n", why);
}

void add_names(CLI::App* sub, TestbedConfig& c) {
  sub->add_option("--host-if", c.host_if, "host end of the veth pair")->capture_default_str();
  sub->add_option("--peer-if", c.peer_if, "peer end, inside --netns")->capture_default_str();
  sub->add_option("--netns", c.netns, "network namespace of the peer end")->capture_default_str();
}

}  // namespace

void add_testbed_command(CLI::App& app, TestbedOptions& o) {
  CLI::App* tb = app.add_subcommand("testbed", "the veth testbed: a pair whose peer end lives in its own netns");
  tb->require_subcommand(1);
  o.up = tb->add_subcommand("up", "create (or replace) the testbed");
  add_names(o.up, o.config);
  o.up->add_option("--host-addr", o.config.host_addr, "IPv4 address/prefix of the host end")->capture_default_str();
  o.up->add_option("--peer-addr", o.config.peer_addr, "IPv4 address/prefix of the peer end")->capture_default_str();
  o.up->add_option("--qdisc", o.config.qdisc, "root qdisc of the host end (tc syntax; noqueue: none)")->capture_default_str();
  o.up->add_option("--mtu", o.config.mtu, "MTU of both ends")->capture_default_str();
  o.down = tb->add_subcommand("down", "remove the testbed on --host-if (only what `up` made)");
  add_names(o.down, o.config);
  o.show = tb->add_subcommand("show", "print the testbed whose host end is --host-if");
  o.show->add_option("--host-if", o.config.host_if, "host end of the veth pair")->capture_default_str();
  // `testbed --help` shows every subcommand's options too (each is a few lines).
  tb->set_help_flag();
  tb->set_help_all_flag("-h,--help", "Print this help message, with the options of up, down and show, and exit");
}

int run_testbed_command(const TestbedOptions& o) {
  try {
    if (o.up->parsed()) {
      TestbedRemoval replaced;
      const TestbedInfo info = testbed_up(o.config, &replaced);
      if (replaced)
        fmt::print("replaced the testbed txpath made on {} (netns {})\n",
                   pair_text(replaced.config), replaced.config.netns);
      for (const auto& why : replaced.kept) fmt::print("kept: {}\n", why);
      print_info(info);
      return 0;
    }
    if (o.down->parsed()) {
      print_removal(testbed_down(o.config));
      return 0;
    }
    if (o.show->parsed()) {
      const auto info = find_testbed(o.config.host_if);
      if (!info) {
        fmt::print("no testbed on {}\n", escape_user_text(o.config.host_if));
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
