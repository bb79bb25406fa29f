// SPDX-License-Identifier: MIT
// The exporter's HTTP/1.1 endpoint (exporter/http_server.hpp). Our own poll() loop accepts the
// clients, reads their request heads (non-blocking, a deadline for the whole head) and sends the
// answers; cpp-httplib parses a complete head and builds its answer on a worker thread, over a
// Stream in memory (the extension point httplib's own SSLServer uses: process_request() over
// another httplib::Stream), so httplib never touches a socket and no worker waits for a client.
// https://github.com/yhirose/cpp-httplib (README, "Server"), 0.11.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exporter/http_server.hpp"
#include "core/text.hpp"
#include "tc/socket_io.hpp"

namespace txpath::metrics {

namespace {

using tc::wire::Clock;
using tc::wire::Fd;

constexpr const char* kTextPlain = "text/plain; charset=utf-8";
constexpr int kBacklog = 64;      // the kernel's accept queue
constexpr int kAcceptBatch = 16;  // accepted per turn of the loop, before the clients are read again

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

// A whole answer written by hand, for what httplib never sees: a head over the limit, a request
// beyond kMaxClients.
std::string canned(int status) {
  const std::string body = std::string(reason_of(status)) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_of(status)) +
         "\r\nContent-Type: " + kTextPlain + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

std::string host_text(const sockaddr_storage& ss, bool brackets, int* port_out = nullptr) {
  char host[INET6_ADDRSTRLEN] = {};
  const bool v6 = ss.ss_family == AF_INET6;
  const auto& a6 = reinterpret_cast<const sockaddr_in6&>(ss);
  const auto& a4 = reinterpret_cast<const sockaddr_in&>(ss);
  ::inet_ntop(ss.ss_family, v6 ? static_cast<const void*>(&a6.sin6_addr) : static_cast<const void*>(&a4.sin_addr),
              host, sizeof host);
  const uint16_t port = ntohs(v6 ? a6.sin6_port : a4.sin_port);
  if (port_out) *port_out = port;
  if (!brackets) return host;
  std::string out = v6 ? "[" : "";  // appended, not "[" + string: GCC 12 warns falsely (-Wrestrict)
  out.append(host).append(v6 ? "]:" : ":").append(std::to_string(port));
  return out;
}

// Whether `line` (without its "\n") is a request line httplib parses: METHOD TARGET HTTP/1.x.
bool request_line_ok(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  const std::size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos || b == a + 1 || line.find(' ', b + 1) != std::string_view::npos) return false;
  static constexpr std::string_view kMethods[] = {"GET",     "HEAD",  "POST",  "PUT", "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"};
  const std::string_view method = line.substr(0, a), version = line.substr(b + 1);
  return std::find(std::begin(kMethods), std::end(kMethods), method) != std::end(kMethods) &&
         (version == "HTTP/1.1" || version == "HTTP/1.0");
}

enum class Head { kPartial, kComplete, kTooLarge };

// Whether the bytes received so far hold a whole request head (or a request line httplib will
// refuse anyway: answered at once, as httplib alone would), or can no longer be one. `from`: how
// many of them were looked at before (only what follows is searched: a client that trickles costs
// linear time); `line_end`: where the request line ends, npos until it does.
Head head_state(std::string_view in, std::size_t from, std::size_t& line_end) {
  if (line_end == std::string_view::npos) {
    line_end = in.find('\n', from);
    if (line_end != std::string_view::npos && !request_line_ok(in.substr(0, line_end))) return Head::kComplete;
  }
  if (in.find("\r\n\r\n", from >= 3 ? from - 3 : 0) != std::string_view::npos ||
      in.find("\n\n", from >= 1 ? from - 1 : 0) != std::string_view::npos)
    return Head::kComplete;
  return in.size() >= HttpServer::kMaxRequest ? Head::kTooLarge : Head::kPartial;
}

// Threads that run the jobs handed to them; the destructor lets them finish the jobs queued, then
// joins them (also when the constructor throws half-way: each std::jthread joins itself).
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this](std::stop_token stop) { work(stop); });
  }
  void enqueue(std::function<void()> job) {
    {
      const std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
  }

 private:
  void work(const std::stop_token& stop) {
    for (;;) {
      std::unique_lock lock(mutex_);
      if (!ready_.wait(lock, stop, [this] { return !jobs_.empty(); })) return;  // stopped, none left
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
    }
  }

  std::mutex mutex_;  // guards jobs_
  std::condition_variable_any ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::jthread> threads_;  // last: joined before the rest goes
};

