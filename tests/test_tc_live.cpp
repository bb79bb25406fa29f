// SPDX-License-Identifier: MIT
// txpath tc -s and the live counters of a running process (LiveStats), end to end through
// tc::run(): shown when the process serves them; otherwise a one-line note on stderr says why and
// that the configuration is shown, so zeros are never passed off as live counters (no server, a
// snapshot that failed, entries the running tree lacks). Another local user cannot put counters
// of their own in front of us. Clients that stall do not stall the queue or its senders.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/tc_fixture.hpp"
#include "tc/internal.hpp"
#include "tc/stats_socket.hpp"
#include "txpath/device.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath::tc {
namespace {

// The socket address of endpoint `ep`: a path, or (before the endpoint became a file) a name in
// the abstract namespace.
socklen_t endpoint_address(const std::string& ep, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  const std::size_t skip = ep[0] == '/' ? 0 : 1;  // abstract: sun_path[0] = '\0'
  std::memcpy(addr.sun_path + skip, ep.data(), ep.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + skip + ep.size() + (1 - skip));
}

class TcLive : public test::TcFileFixture {
 protected:
  // A running queue built from dev d0 of the file, serving its counters.
  void start(bool service_thread = true) {
    device_ = make_device("null");
    TxQueueConfig qc;
    qc.strategy = "busylock";
    qc.service_thread = service_thread;
    tree_ = std::make_shared<Tree>();
    qc.root_qdisc = Config::load(path_).root_factory("d0", tree_);
    txq_ = TxQueue::create(*device_, qc);
    live_ = std::make_unique<LiveStats>(path_, "d0", *txq_, tree_);
  }
  void send(Pool& pool, int count) {
    Pool::Cache cache(pool);
    for (int i = 0; i < count; ++i) {
      Packet* p = cache.get();
      ASSERT_NE(p, nullptr);
      p->len = 100;
      txq_->send(p);
    }
  }
  void TearDownQueue() {
    live_.reset();
    txq_.reset();
  }

  std::unique_ptr<Device> device_;
  std::shared_ptr<Tree> tree_;
  std::unique_ptr<TxQueue> txq_;
  std::unique_ptr<LiveStats> live_;
};

TEST_F(TcLive, NoRunningProcessIsSaidOnStderrAndTheConfigurationShown) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  EXPECT_NE(out_.str().find(" Sent 0 bytes 0 pkt"), std::string::npos) << out_.str();
  EXPECT_EQ(err_.str(), "txpath tc: no live counters for dev d0 (no running txpath bench of uid " +
                            std::to_string(::geteuid()) + " serves \"" + path_ +
                            "\"): showing the configuration\n");
  ASSERT_EQ(tc("-s -j class show dev d0"), 0);
  EXPECT_NE(err_.str().find("no live counters for dev d0"), std::string::npos) << err_.str();
  // Without -s nothing live was asked for, and nothing is said.
  ASSERT_EQ(tc("qdisc show dev d0"), 0);
  EXPECT_EQ(err_.str(), "");
}

// The live numbers when the process runs, and no note.
TEST_F(TcLive, ARunningProcessIsShownWithoutANote) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  start();
  Pool pool(PoolConfig{});
  send(pool, 10);
  ASSERT_TRUE(txq_->drain(30s));
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  EXPECT_NE(out_.str().find(" Sent 1000 bytes 10 pkt"), std::string::npos) << out_.str();
  EXPECT_EQ(err_.str(), "");
  TearDownQueue();
}

// A multi-queue device with an mq root and a graft: each TX queue's child shows its own live
// counters, mq's root their sum, and each mq class its queue's.
TEST_F(TcLive, AnMqRootSumsItsQueuesWhileTheyRun) {
  ASSERT_EQ(tc("link add dev d0 numtxqueues 4"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: mq"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:2 handle 20: pfifo limit 100"), 0);
  auto device = make_net_device("null:queues=4");
  auto trees = std::make_shared<QueueTrees>();
  const Config::MultiQueueSetup setup = Config::load(path_).multiqueue("d0", trees);
  ASSERT_EQ(setup.tx_queues, 4u);
  MultiQueueConfig mc;
  mc.queue.strategy = "busylock";
  mc.queue_qdisc = setup.queue_qdisc;
  auto tx = MultiQueueTx::create(*device, mc);
  auto live = std::make_unique<LiveStats>(path_, "d0", *tx, trees);
  Pool pool(PoolConfig{});
  const int per_queue[4] = {1, 2, 3, 4};  // packets of 100 bytes sent on queue q
  for (uint32_t q = 0; q < 4; ++q) {
    for (int i = 0; i < per_queue[q]; ++i) {
      Packet* p = pool.get();
      ASSERT_NE(p, nullptr);
      p->len = 100;
      p->tx_queue = q;
      tx->send(p);
    }
  }
  ASSERT_TRUE(tx->drain(30s));
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  const std::string out = out_.str();
  EXPECT_NE(out.find("qdisc mq 1: root \n Sent 1000 bytes 10 pkt"), std::string::npos) << out;
  EXPECT_NE(out.find("qdisc pfifo 20: parent 1:2 limit 100p\n Sent 200 bytes 2 pkt"),
            std::string::npos) << out;
  EXPECT_NE(out.find("parent 1:4 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n Sent 400 bytes 4 pkt"),
            std::string::npos) << out;
  EXPECT_EQ(err_.str(), "");
  ASSERT_EQ(tc("-s class show dev d0"), 0);
  EXPECT_NE(out_.str().find("class mq 1:3 root \n Sent 300 bytes 3 pkt"), std::string::npos)
      << out_.str();
  live.reset();
  tx.reset();
}

