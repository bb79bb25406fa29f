// SPDX-License-Identifier: MIT
// `txpath testbed up|down|show`: creates, removes or prints the veth testbed (testbed.hpp).
// Exit codes: 0 ok; 1 `show` found no testbed; 2 bad option or the kernel refused (one line).
#include <fmt/core.h>

#include <cstdio>

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
  fmt::print("host: {} {} {} (netns of the caller)\n", c.host_if, c.host_addr, mac(info.host_mac));
  fmt::print("peer: {} {} {} (netns {})\n", c.peer_if, c.peer_addr, mac(info.peer_mac), c.netns);
  fmt::print("qdisc: {} (root of {})\n", c.qdisc, c.host_if);
  fmt::print("mtu: {}\n", c.mtu);
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
  o.down = tb->add_subcommand("down", "remove the testbed");
  add_names(o.down, o.config);
  o.show = tb->add_subcommand("show", "print the testbed whose host end is --host-if");
  o.show->add_option("--host-if", o.config.host_if, "host end of the veth pair")->capture_default_str();
}

int run_testbed_command(const TestbedOptions& o) {
  try {
    if (o.up->parsed()) {
      print_info(testbed_up(o.config));
      return 0;
    }
    if (o.down->parsed()) {
      if (testbed_down(o.config))
        fmt::print("removed {} / {} (netns {})\n", o.config.host_if, o.config.peer_if, o.config.netns);
      else
        fmt::print("no testbed on {} (nothing removed)\n", o.config.host_if);
      return 0;
    }
    if (o.show->parsed()) {
      const auto info = find_testbed(o.config.host_if);
      if (!info) {
        fmt::print("no testbed on {}\n", o.config.host_if);
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
