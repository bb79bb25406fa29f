// SPDX-License-Identifier: MIT
// The control endpoint of a running txpath process: `txpath tc qdisc|class|link add|change|
// replace|del` hands a changed configuration to the process serving it (LiveStats::apply), and
// writes the file only once the process has applied it.
//
// Where and who: the sibling of the stats endpoint (stats_socket.hpp), in the same private
// directory (0700, owned by the effective uid, checked before every use), named like it with
// ".ctl" appended. Credentials are checked on both ends (SO_PEERCRED): the server serves only
// its own uid or root and closes any other connection before reading a byte of it; the client
// sends nothing to a server that is neither its own effective uid nor root.
//
// Protocol, one request per connection, both ways in the stats endpoint's format (the decimal
// length, '\n', the document; at most kMaxDocument bytes; ended by end of file):
//   request  {"dev": "eth0", "config": "<the device's lines of the new configuration>"}
//            then shutdown(SHUT_WR);
//   answer   {"ok": true}  or  {"error": "<one line>", "status": <tc's exit status>}, then close.
// The server handles one connection at a time; a client that has not sent its whole request
// within kRequestTimeout is dropped. The answer comes after the change was applied by the
// driver-loop owner (or refused, nothing changed).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "tc/unix_endpoint.hpp"

namespace txpath::tc {

// Serves the control endpoint at `path` on one thread: each request's document is handed to
// handle(), whose string is the answer. RAII: the destructor stops the thread and removes the
// socket file. The caller holds the endpoint's lock (StatsServer's): a socket file left at `path`
// is a dead process's and is replaced. Throws ConfigError if the socket cannot be set up.
class ControlServer {
 public:
  ControlServer(std::string path, std::function<std::string(const std::string&)> handle);
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const noexcept { return endpoint_.path(); }
  static constexpr std::chrono::seconds kRequestTimeout{5};

 private:
  void serve() noexcept;
  void answer(int fd) noexcept;

  std::function<std::string(const std::string&)> handle_;
  wire::UnixEndpoint endpoint_;  // last: its destructor stops the thread that calls handle_
};

// The control endpoint of configuration `config_path` and device `dev` (the stats endpoint's
// sibling). Throws ConfigError as stats_endpoint().
std::string control_endpoint(const std::string& config_path, const std::string& dev,
                             bool create = false);

// What control_request() got: the answer, or why not (one line).
struct ControlReply {
  std::optional<std::string> answer;
  bool no_server = false;  // nobody serves the path: no process runs this configuration
  std::string why_not;
};

// Sends `request` to the endpoint at `path` and reads its answer, within `timeout` in all.
// Nothing is sent to a server of another uid (neither ours nor root). Throws nothing.
ControlReply control_request(const std::string& path, const std::string& request,
                             std::chrono::milliseconds timeout);

}  // namespace txpath::tc