// The stream httplib reads a request from and writes its answer to: the head the loop received,
// then end of file; the answer into out. socket() is none: httplib never touches the client.
class BufferStream final : public httplib::Stream {
 public:
  BufferStream(std::string_view in, const sockaddr_storage& peer) : in_(in), peer_(peer) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t k = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, k);
    pos_ += k;
    return static_cast<ssize_t>(k);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = host_text(peer_, false, &port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = 0;
  }
  socket_t socket() const override { return INVALID_SOCKET; }

  std::string out;

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  sockaddr_storage peer_;
};

}  // namespace

// httplib::Server with the endpoint's routes; never listens (the loop below does).
class HttpServer::Handler final : public httplib::Server {
 public:
  explicit Handler(Body body);
  // The whole answer to the request head `head` from `peer`, as bytes to send.
  std::string answer(std::string_view head, const sockaddr_storage& peer);

 private:
  Body body_;
};

HttpServer::Handler::Handler(Body body) : body_(std::move(body)) {
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
  Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    std::string accept;  // every Accept header, as one list
    for (auto [it, end] = req.headers.equal_range("Accept"); it != end; ++it)
      accept += (accept.empty() ? "" : ",") + it->second;
    const Format format = negotiate_format(accept);
    try {
      res.set_content(body_(format), std::string(content_type(format)));
      res.set_header("Vary", "Accept");
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
  // One request answered here, before any worker thread exists: httplib builds function-local
  // statics on its first request (the set of method names its request-line parser checks), and
  // the workers must find them built (the threads' start orders them after this). Without it two
  // first requests build and read them at once, under guards ThreadSanitizer cannot see in the
  // uninstrumented library: a reported race. A path that is not /metrics: body_ is not called.
  sockaddr_storage loopback{};
  auto& in = reinterpret_cast<sockaddr_in&>(loopback);
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  answer("GET / HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n", loopback);
}

std::string HttpServer::Handler::answer(std::string_view head, const sockaddr_storage& peer) {
  BufferStream strm(head, peer);
  bool closed = false;
  process_request(strm, /*close_connection=*/true, closed, std::function<void(httplib::Request&)>());
  return strm.out.empty() ? canned(400) : std::move(strm.out);
}

namespace {

// One connection, as the loop holds it.
struct Client {
  enum class State { kReading, kAnswering, kWriting };
  Fd fd;
  sockaddr_storage peer{};
  State state = State::kReading;
  bool counted = false;  // one of the kMaxClients requests answered at once
  Clock::time_point deadline;  // reading: the whole head's; writing: the whole answer's
  std::string data;            // the head received so far, then the answer
  std::size_t line_end = std::string::npos;  // where the request line ends in data
  std::size_t sent = 0;
};

// One run() of the server: the clients, the worker threads, the answers they hand back.
class ClientLoop {
 public:
  ClientLoop(int listen_fd, int stop_fd, HttpServer::Handler& handler);
  ~ClientLoop();
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;
  void run();

 private:
  using Clients = std::map<uint64_t, Client>;  // by accept order: the first pending is the oldest

  void accept_some(Clock::time_point now);
  void read_from(Clients::iterator it, Clock::time_point now);
  void dispatch(Clients::iterator it, Clock::time_point now);
  void start_writing(Client& c, std::string answer, Clock::time_point now);
  // Sends what the socket takes; closes the client once all is sent or the send fails.
  void write_to(Clients::iterator it);
  void take_answers(Clock::time_point now);
  void expire(Clock::time_point now);
  void close_client(Clients::iterator it);
  bool drop_oldest_pending();
  bool drop_slowest_reader();
  int pending() const noexcept { return static_cast<int>(clients_.size()) - answering_; }

  int listen_fd_;
  int stop_fd_;
  HttpServer::Handler& handler_;
  Clients clients_;
  uint64_t next_id_ = 0;
  int answering_ = 0;                     // clients counted in kMaxClients
  Clock::time_point paused_until_{};      // no accept() before (out of file descriptors)
  Fd wake_;                               // eventfd: a worker handed an answer back
  std::mutex done_mutex_;                 // guards done_
  std::vector<std::pair<uint64_t, std::string>> done_;  // answers built, by client id
  Workers workers_;                       // last: its threads use the members above
};

ClientLoop::ClientLoop(int listen_fd, int stop_fd, HttpServer::Handler& handler)
    : listen_fd_(listen_fd), stop_fd_(stop_fd), handler_(handler),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), workers_(HttpServer::kMaxClients) {
  if (wake_.get() < 0) throw std::runtime_error("eventfd: " + tc::wire::errno_text(errno));
}

// Every client is dropped at once; then workers_ goes (a body in progress is finished, within the
// scrape's own bound, and thrown away).
ClientLoop::~ClientLoop() { clients_.clear(); }

void ClientLoop::close_client(Clients::iterator it) {
  if (it->second.counted) --answering_;
  ::shutdown(it->second.fd.get(), SHUT_RDWR);
  clients_.erase(it);
}

bool ClientLoop::drop_oldest_pending() {
  for (auto it = clients_.begin(); it != clients_.end(); ++it)
    if (!it->second.counted) {
      close_client(it);
      return true;
    }
  return false;
}

// Room for a request when all kMaxClients are taken: the client that has been sending its answer
// longest (one that does not read it) is dropped, so clients that do not take their answers never
// keep a scrape out; only bodies being built do.
bool ClientLoop::drop_slowest_reader() {
  auto slowest = clients_.end();
  for (auto it = clients_.begin(); it != clients_.end(); ++it)
    if (it->second.counted && it->second.state == Client::State::kWriting &&
        (slowest == clients_.end() || it->second.deadline < slowest->second.deadline))
      slowest = it;
  if (slowest == clients_.end()) return false;
  close_client(slowest);
  return true;
}

void ClientLoop::accept_some(Clock::time_point now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    Fd fd(::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of file descriptors or memory: make room from the pending clients, else wait a while.
      if ((errno != EMFILE && errno != ENFILE) || !drop_oldest_pending())
        paused_until_ = now + std::chrono::milliseconds(100);
      return;
    }
    if (pending() >= HttpServer::kMaxPending) drop_oldest_pending();
    Client& c = clients_[next_id_++];
    c.fd = std::move(fd);
    c.peer = peer;
    c.deadline = now + HttpServer::kReadTimeout;
  }
}

