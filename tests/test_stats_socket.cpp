// SPDX-License-Identifier: MIT
// The live-statistics endpoint (tc/stats_socket.hpp): a document goes from a StatsServer to
// fetch_stats() whole or not at all; a missing or stopped server is a fast "no server"; one path
// has one server; many clients at once, clients that go away and clients that never read do not
// stop the others; endpoint names do not depend on how the configuration path is spelled.
// Trust: the endpoint lives in a directory only its owner can enter (checked, never assumed);
// another uid can neither serve nor read there, and a server of another uid is not believed;
// a header announcing more than kMaxDocument is refused unread; a stale socket file is replaced.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
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

constexpr uid_t kNobody = 65534;

// A private (0700, mkdtemp) directory, removed with everything in it.
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
  std::string sock(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

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

socklen_t address_of(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
}

// A raw connection to an endpoint (for clients that misbehave).
int connect_raw(const std::string& path) {
  sockaddr_un addr;
  const socklen_t len = address_of(path, addr);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A listening socket at `path` that is not a StatsServer (a fake or foreign server).
int listen_raw(const std::string& path) {
  sockaddr_un addr;
  const socklen_t len = address_of(path, addr);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 8) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A StatsServer cannot be made at `path`: ConfigError, "is in use by another process". `taken`
// says what it would mean if one were made.
void expect_in_use(const std::string& path, const std::string& taken) {
  try {
    StatsServer server(path, [] { return std::string("x"); });
    FAIL() << taken;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another process"), std::string::npos)
        << e.what();
  }
}

// Drops to uid/gid kNobody for good (in a forked child). Only async-signal-safe calls.
bool become_nobody() {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(kNobody, kNobody, kNobody) == 0 &&
         ::setresuid(kNobody, kNobody, kNobody) == 0;
}

// Exit status of a child.
int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(StatsSocket, RoundTripOfALargeDocument) {
  TempDir dir;
  const std::string path = dir.sock("large");
  const std::string doc = make_doc(1, (3u << 20) + 17);  // 3 MiB: many socket buffers
  StatsServer server(path, [&] { return doc; });
  EXPECT_EQ(server.path(), path);
  const Fetched got = fetch_stats(path, 20s);
  ASSERT_TRUE(got.document.has_value()) << got.why_not;
  EXPECT_TRUE(*got.document == doc) << "sizes " << got.document->size() << " vs " << doc.size();
  EXPECT_TRUE(got.why_not.empty());
  // And again: one snapshot per connection.
  EXPECT_EQ(fetch_stats(path, 20s).document, doc);
  // An empty document is a document too.
  StatsServer empty(dir.sock("empty"), [] { return std::string(); });
  EXPECT_EQ(fetch_stats(dir.sock("empty"), 5s).document, std::string());
}

TEST(StatsSocket, NoServerIsAFastNoServer) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  const Fetched got = fetch_stats(dir.sock("nobody"), 30s);
  EXPECT_EQ(got.document, std::nullopt);
  EXPECT_TRUE(got.no_server);
  // Refused at once, not after the timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  // Paths that cannot be endpoints are no endpoint either.
  EXPECT_EQ(fetch_stats("", 1s).document, std::nullopt);
  EXPECT_EQ(fetch_stats("/" + std::string(200, 'x'), 1s).document, std::nullopt);
}

TEST(StatsSocket, OnePathHasOneServerAndItsFilesGoWithIt) {
  TempDir dir;
  const std::string path = dir.sock("taken");
  std::optional<StatsServer> first;
  first.emplace(path, [] { return std::string("first"); });
  expect_in_use(path, "a second server took the path");
  EXPECT_EQ(fetch_stats(path, 5s).document, "first");
  EXPECT_TRUE(fs::exists(fs::symlink_status(path)));
  first.reset();
  // Gone with its server: nobody answers, and neither the socket nor its lock file is left.
  EXPECT_TRUE(fetch_stats(path, 5s).no_server);
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));
  EXPECT_FALSE(fs::exists(fs::symlink_status(path + ".lock")));
  StatsServer third(path, [] { return std::string("third"); });
  EXPECT_EQ(fetch_stats(path, 5s).document, "third");
}

