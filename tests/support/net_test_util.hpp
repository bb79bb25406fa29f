// SPDX-License-Identifier: MIT
// Helpers shared by test_testbed.cpp and test_sink.cpp: unique names per test process (ctest runs
// every TEST as its own process, in parallel with other suites), the root requirement, and
// running a shell command.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "net/testbed.hpp"
#include "txpath/error.hpp"

namespace txpath::test {

// Root (CAP_NET_ADMIN) is needed for netns/veth work: skip without it, but fail in CI (CI runs
// as root, so a skip there would hide the tests).
#define TXPATH_REQUIRE_ROOT()                                                              \
  do {                                                                                     \
    if (::geteuid() != 0) {                                                                \
      if (std::getenv("CI") != nullptr) FAIL() << "needs root (CI is set, so not skipped)"; \
      GTEST_SKIP() << "needs root (veth pairs and network namespaces)";                     \
    }                                                                                      \
  } while (0)

struct CmdOut {
  int status = -1;
  std::string out;
};

// Runs a shell command; stdout (and stderr, merged) collected.
inline CmdOut sh(const std::string& cmd) {
  CmdOut r;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A testbed configuration with names and a subnet unique to this process.
inline TestbedConfig unique_testbed(char tag) {
  const int pid = static_cast<int>(::getpid());
  TestbedConfig c;
  const std::string base = std::string("t") + tag + std::to_string(pid % 100000);
  c.host_if = base + "a";
  c.peer_if = base + "b";
  c.netns = "txpath-t" + std::string(1, tag) + std::to_string(pid);
  const int x = pid % 250 + 1;
  c.host_addr = "10.78." + std::to_string(x) + ".1/24";
  c.peer_addr = "10.78." + std::to_string(x) + ".2/24";
  return c;
}

// Expects make(spec) to throw a ConfigError (DeviceError included) whose message is one line
// starting "device 'SPEC': ".
template <class Make>
void expect_spec_error(Make make, const std::string& spec) {
  try {
    make(spec);
    ADD_FAILURE() << "accepted " << spec;
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("device '" + spec + "': ", 0), 0u) << what;
  }
}

inline bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace txpath::test
