// SPDX-License-Identifier: MIT
// Send budgets and the completion interrupt (docs/bench.md, "Send budgets"):
//  * Pool::wait_for_free: a sender whose pool is spent sleeps until a batch comes back;
//  * a polled device raises its completion interrupt when a poll time appears, and a queue's
//    service thread runs on the CPUs TxQueueConfig::service_cpus names;
//  * the bench gives each sender a pool of its budget: one sender cannot overflow the qdisc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.hpp"
#include "device/nic_device.hpp"
#include "support/bench_config.hpp"
#include "txpath/device.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kAnHour = 3'600'000'000'000ULL;  // ns: a wait only a lost wake-up would see end

std::vector<Packet*> take_all(Pool& pool) {
  std::vector<Packet*> taken;
  while (Packet* p = pool.get()) taken.push_back(p);
  return taken;
}

}  // namespace

TEST(PoolWait, ReturnsAtOnceWhileThePoolHasFreePackets) {
  Pool pool(PoolConfig{.packets = 4, .buffer_size = 256, .cache_size = 2});
  pool.wait_for_free(1, kAnHour);  // a free packet: no sleep (the test's timeout says otherwise)
  EXPECT_EQ(pool.free_count(), 4u);
}

TEST(PoolWait, TimesOutWhenNothingComesBack) {
  Pool pool(PoolConfig{.packets = 4, .buffer_size = 256, .cache_size = 2});
  std::vector<Packet*> taken = take_all(pool);
  ASSERT_EQ(taken.size(), 4u);
  pool.wait_for_free(1, 1'000'000);  // 1 ms, then it returns with nothing
  EXPECT_EQ(pool.free_count(), 0u);
  for (Packet* p : taken) pool.put(p);
}

// The waiter sleeps for an hour unless the put wakes it: a lost wake-up hangs the test.
TEST(PoolWait, APutFromAnotherThreadWakesTheWaiter) {
  for (int round = 0; round < 20; ++round) {
    Pool pool(PoolConfig{.packets = 8, .buffer_size = 256, .cache_size = 4});
    std::vector<Packet*> taken = take_all(pool);
    std::atomic<bool> waiting{false};
    std::thread waiter([&] {
      waiting.store(true);
      while (pool.free_count() == 0) pool.wait_for_free(1, kAnHour);
    });
    while (!waiting.load()) std::this_thread::yield();
    if (round % 2 == 0) std::this_thread::sleep_for(2ms);  // half the rounds: surely parked
    PacketList back;
    for (Packet* p : taken) back.push_back(p);
    free_packets(std::move(back));  // this thread has no cache: one batch to the shared stack
    waiter.join();
    EXPECT_EQ(pool.free_count(), 8u);
  }
}

// A waiter for half the pool sleeps through a smaller return and is woken by the one that
// reaches its threshold (an hour's timeout again: a lost wake-up hangs the test). The second
// return waits until the waiter is in its loop: on a loaded machine its thread may start late.
TEST(PoolWait, AThresholdWaiterIsWokenOnceEnoughIsBack) {
  Pool pool(PoolConfig{.packets = 8, .buffer_size = 256, .cache_size = 4});
  std::vector<Packet*> taken = take_all(pool);
  std::atomic<int> looks{0};
  std::atomic<bool> waiting{false};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    while (pool.free_count() < 4) {
      waiting.store(true);
      pool.wait_for_free(4, kAnHour);
      looks.fetch_add(1);
    }
    done.store(true);
  });
  const auto give_back = [&](std::size_t n) {
    PacketList back;
    for (std::size_t i = 0; i < n; ++i) {
      back.push_back(taken.back());
      taken.pop_back();
    }
    free_packets(std::move(back));
  };
  std::this_thread::sleep_for(2ms);
  give_back(2);
  // Two of four back: the waiter's loop is entered whenever its thread starts.
  while (!waiting.load()) std::this_thread::yield();
  std::this_thread::sleep_for(2ms);
  EXPECT_FALSE(done.load()) << "two of four back: the waiter must still wait";
  give_back(2);
  waiter.join();
  EXPECT_TRUE(done.load());
  EXPECT_GE(pool.free_count(), 4u);
  EXPECT_GE(looks.load(), 1);
  give_back(taken.size());
  EXPECT_EQ(pool.free_count(), 8u);
}

TEST(CompletionIrq, RaisedWhenAPollTimeAppearsWhereThereWasNone) {
  Pool pool(PoolConfig{.packets = 16, .buffer_size = 256, .cache_size = 4});
  NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 16, .rate_gbit = 10,
                          .clean_batch = 16, .bql = false, .irq_ns = 0});
  std::atomic<int> irqs{0};
  dev.attach_queue([] {}, [&] { irqs.fetch_add(1); });
  const auto xmit = [&](bool more) {
    Packet* p = pool.get();
    p->len = 60;
    std::lock_guard lock(dev.tx_lock());
    return dev.xmit(p, more);
  };
  ASSERT_EQ(xmit(true), XmitResult::ok);
  EXPECT_EQ(irqs.load(), 0) << "written, not announced: nothing for the hardware to complete";
  ASSERT_EQ(xmit(false), XmitResult::ok);
  EXPECT_EQ(irqs.load(), 1) << "the doorbell gave the device a completion to report";
  ASSERT_EQ(xmit(false), XmitResult::ok);
  EXPECT_EQ(irqs.load(), 1) << "a poll time was already due: no second interrupt";
  for (int i = 0; i < 10'000 && dev.in_flight() != 0; ++i) {
    dev.poll();
    std::this_thread::sleep_for(100us);
  }
  ASSERT_EQ(dev.in_flight(), 0u);
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  ASSERT_EQ(xmit(false), XmitResult::ok);
  EXPECT_EQ(irqs.load(), 2) << "idle again, then a doorbell: raised again";
  dev.detach_queue();
  for (int i = 0; i < 10'000 && dev.in_flight() != 0; ++i) {
    dev.poll();
    std::this_thread::sleep_for(100us);
  }
  ASSERT_EQ(xmit(false), XmitResult::ok);
  EXPECT_EQ(irqs.load(), 2) << "detached: the handler is gone";
  for (int i = 0; i < 10'000 && dev.in_flight() != 0; ++i) {
    dev.poll();
    std::this_thread::sleep_for(100us);
  }
}

