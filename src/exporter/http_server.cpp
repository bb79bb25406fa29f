// SPDX-License-Identifier: MIT
// The exporter's HTTP/1.1 endpoint (exporter/http_server.hpp) on cpp-httplib: httplib parses the
// requests and writes the answers; this file keeps txpath's limits around it. A client's socket
// is read and written through ClientStream (the extension point httplib's own SSLServer uses:
// process_and_close_socket() over another httplib::Stream), which bounds the request head in
// bytes and time and gives up on stop(); ClientPool (httplib::TaskQueue) bounds the clients
// served at once. https://github.com/yhirose/cpp-httplib (README, "Server"), 0.11.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "exporter/http_server.hpp"
#include "core/text.hpp"
#include "tc/socket_io.hpp"
#include "txpath/metrics.hpp"

namespace txpath::metrics {

namespace {

using tc::wire::Clock;
using tc::wire::Fd;

constexpr const char* kTextPlain = "text/plain; charset=utf-8";

std::string_view reason_of(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// An error answer's body: its reason and a newline, as plain text.
void plain(httplib::Response& res, int status) {
  res.status = status;
  res.set_content(std::string(reason_of(status)) + "\n", kTextPlain);
}

// A whole answer written by hand, for the two cases httplib never sees: a head over the limit
// (httplib would wait for its end) and a client beyond the pool's cap.
std::string canned(int status) {
  const std::string body = std::string(reason_of(status)) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_of(status)) +
         "\r\nContent-Type: " + kTextPlain + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// A client's connection as httplib reads and writes it. Reads stop at HttpServer::kMaxRequest
// bytes (over_limit() then says so) and at the read deadline, kReadTimeout after the client was
// taken up; writes at kWriteTimeout after the first one; both at once when the server stops.
// Every recv() and send() is non-blocking, after a poll() that honours those deadlines.
class ClientStream final : public httplib::Stream {
 public:
  ClientStream(int fd, int stop_fd)
      : fd_(fd), stop_fd_(stop_fd), read_deadline_(Clock::now() + HttpServer::kReadTimeout) {}

  bool is_readable() const override { return pos_ < len_ || wait(POLLIN, read_deadline_); }
  bool is_writable() const override { return wait(POLLOUT, write_deadline()); }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

  bool over_limit() const noexcept { return over_; }
  bool wrote() const noexcept { return wrote_; }
  // Writes all of `answer` within the write deadline (or fails quietly).
  void send_all(std::string_view answer);

 private:
  Clock::time_point write_deadline() const {
    return started_writing_ ? write_deadline_ : Clock::now() + HttpServer::kWriteTimeout;
  }
  // One send() within the write deadline: bytes sent, 0 to try again, -1 to give up.
  ssize_t send_some(const char* ptr, size_t size);
  // Whether fd_ is ready for `events` before `deadline` (false too once the server stops).
  bool wait(short events, Clock::time_point deadline) const;
  using NameFn = int (*)(int, sockaddr*, socklen_t*);
  void address(NameFn fn, std::string& ip, int& port) const;

  int fd_;
  int stop_fd_;
  char buf_[4096];
  std::size_t pos_ = 0, len_ = 0;  // buf_[pos_, len_) not yet handed to httplib
  std::size_t taken_ = 0;          // bytes received from the client in all
  Clock::time_point read_deadline_;
  Clock::time_point write_deadline_{};
  bool started_writing_ = false;
  bool over_ = false;   // the head did not fit in kMaxRequest bytes: the answer is 431
  bool wrote_ = false;  // something was sent
};

bool ClientStream::wait(short events, Clock::time_point deadline) const {
  for (;;) {
    pollfd fds[2] = {{fd_, events, 0}, {stop_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, tc::wire::ms_until(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents) return false;  // error, deadline, or the server stops
    return (fds[0].revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

ssize_t ClientStream::read(char* ptr, size_t size) {
  if (pos_ == len_) {
    if (taken_ >= HttpServer::kMaxRequest) {
      over_ = true;
      return -1;
    }
    if (!wait(POLLIN, read_deadline_)) return -1;
    const ssize_t n = ::recv(fd_, buf_, std::min(sizeof buf_, HttpServer::kMaxRequest - taken_), MSG_DONTWAIT);
    if (n <= 0) return n == 0 ? 0 : -1;
    taken_ += static_cast<std::size_t>(n);
    pos_ = 0;
    len_ = static_cast<std::size_t>(n);
  }
  const std::size_t k = std::min(size, len_ - pos_);
  std::memcpy(ptr, buf_ + pos_, k);
  pos_ += k;
  return static_cast<ssize_t>(k);
}

ssize_t ClientStream::write(const char* ptr, size_t size) {
  if (over_) {  // httplib's 400 for a head it could not finish: the answer is ours, 431, alone
    if (!wrote_) send_all(canned(431));
    return static_cast<ssize_t>(size);
  }
  return send_some(ptr, size);
}

ssize_t ClientStream::send_some(const char* ptr, size_t size) {
  if (!started_writing_) {
    started_writing_ = true;
    write_deadline_ = Clock::now() + HttpServer::kWriteTimeout;
  }
  if (!wait(POLLOUT, write_deadline_)) return -1;
  const ssize_t n = ::send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) wrote_ = true;
  return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : n;
}

void ClientStream::send_all(std::string_view answer) {
  for (std::size_t sent = 0; sent < answer.size();) {
    const ssize_t n = send_some(answer.data() + sent, answer.size() - sent);
    if (n < 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

void ClientStream::address(NameFn fn, std::string& ip, int& port) const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  port = 0;
  if (fn(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char host[INET6_ADDRSTRLEN] = {};
  const bool v6 = ss.ss_family == AF_INET6;
  const void* a = v6 ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr)
                     : static_cast<const void*>(&reinterpret_cast<const sockaddr_in&>(ss).sin_addr);
  ::inet_ntop(ss.ss_family, a, host, sizeof host);
  ip = host;
  port = ntohs(v6 ? reinterpret_cast<const sockaddr_in6&>(ss).sin6_port : reinterpret_cast<const sockaddr_in&>(ss).sin_port);
}

// Set on the accepting thread while ClientPool runs a task it refused (see enqueue()).
thread_local bool t_refusing = false;

// httplib's TaskQueue: a ThreadPool of kMaxClients threads; a client accepted while all of
// them are taken is refused on the accepting thread (503, closed) instead of queued.
class ClientPool final : public httplib::TaskQueue {
 public:
  ClientPool() : pool_(static_cast<std::size_t>(HttpServer::kMaxClients)) {}
  void enqueue(std::function<void()> fn) override {
    // Only the accepting thread enqueues, so busy_ cannot grow between the check and the add.
    if (busy_.load(std::memory_order_acquire) >= HttpServer::kMaxClients) {
      t_refusing = true;
      fn();  // process_and_close_socket(): answers 503 without reading, closes
      t_refusing = false;
      return;
    }
    busy_.fetch_add(1, std::memory_order_relaxed);  // pairs with the fetch_sub below
    pool_.enqueue([this, fn = std::move(fn)] {
      fn();
      busy_.fetch_sub(1, std::memory_order_release);  // pairs with the acquire load above
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  std::atomic<int> busy_{0};  // clients taken and not yet closed
  httplib::ThreadPool pool_;
};

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

// httplib::Server with the endpoint's routes and txpath's limits.
class HttpServer::Server final : public httplib::Server {
 public:
  Server(int stop_fd, std::function<std::string()> body);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The listening socket (httplib's; closed by stop()).
  int listen_fd() const noexcept { return svr_sock_.load(); }

 private:
  bool process_and_close_socket(socket_t sock) override;

  int stop_fd_;
  std::function<std::string()> body_;
};

HttpServer::Server::Server(int stop_fd, std::function<std::string()> body) : stop_fd_(stop_fd), body_(std::move(body)) {
  // httplib's ThreadPool in a unique_ptr of its own: new_task_queue hands over a raw pointer.
  new_task_queue = [] { return std::make_unique<ClientPool>().release(); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second exporter
  // share the port silently instead of failing to bind.
  set_socket_options([](socket_t s) {
    const int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  // Only GET /metrics is served: another path 404, another method 405 (HEAD too, which httplib
  // would otherwise route to the GET handler).
  set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.path != "/metrics") {
      plain(res, 404);
    } else if (req.method != "GET") {
      plain(res, 405);
      res.set_header("Allow", "GET");
    } else {
      return HandlerResponse::Unhandled;
    }
    return HandlerResponse::Handled;
  });
  Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(body_(), std::string(kContentType));
    } catch (const std::exception&) {
      plain(res, 500);  // (httplib's own would carry the exception's text in a header)
    }
  });
  // httplib's own errors (400 for a request it does not parse, ...) get the same plain body.
  set_error_handler(HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return HandlerResponse::Unhandled;
    plain(res, res.status);
    return HandlerResponse::Handled;
  }));
}

HttpServer::Server::~Server() {
  // Never listened (run() not called): the bound socket is still ours to close.
  if (const int fd = svr_sock_.exchange(INVALID_SOCKET); fd != INVALID_SOCKET) ::close(fd);
}

bool HttpServer::Server::process_and_close_socket(socket_t sock) {
  const Fd fd(sock);
  ::fcntl(sock, F_SETFD, FD_CLOEXEC);  // not into the bench's worker processes
  ClientStream strm(sock, stop_fd_);
  if (t_refusing) {
    strm.send_all(canned(503));
  } else {
    bool closed = false;
    process_request(strm, /*close_connection=*/true, closed, std::function<void(httplib::Request&)>());
    if (strm.over_limit() && !strm.wrote()) strm.send_all(canned(431));
  }
  ::shutdown(sock, SHUT_RDWR);
  return true;
}

HttpServer::HttpServer(const ListenAddress& where, std::function<std::string()> body) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  if (const int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw BadListen("host " + txpath::quoted(where.host) + " does not resolve: " + ::gai_strerror(rc));
  ::freeaddrinfo(found);
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) throw std::runtime_error("eventfd: " + tc::wire::errno_text(errno));
  try {
    server_ = std::make_unique<Server>(stop_fd_, std::move(body));
    errno = 0;
    if (!server_->bind_to_port(where.host, where.port)) {
      const std::string why = errno ? tc::wire::errno_text(errno) : "no address";
      throw std::runtime_error("cannot listen on " + txpath::quoted(where.host + ":" + port) + ": " + why);
    }
  } catch (...) {
    server_.reset();
    ::close(stop_fd_);
    throw;
  }
  const int fd = server_->listen_fd();
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  ::listen(fd, 64);  // again: the backlog httplib was built with (5) is short for a burst
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  bound_ = host_text(ss);
}

HttpServer::~HttpServer() {
  server_.reset();
  ::close(stop_fd_);
}

std::string HttpServer::bound() const { return bound_; }

void HttpServer::stop() noexcept {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
}

void HttpServer::run() {
  // httplib's accept loop on a thread of its own; this one waits for stop() (an eventfd, which
  // a signal handler may write) and then stops httplib, which joins the client threads.
  std::atomic<bool> ended{false};
  std::thread accepting([this, &ended] {
    server_->listen_after_bind();
    ended.store(true);
    stop();  // it ended by itself (an accept error): run() returns too
  });
  pollfd pfd{stop_fd_, POLLIN, 0};
  while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
  }
  // httplib's stop() acts only once its loop runs: wait for it to start (or to have ended).
  while (!server_->is_running() && !ended.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  accepting.join();
}

BackgroundExporter::BackgroundExporter(const ListenAddress& where)
    : server_(where, live_metrics_text), thread_([this] { server_.run(); }) {}

BackgroundExporter::~BackgroundExporter() {
  server_.stop();
  thread_.join();
}

}  // namespace txpath::metrics
