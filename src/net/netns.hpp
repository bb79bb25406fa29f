// SPDX-License-Identifier: MIT
// Private helpers for src/net (the veth testbed and the sink): making and removing a named network
// namespace, running a function inside one, and small error-text helpers.
//
// Origin: written for txpath issue 5 from the setns(2) and ip-netns(8) manual pages; making and
// removing a name (issue 30) from ip-netns(8), unshare(2), mount(2) and umount(2).
// Invariant: setns(CLONE_NEWNET) changes only the calling thread's namespace, so in_netns() runs
// the function on a short-lived thread of its own; sockets the function creates stay in the
// namespace they were created in after that thread is gone. The caller's thread is never moved.
// Memory ordering: the result and any exception cross to the caller through std::thread::join(),
// which synchronises-with the end of the thread; no atomics.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace txpath::net {

// The reason for a failed setns/open of /run/netns/NAME, in words ("no such netns", "not
// permitted"); errno_value is the errno of the failure.
std::string netns_error_text(int errno_value);

// Runs fn() with the calling thread in the named network namespace (/run/netns/NAME). An empty
// name runs fn() directly. Exceptions thrown by fn() are rethrown in the caller. If entering the
// namespace fails, throws whatever on_error(errno) returns (wrapped so the type is kept).
void in_netns(const std::string& netns, const std::function<void()>& fn,
              const std::function<void(int errno_value)>& on_error);

// Makes the named network namespace NAME as ip-netns(8) describes it: /run/netns made a shared
// mount point (once), the empty file /run/netns/NAME created (O_EXCL: an existing name fails with
// EEXIST) and a new namespace, unshare(CLONE_NEWNET)'d on a short-lived thread, bind-mounted
// onto it. Returns "" when it is made, else why not in one line ("cannot create /run/netns/NAME:
// File exists"); nothing is left behind on failure.
std::string create_named_netns(const std::string& netns);
// Removes the name NAME: lazy unmount (MNT_DETACH) and unlink of /run/netns/NAME. The namespace
// itself, and the interfaces still in it, go when its last user does (asynchronously). Returns
// "" or why not, in one line.
std::string delete_named_netns(const std::string& netns);

// Is `name` a valid interface name (1..15 chars of [A-Za-z0-9_.-], not "." or "..")?
bool valid_ifname(const std::string& name);
// Is `name` a valid netns name (1..64 chars of [A-Za-z0-9_.-], not "." or "..")?
bool valid_netns_name(const std::string& name);

}  // namespace txpath::net
