// SPDX-License-Identifier: MIT
// Private to the testbed (testbed.cpp): the qdiscs of a testbed's host end.
//
// The qdisc a user gives (TestbedConfig::qdisc) is tc syntax, "pfifo limit 5000", "fq_codel
// target 2ms", any kind with any of its parameters: only tc(8) turns that text into the kernel's
// per-kind TCA_OPTIONS, so that qdisc is still set by running `tc qdisc replace` (argv, never a
// shell). The mq root of a multi-queue end has no parameters and goes through rtnetlink
// (net/rtnl.hpp) like the rest of the testbed.
//
// Origin: txpath issue 14 (multi-queue ends under mq, tc-mq(8)); split out of testbed.cpp by
// issue 30 when links, addresses and neighbours moved to rtnetlink. Not a hot path; no atomics.
#pragma once

#include "net/rtnl.hpp"
#include "net/testbed.hpp"

namespace txpath::net {

// config.qdisc at the root of config.host_if, or with several queues mq at the root (handle 1:)
// and config.qdisc on each of its classes 1:1 .. 1:N (tc reads the minor in hex). "noqueue" on a
// veth: nothing to do (a veth's default); on an ifb it is set as the root. `host` is a socket
// of the host end's namespace. Throws DeviceError, one line: for tc, the command and tc's first
// stderr line; for mq, the kernel's errno text.
void set_testbed_qdiscs(const TestbedConfig& config, RtnlSocket& host);

}  // namespace txpath::net