// A socket file nobody listens on (a process that died) is replaced; one that a live process
// listens on is not, and neither is a file that is not a socket.
TEST(StatsSocket, AStaleSocketFileIsReplacedALiveOneIsNot) {
  TempDir dir;
  const std::string path = dir.sock("stale");
  {
    const int fd = listen_raw(path);
    ASSERT_GE(fd, 0);
    ::close(fd);  // the file stays, nothing listens: ECONNREFUSED
  }
  std::ofstream(path + ".lock") << "";  // and the lock file of the dead process
  ASSERT_TRUE(fetch_stats(path, 5s).no_server);
  {
    StatsServer server(path, [] { return std::string("new"); });
    EXPECT_EQ(fetch_stats(path, 5s).document, "new");
  }
  // A live listener that is not a StatsServer (no lock held): still in use.
  const int live = listen_raw(path);
  ASSERT_GE(live, 0);
  expect_in_use(path, "a live socket was replaced");
  ::close(live);
  ::unlink(path.c_str());
  // A regular file: not ours to remove.
  std::ofstream(path) << "data";
  EXPECT_THROW(StatsServer(path, [] { return std::string(); }), ConfigError);
  EXPECT_TRUE(fs::is_regular_file(path));
}

// The server removes its socket on stop only if the file is still its own.
TEST(StatsSocket, StopRemovesOnlyItsOwnSocketFile) {
  TempDir dir;
  const std::string path = dir.sock("own");
  std::optional<StatsServer> server;
  server.emplace(path, [] { return std::string("a"); });
  ASSERT_EQ(::unlink(path.c_str()), 0);  // someone (we) replaced the file meanwhile
  std::ofstream(path) << "replacement";
  server.reset();
  EXPECT_TRUE(fs::is_regular_file(path));
}

TEST(StatsSocket, BadPathsAreConfigErrors) {
  TempDir dir;
  EXPECT_THROW(StatsServer("", [] { return std::string(); }), ConfigError);
  EXPECT_THROW(StatsServer(dir.sock(std::string(max_endpoint_path(), 'n')), [] { return std::string(); }),
               ConfigError);
  // The longest path works.
  std::string longest = dir.sock("l");
  longest += std::string(max_endpoint_path() - longest.size(), 'z');
  StatsServer s(longest, [] { return std::string("ok"); });
  EXPECT_EQ(fetch_stats(longest, 5s).document, "ok");
}

// The directory must be private: a real directory of ours with mode 0700, checked with lstat.
TEST(StatsSocket, TheDirectoryMustBePrivate) {
  TempDir dir;
  const std::string made = dir.sock("made");
  EXPECT_FALSE(check_private_directory(made, /*create=*/false));
  EXPECT_FALSE(fs::exists(made));
  EXPECT_TRUE(check_private_directory(made, /*create=*/true));
  struct stat st{};
  ASSERT_EQ(::lstat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  const std::string loose = dir.sock("loose");
  ASSERT_EQ(::mkdir(loose.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(loose.c_str(), 0755), 0);
  try {
    check_private_directory(loose, true);
    FAIL() << "a 0755 directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mode 0755"), std::string::npos) << e.what();
  }
  EXPECT_THROW(StatsServer(loose + "/s", [] { return std::string(); }), ConfigError);
  EXPECT_FALSE(fs::exists(fs::symlink_status(loose + "/s")));  // not even bound there

  const std::string link = dir.sock("link");
  fs::create_directory_symlink(made, link);
  EXPECT_THROW(check_private_directory(link, true), ConfigError);  // not followed
  std::ofstream(dir.sock("file")) << "";
  EXPECT_THROW(check_private_directory(dir.sock("file"), true), ConfigError);

  if (::geteuid() == 0) {
    const std::string foreign = dir.sock("foreign");
    ASSERT_EQ(::mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(::chown(foreign.c_str(), kNobody, kNobody), 0);
    try {
      check_private_directory(foreign, true);
      FAIL() << "a directory of another uid was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("owner uid 65534"), std::string::npos) << e.what();
    }
  }
}

// Where the endpoints of this uid live: a private directory (for root /run/txpath/stats).
TEST(StatsSocket, TheEndpointDirectoryIsPrivateAndPerUid) {
  const std::string dir = stats_directory(/*create=*/true);
  struct stat st{};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 077, 0u);
  if (::geteuid() == 0) {
    EXPECT_EQ(dir, "/run/txpath/stats");
  }
  const std::string ep = stats_endpoint("some.tc", "eth0");
  EXPECT_EQ(ep.rfind(dir + "/", 0), 0u) << ep;
  EXPECT_LE(ep.size(), max_endpoint_path());
}

