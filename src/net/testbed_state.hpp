// SPDX-License-Identifier: MIT
// Private to the veth testbed (testbed.cpp): the records of what `txpath testbed up` made.
//
// One file per testbed, /run/txpath/testbed/HOST_IF, key=value lines: the kind (veth, ifb), the
// names and addresses, the queue count, the marker id (the interfaces carry the alias
// "txpath-testbed ID"), for a veth testbed the identity of the namespace (its SO_NETNS_COOKIE,
// never reused while the system runs, and the inode of /run/netns/NAME) and, once the testbed
// is complete, both MACs. A record without kind= or queues= (written before issue 14) is a veth
// testbed with one queue; one with a kind this version does not know is not a record.
//
// Origin: txpath issue 12 (the testbed touches only what it made).
// Trust: /run/txpath and /run/txpath/testbed must be real directories owned by root and not
// writable by group or others (the testbed directory is kept 0700), and each record a regular
// file owned by root, not group/world-writable; anything else is refused (StateDir) or ignored
// (read_record_unlocked). Writers hold an exclusive flock on the testbed directory, so
// concurrent `up`/`down` runs take turns. Not a hot path; no atomics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/testbed.hpp"

namespace txpath::net {

inline constexpr const char* kTestbedStateDir = "/run/txpath/testbed";

struct TestbedRecord {
  TestbedInfo info;          // config, addresses, MACs (zero until complete) and the marker id
  bool complete = false;     // the MACs were recorded (the testbed was fully set up)
  uint64_t netns_cookie = 0; // SO_NETNS_COOKIE of the namespace; 0: unknown
  uint64_t netns_dev = 0;    // st_dev / st_ino of /run/netns/NAME when it was made
  uint64_t netns_ino = 0;
};

// The interface alias that marks an interface as made by the testbed with this id.
std::string testbed_marker(const std::string& id);

// The state directory, created (0700) if missing, checked, and locked (flock, exclusive) for
// as long as the object lives. Throws DeviceError (one line) for a directory it cannot trust.
class StateDir {
 public:
  StateDir();
  ~StateDir();
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  // The record of the testbed on host_if; nullopt if there is none or it is not a record.
  // Throws DeviceError if the file is there but not trusted (owner, mode, not regular).
  std::optional<TestbedRecord> read(const std::string& host_if) const;
  // Every record in the directory (bounded), for the namespace-owner check.
  std::vector<TestbedRecord> all() const;
  void write(const TestbedRecord& record) const;  // atomic replace, mode 0600
  void remove(const std::string& host_if) const;

 private:
  int fd_ = -1;
};

// For readers that do not lock or create anything (find_testbed, any user): the record of the
// testbed on host_if if the directory and the file pass the trust checks; nullopt otherwise.
std::optional<TestbedRecord> read_record_unlocked(const std::string& host_if);

// A fresh random marker id (16 hex digits).
std::string new_testbed_id();

}  // namespace txpath::net