void ClientLoop::read_from(Clients::iterator it, Clock::time_point now) {
  Client& c = it->second;
  char buf[HttpServer::kMaxRequest];
  const ssize_t n = ::recv(c.fd.get(), buf, HttpServer::kMaxRequest - c.data.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n < 0 || (n == 0 && c.data.empty())) return close_client(it);
  if (n == 0) return dispatch(it, now);  // the client said all it will: httplib decides
  const std::size_t from = c.data.size();
  c.data.append(buf, static_cast<std::size_t>(n));
  switch (head_state(c.data, from, c.line_end)) {
    case Head::kComplete: return dispatch(it, now);
    case Head::kTooLarge: return start_writing(c, canned(431), now);
    case Head::kPartial: return;
  }
}

void ClientLoop::dispatch(Clients::iterator it, Clock::time_point now) {
  Client& c = it->second;
  if (answering_ >= HttpServer::kMaxClients && !drop_slowest_reader()) return start_writing(c, canned(503), now);
  ++answering_;
  c.counted = true;
  c.state = Client::State::kAnswering;
  workers_.enqueue([this, id = it->first, head = std::move(c.data), peer = c.peer] {
    std::string answer;
    try {
      answer = handler_.answer(head, peer);
    } catch (...) {
      answer = canned(500);
    }
    {
      const std::lock_guard lock(done_mutex_);
      done_.emplace_back(id, std::move(answer));
    }
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(wake_.get(), &one, sizeof one);
  });
}

void ClientLoop::start_writing(Client& c, std::string answer, Clock::time_point now) {
  c.state = Client::State::kWriting;
  c.data = std::move(answer);
  c.sent = 0;
  c.deadline = now + HttpServer::kWriteTimeout;
}

