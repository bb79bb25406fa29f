// SPDX-License-Identifier: MIT
// The exporter's HTTP/1.1 endpoint (exporter/http_server.hpp): one thread, poll(), every socket
// non-blocking, each client bounded in size and time.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <string>
#include <vector>

#include "exporter/http_server.hpp"
#include "core/text.hpp"
#include "tc/socket_io.hpp"
#include "txpath/metrics.hpp"

namespace txpath::metrics {

namespace {

using tc::wire::Clock;
using tc::wire::Fd;

struct Client {
  Fd fd;
  std::string in;   // the request so far (at most kMaxRequest bytes)
  std::string out;  // the answer, once the request is complete
  std::size_t sent = 0;
  Clock::time_point deadline;
};

std::string answer(int status, std::string_view reason, std::string_view type, const std::string& body) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  r += "Content-Type: " + std::string(type) + "\r\nContent-Length: " + std::to_string(body.size()) +
       "\r\nConnection: close\r\n";
  if (status == 405) r += "Allow: GET\r\n";
  return r + "\r\n" + body;
}

std::string plain(int status, std::string_view reason) {
  return answer(status, reason, "text/plain; charset=utf-8", std::string(reason) + "\n");
}

// The answer to the complete request head `head` (up to the blank line).
std::string respond(std::string_view head, const std::function<std::string()>& body) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !line.substr(sp2 + 1).starts_with("HTTP/1."))
    return plain(400, "Bad Request");
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));  // Prometheus may add parameters
  if (target != "/metrics") return plain(404, "Not Found");
  if (method != "GET") return plain(405, "Method Not Allowed");
  try {
    return answer(200, "OK", kContentType, body());
  } catch (const std::exception&) {
    return plain(500, "Internal Server Error");
  }
}

// Reads what `c` sent; false when it is done with (closed, error). Sets c.out once answered.
bool read_request(Client& c, const std::function<std::string()>& body) {
  char buf[4096];
  const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  const std::size_t room = HttpServer::kMaxRequest - c.in.size();
  c.in.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
  const std::size_t end = c.in.find("\r\n\r\n");
  if (end != std::string::npos) c.out = respond(std::string_view(c.in).substr(0, end), body);
  else if (static_cast<std::size_t>(n) > room || c.in.size() >= HttpServer::kMaxRequest)
    c.out = plain(431, "Request Header Fields Too Large");
  if (!c.out.empty()) {
    c.deadline = Clock::now() + HttpServer::kWriteTimeout;
    ::shutdown(c.fd.get(), SHUT_RD);  // nothing more is read
  }
  return true;
}

// Writes what `c` has not taken yet; false when it is done with (all written, or an error).
bool write_answer(Client& c) {
  const ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  c.sent += static_cast<std::size_t>(n);
  return c.sent < c.out.size();
}

void accept_clients(int listen_fd, std::list<Client>& clients) {
  while (clients.size() < static_cast<std::size_t>(HttpServer::kMaxClients)) {
    Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) return;
    clients.push_back(Client{std::move(fd), {}, {}, 0, Clock::now() + HttpServer::kReadTimeout});
  }
}

std::string host_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    ::inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host);
    port = ntohs(a.sin6_port);
    std::string out = "[";  // appended, not "[" + string: GCC 12 warns falsely (-Wrestrict)
    out.append(host).append("]:").append(std::to_string(port));
    return out;
  }
  const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
  ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

ListenAddress parse_listen(std::string_view value, std::string_view option) {
  const auto bad = [&](const std::string& why) {
    return BadListen(std::string(option) + " " + txpath::quoted(value) + ": " + why);
  };
  const std::size_t colon = value.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw bad("expected HOST:PORT (e.g. 127.0.0.1:9101)");
  std::string_view host = value.substr(0, colon);
  const std::string_view port = value.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad("expected [IPV6]:PORT");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    throw bad("an IPv6 address goes in brackets: [IPV6]:PORT");
  }
  unsigned long p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p > 65535)
    throw bad("the port must be a number from 0 to 65535");
  return ListenAddress{std::string(host), static_cast<uint16_t>(p)};
}

HttpServer::HttpServer(const ListenAddress& where, std::function<std::string()> body) : body_(std::move(body)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  if (const int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw BadListen("host " + txpath::quoted(where.host) + " does not resolve: " + ::gai_strerror(rc));
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
  std::string why = "no address";
  for (const addrinfo* a = found; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) continue;
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), 64) == 0) {
      listen_fd_ = fd.release();
      break;
    }
    why = tc::wire::errno_text(errno);
  }
  if (listen_fd_ < 0)
    throw std::runtime_error("cannot listen on " + txpath::quoted(where.host + ":" + port) + ": " + why);
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error("eventfd: " + tc::wire::errno_text(errno));
  }
}

HttpServer::~HttpServer() {
  ::close(listen_fd_);
  ::close(stop_fd_);
}

std::string HttpServer::bound() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  return host_text(ss);
}

void HttpServer::stop() noexcept {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
}

void HttpServer::run() {
  std::list<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    if (clients.size() >= static_cast<std::size_t>(kMaxClients)) fds[1].events = 0;  // backlog waits
    Clock::time_point next = Clock::now() + std::chrono::hours(1);
    for (const Client& c : clients) {
      fds.push_back({c.fd.get(), static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      next = std::min(next, c.deadline);
    }
    if (::poll(fds.data(), fds.size(), tc::wire::ms_until(next)) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    std::size_t i = 2;
    const Clock::time_point now = Clock::now();
    for (auto it = clients.begin(); it != clients.end(); ++i) {
      bool keep = now < it->deadline;
      if (keep && fds[i].revents) keep = it->out.empty() ? read_request(*it, body_) : write_answer(*it);
      it = keep ? std::next(it) : clients.erase(it);
    }
    if (fds[1].revents) accept_clients(listen_fd_, clients);
  }
}

BackgroundExporter::BackgroundExporter(const ListenAddress& where)
    : server_(where, live_metrics_text), thread_([this] { server_.run(); }) {}

BackgroundExporter::~BackgroundExporter() {
  server_.stop();
  thread_.join();
}

}  // namespace txpath::metrics
