// SPDX-License-Identifier: MIT
// The live-statistics endpoint (tc/stats_socket.hpp): a document goes from a StatsServer to
// fetch_stats() whole or not at all; a missing or stopped server is a fast nullopt; one name has
// one server; many clients at once, clients that go away and clients that never read do not stop
// the others; endpoint names do not depend on how the configuration path is spelled.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tc/stats_socket.hpp"
#include "txpath/error.hpp"

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace txpath::tc {
namespace {

// Unique per process and test: ctest runs tests in parallel processes.
std::string unique_name(const std::string& what) {
  return "txpath-test:" + std::to_string(::getpid()) + ":" + what;
}

// A document whose every byte is checkable: "<id>:" then a filler pattern, `size` bytes in all.
std::string make_doc(uint64_t id, std::size_t size) {
  std::string d = std::to_string(id) + ":";
  d.reserve(size);
  while (d.size() < size) d.push_back(static_cast<char>('a' + d.size() % 26));
  return d;
}

bool doc_ok(const std::string& d, std::size_t size) {
  if (d.size() != size) return false;
  const std::size_t colon = d.find(':');
  if (colon == std::string::npos) return false;
  for (std::size_t i = colon + 1; i < d.size(); ++i)
    if (d[i] != static_cast<char>('a' + i % 26)) return false;
  return true;
}

// A raw connection to an endpoint (for clients that misbehave).
int connect_raw(const std::string& name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(StatsSocket, RoundTripOfALargeDocument) {
  const std::string name = unique_name("large");
  const std::string doc = make_doc(1, (3u << 20) + 17);  // 3 MiB: many socket buffers
  StatsServer server(name, [&] { return doc; });
  EXPECT_EQ(server.name(), name);
  const std::optional<std::string> got = fetch_stats(name, 20s);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == doc) << "sizes " << got->size() << " vs " << doc.size();
  // And again: one snapshot per connection.
  EXPECT_EQ(fetch_stats(name, 20s), doc);
  // An empty document is a document too.
  StatsServer empty(unique_name("empty"), [] { return std::string(); });
  EXPECT_EQ(fetch_stats(unique_name("empty"), 5s), std::string());
}

TEST(StatsSocket, NoServerIsAFastNullopt) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fetch_stats(unique_name("nobody"), 30s), std::nullopt);
  // Refused at once, not after the timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  // Names that cannot be endpoints are no endpoint either.
  EXPECT_EQ(fetch_stats("", 1s), std::nullopt);
  EXPECT_EQ(fetch_stats(std::string(200, 'x'), 1s), std::nullopt);
}

