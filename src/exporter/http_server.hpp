// SPDX-License-Identifier: MIT
// The exporter's HTTP/1.1 endpoint (`txpath exporter`, `txpath bench --metrics`): serves the
// OpenMetrics text of txpath/metrics.hpp. Part of the tools (txpath_app), not of the library.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace txpath::metrics {

// Why the listen address could not be used: not HOST:PORT, port out of range, a host that does
// not resolve (exit 2 in the CLI), as opposed to a bind failure (exit 1).
class BadListen : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where to listen: "HOST:PORT" or "[IPV6]:PORT", the port 0..65535 (0: the kernel picks one).
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
// Throws BadListen (one line naming `option`, the value quoted and escaped) if `value` is not
// HOST:PORT.
ListenAddress parse_listen(std::string_view value, std::string_view option = "--listen");

// The metrics endpoint, on cpp-httplib's httplib::Server (the distribution's libcpp-httplib,
// 0.11): GET /metrics answers body() (200, kContentType); another path 404, another method on
// /metrics 405 (Allow: GET); a request head over kMaxRequest bytes 431, a request line httplib
// does not parse (an unknown method included) 400; every answer "Connection: close". Each client
// is served on a thread of a pool of kMaxClients; one that arrives while all of them are busy is
// answered 503 at once and closed. A client that has not sent its request head within
// kReadTimeout of being accepted (however slowly it trickles bytes), or not taken the
// answer within kWriteTimeout, is dropped; stop() drops the clients in progress too. So a slow
// or hostile client never holds the others up for long.
class HttpServer {
 public:
  // Binds and listens. Throws BadListen if `where.host` does not resolve, std::runtime_error if
  // the socket cannot be bound (in use, no permission).
  HttpServer(const ListenAddress& where, std::function<std::string()> body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "HOST:PORT" actually bound (the port the kernel picked for 0).
  std::string bound() const;
  // Serves until stop() (async-signal-safe: it writes an eventfd) is called. Returns normally.
  void run();
  void stop() noexcept;

  static constexpr std::size_t kMaxRequest = 8 * 1024;
  static constexpr int kMaxClients = 32;
  static constexpr std::chrono::seconds kReadTimeout{5};
  static constexpr std::chrono::seconds kWriteTimeout{10};

 private:
  class Server;                     // httplib::Server with txpath's limits (http_server.cpp)
  int stop_fd_ = -1;                // eventfd: readable once stop() was called, never read
  std::unique_ptr<Server> server_;  // bound from construction on
  std::string bound_;
};

// An HttpServer of live_metrics_text() on its own thread, for a process that does something
// else meanwhile (`txpath bench --metrics`). RAII: the destructor stops and joins it. Throws as
// HttpServer's constructor.
class BackgroundExporter {
 public:
  explicit BackgroundExporter(const ListenAddress& where);
  ~BackgroundExporter();
  BackgroundExporter(const BackgroundExporter&) = delete;
  BackgroundExporter& operator=(const BackgroundExporter&) = delete;
  std::string bound() const { return server_.bound(); }

 private:
  HttpServer server_;
  std::thread thread_;
};

}  // namespace txpath::metrics