// Another uid can neither serve in our directory nor connect to our server (the directory is
// 0700): what an abstract socket, open to every local user, allowed.
TEST(StatsSocket, AnotherUserCanNeitherServeNorReadOurEndpoint) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setuid to another user)";
  TempDir dir;
  const std::string path = dir.sock("ours");
  StatsServer server(path, [] { return std::string("secret"); });
  const std::string impostor = dir.sock("impostor");
  sockaddr_un ours, theirs;
  const socklen_t ours_len = address_of(path, ours);
  const socklen_t theirs_len = address_of(impostor, theirs);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!become_nobody()) ::_exit(10);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::bind(s, reinterpret_cast<const sockaddr*>(&theirs), theirs_len) == 0) ::_exit(11);
    if (errno != EACCES) ::_exit(12);
    const int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(c, reinterpret_cast<const sockaddr*>(&ours), ours_len) == 0) ::_exit(13);
    ::_exit(errno == EACCES ? 0 : 14);
  }
  EXPECT_EQ(wait_child(pid), 0) << "10: setuid failed, 11: bound, 13: connected";
  EXPECT_FALSE(fs::exists(fs::symlink_status(impostor)));
  EXPECT_EQ(fetch_stats(path, 5s).document, "secret");
}

// A server running as another uid is not believed, whatever it sends: the client checks the
// server's credentials (SO_PEERCRED) before reading a byte. (The listener was bound by root
// in our directory, then its process became nobody: the kernel reports the uid of listen().)
TEST(StatsSocket, TheClientRefusesAServerOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setuid to another user)";
  TempDir dir;
  const std::string path = dir.sock("foreign");
  sockaddr_un addr;
  const socklen_t len = address_of(path, addr);
  const char reply[] = "48\n{\"qdiscs\":{\"1:\":{\"bytes\":31337}},\"classes\":{}}";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || ::bind(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0) ::_exit(10);
    if (!become_nobody() || ::listen(s, 4) != 0) ::_exit(11);
    (void)!::write(ready[1], "r", 1);
    for (;;) {  // until killed
      const int c = ::accept(s, nullptr, nullptr);
      if (c < 0) continue;
      (void)!::send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
      ::close(c);
    }
  }
  ::close(ready[1]);
  char byte;
  const bool up = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  const Fetched got = up ? fetch_stats(path, 5s) : Fetched{};
  ::kill(pid, SIGKILL);
  wait_child(pid);
  ASSERT_TRUE(up) << "the foreign server did not start";
  EXPECT_EQ(got.document, std::nullopt);
  EXPECT_FALSE(got.no_server);
  EXPECT_NE(got.why_not.find("served by uid 65534"), std::string::npos) << got.why_not;
}

// A reply announcing 1 GiB is refused when its header arrives: the client neither allocates it
// nor reads on (the server could push no more than a socket buffer before the client left).
TEST(StatsSocket, AHugeAnnouncedDocumentIsRefusedUnread) {
  for (const uint64_t announced : {uint64_t{1} << 30, kMaxDocument + 1}) {
    TempDir dir;
    const std::string path = dir.sock("huge");
    const int lfd = listen_raw(path);
    ASSERT_GE(lfd, 0);
    std::atomic<uint64_t> pushed{0};
    std::thread srv([&] {
      const int c = ::accept(lfd, nullptr, nullptr);
      if (c < 0) return;
      const std::string header = std::to_string(announced) + "\n";
      (void)!::send(c, header.data(), header.size(), MSG_NOSIGNAL);
      const std::string chunk(1 << 16, '{');
      uint64_t total = 0;
      while (total < (uint64_t{64} << 20)) {  // 64 MiB at most, until the client has gone
        const ssize_t n = ::send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL);
        if (n <= 0) break;
        total += static_cast<uint64_t>(n);
      }
      pushed.store(total, std::memory_order_relaxed);  // relaxed: read after join
      ::close(c);
    });
    const Fetched got = fetch_stats(path, 30s);
    srv.join();
    ::close(lfd);
    EXPECT_EQ(got.document, std::nullopt);
    EXPECT_NE(got.why_not.find("announces " + std::to_string(announced) + " bytes"),
              std::string::npos) << got.why_not;
    EXPECT_LT(pushed.load(std::memory_order_relaxed), kMaxDocument)
        << "the client went on reading after a header of " << announced;
  }
}