TEST(StatsSocket, OneNameHasOneServer) {
  const std::string name = unique_name("taken");
  std::optional<StatsServer> first;
  first.emplace(name, [] { return std::string("first"); });
  try {
    StatsServer second(name, [] { return std::string("second"); });
    FAIL() << "a second server took the name";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another process"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fetch_stats(name, 5s), "first");
  first.reset();
  // Gone with its server: nobody answers, and the name is free again (no file left behind).
  EXPECT_EQ(fetch_stats(name, 5s), std::nullopt);
  StatsServer third(name, [] { return std::string("third"); });
  EXPECT_EQ(fetch_stats(name, 5s), "third");
}

TEST(StatsSocket, BadNamesAreConfigErrors) {
  EXPECT_THROW(StatsServer("", [] { return std::string(); }), ConfigError);
  EXPECT_THROW(StatsServer(std::string(max_endpoint_name() + 1, 'n'), [] { return std::string(); }),
               ConfigError);
  // The longest name works.
  const std::string longest =
      (unique_name("longest") + std::string(max_endpoint_name(), 'z')).substr(0, max_endpoint_name());
  StatsServer s(longest, [] { return std::string("ok"); });
  EXPECT_EQ(fetch_stats(longest, 5s), "ok");
}

TEST(StatsSocket, ManyConcurrentClients) {
  const std::string name = unique_name("many");
  constexpr std::size_t kSize = 200'000;
  std::atomic<uint64_t> snapshots{0};
  StatsServer server(name, [&] {
    // relaxed: a count, read after every client has finished (joined).
    return make_doc(snapshots.fetch_add(1, std::memory_order_relaxed), kSize);
  });
  constexpr int kThreads = StatsServer::kMaxClients + 16;  // more than the server writes at once
  constexpr int kEach = 4;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        const auto d = fetch_stats(name, 60s);
        if (!d || !doc_ok(*d, kSize)) bad.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(snapshots.load(std::memory_order_relaxed), uint64_t{kThreads * kEach});
}

TEST(StatsSocket, ClientsThatGoAwayOrNeverReadDoNotStopTheServer) {
  const std::string name = unique_name("rude");
  constexpr std::size_t kSize = 8u << 20;  // far more than a socket buffer
  StatsServer server(name, [&] { return make_doc(0, kSize); });
  // Connect and leave at once, a few times (the server gets EPIPE/ECONNRESET, not SIGPIPE).
  for (int i = 0; i < 5; ++i) {
    const int fd = connect_raw(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  // Read a little, then leave.
  {
    const int fd = connect_raw(name);
    ASSERT_GE(fd, 0);
    char buf[100];
    EXPECT_GT(::recv(fd, buf, sizeof buf, 0), 0);
    ::close(fd);
  }
  // Connect and never read: the server must not block on it.
  const int idle = connect_raw(name);
  ASSERT_GE(idle, 0);
  const auto d = fetch_stats(name, 60s);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(doc_ok(*d, kSize));
  ::close(idle);
  EXPECT_TRUE(fetch_stats(name, 60s).has_value());
}

TEST(StatsSocket, ASnapshotThatThrowsClosesThatConnectionOnly) {
  const std::string name = unique_name("throws");
  std::atomic<int> calls{0};
  StatsServer server(name, [&]() -> std::string {
    // relaxed: a count on the server thread.
    if (calls.fetch_add(1, std::memory_order_relaxed) == 0) throw std::runtime_error("no");
    return "fine";
  });
  EXPECT_EQ(fetch_stats(name, 5s), std::nullopt);
  EXPECT_EQ(fetch_stats(name, 5s), "fine");
}

// A server that does not speak the protocol (or stops mid-document) gives nullopt, never a
// truncated document.
TEST(StatsSocket, ADocumentCutShortIsNotReturned) {
  for (const std::string& reply : {std::string("10\nabc"), std::string("abc"), std::string("3\nabcdef"),
                                  std::string("x\nabc"), std::string()}) {
    const std::string name = unique_name("short");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(lfd, 0);
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ASSERT_EQ(::bind(lfd, reinterpret_cast<const sockaddr*>(&addr), len), 0);
    ASSERT_EQ(::listen(lfd, 4), 0);
    std::thread srv([&] {
      const int c = ::accept(lfd, nullptr, nullptr);
      if (c < 0) return;
      if (!reply.empty()) (void)!::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
    EXPECT_EQ(fetch_stats(name, 5s), std::nullopt) << "reply \"" << reply << "\"";
    srv.join();
    ::close(lfd);
  }
}

TEST(StatsSocket, DestroyedWhileClientsWaitIsClean) {
  const std::string name = unique_name("teardown");
  std::optional<StatsServer> server;
  server.emplace(name, [] { return make_doc(0, 8u << 20); });
  // Clients that never read hold documents in the server's hands while it is destroyed.
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(connect_raw(name));
  std::this_thread::sleep_for(20ms);
  server.reset();
  for (const int fd : fds) {
    ASSERT_GE(fd, 0);
    // Whatever part arrived, then EOF: the document was cut, and a fetch would say nullopt.
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    EXPECT_EQ(n, 0);
    ::close(fd);
  }
  EXPECT_EQ(fetch_stats(name, 1s), std::nullopt);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "txpath-stats-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(StatsSocket, EndpointNamesDoNotDependOnHowThePathIsSpelled) {
  TempDir dir;
  const fs::path file = dir.path() / "txpath.tc";
  std::ofstream(file) << "# test\n";
  const std::string abs = fs::canonical(file).string();
  const std::string expected = "txpath-tc:" + abs + ":eth0";
  if (expected.size() > max_endpoint_name()) GTEST_SKIP() << "temporary directory path too long";
  EXPECT_EQ(stats_endpoint(file.string(), "eth0"), expected);
  // Relative to the working directory, with "." and ".." in it, and through a symlink.
  const std::string rel = fs::relative(file, fs::current_path()).string();
  EXPECT_EQ(stats_endpoint(rel, "eth0"), expected) << rel;
  EXPECT_EQ(stats_endpoint((dir.path() / "." / "sub" / ".." / "txpath.tc").string(), "eth0"),
            expected);
  fs::create_directory(dir.path() / "sub");
  EXPECT_EQ(stats_endpoint((dir.path() / "sub" / ".." / "txpath.tc").string(), "eth0"), expected);
  fs::create_symlink(file, dir.path() / "link.tc");
  EXPECT_EQ(stats_endpoint((dir.path() / "link.tc").string(), "eth0"), expected);
  // Another device, another endpoint.
  EXPECT_NE(stats_endpoint(file.string(), "eth1"), expected);
  // A file that does not exist (yet): the path made absolute, relative or not.
  const fs::path missing = dir.path() / "missing.tc";
  EXPECT_EQ(stats_endpoint(missing.string(), "d"), "txpath-tc:" + abs.substr(0, abs.size() - 9) +
                                                       "missing.tc:d");
  EXPECT_EQ(stats_endpoint(fs::relative(missing, fs::current_path()).string(), "d"),
            stats_endpoint(missing.string(), "d"));
}

TEST(StatsSocket, LongPathsAreHashedToAName) {
  TempDir dir;
  fs::path deep = dir.path();
  for (int i = 0; i < 6; ++i) deep /= std::string(30, static_cast<char>('a' + i));
  fs::create_directories(deep);
  const fs::path file = deep / "txpath.tc";
  std::ofstream(file) << "\n";
  const std::string a = stats_endpoint(file.string(), "eth0");
  EXPECT_LE(a.size(), max_endpoint_name());
  EXPECT_EQ(a.rfind("txpath-tc:", 0), 0u) << a;
  EXPECT_EQ(a.substr(a.size() - 15), "/txpath.tc:eth0") << a;  // the tail is kept
  // Stable, spelling-independent, and different for another path or device.
  EXPECT_EQ(stats_endpoint(fs::relative(file, fs::current_path()).string(), "eth0"), a);
  EXPECT_EQ(stats_endpoint(file.string(), "eth0"), a);
  EXPECT_NE(stats_endpoint(file.string(), "eth1"), a);
  fs::path other = dir.path();
  for (int i = 0; i < 6; ++i) other /= std::string(30, static_cast<char>(i == 2 ? 'x' : 'a' + i));
  EXPECT_NE(stats_endpoint((other / "txpath.tc").string(), "eth0"), a);  // same tail, other path
  // It is a usable endpoint name.
  StatsServer s(a, [] { return std::string("deep"); });
  EXPECT_EQ(fetch_stats(a, 5s), "deep");
}

}  // namespace
}  // namespace txpath::tc
