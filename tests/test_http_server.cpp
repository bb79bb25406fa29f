// SPDX-License-Identifier: MIT
// The exporter's HTTP endpoint under hostile clients (exporter/http_server.hpp): slow clients
// never keep a scrape out or hold it up, the request cap answers 503, and the format follows
// the Accept header.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exporter/http_server.hpp"

namespace txpath::metrics {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A connected socket to 127.0.0.1:`port` (-1 if the connect failed); `rcvbuf`: its SO_RCVBUF, if
// not 0 (set before the connect, so that the window it offers is that small).
int hs_connect(uint16_t port, bool nonblocking = false, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (rcvbuf) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    const int mss = 536;  // a small MSS too: the server's send buffer grows by segments
    ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the server answers to `request` on `fd` (until it closes), then closes fd.
std::string hs_exchange_on(int fd, const std::string& request) {
  std::string got;
  if (fd >= 0 && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  }
  if (fd >= 0) ::close(fd);
  return got;
}

std::string hs_exchange(uint16_t port, const std::string& request) {
  return hs_exchange_on(hs_connect(port), request);
}

// A server on its own thread for the duration of a test; body() as given.
struct HsServing {
  explicit HsServing(HttpServer::Body body)
      : server(parse_listen("127.0.0.1:0"), std::move(body)),
        port(static_cast<uint16_t>(std::stoi(server.bound().substr(server.bound().rfind(':') + 1)))),
        thread([this] { server.run(); }) {}
  ~HsServing() {
    server.stop();
    thread.join();
  }
  HttpServer server;
  uint16_t port;
  std::thread thread;
};

std::string hs_small_body(Format f) { return f == Format::kOpenMetrics ? "# EOF\n" : "\n"; }

// Issue 31: slowloris clients, each sending a byte every 100 ms and reconnecting as soon as it is
// dropped, pushed a scrape to 5-9 s with 64 of them and 10-14 s with 160 (past Prometheus's
// default 10 s timeout); at ca1ccb7 this test's scrapes were answered 503. The contract the issue
// names: a scrape answers within 1 s under that attack, so 1 s is this test's bound: a generous
// one (the loop reads every client without blocking: a scrape takes milliseconds here) and the
// very figure of the issue, not a tuned threshold. 160 clients: the upper figure. The attack runs past the 5 s head deadline, so that the
// clients are dropped and come back while the scrapes go on (about 7 s in all).
TEST(HttpServer, ScrapesAnswerWithinOneSecondUnderSlowClients) {
  HsServing s(hs_small_body);
  constexpr int kAttackers = 160;
  std::atomic<bool> done{false};
  std::atomic<int> reconnects{0};
  std::thread attack([&] {
    std::vector<int> fds(kAttackers, -1);
    while (!done.load()) {
      for (int& fd : fds) {
        char c;
        const bool dropped =
            fd >= 0 && (::send(fd, "G", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 || ::recv(fd, &c, 1, MSG_DONTWAIT) == 0);
        if (dropped) {
          ::close(fd);
          fd = -1;
          reconnects.fetch_add(1);
        }
        if (fd < 0) fd = hs_connect(s.port, /*nonblocking=*/true);
      }
      std::this_thread::sleep_for(100ms);
    }
    for (const int fd : fds)
      if (fd >= 0) ::close(fd);
  });
  std::this_thread::sleep_for(500ms);  // all of them connected and trickling
  const Clock::time_point end = Clock::now() + HttpServer::kReadTimeout + 1500ms;
  int scrapes = 0;
  while (Clock::now() < end) {
    const Clock::time_point start = Clock::now();
    const std::string got = hs_exchange(s.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto took = Clock::now() - start;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got.substr(0, 60);
    EXPECT_LT(took, 1s) << "scrape " << scrapes << " took "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    ++scrapes;
    std::this_thread::sleep_for(200ms);
  }
  done.store(true);
  attack.join();
  EXPECT_GE(scrapes, 10);
  EXPECT_GT(reconnects.load(), 0) << "the slow clients were never dropped at their deadline";
}

// More silent clients than kMaxPending: each newcomer drops the oldest of them, so a scrape is
// still read and answered (it used to be refused 503 once 32 silent clients held every thread).
TEST(HttpServer, SilentClientsBeyondThePendingCapDropTheOldest) {
  HsServing s(hs_small_body);
  // One answer first: the loop is running (its workers started) before the backlog fills.
  ASSERT_TRUE(hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
  std::vector<int> idle;
  for (int i = 0; i < HttpServer::kMaxPending + 40; ++i) {
    idle.push_back(hs_connect(s.port));
    // A pause now and then lets the loop take them from the listen backlog (64): a connect that
    // finds it full waits for the kernel's SYN retry, a second or more.
    if (i % 32 == 31) std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(300ms);  // all of them accepted
  const Clock::time_point start = Clock::now();
  const std::string got = hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got.substr(0, 60);
  EXPECT_LT(Clock::now() - start, 1s);  // the bound of the test above
  pollfd p{idle.front(), POLLIN, 0};    // the oldest: closed by the server, long before 5 s
  EXPECT_EQ(::poll(&p, 1, 2000), 1);
  char c;
  EXPECT_EQ(::recv(idle.front(), &c, 1, MSG_DONTWAIT), 0);
  for (const int fd : idle) ::close(fd);
}

// kMaxClients requests whose answers are being built hold every slot: the next complete request
// is answered 503 at once; the others get their answers once the bodies are done.
TEST(HttpServer, RequestsBeyondTheCapAreAnswered503) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> building{0};
  HsServing s([&](Format f) {
    building.fetch_add(1);
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return release; });
    return hs_small_body(f);
  });
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < HttpServer::kMaxClients; ++i)
    clients.emplace_back([&] {
      if (hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200")) ok.fetch_add(1);
    });
  for (int i = 0; i < 500 && building.load() < HttpServer::kMaxClients; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(building.load(), HttpServer::kMaxClients);
  const std::string refused = hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_TRUE(refused.ends_with("\r\n\r\nService Unavailable\n")) << refused;
  {
    const std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), HttpServer::kMaxClients);
  EXPECT_TRUE(hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
}

// Issue 31, "scrapes never behind slow readers": kMaxClients clients that ask for an answer too big
// for their sockets' buffers and never read it held every slot for kWriteTimeout (10 s), and a
// scrape was answered 503. Now a request beyond the cap drops the client that has been sending
// its answer longest, and a scrape is answered within the 1 s (the bound of the slow
// client test above, for the same reason).
TEST(HttpServer, ClientsThatDoNotReadTheirAnswersNeverKeepAScrapeOut) {
  // 512 KiB: far more than a 4 KiB window and the send buffer of a 536-byte MSS take (before the
  // fix, 128 KiB already held every slot).
  const std::string big(512 << 10, 'x');
  std::atomic<int> built{0};
  HsServing s([&](Format) {
    built.fetch_add(1);
    return big;
  });
  std::vector<int> stuck;
  const std::string request = "GET /metrics HTTP/1.1\r\n\r\n";
  for (int i = 0; i < HttpServer::kMaxClients; ++i) {
    stuck.push_back(hs_connect(s.port, false, /*rcvbuf=*/4096));
    ASSERT_EQ(::send(stuck.back(), request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  }
  for (const int fd : stuck) {  // each answer being sent: its first bytes are in (not read)
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
  }
  EXPECT_EQ(built.load(), HttpServer::kMaxClients);
  for (int scrape = 0; scrape < 3; ++scrape) {
    const Clock::time_point start = Clock::now();
    const std::string got = hs_exchange(s.port, request);
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got.substr(0, 60);
    EXPECT_TRUE(got.ends_with(big)) << got.size() << " bytes";
    EXPECT_LT(Clock::now() - start, 1s);
  }
  for (const int fd : stuck) ::close(fd);
}

// The classic text format unless the client asks for OpenMetrics (Prometheus does, first).
TEST(HttpServer, ServesTheFormatTheAcceptHeaderAsksFor) {
  HsServing s([](Format f) { return std::string(f == Format::kOpenMetrics ? "om\n# EOF\n" : "text\n"); });
  const std::string plain = hs_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_NE(plain.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\r\nVary: Accept\r\n"), std::string::npos) << plain;
  EXPECT_TRUE(plain.ends_with("\r\n\r\ntext\n")) << plain;
  const std::string om = hs_exchange(
      s.port,
      "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
      "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n");
  EXPECT_NE(om.find("\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"),
            std::string::npos) << om;
  EXPECT_TRUE(om.ends_with("\r\n\r\nom\n# EOF\n")) << om;
  // Two Accept headers are one list; here text/plain is preferred.
  const std::string two =
      hs_exchange(s.port, "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;q=0.2\r\nAccept: text/plain\r\n\r\n");
  EXPECT_TRUE(two.ends_with("\r\n\r\ntext\n")) << two;
}

// A request line httplib would refuse is answered 400 as soon as it is in, without waiting for
// the rest of a head that may never come.
TEST(HttpServer, ABadRequestLineIsAnsweredAtOnce) {
  HsServing s(hs_small_body);
  const int fd = hs_connect(s.port);
  ASSERT_GE(fd, 0);
  const Clock::time_point start = Clock::now();
  const std::string got = hs_exchange_on(fd, "FOO /metrics HTTP/1.1\r\nX: ");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 400")) << got;
  EXPECT_LT(Clock::now() - start, 1s);
}

}  // namespace
}  // namespace txpath::metrics