namespace {

// Threads of this process whose allowed CPUs are exactly `cpu` (/proc/self/task/*/status).
int threads_allowed_only_on(unsigned cpu) {
  int n = 0;
  const std::string want = std::to_string(cpu);
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
      const std::size_t v = line.find_first_not_of(" \t", line.find(':') + 1);
      if (v != std::string::npos && line.substr(v) == want) ++n;
    }
  }
  return n;
}

// The count of threads_allowed_only_on(cpu) once it moved from `before` (a service thread pins
// itself as it starts), or `before` after 10 s.
int once_moved_from(unsigned cpu, int before) {
  int now = before;
  for (int i = 0; i < 10'000 && now == before; ++i) {
    std::this_thread::sleep_for(1ms);
    now = threads_allowed_only_on(cpu);
  }
  return now;
}

// The last CPU, on a machine with two or more (0: skip the test).
unsigned last_of_several_cpus() {
  const unsigned cpus = std::thread::hardware_concurrency();
  return cpus < 2 ? 0 : cpus - 1;
}

}  // namespace

TEST(ServiceCpus, TheServiceThreadRunsOnlyOnTheNamedCpus) {
  const unsigned last = last_of_several_cpus();
  if (last == 0) GTEST_SKIP() << "one CPU: every thread may run only there anyway";
  const int before = threads_allowed_only_on(last);
  auto dev = make_device("null");
  auto txq = TxQueue::create(*dev, TxQueueConfig{.strategy = "busylock", .service_cpus = {last}});
  EXPECT_EQ(once_moved_from(last, before), before + 1);
  txq.reset();
  EXPECT_EQ(threads_allowed_only_on(last), before);
}

// One sender's budget (the default: Linux's wmem_default, about 630 packets of 32-byte payload
// here) is below the qdisc's limit (1000): whatever the device does, nothing is dropped.
TEST(SendBudget, OneSenderNeverOverflowsTheQdisc) {
  BenchConfig c = test::null_bench({}, {1}, 0.05, 1);
  c.device = "nic";
  c.burst = 32;
  const auto points = run_bench(c);
  ASSERT_FALSE(points.empty());
  for (const BenchPoint& p : points) {
    SCOPED_TRACE(p.strategy);
    EXPECT_TRUE(p.conserved);
    EXPECT_GT(p.sent, 0u);
    EXPECT_EQ(p.dropped, 0u);
  }
}

TEST(SendBudget, ABudgetThatHoldsNoPacketIsRefusedInOneLine) {
  BenchConfig c = test::null_bench({"busylock"}, {1}, 0.05, 1);
  c.sndbuf = 100;
  test::expect_error(c, "sndbuf 100 holds no packet");
  c.sndbuf = 0;  // no budget at all is fine
  EXPECT_NO_THROW(resolve_bench_config(c));
}

// Issue 31, class 9: the senders' pools are allocated up front, so --sndbuf 4294967296 took
// 4.3 GB per sender (a worker OOM-killed with 2). Their total is capped at 1 GiB per thread count.
TEST(SendBudget, BudgetsOverOneGibibyteInTotalAreRefusedInOneLine) {
  BenchConfig c = test::null_bench({"busylock"}, {1}, 0.05, 1);
  c.sndbuf = uint64_t{1} << 32;
  test::expect_error(c, "sndbuf 4294967296 times 1 sender is over the limit of 1024 MiB of send buffers in total");
  c.sndbuf = uint64_t{1} << 30;  // exactly the cap, one sender
  EXPECT_NO_THROW(resolve_bench_config(c));
  c.threads = {1, 2};  // the largest thread count decides
  test::expect_error(c, "at most 536870912 per sender at 2 threads");
  c.sndbuf = ~uint64_t{0};  // the library's field takes any value: no overflow in the check
  test::expect_error(c, "over the limit of 1024 MiB");
  c.threads = {4096};  // the default budget fits the largest thread count
  c.sndbuf = kDefaultSndbuf;
  EXPECT_NO_THROW(resolve_bench_config(c));
}

TEST(ServiceCpus, EachQueueOfAMultiQueueDeviceFollowsItsXpsMap) {
  const unsigned last = last_of_several_cpus();
  if (last == 0) GTEST_SKIP() << "one CPU: every thread may run only there anyway";
  const int before = threads_allowed_only_on(last);
  auto dev = make_net_device("null:queues=2");
  dev->set_xps_cpus(0, std::vector<unsigned>{last});
  dev->set_xps_cpus(1, std::vector<unsigned>{0});
  auto tx = MultiQueueTx::create(*dev, MultiQueueConfig{.service_on_xps_cpus = true});
  const int after = once_moved_from(last, before);
  EXPECT_EQ(after, before + 1) << "queue 0's service thread, on the CPU its XPS map names";
  tx.reset();
  auto unpinned = MultiQueueTx::create(*dev, MultiQueueConfig{});
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(threads_allowed_only_on(last), before) << "without the switch: anywhere";
}