void ClientLoop::write_to(Clients::iterator it) {
  Client& c = it->second;
  while (c.sent < c.data.size()) {
    const ssize_t n = ::send(c.fd.get(), c.data.data() + c.sent, c.data.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) break;
    c.sent += static_cast<std::size_t>(n);
  }
  close_client(it);
}

void ClientLoop::take_answers(Clock::time_point now) {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t r = ::read(wake_.get(), &count, sizeof count);
  std::vector<std::pair<uint64_t, std::string>> done;
  {
    const std::lock_guard lock(done_mutex_);
    done.swap(done_);
  }
  for (auto& [id, answer] : done) {
    const auto it = clients_.find(id);
    if (it == clients_.end()) continue;
    start_writing(it->second, std::move(answer), now);
    write_to(it);  // most answers fit the socket's buffer at once
  }
}

void ClientLoop::expire(Clock::time_point now) {
  for (auto it = clients_.begin(); it != clients_.end();) {
    const auto next = std::next(it);
    if (it->second.state != Client::State::kAnswering && it->second.deadline <= now) close_client(it);
    it = next;
  }
}

void ClientLoop::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;  // fds[3 + i] is client ids[i]
  for (;;) {
    const Clock::time_point now = Clock::now();
    const bool accepting = now >= paused_until_;
    fds.assign({{stop_fd_, POLLIN, 0}, {wake_.get(), POLLIN, 0}, {accepting ? listen_fd_ : -1, POLLIN, 0}});
    ids.clear();
    Clock::time_point next = accepting ? Clock::time_point::max() : paused_until_;
    for (const auto& [id, c] : clients_) {
      if (c.state == Client::State::kAnswering) continue;
      fds.push_back({c.fd.get(), static_cast<short>(c.state == Client::State::kReading ? POLLIN : POLLOUT), 0});
      ids.push_back(id);
      next = std::min(next, c.deadline);
    }
    const int timeout = next == Clock::time_point::max() ? -1 : tc::wire::ms_until(next);
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;  // stop()
    const Clock::time_point after = Clock::now();
    if (fds[1].revents) take_answers(after);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!fds[3 + i].revents) continue;
      const auto it = clients_.find(ids[i]);
      if (it == clients_.end()) continue;  // dropped meanwhile
      if (it->second.state == Client::State::kReading) read_from(it, after);
      else if (it->second.state == Client::State::kWriting) write_to(it);
    }
    expire(after);
    if (fds[2].revents) accept_some(after);
  }
}

// A listening socket for `where`: the first address it resolves to that binds.
Fd listen_on(const ListenAddress& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  if (const int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw BadListen("host " + txpath::quoted(where.host) + " does not resolve: " + ::gai_strerror(rc));
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
  int err = 0;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR only: not SO_REUSEPORT, which would let a second exporter share the port
    // silently instead of failing to bind.
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), kBacklog) == 0) return fd;
    err = errno;
  }
  throw std::runtime_error("cannot listen on " + txpath::quoted(where.host + ":" + port) + ": " +
                           (err ? tc::wire::errno_text(err) : std::string("no address")));
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

HttpServer::HttpServer(const ListenAddress& where, Body body) {
  Fd listening = listen_on(where);
  Fd stop(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (stop.get() < 0) throw std::runtime_error("eventfd: " + tc::wire::errno_text(errno));
  handler_ = std::make_unique<Handler>(std::move(body));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listening.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  bound_ = host_text(ss, true);
  listen_fd_ = listening.release();
  stop_fd_ = stop.release();
}

HttpServer::~HttpServer() {
  ::close(listen_fd_);
  ::close(stop_fd_);
}

std::string HttpServer::bound() const { return bound_; }

void HttpServer::stop() noexcept {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
}

void HttpServer::run() {
  ClientLoop loop(listen_fd_, stop_fd_, *handler_);
  loop.run();
}

BackgroundExporter::BackgroundExporter(const ListenAddress& where)
    : server_(where, [](Format format) { return live_metrics_text(format); }), thread_([this] { server_.run(); }) {}

BackgroundExporter::~BackgroundExporter() {
  server_.stop();
  thread_.join();
}

}  // namespace txpath::metrics