// A snapshot the queue did not answer in time (no service thread, nobody sends) is not shown as
// zero counters: the note says what happened.
TEST_F(TcLive, AFailedSnapshotIsNotShownAsZeroCounters) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  start(/*service_thread=*/false);
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  EXPECT_NE(err_.str().find("txpath tc: no live counters for dev d0 (the running process took no "
                            "snapshot: the queue did not answer within 1000 ms): showing the "
                            "configuration"),
            std::string::npos)
      << err_.str();
  TearDownQueue();
}

// The file gained a qdisc after the process started: its counters are not live, and the note
// says so.
TEST_F(TcLive, EntriesTheRunningTreeLacksAreNamedNotLive) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  start();
  // `txpath tc` would apply the change to the running process first (test_tc_apply.cpp); an
  // edit by hand is never read by it.
  {
    std::ofstream edit(path_, std::ios::app);
    edit << "qdisc add dev d0 parent 1:2 handle 20: fq_codel\n";
  }
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  EXPECT_NE(err_.str().find("txpath tc: dev d0: 1 entry is not in the running process's tree"),
            std::string::npos)
      << err_.str();
  TearDownQueue();
}

// Another local user serves counters of their own where tc -s looks (before: the abstract name,
// which anyone could bind first). They must not be shown.
TEST_F(TcLive, AnotherUsersCountersAreNotShown) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setuid to another user)";
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  const std::string ep = stats_endpoint(path_, "d0");
  sockaddr_un addr;
  const socklen_t len = endpoint_address(ep, addr);
  const std::string doc = R"({"qdiscs":{"1:":{"bytes":31337,"packets":424242}},"classes":{}})";
  const std::string reply = std::to_string(doc.size()) + "\n" + doc;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the other user: nobody
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const bool bound = ::bind(s, reinterpret_cast<const sockaddr*>(&addr), len) == 0 && ::listen(s, 8) == 0;
    (void)!::write(ready[1], bound ? "b" : "f", 1);
    if (!bound) ::_exit(0);
    for (;;) {  // until killed
      const int c = ::accept(s, nullptr, nullptr);
      if (c < 0) continue;
      (void)!::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  ::close(ready[1]);
  char state = '?';
  (void)!::read(ready[0], &state, 1);
  ::close(ready[0]);
  const int status = tc("-s qdisc show dev d0");
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out_.str().find("31337"), std::string::npos) << "the impostor's counters:\n" << out_.str();
  EXPECT_EQ(state, 'f') << "another user could serve at " << ep;
  EXPECT_NE(err_.str().find("no live counters for dev d0"), std::string::npos) << err_.str();
}

// Clients that connect and never read, and one that reads a byte at a time, hold documents in
// the server's hands; the queue's senders, its drain and its inspect_qdisc() go on regardless,
// and a well-behaved client still gets the counters.
TEST_F(TcLive, StalledClientsDoNotStallTheQueue) {
  {
    std::ofstream file(path_);  // written whole: loading it builds the tree once
    file << "link add dev d0\nqdisc add dev d0 root handle 1: htb default 1\n";
    for (int i = 1; i <= 1500; ++i)  // a document far larger than a socket buffer
      file << "class add dev d0 parent 1: classid 1:" << std::hex << i << std::dec
           << " htb rate 10gbit\n";
  }
  start();
  const std::string ep = stats_endpoint(path_, "d0");
  sockaddr_un addr;
  const socklen_t len = endpoint_address(ep, addr);
  std::vector<int> stalled;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len), 0);
    stalled.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {  // one byte at a time
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) return;
    const timeval wait{0, 50'000};  // recv gives up after 50 ms, so that `stop` is seen
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char byte;
    // relaxed: a flag that only ends the loop; the join orders the rest.
    while (!stop.load(std::memory_order_relaxed)) {
      const ssize_t n = ::recv(fd, &byte, 1, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      std::this_thread::sleep_for(5ms);
    }
    ::close(fd);
  });
  Pool pool(PoolConfig{});
  constexpr int kPackets = 20000;
  std::thread sender([&] { send(pool, kPackets); });
  sender.join();
  EXPECT_TRUE(txq_->drain(60s));
  bool inspected = false;
  EXPECT_TRUE(txq_->inspect_qdisc([&](const Qdisc&) { inspected = true; }, 60s));
  EXPECT_TRUE(inspected);
  EXPECT_EQ(txq_->stats().submitted, uint64_t{kPackets});
  ASSERT_EQ(tc("-s -j qdisc show dev d0"), 0);
  const auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j[0]["packets"], kPackets) << err_.str();
  stop.store(true, std::memory_order_relaxed);  // relaxed: see the trickle thread
  trickle.join();
  for (const int fd : stalled) ::close(fd);
  TearDownQueue();
}

}  // namespace
}  // namespace txpath::tc
