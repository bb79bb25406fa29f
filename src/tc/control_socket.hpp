// SPDX-License-Identifier: MIT
// The control endpoint of a running txpath process: `txpath tc qdisc|class|link add|change|
// replace|del` hands a changed configuration to the process serving it (LiveStats::apply), and
// writes the file only once the process has applied it.
//
// Where and who: the sibling of the stats endpoint (stats_socket.hpp), in the same private
// directory (0700, owned by the effective uid, checked before every use), named like it with
// ".ctl" appended. Credentials are checked on both ends (SO_PEERCRED): the server serves only
// its own uid or root and closes any other connection before reading a byte of it; the client
// sends nothing to a server that is not the uid it expects (its own or root; root reaching a
// user's process expects that user: control_request_as()).
//
// Protocol, one change per connection; every message is a frame "<decimal length>\n<document>"
// (at most kMaxDocument bytes), except the client's one-byte go:
//   client  {"dev": "eth0", "config": "<the device's lines of the new configuration>"}
//   server  {"error": "<one line>", "status": <tc's exit status>}, close   refused: nothing changed
//       or  {"ready": true, "within_ms": N}     checked and built: it applies once told to
//   client  "g"                                  go: from now on it waits N + kGoTimeout
//   server  {"ok": true}  or  {"error": ..., "status": ...}, close   applied, or not
// The server applies a change only after it read the client's go, and it reads the go only within
// kGoTimeout of sending ready: a client that goes away (or gives up) before its go is sent leaves
// nothing applied. Once it read the go, the server always writes the final answer before it
// closes the connection, even while it stops (the change is never half-answered); its commit is
// bounded by the N it announced (TxQueue::edit_qdisc's timeout: it ran, or it never will). So the
// client knows: no go sent — not applied; an answer — what it says; the connection ended after
// the go without an answer — the process ended, and the tree it ran is gone with it; no answer
// within N + kGoTimeout (the process stopped, SIGSTOP) — the one case it cannot know, said so.
//
// Serving: one thread, poll(): any number of connections (up to kMaxClients; more wait in the
// listen backlog) are read at once, each dropped unless its whole request is in within
// kRequestTimeout of its accept, so an idle or slow client delays no one; complete requests are
// then handled one at a time (one change at a time per process), in the order they completed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tc/unix_endpoint.hpp"

namespace txpath::tc {

// What a server does with one request: `answer` alone (refused, nothing will change), or a
// `commit` that applies it and returns the final answer within `within`.
struct ControlPlan {
  std::string answer;
  std::function<std::string()> commit;
  std::chrono::milliseconds within{0};
};

class ControlServer {
 public:
  using Prepare = std::function<ControlPlan(const std::string& request)>;
  // Serves the control endpoint at `path` on one thread: each complete request goes to prepare()
  // (on that thread), then to its plan's commit once the client said go. RAII: the destructor
  // stops the thread (after the commit in progress, if any, and its answer) and removes the
  // socket file. The caller holds the endpoint's lock (StatsServer's): a socket file left at
  // `path` is a dead process's and is replaced. Throws ConfigError if it cannot be set up.
  ControlServer(std::string path, Prepare prepare);
  // A server whose every request is committed as handle(request) (bounded by kDefaultWithin).
  ControlServer(std::string path, std::function<std::string(const std::string&)> handle);
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const noexcept { return endpoint_.path(); }
  static constexpr std::chrono::seconds kRequestTimeout{5};
  static constexpr std::chrono::milliseconds kGoTimeout{1000};
  static constexpr std::chrono::milliseconds kDefaultWithin{5000};
  static constexpr int kMaxClients = 64;
  static constexpr uint64_t kMaxBuffered = uint64_t{64} << 20;  // requests being read, in all

 private:
  struct Conn;
  void serve() noexcept;
  void handle(Conn& c) noexcept;

  Prepare prepare_;
  wire::UnixEndpoint endpoint_;  // last: its destructor stops the thread that calls prepare_
};

// The control endpoint of configuration `config_path` and device `dev` (the stats endpoint's
// sibling). Throws ConfigError as stats_endpoint().
std::string control_endpoint(const std::string& config_path, const std::string& dev,
                             bool create = false);

// What control_request() got: the final answer, or why not (one line).
struct ControlReply {
  std::optional<std::string> answer;
  bool no_server = false;  // nobody serves the path: no process runs this configuration
  bool unknown = false;    // told to go, no answer in time: it may still apply (see above)
  bool ended = false;      // the server went away without an answer: before its go (nothing
                           // applied) or after it (the process ended: its tree is gone with it)
  std::string why_not;
};

// Sends `request` to the endpoint at `path` (the protocol above) and reads the final answer:
// `timeout` to connect, send and hear ready; then the server's own bound. Nothing is sent to a
// server that is neither our effective uid nor root, or, with `server_uid`, not that uid.
// Throws nothing.
ControlReply control_request(const std::string& path, const std::string& request,
                             std::chrono::milliseconds timeout,
                             std::optional<uid_t> server_uid = std::nullopt);

// One place a process may serve a device's control endpoint.
struct ControlTarget {
  std::string path;                 // what to connect to
  std::optional<uid_t> server_uid;  // the uid its server must run as (unset: ours or root)
  std::shared_ptr<wire::Fd> dir;    // the directory that path's /proc/self/fd/N names, kept open
  std::string why_not;              // set: a socket is there, but it cannot be reached safely
};

// Root's way to a user's process: the control endpoints the processes of `uid` serve for
// (config_path, dev), in that user's endpoint directories as stats_directory() makes them without
// XDG_RUNTIME_DIR (/tmp/txpath-UID) and with the usual one (/run/user/UID/txpath). Each directory
// is opened without following a link (O_NOFOLLOW, each step from a checked parent) and must be a
// directory owned by `uid` with no group/other bits; the socket is reached through
// /proc/self/fd/N/NAME, so no link of the user's is followed on the way, and its server must run
// as `uid` (SO_PEERCRED). A missing or foreign directory, or no socket there, is no target.
std::vector<ControlTarget> user_control_endpoints(const std::string& config_path, const std::string& dev,
                                                  uid_t uid);

// The most a client waits after its go, whatever a server announces.
inline constexpr std::chrono::milliseconds kMaxCommitWait{600000};

}  // namespace txpath::tc
