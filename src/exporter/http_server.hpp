// SPDX-License-Identifier: MIT
// The exporter's HTTP/1.1 endpoint (`txpath exporter`, `txpath bench --metrics`): serves the
// metrics of txpath/metrics.hpp, in the format the client's Accept header asks for. Part of the
// tools (txpath_app), not of the library.
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

#include "txpath/metrics.hpp"

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

// The metrics endpoint. One thread (run()'s) accepts the clients and reads their request heads
// with poll(), never blocking on one; a complete head goes to a worker thread, where cpp-httplib
// (the distribution's libcpp-httplib, 0.11) parses it and writes its answer into memory; the
// loop then sends that answer. So a slow client costs a buffer in the loop, never a worker, and
// a scrape is never queued behind a slow reader.
//
// GET /metrics answers body(format) (200; the format negotiate_format() picks from Accept, its
// content_type(), "Vary: Accept"); another path 404, another method on /metrics 405 (Allow: GET),
// a request line httplib does not parse (an unknown method included) 400 as soon as that line is
// in; every answer "Connection: close". Limits:
//   * a head (request line and headers) of more than kMaxRequest bytes: 431;
//   * a head not complete within kReadTimeout of the accept, however slowly it trickles: dropped;
//   * at most kMaxPending connections still sending their head: a new one beyond drops the
//     oldest of them (so slow clients can never keep a newcomer out);
//   * at most kMaxClients requests answered at once (the body being built, or the answer sent): a
//     complete request beyond them drops the one that has been sending its answer longest (a
//     client that does not read it), or is answered 503 at once if all of them are being built;
//   * an answer not taken within kWriteTimeout of its first byte: dropped.
// stop() drops every client at once (a body being built is finished first, then thrown away).
class HttpServer {
 public:
  using Body = std::function<std::string(Format)>;

  // Binds and listens. Throws BadListen if `where.host` does not resolve, std::runtime_error if
  // the socket cannot be bound (in use, no permission).
  HttpServer(const ListenAddress& where, Body body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "HOST:PORT" actually bound (the port the kernel picked for 0).
  std::string bound() const;
  // Serves until stop() (async-signal-safe: it writes an eventfd) is called. Returns normally;
  // throws std::system_error if its worker threads cannot be started.
  void run();
  void stop() noexcept;

  static constexpr std::size_t kMaxRequest = 8 * 1024;
  static constexpr int kMaxClients = 32;
  static constexpr int kMaxPending = 256;
  static constexpr std::chrono::seconds kReadTimeout{5};
  static constexpr std::chrono::seconds kWriteTimeout{10};

  class Handler;  // httplib::Server: the routes, answering into memory (http_server.cpp)

 private:
  int listen_fd_ = -1;  // non-blocking, listening from construction on
  int stop_fd_ = -1;    // eventfd: readable once stop() was called, never read
  std::unique_ptr<Handler> handler_;
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