// The server does not send a document larger than the limit either.
TEST(StatsSocket, TheServerSendsNoDocumentOverTheLimit) {
  TempDir dir;
  const std::string path = dir.sock("big");
  std::atomic<int> calls{0};
  StatsServer server(path, [&] {
    // relaxed: a count on the server thread.
    return calls.fetch_add(1, std::memory_order_relaxed) == 0 ? std::string(kMaxDocument + 1, 'x')
                                                                 : std::string("small");
  });
  // Read raw: not a byte of it (nor a header) comes out; the connection is just closed.
  const int fd = connect_raw(path);
  ASSERT_GE(fd, 0);
  char buf[65536];
  std::size_t got = 0;
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got += static_cast<std::size_t>(n);
  ::close(fd);
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(fetch_stats(path, 10s).document, "small");
}

TEST(StatsSocket, ManyConcurrentClients) {
  TempDir dir;
  const std::string path = dir.sock("many");
  constexpr std::size_t kSize = 200'000;
  std::atomic<uint64_t> snapshots{0};
  StatsServer server(path, [&] {
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
        const auto d = fetch_stats(path, 60s).document;
        if (!d || !doc_ok(*d, kSize)) bad.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(snapshots.load(std::memory_order_relaxed), uint64_t{kThreads * kEach});
}

TEST(StatsSocket, ClientsThatGoAwayOrNeverReadDoNotStopTheServer) {
  TempDir dir;
  const std::string path = dir.sock("rude");
  constexpr std::size_t kSize = 8u << 20;  // far more than a socket buffer
  StatsServer server(path, [&] { return make_doc(0, kSize); });
  // Connect and leave at once, a few times (the server gets EPIPE/ECONNRESET, not SIGPIPE).
  for (int i = 0; i < 5; ++i) {
    const int fd = connect_raw(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  // Read a little, then leave.
  {
    const int fd = connect_raw(path);
    ASSERT_GE(fd, 0);
    char buf[100];
    EXPECT_GT(::recv(fd, buf, sizeof buf, 0), 0);
    ::close(fd);
  }
  // Connect and never read: the server must not block on it.
  const int idle = connect_raw(path);
  ASSERT_GE(idle, 0);
  const auto d = fetch_stats(path, 60s).document;
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(doc_ok(*d, kSize));
  ::close(idle);
  EXPECT_TRUE(fetch_stats(path, 60s).document.has_value());
}

TEST(StatsSocket, ASnapshotThatThrowsClosesThatConnectionOnly) {
  TempDir dir;
  const std::string path = dir.sock("throws");
  std::atomic<int> calls{0};
  StatsServer server(path, [&]() -> std::string {
    // relaxed: a count on the server thread.
    if (calls.fetch_add(1, std::memory_order_relaxed) == 0) throw std::runtime_error("no");
    return "fine";
  });
  const Fetched first = fetch_stats(path, 5s);
  EXPECT_EQ(first.document, std::nullopt);
  EXPECT_FALSE(first.why_not.empty());
  EXPECT_EQ(fetch_stats(path, 5s).document, "fine");
}

// A server that does not speak the protocol (or stops mid-document) gives no document, never a
// truncated one.
TEST(StatsSocket, ADocumentCutShortIsNotReturned) {
  for (const std::string& reply : {std::string("10\nabc"), std::string("abc"), std::string("3\nabcdef"),
                                  std::string("x\nabc"), std::string(40, '1'), std::string()}) {
    TempDir dir;
    const std::string path = dir.sock("short");
    const int lfd = listen_raw(path);
    ASSERT_GE(lfd, 0);
    std::thread srv([&] {
      const int c = ::accept(lfd, nullptr, nullptr);
      if (c < 0) return;
      if (!reply.empty()) (void)!::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
    const Fetched got = fetch_stats(path, 5s);
    EXPECT_EQ(got.document, std::nullopt) << "reply \"" << reply << "\"";
    EXPECT_FALSE(got.why_not.empty());
    srv.join();
    ::close(lfd);
  }
}

// A server that accepts and never answers: the client's deadline covers the whole exchange.
TEST(StatsSocket, ASilentServerTimesOut) {
  TempDir dir;
  const std::string path = dir.sock("silent");
  const int lfd = listen_raw(path);
  ASSERT_GE(lfd, 0);
  const Fetched got = fetch_stats(path, 200ms);
  EXPECT_EQ(got.document, std::nullopt);
  EXPECT_NE(got.why_not.find("no complete answer within 200 ms"), std::string::npos) << got.why_not;
  ::close(lfd);
}

TEST(StatsSocket, DestroyedWhileClientsWaitIsClean) {
  TempDir dir;
  const std::string path = dir.sock("teardown");
  std::optional<StatsServer> server;
  server.emplace(path, [] { return make_doc(0, 8u << 20); });
  // Clients that never read hold documents in the server's hands while it is destroyed.
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(connect_raw(path));
  std::this_thread::sleep_for(20ms);
  server.reset();
  for (const int fd : fds) {
    ASSERT_GE(fd, 0);
    // Whatever part arrived, then EOF: the document was cut, and a fetch would say so.
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    }
    EXPECT_EQ(n, 0);
    ::close(fd);
  }
  EXPECT_TRUE(fetch_stats(path, 1s).no_server);
}

TEST(StatsSocket, EndpointNamesDoNotDependOnHowThePathIsSpelled) {
  TempDir dir;
  const fs::path file = dir.path() / "txpath.tc";
  std::ofstream(file) << "# test\n";
  constexpr std::size_t kDir = 20;
  const std::string expected = stats_endpoint_name(file.string(), "eth0", kDir);
  EXPECT_EQ(expected.size(), 32u + 1 + std::string("txpath.tc@eth0").size()) << expected;
  EXPECT_EQ(expected.substr(32), "-txpath.tc@eth0");
  // Relative to the working directory, with "." and ".." in it, and through a symlink.
  const std::string rel = fs::relative(file, fs::current_path()).string();
  EXPECT_EQ(stats_endpoint_name(rel, "eth0", kDir), expected) << rel;
  EXPECT_EQ(stats_endpoint_name((dir.path() / "." / "sub" / ".." / "txpath.tc").string(), "eth0", kDir),
            expected);
  fs::create_directory(dir.path() / "sub");
  EXPECT_EQ(stats_endpoint_name((dir.path() / "sub" / ".." / "txpath.tc").string(), "eth0", kDir),
            expected);
  fs::create_symlink(file, dir.path() / "link.tc");
  EXPECT_EQ(stats_endpoint_name((dir.path() / "link.tc").string(), "eth0", kDir), expected);
  // Another device, another endpoint; another file of the same name, too.
  EXPECT_NE(stats_endpoint_name(file.string(), "eth1", kDir), expected);
  fs::create_directory(dir.path() / "other");
  EXPECT_NE(stats_endpoint_name((dir.path() / "other" / "txpath.tc").string(), "eth0", kDir),
            expected);
  // A file that does not exist (yet): the path made absolute, relative or not.
  const fs::path missing = dir.path() / "missing.tc";
  EXPECT_EQ(stats_endpoint_name(fs::relative(missing, fs::current_path()).string(), "d", kDir),
            stats_endpoint_name(missing.string(), "d", kDir));
  // Bytes outside printable ASCII do not reach the file name.
  const std::string odd = stats_endpoint_name(file.string(), "e\n\x1b\xff", kDir);
  EXPECT_EQ(odd.substr(32), "-txpath.tc@e___");
}

TEST(StatsSocket, NamesFitTheSocketAddressAndKeepTheirTail) {
  TempDir dir;
  const std::string dev(15, 'd');
  const std::string file = (dir.path() / (std::string(100, 'f') + ".tc")).string();
  for (const std::size_t dir_len : {1u, 20u, 50u}) {
    const std::string name = stats_endpoint_name(file, dev, dir_len);
    EXPECT_EQ(dir_len + 1 + name.size(), max_endpoint_path());
    EXPECT_EQ(name.substr(name.size() - 1 - dev.size()), "@" + dev) << name;  // the device kept
  }
  // Room for the hash only.
  EXPECT_EQ(stats_endpoint_name(file, dev, max_endpoint_path() - 33).size(), 32u);
  // No room for the hash: refused, not cut.
  EXPECT_THROW(stats_endpoint_name(file, dev, max_endpoint_path() - 32), ConfigError);
  // A usable endpoint.
  const std::string path = dir.path().string() + "/" +
                           stats_endpoint_name(file, dev, dir.path().string().size());
  StatsServer s(path, [] { return std::string("deep"); });
  EXPECT_EQ(fetch_stats(path, 5s).document, "deep");
}

}  // namespace
}  // namespace txpath::tc
