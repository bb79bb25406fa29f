// SPDX-License-Identifier: MIT
// The live-statistics endpoint of a running txpath process, and its client (`txpath tc -s`).
//
// A StatsServer listens on a unix stream socket in the abstract namespace (no file to leave
// behind: the name disappears with the last descriptor, so a crashed process never blocks the
// next one, and a name that is bound belongs to a live socket). Each connection is answered with
// one document — the string snapshot() returns at accept time, a JSON document — and closed.
//
// Wire format (private to this file pair): the decimal length of the document, '\n', then the
// document. fetch_stats() checks the length, so a document cut short (server stopped mid-send)
// is never returned as if it were whole.
//
// Served by one thread with poll(): the listening socket, a stop eventfd, and every client still
// being written (non-blocking, MSG_NOSIGNAL: a client that goes away costs an EPIPE, never a
// signal). At most kMaxClients are written at a time (more wait in the listen backlog); a client
// that has not taken its document within kClientTimeout is dropped. Only peers of the same uid
// (or root) get a document (SO_PEERCRED): abstract sockets have no file permissions.
//
// Abstract unix sockets belong to a network namespace: a client in another one (ip netns exec)
// does not see the endpoint.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace txpath::tc {

// A unix-socket endpoint in the abstract namespace named `name`, served by one thread: each
// connection receives the string snapshot() returns (a JSON document), then is closed. RAII: the
// destructor stops the thread and closes the socket. Throws ConfigError if the name is taken by
// another live process ("stats endpoint ... is in use by another process"), or if the socket
// cannot be set up. snapshot() runs on the server thread, one call per connection; if it throws,
// that connection is closed without a document.
class StatsServer {
 public:
  StatsServer(std::string name, std::function<std::string()> snapshot);
  ~StatsServer();
  StatsServer(const StatsServer&) = delete;
  StatsServer& operator=(const StatsServer&) = delete;

  const std::string& name() const noexcept { return name_; }

  static constexpr int kMaxClients = 64;
  static constexpr std::chrono::seconds kClientTimeout{10};

 private:
  void serve() noexcept;

  const std::string name_;
  std::function<std::string()> snapshot_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: written once by the destructor
  std::thread thread_;
};

// Connects to `name`; returns the document, or std::nullopt if nobody serves it (no such
// endpoint, refused, cut short, or no complete answer within `timeout`); throws nothing.
std::optional<std::string> fetch_stats(const std::string& name,
                                       std::chrono::milliseconds timeout);

// The endpoint name of configuration file `config_path` and device `dev`: "txpath-tc:" +
// realpath(config_path) (or the path made absolute if it does not exist) + ":" + dev; if longer
// than what sun_path allows (107 bytes after the abstract namespace's leading NUL), "txpath-tc:"
// + 32 hex digits of a hash of the full string + ":" + as much of the full string's tail as fits.
std::string stats_endpoint(const std::string& config_path, const std::string& dev);

// The longest name an endpoint can have (sizeof(sockaddr_un::sun_path) - 1).
std::size_t max_endpoint_name() noexcept;

}  // namespace txpath::tc
