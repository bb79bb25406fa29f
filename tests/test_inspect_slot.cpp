// SPDX-License-Identifier: MIT
// InspectSlot (src/engine/inspect_slot.hpp) on its own: a request runs once, in whichever thread
// serves it; one withdrawn on timeout never runs; what it throws reaches the caller; close()
// wakes a waiting caller and refuses later ones.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "engine/inspect_slot.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

// A serialised context of our own: a thread that serves the slot whenever the hint is set.
class Owner {
 public:
  Owner(std::atomic<bool>& pending, InspectSlot& slot, const Qdisc& root)
      : thread_([&] {
          while (!stop_.load()) {
            if (pending.load()) slot.serve(root);
            std::this_thread::yield();
          }
        }) {}
  ~Owner() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::unique_ptr<Qdisc> a_root() { return make_qdisc("pfifo limit 10"); }

}  // namespace

TEST(InspectSlot, ARequestRunsOnceInTheServingThread) {
  std::atomic<bool> pending{false};
  InspectSlot slot(pending);
  const auto root = a_root();
  Owner owner(pending, slot, *root);
  int runs = 0, asks = 0;
  std::thread::id where;
  const bool served = slot.request([&](const Qdisc& q) {
    ++runs;
    where = std::this_thread::get_id();
    EXPECT_EQ(&q, root.get());
  }, 5s, [&] { ++asks; });
  EXPECT_TRUE(served);
  EXPECT_EQ(runs, 1);
  EXPECT_NE(where, std::this_thread::get_id());
  EXPECT_GE(asks, 1);
  EXPECT_FALSE(pending.load()) << "the hint is cleared once served";
}

TEST(InspectSlot, ATimedOutRequestIsWithdrawnAndNeverRuns) {
  std::atomic<bool> pending{false};
  InspectSlot slot(pending);
  const auto root = a_root();
  int runs = 0, asks = 0;
  EXPECT_FALSE(slot.request([&](const Qdisc&) { ++runs; }, 20ms, [&] { ++asks; }));
  EXPECT_GE(asks, 2) << "the caller asks again every kRetry";
  EXPECT_FALSE(pending.load());
  slot.serve(*root);  // an owner that comes late finds the slot empty
  EXPECT_EQ(runs, 0);
}

TEST(InspectSlot, WhatTheRequestThrowsReachesTheCaller) {
  std::atomic<bool> pending{false};
  InspectSlot slot(pending);
  const auto root = a_root();
  Owner owner(pending, slot, *root);
  EXPECT_THROW(slot.request([](const Qdisc&) { throw std::runtime_error("boom"); }, 5s, [] {}),
               std::runtime_error);
  // The slot is free again.
  EXPECT_TRUE(slot.request([](const Qdisc&) {}, 5s, [] {}));
}

TEST(InspectSlot, CloseWakesAWaitingCallerAndRefusesLaterOnes) {
  std::atomic<bool> pending{false};
  InspectSlot slot(pending);
  std::atomic<bool> asked{false};
  bool served = true;
  std::thread caller([&] {
    served = slot.request([](const Qdisc&) { ADD_FAILURE() << "ran after close"; }, 60s,
                          [&] { asked.store(true); });
  });
  while (!asked.load()) std::this_thread::yield();
  slot.close();  // returns once the caller has left (long before its 60 s are up)
  caller.join();
  EXPECT_FALSE(served);
  EXPECT_FALSE(slot.request([](const Qdisc&) {}, 1s, [] { ADD_FAILURE() << "asked after close"; }));
}
